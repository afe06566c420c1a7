"""Python values of the public API as JSON values, for the HTTP API and the CLI's ``--json``.

Timestamps become RFC 3339 strings in UTC with milliseconds and ``Z``
(``2026-11-30T16:24:03.123Z``); durations become seconds (a float); dicts and lists are converted
item by item; everything else (str, int, bool, None) is already JSON.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["jsonable", "timestamp"]


def timestamp(value: datetime) -> str:
    """An aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC; microseconds truncated)."""
    utc = value.astimezone(timezone.utc)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z"


def jsonable(value: Any) -> Any:
    """``value`` (e.g. ``Message.to_dict()``) with every datetime and timedelta converted."""
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value
