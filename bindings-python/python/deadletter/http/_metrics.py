"""Prometheus metrics of a queue database, for ``GET /metrics`` of `deadletter.http`: one gauge per
queue and status (the core's status names), of the oldest dead message's age, of the leases that
ran out and are not reaped yet, of the delayed messages, of the lag (the age of the oldest due
pending message), of whether the queue is paused, and a counter of the messages that expired, per
outcome (the queue's ``on_expiry``: ``dead`` or ``discard``).

Metrics (read at scrape time from `Database.queues`, which counts from indexes and the queue's
stored counters; the text format is prometheus-client's)::

    deadletter_messages{queue="emails",status="dead"} 3
    deadletter_oldest_dead_age_seconds{queue="emails"} 5400.0
    deadletter_expired_leases{queue="emails"} 1
    deadletter_delayed_messages{queue="emails"} 40
    deadletter_oldest_due_age_seconds{queue="emails"} 12.5
    deadletter_paused{queue="emails"} 0
    deadletter_expired_total{queue="emails",outcome="discard"} 12

The alert "the DLQ is not empty" is ``deadletter_messages{status="dead"} > 0``; "messages stuck past
their lease" is ``deadletter_expired_leases > 0`` for a while (no worker reaps or claims them: the
workers are gone or stuck); "lag above N" is ``deadletter_oldest_due_age_seconds > N``. Both of
the last two need ``unless on(queue) deadletter_paused == 1``: a paused queue's lag grows and its
expired leases stay by design (finding F10).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

import deadletter

from .._deadletter import ON_EXPIRY, STATUSES

__all__ = ["STATUSES", "QueueCollector", "queue_gauge", "registry"]

EXPIRED = {"dead": "expired_dead", "discard": "expired_discarded"}
"""The `QueueStats` counter of each expiry outcome (`ON_EXPIRY`'s names)."""


def queue_gauge(name: str, documentation: str) -> GaugeMetricFamily:
    """A gauge with one value per queue (label ``queue``)."""
    return GaugeMetricFamily(name, documentation, labels=["queue"])


class QueueCollector(Collector):
    """Per queue: its messages per status, the age of its oldest dead message, its expired
    leases, delayed messages and lag, whether it is paused and how many of its messages
    expired, per outcome."""

    def __init__(self, db: deadletter.Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        messages = GaugeMetricFamily(
            "deadletter_messages", "Messages in the queue, per status.", labels=["queue", "status"]
        )
        oldest = queue_gauge(
            "deadletter_oldest_dead_age_seconds",
            "Seconds since the oldest dead message of the queue died (absent: no dead message).",
        )
        leases = queue_gauge(
            "deadletter_expired_leases",
            "Processing messages of the queue whose lease has run out, not reaped yet (by a "
            "claim or a reap).",
        )
        delayed = queue_gauge(
            "deadletter_delayed_messages",
            "Pending messages of the queue that are not due yet (in backoff or delayed).",
        )
        lag = queue_gauge(
            "deadletter_oldest_due_age_seconds",
            "Seconds since the due pending message the next claim takes (the first in enqueue "
            "order) was enqueued: the lag (absent: no due pending message).",
        )
        paused = queue_gauge(
            "deadletter_paused",
            "1 while the queue is paused (it claims nothing), else 0.",
        )
        expired = CounterMetricFamily(
            "deadletter_expired",
            "Messages of the queue that expired while pending: outcome dead (dead with the error "
            "`expired`) or discard (deleted).",
            labels=["queue", "outcome"],
        )
        for stats in self.db.queues():
            for status in STATUSES:
                messages.add_metric([stats.queue, status], getattr(stats, status))
            if stats.oldest_dead_age is not None:
                oldest.add_metric([stats.queue], stats.oldest_dead_age.total_seconds())
            leases.add_metric([stats.queue], stats.expired)
            delayed.add_metric([stats.queue], stats.delayed)
            if stats.oldest_due_age is not None:
                lag.add_metric([stats.queue], stats.oldest_due_age.total_seconds())
            paused.add_metric([stats.queue], int(stats.paused))
            for outcome in ON_EXPIRY:
                expired.add_metric([stats.queue, outcome], getattr(stats, EXPIRED[outcome]))
        yield messages
        yield oldest
        yield leases
        yield delayed
        yield lag
        yield paused
        yield expired


def registry(db: deadletter.Database) -> CollectorRegistry:
    """A registry holding only the queue metrics of ``db`` (not the process's default ones)."""
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(QueueCollector(db))
    return collectors
