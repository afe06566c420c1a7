"""deadletter.Backoff, queue handles with a policy, and the random source of jitter."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from virtual_clock import Clock

import deadletter


def retry_delays(q: deadletter.Queue, clock: Clock, failures: int) -> list[timedelta]:
    """Fails a new message `failures` times, then acks it; the delay each failure scheduled."""
    new = q.enqueue("x", max_retries=10)
    delays = []
    for _ in range(failures):
        m = q.claim()
        assert m is not None and m.id == new.id
        failed = q.fail(m.id, "e")
        assert failed.retry_after is not None
        delays.append(failed.retry_after - clock.now)
        clock.now = failed.retry_after
    m = q.claim()
    assert m is not None and m.id == new.id
    q.succeed(m.id)
    return delays


def test_the_default_is_the_original_schedule() -> None:
    policy = deadletter.Backoff()
    assert (policy.initial, policy.multiplier, policy.cap, policy.jitter) == (
        timedelta(seconds=2),
        2.0,
        timedelta(hours=1),
        None,
    )
    assert repr(policy) == "Backoff(initial=2.0, multiplier=2.0, cap=3600.0, jitter=None)"
    assert policy == deadletter.Backoff(2, 2, 3600, None) == deadletter.Backoff(None, None, None)
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q")
    assert (q.backoff, q.settings().backoff) == (None, None)  # no policy of its own, none stored
    assert retry_delays(q, clock, 3) == [timedelta(seconds=s) for s in (2, 4, 8)]


def test_a_queue_handle_uses_its_policy() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock)
    policy = deadletter.Backoff(initial=timedelta(milliseconds=1500), multiplier=3, cap=10)
    assert repr(policy) == "Backoff(initial=1.5, multiplier=3.0, cap=10.0, jitter=None)"
    q = db.queue("q", backoff=policy)
    assert retry_delays(q, clock, 4) == [
        timedelta(seconds=1.5),
        timedelta(seconds=4.5),
        timedelta(seconds=10),  # 13.5 s, capped
        timedelta(seconds=10),
    ]
    # Another handle on the same queue has its own policy.
    assert retry_delays(db.queue("q"), clock, 1) == [timedelta(seconds=2)]


@pytest.mark.parametrize(
    "jitter, sample, first, third",
    [("full", 0.25, 500, 2000), ("equal", 0.5, 1500, 6000), ("full", 0.0, 0, 0)],
)
def test_jitter_uses_the_random_source(jitter: Any, sample: float, first: int, third: int) -> None:
    clock = Clock()
    db = deadletter.open(clock=clock, random=lambda: sample)
    q = db.queue("q", backoff=deadletter.Backoff(jitter=jitter))
    delays = retry_delays(q, clock, 3)  # base delays 2 s, 4 s, 8 s
    assert delays[0] == timedelta(milliseconds=first)
    assert delays[2] == timedelta(milliseconds=third)


def test_the_default_random_source_draws_within_the_jitter_range() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock).queue("q", backoff=deadletter.Backoff(initial=100, jitter="equal"))
    delays = {retry_delays(q, clock, 1)[0] for _ in range(20)}
    assert all(timedelta(seconds=50) <= d < timedelta(seconds=100) for d in delays)
    assert len(delays) > 1  # drawn, not constant


def test_the_random_source_is_asked_once_per_call_that_may_reschedule_and_is_validated() -> None:
    calls: list[int] = []
    answer: list[Any] = [0.5]

    def random() -> Any:
        calls.append(1)
        return answer[0]

    db = deadletter.open(clock=Clock(), random=random)
    q = db.queue("q")
    q.enqueue_many(["x", "y"])
    q.stats()
    assert calls == []
    m = q.claim()
    assert m is not None and calls == [1]
    q.claim_many(5)
    q.reap()
    assert len(calls) == 3
    for bad, code in [(1.0, "out_of_range"), (-0.1, "out_of_range"), ("0.5", "type"), (None, "type")]:
        answer[0] = bad
        with pytest.raises(deadletter.ValidationError) as info:
            q.fail(m.id, "e")  # even without jitter, like the JavaScript binding
        assert [(e["field"], e["code"]) for e in info.value.errors] == [("random", code)]
    assert q.get(m.id).status == "processing"  # nothing written


def test_an_exception_from_the_random_source_propagates() -> None:
    def broken() -> float:
        raise OSError("no entropy")

    q = deadletter.open(random=broken).queue("q", backoff=deadletter.Backoff(jitter="full"))
    with pytest.raises(OSError, match="no entropy"):
        q.claim()


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"initial": -1}, [("initial", "out_of_range")]),
        ({"initial": 30 * 86400 + 1}, [("initial", "out_of_range")]),
        ({"cap": timedelta(days=31)}, [("cap", "out_of_range")]),
        ({"multiplier": 0.5}, [("multiplier", "out_of_range")]),
        ({"multiplier": 101}, [("multiplier", "out_of_range")]),
        ({"multiplier": True}, [("multiplier", "type")]),
        ({"initial": "2"}, [("initial", "type")]),
        ({"jitter": "half"}, [("jitter", "invalid")]),
        ({"jitter": 1}, [("jitter", "type")]),
        (
            {"initial": True, "cap": -5, "jitter": "x"},
            [("cap", "out_of_range"), ("initial", "type"), ("jitter", "invalid")],
        ),
    ],
)
def test_backoff_validation(kwargs: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    with pytest.raises(deadletter.ValidationError) as info:
        deadletter.Backoff(**kwargs)
    assert sorted((e["field"], e["code"]) for e in info.value.errors) == expected


def test_backoff_accepts_the_whole_range_and_is_immutable() -> None:
    edge = deadletter.Backoff(initial=0, multiplier=100, cap=timedelta(days=30), jitter="equal")
    assert (edge.initial, edge.multiplier, edge.cap, edge.jitter) == (
        timedelta(0),
        100.0,
        timedelta(days=30),
        "equal",
    )
    with pytest.raises(AttributeError):
        edge.cap = timedelta(0)  # type: ignore[misc]


def test_queue_rejects_a_backoff_that_is_not_a_policy_with_the_name() -> None:
    db = deadletter.open()
    with pytest.raises(deadletter.ValidationError) as info:
        db.queue("", backoff={"initial": 1})  # type: ignore[arg-type]
    assert sorted((e["field"], e["code"]) for e in info.value.errors) == [
        ("backoff", "type"),
        ("queue", "empty"),
    ]


def test_open_rejects_a_random_source_that_is_not_callable() -> None:
    with pytest.raises(deadletter.ValidationError) as info:
        deadletter.open(random=0.5, clock=7, lease=0)  # type: ignore[arg-type]
    assert sorted((e["field"], e["code"]) for e in info.value.errors) == [
        ("clock", "type"),
        ("lease", "out_of_range"),
        ("random", "type"),
    ]
