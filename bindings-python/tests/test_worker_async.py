"""Queue.process_async, the asyncio worker loop: the same outcomes as Queue.process (acks,
failure texts, PermanentError, heartbeats, idle waits, concurrency), every database call off the
event loop, cancellation that lets running handlers finish and then raises CancelledError, a
stop event, and validation before anything is claimed. SIGTERM is tested with the threaded loop,
in test_worker.py (both modes)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, Callable, TypeVar

import pytest
from virtual_clock import T0, Clock

import deadletter

EVENT_TIMEOUT = 30.0
T = TypeVar("T")


def seeded(
    payloads: list[str], **open_options: Any
) -> tuple[deadletter.Database, deadletter.Queue]:
    db = deadletter.open(**open_options)
    q = db.queue("jobs")
    q.enqueue_many(payloads)
    return db, q


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Runs ``main()`` under asyncio.run, failing (not hanging) past EVENT_TIMEOUT."""

    async def bounded() -> T:
        return await asyncio.wait_for(main(), EVENT_TIMEOUT)

    return asyncio.run(bounded())


def test_returning_acks_and_the_count_is_returned() -> None:
    db, q = seeded(["a", "b", "c"])
    seen: list[str] = []

    async def handler(m: deadletter.Message) -> None:
        await asyncio.sleep(0)
        seen.append(m.payload)

    assert run(lambda: q.process_async(handler, stop_when_idle=True)) == 3
    assert seen == ["a", "b", "c"]
    assert [(m.status, m.retry_count) for m in q.list()] == [("succeeded", 0)] * 3
    db.close()


def test_an_exception_is_a_retry_with_its_text_and_a_permanent_error_a_dead_letter() -> None:
    clock = Clock()
    db, q = seeded([], clock=clock)
    q.enqueue("retry", max_retries=5)
    q.enqueue("permanent", max_retries=5)
    stop = asyncio.Event()

    async def handler(m: deadletter.Message) -> None:
        if m.payload == "retry":
            raise ConnectionResetError("peer went away")
        stop.set()
        raise deadletter.PermanentError("malformed payload")

    assert run(lambda: q.process_async(handler, stop=stop)) == 2
    retry, permanent = q.list()
    assert (retry.status, retry.retry_count, retry.retry_after) == (
        "pending",
        1,
        T0 + timedelta(seconds=2),
    )
    error = "ConnectionResetError: peer went away"
    assert retry.errors == [{"attempt": 1, "error": error, "at": T0}]
    assert (permanent.status, permanent.retry_count) == ("dead", 1)
    assert permanent.errors[0]["error"] == "PermanentError: malformed payload"
    db.close()


def test_a_handler_that_sleeps_past_its_lease_keeps_it_through_heartbeats() -> None:
    db = deadletter.open()
    q = db.queue("jobs", backoff=deadletter.Backoff(initial=0, cap=0))
    q.enqueue("slow")
    runs: list[int] = []

    during: list[deadletter.Message] = []

    async def handler(m: deadletter.Message) -> None:
        runs.append(m.id)
        # Three leases, blocking the event loop's only default-executor thread all along: the
        # loop's heartbeats do not queue behind it.
        await asyncio.to_thread(time.sleep, 4.5)
        during.append(q.get(m.id))

    async def main() -> int:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        return await q.process_async(
            handler, concurrency=2, poll_interval=0.05, lease=lease, stop_when_idle=True
        )

    lease = 1.5
    handled = run(main)
    assert handled == 1 and runs == [1]
    [m] = q.list()
    assert (m.status, m.retry_count, m.errors) == ("succeeded", 0, [])
    [seen] = during
    assert seen.status == "processing" and seen.lease_expires_at is not None
    assert seen.lease_expires_at - seen.updated_at == timedelta(seconds=lease)  # extended ...
    assert seen.updated_at > m.created_at + timedelta(seconds=lease)  # ... after the first lease
    db.close()


def test_concurrency_runs_that_many_handlers_at_once_and_no_more() -> None:
    db, q = seeded([str(n) for n in range(6)])
    running, peak = [0], [0]

    async def main() -> int:
        full = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            if running[0] == 3:
                full.set()
            await full.wait()  # never set unless 3 run at once: the test times out
            running[0] -= 1
            if running[0] == 0:
                full.clear()

        return await q.process_async(handler, concurrency=3, stop_when_idle=True)

    assert run(main) == 6
    assert peak == [3]
    db.close()


