"""Ordering groups under four processes, random failures and SIGKILLs (issue 21): 50 groups of 20
messages, enqueued interleaved; four worker processes claim, work a few milliseconds, fail some
attempts (planned per message and attempt) and ack the rest, while the test kills a worker with
SIGKILL now and then, one that holds a message when it can (its message is left to its lease),
and starts another in its place. Meanwhile a watcher reads the processing messages again and
again. Afterwards:

- no group ever had two messages processing at once: in every snapshot of the watcher (one read
  of the processing messages), and in the workers' journals, where every claim of a group's
  message came after its predecessor's ack (the time right after the claim returned, against
  the ack's instant in the database: one clock, the system's, read before the ack committed);
- so each group's messages succeeded in the order they were enqueued;
- every message succeeded, after its planned failures (an attempt planned to fail fails by
  `fail`, or by the lease of a killed worker running out) and the attempts kills cost.

On SQLite (a file) and, marked ``postgres``, on PostgreSQL."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import postgres_server as postgres
import pytest

import deadletter
from postgres_server import schemas  # noqa: F401 - the fixture

GROUPS = 50
PER_GROUP = 20
MESSAGES = GROUPS * PER_GROUP
PROCESSES = 4
KILLS = 8
LEASE = 0.5  # seconds: a killed worker's message comes back soon
BACKOFF = deadletter.Backoff(initial=0.01, cap=0.05)
DEADLINE = 240.0  # seconds
LEASE_EXPIRED = "lease expired"


def planned_failures(group: int, seq: int) -> int:
    """How many attempts of a message fail (0, 1 or 2), the same in every process."""
    return random.Random(group * 1000 + seq).choices([0, 1, 2], weights=[70, 20, 10])[0]


def millis(instant: Any) -> int:
    return round(instant.timestamp() * 1000)


def open_db(target: tuple[str, Optional[str]]) -> deadletter.Database:
    path, schema = target
    if schema is None:
        return deadletter.open(path)
    return deadletter.open(path, schema=schema, max_connections=1)


def wall_ms() -> float:
    """Now, in ms since the epoch: the clock the databases read too (the default clock)."""
    return time.time() * 1000


def work(target: tuple[str, Optional[str]], journal: str, seed: int) -> None:
    """Claims until killed: fails the planned attempts, acks the others; journals each claim
    (``C``: the message, and the time right after the claim returned) and each end (``E``) as a
    JSON line, written straight to the file (a SIGKILL loses at most the line of the step it
    interrupts)."""
    rng = random.Random(seed)
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def write(record: list[Any]) -> None:
        os.write(fd, (json.dumps(record) + "\n").encode())

    try:
        with open_db(target) as db:
            q = db.queue("jobs")
            while True:
                m = q.claim()
                if m is None:
                    time.sleep(rng.uniform(0.001, 0.005))
                    continue
                write(["C", m.id, m.group, wall_ms()])
                assert m.lease_token is not None
                plan = json.loads(m.payload)
                time.sleep(rng.uniform(0.002, 0.012))  # the handler's work
                try:
                    if m.retry_count < planned_failures(plan["g"], plan["seq"]):
                        q.fail(m.id, "planned", lease_token=m.lease_token)
                        write(["E", m.id, "failed"])
                    else:
                        q.succeed(m.id, lease_token=m.lease_token)
                        write(["E", m.id, "acked"])
                except deadletter.ConflictError:
                    write(["E", m.id, "lost"])
    except BaseException:  # noqa: BLE001 - the parent reads it from the journal
        write(["X", traceback.format_exc()])
        raise


def read_journals(paths: list[Path]) -> list[list[Any]]:
    """Every record of every journal, each journal in its worker's order."""
    records = []
    for path in paths:
        if not path.exists():  # its worker was killed before it began
            continue
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by the SIGKILL
                pass
    return records


def ends(records: list[list[Any]]) -> dict[str, int]:
    """How many claims ended how: acked, failed, lost (a lease lost), killed (no end: its worker
    was killed)."""
    count: dict[str, int] = defaultdict(int)
    awaiting: set[int] = set()
    for record in records:
        if record[0] == "C":
            if record[1] in awaiting:  # its worker's previous claim of it had no end
                count["killed"] += 1
            awaiting.add(record[1])
        elif record[0] == "E":
            awaiting.discard(record[1])
            count[record[2]] += 1
    count["killed"] += len(awaiting)
    return dict(count)


def holding(journal: Path) -> bool:
    """Whether the worker of ``journal`` holds a message now: its last record is a claim."""
    try:
        lines = journal.read_bytes().splitlines()
    except FileNotFoundError:  # not started yet
        return False
    return bool(lines) and lines[-1].startswith(b'["C"')


