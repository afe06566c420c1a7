"""What both worker loops share: `PermanentError`, the validation of their arguments (the core's
`WorkerPlan` and the Python-only ones, reported together), and what becomes of a handler's result
(the error text, the log line, the ``succeed`` or ``fail`` that records it)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import traceback
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any, Callable, Optional, TypeVar, Union, cast

from .._deadletter import Message, Queue, WorkerPlan, failure_text
from .._errors import ConflictError, FieldError, StoreError, ValidationError

__all__ = [
    "LATE_CLAIM",
    "LATE_RECORDINGS",
    "RECORD_GRACE",
    "STOP_CHECK",
    "AsyncHandler",
    "Handler",
    "Outage",
    "PermanentError",
    "Seconds",
    "T",
    "logger",
    "outcome",
    "plan_of",
    "record",
    "token",
]

logger = logging.getLogger("deadletter")

STOP_CHECK = 0.1
"""How often, in seconds, the thread that called `process` looks whether the loop should stop
(a signal, the ``stop`` event) or has ended. It sleeps in between rather than waiting on a lock:
a signal handler may run, or ``KeyboardInterrupt`` be raised, at any point of that thread, and
neither is safe inside ``threading.Condition.wait``."""

LOG_TEXT_MAX = 4096
"""The most characters of a handler's error, and of each part of its traceback, that the log
shows; the message's ``errors`` keep the error as stored (up to ``MAX_ERROR_BYTES``)."""

Handler = Callable[[Message], object]
AsyncHandler = Callable[[Message], Awaitable[object]]
Seconds = Union[int, float, timedelta]
T = TypeVar("T")


class PermanentError(Exception):
    """Raised by a handler of `Queue.process` or `Queue.process_async` (this class or a
    subclass): the message fails with ``retryable=False``, so it is dead at once, whatever retries
    it has left. Its error is ``"<class name>: <message>"``, as for any other exception; raise
    it for a failure that retrying cannot cure (a malformed payload, a refused request)."""

    __module__ = "deadletter"


# ---------------------------------------------------------------------------------------------
# Validation: the core's options (WorkerPlan) and the Python-only arguments, reported together


def describe(value: object) -> str:
    """``an int``, ``a list``: a value's type, as the native module's messages name it."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in tuple('aeiou') else 'a'} {name}"


def is_async(handler: object) -> bool:
    """Whether calling ``handler`` makes a coroutine (an ``async def`` function or method, a
    ``functools.partial`` of one, or an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)
    )


