"""The exceptions of deadletter: one base class, each subclass with a stable ``code``.

The codes are part of the public API and equal the core's (``deadletter::CODES`` in Rust,
``deadletter.CODES`` here): ``validation_failed``, ``not_found``, ``conflict``, ``store``.
The native module raises these classes; a call that raises has changed nothing (the bulk
operations `replay_all` and `purge` commit in batches: see each).
"""

from __future__ import annotations

from typing import ClassVar, Literal, Optional, TypedDict, get_args

__all__ = [
    "CODES",
    "ConflictError",
    "Error",
    "ErrorCode",
    "FieldError",
    "NotFoundError",
    "StoreError",
    "ValidationError",
]

ErrorCode = Literal["validation_failed", "not_found", "conflict", "store"]
"""A stable error code."""

CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)
"""Every error code, in the core's order (a test checks `ErrorCode` against the core's)."""


class _FieldErrorKeys(TypedDict):
    field: str
    code: str
    message: str


class FieldError(_FieldErrorKeys, total=False):
    """One rejected argument of a `ValidationError`: ``field``, ``code`` and ``message`` always,
    ``index`` for an item of `Queue.enqueue_many`.

    - ``field``: the argument's name in Python (``queue``, ``payload``, ``max_retries``,
      ``lease``, ``delay``, ``older_than``, ``initial``, ``cap``, ``clock``, ``random``, ...; for
      an unknown key of an ``enqueue_many`` item, that key).
    - ``code``: ``type``, ``empty``, ``too_long``, ``too_large``, ``out_of_range``, ``invalid`` or
      ``unknown`` (a key an ``enqueue_many`` item may not have).
    - ``message``: what was wrong, for humans; not stable.
    """

    index: int
    """The position (0-based) of the `Queue.enqueue_many` item the field belongs to."""


class Error(Exception):
    """Base class of every deadletter exception; ``code`` tells which kind it is."""

    code: ClassVar[ErrorCode]


class ValidationError(Error, ValueError):
    """One or more arguments were rejected (also a `ValueError`).

    ``errors`` lists every rejected argument of the call, each a `FieldError` dict with
    ``field``, ``code`` and ``message`` (and ``index`` for an item of `Queue.enqueue_many`).
    """

    code: ClassVar[ErrorCode] = "validation_failed"

    def __init__(self, message: str, errors: list[FieldError]) -> None:
        super().__init__(message)
        self.errors: list[FieldError] = errors

    def __reduce__(self) -> tuple[type[ValidationError], tuple[str, list[FieldError]]]:
        # Pickled with its fields (multiprocessing, concurrent.futures send errors back so).
        return (type(self), (str(self), self.errors))


class NotFoundError(Error, LookupError):
    """The queue has no message with this id (ids of other queues are invisible); a `LookupError`.

    ``queue`` and ``id`` say what was looked for.
    """

    code: ClassVar[ErrorCode] = "not_found"

    def __init__(self, message: str, queue: str, id: int) -> None:
        super().__init__(message)
        self.queue: str = queue
        self.id: int = id

    def __reduce__(self) -> tuple[type[NotFoundError], tuple[str, str, int]]:
        return (type(self), (str(self), self.queue, self.id))


class ConflictError(Error):
    """The transition is not allowed now.

    ``reason`` is ``"wrong_status"`` (the message's ``status`` does not allow the operation, e.g.
    ``succeed`` on a pending message) or ``"lease_lost"`` (the message is ``processing`` but the
    lease token shown is not the one of its current lease: the token's lease expired, was reaped,
    and another worker claimed the message and holds it now, or the token was never this
    message's, a store keeping only the current one; ``status`` is then ``None``; the HTTP API's
    ``message_status`` is ``"processing"``) or ``"key_taken"`` (``Queue.move``:
    a message of the target queue already carries its idempotency key, so it stays where it is;
    ``status`` is ``None``). ``id`` is the message's id.

    A worker that outlived its lease gets either: ``"lease_lost"`` while another worker holds the
    message, ``"wrong_status"`` with the current ``status`` once the expired lease was reaped and
    the message is no longer processing (``pending`` in backoff, ``dead``, or ``succeeded`` by
    another worker).
    """

    code: ClassVar[ErrorCode] = "conflict"

    def __init__(
        self,
        message: str,
        id: int,
        reason: Literal["wrong_status", "lease_lost", "key_taken"],
        status: Optional[str],
    ) -> None:
        super().__init__(message)
        self.id: int = id
        self.reason: Literal["wrong_status", "lease_lost", "key_taken"] = reason
        self.status: Optional[str] = status

    def __reduce__(self) -> tuple[type[ConflictError], tuple[str, int, str, Optional[str]]]:
        return (type(self), (str(self), self.id, self.reason, self.status))


class StoreError(Error):
    """SQLite failed (I/O, corruption, a lock held past the 30 s busy timeout, a schema written by
    a newer deadletter, a row changed behind deadletter's back: the message names its id and
    column), the database is closed, or it was opened before a ``fork()`` and is used in the child
    (open it again there)."""

    code: ClassVar[ErrorCode] = "store"
