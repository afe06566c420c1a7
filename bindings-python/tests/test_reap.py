"""Operators take back expired leases (new-user finding F9: the console and ``/metrics`` flagged
messages held past their lease, but only a claim reaped them, and a paused or idle queue claims
nothing): ``POST /queues/{queue}/reap`` and ``deadletter reap PATH QUEUE``, over `Queue.reap`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import deadletter
import pytest
from deadletter import cli
from http_client import client_of, problem
from virtual_clock import Clock


def held_past_their_lease(db: deadletter.Database, clock: Clock) -> None:
    """Queue "q": 1 held past its 10 s lease (max_retries 1), 2 held past it (max_retries 3),
    3 held within its lease, 4 pending; the queue is paused."""
    q = db.queue("q")
    q.enqueue("one", max_retries=1)
    q.enqueue("two")
    for _ in range(2):
        assert q.claim(lease=10) is not None
    q.enqueue("three")
    q.enqueue("four")
    assert q.claim(lease=60) is not None
    q.pause()
    clock.advance(30)


def reaped(db: deadletter.Database) -> list[tuple[int, str, int]]:
    return [(m.id, m.status, m.retry_count) for m in db.queue("q").list()]


AFTER = [(1, "dead", 1), (2, "pending", 1), (3, "processing", 0), (4, "pending", 0)]


def test_post_reap_takes_back_the_expired_leases_of_a_paused_queue() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock)
    held_past_their_lease(db, clock)
    client = client_of(db, clock)
    assert client.get("/queues/q/stats").json()["expired"] == 2
    r = client.post("/queues/q/reap")
    assert (r.status_code, r.json()) == (200, {"reaped": 2})
    assert reaped(db) == AFTER
    assert client.get("/queues/q/stats").json()["expired"] == 0
    assert client.post("/queues/q/reap").json() == {"reaped": 0}


def test_post_reap_takes_no_body_fields_and_no_query(
    db_clock: tuple[deadletter.Database, Clock],
) -> None:
    db, clock = db_clock
    client = client_of(db, clock)
    problem(client.post("/queues/q/reap", json={"dry_run": True}), 422, "validation_failed")
    problem(client.post("/queues/q/reap?dry_run=true"), 422, "validation_failed")
    assert [s for _, s, _ in reaped(db)] == ["processing", "processing", "processing", "pending"]


def test_post_reap_is_in_the_openapi_document(db_clock: tuple[deadletter.Database, Clock]) -> None:
    db, clock = db_clock
    operation = client_of(db, clock).get("/openapi.json").json()["paths"]["/queues/{queue}/reap"]
    assert operation["post"]["operationId"] == "reap"


def test_deadletter_reap(tmp_path: Path) -> None:
    clock = Clock()
    file = tmp_path / "jobs.db"
    with deadletter.open(file, clock=clock) as db:
        held_past_their_lease(db, clock)
    # The CLI reads the system clock: years past the virtual one, every lease has run out.
    outputs = []
    for argv in (["reap", str(file), "q"], ["reap", str(file), "q", "--json"]):
        out, err = io.StringIO(), io.StringIO()
        assert (cli.main(argv, out=out, err=err), err.getvalue()) == (0, "")
        outputs.append(out.getvalue())
    assert outputs[0].split() == ["reaped", "3"]
    assert json.loads(outputs[1]) == {"count": 0, "dry_run": False}
    with deadletter.open(file) as db:
        assert [s for _, s, _ in reaped(db)] == ["dead", "pending", "pending", "pending"]


@pytest.fixture
def db_clock() -> tuple[deadletter.Database, Clock]:
    clock = Clock()
    db = deadletter.open(clock=clock)
    held_past_their_lease(db, clock)
    clock.advance(-30)  # every lease still running
    return db, clock

