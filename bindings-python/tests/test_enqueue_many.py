"""Queue.enqueue_many: all or nothing, in order, with the index of every rejected item."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from virtual_clock import T0, Clock

import deadletter


def fields(err: deadletter.ValidationError) -> list[tuple[str, str, int]]:
    return sorted((e["field"], e["code"], e.get("index", -1)) for e in err.errors)


def test_items_are_inserted_in_order_with_their_options() -> None:
    q = deadletter.open(clock=Clock()).queue("q")
    batch = q.enqueue_many(
        [
            "plain",
            {"payload": "retries", "max_retries": 7},
            {"payload": "delayed", "delay": 2.5},
            {"payload": "delta", "delay": timedelta(minutes=1), "idempotency_key": "k"},
        ]
    )
    assert [(m.id, m.payload, m.max_retries) for m in batch] == [
        (1, "plain", 3),
        (2, "retries", 7),
        (3, "delayed", 3),
        (4, "delta", 3),
    ]
    assert [m.retry_after for m in batch] == [
        None,
        None,
        T0 + timedelta(seconds=2.5),
        T0 + timedelta(minutes=1),
    ]
    assert batch[3].idempotency_key == "k"
    assert q.list() == batch
    assert q.enqueue_many(()) == []  # a tuple is a sequence too; empty inserts nothing


def test_one_bad_item_rejects_the_whole_batch() -> None:
    q = deadletter.open(clock=Clock()).queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue_many(["a", {"payload": "b"}, {"payload": 5}, {"payload": "d", "delay": -1}])
    assert fields(info.value) == [("delay", "out_of_range", 3), ("payload", "type", 2)]
    assert "items[2].payload" in str(info.value)
    assert q.list() == []
    assert q.enqueue("next").id == 1  # the rejected batch consumed no id


def test_unknown_keys_are_reported_with_their_item() -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue_many(["ok", {"payload": "x", "delay_ms": 5, "priority": 1}])
    assert fields(info.value) == [("delay_ms", "unknown", 1), ("priority", "unknown", 1)]
    assert q.list() == []


@pytest.mark.parametrize("items", ["abc", {"payload": "x"}, (i for i in ["x"]), None, 5])
def test_items_must_be_a_list(items: Any) -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue_many(items)
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("items", "type")]
    assert "index" not in info.value.errors[0]


def test_a_batch_holds_at_most_1000_items() -> None:
    q = deadletter.open().queue("q")
    assert len(q.enqueue_many(["x"] * 1000)) == 1000
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue_many(["x"] * 1001)
    assert fields(info.value) == [("items", "too_large", -1)]
    assert q.stats().pending == 1000


def test_items_that_are_neither_str_nor_dict_are_payloads_of_the_wrong_type() -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue_many(["x", 7, None, ["nested"]])
    assert fields(info.value) == [("payload", "type", 1), ("payload", "type", 2), ("payload", "type", 3)]