def run_workers(target: tuple[str, Optional[str]], tmp_path: Path) -> tuple[list[Path], int]:
    """Runs the workers until every message succeeded, killing one now and then (one that holds a
    message, when one does within a second) and watching the processing messages; returns the
    journals and how many snapshots the watcher took."""
    ctx = multiprocessing.get_context("spawn")
    journals: list[Path] = []
    rng = random.Random(7)

    def start() -> tuple[multiprocessing.process.BaseProcess, Path]:
        journal = tmp_path / f"journal-{len(journals)}.jsonl"
        journals.append(journal)
        proc = ctx.Process(target=work, args=(target, str(journal), len(journals)))
        proc.start()
        return proc, journal

    workers = [start() for _ in range(PROCESSES)]
    kills, snapshots = 0, 0
    next_kill = time.monotonic() + rng.uniform(0.5, 1.0)
    deadline = time.monotonic() + DEADLINE
    try:
        with open_db(target) as db:
            q = db.queue("jobs")
            while q.stats().succeeded < MESSAGES:
                assert time.monotonic() < deadline, f"not finished in time: {q.stats()}"
                for proc, _ in workers:
                    assert proc.is_alive(), f"a worker died: {read_journals(journals)[-1:]}"
                processing = q.list(status="processing", limit=1000)
                per_group = defaultdict(list)
                for m in processing:
                    per_group[m.group].append(m.id)
                assert all(len(ids) == 1 for ids in per_group.values()), per_group
                snapshots += 1
                now = time.monotonic()
                if kills < KILLS and now >= next_kill:
                    holders = [i for i, (_, journal) in enumerate(workers) if holding(journal)]
                    if holders or now >= next_kill + 1.0:
                        index = rng.choice(holders) if holders else rng.randrange(len(workers))
                        victim, _ = workers.pop(index)
                        victim.kill()
                        victim.join(30)
                        workers.append(start())
                        kills += 1
                        next_kill = time.monotonic() + rng.uniform(0.2, 0.5)
                        continue
                time.sleep(0.02 if kills == KILLS or now < next_kill else 0.001)
    finally:
        for proc, _ in workers:
            proc.kill()
            proc.join(30)
    assert kills == KILLS, "finished before every planned kill: make the run longer"
    return journals, snapshots


@pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("postgres", marks=postgres.NEEDS_POSTGRES)]
)
def test_groups_stay_one_at_a_time_and_in_order_through_failures_and_kills(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    if store == "sqlite":
        target: tuple[str, Optional[str]] = (str(tmp_path / "jobs.db"), None)
    else:
        schemas = request.getfixturevalue("schemas")
        target = (postgres.url(), schemas.name())
    # The groups interleaved at random; each group's messages numbered in enqueue order.
    groups = [g for g in range(GROUPS) for _ in range(PER_GROUP)]
    random.Random(3).shuffle(groups)
    seqs: dict[int, int] = defaultdict(int)
    order = []
    for g in groups:
        order.append((g, seqs[g]))
        seqs[g] += 1
    with open_db(target) as db:
        q = db.queue("jobs")
        q.set_settings(backoff=BACKOFF, lease=LEASE, max_retries=10)
        q.enqueue_many(
            [
                {"payload": json.dumps({"g": g, "seq": seq}), "group": f"g{g}"}
                for g, seq in order
            ]
        )

    journals, snapshots = run_workers(target, tmp_path)
    records = read_journals(journals)
    crashed = [r for r in records if r[0] == "X"]
    assert crashed == []

    with open_db(target) as db:
        messages = db.queue("jobs").list(limit=1000)
    assert len(messages) == MESSAGES
    claimed: dict[int, list[float]] = defaultdict(list)
    for record in records:
        if record[0] == "C":
            claimed[record[1]].append(record[3])
    by_group: dict[Optional[str], list[tuple[int, deadletter.Message]]] = defaultdict(list)
    for m in messages:
        by_group[m.group].append((json.loads(m.payload)["seq"], m))
    assert len(by_group) == GROUPS

    for group, members in by_group.items():
        members.sort(key=lambda sm: sm[0])
        assert [seq for seq, _ in members] == list(range(PER_GROUP))
        for (_, before), (_, after) in zip(members, members[1:]):
            # Every claim of a group's message came after its predecessor's ack (the
            # database's instant of it, read from the same clock before it committed): never two
            # of a group's messages processing at once. Hence their acks in enqueue order, too.
            acked = millis(before.updated_at)
            assert claimed[after.id], f"no claim of {after!r} in the journals"
            first = min(claimed[after.id])
            assert first > acked, f"group {group}: {after!r} claimed at {first}, before {before!r}"
            assert acked <= millis(after.updated_at)

    # Every message succeeded, after the attempts planned to fail (each failed as planned, or by
    # a kill's lease expiry) and those that kills cost.
    for m in messages:
        plan = json.loads(m.payload)
        assert m.status == "succeeded", m
        planned = planned_failures(plan["g"], plan["seq"])
        errors = [e["error"] for e in m.errors]
        # Attempts below `planned` fail (as planned, or by a kill); later ones only by a kill.
        assert len(errors) == m.retry_count >= planned, m
        assert set(errors) <= {"planned", LEASE_EXPIRED}, m
        assert set(errors[planned:]) <= {LEASE_EXPIRED}, m
    count = ends(records)
    print(f"{store}: claims {count}, {snapshots} snapshots of the processing messages")
    assert count.get("killed", 0) > 0, "no kill hit a worker holding a message"
