"""Four processes claim from one SQLite file until it is empty: every message is claimed exactly
once overall, and no error (no "database is locked") reaches a caller."""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

import deadletter

MESSAGES = 2000
PROCESSES = 4


def worker(path: str, start: Any, results: Any) -> None:
    """Claims and acks until nothing is due; reports (ids, error or None)."""
    claimed: list[int] = []
    try:
        with deadletter.open(path) as db:
            q = db.queue("jobs")
            start.wait()
            while (m := q.claim()) is not None:
                q.succeed(m.id, lease_token=m.lease_token)
                claimed.append(m.id)
        results.put((claimed, None))
    except BaseException:  # noqa: BLE001 - sent to the parent, which fails the test
        results.put((claimed, traceback.format_exc()))


def test_four_processes_claim_each_message_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "jobs.db")
    with deadletter.open(path) as db:
        q = db.queue("jobs")
        ids = [q.enqueue(f'{{"n": {i}}}').id for i in range(MESSAGES)]

    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(path, start, results)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    errors = [error for _, error in outcomes if error is not None]
    assert errors == [], "\n".join(errors)
    claimed = [i for ids_of_one, _ in outcomes for i in ids_of_one]
    assert len(claimed) == len(set(claimed)), "a message was claimed twice"
    assert sorted(claimed) == ids
    # (How the 2000 are spread over the processes is up to SQLite's lock handling: not checked.)
    with deadletter.open(path) as db:
        q = db.queue("jobs")
        assert q.list(status="pending") == [] and q.list(status="processing") == []
        done = q.list(status="succeeded", limit=1000)
        done += q.list(status="succeeded", limit=1000, after_id=done[-1].id)
        assert len(done) == MESSAGES
