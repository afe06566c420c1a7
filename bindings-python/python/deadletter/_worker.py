"""The worker loops behind `Queue.process` (threads) and `Queue.process_async` (asyncio).

The rules come from the Rust core through the native module: `WorkerPlan` validates the options
and says when to heartbeat (every half lease) and how long an idle loop sleeps (until the next
delayed message is due, or the poll interval, whichever is sooner); `failure_text` makes the
error a raising handler leaves. This module holds only the mechanics: threads, asyncio tasks,
signals.

Both loops work the same way. One dispatcher claims with ``claim_many`` up to the free handler
slots; each claimed message is in flight until its handler returned or raised and the loop
recorded the outcome with ``succeed`` or ``fail`` (with the message's lease token). While a
handler runs, its lease is extended every ``WorkerPlan.heartbeat`` seconds; an ``extend`` that
raises `ConflictError` means the lease was lost (it ran out and another claim took the
message): heartbeats for it stop, and the outcome of its handler is refused with
`ConflictError` too, logged on the ``"deadletter"`` logger. A message is never acked twice, and
never run twice by one loop. Stopping (SIGTERM, ``KeyboardInterrupt``, cancellation, ``stop``)
ends the claims; handlers still running get ``shutdown_timeout`` seconds to finish, heartbeats
going on; after that the loop returns and their messages are left to their leases (another
worker takes them once the lease ran out, counting it as a failed attempt).

SIGTERM: a SIGTERM handler of the application (any disposition but the default when a loop
starts) is left alone; stop the loops with ``stop`` then (or by cancelling ``process_async``).
Otherwise deadletter installs one handler that stops every loop running, and removes it (the
default is back) when the last of them ends:

- the threaded loops share one per process, installed by a loop that starts in the main thread
  (only the main thread may install one); while installed it stops the loops of every thread. A
  loop started in another thread while none is installed is not stopped by SIGTERM (the default
  ends the process). When the last loop ends in another thread, which may not restore the
  default, the handler stays: the next SIGTERM, finding no loop, restores the default and acts
  as it;
- the ``process_async`` loops of one event loop (running in the main thread, on Unix) share one,
  through ``loop.add_signal_handler``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import queue as queues
import signal
import threading
import time
import traceback
from collections.abc import Awaitable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Callable, Optional, TypeVar, Union, cast

from ._deadletter import Message, Queue, WorkerPlan, failure_text
from ._errors import ConflictError, FieldError, ValidationError

__all__ = ["PermanentError", "process", "process_async"]

logger = logging.getLogger("deadletter")

CLAIM_MANY_MAX = 100
"""The most messages one ``Queue.claim_many`` call takes."""
STOP_CHECK = 0.1
"""How often, in seconds, the thread that called `process` looks whether the loop should stop
(a signal, the ``stop`` event) or has ended. It sleeps in between rather than waiting on a lock:
a signal handler may run, or ``KeyboardInterrupt`` be raised, at any point of that thread, and
neither is safe inside ``threading.Condition.wait``."""

LOG_TEXT_MAX = 4096
"""The most characters of a handler's error, and of each part of its traceback, that the log
shows; the message's ``errors`` keep the error as stored (up to 64 KiB)."""

Handler = Callable[[Message], object]
AsyncHandler = Callable[[Message], Awaitable[object]]
_Seconds = Union[int, float, timedelta]
T = TypeVar("T")


class PermanentError(Exception):
    """Raised by a handler of `Queue.process` or `Queue.process_async` (this class or a
    subclass): the message fails with ``retryable=False``, so it is dead at once, whatever retries
    it has left. Its error is ``"<class name>: <message>"``, as for any other exception; raise
    it for a failure that retrying cannot cure (a malformed payload, a refused request)."""

    __module__ = "deadletter"


# ---------------------------------------------------------------------------------------------
# Validation: the core's options (WorkerPlan) and the Python-only arguments, reported together