def test_an_idle_loop_wakes_when_due_and_does_not_spin() -> None:
    claims = [0]

    def random() -> float:  # asked once per claim_many
        claims[0] += 1
        return 0.5

    db, q = seeded([], random=random)
    q.enqueue("soon", delay=0.3)
    started = time.monotonic()
    assert run(lambda: q.process_async(_noop, poll_interval=5, stop_when_idle=True)) == 1
    assert 0.25 <= time.monotonic() - started < 2.5  # the poll interval alone would take 5 s

    q.enqueue("far away", delay=3600)
    claims[0] = 0

    def three_claims() -> None:  # in a thread, as the loop's claims
        deadline = time.monotonic() + EVENT_TIMEOUT
        while claims[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.001)

    async def idle_for_three_claims() -> int:
        stop = asyncio.Event()
        waiter = asyncio.get_running_loop().run_in_executor(None, three_claims)
        waiter.add_done_callback(lambda _: stop.set())
        return await q.process_async(_noop, poll_interval=0.2, stop=stop)

    started = time.monotonic()
    assert run(idle_for_three_claims) == 0
    took = time.monotonic() - started
    assert claims[0] >= 3
    # Three claims take two poll intervals at least (a spinning loop makes thousands a second),
    # and not ten times that; the test counted the claims of a 1 s wait before, at least 2, which
    # a stall of the loop of 0.8 s on a loaded machine failed.
    assert 0.39 <= took < 4.0, took
    db.close()


def test_a_drain_after_a_crash_waits_for_the_lease_its_own_claim_took_back() -> None:
    # As in test_worker.py: the drain's own claim took back an expired lease, delaying the
    # message where the poll's reading did not see it, and stop_when_idle returned.
    db, q = seeded([])
    q.set_settings(backoff=deadletter.Backoff(initial=0.05, cap=1))
    m = q.enqueue("x")
    q.claim(lease=0.1)
    time.sleep(0.2)  # the crashed worker's lease ran out
    assert run(lambda: q.process_async(_noop, stop_when_idle=True)) == 1
    assert (q.get(m.id).status, q.get(m.id).retry_count) == ("succeeded", 1)
    db.close()


def test_an_ack_waiting_for_a_heartbeat_at_the_shutdown_timeout_is_written() -> None:
    # As in test_worker.py: the handler returned while a heartbeat's extend was being written,
    # the shutdown timeout passed, and the task was cancelled before its ack.
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["slow beat"])
    extending = threading.Event()
    stopped = threading.Event()

    class SlowExtend:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def extend(self, *args: Any, **kwargs: Any) -> Any:  # in a thread of the executor
            extending.set()
            stopped.wait(EVENT_TIMEOUT)
            time.sleep(0.5)  # past the shutdown timeout (0 s)
            return q.extend(*args, **kwargs)

    async def main() -> int:
        stop = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            await asyncio.get_running_loop().run_in_executor(None, extending.wait, EVENT_TIMEOUT)
            stop.set()
            stopped.set()

        options: dict[str, Any] = {"poll_interval": None, "stop_when_idle": False, "stop": stop}
        plan = plan_of(
            q, handler, want_async=True, concurrency=1, shutdown_timeout=0, lease=0.3, **options
        )
        return await _Tasks(SlowExtend(), handler, plan, False).run(stop)  # type: ignore[arg-type]

    assert run(main) == 1
    assert [m.status for m in q.list()] == ["succeeded"]
    db.close()


def test_a_failure_that_ends_between_the_reading_and_the_claim_is_waited_for() -> None:
    # As in test_worker.py: a handler failing between a poll's next_due_at and its claim
    # delayed its message where the reading did not see it, and stop_when_idle returned.
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["flaky"])
    q.set_settings(backoff=deadletter.Backoff(initial=0.05, cap=1))
    go = threading.Event()
    attempts: list[int] = []

    async def handler(m: deadletter.Message) -> None:
        attempts.append(m.retry_count)
        if len(attempts) == 1:
            await asyncio.get_running_loop().run_in_executor(None, go.wait, EVENT_TIMEOUT)
            raise RuntimeError("first attempt")

    class FailsAfterReading:
        raced = False

        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def next_due_at(self) -> Any:  # in a thread of the loop's executor
            due = q.next_due_at()
            if attempts and not self.raced:  # a reading taken while the handler runs
                self.raced = True
                go.set()
                deadline = time.monotonic() + EVENT_TIMEOUT
                while loop.tasks and time.monotonic() < deadline:  # until the failure ended
                    time.sleep(0.001)
                assert not loop.tasks
            return due

    options: dict[str, Any] = {"shutdown_timeout": None, "lease": None, "stop": None}
    plan = plan_of(
        q, handler, want_async=True, concurrency=2, poll_interval=0.05, stop_when_idle=True,
        **options,
    )
    loop = _Tasks(FailsAfterReading(), handler, plan, True)  # type: ignore[arg-type]
    assert run(lambda: loop.run(None)) == 2
    assert attempts == [0, 1]
    assert [m.status for m in q.list()] == ["succeeded"]
    db.close()


