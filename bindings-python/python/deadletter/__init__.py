"""deadletter: a reliable message queue on SQLite or PostgreSQL, with retries, exponential backoff
and a dead-letter queue.

>>> import deadletter
>>> with deadletter.open(":memory:") as db:
...     q = db.queue("emails")
...     m = q.enqueue('{"to":"alice@example.com"}', max_retries=5)
...     m = q.claim()
...     q.succeed(m.id, lease_token=m.lease_token).status
'succeeded'

A message is ``pending`` until claimed; ``claim`` leases it (``processing``) for a number of
seconds; the worker then calls ``succeed`` or ``fail``. A failure makes it claimable again after
the queue's backoff (`Backoff`, by default ``min(2**retry_count, 3600)`` seconds), until
``max_retries`` attempts are used up: then it is ``dead``, kept with its failure history and
replayable (``replay``, ``replay_all``); ``Database.on_dead`` callbacks hear of it. A lease that
runs out counts as a failure. The messages of one ordering group (``enqueue(group=...)``) are
delivered one at a time, in order; a message may expire (``expires_in``); a queue's defaults
(backoff, ``max_retries``, lease, expiry) and its pause are stored with it for every process
(``Queue.set_settings``, ``Queue.pause``). ``Queue.process`` (threads) and ``Queue.process_async``
(asyncio) run a handler on each message, with heartbeats and a clean shutdown; a handler that raises
`PermanentError` sends its message to the dead-letter queue at once. Producers may pass an
idempotency key; ``stats`` and ``Database.queues`` read the queues' numbers from indexes.
``Queue.list`` finds messages by status, text in payloads and errors, group, key and time ranges,
a `MessagePage` at a time; ``replay_all``, ``delete_all``, ``retry_now_all`` and ``move_all``
act on what the same filters select, and count it exactly first with ``dry_run=True``;
``Queue.move`` sends one message to another queue with its id and history. Every rule lives in the
Rust core and is shared with the JavaScript binding.
"""

from ._deadletter import (
    CODES,
    SQLITE_BUNDLED,
    SQLITE_VERSION,
    Backoff,
    Database,
    Message,
    Queue,
    QueueSettings,
    QueueStats,
    __version__,
    backoff,
    open,
)
from ._errors import (
    ConflictError,
    Error,
    ErrorCode,
    FieldError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from ._page import MessagePage
from ._worker import PermanentError

__all__ = [
    "CODES",
    "Backoff",
    "ConflictError",
    "Database",
    "Error",
    "ErrorCode",
    "FieldError",
    "Message",
    "MessagePage",
    "NotFoundError",
    "PermanentError",
    "Queue",
    "QueueSettings",
    "QueueStats",
    "SQLITE_BUNDLED",
    "SQLITE_VERSION",
    "StoreError",
    "ValidationError",
    "__version__",
    "backoff",
    "open",
]