def _describe(value: object) -> str:
    """``an int``, ``a list``: a value's type, as the native module's messages name it."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in tuple('aeiou') else 'a'} {name}"


def _is_async(handler: object) -> bool:
    """Whether calling ``handler`` makes a coroutine (an ``async def`` function or method, a
    ``functools.partial`` of one, or an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)
    )


def _plan(
    queue: Queue,
    handler: Any,
    *,
    want_async: bool,
    concurrency: Any,
    poll_interval: Any,
    stop_when_idle: Any,
    shutdown_timeout: Any,
    lease: Any,
    stop: Any,
) -> WorkerPlan:
    """The validated plan; `ValidationError` listing every rejected argument otherwise (the
    values are the caller's, unchecked: the core judges the options)."""
    fields: list[FieldError] = []

    def reject(field: str, message: str) -> None:
        fields.append({"field": field, "code": "type", "message": message})

    if not callable(handler):
        reject("handler", f"must be a callable taking a Message, got {_describe(handler)}")
    elif want_async and not _is_async(handler):
        reject("handler", "must be an async def function (use process for a plain function)")
    elif not want_async and _is_async(handler):
        reject("handler", "is an async def function: use process_async")
    plan: Optional[WorkerPlan] = None
    try:
        plan = WorkerPlan(
            queue,
            concurrency=concurrency,
            poll_interval=poll_interval,
            shutdown_timeout=shutdown_timeout,
            lease=lease,
        )
    except ValidationError as err:
        fields.extend(err.errors)
    if not isinstance(stop_when_idle, bool):
        reject("stop_when_idle", f"must be a bool, got {_describe(stop_when_idle)}")
    event = asyncio.Event if want_async else threading.Event
    if stop is not None and not isinstance(stop, event):
        name = f"{event.__module__}.{event.__qualname__}"
        reject("stop", f"must be a {name} or None, got {_describe(stop)}")
    if fields or plan is None:
        described = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
        raise ValidationError(f"validation failed: {described}", fields)
    return plan


