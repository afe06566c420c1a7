"""Prometheus metrics of a queue database, for ``GET /metrics`` of `deadletter.http`: one gauge per
queue and status (the core's status names), one of the oldest dead message's age.

Metrics (gauges, read at scrape time from `Database.queues`, which counts from indexes; the text
format is prometheus-client's)::

    deadletter_messages{queue="emails",status="dead"} 3
    deadletter_oldest_dead_age_seconds{queue="emails"} 5400.0

The alert "the DLQ is not empty" is ``deadletter_messages{status="dead"} > 0``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

import deadletter

from .._deadletter import STATUSES

__all__ = ["STATUSES", "QueueCollector", "registry"]


class QueueCollector(Collector):
    """Per queue: its messages per status, and the age of its oldest dead message."""

    def __init__(self, db: deadletter.Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        messages = GaugeMetricFamily(
            "deadletter_messages", "Messages in the queue, per status.", labels=["queue", "status"]
        )
        oldest = GaugeMetricFamily(
            "deadletter_oldest_dead_age_seconds",
            "Seconds since the oldest dead message of the queue died (absent: no dead message).",
            labels=["queue"],
        )
        for stats in self.db.queues():
            for status in STATUSES:
                messages.add_metric([stats.queue, status], getattr(stats, status))
            if stats.oldest_dead_age is not None:
                oldest.add_metric([stats.queue], stats.oldest_dead_age.total_seconds())
        yield messages
        yield oldest


def registry(db: deadletter.Database) -> CollectorRegistry:
    """A registry holding only the queue metrics of ``db`` (not the process's default ones)."""
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(QueueCollector(db))
    return collectors
