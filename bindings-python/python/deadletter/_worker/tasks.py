"""`process_async`, the worker loop of `Queue.process_async` on asyncio: the awaiting coroutine
claims (with ``claim_many``, up to the free handler slots), each message is a task that runs its
handler and heartbeats, and every database call runs in a thread of the loop's own executor. How
the loop behaves (in flight, heartbeats, lost leases, stopping) is told in the package's
docstring."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine
import queue as queues
import threading
from concurrent.futures import Executor, Future
from datetime import datetime
from typing import Any, Callable, Optional, cast

from .._deadletter import MAX_CLAIM_MANY, Message, Queue, WorkerPlan
from .._errors import ConflictError
from .common import (
    LATE_CLAIM,
    LATE_RECORDINGS,
    RECORD_GRACE,
    STOP_CHECK,
    AsyncHandler,
    Outage,
    Seconds,
    T,
    logger,
    outcome,
    plan_of,
    record,
    token,
)
from .sigterm import unwatch_async, watch_async

__all__ = ["process_async"]


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
        self.recording: set[asyncio.Task[Any]] = set()  # tasks whose outcome is being recorded
        self.next_poll = 0.0  # loop.time() of the next claim
        self.last_full = False
        self.stopping = False
        self.reason: Optional[str] = None  # why it stops: "SIGTERM", "stop event"
        self.abandoned = False
        self.handled = 0
        self.ended = 0  # handler runs finished so far (each may have delayed its message)
        self.idle_once = False  # the last poll found the loop idle (stop_when_idle: once more)
        self.outage = Outage(stop_when_idle)
        self.deadline: Optional[float] = None  # loop.time() the shutdown timeout ends
        self.claim_abandoned = False  # the claim in flight at the deadline is left behind

    async def run(self, stop: Optional[asyncio.Event]) -> int:
        loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()  # a handler finished, or stop
        self.stopped = asyncio.Event()  # stop requested
        if stop is not None and stop.is_set():
            return 0
        self.next_poll = loop.time()
        # Threads are made as needed: one per running handler (its heartbeats and ack) and one
        # for the claims, at most.
        self.executor = _Daemons(self.plan.concurrency + 1)
        watch_async(loop, self)
        watcher = asyncio.ensure_future(self._watch(stop)) if stop is not None else None
        cancelled = False
        error: Optional[BaseException] = None
        try:
            try:
                await self._claims(loop)
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
            unwatch_async(loop, self)
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
            # The event is bound to another event loop (it was waited on there) and cannot be
            # awaited here: it is looked at instead.
            while not stop.is_set():
                await asyncio.sleep(STOP_CHECK)
        self._request_stop("stop event")

    def on_sigterm(self) -> None:
        """Stops the loop (deadletter's SIGTERM handler on this event loop calls it)."""
        self._request_stop("SIGTERM")

    def _request_stop(self, reason: str) -> None:
        self.reason = self.reason or reason
        self._set_deadline()
        self.stopping = True
        self.wake.set()
        self.stopped.set()

    def _set_deadline(self) -> None:
        """The shutdown timeout starts (at the first stop, cancellation or end of the claims)."""
        if self.deadline is None:
            self.deadline = asyncio.get_running_loop().time() + self.plan.shutdown_timeout

    def _left(self) -> float:
        """Seconds left of the shutdown timeout."""
        self._set_deadline()
        return max(0.0, cast(float, self.deadline) - asyncio.get_running_loop().time())

    async def _claims(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs `_claim_loop` until it ends; once the loop is stopped or cancelled, a database
        call of the claims still in flight at the shutdown timeout is left behind (tester T9,
        session 13: PostgreSQL's processes stopped, and SIGTERM waited 8 s for the claim's
        connection timeout), any message it claims later left to its lease."""
        claiming = asyncio.ensure_future(self._claim_loop(loop))
        stopped = asyncio.ensure_future(self.stopped.wait())
        try:
            await asyncio.wait({claiming, stopped}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            claiming.cancel()  # `_poll` waits for a claim in flight (its messages are started)
            raise
        finally:
            stopped.cancel()
            if not claiming.done():
                await asyncio.wait({claiming}, timeout=self._left())
            if not claiming.done():
                self.claim_abandoned = True
                claiming.cancel()
                await asyncio.wait({claiming})  # (the executor's thread goes on)
        if not self.claim_abandoned:
            await claiming  # raises its error

    async def _claim_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self.stopping:
            self.wake.clear()
            free = self.plan.concurrency - len(self.tasks)
            ready = max(self.next_poll, self.outage.resume)
            if free > 0 and loop.time() >= ready:
                try:
                    if await self._poll(loop, free):
                        return
                except Exception as exc:  # noqa: BLE001 - retried, or raised after the drain
                    if not self.outage.failed(self.queue, exc, loop.time()):
                        raise
                    continue
                self.outage.over()
                continue
            timeout = max(0.0, ready - loop.time()) if free > 0 else None
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass

    async def _poll(self, loop: asyncio.AbstractEventLoop, free: int) -> bool:
        asked = min(free, MAX_CLAIM_MANY)
        # Read before the claim, and again when a handler ended after the reading
        # (`threads._Threads._poll` says why).
        ended = self.ended
        due = await self._db(self.queue.next_due_at)
        if self.stopping:  # stopped during the reading (`threads._Threads._poll`)
            return False
        claim = asyncio.ensure_future(
            self._db(self.queue.claim_many, asked, lease=self.plan.lease)
        )
        try:
            claimed = await asyncio.shield(claim)
        except asyncio.CancelledError:
            # The claim goes on in its thread: its messages are in flight like the others, unless
            # the loop gives up on it at the shutdown timeout (`_claims`).
            try:
                if not self.claim_abandoned:
                    try:
                        claimed = await claim
                    except Exception:  # noqa: BLE001 - cancelled anyway; nothing was claimed
                        claimed = []
                    for message in claimed:
                        self._start(message)
            finally:
                if not claim.done():
                    claim.add_done_callback(_claimed_late)
            raise
        for message in claimed:
            self._start(message)
        if len(claimed) == asked or self.ended != ended:
            self.last_full, self.next_poll = len(claimed) == asked, loop.time()
            self.idle_once = False
            return False
        if self.stop_when_idle and due is None and not self.tasks:
            if self.idle_once:
                return True
            # The claim may have taken back an expired lease (`threads._Threads._poll`).
            self.idle_once = True
            self.last_full, self.next_poll = False, loop.time()
            return False
        self.idle_once = False
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
            task = asyncio.current_task()
            if work is not None:
                # Recording from the handler's end, even while a heartbeat's extend is still
                # being written: the shutdown timeout does not cancel it then (tester T5).
                work.add_done_callback(lambda _: self._recording(task))
                await self._heartbeats(message, work)
                exc = _exception_of(work)
            self._recording(task)  # (the callback runs later when the work was done at once)
            error, retryable = outcome(message, exc)
            if task in self.recording:
                recorded, retry_after = await self._db(
                    record, self.queue, message, error, retryable
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
                    lease_token=token(message),
                    lease=self.plan.lease,
                )
            except ConflictError as err:
                lost = True
                logger.warning("message %d: lease lost, heartbeats stop: %s", message.id, err)
            except Exception:  # noqa: BLE001 - the next heartbeat tries again
                logger.warning("message %d: heartbeat failed", message.id, exc_info=True)

    def _recording(self, task: Optional[asyncio.Task[Any]]) -> None:
        """``task``'s handler ended: its outcome is written, unless the loop gave up first."""
        if task is not None and not task.done() and not self.abandoned:
            self.recording.add(task)

    def _finished(
        self, task: Optional[asyncio.Task[Any]], recorded: bool, retry_after: Optional[datetime]
    ) -> None:
        if task is not None:
            self.tasks.discard(task)
            self.recording.discard(task)
        self.handled += recorded
        self.ended += 1
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
        """Waits for the running handlers up to the shutdown timeout, then cancels the rest but
        those whose outcome is being recorded (a handler that ended by the timeout has its
        ``succeed`` or ``fail`` written before the loop returns), and waits for those."""
        if not self.tasks:
            return
        try:
            _, late = await asyncio.wait(set(self.tasks), timeout=self._left())
        except asyncio.CancelledError:
            late = set(self.tasks)
            raise
        finally:
            if late:
                self.abandoned = True
                for task in late - self.recording:
                    task.cancel()
        if self.recording:
            _, unwritten = await asyncio.wait(
                set(self.recording), timeout=self._left() + RECORD_GRACE
            )
            if unwritten:  # the database does not answer: left to their leases
                logger.warning(LATE_RECORDINGS, len(unwritten), RECORD_GRACE)
                for task in unwritten:
                    task.cancel()


class _Daemons(Executor):
    """`concurrent.futures.ThreadPoolExecutor`'s work on daemon threads: the interpreter's exit
    joins a ThreadPoolExecutor's threads, so a database call that never returns (PostgreSQL
    hanging: tester T9, session 13) kept the process alive after the loop returned. Threads
    are made as needed, up to ``size``; `shutdown` never waits."""

    def __init__(self, size: int) -> None:
        self.size, self.started = size, 0
        self.lock = threading.Lock()
        self.idle = threading.Semaphore(0)  # threads waiting for a job
        self.jobs: queues.SimpleQueue[Optional[Callable[[], None]]] = queues.SimpleQueue()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def job() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - the awaiting coroutine's
                    future.set_exception(exc)
                else:
                    future.set_result(result)

        self.jobs.put(job)
        if not self.idle.acquire(blocking=False):
            with self.lock:
                if self.started < self.size:
                    self.started += 1
                    name = f"deadletter-db_{self.started - 1}"  # as ThreadPoolExecutor names them
                    threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            job()
            del job  # its future and result, before waiting for the next one
            self.idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Ends the threads once their call returned (at once for the idle ones)."""
        with self.lock:
            for _ in range(self.started):
                self.jobs.put(None)


def _claimed_late(claim: asyncio.Future[list[Message]]) -> None:
    """Logs the messages a claim the loop gave up on took: they are left to their leases."""
    if not claim.cancelled() and claim.exception() is None and claim.result():
        logger.warning(LATE_CLAIM, [m.id for m in claim.result()])


def _exception_of(work: asyncio.Future[object]) -> Optional[BaseException]:
    """What the handler's task raised (a `CancelledError` when it was cancelled), or None."""
    if work.cancelled():
        return asyncio.CancelledError()
    return work.exception()


def process_async(
    queue: Queue,
    handler: AsyncHandler,
    *,
    concurrency: Optional[int] = None,
    poll_interval: Optional[Seconds] = None,
    stop_when_idle: bool = False,
    shutdown_timeout: Optional[Seconds] = None,
    lease: Optional[Seconds] = None,
    stop: Optional[asyncio.Event] = None,
) -> Coroutine[Any, Any, int]:
    """`Queue.process_async`: validates at once, then returns the coroutine of the loop.

    It runs at most ``concurrency`` handler tasks; every database call runs in a thread of its
    own executor (not the default one that ``asyncio.to_thread`` uses, which handlers may fill),
    none on the event loop. It ends like `process` (``stop_when_idle``,
    ``stop``: an `asyncio.Event`, SIGTERM through ``loop.add_signal_handler`` when the loop runs
    in the main thread on Unix, unless the application handles SIGTERM: one handler per event
    loop stops every ``process_async`` loop on it; see `sigterm`) and returns
    the count; cancelled (Ctrl-C under ``asyncio.run``),
    it stops claiming, lets running handlers finish for up to ``shutdown_timeout`` (cancelling
    the rest), then raises `asyncio.CancelledError`. The shutdown timeout counts from the stop,
    a claim in flight included: one the database does not answer by then is left in its
    executor thread (`_Tasks._claims`); outcomes being written get `common.RECORD_GRACE` more.
    """
    plan = plan_of(
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
