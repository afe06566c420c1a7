"""Idempotency keys: one message per key and queue, whatever the status, also when two
processes race with the same keys (SQLite's unique index decides)."""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

import pytest
from virtual_clock import T0, Clock

import deadletter

ENQUEUES = 500  # per process
KEYS = 100


def producer(path: str, start: Any, results: Any) -> None:
    """Enqueues ENQUEUES messages over KEYS keys; reports [(id, key, deduplicated)] or an error."""
    sent: list[tuple[int, str, bool]] = []
    try:
        with deadletter.open(path) as db:
            q = db.queue("orders")
            start.wait()
            for i in range(ENQUEUES):
                key = f"order-{i % KEYS}"
                m = q.enqueue(f'{{"n": {i}}}', idempotency_key=key)
                sent.append((m.id, key, m.deduplicated))
        results.put((sent, None))
    except BaseException:  # noqa: BLE001 - sent to the parent, which fails the test
        results.put((sent, traceback.format_exc()))


def test_two_processes_racing_over_100_keys_make_exactly_100_messages(tmp_path: Path) -> None:
    path = str(tmp_path / "orders.db")
    deadletter.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    results = ctx.Queue()
    procs = [ctx.Process(target=producer, args=(path, start, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    errors = [error for _, error in outcomes if error is not None]
    assert errors == [], "\n".join(errors)
    sent = [one for batch, _ in outcomes for one in batch]
    assert len(sent) == 2 * ENQUEUES
    inserted = [(i, key) for i, key, deduplicated in sent if not deduplicated]
    assert len(inserted) == KEYS  # each key inserted once, by one of the two processes
    id_of = dict((key, i) for i, key in inserted)
    assert all(id_of[key] == i for i, key, _ in sent)  # every duplicate got the first message
    with deadletter.open(path) as db:
        stored = db.queue("orders").list(limit=1000)
    assert len(stored) == KEYS
    assert sorted(m.idempotency_key or "" for m in stored) == sorted(id_of)
    assert sorted(m.id for m in stored) == list(range(1, KEYS + 1))  # no id consumed by a duplicate


def test_a_key_returns_the_stored_message_in_any_status_until_it_is_deleted() -> None:
    db = deadletter.open(clock=Clock())
    q = db.queue("q")
    first = q.enqueue("original", max_retries=2, idempotency_key="k")
    assert (first.id, first.deduplicated, first.idempotency_key) == (1, False, "k")
    again = q.enqueue("ignored", max_retries=9, idempotency_key="k")
    assert again.deduplicated
    assert (again.id, again.payload, again.max_retries) == (1, "original", 2)
    assert q.list() == [first]  # nothing inserted; stored messages read deduplicated False
    c = q.claim()
    assert c is not None
    q.succeed(c.id)
    done = q.enqueue("later", idempotency_key="k")
    assert (done.id, done.status, done.deduplicated) == (1, "succeeded", True)
    other = db.queue("other").enqueue("x", idempotency_key="k")  # keys are per queue
    assert (other.id, other.deduplicated) == (2, False)
    assert q.delete(1).id == 1
    fresh = q.enqueue("after delete", idempotency_key="k")
    assert (fresh.id, fresh.deduplicated) == (3, False)  # ids are never reused
    unkeyed = [q.enqueue("same payload").id for _ in range(2)]
    assert unkeyed == [4, 5]


def test_keys_within_one_batch_keep_the_first_occurrence() -> None:
    q = deadletter.open(clock=Clock()).queue("q")
    q.enqueue("stored", idempotency_key="a")
    batch = q.enqueue_many(
        [
            {"payload": "1", "idempotency_key": "b"},
            {"payload": "2", "idempotency_key": "a"},
            {"payload": "3", "idempotency_key": "b"},
            "4",
        ]
    )
    assert [(m.id, m.payload, m.deduplicated) for m in batch] == [
        (2, "1", False),
        (1, "stored", True),
        (2, "1", True),
        (3, "4", False),
    ]
    assert batch[0].created_at == T0


@pytest.mark.parametrize(
    "key, code", [("", "empty"), ("x" * 256, "too_long"), (5, "type"), (b"k", "type")]
)
def test_a_bad_key_is_rejected(key: object, code: str) -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue("x", idempotency_key=key)  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("idempotency_key", code)]
    assert q.list() == []
