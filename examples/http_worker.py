"""A deadletter worker over HTTP, with httpx: the worker loop any language can run.

Start a server on a queue file, enqueue a few jobs, and run this worker until the queue is idle::

    deadletter serve jobs.db --create &               # pip install 'deadletter[server]'
    curl -X POST localhost:8000/queues/emails/messages -H 'Content-Type: application/json' -d '{"payload": "{\\"to\\": \\"a@b.c\\"}"}'
    python examples/http_worker.py http://127.0.0.1:8000 emails --stop-when-idle

The loop (`work`): ``POST /queues/{queue}/claim`` answers 204 when nothing is due (sleep, then
claim again) or 200 with a message and its ``lease_token``; the worker processes the payload and
answers ``POST .../messages/{id}/succeed`` or ``.../fail`` with the token (``retryable: false``
for a failure that retrying cannot fix: the message is dead at once). A 409 ``conflict`` from
succeed/fail means the lease ran out and the message went back to the queue: drop it.

`RemoteQueue` has the producer's, worker's and operator's methods of `deadletter.Queue` that
the demos use (enqueue with an idempotency key, sent as the ``Idempotency-Key`` header; claim,
extend, succeed, fail, replay, replay_all, get, list, stats, and `RemoteQueue.process`, a
simpler `Queue.process` over HTTP) and raises its exceptions (mapped from the problems'
``code``), so code written for a local queue runs against a server unchanged; the webhook relay
demo's ``--http`` mode uses it. ``DEADLETTER_TOKEN`` is sent as a bearer token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Optional
from urllib.parse import quote

import httpx

import deadletter  # for its exception classes only: problems map onto them by `code`


def instant(text: Optional[str]) -> Optional[datetime]:
    """``"2026-11-30T16:24:03.123Z"`` as an aware datetime."""
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class RemoteMessage:
    """A message as the server sent it, timestamps parsed into aware datetimes."""

    id: int
    queue: str
    payload: str
    status: str
    retry_count: int
    max_retries: int
    retry_after: Optional[datetime]
    last_error: Optional[str]
    created_at: datetime
    updated_at: datetime
    lease_token: Optional[str]
    lease_expires_at: Optional[datetime]
    idempotency_key: Optional[str]
    deduplicated: bool
    first_failed_at: Optional[datetime]
    dead_at: Optional[datetime]
    errors: list[dict[str, Any]]  # {"attempt": int, "error": str, "at": datetime}
    errors_dropped: int
    replay_count: int
    replayed_at: Optional[datetime]
    group: Optional[str] = None  # (servers before issue 21 send neither)
    expires_at: Optional[datetime] = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteMessage:
        """From the JSON object; fields a newer server adds are ignored."""
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data or f.default is MISSING}
        for name in values:
            if name.endswith("_at") or name == "retry_after":
                values[name] = instant(values[name])
        values["errors"] = [{**entry, "at": instant(entry["at"])} for entry in values["errors"]]
        return cls(**values)


@dataclass(frozen=True)
class RemoteStats:
    """A queue's statistics as the server sent them (ages in seconds, as timedeltas)."""

    queue: str
    pending: int
    processing: int
    succeeded: int
    dead: int
    expired: int
    delayed: int
    next_due_at: Optional[datetime]
    oldest_due_age: Optional[timedelta]
    oldest_dead_age: Optional[timedelta]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteStats:
        values = {f.name: data[f.name] for f in fields(cls)}
        values["next_due_at"] = instant(values["next_due_at"])
        for name in ("oldest_due_age", "oldest_dead_age"):
            if values[name] is not None:
                values[name] = timedelta(seconds=values[name])
        return cls(**values)


def problem_error(response: httpx.Response) -> Exception:
    """The deadletter exception of an error response (RFC 9457 problem with a ``code``)."""
    try:
        problem = response.json()
        code, detail = problem["code"], problem["detail"]
    except (ValueError, KeyError, TypeError):
        return RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
    if code == "validation_failed":
        return deadletter.ValidationError(detail, problem["errors"])
    if code == "not_found" and "id" in problem:
        return deadletter.NotFoundError(detail, problem["queue"], problem["id"])
    if code == "conflict":
        return deadletter.ConflictError(
            detail, problem["id"], problem["reason"], problem["message_status"]
        )
    if code == "store":
        return deadletter.StoreError(detail)
    return RuntimeError(f"HTTP {response.status_code} {code}: {detail}")


def segment(name: str) -> str:
    """A queue name as one URL path segment (``a/b`` -> ``a%2Fb``; ``.`` -> ``%2E``)."""
    return "%2E" * len(name) if name in (".", "..") else quote(name, safe="")


