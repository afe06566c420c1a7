"""Database.on_dead: called once per death (from fail, claim, claim_many and reap) with the
committed message, in the calling thread; never for other transitions; a raising callback is
logged and changes nothing; unsubscribing works."""

from __future__ import annotations

import logging
import threading
import weakref
from datetime import timedelta

import pytest
from virtual_clock import T0, Clock

import deadletter


def open_with_deaths() -> tuple[deadletter.Database, Clock, list[deadletter.Message]]:
    clock = Clock()
    db = deadletter.open(clock=clock)
    died: list[deadletter.Message] = []
    db.on_dead(died.append)
    return db, clock, died


def test_fail_that_uses_up_the_retries_calls_back_once_with_the_committed_message() -> None:
    db, clock, died = open_with_deaths()
    q = db.queue("emails")
    seen_in_store: list[str] = []
    db.on_dead(lambda m: seen_in_store.append(q.get(m.id).status))
    m = q.enqueue("a", max_retries=2)
    c = q.claim()
    assert c is not None
    assert q.fail(c.id, "timeout", lease_token=c.lease_token).status == "pending"
    assert died == []
    clock.advance(2)
    c = q.claim()
    assert c is not None
    dead = q.fail(c.id, "timeout again", lease_token=c.lease_token)
    assert dead.status == "dead"
    assert died == [dead]
    assert died[0] == q.get(m.id)
    assert (died[0].dead_at, died[0].last_error) == (T0 + timedelta(seconds=2), "timeout again")
    assert [e["error"] for e in died[0].errors] == ["timeout", "timeout again"]
    assert seen_in_store == ["dead"]  # committed before the callbacks run


def test_a_permanent_failure_calls_back() -> None:
    db, _, died = open_with_deaths()
    q = db.queue("q")
    q.enqueue("x", max_retries=5)
    c = q.claim()
    assert c is not None
    dead = q.fail(c.id, "malformed", retryable=False)
    assert [m.id for m in died] == [dead.id] and died[0].retry_count == 1


def test_claim_that_expires_a_last_attempt_calls_back() -> None:
    db, clock, died = open_with_deaths()
    q = db.queue("q")
    q.enqueue("poison", max_retries=1)
    q.enqueue("next")
    first = q.claim(lease=1)
    assert first is not None
    clock.advance(1)
    taken = q.claim()
    assert taken is not None and taken.payload == "next"
    assert [(m.id, m.status, m.last_error) for m in died] == [(1, "dead", "lease expired")]
    assert died[0].dead_at == T0 + timedelta(seconds=1)


def test_claim_many_and_reap_call_back_in_lease_order() -> None:
    db, clock, died = open_with_deaths()
    q = db.queue("q")
    for payload in ["a", "b", "c"]:
        q.enqueue(payload, max_retries=1)
    q.claim(lease=3)  # 1
    q.claim(lease=1)  # 2
    q.claim(lease=2)  # 3
    clock.advance(3)
    assert q.reap() == 3
    assert [m.id for m in died] == [2, 3, 1]  # the order the leases ran out
    died.clear()
    q.enqueue("d", max_retries=1)
    [claimed] = q.claim_many(5, lease=1)
    clock.advance(1)
    assert q.claim_many(5) == []
    assert [m.id for m in died] == [claimed.id]


def test_other_transitions_never_call_back() -> None:
    db, clock, died = open_with_deaths()
    q = db.queue("q")
    q.enqueue("a", max_retries=3)
    c = q.claim()
    assert c is not None
    q.extend(c.id, lease_token=c.lease_token or "", lease=60)
    q.fail(c.id, "retry me", lease_token=c.lease_token)  # retries left: pending
    clock.advance(2)
    c = q.claim()
    assert c is not None
    q.succeed(c.id, lease_token=c.lease_token)
    q.enqueue("b", max_retries=1)
    c = q.claim()
    assert c is not None
    q.fail(c.id, "dies", lease_token=c.lease_token)
    assert [m.id for m in died] == [2]
    died.clear()
    q.replay(2)
    c = q.claim()
    assert c is not None
    q.fail(c.id, "dies again", retryable=False)
    assert len(died) == 1
    died.clear()
    assert q.replay_all() == 1
    q.enqueue_many(["c", {"payload": "d"}])
    assert q.reap() == 0
    assert q.purge(status="succeeded", older_than=0) == 1
    q.stats()
    db.queues()
    assert died == []


def test_a_raising_callback_is_logged_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    db = deadletter.open(clock=Clock())
    calls: list[str] = []

    def broken(m: deadletter.Message) -> None:
        calls.append("broken")
        raise RuntimeError(f"cannot page anyone about {m.id}")

    db.on_dead(broken)
    db.on_dead(lambda m: calls.append("second"))
    q = db.queue("q")
    q.enqueue("x", max_retries=1)
    c = q.claim()
    assert c is not None
    with caplog.at_level(logging.ERROR, logger="deadletter"):
        dead = q.fail(c.id, "boom", lease_token=c.lease_token)
    assert dead.status == "dead" and q.get(dead.id) == dead  # the call returned its value
    assert calls == ["broken", "second"]
    [record] = caplog.records
    assert (record.name, record.levelno) == ("deadletter", logging.ERROR)
    assert "raised for message 1" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert "cannot page anyone about 1" in caplog.text and "Traceback" in caplog.text


def test_keyboard_interrupt_in_a_callback_propagates_after_the_commit() -> None:
    db = deadletter.open(clock=Clock())

    def interrupted(m: deadletter.Message) -> None:
        raise KeyboardInterrupt

    db.on_dead(interrupted)
    q = db.queue("q")
    q.enqueue("x", max_retries=1)
    c = q.claim()
    assert c is not None
    with pytest.raises(KeyboardInterrupt):
        q.fail(c.id, "boom")
    assert q.get(c.id).status == "dead"


def test_unsubscribe_stops_the_calls_and_is_idempotent() -> None:
    db = deadletter.open(clock=Clock())
    first: list[int] = []
    second: list[int] = []
    unsubscribe = db.on_dead(lambda m: first.append(m.id))
    db.on_dead(lambda m: second.append(m.id))
    q = db.queue("q")
    for payload in "ab":
        q.enqueue(payload, max_retries=1)
    c = q.claim()
    assert c is not None
    q.fail(c.id, "x")
    unsubscribe()
    unsubscribe()
    c = q.claim()
    assert c is not None
    q.fail(c.id, "x")
    assert (first, second) == ([1], [1, 2])


def test_callbacks_run_in_the_calling_thread() -> None:
    db = deadletter.open(clock=Clock())
    threads: list[int] = []
    db.on_dead(lambda m: threads.append(threading.get_ident()))
    q = db.queue("q")
    q.enqueue("x", max_retries=1)

    def work() -> None:
        c = q.claim()
        assert c is not None
        q.fail(c.id, "x")

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert threads == [worker.ident]


def test_on_dead_needs_a_callable() -> None:
    db = deadletter.open()
    with pytest.raises(deadletter.ValidationError) as info:
        db.on_dead("not callable")  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("callback", "type")]


def test_closing_lets_go_of_the_callbacks() -> None:
    class Pager:
        def __call__(self, m: deadletter.Message) -> None:
            pass

    db = deadletter.open()
    pager = Pager()
    db.on_dead(pager)
    alive = weakref.ref(pager)
    del pager
    assert alive() is not None
    db.close()
    assert alive() is None
