"""A deadletter worker over HTTP, with httpx: the worker loop any language can run.

Start a server on a queue file, enqueue a few jobs, and run this worker until the queue is idle::

    deadletter serve jobs.db &                        # pip install 'deadletter[server]'
    curl -X POST localhost:8000/queues/emails/messages -d '{"payload": "{\\"to\\": \\"a@b.c\\"}"}'
    python examples/http_worker.py http://127.0.0.1:8000 emails --stop-when-idle

The loop (`work`): ``POST /queues/{queue}/claim`` answers 204 when nothing is due (sleep, then
claim again) or 200 with a message and its ``lease_token``; the worker processes the payload and
answers ``POST .../messages/{id}/succeed`` or ``.../fail`` with the token (``retryable: false``
for a failure that retrying cannot fix: the message is dead at once). A 409 ``conflict`` from
succeed/fail means the lease ran out and the message went back to the queue: drop it.

`RemoteQueue` has the methods of `deadletter.Queue` and raises its exceptions (mapped from the
problems' ``code``), so code written for a local queue runs against a server unchanged; the
webhook relay demo's ``--http`` mode uses it. ``DEADLETTER_TOKEN`` is sent as a bearer token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Optional
from urllib.parse import quote

import httpx

import deadletter  # for its exception classes only: problems map onto them by `code`


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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteMessage:
        """From the JSON object; fields a newer server adds are ignored."""
        values = {f.name: data[f.name] for f in fields(cls)}
        for name in ("retry_after", "created_at", "updated_at", "lease_expires_at"):
            if values[name] is not None:  # "2026-11-30T16:24:03.123Z"
                values[name] = datetime.fromisoformat(values[name].replace("Z", "+00:00"))
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
        self, method: str, path: str, body: Optional[dict[str, Any]] = None, **params: Any
    ) -> Any:
        query = {k: v for k, v in params.items() if v is not None}
        response = self.client.request(method, self.path + path, json=body, params=query)
        if response.status_code >= 400:
            raise problem_error(response)
        return None if response.status_code == 204 else response.json()

    def enqueue(self, payload: str, *, max_retries: Optional[int] = None) -> RemoteMessage:
        body = {"payload": payload, "max_retries": max_retries}
        return RemoteMessage.from_json(self._call("POST", "/messages", body))

    def claim(self, *, lease: Optional[float] = None) -> Optional[RemoteMessage]:
        data = self._call("POST", "/claim", {"lease": lease})
        return None if data is None else RemoteMessage.from_json(data)

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

    def get(self, id: int) -> RemoteMessage:
        return RemoteMessage.from_json(self._call("GET", f"/messages/{id}"))

    def list(
        self, *, status: Optional[str] = None, limit: int = 100, after_id: Optional[int] = None
    ) -> list[RemoteMessage]:
        page = self._call("GET", "/messages", status=status, limit=limit, after_id=after_id)
        return [RemoteMessage.from_json(m) for m in page["messages"]]


class Permanent(Exception):
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
