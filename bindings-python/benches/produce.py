"""Benchmark, not a test: producer and worker throughput on a SQLite file.

Prints messages/s (min, median and max over ROUNDS rounds, each on a new file) for 10,000 single
`enqueue` calls, for the same 10,000 messages through `enqueue_many` in batches of 100 and of
1,000, and for `claim_many(100)` against 100 single `claim` calls on a queue of 10,000 due
messages. Single enqueues and claims are the reference: each is one transaction (one WAL sync).

Run: make bench-produce   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import deadletter

MESSAGES = 10_000
ROUNDS = 3
PAYLOAD = '{"event": "signup", "user": 12345, "email": "alice@example.com"}'


def timed(setup: Callable[[deadletter.Queue], None], run: Callable[[deadletter.Queue], int]) -> float:
    """Messages per second of `run` on a new file prepared by `setup`."""
    with tempfile.TemporaryDirectory() as tmp, deadletter.open(Path(tmp) / "bench.db") as db:
        q = db.queue("q")
        setup(q)
        start = time.perf_counter()
        n = run(q)
        return n / (time.perf_counter() - start)


def nothing(q: deadletter.Queue) -> None:
    pass


def fill(q: deadletter.Queue) -> None:
    for _ in range(MESSAGES // 1000):
        q.enqueue_many([PAYLOAD] * 1000)


def singles(q: deadletter.Queue) -> int:
    for _ in range(MESSAGES):
        q.enqueue(PAYLOAD)
    return MESSAGES


def batches(size: int) -> Callable[[deadletter.Queue], int]:
    def run(q: deadletter.Queue) -> int:
        for _ in range(MESSAGES // size):
            q.enqueue_many([PAYLOAD] * size)
        return MESSAGES

    return run


def claim_singles(q: deadletter.Queue) -> int:
    for _ in range(100):
        assert q.claim(lease=300) is not None
    return 100


def claim_many(q: deadletter.Queue) -> int:
    return len(q.claim_many(100, lease=300))


def report(name: str, rates: list[float], reference: float) -> None:
    median = statistics.median(rates)
    print(
        f"  {name:<34} {min(rates):>10,.0f} {median:>10,.0f} {max(rates):>10,.0f}"
        f"   {median / reference:6.1f}x"
    )


def main() -> int:
    print(f"messages/s on a SQLite file (WAL), {ROUNDS} rounds, each on a new file")
    print(f"  {'':<34} {'min':>10} {'median':>10} {'max':>10}   vs reference")
    single = [timed(nothing, singles) for _ in range(ROUNDS)]
    report(f"enqueue x {MESSAGES:,} (reference)", single, statistics.median(single))
    for size in (100, 1000):
        rates = [timed(nothing, batches(size)) for _ in range(ROUNDS)]
        report(f"enqueue_many, batches of {size:,}", rates, statistics.median(single))
    claims = [timed(fill, claim_singles) for _ in range(ROUNDS)]
    report("claim x 100 (reference)", claims, statistics.median(claims))
    many = [timed(fill, claim_many) for _ in range(ROUNDS)]
    report("claim_many(100)", many, statistics.median(claims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
