"""Benchmark, not a test: claim+succeed messages/s through the Python package with 1, 4 and 16
worker processes on PostgreSQL, beside SQLite on the same machine in the same run.

Each worker is a process (``multiprocessing``, spawn) that opens the database itself: the URL
(one connection: ``max_connections=1``) or the SQLite file. A round enqueues MESSAGES messages
(not timed), lets the workers open their database, then times them from one start signal until
the last one finds nothing left to claim (``claim`` then ``succeed`` with the lease token, one
message at a time); its figure is MESSAGES / that wall time. Each round has its own schema or
file; a row is ROUNDS rounds after one warm-up round, printed as min / median / max.

PostgreSQL should run durably (``make bench-postgres`` starts its throwaway cluster with
``scripts/pg.sh run --durable``: fsync and synchronous_commit on), as SQLite commits durably in
WAL mode. Claim's query plans on a table of 1 000 000 messages are printed by
``scripts/pg.sh run cargo test -p deadletter-postgres --test plans -- --nocapture`` (also run
by ``make bench-postgres``).

Run: make bench-postgres   (prints figures; asserts nothing but that every message was acked)
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import deadletter

MESSAGES = 2000
ROUNDS = 5
WORKERS = (1, 4, 16)
PAYLOAD = '{"to": "alice@example.com"}'


def worker(target: str, options: dict[str, Any], prepared: Any, go: Any, results: Any) -> None:
    """One round: open, wait for the start, claim and ack until nothing is left; report when it
    finished (time.monotonic is one clock for every process of the machine)."""
    try:
        prepared.wait()
        with deadletter.open(target, **options) as db:
            q = db.queue("bench")
            go.wait()
            acked = 0
            while (m := q.claim()) is not None:
                q.succeed(m.id, lease_token=m.lease_token)
                acked += 1
            results.put((time.monotonic(), acked, None))
    except BaseException as error:  # noqa: BLE001 - reported by the parent
        results.put((time.monotonic(), 0, repr(error)))


def round_rate(target: str, options: dict[str, Any], workers: int) -> float:
    """Messages per second of one round on a new database."""
    with deadletter.open(target, **options) as db:
        q = db.queue("bench")
        for _ in range(MESSAGES // 1000):
            q.enqueue_many([PAYLOAD] * 1000)
    ctx = multiprocessing.get_context("spawn")
    prepared, go = ctx.Barrier(workers + 1), ctx.Barrier(workers + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(target, options, prepared, go, results))
        for _ in range(workers)
    ]
    for p in procs:
        p.start()
    prepared.wait()
    go.wait()
    started = time.monotonic()
    outcomes = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    errors = [error for *_, error in outcomes if error is not None]
    if errors:
        raise RuntimeError(f"a worker failed: {errors[0]}")
    acked = sum(n for _, n, _ in outcomes)
    if acked != MESSAGES:
        raise RuntimeError(f"{acked} acks for {MESSAGES} messages")
    return MESSAGES / (max(finished for finished, _, _ in outcomes) - started)


def measure(targets: list[tuple[str, dict[str, Any]]], workers: int) -> list[float]:
    """One warm-up round, then ROUNDS rounds, each on its own target."""
    round_rate(*targets[0], workers)
    return sorted(round_rate(target, options, workers) for target, options in targets[1:])


def psql(url: str, sql: str) -> str:
    done = subprocess.run(["psql", url, "-qAtc", sql], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> int:
    url = os.environ.get("DEADLETTER_POSTGRES_URL")
    if not url:
        print("DEADLETTER_POSTGRES_URL is not set: run `make bench-postgres`", file=sys.stderr)
        return 2
    server = psql(url, "SELECT current_setting('server_version')")
    durable = psql(
        url, "SELECT 'fsync=' || current_setting('fsync') || ', synchronous_commit=' || "
        "current_setting('synchronous_commit')"
    )
    print(
        f"claim+succeed messages/s through the Python package: {ROUNDS} rounds of {MESSAGES} "
        f"messages per row (after one warm-up), min / median / max; workers are processes, each "
        f"with its own connection; {os.cpu_count()} cores"
    )
    print(
        f"PostgreSQL {server} ({durable}) vs SQLite {deadletter.SQLITE_VERSION} (a file in WAL "
        "mode, deadletter's default settings)"
    )
    print(f"{'store':<12} {'workers':>7} {'min':>9} {'median':>9} {'max':>9}")
    medians = []
    schemas: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for workers in WORKERS:
                names = [f"bench_{os.getpid()}_{workers}_{r}" for r in range(ROUNDS + 1)]
                schemas += names
                pg_targets = [(url, {"schema": name, "max_connections": 1}) for name in names]
                files = [str(Path(tmp) / f"{workers}-{r}.db") for r in range(ROUNDS + 1)]
                rows = [
                    ("postgres", measure(pg_targets, workers)),
                    ("sqlite", measure([(f, {}) for f in files], workers)),
                ]
                for name, rates in rows:
                    print(
                        f"{name:<12} {workers:>7} {rates[0]:>9.0f} "
                        f"{statistics.median(rates):>9.0f} {rates[-1]:>9.0f}",
                        flush=True,
                    )
                medians.append((workers, *(statistics.median(rates) for _, rates in rows)))
    finally:
        if schemas:
            psql(url, "".join(f'DROP SCHEMA IF EXISTS "{s}" CASCADE;' for s in schemas))
    for workers, pg, lite in medians:
        print(f"{workers:>2} processes: PostgreSQL at {pg / lite:.2f}x SQLite's median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
