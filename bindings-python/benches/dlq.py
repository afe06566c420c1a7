"""Benchmark, not a test: the dead-letter operations on a SQLite file of 1,000,000 messages.

Prints, in one run: the time of `stats()`, of `claim()` (against one `enqueue` on another queue
of the same file: a write transaction of the same kind), and of `replay_all()` of 10,000 dead
messages, with how long that `replay_all` held SQLite's write lock at a time. The hold times are
measured from a second process that polls the lock without waiting (`BEGIN IMMEDIATE` with no
busy timeout, then `ROLLBACK`, as fast as it can): a run of failed attempts is a transaction of
the replay holding the lock, and the longest run bounds the longest hold from above (two
transactions merge into one run when the poller is not scheduled in the gap between them).
A second `replay_all` of another 10,000 messages then runs while another process enqueues one
message at a time through the API: what an ordinary writer waits, SQLite's busy handler
included. Both probes are first run on the idle file, as references.

Last, on a file of its own, the WAL bytes one death (a failure that uses up the retries) and one
replay append, with a short error and with a 2 000-byte one (a traceback): deterministic, unlike
the times (schema 7 took the errors out of the index of dead messages).

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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import deadletter

TOTAL = 1_000_000
DEAD = 300_000  # of which REPLAYED carry "HTTP 503" and REPLAYED "HTTP 502"
REPLAYED = 10_000
PENDING = 10_000  # due now; the rest succeeded
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
NOW_MS = int(NOW.timestamp() * 1000)


def build(path: Path) -> None:
    """TOTAL messages in queue "q", created one hour ago onwards, 3 ms apart: every third is dead
    (up to DEAD), one dead message in DEAD // REPLAYED failed with "HTTP 503", the next with
    "HTTP 502", the others with "timeout"; the PENDING newest are due; all others succeeded."""
    deadletter.open(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :total),
            m(i, dead, error, at) AS (
                SELECT i, i % 3 = 0 AND i / 3 <= :dead,
                    CASE (i / 3) % (:dead / :replayed) WHEN 0 THEN 'HTTP 503'
                        WHEN 1 THEN 'HTTP 502' ELSE 'timeout' END,
                    :now - 3600000 + i * 3
                FROM n
            )
            INSERT INTO messages (queue, payload, status, retry_count, max_retries, retry_after,
                last_error, created_at, updated_at, lease_token, lease_expires_at,
                idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count,
                replayed_at)
            SELECT 'q',
                '{"event": "push", "delivery": "' || i || '", "repository": "octo/hello-world"}',
                CASE WHEN i > :total - :pending THEN 'pending'
                     WHEN dead THEN 'dead' ELSE 'succeeded' END,
                CASE WHEN dead THEN 3 ELSE 0 END, 3, NULL,
                CASE WHEN dead THEN error END,
                at, at + 1000, NULL, NULL, NULL,
                CASE WHEN dead THEN at END,
                CASE WHEN dead THEN at + 1000 END,
                CASE WHEN dead THEN '[{"attempt":3,"error":"' || error || '","at":' || (at + 1000) || '}]'
                     ELSE '[]' END,
                CASE WHEN dead THEN 2 ELSE 0 END, 0, NULL
            FROM m
            """,
            {"total": TOTAL, "pending": PENDING, "dead": DEAD, "replayed": REPLAYED, "now": NOW_MS},
        )
    conn.close()


def poll_lock(path: str, ready: Any, stop: Any, results: Any) -> None:
    """Tries to take the write lock without waiting until `stop` is set: [(time, taken)]."""
    samples: list[tuple[float, bool]] = []
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    ready.set()
    while not stop.is_set():
        at = time.monotonic()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            samples.append((at, False))
        else:
            conn.execute("ROLLBACK")
            samples.append((at, True))
    conn.close()
    results.put(samples)


def write_messages(path: str, ready: Any, stop: Any, results: Any) -> None:
    """Enqueues one message at a time on queue "probe" until `stop` is set: [(start, seconds)]."""
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


def beside(path: Path, probe: Callable[..., None], action: Callable[[], object]) -> tuple[float, Any]:
    """Runs `action` while `probe` runs in a second process: its duration, and the probe's samples
    taken while it ran."""
    ctx = multiprocessing.get_context("spawn")
    ready, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=probe, args=(str(path), ready, stop, results))
    child.start()
    ready.wait(60)
    time.sleep(0.2)  # the probe is running
    start = time.monotonic()
    action()
    end = time.monotonic()
    time.sleep(0.05)
    stop.set()
    samples = results.get(timeout=120)
    child.join(60)
    return end - start, [s for s in samples if start <= s[0] <= end]