def plan_of(
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
        reject("handler", f"must be a callable taking a Message, got {describe(handler)}")
    elif want_async and not is_async(handler):
        reject("handler", "must be an async def function (use process for a plain function)")
    elif not want_async and is_async(handler):
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
        reject("stop_when_idle", f"must be a bool, got {describe(stop_when_idle)}")
    event = asyncio.Event if want_async else threading.Event
    if stop is not None and not isinstance(stop, event):
        name = f"{event.__module__}.{event.__qualname__}"
        reject("stop", f"must be a {name} or None, got {describe(stop)}")
    if fields or plan is None:
        described = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
        raise ValidationError(f"validation failed: {described}", fields)
    return plan


def failure(exc: BaseException) -> str:
    """The error recorded for a handler that raised ``exc``."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not lose the failure
        message = "<the exception's str() failed>"
    return failure_text(type(exc).__name__, message)


def capped(text: str) -> str:
    """``text`` cut at `LOG_TEXT_MAX` characters, saying how many more there were (a final
    newline is kept)."""
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    if len(body) <= LOG_TEXT_MAX:
        return text
    return f"{body[:LOG_TEXT_MAX]}… [{len(body) - LOG_TEXT_MAX} more characters]{end}"


def outcome(message: Message, exc: Optional[BaseException]) -> tuple[Optional[str], bool]:
    """(error, retryable) for a handler that raised ``exc``, logged at INFO with its traceback
    (the error and each part of the traceback capped: an exception's text may be megabytes);
    (None, True) when it returned."""
    if exc is None:
        return None, True
    error = failure(exc)
    parts = traceback.format_exception(type(exc), exc, exc.__traceback__)
    trace = "".join(capped(part) for part in parts).rstrip("\n")
    logger.info("message %d: handler raised %s\n%s", message.id, capped(error), trace)
    return error, not isinstance(exc, PermanentError)


RECORD_RETRY_FIRST = 0.1
"""Seconds before `record` writes an outcome again after a `StoreError`, doubling up to
``RECORD_RETRY_MAX``."""
RECORD_RETRY_MAX = 2.0


def record(
    queue: Queue, message: Message, error: Optional[str], retryable: bool
) -> tuple[bool, Optional[datetime]]:
    """Acks or fails ``message`` with its lease token; returns (recorded, retry_after).

    A `StoreError` (the database unreachable for a moment: a PostgreSQL restart) is logged and
    the write tried again, 0.1 s later, doubling up to 2 s, for at most half the lease the claim
    granted (30 s at most): the lease, extended every half lease while the handler ran, lasts
    that long still, so no other worker has the message meanwhile (tester T8, session 13: an ack
    during a 0.26 s restart was given up under a 1.5 s lease, and the message counted a failed
    attempt; with ``max_retries=1`` it died though its handler succeeded). An ack whose
    connection broke as it committed may have landed: its retry's `ConflictError` with status
    ``succeeded`` counts as recorded. A lost lease (`ConflictError`), a closed database, or a
    store still failing past that time is logged, and the message left to its lease (claimed
    again once it expires, as a failed attempt)."""
    granted = (
        (message.lease_expires_at - message.updated_at).total_seconds()
        if message.lease_expires_at is not None
        else 0.0
    )
    deadline = time.monotonic() + min(max(granted, 0.0) / 2, 30.0)
    wait, retried = RECORD_RETRY_FIRST, False
    what = "success" if error is None else "failure"
    while True:
        try:
            if error is None:
                queue.succeed(message.id, lease_token=message.lease_token)
                return True, None
            failed = queue.fail(
                message.id, error, lease_token=message.lease_token, retryable=retryable
            )
            return True, failed.retry_after
        except ConflictError as err:
            if retried and error is None and err.status == "succeeded":
                return True, None  # the first ack landed as its connection broke
            logger.warning(
                "message %d: the handler's %s was not recorded: %s", message.id, what, err
            )
        except StoreError as err:
            if not queue.closed and time.monotonic() + wait <= deadline:
                logger.warning(
                    "message %d: recording the handler's %s failed, trying again in %g s: %s",
                    message.id,
                    what,
                    wait,
                    err,
                )
                time.sleep(wait)
                wait, retried = min(wait * 2, RECORD_RETRY_MAX), True
                continue
            logger.exception(LEFT, message.id)
        except Exception:
            logger.exception(LEFT, message.id)
        return False, None


RECORD_GRACE = 2.0
"""Seconds past the shutdown timeout a loop waits for the outcomes being recorded (handlers
that ended by then) before it returns; the messages of those still unwritten are left to their
leases."""

LATE_RECORDINGS = (
    "returning with %d outcomes still being recorded %g s past the shutdown timeout (the "
    "database does not answer): their messages are left to their leases"
)
"""The log line of a loop that returns without the outcomes being recorded."""

LATE_CLAIM = (
    "a claim that returned after the loop stopped took messages %s: they are left to their "
    "leases (claimed again once they expire, as a failed attempt)"
)
"""The log line of a claim abandoned at the shutdown timeout that returned messages later."""

LEFT = (
    "message %d: recording the handler's outcome failed; the message is left to its lease "
    "(claimed again once it expires, as a failed attempt)"
)
"""The log line of an outcome `record` could not write."""


def token(message: Message) -> str:
    """The lease token of a message the loop claimed (never None)."""
    return cast(str, message.lease_token)



class Outage:
    """The claims that failed in a row with a `StoreError` while a loop runs as a service (tester
    T6, session 13: a PostgreSQL restart ended ``process`` with messages pending, and a service
    had no worker until something restarted it; README promises that the next call after a
    broken connection works on a new one). Each failure is logged as a warning and the next
    claim waits ``FIRST`` seconds, doubling up to ``CAP``; the first claim that works logs that
    claims work again. A drain (``stop_when_idle``), which ends, stops on the error instead and
    raises it; so does any loop once the database is closed (no store comes back then), and on
    any other exception (a bug: retrying would hide it).

    The wait logged is the wait there is: no claim before `resume` (in the loop's own clock),
    whatever else moves the loop's next poll up (a handler ending frees a slot; tester T9,
    session 13: that brought the next claim at once, so the wait doubled to 16 s within 50 ms,
    and nothing was claimed for 12 s after PostgreSQL came back)."""

    FIRST = 0.5
    CAP = 30.0

    def __init__(self, stop_when_idle: bool) -> None:
        self.stop_when_idle = stop_when_idle
        self.failures = 0
        self.resume = float("-inf")  # no claim before this instant of the loop's clock

    def failed(self, queue: Queue, exc: Exception, now: float) -> bool:
        """After a claim raised ``exc`` at ``now``: True, the next claim waits till `resume`;
        False: stop and raise it."""
        if self.stop_when_idle or not isinstance(exc, StoreError) or queue.closed:
            return False
        self.failures += 1
        wait = min(self.FIRST * 2.0 ** min(self.failures - 1, 16), self.CAP)
        self.resume = now + wait
        logger.warning(
            "claiming failed (%d in a row), trying again in %g s: %s", self.failures, wait, exc
        )
        return True

    def over(self) -> None:
        """A claim worked: logs that claims work again after failures."""
        if self.failures:
            logger.warning("claiming works again after %d failures", self.failures)
            self.failures = 0
