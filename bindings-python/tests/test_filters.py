"""The Python API of issue 22 beyond the shared cases (test_conformance.py runs those): what
`Queue.list` returns (`deadletter.MessagePage`), the filters as keywords (a wrong keyword, an
instant that is not an aware datetime), the bulk actions' dry runs changing nothing, and
`retry_now`. Exact values on a virtual clock."""

from __future__ import annotations

import copy
import inspect
from datetime import datetime, timedelta, timezone

import deadletter
import pytest
from virtual_clock import T0, Clock

from deadletter._deadletter import FILTERS, SCAN_BUDGET


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(clock: Clock) -> deadletter.Queue:
    """Queue "q": 1 and 2 dead at T0+1 s ("HTTP 503", "HTTP 410"), 3 delayed by 60 s, 4 due;
    the clock at T0+10 s."""
    db = deadletter.open(clock=clock)
    q = db.queue("q")
    q.enqueue_many(
        [
            {"payload": '{"customer": 42}', "max_retries": 1},
            {"payload": '{"customer": 7}', "max_retries": 1},
            {"payload": "later", "delay": 60},
            "due",
        ]
    )
    clock.advance(1)
    for m in q.claim_many(2):
        q.fail(m.id, "HTTP 503" if m.id == 1 else "HTTP 410", lease_token=m.lease_token)
    clock.advance(9)
    return q


def test_list_returns_a_message_page(queue: deadletter.Queue) -> None:
    page = queue.list(payload_contains="customer", limit=1)
    assert type(page) is deadletter.MessagePage and isinstance(page, list)
    assert ([m.id for m in page], page.next_after_id) == ([1], 1)
    assert page == [queue.get(1)]  # a list: compared by its messages
    assert repr(page).startswith("MessagePage([<deadletter.Message") and "next_after_id=1" in repr(
        page
    )
    again = copy.copy(page)
    assert (again, again.next_after_id, type(again)) == (page, 1, deadletter.MessagePage)
    last = queue.list(payload_contains="customer", after_id=1)
    assert ([m.id for m in last], last.next_after_id) == ([2], None)
    assert queue.list("dead") == queue.list(status="dead") == [queue.get(1), queue.get(2)]


def test_every_filter_is_a_keyword_of_list_and_of_the_bulk_actions(
    queue: deadletter.Queue,
) -> None:
    assert FILTERS == (
        "status",
        "delayed",
        "payload_contains",
        "error_contains",
        "group",
        "idempotency_key",
        "created_after",
        "created_before",
        "updated_after",
        "updated_before",
        "dead_after",
        "dead_before",
    )
    assert SCAN_BUDGET == 10_000
    for method in ("list", "replay_all", "delete_all", "retry_now_all"):
        signature = inspect.signature(getattr(deadletter.Queue, method))
        assert set(FILTERS) <= set(signature.parameters), method
        assert getattr(queue, method)(**dict.fromkeys(FILTERS)) is not None  # None: not set
    assert [m.id for m in queue.list(**dict.fromkeys(FILTERS))] == [1, 2, 3, 4]


@pytest.mark.parametrize("method", ["list", "replay_all", "delete_all", "retry_now_all"])
def test_a_keyword_that_names_no_filter_is_a_type_error(
    queue: deadletter.Queue, method: str
) -> None:
    with pytest.raises(TypeError, match=f"Queue.{method}\\(\\) got an unexpected keyword "
                       "argument 'payload'"):
        getattr(queue, method)(payload="customer")


@pytest.mark.parametrize(
    "value, kind",
    [
        (T0.timestamp(), "a float"),  # seconds since the epoch are not taken for an instant
        (int(T0.timestamp() * 1000), "an int"),
        ("2026-01-01T00:00:00Z", "a str"),
        (datetime(2026, 1, 1), "a naive datetime"),
    ],
)
def test_an_instant_is_an_aware_datetime(
    queue: deadletter.Queue, value: object, kind: str
) -> None:
    with pytest.raises(deadletter.ValidationError) as raised:
        queue.list(created_after=value, updated_before=value)
    assert [(e["field"], e["code"]) for e in raised.value.errors] == [
        ("created_after", "type"),
        ("updated_before", "type"),
    ]
    # every time bound in Python's terms (the core says "an integer" of milliseconds)
    assert [e["message"] for e in raised.value.errors] == [
        f"must be an aware datetime, got {kind}" + " (without tzinfo)" * (kind == "a naive datetime")
    ] * 2


def test_instants_in_any_zone_are_rounded_up_to_the_millisecond(queue: deadletter.Queue) -> None:
    plus_two = timezone(timedelta(hours=2))
    died = queue.get(2).dead_at
    assert died == T0 + timedelta(seconds=1)
    assert [m.id for m in queue.list(dead_after=died.astimezone(plus_two))] == [1, 2]
    # 1 µs after: rounded up to the next millisecond, which no dead_at reaches
    assert queue.list(dead_after=died + timedelta(microseconds=1)) == []
    assert [m.id for m in queue.list(dead_before=died + timedelta(microseconds=1))] == [1, 2]


def test_a_dry_run_changes_nothing(queue: deadletter.Queue, clock: Clock) -> None:
    before = list(queue.list())
    stats = queue.stats()
    assert queue.replay_all(dry_run=True) == 2
    assert queue.replay_all(dry_run=True, limit=1) == 1
    assert queue.delete_all(dry_run=True) == 2
    assert queue.retry_now_all(dry_run=True) == 1
    assert queue.retry_now_all(dry_run=True, payload_contains="customer") == 0
    assert list(queue.list()) == before
    assert queue.stats() == stats
    assert queue.claim() is not None and queue.claim() is None  # only 4 is due still


def test_bulk_actions_act_on_what_the_dry_run_counted(queue: deadletter.Queue) -> None:
    assert queue.retry_now_all(dry_run=True) == queue.retry_now_all() == 1
    assert queue.get(3).retry_after is None
    assert queue.replay_all(dry_run=True, error_contains="410") == 1
    assert queue.replay_all(error_contains="410", dry_run=False) == 1
    assert queue.get(2).status == "pending"
    assert queue.delete_all(dry_run=True) == queue.delete_all() == 1
    assert [m.id for m in queue.list()] == [2, 3, 4]


def test_retry_now_returns_the_message_due_now(queue: deadletter.Queue, clock: Clock) -> None:
    message = queue.retry_now(3)
    assert (message.id, message.status, message.retry_after) == (3, "pending", None)
    assert message.updated_at == T0 + timedelta(seconds=10)
    clock.advance(5)
    assert queue.retry_now(3) == message  # already due: unchanged
    with pytest.raises(deadletter.ConflictError) as raised:
        queue.retry_now(1)
    assert (raised.value.reason, raised.value.status) == ("wrong_status", "dead")
    with pytest.raises(deadletter.NotFoundError):
        queue.retry_now(99)
    with pytest.raises(deadletter.ValidationError):
        queue.retry_now("3")
