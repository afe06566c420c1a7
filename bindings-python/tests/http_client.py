"""Helpers of the HTTP API tests: Starlette's test client over a database with a virtual clock,
the JSON of messages as the API writes them, and the checks of a problem response."""

from __future__ import annotations

import warnings
from datetime import timedelta
from typing import Any

import deadletter
import deadletter.http
from virtual_clock import T0, Clock

with warnings.catch_warnings():  # Starlette 1.x prefers httpx2 for its test client; httpx works
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient as StarletteTestClient

__all__ = [
    "JSON",
    "PROBLEM",
    "T0",
    "Clock",
    "TestClient",
    "at",
    "client_of",
    "fields",
    "pending",
    "problem",
]

PROBLEM = "application/problem+json"
JSON = {"Content-Type": "application/json"}
"""The header of a request body sent as bytes (``json=`` sets it itself)."""


class TestClient(StarletteTestClient):
    """Starlette's test client addressing http://localhost rather than its http://testserver, a
    name the API does not answer for unless allowed (``allowed_hosts``)."""

    __test__ = False  # not a test class, despite its name

    def __init__(self, app: Any, base_url: str = "http://localhost", **options: Any) -> None:
        super().__init__(app, base_url=base_url, **options)


def client_of(db: deadletter.Database, clock: Clock, **options: Any) -> TestClient:
    """A test client of ``deadletter.http.app(db)`` that dates ``Retry-After`` with ``clock``."""
    return TestClient(deadletter.http.app(db, clock=clock, **options))


def at(seconds: float) -> str:
    """The RFC 3339 string of T0 + seconds."""
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def pending(id: int, queue: str, payload: str, at_s: float = 0, **changes: Any) -> dict[str, Any]:
    """The JSON of a message just enqueued at T0 + at_s, with ``changes``: every field of
    `Message.to_dict`."""
    message = {
        "id": id,
        "queue": queue,
        "payload": payload,
        "status": "pending",
        "retry_count": 0,
        "max_retries": 3,
        "retry_after": None,
        "last_error": None,
        "created_at": at(at_s),
        "updated_at": at(at_s),
        "lease_token": None,
        "lease_expires_at": None,
        "idempotency_key": None,
        "deduplicated": False,
        "first_failed_at": None,
        "dead_at": None,
        "errors": [],
        "errors_dropped": 0,
        "replay_count": 0,
        "replayed_at": None,
        "group": None,
        "expires_at": None,
        "moved_from": None,
    }
    assert set(changes) <= set(message), set(changes) - set(message)
    return {**message, **changes}


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The problem body of ``response``, after checking its status, media type and members."""
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == "urn:deadletter:problem:" + code.replace("_", "-")
    assert body["title"] == deadletter.http.PROBLEMS[code].title
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def fields(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``(field, code)`` of each error of a validation problem."""
    return [(e["field"], e["code"]) for e in body["errors"]]
