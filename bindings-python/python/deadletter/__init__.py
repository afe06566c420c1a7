"""deadletter: a reliable message queue on SQLite, with retries, exponential backoff and a
dead-letter queue.

>>> import deadletter
>>> with deadletter.open(":memory:") as db:
...     q = db.queue("emails")
...     m = q.enqueue('{"to":"alice@example.com"}', max_retries=5)
...     m = q.claim()
...     q.succeed(m.id, lease_token=m.lease_token).status
'succeeded'

A message is ``pending`` until claimed; ``claim`` leases it (``processing``) for a number of
seconds; the worker then calls ``succeed`` or ``fail``. A failure makes it claimable again after
``min(2**retry_count, 3600)`` seconds, until ``max_retries`` attempts are used up: then it is
``dead``, kept with its last error and replayable. A lease that runs out counts as a failure.
Every rule lives in the Rust core and is shared with the JavaScript binding.
"""

from ._deadletter import (
    CODES,
    SQLITE_BUNDLED,
    SQLITE_VERSION,
    Database,
    Message,
    Queue,
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

__all__ = [
    "CODES",
    "ConflictError",
    "Database",
    "Error",
    "ErrorCode",
    "FieldError",
    "Message",
    "NotFoundError",
    "Queue",
    "SQLITE_BUNDLED",
    "SQLITE_VERSION",
    "StoreError",
    "ValidationError",
    "__version__",
    "backoff",
    "open",
]
