"""Both worker loops when the process is paused longer than the lease (SIGSTOP, a VM pause, a long
garbage collection) while a handler runs: the loop's own next claim reaps the expired lease and
takes the message again while the first handler still runs. Each claim is its own slot (its lease
token, its heartbeats, its place in ``concurrency``), so the pause costs one attempt (``lease
expired``), never the message (issue 23)."""

from __future__ import annotations

import asyncio
import logging
import queue as queues
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from virtual_clock import Clock

import deadletter

EVENT_TIMEOUT = 30.0  # seconds a test waits for something that happens at once when all is well
CHILD = Path(__file__).with_name("paused_worker_child.py")


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_a_process_paused_past_its_lease_loses_one_attempt_not_the_message(
    tmp_path: Path, mode: str
) -> None:
    # As issue 23 saw it: lease 1 s, a 2.5 s SIGSTOP while the handler (3.5 s) runs. On resume,
    # either a heartbeat extends the lease nobody reaped yet (one run), or the loop's own claim
    # reaps it and runs the message again (two runs, one attempt lost). Before the fix the
    # threaded loop's second run had no heartbeats: every run returned and none was recorded.
    path = str(tmp_path / "jobs.db")
    with deadletter.open(path) as db:
        db.queue("jobs").enqueue("always succeeds", max_retries=3)
    child = subprocess.Popen(
        [sys.executable, str(CHILD), path, mode, "3.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queues.Queue[str] = queues.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in child.stdout or ()])
    reader.start()
    output: list[str] = []
    try:
        output.append(lines.get(timeout=EVENT_TIMEOUT))
        assert output == ["started 1\n"]
        time.sleep(0.2)
        child.send_signal(signal.SIGSTOP)
        time.sleep(2.5)
        child.send_signal(signal.SIGCONT)
        code = child.wait(timeout=60)
    finally:
        child.kill()
        reader.join(EVENT_TIMEOUT)
    while not lines.empty():
        output.append(lines.get())
    text = "".join(output)
    assert code == 0, text
    runs = [line for line in output if line.startswith("started")]
    assert runs in (["started 1\n"], ["started 1\n"] * 2), text
    assert output[-1] == "handled 1\n", text
    with deadletter.open(path) as db:
        m = db.queue("jobs").get(1)
    lost = len(runs) - 1
    assert (m.status, m.retry_count) == ("succeeded", lost), text
    assert [e["error"] for e in m.errors] == ["lease expired"] * lost


class _Refused(logging.Handler):
    """Sets ``event`` when the loop logs that a handler's outcome was not recorded."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__()
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if "was not recorded" in record.getMessage():
            self.event.set()


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_the_second_claim_of_a_message_is_its_own_slot(mode: str) -> None:
    # A virtual clock stands for the pause. The first run (token A) outlives its lease; the loop's
    # next claim reaps it and takes the message again (token B) while A still runs: two slots, so
    # concurrency=2 is used up (a third message waits), and once A ends (its success refused), B
    # keeps its heartbeats (the old loop keyed slots by message id: A's end dropped B's slot, B ran
    # without heartbeats, and its success was refused in turn).
    clock = Clock()
    db = deadletter.open(clock=clock)
    q = db.queue("jobs", backoff=deadletter.Backoff(initial=0, cap=0))
    m = q.enqueue("paused")
    b_started, a_refused = threading.Event(), threading.Event()
    tokens: list[str] = []
    other: list[int] = []
    extended: list[bool] = []
    together: list[bool] = []

    def run(message: deadletter.Message) -> None:
        """The handler's body, on a thread (the async handler runs it with to_thread)."""
        if message.id != m.id:
            other.append(message.id)
            return
        tokens.append(str(message.lease_token))
        if len(tokens) == 1:  # A
            clock.advance(2)  # the 1 s lease ran out while "paused"
            assert q.reap() == 1  # as the loop's own next claim would (or another worker's)
            together.append(b_started.wait(10))
            q.enqueue("another")  # both slots are taken: it waits for one
            time.sleep(0.5)  # ten polls
            assert other == [], "a third handler ran with concurrency=2"
            return
        b_started.set()  # B
        assert a_refused.wait(EVENT_TIMEOUT)
        before = q.get(m.id).lease_expires_at
        clock.advance(0.1)  # so that an extend moves the expiry
        deadline = time.monotonic() + 5
        while q.get(m.id).lease_expires_at == before and time.monotonic() < deadline:
            time.sleep(0.05)
        extended.append(q.get(m.id).lease_expires_at != before)

    async def run_async(message: deadletter.Message) -> None:
        await asyncio.to_thread(run, message)

    options = {"concurrency": 2, "poll_interval": 0.05, "lease": 1, "stop_when_idle": True}
    refused = _Refused(a_refused)
    logging.getLogger("deadletter").addHandler(refused)
    try:
        if mode == "threads":
            handled = q.process(run, **options)
        else:
            handled = asyncio.run(q.process_async(run_async, **options))
    finally:
        logging.getLogger("deadletter").removeHandler(refused)
    assert together == [True], "the second claim did not run beside the first"
    assert extended == [True], "B got no heartbeat after A ended"
    assert len(tokens) == 2 and tokens[0] != tokens[1]
    assert handled == 2  # B and "another"; A's success was refused
    done = q.get(m.id)
    assert (done.status, done.retry_count) == ("succeeded", 1)
    assert [e["error"] for e in done.errors] == ["lease expired"]
    assert [x.status for x in q.list()] == ["succeeded", "succeeded"]
    db.close()
