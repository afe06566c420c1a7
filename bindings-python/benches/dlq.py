"""Benchmark, not a test: the dead-letter operations on a SQLite file of 1,000,000 messages.

Prints, in one run: the time of `stats()`, of `claim()`, and of `replay_all()` of 10,000 dead
messages, and how long that `replay_all` kept other writers waiting. The last figure is measured
from a second process that times its own small writes (one `enqueue` each, on another queue)
while the replay runs; the same probe measured just before, on the idle file, is the reference.

The file is built by SQL, not through the API (1,000,000 single state changes would take most of
an hour): `deadletter.open` creates the schema, then one SQLite transaction inserts the rows
with the columns the API would have written, and the API opens the file again to measure.

Run: make bench-dlq   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import deadletter

TOTAL = 1_000_000
DEAD = 300_000  # of which REPLAYED carry the error that replay_all selects
REPLAYED = 10_000
PENDING = 10_000  # due now; the rest succeeded
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
NOW_MS = int(NOW.timestamp() * 1000)


def build(path: Path) -> None:
    """TOTAL messages in queue "q", ids in enqueue order, one hour apart at most: every
    DEAD // REPLAYED-th dead message failed with "HTTP 503", the other dead ones with "timeout";
    the PENDING newest are due; all others succeeded."""
    deadletter.open(path).close()
    step = DEAD // REPLAYED
    with sqlite3.connect(path) as conn:
        conn.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :total)
            INSERT INTO messages (queue, payload, status, retry_count, max_retries, retry_after,
                last_error, created_at, updated_at, lease_token, lease_expires_at,
                idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count,
                replayed_at)
            SELECT 'q',
                '{"event": "push", "delivery": "' || i || '", "repository": "octo/hello-world"}',
                CASE WHEN i > :total - :pending THEN 'pending'
                     WHEN i % 3 = 0 AND i / 3 <= :dead THEN 'dead'
                     ELSE 'succeeded' END,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead THEN 3 ELSE 0 END,
                3, NULL,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead
                     THEN CASE WHEN (i / 3) % :step = 0 THEN 'HTTP 503' ELSE 'timeout' END END,
                :now - 3600000 + i * 3, :now - 3600000 + i * 3 + 1000, NULL, NULL, NULL,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead THEN :now - 3600000 + i * 3 END,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead THEN :now - 3600000 + i * 3 + 1000 END,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead
                     THEN '[{"attempt":3,"error":"' ||
                          CASE WHEN (i / 3) % :step = 0 THEN 'HTTP 503' ELSE 'timeout' END ||
                          '","at":' || (:now - 3600000 + i * 3 + 1000) || '}]'
                     ELSE '[]' END,
                CASE WHEN i % 3 = 0 AND i / 3 <= :dead THEN 2 ELSE 0 END,
                0, NULL
            FROM n
            """,
            {"total": TOTAL, "pending": PENDING, "dead": DEAD, "step": step, "now": NOW_MS},
        )
    conn.close()


def probe(path: str, ready: Any, stop: Any, results: Any) -> None:
    """Times single enqueues on queue "probe" until `stop` is set: [(start, seconds)]."""
    timings: list[tuple[float, float]] = []
    with deadletter.open(path) as db:
        q = db.queue("probe")
        ready.set()
        while not stop.is_set():
            start = time.monotonic()
            q.enqueue("ping")
            timings.append((start, time.monotonic() - start))
            time.sleep(0.002)
    results.put(timings)


def probed(path: Path, action: Any) -> tuple[float, list[float]]:
    """Runs `action` while a second process probes the write lock: its duration and the probe's
    write times that overlapped it."""
    ctx = multiprocessing.get_context("spawn")
    ready, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=probe, args=(str(path), ready, stop, results))
    child.start()
    ready.wait(60)
    time.sleep(0.2)  # the probe is writing
    start = time.monotonic()
    action()
    end = time.monotonic()
    time.sleep(0.05)
    stop.set()
    timings = results.get(timeout=60)
    child.join(60)
    during = [seconds for at, seconds in timings if at < end and at + seconds > start]
    return end - start, during


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dlq.db"
        started = time.perf_counter()
        build(path)
        size = path.stat().st_size / 2**20
        print(f"built {TOTAL:,} messages ({DEAD:,} dead, {PENDING:,} due, the rest succeeded) by SQL "
              f"in {time.perf_counter() - started:.1f} s; file {size:.0f} MiB")
        with deadletter.open(path, clock=lambda: NOW) as db:
            q = db.queue("q")
            times = []
            for _ in range(5):
                t = time.perf_counter()
                stats = q.stats()
                times.append(time.perf_counter() - t)
            print(f"stats():      {ms(min(times))} (min of 5; median {ms(statistics.median(times)).strip()})"
                  f"  -> pending {stats.pending:,}, succeeded {stats.succeeded:,}, dead {stats.dead:,}")
            times = []
            for _ in range(20):
                t = time.perf_counter()
                m = q.claim(lease=60)
                times.append(time.perf_counter() - t)
                assert m is not None
            print(f"claim():      {ms(min(times))} (min of 20; median {ms(statistics.median(times)).strip()})")

            idle, reference = probed(path, lambda: time.sleep(1.0))
            replayed: list[int] = []
            took, during = probed(
                path, lambda: replayed.append(q.replay_all(error_contains="HTTP 503"))
            )
            assert replayed == [REPLAYED], replayed
            assert q.stats().dead == DEAD - REPLAYED
        print(f"replay_all(): {ms(took)} for {REPLAYED:,} dead messages among {DEAD:,} "
              f"(error_contains='HTTP 503'; one transaction per batch)")
        print("write lock, seen by a second process writing one message at a time:")
        print(f"  idle file (reference):   {len(reference):4d} writes, median {ms(statistics.median(reference))}, "
              f"longest {ms(max(reference))}")
        print(f"  during replay_all:       {len(during):4d} writes, median {ms(statistics.median(during))}, "
              f"longest {ms(max(during))} ({max(during) / max(reference):.1f}x the reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