class RemoteQueue:
    """One queue of a deadletter HTTP server, with the methods of `deadletter.Queue`."""

    def __init__(self, client: httpx.Client, name: str) -> None:
        self.client = client
        self.name = name
        self.path = f"/queues/{segment(name)}"

    def _call(
        self,
        method: str,
        path: str,
        body: Optional[dict[str, Any]] = None,
        headers: Optional[dict[str, str]] = None,
        **params: Any,
    ) -> Any:
        query = {k: v for k, v in params.items() if v is not None}
        response = self.client.request(
            method, self.path + path, json=body, params=query, headers=headers
        )
        if response.status_code >= 400:
            raise problem_error(response)
        return None if response.status_code == 204 else response.json()

    def enqueue(
        self,
        payload: str,
        *,
        max_retries: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        delay: Optional[float] = None,
        group: Optional[str] = None,
        expires_in: Optional[float] = None,
    ) -> RemoteMessage:
        body = {
            "payload": payload,
            "max_retries": max_retries,
            "delay": delay,
            "group": group,
            "expires_in": expires_in,
        }
        key = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        return RemoteMessage.from_json(self._call("POST", "/messages", body, key))

    def claim(self, *, lease: Optional[float] = None) -> Optional[RemoteMessage]:
        return self.claim_or_wait(lease=lease)[0]

    def claim_or_wait(
        self, *, lease: Optional[float] = None
    ) -> tuple[Optional[RemoteMessage], Optional[float]]:
        """`claim`, and when nothing is due, the seconds until a delayed message is (the 204's
        ``Retry-After``), or None when none is delayed or the queue is paused."""
        response = self.client.post(self.path + "/claim", json={"lease": lease})
        if response.status_code >= 400:
            raise problem_error(response)
        if response.status_code == 204:
            wait = response.headers.get("retry-after")
            return None, None if wait is None else float(wait)
        return RemoteMessage.from_json(response.json()), None

    def extend(
        self, id: int, *, lease_token: str, lease: Optional[float] = None
    ) -> RemoteMessage:
        body = {"lease_token": lease_token, "lease": lease}
        return RemoteMessage.from_json(self._call("POST", f"/messages/{id}/extend", body))

    def succeed(self, id: int, *, lease_token: Optional[str] = None) -> RemoteMessage:
        body = {"lease_token": lease_token}
        return RemoteMessage.from_json(self._call("POST", f"/messages/{id}/succeed", body))

    def fail(
        self,
        id: int,
        error: str,
        *,
        lease_token: Optional[str] = None,
        retryable: Optional[bool] = None,
    ) -> RemoteMessage:
        body = {"error": error, "lease_token": lease_token, "retryable": retryable}
        return RemoteMessage.from_json(self._call("POST", f"/messages/{id}/fail", body))

    def replay(self, id: int) -> RemoteMessage:
        return RemoteMessage.from_json(self._call("POST", f"/messages/{id}/replay"))

    def process(
        self,
        handler: Callable[[RemoteMessage], object],
        *,
        concurrency: int = 1,
        poll_interval: float = 1.0,
        stop_when_idle: bool = False,
        lease: float = 30.0,
        stop: Optional[threading.Event] = None,
    ) -> int:
        """`deadletter.Queue.process` over HTTP, simplified: ``concurrency`` threads each claim
        one message at a time and run ``handler`` on it while a heartbeat extends its lease every
        half lease; returning acks the message, raising fails it with ``"ExceptionType:
        message"`` (for good when the exception is a `deadletter.PermanentError`). A thread that
        finds nothing due sleeps until the empty claim's ``Retry-After`` or ``poll_interval``,
        whichever is sooner. It stops when ``stop`` is set, or with ``stop_when_idle`` once the
        queue holds nothing pending or processing. Returns how many messages it handled (whose
        outcome was recorded); an error of the server or the network stops it and is raised."""
        ended = threading.Event()
        lock = threading.Lock()
        handled: list[int] = []
        failures: list[BaseException] = []

        def stopped() -> bool:
            return ended.is_set() or (stop is not None and stop.is_set())

        def run() -> None:
            try:
                while not stopped():
                    message, wait = self.claim_or_wait(lease=lease)
                    if message is None:
                        left = self.stats() if stop_when_idle else None
                        if left is not None and left.pending == left.processing == 0:
                            ended.set()
                        ended.wait(min(wait if wait is not None else poll_interval, poll_interval))
                    elif self._handle(message, handler, lease):
                        with lock:
                            handled.append(message.id)
            except BaseException as err:  # noqa: BLE001 (raised again by `process`)
                failures.append(err)
                ended.set()

        threads = [threading.Thread(target=run, daemon=True) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        return len(handled)

    def _handle(
        self, message: RemoteMessage, handler: Callable[[RemoteMessage], object], lease: float
    ) -> bool:
        """Runs the handler with heartbeats, then records its outcome; False when the lease was
        lost meanwhile (another worker has the message)."""
        token = message.lease_token or ""
        finished = threading.Event()

        def heartbeat() -> None:
            while not finished.wait(lease / 2):
                try:
                    self.extend(message.id, lease_token=token, lease=lease)
                except deadletter.ConflictError:
                    return

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        try:
            handler(message)
            error, retryable = None, True
        except Exception as err:  # noqa: BLE001 (any failure of the handler is the message's)
            error = f"{type(err).__name__}: {err}"
            retryable = not isinstance(err, deadletter.PermanentError)
        finally:
            finished.set()
            beat.join()
        try:
            if error is None:
                self.succeed(message.id, lease_token=token)
            else:
                self.fail(message.id, error, lease_token=token, retryable=retryable)
        except deadletter.ConflictError:
            return False
        return True

    def replay_all(
        self,
        *,
        error_contains: Optional[str] = None,
        dead_before: Optional[datetime] = None,
        dead_after: Optional[datetime] = None,
        limit: Optional[int] = None,
    ) -> int:
        utc = {
            name: None if moment is None else moment.astimezone(timezone.utc).isoformat()
            for name, moment in (("dead_before", dead_before), ("dead_after", dead_after))
        }
        body = {"error_contains": error_contains, "limit": limit, **utc}
        return int(self._call("POST", "/replay", body)["replayed"])

    def stats(self) -> RemoteStats:
        return RemoteStats.from_json(self._call("GET", "/stats"))

    def get(self, id: int) -> RemoteMessage:
        return RemoteMessage.from_json(self._call("GET", f"/messages/{id}"))

    def list(
        self, *, status: Optional[str] = None, limit: int = 100, after_id: Optional[int] = None
    ) -> list[RemoteMessage]:
        page = self._call("GET", "/messages", status=status, limit=limit, after_id=after_id)
        return [RemoteMessage.from_json(m) for m in page["messages"]]


class Permanent(deadletter.PermanentError):
    """A failure that retrying cannot fix: the message goes to the dead-letter queue at once."""


def work(
    queue: RemoteQueue,
    handle: Callable[[str], None],
    *,
    idle_sleep: float = 1.0,
    stop_when_idle: bool = False,
) -> Counter[str]:
    """Claims, processes and acks messages until interrupted (or, with ``stop_when_idle``, until
    nothing is due); returns how many messages ended each way."""
    outcomes: Counter[str] = Counter()
    while True:
        message = queue.claim()
        if message is None:  # 204: nothing is due
            if stop_when_idle:
                return outcomes
            time.sleep(idle_sleep)
            continue
        token = message.lease_token
        try:
            try:
                handle(message.payload)
            except Permanent as err:
                queue.fail(message.id, str(err), lease_token=token, retryable=False)
                outcomes["failed permanently"] += 1
            except Exception as err:  # noqa: BLE001 (any other failure is retried with backoff)
                queue.fail(message.id, f"{type(err).__name__}: {err}", lease_token=token)
                outcomes["failed, will retry"] += 1
            else:
                queue.succeed(message.id, lease_token=token)
                outcomes["succeeded"] += 1
        except deadletter.ConflictError:  # the lease ran out: the queue has the message again
            outcomes["lease lost"] += 1


def print_job(payload: str) -> None:
    """The example's job: print a JSON payload. ``{"fail": "why"}`` fails (and is retried);
    a payload that is not JSON fails permanently."""
    try:
        job = json.loads(payload)
    except ValueError:
        raise Permanent("payload is not JSON") from None
    if isinstance(job, dict) and "fail" in job:
        raise RuntimeError(str(job["fail"]))
    print(f"processed {job}")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="A deadletter worker over HTTP.")
    parser.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("queue")
    parser.add_argument("--stop-when-idle", action="store_true", help="exit when nothing is due")
    parser.add_argument("--idle-sleep", type=float, default=1.0, help="seconds after a 204")
    args = parser.parse_args(argv)
    token = os.environ.get("DEADLETTER_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=60) as client:
        outcomes = work(
            RemoteQueue(client, args.queue),
            print_job,
            idle_sleep=args.idle_sleep,
            stop_when_idle=args.stop_when_idle,
        )
    print(", ".join(f"{n} {what}" for what, n in sorted(outcomes.items())) or "nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
