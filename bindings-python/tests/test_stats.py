"""QueueStats and Database.queues: exact values at a virtual clock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from virtual_clock import T0, Clock

import deadletter


def test_stats_count_every_status_and_age() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock)
    q = db.queue("q")
    empty = q.stats()
    assert empty.to_dict() == {
        "queue": "q", "pending": 0, "processing": 0, "succeeded": 0, "dead": 0, "expired": 0,
        "delayed": 0, "next_due_at": None, "oldest_due_age": None, "oldest_dead_age": None,
        "paused": False, "expired_dead": 0, "expired_discarded": 0,
    }  # fmt: skip
    q.enqueue("a", max_retries=1)  # id 1, will die
    q.enqueue("b")  # id 2, will succeed
    q.enqueue("c", delay=60)  # id 3, delayed
    clock.advance(10)
    q.enqueue("d")  # id 4, due
    q.enqueue("e")  # id 5, will be processing with an expired lease
    one = q.claim(lease=5)
    assert one is not None and one.id == 1
    q.fail(one.id, "boom")
    two = q.claim()
    assert two is not None and two.id == 2
    q.succeed(two.id)
    four = q.claim(lease=1)
    assert four is not None and four.id == 4
    clock.advance(20)
    stats = q.stats()
    assert stats == q.stats()
    assert (stats.queue, stats.pending, stats.processing, stats.succeeded, stats.dead) == (
        "q",
        2,
        1,
        1,
        1,
    )
    assert (stats.expired, stats.delayed) == (1, 1)
    assert stats.next_due_at == T0 + timedelta(seconds=60)
    assert stats.oldest_due_age == timedelta(seconds=20)  # "e", enqueued at T0 + 10 s
    assert stats.oldest_dead_age == timedelta(seconds=20)  # died at T0 + 10 s
    d = stats.to_dict()
    assert d["oldest_due_age"] == timedelta(seconds=20) and d["next_due_at"] == stats.next_due_at
    assert "pending=2" in repr(stats) and "oldest_dead_age=0:00:20" in repr(stats)
    with pytest.raises(AttributeError):
        stats.pending = 3  # type: ignore[misc]


def test_queues_lists_the_queues_that_hold_messages_by_name() -> None:
    db = deadletter.open(clock=Clock())
    assert db.queues() == []
    for name in ["zeta", "alpha", "ünï", "alpha"]:
        db.queue(name).enqueue("x")
    assert [(s.queue, s.pending) for s in db.queues()] == [("alpha", 2), ("zeta", 1), ("ünï", 1)]
    assert db.queues()[0] == db.queue("alpha").stats()


def test_stats_of_a_closed_database_raise_store_error() -> None:
    db = deadletter.open()
    q = db.queue("q")
    db.close()
    with pytest.raises(deadletter.StoreError):
        q.stats()
    with pytest.raises(deadletter.StoreError):
        db.queues()
