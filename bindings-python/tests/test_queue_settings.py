"""The settings stored with a queue (issue 21) through the Python API: `Queue.settings`,
`set_settings`, `pause`, `resume`, the typed `QueueSettings`; which value wins (the call's, the
queue's stored one, the database's, the default), and the handle's own backoff, which wins over
the stored one and warns once per handle; the worker loops on a paused queue and with a stored
lease; ordering groups and expiry through `enqueue`, `enqueue_many`, `fail(retry_in=)` and
`replay(expires_in=)`. Exact values: a virtual clock."""

from __future__ import annotations

import sqlite3
import threading
import time
import warnings
from datetime import timedelta
from pathlib import Path

import pytest
from virtual_clock import T0, Clock

import deadletter
from deadletter._deadletter import WorkerPlan

EVENT_TIMEOUT = 30.0


def test_a_queue_stored_under_a_name_enqueue_refuses_is_paused_and_configured(
    tmp_path: Path,
) -> None:
    """Session 10: a queue stored under a name an enqueue refuses (its row written raw, as 0.1.0
    could) exists, so it is paused while its messages are moved out and its settings cleared;
    once the row is gone, pausing it would create it, which is refused again."""
    path = tmp_path / "old.db"
    with deadletter.open(path):
        pass
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO queues (name, max_retries) VALUES ('emails ', 7)")
    conn.close()
    with deadletter.open(path) as db:
        q = db.queue("emails ")
        paused = q.pause()
        assert (paused.paused, paused.max_retries) == (True, 7)
        assert [(s.queue, s.paused) for s in db.queues()] == [("emails ", True)]
        assert q.claim() is None
        assert q.set_settings(max_retries=5).max_retries == 5
        assert q.resume().paused is False
        assert q.set_settings().to_dict() == db.queue("other").settings().to_dict()
        assert db.queues() == []
        with pytest.raises(deadletter.ValidationError) as refused:
            q.pause()
        assert [(e["field"], e["code"]) for e in refused.value.errors] == [("queue", "invalid")]


def test_a_queue_never_configured_reads_as_all_unset() -> None:
    db = deadletter.open()
    settings = db.queue("q").settings()
    assert isinstance(settings, deadletter.QueueSettings)
    assert settings.to_dict() == {
        "backoff": None,
        "max_retries": None,
        "lease": None,
        "expires_in": None,
        "on_expiry": "dead",
        "paused": False,
    }
    assert repr(settings) == (
        "QueueSettings(backoff=None, max_retries=None, lease=None, expires_in=None, "
        "on_expiry='dead', paused=False)"
    )
    assert db.queues() == []  # reading wrote nothing


def test_set_settings_stores_and_replaces_all_five() -> None:
    db = deadletter.open()
    q = db.queue("q")
    policy = deadletter.Backoff(initial=10, multiplier=3, cap=600, jitter="full")
    stored = q.set_settings(
        backoff=policy, max_retries=5, lease=120, expires_in=timedelta(hours=1), on_expiry="discard"
    )
    assert stored == q.settings() == db.queue("q").settings()
    assert (stored.backoff, stored.max_retries, stored.lease, stored.expires_in) == (
        policy,
        5,
        timedelta(seconds=120),
        timedelta(hours=1),
    )
    assert (stored.on_expiry, stored.paused) == ("discard", False)
    assert repr(stored) == (
        "QueueSettings(backoff=Backoff(initial=10.0, multiplier=3.0, cap=600.0, jitter='full'), "
        "max_retries=5, lease=120.0, expires_in=3600.0, on_expiry='discard', paused=False)"
    )
    with pytest.raises(AttributeError):
        stored.paused = True  # type: ignore[misc]
    # A dict of Backoff's arguments is the same policy; the omitted settings are unset again.
    as_dict = q.set_settings(backoff={"initial": 10, "multiplier": 3, "cap": 600, "jitter": "full"})
    assert as_dict.backoff == policy
    assert (as_dict.max_retries, as_dict.lease, as_dict.expires_in) == (None, None, None)
    assert as_dict.on_expiry == "dead"
    assert deadletter.Backoff(**policy.to_dict()) == policy
    assert [s.queue for s in db.queues()] == ["q"]  # a configured queue is listed, empty


def test_set_settings_reports_every_rejected_setting_and_changes_nothing() -> None:
    q = deadletter.open().queue("q")
    q.set_settings(max_retries=4)
    with pytest.raises(deadletter.ValidationError) as refused:
        q.set_settings(
            backoff={"multiplier": 0, "jitter": "some"},
            max_retries=11,
            lease=0,
            expires_in=-1,
            on_expiry="keep",  # type: ignore[arg-type]
        )
    assert sorted(e["field"] for e in refused.value.errors) == [
        "expires_in",
        "jitter",
        "lease",
        "max_retries",
        "multiplier",
        "on_expiry",
    ]
    with pytest.raises(deadletter.ValidationError) as unknown:
        q.set_settings(backoff={"factor": 2})  # type: ignore[typeddict-unknown-key]
    assert [(e["field"], e["code"]) for e in unknown.value.errors] == [("factor", "unknown")]
    with pytest.raises(deadletter.ValidationError) as wrong:
        q.set_settings(backoff=2)  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in wrong.value.errors] == [("backoff", "type")]
    assert q.settings().max_retries == 4


