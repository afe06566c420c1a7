"""`Queue.move` and `Queue.move_all` (issue 22) beyond the shared cases (test_conformance.py
runs move.json): ``Message.moved_from`` in the attribute, ``to_dict`` and ``repr``, the conflict
reason ``key_taken``, a dry run changing nothing, the keywords and their errors. Exact values on a
virtual clock."""

from __future__ import annotations

import inspect
import pickle
from datetime import timedelta

import deadletter
import pytest
from virtual_clock import T0, Clock

from deadletter._deadletter import FILTERS


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    """Queue "q": 1 dead at T0+1 s ("HTTP 503", key "k1"), 2 dead at T0+1 s ("HTTP 410"), 3
    pending and delayed by 60 s, 4 pending and due (key "k4"); the clock at T0+10 s."""
    db = deadletter.open(clock=clock)
    q = db.queue("q")
    q.enqueue_many(
        [
            {"payload": '{"customer": 42}', "max_retries": 1, "idempotency_key": "k1"},
            {"payload": '{"customer": 7}', "max_retries": 1},
            {"payload": "later", "delay": 60},
            {"payload": "due", "idempotency_key": "k4"},
        ]
    )
    clock.advance(1)
    for m in q.claim_many(2):
        q.fail(m.id, "HTTP 503" if m.id == 1 else "HTTP 410", lease_token=m.lease_token)
    clock.advance(9)
    return db


def test_a_moved_message_keeps_everything_and_names_the_queue_it_left(
    db: deadletter.Database,
) -> None:
    q, parking = db.queue("q"), db.queue("parking")
    before = q.get(1)
    assert before.moved_from is None and before.to_dict()["moved_from"] is None
    moved = q.move(1, "parking")
    assert moved.to_dict() == {
        **before.to_dict(),
        "queue": "parking",
        "moved_from": "q",
        "updated_at": T0 + timedelta(seconds=10),
    }
    assert moved == parking.get(1)
    assert "moved_from='q'" in repr(moved)
    assert "moved_from" not in repr(q.get(2))
    with pytest.raises(deadletter.NotFoundError):
        q.get(1)
    # It can go back: moved_from names the queue it last left.
    assert q.move(2, "parking").moved_from == "q"
    assert parking.move(1, "q").moved_from == "parking"


def test_a_taken_key_is_a_conflict_that_leaves_the_message(
    db: deadletter.Database,
) -> None:
    q, other = db.queue("q"), db.queue("other")
    other.enqueue("holder", idempotency_key="k4")
    before = q.get(4)
    with pytest.raises(deadletter.ConflictError) as raised:
        q.move(4, "other")
    error = raised.value
    assert (error.id, error.reason, error.status) == (4, "key_taken", None)
    assert pickle.loads(pickle.dumps(error)).reason == "key_taken"
    assert q.get(4) == before
    # move_all skips it, and does not count it (nor does its dry run).
    assert q.move_all("other", status="pending", dry_run=True) == 1  # 3 only
    assert q.move_all("other", status="pending") == 1
    assert [m.id for m in q.list()] == [1, 2, 4]
    assert [m.id for m in other.list()] == [3, 5]


def test_processing_and_succeeded_messages_do_not_move(
    db: deadletter.Database, clock: Clock
) -> None:
    q = db.queue("q")
    m = q.claim()
    assert m is not None and m.id == 4
    with pytest.raises(deadletter.ConflictError) as raised:
        q.move(4, "other")
    assert (raised.value.reason, raised.value.status) == ("wrong_status", "processing")
    q.succeed(4, lease_token=m.lease_token)
    with pytest.raises(deadletter.ConflictError) as raised:
        q.move(4, "other")
    assert (raised.value.reason, raised.value.status) == ("wrong_status", "succeeded")
    assert q.get(4).status == "succeeded"


def test_a_dry_run_counts_exactly_and_changes_nothing(db: deadletter.Database) -> None:
    q = db.queue("q")
    before = list(q.list())
    assert q.move_all("parking", dry_run=True) == 4  # 1, 2 dead; 3, 4 pending
    assert q.move_all("parking", status="dead", dry_run=True) == 2
    assert q.move_all("parking", delayed=True, dry_run=True) == 1
    assert q.move_all("parking", error_contains="410", dry_run=True) == 1
    assert q.move_all("parking", limit=3, dry_run=True) == 3
    assert list(q.list()) == before
    assert list(db.queue("parking").list()) == []
    assert q.move_all("parking", payload_contains="customer") == 2
    moved = db.queue("parking").list()
    assert [(m.id, m.status, m.moved_from) for m in moved] == [(1, "dead", "q"), (2, "dead", "q")]
    assert [m.id for m in q.list()] == [3, 4]


def test_move_all_takes_every_filter_and_the_target_first(db: deadletter.Database) -> None:
    signature = inspect.signature(deadletter.Queue.move_all)
    assert list(signature.parameters)[:2] == ["self", "to_queue"]
    assert set(FILTERS) <= set(signature.parameters)
    q = db.queue("q")
    assert q.move_all("parking", **dict.fromkeys(FILTERS), dry_run=True) == 4  # None: not set
    with pytest.raises(TypeError, match="Queue.move_all\\(\\) got an unexpected keyword"):
        q.move_all("parking", payload="customer")


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda q: q.move(1, "q"), [("to_queue", "invalid")]),
        (lambda q: q.move(1, ""), [("to_queue", "empty")]),
        (lambda q: q.move("1", 7), [("id", "type"), ("to_queue", "type")]),
        (lambda q: q.move_all("q"), [("to_queue", "invalid")]),
        (lambda q: q.move_all(None), [("to_queue", "type")]),
        (
            lambda q: q.move_all("parking", status="succeeded", limit=0, dry_run="yes"),
            [("status", "invalid"), ("limit", "out_of_range"), ("dry_run", "type")],
        ),
    ],
)
def test_bad_arguments_are_reported_together_and_change_nothing(
    db: deadletter.Database, call, expected: list[tuple[str, str]]
) -> None:
    q = db.queue("q")
    before = list(q.list())
    with pytest.raises(deadletter.ValidationError) as raised:
        call(q)
    assert [(e["field"], e["code"]) for e in raised.value.errors] == expected
    assert list(q.list()) == before