def test_a_stop_while_a_poll_reads_next_due_at_claims_nothing_more() -> None:
    # As in test_worker.py: a stop that came while a poll read next_due_at still let its claim
    # go on, and the claimed message ran after the loop stopped claiming.
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["a"])
    ran: list[str] = []

    async def handler(m: deadletter.Message) -> None:
        ran.append(m.payload)

    class StopsDuringTheReading:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def next_due_at(self) -> Any:  # in a thread of the loop's executor
            events[0].call_soon_threadsafe(loop.on_sigterm)  # as deadletter's SIGTERM handler does
            deadline = time.monotonic() + EVENT_TIMEOUT
            while not loop.stopping and time.monotonic() < deadline:
                time.sleep(0.001)
            assert loop.stopping
            return q.next_due_at()

    options: dict[str, Any] = {"shutdown_timeout": None, "lease": None, "stop": None}
    plan = plan_of(
        q, handler, want_async=True, concurrency=1, poll_interval=0.05, stop_when_idle=False,
        **options,
    )
    loop = _Tasks(StopsDuringTheReading(), handler, plan, False)  # type: ignore[arg-type]
    events: list[asyncio.AbstractEventLoop] = []

    async def main() -> int:
        events.append(asyncio.get_running_loop())
        return await asyncio.wait_for(loop.run(None), EVENT_TIMEOUT)

    assert run(main) == 0
    assert ran == []
    [m] = q.list()
    assert (m.status, m.lease_token, m.retry_count) == ("pending", None, 0)
    db.close()


def test_an_outcome_being_recorded_at_the_shutdown_timeout_is_written_before_the_loop_returns() -> (
    None
):
    # As in test_worker.py: the ack under way as the shutdown timeout passed was cancelled with
    # the handlers still running, and process_async returned 0 while it went on in its thread.
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["a"])
    returned = threading.Event()
    events: list[asyncio.AbstractEventLoop] = []

    class SlowAck:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def succeed(self, id: int, *, lease_token: str) -> Any:  # in a thread of the executor
            events[0].call_soon_threadsafe(loop.on_sigterm)
            deadline = time.monotonic() + EVENT_TIMEOUT
            while not loop.abandoned and time.monotonic() < deadline:  # past the timeout...
                time.sleep(0.001)
            returned.wait(0.5)  # ... and returned, or did not within 0.5 s
            return q.succeed(id, lease_token=lease_token)

    options: dict[str, Any] = {"lease": None, "stop": None}
    plan = plan_of(
        q, _noop, want_async=True, concurrency=1, poll_interval=0.05, stop_when_idle=False,
        shutdown_timeout=0, **options,
    )
    loop = _Tasks(SlowAck(), _noop, plan, False)  # type: ignore[arg-type]

    async def main() -> int:
        events.append(asyncio.get_running_loop())
        return await asyncio.wait_for(loop.run(None), EVENT_TIMEOUT)

    try:
        handled = run(main)
        status = q.get(1).status
    finally:
        returned.set()
    assert (handled, status) == (1, "succeeded")
    db.close()


async def _noop(m: deadletter.Message) -> None:
    pass


def test_database_calls_run_off_the_event_loop_in_the_loops_own_threads() -> None:
    threads: list[threading.Thread] = []

    def random() -> float:  # called inside claim_many and fail, in the calling thread
        threads.append(threading.current_thread())
        return 0.5

    db, q = seeded(["a", "b"], random=random)

    async def handler(m: deadletter.Message) -> None:
        if m.payload == "b":
            raise deadletter.PermanentError("b")

    async def main() -> tuple[int, threading.Thread]:
        handled = await q.process_async(handler, stop_when_idle=True)
        return handled, threading.current_thread()

    handled, loop_thread = run(main)
    assert handled == 2
    assert len(threads) >= 3  # claims, and the fail of "b"
    assert loop_thread not in threads
    assert {t.name.split("_")[0] for t in threads} == {"deadletter-db"}
    db.close()


