"""The CLI's output: `emit`, the one function that writes every command's result, as an aligned
table for people (durations readable, control characters escaped, long cells cut) or as JSON
(``--json``: as the HTTP API writes messages and statistics); the columns each command shows;
and the progress line of long commands on a terminal."""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, Optional, TextIO, Union

import deadletter

from .._deadletter import STATUSES
from .._invisible import name, printable
from .._json import jsonable

__all__ = [
    "ATTEMPT_COLUMNS",
    "ENQUEUED_COLUMNS",
    "LIST_COLUMNS",
    "MESSAGE_COLUMNS",
    "SETTINGS_COLUMNS",
    "STATS_COLUMNS",
    "Progress",
    "Record",
    "Rows",
    "emit",
    "listed",
    "printable",
    "shown_settings",
]

Record = dict[str, Any]
Rows = Union[Record, list[Record]]

CELL_WIDTH = 48  # characters of a table cell before it is cut with "…" (--json never cuts)
PROGRESS_EVERY = 0.2  # seconds between progress lines on a terminal


def emit(
    rows: Rows,
    columns: Sequence[str],
    *,
    as_json: bool,
    out: TextIO,
    width: Optional[int] = CELL_WIDTH,
) -> None:
    """Writes ``rows`` as JSON, or as a table of ``columns``: a list of records is one row per
    record, a single record is one ``column  value`` line per column. Table cells are cut at
    ``width`` characters (``None``: never)."""
    if as_json:
        out.write(json.dumps(jsonable(rows), ensure_ascii=False, indent=2) + "\n")
        return
    if isinstance(rows, dict):
        records = [{"field": c, "value": readable(rows.get(c), c)} for c in columns]
        write_table(records, ("field", "value"), header=False, out=out, width=width)
    else:
        records = [{c: readable(r.get(c), c) for c in columns} for r in rows]
        write_table(records, columns, header=True, out=out, width=width)


NAME_COLUMNS = frozenset({"queue", "moved_from"})
"""The columns that hold queue names (`readable` shows their white space at either end)."""


def readable(value: Any, column: str) -> Any:
    """A value of ``column`` as a table shows it: durations as ``1h 30m``, a queue name with its
    white space at either end escaped (`name`: ``emails\\x20``), the rest as in JSON."""
    if isinstance(value, timedelta):
        return duration(value)
    if column in NAME_COLUMNS and isinstance(value, str):
        return name(value)
    return jsonable(value)


def duration(value: timedelta) -> str:
    """``42s``, ``1.5s``, ``1m 40s``, ``1h 30m``, ``2d 4h``: the two largest units."""
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    first = next(i for i, (n, _) in enumerate(parts) if n)
    return " ".join(f"{n}{unit}" for n, unit in parts[first : first + 2] if n)


def write_table(
    records: list[Record],
    columns: Sequence[str],
    *,
    header: bool,
    out: TextIO,
    width: Optional[int],
) -> None:
    """Aligned columns by the width cells take on a terminal (`shown_width`); numbers
    right-aligned (booleans are not numbers: ``True`` stood one column right of ``False``;
    new-user finding M10, session 7), ``None`` as ``-``, long cells cut."""
    cells = [[cell(r.get(c), width) for c in columns] for r in records]
    numeric = [bool(records) and all(is_number(r.get(c)) for r in records) for c in columns]
    lines = ([list(columns)] if header else []) + cells
    widths = [max((shown_width(line[i]) for line in lines), default=0) for i in range(len(columns))]
    for line in lines:
        gaps = [" " * (size - shown_width(text)) for text, size in zip(line, widths)]
        padded = [
            gap + text if right else text + gap for text, gap, right in zip(line, gaps, numeric)
        ]
        out.write("  ".join(padded).rstrip() + "\n")


