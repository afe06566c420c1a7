"""The operations of the dead-letter queue and of producers and workers, with Python's units:
replay_all, purge, delete, extend, reap, claim_many, enqueue delays; durations in seconds or
timedeltas, instants as aware datetimes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from virtual_clock import T0, Clock

import deadletter


def kill(q: deadletter.Queue, clock: Clock, error: str, seconds: float) -> deadletter.Message:
    """Enqueues a message at the current time and lets it die with `error` `seconds` later."""
    m = q.enqueue(error, max_retries=1)
    clock.advance(seconds)
    c = q.claim()
    assert c is not None and c.id == m.id
    return q.fail(c.id, error)


def dead_queue() -> tuple[deadletter.Queue, Clock]:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    for error, after in [("HTTP 500", 10), ("HTTP 503", 10), ("timeout", 10), ("HTTP 502", 10)]:
        kill(q, clock, error, after)  # dead at T0 + 10, 20, 30, 40 s
    return q, clock


def test_replay_all_filters_by_error_text() -> None:
    q, _ = dead_queue()
    assert q.replay_all(error_contains="HTTP 50") == 3
    assert [m.id for m in q.list(status="dead")] == [3]
    assert q.replay_all(error_contains="http") == 0  # case-sensitive
    assert q.replay_all(error_contains="HTTP") == 0  # replayed messages are pending now


def test_replay_all_filters_by_dead_at_half_open() -> None:
    q, _ = dead_queue()
    after, before = T0 + timedelta(seconds=20), T0 + timedelta(seconds=40)
    assert q.replay_all(dead_after=after, dead_before=before) == 2  # 20 s and 30 s
    assert [m.id for m in q.list(status="dead")] == [1, 4]
    in_tokyo = (T0 + timedelta(seconds=40)).astimezone(timezone(timedelta(hours=9)))
    assert q.replay_all(dead_after=in_tokyo) == 1
    replayed = q.get(4)
    assert (replayed.status, replayed.replay_count, replayed.dead_at) == ("pending", 1, None)


def test_replay_all_bounds_finer_than_a_millisecond_are_exact() -> None:
    # dead_at is kept in milliseconds; dead_after <= dead_at < dead_before holds exactly for
    # bounds between two milliseconds (they are rounded up, not down).
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    dead = kill(q, clock, "boom", 10)
    assert dead.dead_at == T0 + timedelta(seconds=10)
    us = timedelta(microseconds=1)
    for bounds, replayed in [
        ({"dead_after": dead.dead_at + 600 * us}, 0),
        ({"dead_after": dead.dead_at + 1 * us}, 0),
        ({"dead_before": dead.dead_at + 400 * us}, 1),
        ({"dead_before": dead.dead_at + 1 * us}, 1),
        ({"dead_after": dead.dead_at - 400 * us}, 1),
        ({"dead_before": dead.dead_at}, 0),
        ({"dead_before": datetime.max.replace(tzinfo=timezone.utc)}, 1),
    ]:
        assert (bounds, q.replay_all(**bounds)) == (bounds, replayed)
        if replayed:
            c = q.claim()
            assert c is not None and c.id == dead.id
            q.fail(c.id, "boom", lease_token=c.lease_token)
    assert q.get(dead.id).replay_count == 4


def test_replay_all_limit_and_batches() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    q.enqueue_many([{"payload": str(i), "max_retries": 1} for i in range(450)])
    while (batch := q.claim_many(100)) != []:
        for m in batch:
            q.fail(m.id, "e")
    assert q.stats().dead == 450
    assert q.replay_all(limit=1) == 1
    assert q.replay_all(limit=250) == 250  # more than one batch of 200
    assert q.replay_all() == 199
    assert q.stats().to_dict()["pending"] == 450


@pytest.mark.parametrize(
    "kwargs, field, code",
    [
        ({"dead_before": datetime(2026, 1, 1)}, "dead_before", "type"),  # naive
        ({"dead_after": 1767225600000}, "dead_after", "type"),  # an int is not an instant
        ({"dead_after": "2026-01-01"}, "dead_after", "type"),
        ({"limit": 0}, "limit", "out_of_range"),
        ({"limit": 1.5}, "limit", "type"),
        ({"error_contains": 5}, "error_contains", "type"),
        ({"dead_after": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))}, "dead_after", "out_of_range"),
    ],
)
def test_replay_all_validation_changes_nothing(kwargs: dict[str, Any], field: str, code: str) -> None:
    q, _ = dead_queue()
    with pytest.raises(deadletter.ValidationError) as info:
        q.replay_all(**kwargs)
    assert [(e["field"], e["code"]) for e in info.value.errors] == [(field, code)]
    assert q.stats().dead == 4


def test_naive_instants_are_named_in_the_message() -> None:
    q, _ = dead_queue()
    with pytest.raises(deadletter.ValidationError, match="must be an aware datetime, got a naive"):
        q.replay_all(dead_before=datetime(2026, 1, 1))


def test_purge_deletes_finished_messages_by_age() -> None:
    q, clock = dead_queue()  # dead at 10, 20, 30, 40 s; now 40 s
    m = q.enqueue("done")
    c = q.claim()
    assert c is not None and c.id == m.id
    q.succeed(c.id)  # updated at 40 s
    assert q.purge(status="dead", older_than=timedelta(seconds=15)) == 2  # 10 s and 20 s
    assert q.purge(status="succeeded", older_than=1) == 0
    clock.advance(1)
    assert q.purge(status="succeeded", older_than=1) == 1
    assert [m.id for m in q.list()] == [3, 4]
    assert q.purge(status="dead", older_than=0) == 2
    assert q.stats().to_dict()["dead"] == 0


@pytest.mark.parametrize(
    "status, older_than, field, code",
    [
        ("pending", 0, "status", "invalid"),
        ("nope", 0, "status", "invalid"),
        (None, 0, "status", "type"),
        ("dead", -1, "older_than", "out_of_range"),
        ("dead", "1", "older_than", "type"),
        ("dead", None, "older_than", "type"),
    ],
)
def test_purge_validation(status: Any, older_than: Any, field: str, code: str) -> None:
    q, _ = dead_queue()
    with pytest.raises(deadletter.ValidationError) as info:
        q.purge(status=status, older_than=older_than)
    assert [(e["field"], e["code"]) for e in info.value.errors] == [(field, code)]
    assert q.stats().dead == 4


def test_delete_returns_the_finished_message_and_refuses_live_ones() -> None:
    q, _ = dead_queue()
    gone = q.delete(1)
    assert (gone.id, gone.status, gone.last_error) == (1, "dead", "HTTP 500")
    with pytest.raises(deadletter.NotFoundError):
        q.get(1)
    with pytest.raises(deadletter.NotFoundError):
        q.delete(1)
    live = q.enqueue("live")
    with pytest.raises(deadletter.ConflictError) as info:
        q.delete(live.id)
    assert (info.value.reason, info.value.status) == ("wrong_status", "pending")


def test_extend_moves_the_lease_and_needs_the_current_token() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    q.enqueue("x")
    m = q.claim(lease=10)
    assert m is not None and m.lease_token is not None
    clock.advance(8)
    extended = q.extend(m.id, lease_token=m.lease_token, lease=timedelta(seconds=30))
    assert extended.lease_expires_at == T0 + timedelta(seconds=38)
    assert extended.lease_token == m.lease_token
    clock.advance(29)
    assert q.claim() is None  # still leased
    with pytest.raises(deadletter.ConflictError) as info:
        q.extend(m.id, lease_token="stale")
    assert info.value.reason == "lease_lost"
    default = q.extend(m.id, lease_token=m.lease_token)  # the database's lease: 30 s
    assert default.lease_expires_at == clock.now + timedelta(seconds=30)
    with pytest.raises(deadletter.ValidationError) as bad:
        q.extend(m.id, lease_token=None)  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in bad.value.errors] == [("lease_token", "type")]


def test_reap_fails_expired_leases_now() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    q.enqueue_many(["a", "b", "c"])
    q.claim(lease=5)
    q.claim(lease=50)
    assert q.reap() == 0
    clock.advance(5)
    assert q.reap() == 1
    reaped = q.get(1)
    assert (reaped.status, reaped.retry_count, reaped.retry_after) == (
        "pending",
        1,
        clock.now + timedelta(seconds=2),
    )
    assert reaped.errors == [{"attempt": 1, "error": "lease expired", "at": clock.now}]
    assert reaped.first_failed_at == clock.now
    assert q.get(2).status == "processing"


def test_claim_many_takes_due_messages_in_order_with_their_own_tokens() -> None:
    q = deadletter.open(clock=Clock()).queue("q")
    q.enqueue_many(["a", "b", {"payload": "later", "delay": 5}, "c"])
    batch = q.claim_many(3, lease=7)
    assert [m.payload for m in batch] == ["a", "b", "c"]
    assert len({m.lease_token for m in batch}) == 3
    assert {m.lease_expires_at for m in batch} == {T0 + timedelta(seconds=7)}
    assert q.claim_many(100) == []
    for n in [0, 101]:
        with pytest.raises(deadletter.ValidationError) as info:
            q.claim_many(n)
        assert [(e["field"], e["code"]) for e in info.value.errors] == [("n", "out_of_range")]


@pytest.mark.parametrize(
    "delay, ms", [(5, 5000), (0.25, 250), (timedelta(minutes=2), 120_000), (0, None)]
)
def test_an_enqueue_delay_sets_retry_after(delay: Any, ms: Any) -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    m = q.enqueue("x", delay=delay)
    assert m.retry_after == (None if ms is None else T0 + timedelta(milliseconds=ms))
    if ms is not None:
        clock.now = T0 + timedelta(milliseconds=ms - 1)
        assert q.claim() is None
        clock.advance(0.001)
    claimed = q.claim()
    assert claimed is not None and claimed.retry_after is None  # cleared by claim


@pytest.mark.parametrize(
    "delay, code", [(-1, "out_of_range"), (30 * 86400 + 0.001, "out_of_range"), ("5", "type"), (True, "type")]
)
def test_a_bad_delay_is_reported_as_delay(delay: Any, code: str) -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue("x", delay=delay)
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("delay", code)]
    assert "seconds" in info.value.errors[0]["message"]
