"""Benchmark, not a test: what one claim costs on a SQLite file with 1 000 ordering groups whose
heads are in backoff and 10 000 messages waiting behind them, against a queue without groups
(issue 21: within 1.2x), in the same run; and a claim+succeed of grouped messages, where each
ack makes the group's next message claimable in its transaction, against the same cycle without
groups.

Three files, each a queue of due messages without a group claimed in FIFO order: ``none`` holds
nothing else; ``groups`` holds, enqueued before them, 1 000 groups of 11 messages whose heads
were claimed and failed with ``retry_in`` an hour (in backoff: the 10 000 others are blocked
behind them). ``chained`` holds only grouped messages, 50 groups of enough members: each
claim+succeed takes a group's head and unblocks its next member. Each round times ``CYCLES``
claims (and their acks) on each file, one file after the other cycle by cycle, so that they share
whatever else the machine does; figures are microseconds, min / median / max over ``ROUNDS``
rounds after one warm-up round. Durability ``normal``: the claim, not the sync, is measured.

Run: make bench-python   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import deadletter

CYCLES = 200
ROUNDS = 15
DUE = CYCLES * (ROUNDS + 1)
GROUPS = 1000
BEHIND = 10  # per group, behind its head
CHAINS = 50
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Clock:
    """A clock that stands still (the due messages stay due, the heads in backoff)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def open_file(path: Path, clock: Clock) -> deadletter.Database:
    return deadletter.open(path, clock=clock, durability="normal")


def fill_none(q: deadletter.Queue, count: int = 2 * DUE) -> None:
    """``count`` due messages (by default for the claims and for the claim+succeed cycles)."""
    for start in range(0, count, 1000):
        q.enqueue_many(["due"] * min(1000, count - start))


def fill_groups(q: deadletter.Queue) -> None:
    items = [{"payload": "grouped", "group": f"group-{g}"} for g in range(GROUPS)
             for _ in range(BEHIND + 1)]
    for start in range(0, len(items), 1000):
        q.enqueue_many(items[start : start + 1000])
    for _ in range(GROUPS // 100):
        for head in q.claim_many(100, lease=7200):
            q.fail(head.id, "later", lease_token=head.lease_token, retry_in=3600)
    fill_none(q, DUE)


def fill_chained(q: deadletter.Queue) -> None:
    per_group = DUE // CHAINS + 1
    items = [{"payload": "chained", "group": f"chain-{g}"} for _ in range(per_group)
             for g in range(CHAINS)]
    for start in range(0, len(items), 1000):
        q.enqueue_many(items[start : start + 1000])


def cycle(q: deadletter.Queue, ack: bool) -> float:
    """Seconds of one claim (and its ack when ``ack``)."""
    start = time.perf_counter()
    m = q.claim(lease=7200)
    if ack:
        assert m is not None
        q.succeed(m.id, lease_token=m.lease_token)
    elapsed = time.perf_counter() - start
    assert m is not None, "a due message"
    return elapsed


def spread(values: list[float]) -> str:
    return f"{min(values):8.1f} {statistics.median(values):8.1f} {max(values):8.1f}"


def main() -> int:
    clock = Clock()
    fills: dict[str, Callable[[deadletter.Queue], None]] = {
        "none": fill_none,
        "groups": fill_groups,
        "chained": fill_chained,
    }
    with tempfile.TemporaryDirectory() as tmp:
        queues = {}
        dbs = []
        for name, fill in fills.items():
            db = open_file(Path(tmp) / f"{name}.db", clock)
            dbs.append(db)
            queues[name] = db.queue("q")
            fill(queues[name])
        clock.now = T0 + timedelta(seconds=10)
        claims: dict[str, list[float]] = {"none": [], "groups": []}
        cycles: dict[str, list[float]] = {"none": [], "chained": []}
        for round in range(ROUNDS + 1):
            spent = {"claim none": 0.0, "claim groups": 0.0, "cycle none": 0.0, "cycle chained": 0.0}
            for i in range(CYCLES):
                order = [("claim none", "none", False), ("claim groups", "groups", False),
                         ("cycle none", "none", True), ("cycle chained", "chained", True)]
                for key, name, ack in order[i % 4 :] + order[: i % 4]:
                    spent[key] += cycle(queues[name], ack)
            if round == 0:
                continue  # warm-up
            per = {key: value * 1e6 / CYCLES for key, value in spent.items()}
            claims["none"].append(per["claim none"])
            claims["groups"].append(per["claim groups"])
            cycles["none"].append(per["cycle none"])
            cycles["chained"].append(per["cycle chained"])
        for db in dbs:
            db.close()
    print(
        f"one claim on a SQLite file (durability normal), us: {ROUNDS} rounds of {CYCLES}, "
        "interleaved, after a warm-up; min / median / max"
    )
    print(f"  {'':<62} {'min':>8} {'median':>8} {'max':>8}")
    print(f"  {'claim, a queue without groups':<62} {spread(claims['none'])}")
    label = f"claim, {GROUPS} group heads in backoff, {GROUPS * BEHIND} behind them"
    print(f"  {label:<62} {spread(claims['groups'])}")
    ratio = statistics.median(claims["groups"]) / statistics.median(claims["none"])
    print(f"  ratio of medians: {ratio:.2f}x (issue 21's target: at most 1.20x)")
    print(f"  {'claim+succeed, a queue without groups':<62} {spread(cycles['none'])}")
    label = f"claim+succeed of grouped messages ({CHAINS} groups: each ack unblocks)"
    print(f"  {label:<62} {spread(cycles['chained'])}")
    ratio = statistics.median(cycles["chained"]) / statistics.median(cycles["none"])
    print(f"  ratio of medians: {ratio:.2f}x (the cost of a group's next member)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