def holds(samples: list[tuple[float, bool]]) -> list[float]:
    """The lock's busy spells: from the first failed attempt of a run to the next success."""
    spells, since = [], None
    for at, taken in samples:
        if not taken and since is None:
            since = at
        elif taken and since is not None:
            spells.append(at - since)
            since = None
    return spells


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dlq.db"
        started = time.perf_counter()
        build(path)
        size = path.stat().st_size / 2**20
        print(
            f"built {TOTAL:,} messages ({DEAD:,} dead, {PENDING:,} due, the rest succeeded) by "
            f"SQL in {time.perf_counter() - started:.1f} s; file {size:.0f} MiB"
        )
        with deadletter.open(path, clock=lambda: NOW) as db:
            q = db.queue("q")
            times = []
            for _ in range(5):
                t = time.perf_counter()
                stats = q.stats()
                times.append(time.perf_counter() - t)
            print(
                f"stats():      {ms(min(times))} (min of 5; median {ms(statistics.median(times))})"
                f" -> pending {stats.pending:,}, succeeded {stats.succeeded:,}, dead {stats.dead:,}"
            )
            other = db.queue("reference")
            writes = []
            for _ in range(20):
                t = time.perf_counter()
                other.enqueue("x")
                writes.append(time.perf_counter() - t)
            times = []
            for _ in range(20):
                t = time.perf_counter()
                m = q.claim(lease=60)
                times.append(time.perf_counter() - t)
                assert m is not None
            reference = statistics.median(writes)
            print(
                f"claim():      {ms(min(times))} (min of 20; median {ms(statistics.median(times))}"
                f"; the median enqueue on an empty queue of the file: {ms(reference)})"
            )

            _, idle = beside(path, poll_lock, lambda: time.sleep(1.0))
            replayed: list[int] = []
            took, during = beside(
                path, poll_lock, lambda: replayed.append(q.replay_all(error_contains="HTTP 503"))
            )
            assert replayed == [REPLAYED], replayed
            spells = holds(during)
            print(
                f"replay_all(): {ms(took)} for {REPLAYED:,} of {DEAD:,} dead messages "
                f"(error_contains='HTTP 503')"
            )
            print(
                f"  write lock held by replay_all, seen by a process polling it "
                f"({len(during):,} polls, one every {ms(took / max(len(during), 1))}):"
            )
            print(
                f"    {len(spells)} busy spells, median {ms(statistics.median(spells))}, "
                f"longest {ms(max(spells))} (an upper bound of one transaction's hold: a spell "
                f"spans two when the poller misses the gap between them)"
            )
            idle_spells = holds(idle)
            print(
                f"    reference, idle file for 1 s: {len(idle_spells)} busy spells"
                + (f", longest {ms(max(idle_spells))}" if idle_spells else "")
            )

            _, quiet = beside(path, write_messages, lambda: time.sleep(1.0))
            took, waits = beside(
                path, write_messages, lambda: replayed.append(q.replay_all(error_contains="HTTP 502"))
            )
            assert replayed[-1] == REPLAYED, replayed
            assert q.stats().dead == DEAD - 2 * REPLAYED
            quiet_s, waits_s = [s for _, s in quiet], [s for _, s in waits]
            print(
                f"  an ordinary writer (enqueue, one at a time, in another process) during a second "
                f"replay_all ({ms(took)}, 'HTTP 502'):"
            )
            print(
                f"    {len(waits_s)} writes, median {ms(statistics.median(waits_s))}, "
                f"longest {ms(max(waits_s))} (SQLite's busy handler sleeps between retries)"
            )
            print(
                f"    reference, idle file for 1 s: {len(quiet_s)} writes, median "
                f"{ms(statistics.median(quiet_s))}, longest {ms(max(quiet_s))}"
            )
    print(wal_per_death())
    return 0


def wal_per_death(n: int = 1000) -> str:
    """WAL bytes per death and per replay, n of each, behind 5 000 dead messages, for a short and
    a long error. A second connection empties the WAL, then holds a read transaction open so that
    no checkpoint copies or restarts it: its growth is what the calls appended."""
    lines = [f"WAL bytes per death and per replay ({n:,} each, 5 000 dead before; pages of 4 KiB + 24 B):"]
    for error in ("HTTP 503: upstream timed out", "Traceback (most recent call last):\n" + "x" * 1966):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "wal.db"
            with deadletter.open(path, durability="normal") as db:
                q = db.queue("q")

                def claimed(k: int) -> list[Any]:
                    for start in range(0, k, 1000):
                        q.enqueue_many(["x" * 60] * min(1000, k - start))
                    return [q.claim(lease=600) for _ in range(k)]

                for m in claimed(5000):
                    q.fail(m.id, error, lease_token=m.lease_token, retryable=False)
                doomed = claimed(n)
                reader = sqlite3.connect(path, isolation_level=None)
                # An empty WAL, then a reader. The store's checkpoint thread may hold the WAL
                # at that moment (the checkpoint is then refused: busy), so until it is empty.
                while reader.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                    time.sleep(0.01)
                reader.execute("BEGIN")
                reader.execute("SELECT count(*) FROM sqlite_schema").fetchone()
                wal = Path(f"{path}-wal")
                start = wal.stat().st_size
                for m in doomed:
                    q.fail(m.id, error, lease_token=m.lease_token, retryable=False)
                died = wal.stat().st_size
                for m in doomed:
                    q.replay(m.id)
                replayed = wal.stat().st_size
                reader.close()
            death, replay = (died - start) / n, (replayed - died) / n
            lines.append(
                f"  error of {len(error):>5,} B: death {death:>7,.0f} B ({death / 4120:.1f} pages), "
                f"replay {replay:>7,.0f} B ({replay / 4120:.1f} pages)"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
