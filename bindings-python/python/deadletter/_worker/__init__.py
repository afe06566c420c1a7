"""The worker loops behind `Queue.process` (threads) and `Queue.process_async` (asyncio).

The rules come from the Rust core through the native module: `WorkerPlan` validates the options
and says when to heartbeat (every half lease) and how long an idle loop sleeps (until the next
delayed message is due, or the poll interval, whichever is sooner); `failure_text` makes the
error a raising handler leaves. This package holds only the mechanics: `threads` (the loop of
`process`), `tasks` (the loop of `process_async`), what both share (`common`: `PermanentError`,
argument checks, recording a handler's outcome) and their SIGTERM handler (`sigterm`). The native
module calls `process` and `process_async` from here.

Both loops work the same way. One dispatcher claims with ``claim_many`` up to the free handler
slots. A slot is one claim (one lease token), taken until its handler returned or raised and the
loop recorded the outcome with ``succeed`` or ``fail`` with that token. While a handler runs,
its slot's lease is extended every ``WorkerPlan.heartbeat`` seconds; an ``extend`` that raises
`ConflictError` means the lease was lost (it ran out and a claim took the message): heartbeats
for that slot stop, and the outcome of its handler is refused with `ConflictError` too, logged
on the ``"deadletter"`` logger. A message is never acked twice. One loop runs a message twice
at once only when the lease ran out under its handler (the process was paused past the lease:
SIGSTOP, a VM pause, a long garbage collection) and a claim, the loop's own or another
worker's, took it again: the second run is a slot of its own, with its own token and
heartbeats, so the pause costs one attempt (``lease expired``), never the message. (A lease
that ran out but that no claim took yet is still extended: the dispatcher heartbeats before it
claims.) Stopping (SIGTERM, ``KeyboardInterrupt``, cancellation, ``stop``)
ends the claims; handlers still running get ``shutdown_timeout`` seconds to finish, heartbeats
going on; after that the loop returns, once the outcomes being written then are written (for
up to `common.RECORD_GRACE`, 2 s, more), and the messages of the handlers still running are
left to their leases (another worker takes them once the lease ran out, counting it as a failed
attempt). A database call that does not answer (PostgreSQL hanging) never holds the return up
past that: a claim in flight then is left in its thread, the messages it takes later left to
their leases, logged.

SIGTERM: a SIGTERM handler of the application (any disposition but the default when a loop
starts) is left alone; stop the loops with ``stop`` then (or by cancelling ``process_async``).
Otherwise deadletter installs one handler that stops every loop running, and removes it (the
default is back) when the last of them ends (`sigterm` tells the details).
"""

from .common import PermanentError
from .tasks import process_async
from .threads import process

__all__ = ["PermanentError", "process", "process_async"]
