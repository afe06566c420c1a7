"""Type stub of the native module ``deadletter._deadletter`` (hand-written; checked by
``python -m mypy.stubtest deadletter`` in ``tests/test_typing.py``).

Units: leases are seconds (``int`` or ``float``) or a ``datetime.timedelta``; every timestamp is an
aware ``datetime`` in UTC. Exceptions come from ``deadletter._errors``.
"""

import os
from datetime import datetime, timedelta
from types import TracebackType
from typing import Callable, Literal, Optional, Union, final

from ._errors import ErrorCode

__all__ = [
    "CODES",
    "SQLITE_BUNDLED",
    "SQLITE_VERSION",
    "Database",
    "Message",
    "Queue",
    "__version__",
    "backoff",
    "open",
]

__version__: str

SQLITE_VERSION: str
"""The version of the SQLite library this module runs on, e.g. ``"3.40.1"``."""

SQLITE_BUNDLED: bool
"""True when the module carries its own copy of SQLite (the release wheels); False when it links
the system ``libsqlite3`` (source builds: the sdist, ``make python``). With its own copy, do not
open the same database file with another SQLite library (such as the ``sqlite3`` module) in the
same process: SQLite's locks are not shared between two copies (see the README's semantics)."""

CODES: tuple[ErrorCode, ...]
"""The core's stable error codes: ``validation_failed``, ``not_found``, ``conflict``, ``store``."""

_Status = Literal["pending", "processing", "succeeded", "dead"]
_Seconds = Union[int, float, timedelta]

def open(
    path: Union[str, os.PathLike[str]] = ":memory:",
    *,
    clock: Optional[Callable[[], datetime]] = None,
    lease: Optional[_Seconds] = 30.0,
    max_payload_bytes: Optional[int] = 1048576,
) -> Database:
    """Opens (creating if needed) a queue database: a file path (not empty: `ValidationError`,
    field ``path``), or ``":memory:"``.

    ``clock`` returns an aware datetime (naive or after 9999-12-30 -> `ValidationError`, field
    ``clock``); an exception it raises propagates unchanged; default: the system clock.
    ``lease``: default lease of `Queue.claim`, in seconds or a timedelta, rounded to the
    millisecond, then 1 ms..=12 h. ``None`` for any option means its default.
    ``max_payload_bytes``: largest payload in bytes of UTF-8 (1..=67108864).
    Raises `ValidationError` for rejected arguments (all of them at once), `StoreError` when the
    file cannot be opened, is not a deadletter database (another application's) or has a newer
    schema version; a refused file is left byte-for-byte as it was.

    Each process opens its own: in a child made by ``fork()`` (``os.fork``, ``multiprocessing``'s
    ``fork`` start method), every call on a database opened before the fork raises `StoreError`
    at once, saying to open the database again in the child; doing so works. A fork waits until no
    thread of the process is inside a SQLite call.
    """

def backoff(retry_count: int) -> timedelta:
    """The delay after the ``retry_count``-th failure: ``min(2**retry_count, 3600)`` seconds (the
    project's backoff contract). `ValidationError` for a negative count or a non-int."""

@final
class Database:
    """A queue database on one SQLite connection; thread-safe; a context manager that closes it.
    Belongs to the process that opened it: after a ``fork()``, the child's calls raise `StoreError`.
    """

    @property
    def closed(self) -> bool:
        """Whether `close` was called; true in a child forked after the database was opened."""
    def queue(self, name: str) -> Queue:
        """The queue ``name`` (non-empty, at most 255 characters; else `ValidationError`)."""
    def close(self) -> None:
        """Closes the database; later operations of its queues raise `StoreError`. Idempotent.
        In a forked child: `StoreError`, and the parent's connection is left alone."""
    def __enter__(self) -> Database: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
        /,
    ) -> bool: ...

@final
class Queue:
    """One named queue. Methods raise `ValidationError`, `NotFoundError`, `ConflictError` or
    `StoreError` (also for a stored row that holds a value deadletter never writes, naming the
    message and the column); a call that raises has changed nothing."""

    @property
    def name(self) -> str:
        """The queue's name."""
    def enqueue(self, payload: str, *, max_retries: Optional[int] = 3) -> Message:
        """Adds a pending message. ``max_retries``: 1..=10 attempts before it is dead."""
    def claim(self, *, lease: Optional[_Seconds] = None) -> Optional[Message]:
        """Leases the next due message (FIFO) for ``lease`` seconds (default: the database's);
        ``None`` when nothing is due. Expired leases of this queue count as failed attempts
        first (``"lease expired"``): leases are reaped lazily, by this call, so until then a
        message whose lease ran out still reads as ``processing``."""
    def succeed(self, id: int, *, lease_token: Optional[str] = None) -> Message:
        """processing -> succeeded. A ``lease_token`` that is not current: `ConflictError`."""
    def fail(
        self,
        id: int,
        error: str,
        *,
        lease_token: Optional[str] = None,
        retryable: Optional[bool] = True,
    ) -> Message:
        """processing -> pending after ``min(2**retry_count, 3600)`` s, or dead once retries are
        used up or when ``retryable`` is false."""
    def replay(self, id: int) -> Message:
        """dead -> pending with ``retry_count`` 0."""
    def get(self, id: int) -> Message:
        """The message ``id`` of this queue; `NotFoundError` when there is none."""
    def list(
        self,
        *,
        status: Optional[_Status] = None,
        limit: int = 100,
        after_id: Optional[int] = None,
    ) -> list[Message]:
        """Messages ordered by id, optionally of one status, at most ``limit`` (1..=1000), with
        ids above ``after_id``."""

@final
class Message:
    """An immutable snapshot of one message; timestamps are aware UTC datetimes."""

    @property
    def id(self) -> int:
        """Assigned on enqueue; strictly increasing, from 1."""
    @property
    def queue(self) -> str:
        """The queue it belongs to."""
    @property
    def payload(self) -> str:
        """The payload exactly as enqueued (never parsed)."""
    @property
    def status(self) -> _Status:
        """``"pending"``, ``"processing"``, ``"succeeded"`` or ``"dead"``."""
    @property
    def retry_count(self) -> int:
        """Failed attempts since enqueue or the last replay; an expired lease counts as one."""
    @property
    def max_retries(self) -> int:
        """Attempts allowed before the message is dead (1..=10)."""
    @property
    def retry_after(self) -> Optional[datetime]:
        """Pending after a failure: not claimable before this instant (aware UTC); else None."""
    @property
    def last_error(self) -> Optional[str]:
        """The error of the last failed attempt (truncated past 64 KiB with a marker), or None."""
    @property
    def created_at(self) -> datetime:
        """When it was enqueued (aware UTC, millisecond precision)."""
    @property
    def updated_at(self) -> datetime:
        """When it last changed (aware UTC, millisecond precision)."""
    @property
    def lease_token(self) -> Optional[str]:
        """While processing: the token that `Queue.succeed`/`Queue.fail` check; else None."""
    @property
    def lease_expires_at(self) -> Optional[datetime]:
        """While processing: when the lease (visibility timeout) runs out; else None."""
    def to_dict(self) -> dict[str, object]:
        """Every attribute in a new dict."""
    def __eq__(self, other: object, /) -> bool: ...
