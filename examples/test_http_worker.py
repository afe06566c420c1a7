"""The HTTP worker example against a real server (deadletter.http under uvicorn, in a thread):
its loop acks, retries and dead-letters as the payloads dictate, `RemoteQueue` raises the
exceptions of `deadletter.Queue`, and its command line drains a queue and says what happened."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_worker import Permanent, RemoteMessage, RemoteQueue, print_job, work
from webhook_relay import serve_in_thread

import deadletter
import deadletter.http

EXAMPLE = Path(__file__).with_name("http_worker.py")
TOKEN = "worker-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, deadletter.Database]]:
    with deadletter.open(tmp_path / "jobs.db") as db:
        with serve_in_thread(deadletter.http.app(db, token=TOKEN)) as url:
            yield url, db


@pytest.fixture
def queue(server: tuple[str, deadletter.Database]) -> Iterator[RemoteQueue]:
    url, _ = server
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers) as client:
        yield RemoteQueue(client, "emails/eu")


def test_the_loop_acks_retries_and_dead_letters(
    queue: RemoteQueue, server: tuple[str, deadletter.Database]
) -> None:
    queue.enqueue(json.dumps({"to": "a"}))
    queue.enqueue(json.dumps({"fail": "SMTP timeout"}), max_retries=1)
    queue.enqueue("not json")
    outcomes = work(queue, print_job, stop_when_idle=True)
    assert outcomes == {"succeeded": 1, "failed, will retry": 1, "failed permanently": 1}
    _, db = server
    local = db.queue("emails/eu")  # the same file, read in this process
    assert [(m.status, m.retry_count, m.last_error) for m in local.list()] == [
        ("succeeded", 0, None),
        ("dead", 1, "RuntimeError: SMTP timeout"),
        ("dead", 1, "payload is not JSON"),
    ]
    replayed = queue.replay(3)
    assert (replayed.status, replayed.retry_count) == ("pending", 0)
    assert replayed.created_at.tzinfo is not None


def test_remote_queue_raises_the_exceptions_of_a_local_queue(queue: RemoteQueue) -> None:
    with pytest.raises(deadletter.NotFoundError) as not_found:
        queue.get(42)
    assert (not_found.value.queue, not_found.value.id) == ("emails/eu", 42)
    m = queue.enqueue("x")
    with pytest.raises(deadletter.ConflictError) as conflict:
        queue.succeed(m.id)
    assert (conflict.value.reason, conflict.value.status) == ("wrong_status", "pending")
    with pytest.raises(deadletter.ValidationError) as invalid:
        queue.enqueue("x", max_retries=99)
    assert invalid.value.errors[0]["field"] == "max_retries"
    claimed = queue.claim(lease=0.5)
    assert claimed is not None and claimed.lease_token
    assert queue.claim() is None  # 204
    extended = queue.extend(claimed.id, lease_token=claimed.lease_token, lease=60)
    assert extended.lease_expires_at is not None
    assert (extended.lease_expires_at - extended.updated_at).total_seconds() == 60
    with pytest.raises(deadletter.ConflictError):
        queue.extend(claimed.id, lease_token="not-the-token")


def test_remote_enqueue_with_an_idempotency_key_and_a_delay(queue: RemoteQueue) -> None:
    first = queue.enqueue("x", idempotency_key="order-7", delay=60)
    again = queue.enqueue("y", idempotency_key="order-7")
    assert again.id == first.id and again.payload == "x"
    assert first.retry_after is not None
    assert (first.retry_after - first.created_at).total_seconds() == 60
    assert queue.claim() is None  # delayed


def test_the_command_line_drains_a_queue(server: tuple[str, deadletter.Database]) -> None:
    url, db = server
    db.queue("jobs").enqueue(json.dumps({"n": 1}))
    db.queue("jobs").enqueue(json.dumps({"n": 2}))
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), url, "jobs", "--stop-when-idle"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DEADLETTER_TOKEN": TOKEN},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["processed {'n': 1}", "processed {'n': 2}", "2 succeeded"]
    assert [m.status for m in db.queue("jobs").list()] == ["succeeded", "succeeded"]


def test_remote_process_heartbeats_retries_and_stops_when_idle(queue: RemoteQueue) -> None:
    """The loop over HTTP: a handler slower than the lease keeps it (heartbeats), a failure is
    retried after its backoff, a PermanentError is dead at once, and stop_when_idle returns."""
    seen: list[str] = []

    def handle(message: RemoteMessage) -> None:
        seen.append(message.payload)
        if message.payload == "slow":
            time.sleep(1.5)  # longer than the lease of 1 s
        elif message.payload == "flaky" and message.retry_count == 0:
            raise RuntimeError("try again")
        elif message.payload == "bad":
            raise Permanent("malformed")

    for payload in ("slow", "flaky", "bad"):
        queue.enqueue(payload)
    handled = queue.process(handle, concurrency=2, stop_when_idle=True, lease=1, poll_interval=0.5)
    assert handled == 4  # flaky twice
    assert sorted(seen) == ["bad", "flaky", "flaky", "slow"]
    slow, flaky, bad = queue.list()
    assert (slow.status, slow.errors) == ("succeeded", [])  # no "lease expired"
    assert (flaky.status, [e["error"] for e in flaky.errors]) == (
        "succeeded",
        ["RuntimeError: try again"],
    )
    assert (bad.status, bad.last_error) == ("dead", "Permanent: malformed")
    assert queue.stats().pending == 0