def test_each_operation_takes_the_call_s_value_else_the_stored_one_else_the_default() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock, lease=30)
    q = db.queue("q")
    assert q.enqueue("p").max_retries == 3
    q.set_settings(max_retries=5, lease=120, expires_in=600)
    stored = q.enqueue("p")
    assert (stored.max_retries, stored.expires_at) == (5, T0 + timedelta(seconds=600))
    own = q.enqueue("p", max_retries=2, expires_in=10)
    assert (own.max_retries, own.expires_at) == (2, T0 + timedelta(seconds=10))
    first = q.claim()
    assert first is not None and first.lease_expires_at == T0 + timedelta(seconds=120)
    second = q.claim(lease=5)
    assert second is not None and second.lease_expires_at == T0 + timedelta(seconds=5)
    clock.advance(1)
    extended = q.extend(second.id, lease_token=second.lease_token or "")
    assert extended.lease_expires_at == clock.now + timedelta(seconds=120)
    q.set_settings()  # all unset: the database's lease and the defaults again
    third = q.claim()
    assert third is not None and third.lease_expires_at == clock.now + timedelta(seconds=30)
    assert q.enqueue("p").max_retries == 3 and q.enqueue("p").expires_at is None


def retry_after(q: deadletter.Queue, clock: Clock) -> timedelta:
    """The backoff of one failure of a new message, as ``q`` applies it."""
    m = q.enqueue("p")
    while (claimed := q.claim()) is not None and claimed.id != m.id:
        q.succeed(claimed.id)
    assert claimed is not None
    failed = q.fail(claimed.id, "boom")
    assert failed.retry_after is not None
    return failed.retry_after - clock.now


def test_the_handle_s_backoff_wins_over_the_stored_one_and_warns_once() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock)
    db.queue("q").set_settings(backoff=deadletter.Backoff(initial=60))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without a policy of the handle's own
        assert retry_after(db.queue("q"), clock) == timedelta(seconds=60)
        same = db.queue("q", backoff=deadletter.Backoff(initial=60))
        assert retry_after(same, clock) == timedelta(seconds=60)
    own = db.queue("q", backoff=deadletter.Backoff(initial=7))
    with pytest.warns(UserWarning, match="backoff Backoff\\(initial=7.0.*instead of the one stored") as seen:
        assert retry_after(own, clock) == timedelta(seconds=7)
    assert len(seen) == 1 and seen[0].filename == __file__  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per handle
        assert retry_after(own, clock) == timedelta(seconds=7)
    with pytest.warns(UserWarning):  # a new handle warns again
        retry_after(db.queue("q", backoff=deadletter.Backoff(initial=7)), clock)


def test_a_paused_queue_claims_nothing_until_resumed() -> None:
    db = deadletter.open()
    q = db.queue("q")
    q.enqueue("p")
    paused = q.pause()
    assert paused.paused and q.pause() == paused  # idempotent
    assert db.queue("q").settings().paused and q.stats().paused
    assert (q.claim(), q.claim_many(10)) == (None, [])
    assert q.enqueue("more").status == "pending"  # enqueues are taken
    q.set_settings(max_retries=2)
    assert q.settings().paused  # set_settings leaves the pause alone
    resumed = q.resume()
    assert not resumed.paused and q.resume() == resumed
    assert [m.payload for m in q.claim_many(10)] == ["p", "more"]


def test_the_worker_loop_idles_while_paused_and_takes_up_within_its_poll_interval() -> None:
    q = deadletter.open().queue("jobs")
    q.pause()
    q.enqueue("job")
    handled = threading.Event()
    stop = threading.Event()
    thread = threading.Thread(
        target=q.process,
        args=(lambda m: handled.set(),),
        kwargs={"poll_interval": 0.05, "stop": stop},
    )
    thread.start()
    try:
        assert not handled.wait(0.5)  # paused: ten polls, no claim
        resumed = time.monotonic()
        q.resume()
        assert handled.wait(EVENT_TIMEOUT)
        assert time.monotonic() - resumed < 0.05 + 1.0  # a poll interval (plus slack)
    finally:
        stop.set()
        thread.join(EVENT_TIMEOUT)
    assert q.stats().succeeded == 1


def test_the_worker_loop_s_lease_is_the_stored_one_when_not_given() -> None:
    db = deadletter.open(lease=30)
    q = db.queue("q")
    assert WorkerPlan(q).lease == 30.0
    q.set_settings(lease=90)
    assert (WorkerPlan(q).lease, WorkerPlan(q).heartbeat) == (90.0, 45.0)
    assert WorkerPlan(q, lease=10).lease == 10.0


def test_groups_and_expiry_through_the_python_api() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    a1 = q.enqueue("a1", group="a")
    many = q.enqueue_many(
        [{"payload": "a2", "group": "a"}, {"payload": "b1", "group": "b", "expires_in": 5}, "c"]
    )
    assert [(m.group, m.expires_at) for m in many] == [
        ("a", None),
        ("b", T0 + timedelta(seconds=5)),
        (None, None),
    ]
    assert a1.group == "a" and a1.to_dict()["group"] == "a"
    claimed = q.claim_many(10)
    assert [m.payload for m in claimed] == ["a1", "b1", "c"]  # one per group
    retried = q.fail(a1.id, "429", retry_in=timedelta(seconds=30))
    assert retried.retry_after == T0 + timedelta(seconds=30)
    assert q.claim() is None  # a2 waits behind its head, in backoff
    clock.advance(30)
    assert (again := q.claim()) is not None and again.payload == "a1"
    q.succeed(again.id)
    assert (a2 := q.claim()) is not None and a2.payload == "a2"
    dead = q.fail(a2.id, "bad", retryable=False)
    replayed = q.replay(dead.id, expires_in=60)
    assert replayed.expires_at == clock.now + timedelta(seconds=60)
    clock.advance(60)
    assert q.reap() == 1  # its expiry came: dead with the error "expired"
    expired = q.get(dead.id)
    assert (expired.status, expired.last_error) == ("dead", "expired")
    assert q.stats().expired_dead == 1
