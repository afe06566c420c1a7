"""`process`, the worker loop of `Queue.process` on threads: a dispatcher thread claims (with
``claim_many``, up to the free handler slots) and heartbeats, handler threads run the handler and
record its outcome, and the calling thread watches for signals and the ``stop`` event. How the
loop behaves (in flight, heartbeats, lost leases, stopping) is told in the package's docstring."""

from __future__ import annotations

import inspect
import queue as queues
import signal
import threading
import time
from datetime import datetime
from typing import Any, Optional

from .._deadletter import MAX_CLAIM_MANY, Message, Queue, WorkerPlan
from .._errors import ConflictError
from .common import (
    LATE_CLAIM,
    LATE_RECORDINGS,
    RECORD_GRACE,
    STOP_CHECK,
    Handler,
    Outage,
    Seconds,
    logger,
    outcome,
    plan_of,
    record,
    token,
)
from .sigterm import unwatch_threads, watch_threads

__all__ = ["process"]


class _Slot:
    """One claim in flight: a message under one lease token, with its own heartbeats. The same
    message may be in two slots at once: a process paused past its lease (SIGSTOP, a VM pause)
    finds its message reaped and claims it again while the first handler still runs; each slot
    keeps to its own token, so the first run's outcome is refused and the second's recorded."""

    __slots__ = ("done", "lock", "lost", "message", "next_beat", "recording")

    def __init__(self, message: Message, next_beat: float) -> None:
        self.message = message
        self.next_beat = next_beat  # time.monotonic() of the next heartbeat (dispatcher only)
        self.lock = threading.Lock()  # serializes the heartbeats with the ack
        self.lost = False  # extend raised ConflictError
        self.done = False  # the handler finished: no more heartbeats
        self.recording = False  # its outcome is being recorded (guarded by the loop's cond)


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
        self.inflight: set[_Slot] = set()  # one per claim, never keyed by message id
        self.threads: list[threading.Thread] = []
        self.next_poll = time.monotonic()
        self.last_full = False  # the last claim filled every slot it asked for
        self.stopping = False  # no more claims
        self.abandoned = False  # process returned: record nothing more
        self.handled = 0
        self.ended = 0  # handler runs finished so far (each may have delayed its message)
        self.idle_once = False  # the last poll found the loop idle (stop_when_idle: once more)
        self.outage = Outage(stop_when_idle)  # the dispatcher's
        self.stop_event: Optional[threading.Event] = None  # `stop`, read by the dispatcher too
        self.error: Optional[BaseException] = None
        self.work: queues.SimpleQueue[Optional[_Slot]] = queues.SimpleQueue()
        self.finished = threading.Event()  # the dispatcher returned
        # Set by the signal handlers (which take no lock) and the calling thread:
        self.signalled: Optional[str] = None  # why the loop stops
        self.returning = False  # run() is returning: a signal is passed on
        self.pending_signal: Optional[int] = None
        self.deadline: Optional[float] = None  # time.monotonic() the shutdown timeout ends

    # -- the calling thread ---------------------------------------------------------------------

    def run(self, stop: Optional[threading.Event]) -> int:
        self.stop_event = stop
        restore: list[tuple[int, Any]] = []
        main = threading.current_thread() is threading.main_thread()
        try:
            watch_threads(self, main)
            if main:
                restore = self._install_sigint_handler()
            dispatcher = threading.Thread(
                target=self._dispatch, name="deadletter-dispatcher", daemon=True
            )
            reason: Optional[str] = None
            try:
                # Inside the try: `start` waits for the new thread, which may already have claimed
                # and run a handler whose Ctrl-C (or the application's KeyboardInterrupt) lands
                # here, in the calling thread, before `start` returns.
                dispatcher.start()
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
            unwatch_threads(self, main)
            self._abandon()
            self._await_recordings()
            if self.pending_signal is not None:  # arrived as the loop returned: passed on
                signal.raise_signal(self.pending_signal)
        if self.error is not None:
            raise self.error
        with self.cond:
            return self.handled

    def _install_sigint_handler(self) -> list[tuple[int, Any]]:
        """SIGINT, unless someone else handles it, stops the loop while it runs; returns the
        handler to restore. (SIGTERM: `watch_threads`.)"""
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
        # Claims stop before the log says so: a handler that waits for that line (or a second
        # Ctrl-C it causes) must not find the loop claiming again meanwhile.
        self.signalled = self.signalled or reason
        self._request_stop()
        with self.cond:
            running = len(self.inflight)
        logger.info(
            "stopping (%s): no more claims; waiting up to %g s for %d running handlers",
            reason,
            self.plan.shutdown_timeout,
            running,
        )
        self.deadline = deadline = time.monotonic() + self.plan.shutdown_timeout
        while not self.finished.is_set() and time.monotonic() < deadline:
            time.sleep(min(STOP_CHECK, max(0.0, deadline - time.monotonic())))

    def _request_stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def _await_recordings(self) -> None:
        """Waits for the outcomes being recorded: a handler that ended by the shutdown timeout
        has its ``succeed`` or ``fail`` written before `process` returns (and the process,
        maybe, exits), for up to `RECORD_GRACE` seconds past the shutdown timeout: a database
        that does not answer (tester T9, session 13: PostgreSQL's processes stopped, SIGTERM
        took 40 s) leaves them to their leases. Polled, as `run` does: a signal may interrupt
        this thread."""
        until = (self.deadline or time.monotonic()) + RECORD_GRACE
        while True:
            with self.cond:
                left = sum(slot.recording for slot in self.inflight)
            if not left:
                return
            if time.monotonic() >= until:
                logger.warning(LATE_RECORDINGS, left, RECORD_GRACE)
                return
            time.sleep(0.01)

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
            # Heartbeats before claims: after a pause past the lease, a lease nobody reaped yet
            # is extended rather than reaped by this loop's own claim (one attempt lost).
            self._heartbeat(now)
            with self.cond:
                free = self.plan.concurrency - len(self.inflight)
                ready = max(self.next_poll, self.outage.resume)
                poll = deadline is None and free > 0 and now >= ready
            if poll:
                try:
                    if self._poll(free):
                        return
                except Exception as exc:  # noqa: BLE001 - retried, or raised after the drain
                    if not self.outage.failed(self.queue, exc, time.monotonic()):
                        self.error = exc
                        self._request_stop()
                    continue
                self.outage.over()
                continue
            with self.cond:
                wake = min((s.next_beat for s in self.inflight), default=float("inf"))
                if deadline is not None:
                    wake = min(wake, deadline)
                elif len(self.inflight) < self.plan.concurrency:
                    wake = min(wake, max(self.next_poll, self.outage.resume))
                if not self.stopping or deadline is not None:
                    self.cond.wait(max(0.0, wake - time.monotonic()))

    def _poll(self, free: int) -> bool:
        """Claims up to ``free`` messages and starts them; True when ``stop_when_idle`` ends the
        loop (nothing due, in flight or delayed)."""
        asked = min(free, MAX_CLAIM_MANY)
        # Read before the claim: a message delayed now is either taken by this claim (due by
        # then) or waited for. Read after it, a message that became due in between would be
        # neither (next_due_at only sees instants still ahead) and would wait a poll interval.
        with self.cond:
            ended = self.ended
        due = self.queue.next_due_at()
        with self.cond:
            if self.stopping:  # stopped during the reading, "no more claims" maybe logged
                return False
        if self.stop_event is not None and self.stop_event.is_set():
            # Set since the last claim: no more claims, without waiting for the calling thread
            # to see it (it looks every STOP_CHECK; with fast handlers hundreds more ran).
            self._request_stop()
            return False
        claimed = self.queue.claim_many(asked, lease=self.plan.lease)
        with self.cond:
            if self.abandoned:  # process returned while the claim waited for the database
                if claimed:
                    logger.warning(LATE_CLAIM, [m.id for m in claimed])
                return True
        for message in claimed:
            self._start(message)
        if len(claimed) == asked:
            with self.cond:
                self.last_full, self.next_poll = True, time.monotonic()
                self.idle_once = False
            return False
        wait = self.plan.idle_wait(due)  # outside the lock: it reads the database's clock
        # One hold of the lock from the check to the wait set: a handler ending in between
        # would move the next poll up to its retry, and the wait set after would undo it.
        with self.cond:
            if self.ended != ended:
                # A handler ended after the reading: a failure delays its message to an
                # instant the reading did not see (stop_when_idle stopped with it pending,
                # the webhook demo's CI failure, session 12). Read again at once.
                self.last_full, self.next_poll = False, time.monotonic()
                self.idle_once = False
                return False
            if self.stop_when_idle and due is None and not self.inflight:
                if self.idle_once:
                    return True
                # Idle by this reading; but the claim itself may have taken back an expired
                # lease, delaying its message where the reading did not see it (a drain after
                # a crash stopped with it pending: tester T5, session 12). Poll once more: its
                # reading sees what this claim did.
                self.idle_once = True
                self.last_full, self.next_poll = False, time.monotonic()
                return False
            self.idle_once = False
            self.last_full, self.next_poll = False, time.monotonic() + wait
        return False

    def _start(self, message: Message) -> None:
        slot = _Slot(message, time.monotonic() + self.plan.heartbeat)
        with self.cond:
            self.inflight.add(slot)
            if len(self.threads) < len(self.inflight):
                name = f"deadletter-handler-{len(self.threads) + 1}"
                thread = threading.Thread(target=self._work, name=name, daemon=True)
                self.threads.append(thread)
                thread.start()
        self.work.put(slot)

    def _heartbeat(self, now: float) -> None:
        with self.cond:
            due = [s for s in self.inflight if s.next_beat <= now]
        for slot in due:
            with slot.lock:
                if not (slot.done or slot.lost):
                    self._extend(slot)
            slot.next_beat = time.monotonic() + self.plan.heartbeat

    def _extend(self, slot: _Slot) -> None:
        message = slot.message
        try:
            self.queue.extend(message.id, lease_token=token(message), lease=self.plan.lease)
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
        error, retryable = outcome(message, exc)
        recorded, retry_after = False, None
        # Recording from here, before the slot's lock: a heartbeat's extend may hold it (waiting
        # for the database) past the shutdown timeout, and the outcome of a handler that ended
        # by then is written all the same (tester T5, session 12: the ack was lost).
        with self.cond:
            slot.recording = not self.abandoned
        with slot.lock:
            slot.done = True
            if slot.recording:
                recorded, retry_after = record(self.queue, message, error, retryable)
        self._finished(slot, recorded, retry_after)

    def _finished(self, slot: _Slot, recorded: bool, retry_after: Optional[datetime]) -> None:
        wake_in: Optional[float] = None
        if retry_after is not None:
            try:
                wake_in = self.plan.idle_wait(retry_after)
            except Exception:  # noqa: BLE001 - a failing clock: the next poll sees it
                wake_in = None
        with self.cond:
            self.inflight.discard(slot)
            self.handled += recorded
            self.ended += 1
            now = time.monotonic()
            if self.last_full or (self.stop_when_idle and not self.inflight):
                self.next_poll = now
            elif wake_in is not None:
                self.next_poll = min(self.next_poll, now + wake_in)
            self.cond.notify_all()


