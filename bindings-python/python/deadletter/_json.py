"""Python values of the public API as JSON values, for the HTTP API and the CLI's ``--json``, and
the instants they take back.

Timestamps become RFC 3339 strings in UTC with milliseconds and ``Z``
(``2026-11-30T16:24:03.123Z``); durations become seconds (a float); dicts and lists are converted
item by item; a `Backoff` or `QueueSettings` is its ``to_dict()``; everything else (str, int, bool, None) is already JSON. `parse_timestamp` reads an
instant written that way (any fraction of a second, ``Z`` or a zero offset).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from ._deadletter import Backoff, QueueSettings

__all__ = ["INSTANT_PATTERN", "jsonable", "parse_timestamp", "timestamp"]

INSTANT_PATTERN = (
    r"^(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(?:0[1-9]|1[0-2])"
    r"-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]+)?(?:[Zz]|[+-]00:00)$"
)
"""An instant the API takes: RFC 3339 in UTC (``Z`` or a zero offset: other offsets could name
instants outside the core's range, 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z), any
fraction of a second (floored to the millisecond by the queue), years 0001 to 9999."""

INSTANT = re.compile(INSTANT_PATTERN)
FRACTION = re.compile(r"\.([0-9]+)")


def timestamp(value: datetime) -> str:
    """An aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC; microseconds truncated)."""
    utc = value.astimezone(timezone.utc)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z"


def jsonable(value: Any) -> Any:
    """``value`` (e.g. ``Message.to_dict()``) with every datetime and timedelta converted, and a
    `Backoff` or `QueueSettings` as its ``to_dict()``."""
    if isinstance(value, (Backoff, QueueSettings)):
        return jsonable(value.to_dict())
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def parse_timestamp(text: str) -> datetime:
    """An instant written as `INSTANT_PATTERN` says, as an aware datetime in UTC. Digits beyond
    the microsecond round it up, so the instant read is never before the one written: the
    replay filters' bounds (``dead_after <= dead_at < dead_before``) stay exact, as the queue
    rounds them up to the millisecond. `ValueError` for any other text, or a day the month
    lacks."""
    if not INSTANT.fullmatch(text):
        raise ValueError(f"{text!r} is not an RFC 3339 date-time in UTC")
    moment = datetime.strptime(f"{text[:10]} {text[11:19]}", "%Y-%m-%d %H:%M:%S")
    fraction = FRACTION.match(text, 19)
    digits = fraction.group(1) if fraction else ""
    micros = int(digits[:6].ljust(6, "0")) + (1 if digits[6:].strip("0") else 0)
    try:
        return moment.replace(tzinfo=timezone.utc) + timedelta(microseconds=micros)
    except OverflowError:  # after 9999-12-31T23:59:59.999999Z: later than every instant
        return datetime.max.replace(tzinfo=timezone.utc)
