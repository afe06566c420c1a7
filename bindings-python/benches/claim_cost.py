"""Benchmark, not a test: the cost of one claim+succeed on a SQLite file as finished and delayed
messages pile up, against the same cycle on an empty queue measured in the same run. The delayed
messages were enqueued before the due ones: an index in FIFO order holds them ahead.

Run: make bench-python   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import deadletter

CYCLES = 300
ROUNDS = 3


def fill(path: Path, finished: int, delayed: int) -> None:
    """Adds `finished` succeeded/dead rows and `delayed` rows in backoff to queue "q", directly in
    SQL for speed (the schema is created by deadletter.open first), with the storage-only `ready`
    flag (schema version 3 and later) as the store writes it: 0 for a message in backoff."""
    now = int(datetime.now(timezone.utc).timestamp() * 1000)
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
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
        if "ready" in columns:
            conn.execute("UPDATE messages SET ready = retry_after IS NULL")
        conn.execute("ANALYZE")


def cycle_ms(finished: int, delayed: int) -> tuple[float, float]:
    """Milliseconds per claim+succeed, and per claim alone, with `finished` and `delayed` rows in
    the queue (durability "normal" where this deadletter has it: the claim, not the sync, is
    what grows)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        deadletter.open(path).close()
        fill(path, finished, delayed)
        try:
            db = deadletter.open(path, durability="normal")  # type: ignore[call-arg]
        except TypeError:
            db = deadletter.open(path)
        with db:
            q = db.queue("q")
            for _ in range(CYCLES):
                q.enqueue("payload")
            claiming = 0.0
            start = time.perf_counter()
            for _ in range(CYCLES):
                before = time.perf_counter()
                m = q.claim(lease=timedelta(minutes=5))
                claiming += time.perf_counter() - before
                assert m is not None and m.status == "processing"
                q.succeed(m.id, lease_token=m.lease_token)
            return (time.perf_counter() - start) * 1000 / CYCLES, claiming * 1000 / CYCLES


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def main() -> int:
    cases = [(0, 0), (100_000, 0), (0, 10_000), (100_000, 10_000)]
    cycles: dict[tuple[int, int], list[float]] = {case: [] for case in cases}
    claims: dict[tuple[int, int], list[float]] = {case: [] for case in cases}
    for _ in range(ROUNDS):
        for case in cases:
            cycle, claim = cycle_ms(*case)
            cycles[case].append(cycle)
            claims[case].append(claim)
    print(f"claim+succeed on a SQLite file, {CYCLES} cycles, {ROUNDS} rounds (min / median / max ms)")
    reference = (statistics.median(cycles[(0, 0)]), statistics.median(claims[(0, 0)]))
    for case in cases:
        finished, delayed = case
        label = "empty queue (reference)" if case == (0, 0) else (
            f"{finished:>7,} succeeded/dead, {delayed:>6,} in backoff ahead"
        )
        cycle, claim = statistics.median(cycles[case]), statistics.median(claims[case])
        print(f"  {label:<45} claim+succeed {spread(cycles[case])} ({cycle / reference[0]:.2f}x)"
              f"   claim alone {spread(claims[case])} ({claim / reference[1]:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
