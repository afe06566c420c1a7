"""The Prometheus metrics of a database (deadletter.http._metrics), read through prometheus-client's own
text format and parser (the route, `GET /metrics`, is in test_http_operators.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import deadletter
from deadletter.http import _metrics

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

def samples_of(db: deadletter.Database) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the database's metrics, by (name, sorted labels)."""
    text = generate_latest(_metrics.registry(db)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def succeed_one(queue: deadletter.Queue) -> None:
    """Enqueues a message on ``queue`` and acks it."""
    queue.enqueue("x")
    m = queue.claim()
    assert m is not None
    queue.succeed(m.id, lease_token=m.lease_token)


def test_expired_leases_delayed_messages_and_lag() -> None:
    """Per queue: leases run out and not reaped, messages not due yet, and the age of the
    oldest due pending message (absent when none is due)."""
    now = [T0]
    db = deadletter.open(clock=lambda: now[0])
    emails = db.queue("emails")
    for payload in ("held", "waiting"):
        emails.enqueue(payload)
    emails.enqueue("later", delay=600)
    assert emails.claim(lease=30) is not None  # "held", lease until T0 + 30 s
    now[0] = T0 + timedelta(seconds=10)
    emails.enqueue("newer")
    succeed_one(db.queue("idle"))
    now[0] = T0 + timedelta(seconds=100)

    samples = samples_of(db)

    def per_queue(name: str) -> dict[str, float]:
        return {k[1][0][1]: v for k, v in samples.items() if k[0] == name}

    assert per_queue("deadletter_expired_leases") == {"emails": 1, "idle": 0}
    assert per_queue("deadletter_delayed_messages") == {"emails": 1, "idle": 0}
    assert per_queue("deadletter_oldest_due_age_seconds") == {"emails": 100.0}  # "waiting"
    # The lease ran out but nothing reaped it: still counted as processing.
    assert samples[("deadletter_messages", (("queue", "emails"), ("status", "processing")))] == 1
    assert emails.reap() == 1
    samples = samples_of(db)
    assert per_queue("deadletter_expired_leases") == {"emails": 0, "idle": 0}


def test_messages_per_status_and_the_oldest_dead_age() -> None:
    now = [T0]
    db = deadletter.open(clock=lambda: now[0])
    emails = db.queue("emails")
    for payload in ("a", "b", "c"):
        emails.enqueue(payload)
    now[0] = T0 + timedelta(seconds=10)
    for _ in range(2):
        m = emails.claim()
        assert m is not None
        emails.fail(m.id, "boom", lease_token=m.lease_token, retryable=False)
    succeed_one(db.queue('with "quotes"'))
    now[0] = T0 + timedelta(seconds=100)

    samples = samples_of(db)

    def count(queue: str, status: str) -> float:
        return samples[("deadletter_messages", (("queue", queue), ("status", status)))]

    assert [count("emails", s) for s in _metrics.STATUSES] == [1, 0, 0, 2]
    assert [count('with "quotes"', s) for s in _metrics.STATUSES] == [0, 0, 1, 0]
    oldest = {k[1]: v for k, v in samples.items() if k[0] == "deadletter_oldest_dead_age_seconds"}
    assert oldest == {(("queue", "emails"),): 90.0}