def process(
    queue: Queue,
    handler: Handler,
    *,
    concurrency: Optional[int] = None,
    poll_interval: Optional[Seconds] = None,
    stop_when_idle: bool = False,
    shutdown_timeout: Optional[Seconds] = None,
    lease: Optional[Seconds] = None,
    stop: Optional[threading.Event] = None,
) -> int:
    """`Queue.process`: runs ``handler`` on each claimed message, on up to ``concurrency``
    daemon threads, until stopped; returns how many handler runs it recorded the outcome of with
    ``succeed`` or ``fail`` (a message run three times counts 3).

    It stops when ``stop_when_idle`` is true and two polls in a row find nothing due, nothing in
    flight and nothing delayed (``queue.next_due_at()`` is None: a claim may take back an expired
    lease, which delays its message); when ``stop`` (a `threading.Event`) is set (no claim after
    the dispatcher's next look at it); on SIGTERM unless the application handles it (see `sigterm`: one
    handler, installed from the main thread, stops every loop of the process); on SIGINT (Ctrl-C)
    when called from the main thread while Python's default handler is in place (installed for
    the call, then restored; a ``KeyboardInterrupt`` from another handler stops it too); all
    noticed within 0.1 s. A second Ctrl-C while handlers finish raises ``KeyboardInterrupt`` at
    once. It returns by ``shutdown_timeout`` after the stop (plus `common.RECORD_GRACE` for the
    outcomes being written), whatever a database call in flight does: its threads are daemons.
    A `StoreError` of ``claim_many`` or ``next_due_at`` is logged and the claim tried again
    later, no sooner than the wait logged (`common.Outage`); with ``stop_when_idle``, once the
    database is closed, and for any other error of theirs, the loop stops the same way, then
    the error is raised.
    """
    plan = plan_of(
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