def test_cancelling_lets_running_handlers_finish_then_raises_cancelled_error() -> None:
    db, q = seeded(["a", "b", "c", "d"])
    finished: list[str] = []

    async def main() -> None:
        both = asyncio.Event()
        started: list[str] = []

        async def handler(m: deadletter.Message) -> None:
            started.append(m.payload)
            if len(started) == 2:
                both.set()
            await asyncio.sleep(0.3)
            finished.append(m.payload)

        task = asyncio.ensure_future(q.process_async(handler, concurrency=2))
        await both.wait()
        task.cancel()  # what Ctrl-C does to the main task under asyncio.run
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    assert sorted(finished) == ["a", "b"]
    assert [m.status for m in q.list()] == ["succeeded", "succeeded", "pending", "pending"]
    db.close()


def test_past_the_shutdown_timeout_cancelled_handlers_leave_their_messages_leased() -> None:
    db, q = seeded(["a", "b"])
    cancelled: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            started.set()
            try:
                await asyncio.Event().wait()  # forever
            except asyncio.CancelledError:
                cancelled.append(m.payload)
                raise

        task = asyncio.ensure_future(q.process_async(handler, shutdown_timeout=0.1, lease=60))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # the handler's task sees its cancellation

    run(main)
    assert cancelled == ["a"]
    a, b = q.list()
    assert (a.status, a.retry_count) == ("processing", 0) and a.lease_token is not None
    assert (b.status, b.lease_token) == ("pending", None)
    db.close()


def test_a_stop_event_returns_the_count_after_the_running_handler() -> None:
    db, q = seeded(["a", "b", "c"])

    async def main() -> int:
        stop = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            stop.set()
            await asyncio.sleep(0.2)

        return await q.process_async(handler, stop=stop)

    assert run(main) == 1
    assert [m.status for m in q.list()] == ["succeeded", "pending", "pending"]

    async def already_set() -> int:
        stop = asyncio.Event()
        stop.set()
        return await q.process_async(_noop, stop=stop)

    assert run(already_set) == 0
    assert q.get(2).lease_token is None
    db.close()


def test_a_stop_event_bound_to_another_event_loop_still_stops_the_loop() -> None:
    # Waited on in an earlier asyncio.run, the event is bound to that loop: awaiting it here
    # raises, which the loop once swallowed and then never stopped.
    db, q = seeded(["a", "b", "c"])
    stop = asyncio.Event()

    async def bind_elsewhere() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.01)

    asyncio.run(bind_elsewhere())

    async def handler(m: deadletter.Message) -> None:
        stop.set()
        await asyncio.sleep(0.5)  # the loop looks at the event every STOP_CHECK (0.1 s)

    assert run(lambda: q.process_async(handler, stop=stop)) == 1
    assert [m.status for m in q.list()] == ["succeeded", "pending", "pending"]
    db.close()


def test_stopping_is_logged_as_process_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    db, q = seeded(["a", "b"])

    async def stopped_by_event() -> int:
        stop = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            stop.set()
            await asyncio.sleep(0.05)

        return await q.process_async(handler, stop=stop)

    async def cancelled() -> None:
        started = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            started.set()
            await asyncio.sleep(0.05)

        loop = asyncio.ensure_future(q.process_async(handler, shutdown_timeout=5))
        await started.wait()
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop

    with caplog.at_level(logging.INFO, logger="deadletter"):
        assert run(stopped_by_event) == 1
        run(cancelled)
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("stopping")] == [
        "stopping (stop event): no more claims; waiting up to 30 s for 1 running handlers",
        "stopping (cancelled): no more claims; waiting up to 5 s for 1 running handlers",
    ]
    assert [m.status for m in q.list()] == ["succeeded", "succeeded"]
    db.close()


def test_arguments_are_validated_at_the_call_before_anything_is_claimed() -> None:
    db, q = seeded(["a"])

    def plain(m: deadletter.Message) -> None:
        pass

    with pytest.raises(deadletter.ValidationError) as caught:
        q.process_async(plain, concurrency=1001, stop=threading.Event())  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in caught.value.errors] == [
        ("handler", "type"),
        ("concurrency", "out_of_range"),
        ("stop", "type"),
    ]
    assert caught.value.errors[0]["message"] == (
        "must be an async def function (use process for a plain function)"
    )

    class Callable_:
        async def __call__(self, m: deadletter.Message) -> None:
            pass

    assert run(lambda: q.process_async(Callable_(), stop_when_idle=True)) == 1  # accepted
    db.close()


