"""Benchmark, not a test: the cost of one claim+succeed on a SQLite file as finished and delayed
messages pile up, against the same cycle on an empty queue measured in the same run.

Run: make bench-python   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import deadletter

CYCLES = 300


def fill(path: Path, finished: int, delayed: int) -> None:
    """Adds `finished` succeeded/dead rows and `delayed` rows in backoff to queue "q", directly in
    SQL for speed (the schema is created by deadletter.open first)."""
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    with sqlite3.connect(path) as conn:
        rows = [
            ("q", "x" * 200, "succeeded" if i % 2 else "dead", 1, 3, None, "e", now - 10**6 + i, now,
             None, None, None if i % 2 else now)
            for i in range(finished)
        ] + [
            ("q", "x" * 200, "pending", 1, 3, now + 3_600_000, "e", now - 10**6 + i, now, None, None,
             None)
            for i in range(delayed)
        ]
        conn.executemany(
            "INSERT INTO messages (queue, payload, status, retry_count, max_retries, retry_after, "
            "last_error, created_at, updated_at, lease_token, lease_expires_at, dead_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("ANALYZE")


def cycle_ms(finished: int, delayed: int) -> float:
    """Milliseconds per claim+succeed with `finished` and `delayed` rows in the queue."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        deadletter.open(path).close()
        fill(path, finished, delayed)
        with deadletter.open(path) as db:
            q = db.queue("q")
            for _ in range(CYCLES):
                q.enqueue("payload")
            start = time.perf_counter()
            for _ in range(CYCLES):
                m = q.claim(lease=timedelta(minutes=5))
                assert m is not None and m.status == "processing"
                q.succeed(m.id, lease_token=m.lease_token)
            return (time.perf_counter() - start) * 1000 / CYCLES


def main() -> int:
    reference = cycle_ms(0, 0)
    print(f"claim+succeed on a SQLite file, {CYCLES} cycles each")
    print(f"  empty queue (reference):                   {reference:.3f} ms/cycle")
    for finished, delayed in [(100_000, 0), (0, 10_000), (100_000, 10_000)]:
        ms = cycle_ms(finished, delayed)
        print(
            f"  {finished:>7} succeeded/dead, {delayed:>6} in backoff: {ms:.3f} ms/cycle "
            f"({ms / reference:.2f}x the reference)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
