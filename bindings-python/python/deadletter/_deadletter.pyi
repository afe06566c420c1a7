"""Type stub of the native module ``deadletter._deadletter`` (hand-written; checked by
``python -m mypy.stubtest deadletter`` in ``tests/test_typing.py``).

Units: durations (leases, delays, ages, backoff) are seconds (``int`` or ``float``) or a
``datetime.timedelta``, rounded to the millisecond; every timestamp is an aware ``datetime`` in
UTC. Exceptions come from ``deadletter._errors``.
"""

import asyncio
import os
import threading
from collections.abc import Awaitable, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Callable, Literal, Optional, TypedDict, Union, final

from ._errors import ErrorCode
from ._page import MessagePage

__all__ = [
    "BACKOFF_MULTIPLIER_RANGE",
    "BATCH",
    "CODES",
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DELAY_RANGE_MS",
    "EXPIRES_IN_RANGE_MS",
    "FILTERS",
    "LEASE_EXPIRED",
    "LEASE_RANGE_MS",
    "LIST_LIMIT_RANGE",
    "MAX_BATCH",
    "MAX_CLAIM_MANY",
    "MAX_ERROR_BYTES",
    "MAX_GROUP_CHARS",
    "MAX_HISTORY",
    "MAX_ID",
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "MAX_PAYLOAD_BYTES_RANGE",
    "MAX_QUEUE_CHARS",
    "MAX_RETRIES_RANGE",
    "ON_EXPIRY",
    "RETRY_IN_RANGE_MS",
    "SCAN_BUDGET",
    "SQLITE_BUNDLED",
    "SQLITE_VERSION",
    "STATUSES",
    "BULK_STATUSES",
    "TIME_RANGE_MS",
    "Backoff",
    "Database",
    "Message",
    "Queue",
    "QueueSettings",
    "QueueStats",
    "WorkerPlan",
    "__version__",
    "backoff",
    "check_new_queue",
    "failure_text",
    "open",
    "printable",
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

# The core's names and limits (bindings-python/src/constants.rs), for the package's own modules:
# the HTTP API's OpenAPI document and metrics, the dashboard (through that document) and the CLI
# show these, never a copy. A range is (low, high), both included; ``_MS``: milliseconds, the
# core's unit.

STATUSES: tuple[_Status, ...]
BULK_STATUSES: dict[str, tuple[_Status, ...]]
"""The statuses each bulk action may touch, by its name (``replay_all``, ``delete_all``,
``retry_now_all``, ``move_all``)."""
"""Every status, in lifecycle order (``deadletter::Status::ALL``)."""
MAX_QUEUE_CHARS: int
"""The longest queue name, in characters."""
MAX_IDEMPOTENCY_KEY_CHARS: int
"""The longest idempotency key, in characters."""
MAX_RETRIES_RANGE: tuple[int, int]
"""The ``max_retries`` a message may have."""
DEFAULT_MAX_RETRIES: int
"""``max_retries`` when omitted."""
LEASE_RANGE_MS: tuple[int, int]
"""A lease (visibility timeout), once rounded to the millisecond."""
DELAY_RANGE_MS: tuple[int, int]
"""An enqueue ``delay``, once rounded to the millisecond."""
RETRY_IN_RANGE_MS: tuple[int, int]
"""A `Queue.fail` ``retry_in``, once rounded to the millisecond."""
EXPIRES_IN_RANGE_MS: tuple[int, int]
"""An ``expires_in`` (enqueue, replay, the queue's settings), once rounded to the millisecond."""
MAX_GROUP_CHARS: int
"""The longest ordering group name, in characters."""
BACKOFF_MULTIPLIER_RANGE: tuple[float, float]
"""A `Backoff`'s ``multiplier`` (its ``initial`` and ``cap`` take ``DELAY_RANGE_MS``)."""
ON_EXPIRY: tuple[Literal["dead", "discard"], ...]
"""What expiry may do to a pending message (the queue's ``on_expiry`` setting)."""
MAX_PAYLOAD_BYTES_RANGE: tuple[int, int]
"""The ``max_payload_bytes`` a database may be opened with."""
DEFAULT_MAX_PAYLOAD_BYTES: int
"""`open`'s default ``max_payload_bytes``."""
LIST_LIMIT_RANGE: tuple[int, int]
"""A `Queue.list` page size."""
DEFAULT_LIST_LIMIT: int
"""`Queue.list`'s default ``limit``."""
FILTERS: tuple[str, ...]
"""The filters of `Queue.list` and the bulk actions, by keyword name, in the core's order."""
SCAN_BUDGET: int
"""The most messages one `Queue.list` call examines (every filter but ``status`` is checked on
the messages themselves, in id order)."""
MAX_BATCH: int
"""The most items of one `Queue.enqueue_many`."""
MAX_CLAIM_MANY: int
"""The most messages one `Queue.claim_many` takes."""
MAX_ID: int
"""The largest message id (``2**63 - 1``)."""
TIME_RANGE_MS: tuple[int, int]
"""The instants a message can hold, in UTC milliseconds since the Unix epoch:
0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z."""
BATCH: int
"""The most messages one transaction of `Queue.replay_all` or `Queue.purge` changes."""
MAX_HISTORY: int
"""How many failed attempts a message's ``errors`` keeps (the most recent)."""
MAX_ERROR_BYTES: int
"""The longest stored error text, in bytes of UTF-8; a longer one is cut."""
LEASE_EXPIRED: str
"""The error recorded for an attempt whose lease ran out."""

class _FailedAttempt(TypedDict):
    """One entry of `Message.errors`."""

    attempt: int
    error: str
    at: datetime

class _ItemKeys(TypedDict):
    payload: str

class _Item(_ItemKeys, total=False):
    """One dict item of `Queue.enqueue_many`: the arguments of `Queue.enqueue`."""

    max_retries: Optional[int]
    idempotency_key: Optional[str]
    delay: Optional[_Seconds]
    group: Optional[str]
    expires_in: Optional[_Seconds]

class _BackoffArgs(TypedDict, total=False):
    """`Queue.set_settings`' ``backoff`` as a dict: the arguments of `Backoff`, checked with the
    other settings."""

    initial: Optional[_Seconds]
    multiplier: Optional[Union[int, float]]
    cap: Optional[_Seconds]
    jitter: Optional[Literal["full", "equal"]]

# `Queue.enqueue_many`'s items. A Sequence (covariant), so that a `list[str]` or a
# `list[dict[str, Any]]` variable is one; at run time only a list or a tuple is (a str is a
# `ValidationError`), and the queue checks each dict's keys.
_Batch = Sequence[Union[str, _Item, dict[str, Any]]]

def open(
    path: Union[str, os.PathLike[str]] = ":memory:",
    *,
    clock: Optional[Callable[[], datetime]] = None,
    lease: Optional[_Seconds] = 30.0,
    max_payload_bytes: Optional[int] = 1048576,
    random: Optional[Callable[[], float]] = None,
    schema: Optional[str] = None,
    max_connections: Optional[int] = None,
    connect_timeout: Optional[_Seconds] = None,
    lock_timeout: Optional[_Seconds] = None,
    durability: Optional[Literal["full", "normal"]] = "full",
    create: Optional[bool] = True,
) -> Database:
    """Opens (creating if needed) a queue database: a SQLite file path (not empty, no NUL
    character: `ValidationError`, field ``path``), the str ``":memory:"`` (a private in-memory
    database; ``pathlib.Path(":memory:")`` is the file of that name), or a PostgreSQL URL.

    ``path`` is a PostgreSQL URL when it is a str that starts with ``postgresql://`` or
    ``postgres://`` (in any case): ``postgresql://user:password@host:5432/dbname``, with libpq's query
    parameters (``?connect_timeout=5``, ``?application_name=...``, ``?host=/run/postgresql`` for a
    Unix socket; no TLS: ``sslmode=require`` cannot connect). Anything else, and any
    ``os.PathLike``, is a SQLite path, always a file name, never a SQLite URI
    (``"file:x.db?mode=ro"`` is the file of that name); a SQLite file written by deadletter 0.1.0 is
    upgraded in place. A URL that does not parse is a `ValidationError` (field ``path``); no error
    message ever shows the URL's password.

    ``clock`` returns an aware datetime (naive or not a datetime -> `ValidationError`, field
    ``clock``; so is an instant, or one derived from it by a lease, delay or backoff, outside
    0001-01-01T00:00:00Z..=9999-12-31T23:59:59.999Z); an exception it raises propagates
    unchanged; default: the system clock. ``lease``: default lease of `Queue.claim`, in seconds
    or a timedelta, rounded to the millisecond, then 1 ms..=12 h. ``max_payload_bytes``: largest
    payload in bytes of UTF-8 (1..=67108864). ``random`` returns a float in ``[0, 1)``, the jitter
    source, called once per ``claim``, ``claim_many``, ``reap`` and ``fail`` (else
    `ValidationError`, field ``random``); default: ``fastrand``. ``durability`` (SQLite only):
    ``"full"`` (default: every commit syncs SQLite's WAL before the call returns; nothing
    acknowledged is lost, even on power loss) or ``"normal"`` (synced at checkpoints only: safe
    against the application's crash, the last commits may be lost on power loss; else
    `ValidationError`, field ``durability``; with a PostgreSQL URL only ``"full"`` is taken, as its
    server commits as configured). Calls that threads make while another call of the
    same `Database` commits share the next commit (group commit), each with its own outcome.
    ``None`` for any option means its default.

    PostgreSQL only (given with a SQLite path: `ValidationError` naming each, code ``invalid``;
    but ``create=True``, the default, is taken: a SQLite file is created when missing):
    ``schema``, the schema of the queue's tables, created with them when missing (1..=63 bytes,
    no NUL; default ``"deadletter"``); ``max_connections``, the most connections this database
    holds at once, opened when needed and kept for reuse (1..=1000, default 10); ``connect_timeout``
    (default 10 s) and ``lock_timeout`` (default 30 s), seconds or timedelta in 0.001..=3600: how
    long a call waits for a connection (a free one, or a new one's login), and for a message
    another call is changing, before `StoreError`; ``create`` (default True): whether a missing
    schema is created; False raises `StoreError` for a schema without deadletter's tables and
    creates nothing (for tools that only read, as the CLI's ``stats``, ``list`` and ``show``).

    Raises `ValidationError` for rejected arguments (all of them at once), `StoreError` when the
    file cannot be opened, is not a deadletter database (another application's) or has a newer
    schema version, or when the server cannot be reached, refuses the login, or the schema holds
    another application's tables or a newer deadletter's; a refused file or schema is left as it
    was.

    Each process opens its own: in a child made by ``fork()`` (``os.fork``, ``multiprocessing``'s
    ``fork`` start method), every call on a database opened before the fork raises `StoreError`
    at once, saying to open the database again in the child; doing so works. A fork waits until no
    thread of the process is inside a SQLite call (the process's other threads keep running
    meanwhile, and no new call starts); a PostgreSQL database's connections are left
    to the parent (the child never sends on them, nor closes them).
    """

def backoff(retry_count: int) -> timedelta:
    """The delay after the ``retry_count``-th failure under the default `Backoff`:
    ``min(2**retry_count, 3600)`` seconds. `ValidationError` for a negative count or a non-int."""

def printable(text: str) -> str:
    """``text`` with every character that a new queue name refuses as a control or invisible one
    escaped as Python writes it (``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``), every other one
    as it is (the joiners, the variation selectors, the tags of the flags of England, Scotland and
    Wales): the core's rule. `deadletter._invisible.printable` calls it."""

def check_new_queue(name: object) -> None:
    """`ValidationError` (field ``queue``) when ``name`` cannot name a new queue (the rule of
    `Queue.enqueue`'s queue); stores nothing. For the HTTP API's routes that create a queue."""

@final
class Backoff:
    """A backoff policy: after the n-th failure, ``min(initial * multiplier**(n-1), cap)``,
    spread by ``jitter``. Immutable; `ValidationError` (fields ``initial``, ``multiplier``,
    ``cap``, ``jitter``) for values of the wrong type or out of range."""

    def __new__(
        cls,
        initial: Optional[_Seconds] = 2,
        multiplier: Optional[Union[int, float]] = 2,
        cap: Optional[_Seconds] = 3600,
        jitter: Optional[Literal["full", "equal"]] = None,
    ) -> Backoff:
        """``initial``, ``cap``: seconds or timedelta, 0..=30 days; ``multiplier``: 1..=100;
        ``jitter``: None, ``"full"`` (uniform in ``[0, delay)``) or ``"equal"``
        (``[delay/2, delay)``)."""
    @property
    def initial(self) -> timedelta:
        """The delay after the first failure."""
    @property
    def multiplier(self) -> float:
        """The growth factor per further failure."""
    @property
    def cap(self) -> timedelta:
        """The longest delay."""
    @property
    def jitter(self) -> Optional[Literal["full", "equal"]]:
        """How the delay is spread, or None."""
    def to_dict(self) -> dict[str, object]:
        """The four arguments in a new dict: ``Backoff(**d)`` is the same policy."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class Database:
    """A queue database on one SQLite connection or a pool of PostgreSQL connections;
    thread-safe; a context manager that closes it. Belongs to the process that opened it: after a
    ``fork()``, the child's calls raise `StoreError`.
    """

    @property
    def closed(self) -> bool:
        """Whether `close` was called; true in a child forked after the database was opened."""
    def queue(self, name: str, *, backoff: Optional[Backoff] = None) -> Queue:
        """The queue ``name`` (non-empty, at most 255 characters); ``backoff``: the handle's own
        policy, which wins over the one stored with the queue (a difference warns once), else the
        stored one, else ``Backoff()``; `ValidationError` (``queue``, ``backoff``) otherwise."""
    def queues(self) -> list[QueueStats]:
        """The statistics of every queue that holds messages or has stored settings, by name."""
    def on_dead(self, callback: Callable[[Message], object]) -> Callable[[], None]:
        """Calls ``callback`` with each message that a call of this database made dead, after it
        committed, in the calling thread; an exception it raises is logged on the
        ``"deadletter"`` logger. Returns an idempotent unsubscribe function. `ValidationError`
        (field ``callback``) when it is not callable."""
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
    message and the column); a call that raises has changed nothing, but for the bulk
    operations ``replay_all``, ``delete_all``, ``retry_now_all`` and ``purge``, which commit in
    batches (see each)."""

    @property
    def name(self) -> str:
        """The queue's name."""
    @property
    def closed(self) -> bool:
        """Whether its database is closed (`Database.closed`): every call then raises
        `StoreError`."""
    @property
    def backoff(self) -> Optional[Backoff]:
        """This handle's own backoff policy (it wins over the stored one), or None."""
    def enqueue(
        self,
        payload: str,
        *,
        max_retries: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        delay: Optional[_Seconds] = None,
        group: Optional[str] = None,
        expires_in: Optional[_Seconds] = None,
    ) -> Message:
        """Adds a pending message. ``max_retries``: 1..=10 attempts before it is dead (default:
        the queue's stored value, else 3); ``idempotency_key``: returns the queue's message with
        that key (``deduplicated``) instead of inserting; ``delay``: not claimable before now +
        delay (0..=30 days); ``group``: its ordering group (1..=255 characters): a group's
        messages are delivered one at a time, in the order they entered it; ``expires_in``:
        0.001 s..=365 days (default: the queue's stored expiry, else never), more than ``delay``
        (else ``ValidationError`` on ``delay``): still pending then, it is never delivered (dead
        with the error ``"expired"``, or discarded). The queue's name must hold no control or
        format character (Unicode's Cf: bidirectional controls, zero-width spaces, ...) but the
        joiners U+200C and U+200D and the tags of the flags of England, Scotland and Wales, not
        be only white space and invisible characters, not start or end with white space, have no
        white space but U+0020 (``a\u00a0b`` reads as ``a b``), no joiner or variation selector
        that joins or varies nothing (at an end, next to ASCII, Latin, Greek or Cyrillic, next to
        another one: ``ema\u200dils`` and ``jobs\ufe0f`` read as ``emails`` and ``jobs``;
        ``\u2764\ufe0f``, keycaps and emoji ZWJ sequences are fine), no accent of U+0300..U+036F
        after an ASCII letter (write ``caf\u00e9``, not ``cafe\u0301``), and not be ``.`` or
        ``..`` (which a URL cannot name)."""
    def enqueue_many(self, items: _Batch) -> list[Message]:
        """Adds up to 1000 items (payloads or dicts of `enqueue`'s arguments) in one transaction,
        all or nothing; field errors carry ``index``."""
    def claim(self, *, lease: Optional[_Seconds] = None) -> Optional[Message]:
        """Leases the next due message (FIFO; a grouped message only as its group's head) for
        ``lease`` seconds (default: the queue's stored lease, else the database's); ``None`` when
        nothing is due or the queue is paused. Expired leases of this queue count as failed
        attempts first (``"lease expired"``), and its pending messages whose expiry came are
        taken out: leases are reaped lazily, by this call or `reap`, so until then a message whose
        lease ran out still reads as ``processing``."""
    def claim_many(self, n: int, *, lease: Optional[_Seconds] = None) -> list[Message]:
        """Like `claim` for up to ``n`` (1..=100) messages in one transaction, at most one per
        ordering group."""
    def extend(self, id: int, *, lease_token: str, lease: Optional[_Seconds] = None) -> Message:
        """The heartbeat: the lease runs until now + ``lease``; without ``lease``, the queue's
        stored lease, else the database's (``open(lease=...)``, 30 s by default), not the one the
        message was claimed with. A token that is not current: `ConflictError` (see its
        ``reason``)."""
    def succeed(self, id: int, *, lease_token: Optional[str] = None) -> Message:
        """processing -> succeeded. A ``lease_token`` that is not current: `ConflictError`."""
    def fail(
        self,
        id: int,
        error: str,
        *,
        lease_token: Optional[str] = None,
        retryable: Optional[bool] = True,
        retry_in: Optional[_Seconds] = None,
    ) -> Message:
        """processing -> pending after the backoff (the handle's, else the stored one, else the
        default) or after ``retry_in`` (0..=30 days: this failure's own delay), or dead once
        retries are used up, when ``retryable`` is false, or when its expiry has come."""
    def replay(self, id: int, *, expires_in: Optional[_Seconds] = None) -> Message:
        """dead -> pending with ``retry_count`` 0 and its own ``max_retries`` (the queue's stored
        one is taken at enqueue only; new-user finding N9, session 7); ``replay_count`` grows; a
        grouped message goes to the end of its group; it expires after ``expires_in`` (default:
        the queue's stored expiry, else never)."""
    def replay_all(
        self,
        *,
        status: Optional[Literal["dead"]] = None,
        delayed: Optional[bool] = None,
        payload_contains: Optional[str] = None,
        error_contains: Optional[str] = None,
        group: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[datetime] = None,
        created_before: Optional[datetime] = None,
        updated_after: Optional[datetime] = None,
        updated_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        dead_before: Optional[datetime] = None,
        limit: Optional[int] = None,
        dry_run: Optional[bool] = False,
    ) -> int:
        """Replays the dead messages the filters select (`list`'s filters; ``status`` only
        ``"dead"``; ``*_after <= t < *_before``, exactly: a bound between two milliseconds is
        rounded up) in id order (the oldest message first), at most ``limit``; returns how many.
        With ``dry_run`` true it changes nothing and returns the exact count it would replay
        now. Commits in batches of 200, each message checked again as it is written: when a
        batch fails (`StoreError`), the batches before it stay replayed; calling again finishes
        the work (only dead messages are touched)."""
    def delete_all(
        self,
        *,
        status: Optional[Literal["succeeded", "dead"]] = None,
        delayed: Optional[bool] = None,
        payload_contains: Optional[str] = None,
        error_contains: Optional[str] = None,
        group: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[datetime] = None,
        created_before: Optional[datetime] = None,
        updated_after: Optional[datetime] = None,
        updated_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        dead_before: Optional[datetime] = None,
        limit: Optional[int] = None,
        dry_run: Optional[bool] = False,
    ) -> int:
        """Deletes the finished (succeeded or dead) messages the filters select (`list`'s
        filters; ``status`` narrows to one of the two), at most ``limit``, freeing their
        idempotency keys; returns how many, or with ``dry_run`` true the exact count it would
        delete now, changing nothing. Batches of 200, as ``replay_all``."""
    def retry_now_all(
        self,
        *,
        status: Optional[Literal["pending"]] = None,
        delayed: Optional[bool] = None,
        payload_contains: Optional[str] = None,
        error_contains: Optional[str] = None,
        group: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[datetime] = None,
        created_before: Optional[datetime] = None,
        updated_after: Optional[datetime] = None,
        updated_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        dead_before: Optional[datetime] = None,
        limit: Optional[int] = None,
        dry_run: Optional[bool] = False,
    ) -> int:
        """Makes due now every pending message the filters select that waits for a backoff
        or delay (``retry_after`` later than now; a grouped one still waits behind its group's
        head), at most ``limit``; returns how many, or with ``dry_run`` true the exact count it
        would make due, changing nothing. Batches of 200, as ``replay_all``."""
    def retry_now(self, id: int) -> Message:
        """A pending message waiting for its backoff or delay is due now (``retry_after``
        cleared; a grouped one still waits behind its group's head); one already due is returned
        unchanged; any other status is a `ConflictError`."""
    def move_all(
        self,
        to_queue: str,
        *,
        status: Optional[Literal["pending", "dead"]] = None,
        delayed: Optional[bool] = None,
        payload_contains: Optional[str] = None,
        error_contains: Optional[str] = None,
        group: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[datetime] = None,
        created_before: Optional[datetime] = None,
        updated_after: Optional[datetime] = None,
        updated_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        dead_before: Optional[datetime] = None,
        limit: Optional[int] = None,
        dry_run: Optional[bool] = False,
    ) -> int:
        """Moves (as ``move``) every pending and dead message the filters select to
        ``to_queue`` (``status`` narrows to one of the two), at most ``limit``; returns how many,
        or with ``dry_run`` true the exact count it would move, changing nothing. A message whose
        idempotency key a message of ``to_queue`` carries stays and is not counted. Batches of
        200, as ``replay_all``."""
    def move(self, id: int, to_queue: str) -> Message:
        """Moves a pending or dead message to ``to_queue`` with its id, payload, history,
        counters and key (``moved_from`` = this queue); `ConflictError` with reason
        ``"wrong_status"`` for another status, ``"key_taken"`` when a message of ``to_queue``
        carries its idempotency key (it stays here)."""
    def purge(self, *, status: Literal["succeeded", "dead"], older_than: _Seconds) -> int:
        """Deletes the messages in ``status`` not changed for ``older_than`` (seconds or a
        ``timedelta``); returns how many. Commits in batches of 200: when a batch fails
        (`StoreError`), the batches before it stay deleted; calling again finishes the work."""
    def delete(self, id: int) -> Message:
        """Removes one succeeded or dead message and returns it; else `ConflictError`."""
    def reap(self) -> int:
        """Counts this queue's expired leases as failed attempts now and takes its pending
        messages whose expiry came out (also on a paused queue); returns how many."""
    def stats(self) -> QueueStats:
        """This queue's statistics now."""
    def settings(self) -> QueueSettings:
        """The settings stored with this queue (all defaults when it has none). Takes any name
        a handle takes, also one stored by 0.1.0."""
    def set_settings(
        self,
        *,
        backoff: Optional[Union[Backoff, _BackoffArgs]] = None,
        max_retries: Optional[int] = None,
        lease: Optional[_Seconds] = None,
        expires_in: Optional[_Seconds] = None,
        on_expiry: Optional[Literal["dead", "discard"]] = None,
    ) -> QueueSettings:
        """Stores the five settings for every process, replacing them (an omitted one is
        unset); leaves ``paused`` alone. `ValidationError` listing every rejected one. Storing
        settings on a queue that does not exist (no message, no stored settings) makes it, so its
        name then follows `enqueue`'s rules (``invalid`` on ``queue``); a queue stored under a
        name they refuse (by 0.1.0) takes settings, and storing none always succeeds."""
    def pause(self) -> QueueSettings:
        """Pauses the queue for every process: it claims nothing until resumed. Idempotent.
        Pausing a queue that does not exist (no message, no stored settings) makes it, so its
        name then follows `enqueue`'s rules (`ValidationError`, ``invalid`` on ``queue``); a
        queue stored under a name they refuse (by 0.1.0) is paused."""
    def resume(self) -> QueueSettings:
        """Resumes the queue. Idempotent. Takes any name a handle takes, also one stored by
        0.1.0 that `enqueue` refuses."""
    def next_due_at(self) -> Optional[datetime]:
        """When the next delayed message (in backoff, or enqueued with a delay) becomes due, or
        None when none is delayed; one index read (the value of ``stats().next_due_at``)."""
    def _next_claim_at(self) -> Optional[datetime]:
        """For ``deadletter.http``: when a claim that took nothing can next take a message:
        ``next_due_at()``, or None when none is delayed and while the queue is paused (the empty
        claim's ``Retry-After``)."""
    def process(
        self,
        handler: Callable[[Message], object],
        *,
        concurrency: Optional[int] = 1,
        poll_interval: Optional[_Seconds] = 1.0,
        stop_when_idle: bool = False,
        shutdown_timeout: Optional[_Seconds] = 30.0,
        lease: Optional[_Seconds] = None,
        stop: Optional[threading.Event] = None,
    ) -> int:
        """The worker loop: calls ``handler(message)`` for each claimed message on up to
        ``concurrency`` (1..=1000) daemon threads; returns how many handler runs it recorded the
        outcome of (a message that failed twice, then succeeded, counts 3). Returning acks the message; raising fails it with
        ``"ExceptionType: message"``; raising `deadletter.PermanentError` fails it with
        ``retryable=False`` (dead at once). Claims with ``claim_many`` up to the free slots,
        under ``lease`` (default: the database's), extended every half lease while the handler
        runs; a lost lease is logged on the ``"deadletter"`` logger. Idle, it sleeps until
        `next_due_at` or for ``poll_interval`` (0.001..=3600 s), whichever is sooner. Ends when
        ``stop_when_idle`` and nothing is due, in flight or delayed; when ``stop`` is set; on
        SIGTERM (deadletter's handler, installed from the main thread, stops every loop of the
        process, unless the application handles SIGTERM: then it is left alone) or
        ``KeyboardInterrupt``: claims stop, running handlers get
        ``shutdown_timeout`` (0..=3600 s) from the stop to finish, then their messages are left
        to their leases (an outcome being written then is waited for, up to 2 s more; a claim
        or an outcome the database does not answer by then is left in its daemon thread, its
        messages to their leases, logged). `ValidationError` for a rejected
        argument (every one) or an ``async def`` handler, before anything is claimed. A
        `StoreError` of a claim (the database unreachable: a PostgreSQL restart, a network
        failure) is logged as a warning, and the loop claims again after 0.5 s, then 1 s, 2 s
        ... up to 30 s (the wait logged: handlers ending meanwhile do not bring the claim
        forward), until a claim works; with ``stop_when_idle`` (a drain, which ends), or
        once the database is closed, it stops the loop instead, then is raised.
        """
    async def process_async(
        self,
        handler: Callable[[Message], Awaitable[object]],
        *,
        concurrency: Optional[int] = 1,
        poll_interval: Optional[_Seconds] = 1.0,
        stop_when_idle: bool = False,
        shutdown_timeout: Optional[_Seconds] = 30.0,
        lease: Optional[_Seconds] = None,
        stop: Optional[asyncio.Event] = None,
    ) -> int:
        """`process` for ``async def`` handlers on the running asyncio loop: at most
        ``concurrency`` handler tasks, every database call in a thread of its own executor
        (not on the event loop, nor behind ``asyncio.to_thread`` calls of the handlers).
        ``stop`` is an `asyncio.Event`; SIGTERM is handled through ``loop.add_signal_handler``
        in the main thread (one handler stops every loop on the event loop), unless the
        application handles SIGTERM: its handler is left alone (stop the loop with ``stop`` or by
        cancelling it). Cancelled (Ctrl-C under ``asyncio.run``), it stops claiming, waits
        up to ``shutdown_timeout`` for the running handlers (then cancels them: their messages
        are left to their leases; an outcome being written then is waited for, up to 2 s more)
        and raises `asyncio.CancelledError`. A `StoreError` of a claim is retried as in
        `process`; a claim the database does not answer by the shutdown timeout is left behind,
        as in `process`. The call itself validates (`ValidationError` for a rejected
        argument or a handler that is not ``async def``) and returns the coroutine."""
    def get(self, id: int) -> Message:
        """The message ``id`` of this queue; `NotFoundError` when there is none."""
    def list(
        self,
        status: Optional[_Status] = None,
        *,
        delayed: Optional[bool] = None,
        payload_contains: Optional[str] = None,
        error_contains: Optional[str] = None,
        group: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        created_after: Optional[datetime] = None,
        created_before: Optional[datetime] = None,
        updated_after: Optional[datetime] = None,
        updated_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        dead_before: Optional[datetime] = None,
        limit: Optional[int] = 100,
        after_id: Optional[int] = None,
    ) -> MessagePage:
        """The messages the filters select (all optional, combined with AND), in id order, at
        most ``limit`` (1..=1000) with ids above ``after_id``, as a `MessagePage` (a list whose
        ``next_after_id`` continues, None at the end). ``delayed``: pending messages waiting for
        a backoff or delay (True) or not (False); ``payload_contains``, ``error_contains``:
        case-sensitive, non-empty, no NUL; ``group``, ``idempotency_key``: exact; ``*_after <= t
        < *_before`` on ``created_at``, ``updated_at``, ``dead_at`` (aware datetimes). Examines
        at most ``SCAN_BUDGET`` messages per call: past it the page may be short, even empty,
        with ``next_after_id`` the last id examined."""

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
        """How many failed attempts make the message dead (1..=10): with 3, the third failure
        does (3 attempts in all)."""
    @property
    def retry_after(self) -> Optional[datetime]:
        """Set exactly while pending in backoff (after a failure, or an enqueue delay): not
        claimable before this instant; else None."""
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
        """While processing: the token that `Queue.succeed`/`fail`/`extend` check; else None."""
    @property
    def lease_expires_at(self) -> Optional[datetime]:
        """While processing: when the lease (visibility timeout) runs out; else None."""
    @property
    def idempotency_key(self) -> Optional[str]:
        """The producer's idempotency key, or None."""
    @property
    def deduplicated(self) -> bool:
        """On an enqueue's result: True when the stored message with the key was returned."""
    @property
    def first_failed_at(self) -> Optional[datetime]:
        """When the first failed attempt was recorded; never changed afterwards."""
    @property
    def dead_at(self) -> Optional[datetime]:
        """While dead: when it last became dead; else None."""
    @property
    def errors(self) -> list[_FailedAttempt]:
        """The failure history, oldest first, at most 20 entries (a new list on each access)."""
    @property
    def errors_dropped(self) -> int:
        """How many older entries were dropped from ``errors``."""
    @property
    def replay_count(self) -> int:
        """How many times it was replayed."""
    @property
    def replayed_at(self) -> Optional[datetime]:
        """When it was last replayed, or None."""
    @property
    def group(self) -> Optional[str]:
        """Its ordering group, or None."""
    @property
    def expires_at(self) -> Optional[datetime]:
        """When it expires (still pending then, it is never delivered), or None."""
    @property
    def moved_from(self) -> Optional[str]:
        """The queue it was last moved from (``move``, ``move_all``), or None."""
    def to_dict(self) -> dict[str, object]:
        """Every attribute in a new dict."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class QueueSettings:
    """The settings stored with one queue; immutable. None: unset (the fallback applies)."""

    @property
    def backoff(self) -> Optional[Backoff]:
        """The stored backoff policy, or None (``Backoff()``, unless a handle has its own)."""
    @property
    def max_retries(self) -> Optional[int]:
        """For enqueues that give none, or None (3)."""
    @property
    def lease(self) -> Optional[timedelta]:
        """For claims and extends that give none, or None (the database's lease)."""
    @property
    def expires_in(self) -> Optional[timedelta]:
        """For enqueues and replays that give none, or None (never)."""
    @property
    def on_expiry(self) -> Literal["dead", "discard"]:
        """What expiry does to a pending message."""
    @property
    def paused(self) -> bool:
        """Whether the queue is paused."""
    def to_dict(self) -> dict[str, object]:
        """Every attribute in a new dict."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class QueueStats:
    """The statistics of one queue at one instant, read from indexes; immutable."""

    @property
    def queue(self) -> str:
        """The queue's name."""
    @property
    def pending(self) -> int:
        """Messages waiting to be claimed (due, in backoff or delayed, or behind their group's
        head)."""
    @property
    def processing(self) -> int:
        """Messages held by a worker (expired leases included until reaped)."""
    @property
    def succeeded(self) -> int:
        """Messages acked."""
    @property
    def dead(self) -> int:
        """Messages in the dead-letter queue."""
    @property
    def expired(self) -> int:
        """Processing messages whose lease has run out."""
    @property
    def delayed(self) -> int:
        """Pending messages not due yet."""
    @property
    def next_due_at(self) -> Optional[datetime]:
        """When the next delayed message becomes due, or None."""
    @property
    def oldest_due_age(self) -> Optional[timedelta]:
        """How long the due pending message the next claim takes (the first in enqueue order,
        the oldest unless a clock went back between enqueues) has been in the queue, or None."""
    @property
    def oldest_dead_age(self) -> Optional[timedelta]:
        """How long the oldest dead message has been dead, or None."""
    @property
    def paused(self) -> bool:
        """Whether the queue is paused."""
    @property
    def expired_dead(self) -> int:
        """Messages that expired while pending and became dead."""
    @property
    def expired_discarded(self) -> int:
        """Messages that expired while pending and were discarded."""
    def to_dict(self) -> dict[str, object]:
        """Every attribute in a new dict."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class WorkerPlan:
    """The validated options of one worker loop (made by ``deadletter._worker``; not exported
    by ``deadletter``). Durations in seconds."""

    def __new__(
        cls,
        queue: Queue,
        *,
        concurrency: Optional[int] = None,
        poll_interval: Optional[_Seconds] = None,
        shutdown_timeout: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
    ) -> WorkerPlan:
        """`ValidationError` listing every rejected option (``concurrency`` 1..=1000,
        ``poll_interval`` 0.001..=3600 s, ``shutdown_timeout`` 0..=3600 s, ``lease``
        0.001..=43200 s; None: 1, 1 s, 30 s, the queue's stored lease or the database's)."""
    @property
    def concurrency(self) -> int:
        """Handlers run at once."""
    @property
    def poll_interval(self) -> float:
        """The longest idle sleep between polls, in seconds."""
    @property
    def shutdown_timeout(self) -> float:
        """How long a stopping loop waits for running handlers, in seconds."""
    @property
    def lease(self) -> float:
        """The lease of each claimed message, in seconds."""
    @property
    def heartbeat(self) -> float:
        """How often a running handler's lease is extended, in seconds (half the lease)."""
    def idle_wait(self, next_due_at: Optional[datetime]) -> float:
        """Seconds an idle loop sleeps now (the database's clock): until ``next_due_at`` or the
        poll interval, whichever is sooner; at least 0.001."""

def failure_text(kind: str, message: str) -> str:
    """The error recorded for a handler's exception: ``"kind: message"``, or ``kind`` when the
    message is empty; NUL and lone surrogates become U+FFFD."""