def test_a_service_loop_claims_again_after_store_errors(caplog: pytest.LogCaptureFixture) -> None:
    # As in test_worker.py (tester T6, session 13: a PostgreSQL restart ended the loop).
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["after the outage"])
    claims: list[float] = []
    down = [deadletter.StoreError("store error: PostgreSQL: connection refused")] * 2

    class Restarting:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def claim_many(self, *args: Any, **kwargs: Any) -> Any:  # in a thread of the executor
            claims.append(time.monotonic())
            if down:
                raise down.pop()
            return q.claim_many(*args, **kwargs)

    async def main() -> int:
        stop = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            stop.set()

        options: dict[str, Any] = {"poll_interval": 60, "stop_when_idle": False, "stop": stop}
        plan = plan_of(
            q, handler, want_async=True, concurrency=1, shutdown_timeout=5, lease=None, **options
    )
        return await _Tasks(Restarting(), handler, plan, False).run(stop)  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, logger="deadletter"):
        assert run(main) == 1
    assert [m.status for m in q.list()] == ["succeeded"]
    assert len(claims) == 3
    assert claims[1] - claims[0] >= 0.49 and claims[2] - claims[1] >= 0.99, claims
    assert [r.getMessage() for r in caplog.records] == [
        "claiming failed (1 in a row), trying again in 0.5 s: store error: PostgreSQL: "
        "connection refused",
        "claiming failed (2 in a row), trying again in 1 s: store error: PostgreSQL: "
        "connection refused",
        "claiming works again after 2 failures",
    ]
    db.close()


def test_handlers_ending_during_an_outage_do_not_bring_the_next_claim_forward(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As in test_worker.py (tester T9, session 13: 8 s of wait within 27 ms).
    from deadletter._worker.common import plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["0.1", "0.2", "0.3", "after"])
    claims: list[float] = []
    down = [deadletter.StoreError("store error: PostgreSQL: connection refused")] * 2

    class Restarting:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def claim_many(self, *args: Any, **kwargs: Any) -> Any:  # in a thread of the executor
            claims.append(time.monotonic())
            if len(claims) > 1 and down:  # the first claim fills the 3 slots; then it fails
                raise down.pop()
            return q.claim_many(*args, **kwargs)

    async def main() -> int:
        stop = asyncio.Event()

        async def handler(m: deadletter.Message) -> None:
            if m.payload == "after":
                stop.set()
            else:
                await asyncio.sleep(float(m.payload))  # each ending frees a slot

        options: dict[str, Any] = {"poll_interval": 60, "stop_when_idle": False, "stop": stop}
        plan = plan_of(
            q, handler, want_async=True, concurrency=3, shutdown_timeout=5, lease=None, **options
        )
        return await _Tasks(Restarting(), handler, plan, False).run(stop)  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, logger="deadletter"):
        assert run(main) == 4
    assert [m.status for m in q.list()] == ["succeeded"] * 4
    assert len(claims) == 4, claims
    assert claims[2] - claims[1] >= 0.49 and claims[3] - claims[2] >= 0.99, claims
    assert [r.getMessage() for r in caplog.records] == [
        "claiming failed (1 in a row), trying again in 0.5 s: store error: PostgreSQL: "
        "connection refused",
        "claiming failed (2 in a row), trying again in 1 s: store error: PostgreSQL: "
        "connection refused",
        "claiming works again after 2 failures",
    ]
    db.close()