def _failure(exc: BaseException) -> str:
    """The error recorded for a handler that raised ``exc``."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not lose the failure
        message = "<the exception's str() failed>"
    return failure_text(type(exc).__name__, message)


def _capped(text: str) -> str:
    """``text`` cut at `LOG_TEXT_MAX` characters, saying how many more there were (a final
    newline is kept)."""
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    if len(body) <= LOG_TEXT_MAX:
        return text
    return f"{body[:LOG_TEXT_MAX]}… [{len(body) - LOG_TEXT_MAX} more characters]{end}"


def _outcome(message: Message, exc: Optional[BaseException]) -> tuple[Optional[str], bool]:
    """(error, retryable) for a handler that raised ``exc``, logged at INFO with its traceback
    (the error and each part of the traceback capped: an exception's text may be megabytes);
    (None, True) when it returned."""
    if exc is None:
        return None, True
    error = _failure(exc)
    parts = traceback.format_exception(type(exc), exc, exc.__traceback__)
    trace = "".join(_capped(part) for part in parts).rstrip("\n")
    logger.info("message %d: handler raised %s\n%s", message.id, _capped(error), trace)
    return error, not isinstance(exc, PermanentError)


def _record(
    queue: Queue, message: Message, error: Optional[str], retryable: bool
) -> tuple[bool, Optional[datetime]]:
    """Acks or fails ``message`` with its lease token; returns (recorded, retry_after). A lost
    lease (`ConflictError`) or a failing store is logged, and the message is left to its lease."""
    try:
        if error is None:
            queue.succeed(message.id, lease_token=message.lease_token)
            return True, None
        failed = queue.fail(message.id, error, lease_token=message.lease_token, retryable=retryable)
        return True, failed.retry_after
    except ConflictError as err:
        logger.warning(
            "message %d: the handler's %s was not recorded: %s",
            message.id,
            "success" if error is None else "failure",
            err,
        )
    except Exception:
        logger.exception("message %d: recording the handler's outcome failed", message.id)
    return False, None


def _token(message: Message) -> str:
    """The lease token of a message the loop claimed (never None)."""
    return cast(str, message.lease_token)



# ---------------------------------------------------------------------------------------------
# Threads


class _Slot:
    """One message in flight."""

    __slots__ = ("done", "lock", "lost", "message", "next_beat")

    def __init__(self, message: Message, next_beat: float) -> None:
        self.message = message
        self.next_beat = next_beat  # time.monotonic() of the next heartbeat (dispatcher only)
        self.lock = threading.Lock()  # serializes the heartbeats with the ack
        self.lost = False  # extend raised ConflictError
        self.done = False  # the handler finished: no more heartbeats


class _Threads:
    """`process`: a dispatcher thread (claims, heartbeats) and handler threads, all daemons; the
    calling thread watches for signals and the ``stop`` event, and waits for them."""

    def __init__(
        self, queue: Queue, handler: Handler, plan: WorkerPlan, stop_when_idle: bool
    ) -> None:
        self.queue, self.handler, self.plan = queue, handler, plan
        self.stop_when_idle = stop_when_idle
        self.cond = threading.Condition()
        # Guarded by cond:
        self.inflight: dict[int, _Slot] = {}
        self.threads: list[threading.Thread] = []
        self.next_poll = time.monotonic()
        self.last_full = False  # the last claim filled every slot it asked for
        self.stopping = False  # no more claims
        self.abandoned = False  # process returned: record nothing more
        self.handled = 0
        self.error: Optional[BaseException] = None
        self.work: queues.SimpleQueue[Optional[_Slot]] = queues.SimpleQueue()
        self.finished = threading.Event()  # the dispatcher returned
        # Set by the signal handlers (which take no lock) and the calling thread:
        self.signalled: Optional[str] = None  # why the loop stops
        self.returning = False  # run() is returning: a signal is passed on
        self.pending_signal: Optional[int] = None

    # -- the calling thread ---------------------------------------------------------------------

    def run(self, stop: Optional[threading.Event]) -> int:
        restore: list[tuple[int, Any]] = []
        main = threading.current_thread() is threading.main_thread()
        try:
            _watch_sigterm_threads(self, main)
            if main:
                restore = self._install_sigint_handler()
            dispatcher = threading.Thread(
                target=self._dispatch, name="deadletter-dispatcher", daemon=True
            )
            dispatcher.start()
            reason: Optional[str] = None
            try:
                while not (self.finished.is_set() or reason):
                    if stop is not None and stop.is_set():
                        reason = "stop event"
                    else:
                        time.sleep(STOP_CHECK)
                        reason = self.signalled
            except KeyboardInterrupt:  # raised by a SIGINT handler that is not this loop's
                reason = "KeyboardInterrupt"
            if reason:
                self._stop(reason)
        finally:
            self.returning = True
            self.abandoned = self.stopping = True  # before anything that may be interrupted
            for signum, handler in restore:
                signal.signal(signum, handler)
            _unwatch_sigterm_threads(self, main)
            self._abandon()
            if self.pending_signal is not None:  # arrived as the loop returned: passed on
                signal.raise_signal(self.pending_signal)
        if self.error is not None:
            raise self.error
        with self.cond:
            return self.handled

    def _install_sigint_handler(self) -> list[tuple[int, Any]]:
        """SIGINT, unless someone else handles it, stops the loop while it runs; returns the
        handler to restore. (SIGTERM: `_watch_sigterm_threads`.)"""
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.default_int_handler:
            return []  # installed from C, or a SIGINT handler of the application's
        signal.signal(signal.SIGINT, self._on_sigint)
        return [(signal.SIGINT, previous)]

    def _on_sigint(self, signum: int, frame: object) -> None:
        """The first SIGINT stops the loop; a second one raises KeyboardInterrupt; one that
        arrives as `run` returns goes to the handler it restores."""
        if self.returning:
            self.pending_signal = signum
        elif self.signalled:
            raise KeyboardInterrupt
        else:
            self.signalled = "SIGINT"

    def on_sigterm(self) -> None:
        """Stops the loop (called by deadletter's SIGTERM handler, which takes no lock); a SIGTERM
        that arrives as `run` returns is raised again once it has stopped watching it."""
        if self.returning:
            self.pending_signal = signal.SIGTERM
        else:
            self.signalled = self.signalled or "SIGTERM"

    def _stop(self, reason: str) -> None:
        """Stops claiming and waits up to the shutdown timeout for the running handlers."""
        with self.cond:
            running = len(self.inflight)
        logger.info(
            "stopping (%s): no more claims; waiting up to %g s for %d running handlers",
            reason,
            self.plan.shutdown_timeout,
            running,
        )
        self.signalled = self.signalled or reason
        self._request_stop()
        deadline = time.monotonic() + self.plan.shutdown_timeout
        while not self.finished.is_set() and time.monotonic() < deadline:
            time.sleep(min(STOP_CHECK, max(0.0, deadline - time.monotonic())))

    def _request_stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def _abandon(self) -> None:
        """Handlers still running record nothing; idle handler threads end."""
        with self.cond:
            self.stopping = self.abandoned = True
            self.cond.notify_all()
            threads = len(self.threads)
        for _ in range(threads):
            self.work.put(None)

    # -- the dispatcher thread ------------------------------------------------------------------

    def _dispatch(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - re-raised by run(), in the caller
            self.error = exc
        finally:
            self.finished.set()

    def _loop(self) -> None:
        deadline: Optional[float] = None
        while True:
            now = time.monotonic()
            with self.cond:
                if self.stopping and deadline is None:
                    deadline = now + self.plan.shutdown_timeout
                if self.abandoned or (
                    deadline is not None and (not self.inflight or now >= deadline)
                ):
                    return
                free = self.plan.concurrency - len(self.inflight)
                poll = deadline is None and free > 0 and now >= self.next_poll
            if poll:
                try:
                    if self._poll(free):
                        return
                except Exception as exc:  # noqa: BLE001 - stop claiming, drain, then raise it
                    self.error = exc
                    self._request_stop()
                continue
            self._heartbeat(now)
            with self.cond:
                wake = min((s.next_beat for s in self.inflight.values()), default=float("inf"))
                if deadline is not None:
                    wake = min(wake, deadline)
                elif len(self.inflight) < self.plan.concurrency:
                    wake = min(wake, self.next_poll)
                if not self.stopping or deadline is not None:
                    self.cond.wait(max(0.0, wake - time.monotonic()))

    def _poll(self, free: int) -> bool:
        """Claims up to ``free`` messages and starts them; True when ``stop_when_idle`` ends the
        loop (nothing due, in flight or delayed)."""
        asked = min(free, CLAIM_MANY_MAX)
        # Read before the claim: a message delayed now is either taken by this claim (due by
        # then) or waited for. Read after it, a message that became due in between would be
        # neither (next_due_at only sees instants still ahead) and would wait a poll interval.
        due = self.queue.next_due_at()
        claimed = self.queue.claim_many(asked, lease=self.plan.lease)
        for message in claimed:
            self._start(message)
        if len(claimed) == asked:
            with self.cond:
                self.last_full, self.next_poll = True, time.monotonic()
            return False
        with self.cond:
            if self.stop_when_idle and due is None and not self.inflight:
                return True
        wait = self.plan.idle_wait(due)
        with self.cond:
            self.last_full, self.next_poll = False, time.monotonic() + wait
        return False

    def _start(self, message: Message) -> None:
        slot = _Slot(message, time.monotonic() + self.plan.heartbeat)
        with self.cond:
            self.inflight[message.id] = slot
            if len(self.threads) < len(self.inflight):
                name = f"deadletter-handler-{len(self.threads) + 1}"
                thread = threading.Thread(target=self._work, name=name, daemon=True)
                self.threads.append(thread)
                thread.start()
        self.work.put(slot)

    def _heartbeat(self, now: float) -> None:
        with self.cond:
            due = [s for s in self.inflight.values() if s.next_beat <= now]
        for slot in due:
            with slot.lock:
                if not (slot.done or slot.lost):
                    self._extend(slot)
            slot.next_beat = time.monotonic() + self.plan.heartbeat

    def _extend(self, slot: _Slot) -> None:
        message = slot.message
        try:
            self.queue.extend(message.id, lease_token=_token(message), lease=self.plan.lease)
        except ConflictError as err:
            slot.lost = True
            logger.warning("message %d: lease lost, heartbeats stop: %s", message.id, err)
        except Exception:  # the next heartbeat tries again
            logger.warning("message %d: heartbeat failed", message.id, exc_info=True)

    # -- the handler threads --------------------------------------------------------------------

    def _work(self) -> None:
        while (slot := self.work.get()) is not None:
            self._run(slot)

    def _run(self, slot: _Slot) -> None:
        message = slot.message
        exc: Optional[BaseException] = None
        with self.cond:
            abandoned = self.abandoned
        if not abandoned:
            try:
                result = self.handler(message)
                if inspect.isawaitable(result):
                    if inspect.iscoroutine(result):
                        result.close()
                    raise TypeError("the handler returned an awaitable: use process_async")
            except BaseException as raised:  # noqa: BLE001 - every failure is recorded
                exc = raised
        error, retryable = _outcome(message, exc)
        recorded, retry_after = False, None
        with slot.lock:
            slot.done = True
            with self.cond:
                abandoned = self.abandoned
            if not abandoned:
                recorded, retry_after = _record(self.queue, message, error, retryable)
        self._finished(slot, recorded, retry_after)

    def _finished(self, slot: _Slot, recorded: bool, retry_after: Optional[datetime]) -> None:
        wake_in: Optional[float] = None
        if retry_after is not None:
            try:
                wake_in = self.plan.idle_wait(retry_after)
            except Exception:  # noqa: BLE001 - a failing clock: the next poll sees it
                wake_in = None
        with self.cond:
            self.inflight.pop(slot.message.id, None)
            self.handled += recorded
            now = time.monotonic()
            if self.last_full or (self.stop_when_idle and not self.inflight):
                self.next_poll = now
            elif wake_in is not None:
                self.next_poll = min(self.next_poll, now + wake_in)
            self.cond.notify_all()


_thread_loops: set[_Threads] = set()
"""The threaded loops running in this process, which deadletter's SIGTERM handler stops."""
_thread_loops_lock = threading.Lock()


def _on_sigterm(signum: int, frame: object) -> None:
    """deadletter's SIGTERM handler of the threaded loops: stops every one running. With none
    running (the last ended in a thread that may not restore the default), it restores the
    default and raises the signal again, which ends the process as if it had never been
    installed. It takes no lock: it runs between two bytecodes of the main thread, which may hold
    it."""
    loops = tuple(_thread_loops)  # one C call: atomic under the GIL
    if not loops:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
    for loop in loops:
        loop.on_sigterm()


def _sigterm_is_free() -> bool:
    """Whether SIGTERM may be deadletter's: its disposition is the default, or deadletter's own
    handler of the threaded loops, left installed (not an application's handler, nor one
    installed from C, nor asyncio's)."""
    current = signal.getsignal(signal.SIGTERM)
    return current is signal.SIG_DFL or current is _on_sigterm


def _watch_sigterm_threads(loop: _Threads, main: bool) -> None:
    """Lets SIGTERM stop ``loop``; from the main thread, installs deadletter's handler unless the
    application handles SIGTERM."""
    with _thread_loops_lock:
        _thread_loops.add(loop)
    if main and _sigterm_is_free():
        signal.signal(signal.SIGTERM, _on_sigterm)


def _unwatch_sigterm_threads(loop: _Threads, main: bool) -> None:
    """``loop`` ended; from the main thread, the last one restores SIGTERM's default."""
    with _thread_loops_lock:
        _thread_loops.discard(loop)
        last = not _thread_loops
    if main and last and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def process(
    queue: Queue,
    handler: Handler,
    *,
    concurrency: Optional[int] = None,
    poll_interval: Optional[_Seconds] = None,
    stop_when_idle: bool = False,
    shutdown_timeout: Optional[_Seconds] = None,
    lease: Optional[_Seconds] = None,
    stop: Optional[threading.Event] = None,
) -> int:
    """`Queue.process`: runs ``handler`` on each claimed message, on up to ``concurrency``
    daemon threads, until stopped; returns how many messages it handled (whose outcome it
    recorded with ``succeed`` or ``fail``).

    It stops when ``stop_when_idle`` is true and a poll finds nothing due, nothing in flight and
    nothing delayed (``queue.next_due_at()`` is None); when ``stop`` (a `threading.Event`) is
    set; on SIGTERM unless the application handles it (see the module's documentation: one
    handler, installed from the main thread, stops every loop of the process); on SIGINT (Ctrl-C)
    when called from the main thread while Python's default handler is in place (installed for
    the call, then restored; a ``KeyboardInterrupt`` from another handler stops it too); all
    noticed within 0.1 s. A second Ctrl-C while handlers finish raises ``KeyboardInterrupt`` at
    once. An error of ``claim_many`` or ``next_due_at`` (a `StoreError`) stops it the same way,
    then is raised.
    """
    plan = _plan(
        queue,
        handler,
        want_async=False,
        concurrency=concurrency,
        poll_interval=poll_interval,
        stop_when_idle=stop_when_idle,
        shutdown_timeout=shutdown_timeout,
        lease=lease,
        stop=stop,
    )
    if stop is not None and stop.is_set():
        return 0
    return _Threads(queue, handler, plan, bool(stop_when_idle)).run(stop)


# ---------------------------------------------------------------------------------------------
# asyncio


class _Tasks:
    """`process_async`: the dispatcher is the awaiting coroutine; each message is a task that
    runs its handler and heartbeats; every database call runs in a thread of the loop's own
    executor, so that handlers filling the event loop's default executor (``asyncio.to_thread``)
    never hold up a heartbeat."""

    def __init__(
        self, queue: Queue, handler: AsyncHandler, plan: WorkerPlan, stop_when_idle: bool
    ) -> None:
        self.queue, self.handler, self.plan = queue, handler, plan
        self.stop_when_idle = stop_when_idle
        self.tasks: set[asyncio.Task[None]] = set()
        self.next_poll = 0.0  # loop.time() of the next claim
        self.last_full = False
        self.stopping = False
        self.reason: Optional[str] = None  # why it stops: "SIGTERM", "stop event"
        self.abandoned = False
        self.handled = 0

    async def run(self, stop: Optional[asyncio.Event]) -> int:
        loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()  # a handler finished, or stop (made here: Python 3.9 binds
        # an Event to the loop running when it is made)
        if stop is not None and stop.is_set():
            return 0
        self.next_poll = loop.time()
        # Threads are made as needed: one per running handler (its heartbeats and ack) and one
        # for the claims, at most.
        self.executor = ThreadPoolExecutor(
            self.plan.concurrency + 1, thread_name_prefix="deadletter-db"
        )
        _watch_sigterm_async(loop, self)
        watcher = asyncio.ensure_future(self._watch(stop)) if stop is not None else None
        cancelled = False
        error: Optional[BaseException] = None
        try:
            try:
                await self._claim_loop(loop)
            except asyncio.CancelledError:
                cancelled = True
            except Exception as exc:  # noqa: BLE001 - raised once the handlers finished
                error = exc
            self.stopping = True
            reason = "cancelled" if cancelled else self.reason
            if reason:
                logger.info(
                    "stopping (%s): no more claims; waiting up to %g s for %d running handlers",
                    reason,
                    self.plan.shutdown_timeout,
                    len(self.tasks),
                )
            await self._drain()
        finally:
            if watcher is not None:
                watcher.cancel()
            _unwatch_sigterm_async(loop, self)
            self.executor.shutdown(wait=False)
        if cancelled:
            raise asyncio.CancelledError
        if error is not None:
            raise error
        return self.handled

    async def _watch(self, stop: asyncio.Event) -> None:
        try:
            await stop.wait()
        except RuntimeError:
            # The event is bound to another event loop (it was waited on there; on Python 3.9,
            # made outside a running one) and cannot be awaited here: it is looked at instead.
            while not stop.is_set():
                await asyncio.sleep(STOP_CHECK)
        self._request_stop("stop event")

    def _request_stop(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.stopping = True
        self.wake.set()

    async def _claim_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self.stopping:
            self.wake.clear()
            free = self.plan.concurrency - len(self.tasks)
            if free > 0 and loop.time() >= self.next_poll:
                if await self._poll(loop, free):
                    return
                continue
            timeout = max(0.0, self.next_poll - loop.time()) if free > 0 else None
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass

    async def _poll(self, loop: asyncio.AbstractEventLoop, free: int) -> bool:
        asked = min(free, CLAIM_MANY_MAX)
        due = await self._db(self.queue.next_due_at)  # before the claim: see `_Threads._poll`
        claim = asyncio.ensure_future(
            self._db(self.queue.claim_many, asked, lease=self.plan.lease)
        )
        try:
            claimed = await asyncio.shield(claim)
        except asyncio.CancelledError:
            # The claim goes on in its thread: its messages are in flight like the others.
            try:
                claimed = await claim
            except Exception:  # noqa: BLE001 - cancelled anyway; nothing was claimed
                claimed = []
            for message in claimed:
                self._start(message)
            raise
        for message in claimed:
            self._start(message)
        if len(claimed) == asked:
            self.last_full, self.next_poll = True, loop.time()
            return False
        if self.stop_when_idle and due is None and not self.tasks:
            return True
        self.last_full, self.next_poll = False, loop.time() + self.plan.idle_wait(due)
        return False

    async def _db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call(*args, **kwargs)`` in the loop's executor, off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(call, *args, **kwargs))

    def _start(self, message: Message) -> None:
        task = asyncio.ensure_future(self._run(message))
        self.tasks.add(task)

    async def _run(self, message: Message) -> None:
        retry_after = None
        recorded = False
        work: Optional[asyncio.Future[object]] = None
        try:
            exc: Optional[BaseException] = None
            try:
                work = asyncio.ensure_future(self.handler(message))
            except Exception as raised:  # noqa: BLE001 - calling it raised at once
                exc = raised
            if work is not None:
                await self._heartbeats(message, work)
                exc = _exception_of(work)
            error, retryable = _outcome(message, exc)
            if not self.abandoned:
                recorded, retry_after = await self._db(
                    _record, self.queue, message, error, retryable
                )
        except asyncio.CancelledError:
            if work is not None:
                work.cancel()  # past the shutdown timeout: left to its lease
            raise
        finally:
            self._finished(asyncio.current_task(), recorded, retry_after)

    async def _heartbeats(self, message: Message, work: asyncio.Future[object]) -> None:
        """Waits for ``work``, extending the lease every heartbeat until it is done or lost."""
        lost = False
        while not work.done():
            await asyncio.wait({work}, timeout=self.plan.heartbeat)
            if work.done() or lost:
                continue
            try:
                await self._db(
                    self.queue.extend,
                    message.id,
                    lease_token=_token(message),
                    lease=self.plan.lease,
                )
            except ConflictError as err:
                lost = True
                logger.warning("message %d: lease lost, heartbeats stop: %s", message.id, err)
            except Exception:  # noqa: BLE001 - the next heartbeat tries again
                logger.warning("message %d: heartbeat failed", message.id, exc_info=True)

    def _finished(
        self, task: Optional[asyncio.Task[Any]], recorded: bool, retry_after: Optional[datetime]
    ) -> None:
        if task is not None:
            self.tasks.discard(task)
        self.handled += recorded
        now = asyncio.get_running_loop().time()
        if self.last_full or (self.stop_when_idle and not self.tasks):
            self.next_poll = now
        elif retry_after is not None:
            try:
                self.next_poll = min(self.next_poll, now + self.plan.idle_wait(retry_after))
            except Exception:  # noqa: BLE001 - a failing clock: the next poll sees it
                pass
        self.wake.set()

    async def _drain(self) -> None:
        """Waits for the running handlers up to the shutdown timeout, then cancels the rest."""
        if not self.tasks:
            return
        try:
            _, late = await asyncio.wait(set(self.tasks), timeout=self.plan.shutdown_timeout)
        except asyncio.CancelledError:
            late = set(self.tasks)
            raise
        finally:
            if late:
                self.abandoned = True
                for task in late:
                    task.cancel()


def _exception_of(work: asyncio.Future[object]) -> Optional[BaseException]:
    """What the handler's task raised (a `CancelledError` when it was cancelled), or None."""
    if work.cancelled():
        return asyncio.CancelledError()
    return work.exception()


_async_loops: dict[asyncio.AbstractEventLoop, set[_Tasks]] = {}
"""The ``process_async`` loops running on each event loop whose SIGTERM handler is deadletter's."""


def _stop_async_loops(loop: asyncio.AbstractEventLoop) -> None:
    """deadletter's SIGTERM handler on ``loop``: stops every ``process_async`` loop on it."""
    for tasks in tuple(_async_loops.get(loop, ())):
        tasks._request_stop("SIGTERM")


def _watch_sigterm_async(loop: asyncio.AbstractEventLoop, tasks: _Tasks) -> None:
    """Lets SIGTERM stop ``tasks``: joins deadletter's handler on ``loop``, or installs it when the
    event loop allows it (Unix, main thread) and the application does not handle SIGTERM."""
    running = _async_loops.get(loop)
    if running is not None:
        running.add(tasks)
        return
    if threading.current_thread() is not threading.main_thread() or not _sigterm_is_free():
        return
    try:
        loop.add_signal_handler(signal.SIGTERM, _stop_async_loops, loop)
    except (NotImplementedError, RuntimeError, ValueError):
        return
    _async_loops[loop] = {tasks}


def _unwatch_sigterm_async(loop: asyncio.AbstractEventLoop, tasks: _Tasks) -> None:
    """``tasks`` ended; the last loop on ``loop`` removes the handler (SIGTERM's default is
    back)."""
    running = _async_loops.get(loop)
    if running is None or tasks not in running:
        return
    running.discard(tasks)
    if not running:
        del _async_loops[loop]
        loop.remove_signal_handler(signal.SIGTERM)


def process_async(
    queue: Queue,
    handler: AsyncHandler,
    *,
    concurrency: Optional[int] = None,
    poll_interval: Optional[_Seconds] = None,
    stop_when_idle: bool = False,
    shutdown_timeout: Optional[_Seconds] = None,
    lease: Optional[_Seconds] = None,
    stop: Optional[asyncio.Event] = None,
) -> Coroutine[Any, Any, int]:
    """`Queue.process_async`: validates at once, then returns the coroutine of the loop.

    It runs at most ``concurrency`` handler tasks; every database call runs in a thread of its
    own executor (not the default one that ``asyncio.to_thread`` uses, which handlers may fill),
    none on the event loop. It ends like `process` (``stop_when_idle``,
    ``stop``: an `asyncio.Event`, SIGTERM through ``loop.add_signal_handler`` when the loop runs
    in the main thread on Unix, unless the application handles SIGTERM: one handler per event
    loop stops every ``process_async`` loop on it; see the module's documentation) and returns
    the count; cancelled (Ctrl-C under ``asyncio.run``),
    it stops claiming, lets running handlers finish for up to ``shutdown_timeout`` (cancelling
    the rest), then raises `asyncio.CancelledError`.
    """
    plan = _plan(
        queue,
        handler,
        want_async=True,
        concurrency=concurrency,
        poll_interval=poll_interval,
        stop_when_idle=stop_when_idle,
        shutdown_timeout=shutdown_timeout,
        lease=lease,
        stop=stop,
    )
    return _Tasks(queue, handler, plan, bool(stop_when_idle)).run(stop)
