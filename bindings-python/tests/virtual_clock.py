"""A virtual clock for tests: an aware datetime that tests move by hand."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Clock:
    """Returns ``now``; ``advance`` moves it."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