def test_a_stopped_loop_returns_though_the_database_does_not_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As in test_worker.py (tester T9, session 13: SIGTERM took 8.2 s with shutdown_timeout=5,
    # the claim in flight waiting for the connection timeout). The claim awaited in the
    # executor is left behind at the shutdown timeout; the ack gets 2 s more.
    from deadletter._worker.common import RECORD_GRACE, plan_of
    from deadletter._worker.tasks import _Tasks

    db, q = seeded(["a"])
    claiming, release = threading.Event(), threading.Event()

    class Hanging:
        def __getattr__(self, name: str) -> Any:
            return getattr(q, name)

        def claim_many(self, *args: Any, **kwargs: Any) -> Any:
            if q.get(1).status == "processing":  # the second claim: the database hangs
                claiming.set()
                release.wait(10)
            return q.claim_many(*args, **kwargs)

        def succeed(self, *args: Any, **kwargs: Any) -> Any:
            release.wait(10)
            return q.succeed(*args, **kwargs)

    async def main() -> float:
        stop = asyncio.Event()
        stopped: list[float] = []

        async def handler(m: deadletter.Message) -> None:
            assert await asyncio.to_thread(claiming.wait, EVENT_TIMEOUT)
            q.enqueue("b")  # taken by the hanging claim once it goes on
            stopped.append(time.monotonic())
            stop.set()

        options: dict[str, Any] = {"poll_interval": 0.05, "stop_when_idle": False, "stop": stop}
        plan = plan_of(
            q, handler, want_async=True, concurrency=2, shutdown_timeout=0.5, lease=None, **options
        )
        loop = _Tasks(Hanging(), handler, plan, False)  # type: ignore[arg-type]
        assert await loop.run(stop) == 0
        took = time.monotonic() - stopped[0]
        release.set()  # the database answers again
        while q.get(1).status != "succeeded" or len(caplog.records) < 2:
            await asyncio.sleep(0.01)  # the ack in flight lands; the late claim is logged
        return took

    with caplog.at_level(logging.WARNING, logger="deadletter"):
        took = run(main)
    assert 0.5 + RECORD_GRACE - 0.1 <= took < 0.5 + RECORD_GRACE + 1.0, took
    assert [r.getMessage() for r in caplog.records] == [
        "returning with 1 outcomes still being recorded 2 s past the shutdown timeout (the "
        "database does not answer): their messages are left to their leases",
        "a claim that returned after the loop stopped took messages [2]: they are left to "
        "their leases (claimed again once they expire, as a failed attempt)",
    ]
    assert [(m.payload, m.status) for m in q.list()] == [("a", "succeeded"), ("b", "processing")]
    db.close()


HANGING_CLAIM = """
import asyncio, threading, time
import deadletter
from deadletter._worker.common import plan_of
from deadletter._worker.tasks import _Tasks

db = deadletter.open()
q = db.queue("q")

class Hanging:  # the database stopped answering: the claim never returns
    def __getattr__(self, name):
        return getattr(q, name)

    def claim_many(self, *args, **kwargs):
        threading.Event().wait()

async def main() -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, stop.set)
    plan = plan_of(q, main, want_async=True, concurrency=1, poll_interval=None,
                   stop_when_idle=False, shutdown_timeout=0.3, lease=None, stop=stop)
    print(await _Tasks(Hanging(), None, plan, False).run(stop), flush=True)

asyncio.run(main())
"""


def test_the_process_exits_though_a_claim_never_returns() -> None:
    # Tester T9 (session 13): the loop's executor was a ThreadPoolExecutor, whose threads the
    # interpreter's exit joins: with PostgreSQL hanging, the process stayed 40 s after
    # process_async returned. Its threads are daemons now.
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", HANGING_CLAIM], capture_output=True, text=True, timeout=EVENT_TIMEOUT
    )
    took = time.monotonic() - started
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
    assert took < 0.5 + 3.0, took  # the stop, the shutdown timeout, the interpreter's start


def test_a_service_loop_stops_on_a_store_error_once_its_database_is_closed() -> None:
    db, q = seeded(["a", "b"])

    async def handler(m: deadletter.Message) -> None:
        db.close()

    with pytest.raises(deadletter.StoreError, match="closed"):
        run(lambda: q.process_async(handler, poll_interval=0.01))
    assert q.closed


def _sleep_long() -> None:
    time.sleep(30)


def test_a_child_forked_by_a_handler_ends_on_sigterm_and_leaves_the_loop_running() -> None:
    # Tester T8 (session 13): the child kept asyncio's SIGTERM handler and its wake-up socket,
    # shared with the parent: terminate() left it alive, and its SIGTERM stopped the parent's loop.
    import multiprocessing
    import signal

    db, q = seeded(["fork", "after"])
    exits: list[object] = []

    async def handler(m: deadletter.Message) -> None:
        if m.payload != "fork":
            return
        child = multiprocessing.get_context("fork").Process(target=_sleep_long)
        child.start()
        child.terminate()
        await asyncio.get_running_loop().run_in_executor(None, child.join, 10)
        exits.append(child.exitcode)
        if child.is_alive():
            child.kill()
            child.join()

    async def main() -> int:
        return await q.process_async(handler, stop_when_idle=True)

    assert run(main) == 2  # the parent's loop went on to the second message
    assert exits == [-signal.SIGTERM]
    assert [m.status for m in q.list()] == ["succeeded", "succeeded"]
    db.close()