def is_number(value: Any) -> bool:
    """An integer that a table right-aligns: not a boolean (``bool`` is an ``int``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown_width(text: str) -> int:
    """The columns ``text`` takes on a terminal: the sum of `widths` (a queue ``ユニコード/キュー``
    shifted its row's columns: finding M10; so did ``👩\\u200d💻``, counted 4: tester T3)."""
    return sum(widths(text))


def widths(text: str) -> Iterator[int]:
    """The columns each character of ``text`` takes on a terminal, in order: `char_width`, but
    as terminals draw emoji sequences (what the ``wcwidth`` package counts; the CLI depends on
    no package): U+FE0F after a one-column character makes it two (``\\u2764\\ufe0f``, keycaps),
    and a two-column character joined by U+200D to a two-column one takes none (``👩\\u200d💻``
    is one glyph)."""
    glyph, joined = 0, False  # the columns of the glyph so far; whether U+200D came last
    for char in text:
        width = char_width(char)
        if char == "\ufe0f" and glyph == 1:
            width, glyph = 1, 2  # emoji presentation: the glyph takes two columns, one more
        elif joined and glyph == 2 and width == 2:
            width = 0
        elif width:
            glyph = width
        joined = char == "\u200d"
        yield width


def char_width(char: str) -> int:
    """The columns one character takes on a terminal alone: 2 for a wide or full-width one (CJK,
    most emoji: ``unicodedata.east_asian_width`` W or F), 0 for a combining one, a variation
    selector or a format character that a cell shows (a joiner, a flag's tags: the rest are
    escaped), 1 for the others."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell(value: Any, width: Optional[int]) -> str:
    """One table cell: one line, at most ``width`` columns (`shown_width`)."""
    text = printable("-" if value is None else str(value))
    if width is None or shown_width(text) <= width:
        return text
    kept, used = [], 1  # the "…"
    for char, columns in zip(text, widths(text)):
        used += columns
        if used > width:
            break
        kept.append(char)
    return "".join(kept) + "…"


MESSAGE_COLUMNS = (
    "id",
    "queue",
    "status",
    "retry_count",
    "max_retries",
    "retry_after",
    "last_error",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "idempotency_key",
    "first_failed_at",
    "dead_at",
    "errors_dropped",
    "replay_count",
    "replayed_at",
    "group",
    "expires_at",
)
LIST_COLUMNS = ("id", "status", "retries", "updated_at", "last_error", "payload")
ATTEMPT_COLUMNS = ("attempt", "at", "error")
ENQUEUED_COLUMNS = ("id", "queue", "status", "max_retries", "retry_after", "idempotency_key")
STATS_COLUMNS = (
    "queue",
    *STATUSES,
    "expired",
    "delayed",
    "next_due_at",
    "oldest_due_age",
    "oldest_dead_age",
    "paused",
    "expired_dead",
    "expired_discarded",
)
SETTINGS_COLUMNS = ("backoff", "max_retries", "lease", "expires_in", "on_expiry", "paused")


def shown_settings(settings: deadletter.QueueSettings, *, as_json: bool) -> Record:
    """A queue's settings as `emit` writes them: for people, the backoff policy on one line
    (``2s x2 up to 1h``, with its jitter) and ``-`` for an unset setting; ``--json``: as the HTTP
    API writes them."""
    record = settings.to_dict()
    policy = settings.backoff
    if not as_json and policy is not None:
        jitter = f", {policy.jitter} jitter" if policy.jitter else ""
        record["backoff"] = (
            f"{duration(policy.initial)} x{policy.multiplier:g} up to {duration(policy.cap)}"
            f"{jitter}"
        )
    return record


def listed(message: deadletter.Message) -> Record:
    """A message as a row of `list`: the retry count as ``n/max``."""
    record = message.to_dict()
    record["retries"] = f"{message.retry_count}/{message.max_retries}"
    return record


class Progress:
    """``<what> N`` on stderr, rewritten in place, only when stderr is a terminal."""

    def __init__(self, what: str, err: TextIO) -> None:
        self.what = what
        self.err = err
        self.shown = err.isatty()
        self.last = 0.0

    def update(self, count: int) -> None:
        now = time.monotonic()
        if self.shown and now - self.last >= PROGRESS_EVERY:
            self.last = now
            self.err.write(f"\r{self.what} {count}")
            self.err.flush()

    def done(self) -> None:
        if self.shown and self.last:
            self.err.write("\r\033[K")
            self.err.flush()
