"""The HTTP API (`deadletter.http`) route by route, through Starlette's test client: exact
messages (a virtual clock), every problem type, percent-encoded queue names, bodies of every wrong
shape, the token on and off, and the app mounted under a prefix. One file (about 670 lines), route by route, since they share one client
and virtual clock."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import deadletter
import deadletter.http
import jsonschema_rs
import pytest
import readmes
from deadletter.http._openapi import OPERATIONS
from http_client import JSON, TestClient, at, client_of, fields, pending, problem
from starlette.applications import Starlette
from starlette.routing import Mount
from virtual_clock import Clock

TOKEN = "s3cret-token"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    return deadletter.open(clock=clock, lease=30)


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


# ---------------------------------------------------------------------------------------------
# The message routes


def test_enqueue_answers_201_with_the_message_and_its_location(client: TestClient) -> None:
    r = client.post("/queues/emails/messages", json={"payload": '{"to":"a"}', "max_retries": 5})
    assert r.status_code == 201
    assert r.headers["location"] == "/queues/emails/messages/1"
    assert r.json() == pending(1, "emails", '{"to":"a"}', max_retries=5)
    assert client.get(r.headers["location"]).json() == r.json()


def test_max_retries_defaults_to_3_and_null_means_omitted(client: TestClient) -> None:
    assert client.post("/queues/q/messages", json={"payload": "a"}).json()["max_retries"] == 3
    body = {"payload": "b", "max_retries": None}
    assert client.post("/queues/q/messages", json=body).json()["max_retries"] == 3


def test_list_pages_by_id_and_filters_by_status(client: TestClient, clock: Clock) -> None:
    for n in range(5):
        client.post("/queues/q/messages", json={"payload": f"m{n}"})
    client.post("/queues/other/messages", json={"payload": "elsewhere"})
    first = client.get("/queues/q/messages", params={"limit": 2}).json()
    assert [m["id"] for m in first["messages"]] == [1, 2]
    assert first["next_after_id"] == 2
    rest = client.get("/queues/q/messages", params={"limit": 3, "after_id": 2}).json()
    assert [m["payload"] for m in rest["messages"]] == ["m2", "m3", "m4"]
    assert rest["next_after_id"] == 5  # a full page: the next one may be empty
    assert client.get("/queues/q/messages?after_id=5&limit=3").json() == {
        "messages": [],
        "next_after_id": None,
    }
    everything = client.get("/queues/q/messages").json()
    assert len(everything["messages"]) == 5 and everything["next_after_id"] is None

    claimed = client.post("/queues/q/claim").json()
    processing = client.get("/queues/q/messages?status=processing").json()["messages"]
    assert processing == [claimed]
    assert len(client.get("/queues/q/messages?status=pending").json()["messages"]) == 4


def test_claim_leases_the_oldest_message_and_answers_204_when_none_is_due(
    client: TestClient, clock: Clock
) -> None:
    assert client.post("/queues/q/claim").status_code == 204
    client.post("/queues/q/messages", json={"payload": "first"})
    client.post("/queues/q/messages", json={"payload": "second"})
    clock.advance(1)
    r = client.post("/queues/q/claim", json={"lease": 2.5})
    assert r.status_code == 200
    m = r.json()
    token = m["lease_token"]
    assert isinstance(token, str) and token
    assert m == pending(
        1,
        "q",
        "first",
        status="processing",
        updated_at=at(1),
        lease_token=token,
        lease_expires_at=at(3.5),
    )
    default = client.post("/queues/q/claim", content=b"").json()  # no body: the default lease
    assert default["lease_expires_at"] == at(31)
    r = client.post("/queues/q/claim")
    assert r.status_code == 204 and r.content == b""


def test_succeed_fail_and_replay(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "job", "max_retries": 2})
    m = client.post("/queues/q/claim").json()
    clock.advance(1)
    failed = client.post(
        "/queues/q/messages/1/fail", json={"error": "HTTP 503", "lease_token": m["lease_token"]}
    )
    assert failed.status_code == 200
    first = {"attempt": 1, "error": "HTTP 503", "at": at(1)}
    assert failed.json() == pending(
        1,
        "q",
        "job",
        max_retries=2,
        retry_count=1,
        retry_after=at(3),  # min(2^1, 3600) s after the failure at T0 + 1 s
        last_error="HTTP 503",
        updated_at=at(1),
        first_failed_at=at(1),
        errors=[first],
    )
    assert client.post("/queues/q/claim").status_code == 204  # in backoff
    clock.advance(2)
    m = client.post("/queues/q/claim").json()
    dead = client.post(
        "/queues/q/messages/1/fail",
        json={"error": "HTTP 410", "lease_token": m["lease_token"], "retryable": False},
    ).json()
    second = {"attempt": 2, "error": "HTTP 410", "at": at(3)}
    assert dead == pending(
        1,
        "q",
        "job",
        status="dead",
        max_retries=2,
        retry_count=2,
        last_error="HTTP 410",
        updated_at=at(3),
        first_failed_at=at(1),
        dead_at=at(3),
        errors=[first, second],
    )
    clock.advance(1)
    replayed = client.post("/queues/q/messages/1/replay")
    assert replayed.status_code == 200
    assert replayed.json() == pending(
        1,
        "q",
        "job",
        max_retries=2,
        updated_at=at(4),
        first_failed_at=at(1),  # the history stays; last_error is cleared
        errors=[first, second],
        replay_count=1,
        replayed_at=at(4),
    )
    m = client.post("/queues/q/claim").json()
    done = client.post("/queues/q/messages/1/succeed", json={"lease_token": m["lease_token"]})
    assert done.status_code == 200
    assert done.json()["status"] == "succeeded"
    assert done.json()["lease_token"] is None


def test_succeed_without_a_token_is_allowed(client: TestClient) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    client.post("/queues/q/claim")
    assert client.post("/queues/q/messages/1/succeed").json()["status"] == "succeeded"


def test_timestamps_are_rfc3339_utc_with_milliseconds() -> None:
    client = TestClient(deadletter.http.app(deadletter.open()))
    m = client.post("/queues/q/messages", json={"payload": "x"}).json()
    pattern = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
    assert pattern.fullmatch(m["created_at"]) and pattern.fullmatch(m["updated_at"])


# ---------------------------------------------------------------------------------------------
# Queue names


@pytest.mark.parametrize(
    "name",
    ["a/b", "with space", "ünïcødé", "日本語", "100%", "?#&=+", "x" * 255, ".a", "..."],
)
def test_queue_names_are_percent_decoded_path_segments(client: TestClient, name: str) -> None:
    segment = quote(name, safe="")
    assert deadletter.http.path_segment(name) == segment
    r = client.post(f"/queues/{segment}/messages", json={"payload": "x"})
    assert r.status_code == 201, r.text
    assert r.json()["queue"] == name
    assert r.headers["location"] == f"/queues/{segment}/messages/1"
    assert client.get(f"/queues/{segment}/messages/1").json()["queue"] == name
    assert [m["queue"] for m in client.get(f"/queues/{segment}/messages").json()["messages"]] == [
        name
    ]
    assert client.post(f"/queues/{segment}/claim").json()["queue"] == name


def test_the_dot_segments_are_refused_as_new_queues(client: TestClient) -> None:
    """Clients remove dot segments from paths (finding F3): the core refuses ``.`` and ``..``
    where messages are put; a name stored before is still written ``%2E`` (`path_segment`)."""
    assert [deadletter.http.path_segment(n) for n in (".", "..")] == ["%2E", "%2E%2E"]
    for segment in ("%2E", "%2e%2E"):
        r = client.post(f"/queues/{segment}/messages", json={"payload": "x"})
        problem(r, 422, "validation_failed")
        assert [e["field"] for e in r.json()["errors"]] == ["queue"]


def test_a_slash_in_a_name_is_not_a_path_separator(client: TestClient) -> None:
    client.post("/queues/a%2Fb/messages", json={"payload": "x"})
    assert client.get("/queues/a/messages").json()["messages"] == []
    assert client.get("/queues/a/b/messages").status_code == 404  # no such route


@pytest.mark.parametrize(
    "segment, code",
    [("x" * 256, "too_long"), ("%FF", "type"), (quote("é" * 256), "too_long")],
)
def test_a_bad_queue_name_is_422(client: TestClient, segment: str, code: str) -> None:
    body = problem(
        client.post(f"/queues/{segment}/messages", json={"payload": "x"}), 422, "validation_failed"
    )
    assert fields(body) == [("queue", code)]


# ---------------------------------------------------------------------------------------------
# Problems: one test per type, then every wrong input


def test_validation_failed_lists_every_rejected_field(client: TestClient) -> None:
    r = client.post("/queues/q/messages", json={"payload": 5, "max_retries": 11})
    body = problem(r, 422, "validation_failed")
    assert fields(body) == [("payload", "type"), ("max_retries", "out_of_range")]
    assert all(isinstance(e["message"], str) for e in body["errors"])


def test_not_found_names_the_queue_and_id(client: TestClient) -> None:
    body = problem(client.get("/queues/q/messages/7"), 404, "not_found")
    assert (body["queue"], body["id"]) == ("q", 7)
    body = problem(client.post("/queues/a%2Fb/messages/9/replay"), 404, "not_found")
    assert (body["queue"], body["id"]) == ("a/b", 9)


def test_an_unknown_route_is_a_404_problem(client: TestClient) -> None:
    body = problem(client.get("/nope"), 404, "not_found")
    assert "queue" not in body


def test_conflict_wrong_status_and_lost_lease(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    body = problem(client.post("/queues/q/messages/1/succeed"), 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "wrong_status", "pending")
    body = problem(client.post("/queues/q/messages/1/replay"), 409, "conflict")
    assert body["message_status"] == "pending"
    first = client.post("/queues/q/claim", json={"lease": 1}).json()
    clock.advance(2)
    assert client.post("/queues/q/claim").status_code == 204  # reaped: a failed attempt, backoff
    clock.advance(2)
    assert client.post("/queues/q/claim").json()["lease_token"] != first["lease_token"]
    r = client.post(
        "/queues/q/messages/1/fail", json={"error": "late", "lease_token": first["lease_token"]}
    )
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "lease_lost", "processing")


def test_a_mistyped_lease_token_is_not_said_to_be_an_expired_lease(client: TestClient) -> None:
    """Tester T6's F3: the 409 said "the lease expired and the message may be with another
    worker" and ``message_status: null`` of a message processing under its live lease. A store
    keeps only the current token: a typo and an expired lease's token read the same."""
    client.post("/queues/q/messages", json={"payload": "x"})
    m = client.post("/queues/q/claim", json={"lease": 600}).json()
    r = client.post("/queues/q/messages/1/succeed", json={"lease_token": "typo"})
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "lease_lost", "processing")
    assert body["detail"] == (
        "lease lost on message 1: the token is not its current lease's (that lease expired and "
        "it was claimed again, or the token was never this message's)"
    )
    after = client.get("/queues/q/messages/1").json()
    assert (after["status"], after["lease_expires_at"]) == ("processing", m["lease_expires_at"])


def test_store_errors_are_503_with_retry_after(db: deadletter.Database) -> None:
    client = TestClient(deadletter.http.app(db))
    db.close()
    r = client.post("/queues/q/messages", json={"payload": "x"})
    body = problem(r, 503, "store")
    assert r.headers["retry-after"] == "1"
    assert "closed" in body["detail"]
    problem(client.get("/healthz"), 503, "store")


def test_unauthorized_is_401_with_www_authenticate(db: deadletter.Database) -> None:
    client = TestClient(deadletter.http.app(db, token=TOKEN))
    r = client.get("/queues/q/messages")
    problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"] == "Bearer"


def test_too_large_is_413_before_parsing() -> None:
    db = deadletter.open(max_payload_bytes=10)
    client = TestClient(deadletter.http.app(db, max_payload_bytes=10))
    limit = deadletter.http.body_limit(10)
    assert limit == 6 * 10 + 65536
    body = b'{"payload": "' + b"x" * (limit - 14) + b'"}'  # limit + 1 bytes, valid JSON
    assert len(body) == limit + 1
    problem(client.post("/queues/q/messages", content=body, headers=JSON), 413, "too_large")
    too_deep = client.post("/queues/q/messages", content=b"[" * (limit + 1), headers=JSON)
    problem(too_deep, 413, "too_large")
    # One byte less is parsed, and then the payload is judged by the queue.
    r = client.post("/queues/q/messages", content=body[:13] + body[15:], headers=JSON)
    assert fields(problem(r, 422, "validation_failed")) == [("payload", "too_large")]


def test_any_accepted_payload_fits_the_body_limit_even_fully_escaped(
    clock: Clock,
) -> None:
    db = deadletter.open(clock=clock, max_payload_bytes=1000)
    client = TestClient(deadletter.http.app(db, max_payload_bytes=1000))
    payload = "\x01" * 1000  # every byte becomes \u0001 in JSON: 6 bytes
    r = client.post("/queues/q/messages", json={"payload": payload, "max_retries": 3})
    assert r.status_code == 201 and r.json()["payload"] == payload


def test_method_not_allowed_lists_the_allowed_methods(client: TestClient) -> None:
    r = client.delete("/queues/q/messages")
    problem(r, 405, "method_not_allowed")
    assert set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    r = client.get("/queues/q/claim")
    problem(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "POST"
    r = client.post("/queues/q/messages/1")
    problem(r, 405, "method_not_allowed")
    assert set(r.headers["allow"].split(", ")) == {"GET", "HEAD", "DELETE"}


def test_an_unexpected_exception_is_a_500_problem_without_details() -> None:
    def broken_clock() -> datetime:
        raise RuntimeError("the clock broke")

    client = TestClient(
        deadletter.http.app(deadletter.open(clock=broken_clock)), raise_server_exceptions=False
    )
    body = problem(client.post("/queues/q/messages", json={"payload": "x"}), 500, "internal")
    assert "clock" not in body["detail"]


def test_every_error_code_of_the_queue_has_a_problem() -> None:
    assert set(deadletter.CODES) <= set(deadletter.http.PROBLEMS)


@pytest.mark.parametrize(
    "content, field, code",
    [
        (b"", "body", "type"),
        (b"  \n", "body", "type"),
        (b"not json", "body", "invalid"),
        (b'{"payload": "x"', "body", "invalid"),
        (b"\xff\xfe\x00", "body", "invalid"),
        (b"[1, 2]", "body", "type"),
        (b'"x"', "body", "type"),
        (b"null", "body", "type"),
        (b"12", "body", "type"),
        (b"true", "body", "type"),
        (b'{"payload": NaN}', "body", "invalid"),
        (b'{"payload": "x", "max_retries": Infinity}', "body", "invalid"),
        (b'{"payload": "x", "payload": "y"}', "body", "invalid"),
        (b"[" * 100_000, "body", "invalid"),
        (b'{"payload": "x", "priority": 1}', "priority", "unknown"),
        (b'{"payload": "\\ud800"}', "payload", "type"),
        (b'{"payload": ["x"]}', "payload", "type"),
        (b'{"payload": "x", "max_retries": "3"}', "max_retries", "type"),
        (b'{"payload": "x", "max_retries": true}', "max_retries", "type"),
        (b'{"payload": "x", "max_retries": 2.5}', "max_retries", "type"),
        (b'{"payload": "x", "max_retries": 1e30}', "max_retries", "out_of_range"),
        (b'{"max_retries": 2}', "payload", "type"),
    ],
)
def test_a_bad_enqueue_body_is_422_naming_the_field(
    client: TestClient, content: bytes, field: str, code: str
) -> None:
    r = client.post("/queues/q/messages", content=content, headers=JSON)
    assert fields(problem(r, 422, "validation_failed")) == [(field, code)]
    assert client.get("/queues/q/messages").json()["messages"] == []  # nothing changed


def test_integral_json_numbers_are_integers(client: TestClient) -> None:
    r = client.post(
        "/queues/q/messages", content=b'{"payload": "x", "max_retries": 5.0}', headers=JSON
    )
    assert r.status_code == 201 and r.json()["max_retries"] == 5
    r = client.post(
        "/queues/q/messages", content=b'{"payload": "x", "max_retries": 4e0}', headers=JSON
    )
    assert r.json()["max_retries"] == 4


@pytest.mark.parametrize(
    "path, content, expected",
    [
        ("/queues/q/claim", b'{"lease": "10"}', [("lease", "type")]),
        ("/queues/q/claim", b'{"lease": 0}', [("lease", "out_of_range")]),
        ("/queues/q/claim", b'{"lease": 43201}', [("lease", "out_of_range")]),
        ("/queues/q/claim", b'{"visibility": 10}', [("visibility", "unknown")]),
        ("/queues/q/messages/1/succeed", b'{"lease_token": 5}', [("lease_token", "type")]),
        ("/queues/q/messages/1/succeed", b'{"token": "t"}', [("token", "unknown")]),
        ("/queues/q/messages/1/fail", b"", [("body", "type")]),
        ("/queues/q/claim", b"\r\n", [("body", "type")]),  # no body is {}; whitespace is not JSON
        ("/queues/q/messages/1/replay", b" ", [("body", "type")]),
        ("/queues/q/messages/1/fail", b"{}", [("error", "type")]),
        ("/queues/q/messages/1/fail", b'{"error": "e", "retryable": 1}', [("retryable", "type")]),
        ("/queues/q/messages/1/replay", b'{"all": true}', [("all", "unknown")]),
        ("/queues/q/messages/0/replay", b"", [("id", "out_of_range")]),
        ("/queues/q/messages/-3/succeed", b"", [("id", "out_of_range")]),
        ("/queues/q/messages/abc/succeed", b"", [("id", "type")]),
        ("/queues/q/messages/1.5/succeed", b"", [("id", "type")]),
        (
            "/queues/q/messages/99999999999999999999/fail",
            b'{"error": "e"}',
            [("id", "out_of_range")],
        ),
    ],
)
def test_bad_bodies_and_ids_of_the_other_routes(
    client: TestClient, path: str, content: bytes, expected: list[tuple[str, str]]
) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    before = client.get("/queues/q/messages/1").json()
    r = client.post(path, content=content, headers=JSON)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert client.get("/queues/q/messages/1").json() == before


@pytest.mark.parametrize(
    "query, expected",
    [
        ("status=gone", [("status", "invalid")]),
        ("limit=0", [("limit", "out_of_range")]),
        ("limit=1001", [("limit", "out_of_range")]),
        ("limit=ten", [("limit", "type")]),
        ("limit=", [("limit", "type")]),
        ("after_id=-1", [("after_id", "out_of_range")]),
        ("statsu=dead", [("statsu", "unknown")]),
        ("status=dead&status=pending", [("status", "invalid")]),
    ],
)
def test_bad_list_queries_are_422(
    client: TestClient, query: str, expected: list[tuple[str, str]]
) -> None:
    r = client.get(f"/queues/q/messages?{query}")
    assert fields(problem(r, 422, "validation_failed")) == expected


@pytest.mark.parametrize(
    "method, url, body, expected",
    [
        (  # tester T6's F1: the unknown field was the 422's only error
            "POST",
            "/queues/q/messages",
            {"payload": "x", "max_retries": "3", "delay": -1, "bogus": 1},
            [("bogus", "unknown"), ("max_retries", "type"), ("delay", "out_of_range")],
        ),
        (
            "GET",
            "/queues/q/messages?foo=1&limit=-1&status=daed",
            None,
            [("foo", "unknown"), ("status", "invalid"), ("limit", "out_of_range")],
        ),
        (  # a query string on a route that takes none, with the body's faults
            "POST",
            "/queues/q/messages/x/fail?retry=1",
            {"error": 5, "why": "?"},
            [("retry", "unknown"), ("why", "unknown"), ("id", "type"), ("error", "type")],
        ),
        (
            "POST",
            "/queues/q/delete?dry_run=true",
            {"status": "pending", "dry_run": None, "created_after": "today"},
            [
                ("dry_run", "unknown"),
                ("dry_run", "type"),
                ("created_after", "invalid"),
                ("status", "invalid"),
            ],
        ),
        (
            "PUT",
            "/queues/q/settings?create=yes&x=1",
            {"lease": 0, "paused": True},
            [
                ("x", "unknown"),
                ("create", "type"),
                ("paused", "unknown"),
                ("lease", "out_of_range"),
            ],
        ),
    ],
)
def test_a_422_lists_the_unknown_fields_with_every_other_rejected_field(
    client: TestClient,
    method: str,
    url: str,
    body: Any,
    expected: list[tuple[str, str]],
) -> None:
    """The HTTP layer's faults (the query string's, then the body's) first, then the queue's, in
    its order of the arguments; nothing changes."""
    client.post("/queues/q/messages", json={"payload": "x"})
    before = client.get("/queues/q/messages").json()
    r = client.request(method, url, json=body)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert client.get("/queues/q/messages").json() == before
    assert client.get("/queues/q/settings").json()["lease"] is None


# ---------------------------------------------------------------------------------------------
# Token, health, document, dashboard, mounting


ROUTES = [
    ("GET", "/queues", None),
    ("GET", "/queues/q/stats", None),
    ("POST", "/queues/q/messages", {"payload": "x"}),
    ("POST", "/queues/q/messages:batch", {"items": ["y"]}),
    ("GET", "/queues/q/messages", None),
    ("GET", "/queues/q/messages/1", None),
    ("POST", "/queues/q/claim", None),
    ("POST", "/queues/q/messages/1/extend", {"lease_token": "t"}),
    ("POST", "/queues/q/messages/1/succeed", None),
    ("POST", "/queues/q/messages/1/fail", {"error": "e"}),
    ("POST", "/queues/q/messages/1/replay", None),
    ("POST", "/queues/q/replay", None),
    ("POST", "/queues/q/purge", {"status": "dead", "older_than": 0}),
    ("DELETE", "/queues/q/messages/1", None),
    ("GET", "/metrics", None),
    ("GET", "/openapi.json", None),
    ("GET", "/nope", None),
]


def test_with_a_token_every_route_but_healthz_and_the_dashboard_needs_it(
    db: deadletter.Database,
) -> None:
    client = TestClient(deadletter.http.app(db, token=TOKEN))
    wrong = [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": "Bearer"},
    ]
    for method, path, body in ROUTES:
        for headers in wrong:
            r = client.request(method, path, json=body, headers=headers)
            problem(r, 401, "unauthorized")
    assert client.get("/queues/q/messages").status_code == 401
    assert db.queue("q").list() == []  # nothing was enqueued
    for scheme in ("Bearer", "bearer", "BEARER"):
        r = client.post(
            "/queues/q/messages",
            json={"payload": "x"},
            headers={"Authorization": f"{scheme} {TOKEN}"},
        )
        assert r.status_code == 201
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/").status_code == 200
    assert client.get("/static/index.html").status_code == 200


def test_without_a_token_no_route_needs_one(client: TestClient) -> None:
    expected = [200, 200, 201, 201, 200, 200, 200, 409, 200, 409, 409, 200, 200, 200, 200, 200, 404]
    assert [client.request(m, p, json=b).status_code for m, p, b in ROUTES] == expected


def test_an_empty_token_is_refused(db: deadletter.Database) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        deadletter.http.app(db, token="")


@pytest.mark.parametrize("token", [" s3cret", "s3cret\n", " "])
def test_a_token_with_surrounding_white_space_is_refused(
    db: deadletter.Database, token: str
) -> None:
    # A client's credential is read stripped: such a token would answer every request with 401.
    with pytest.raises(ValueError, match="token begins or ends with white space"):
        deadletter.http.app(db, token=token)


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        ({"db": "notadb"}, TypeError, "db must be a deadletter.Database, got str"),
        (
            {"clock": 5},
            TypeError,
            "clock must be a zero-argument callable returning an aware datetime, or None; got int",
        ),
        ({"token": b"s3cret"}, TypeError, "token must be a str or None, got bytes"),
        ({"max_payload_bytes": "1024"}, TypeError, "max_payload_bytes must be an int, got str"),
        ({"max_payload_bytes": True}, TypeError, "max_payload_bytes must be an int, got bool"),
        ({"max_payload_bytes": 0}, ValueError, "max_payload_bytes must be 1..=67108864"),
    ],
)
def test_app_checks_its_arguments_when_it_is_made(
    db: deadletter.Database, arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    options = {"db": db, **arguments}
    with pytest.raises(error) as raised:
        deadletter.http.app(options.pop("db"), **options)
    assert str(raised.value).startswith(message)


def test_healthz(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_the_document_has_one_operation_per_route(db: deadletter.Database) -> None:
    assert set(OPERATIONS) == set(deadletter.http.Api(db, 1).endpoints())
    client = TestClient(deadletter.http.app(db))
    document = client.get("/openapi.json").json()
    assert document["openapi"] == "3.1.0"
    methods = {(p, m) for p, item in document["paths"].items() for m in item}
    assert methods == set(OPERATIONS)
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    json.dumps(document)  # plain JSON


def test_the_schemas_describe_every_field_of_to_dict(db: deadletter.Database) -> None:
    schemas = deadletter.http.document()["components"]["schemas"]
    q = db.queue("q")
    message = q.enqueue("x").to_dict()
    assert set(schemas["Message"]["properties"]) == set(message)
    assert set(schemas["Message"]["required"]) == set(message)
    assert schemas["Message"]["additionalProperties"] is False
    stats = q.stats().to_dict()
    assert set(schemas["QueueStats"]["properties"]) == set(stats)
    assert set(schemas["QueueStats"]["required"]) == set(stats)


def test_a_message_with_a_history_conforms_to_the_document(
    client: TestClient, clock: Clock
) -> None:
    """Every field, timestamps inside `errors` too, checked by the validator schemathesis uses."""
    validator = jsonschema_rs.validator_for(
        {"$ref": "#/components/schemas/Message", **deadletter.http.document()}
    )
    client.post("/queues/q/messages", json={"payload": "x", "max_retries": 2})
    for error in ("first", "second"):
        m = client.post("/queues/q/claim").json()
        assert validator.is_valid(m)
        body = {"error": error, "lease_token": m["lease_token"], "retryable": error == "first"}
        dead = client.post("/queues/q/messages/1/fail", json=body).json()
        clock.advance(2)  # the backoff after the first failure
    assert dead["status"] == "dead" and len(dead["errors"]) == 2
    validator.validate(dead)
    assert not validator.is_valid({**dead, "errors": [{**dead["errors"][0], "at": "2026-01-01"}]})
    assert not validator.is_valid({**dead, "unknown": 1})


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("/queues/a%00b/messages", {"payload": "x"}, "queue"),
        ("/queues/q/messages", {"payload": "x", "idempotency_key": "a\x00b"}, "idempotency_key"),
        ("/queues/q/messages/1/fail", {"error": "a\x00b"}, "error"),
    ],
)
def test_nul_is_refused_where_the_document_says_so(
    client: TestClient, path: str, body: dict[str, str], field: str
) -> None:
    """The fields whose schema has the pattern that excludes U+0000 are those the core refuses
    it in (not every store can hold it); payloads may hold it."""
    client.post("/queues/q/messages", json={"payload": "\x00 is fine here"})
    client.post("/queues/q/claim")
    assert fields(problem(client.post(path, json=body), 422, "validation_failed")) == [
        (field, "invalid")
    ]
    assert client.get("/queues/q/messages/1").json()["payload"] == "\x00 is fine here"


def test_the_document_marks_the_strings_that_refuse_nul() -> None:
    """A pattern that excludes U+0000, which schemathesis honours when it generates requests."""
    document = deadletter.http.document()
    schemas = document["components"]["schemas"]
    item = schemas["EnqueueBatchRequest"]["properties"]["items"]["items"]["anyOf"][1]
    for schema in (
        document["components"]["parameters"]["queue"]["schema"],
        schemas["EnqueueRequest"]["properties"]["idempotency_key"]["anyOf"][0],
        item["properties"]["idempotency_key"]["anyOf"][0],
        schemas["FailRequest"]["properties"]["error"],
    ):
        assert schema["pattern"] == "^[^\\u0000]*$"
        assert re.fullmatch(schema["pattern"], "a\x00b") is None
        assert re.fullmatch(schema["pattern"], "a b") is not None


def test_the_dashboard_page_is_served(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<title>deadletter" in r.text


@pytest.mark.parametrize(("readme", "code"), readmes.blocks("python server"))
def test_the_readme_server_examples_run(
    readme: Path, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README blocks fenced `python server` need the server extra, so test_readme.py (which the
    install tests run without it) leaves them to this test."""
    monkeypatch.chdir(tmp_path)
    client = TestClient(readmes.run(readme, code)["app"])
    r = client.post("/jobs/queues/q/messages", json={"payload": "x"})
    assert r.status_code == 401
    assert client.get("/jobs/healthz").json() == {"status": "ok"}


def test_the_app_mounts_under_a_prefix(db: deadletter.Database) -> None:
    outer = Starlette(routes=[Mount("/jobs/v1", app=deadletter.http.app(db, token=TOKEN))])
    client = TestClient(outer, headers={"Authorization": f"Bearer {TOKEN}"})
    r = client.post("/jobs/v1/queues/a%2Fb/messages", json={"payload": "x"})
    assert r.status_code == 201
    assert r.headers["location"] == "/jobs/v1/queues/a%2Fb/messages/1"
    assert client.get(r.headers["location"]).json()["queue"] == "a/b"
    assert client.post("/jobs/v1/queues/a%2Fb/claim").json()["id"] == 1
    assert client.get("/jobs/v1/healthz", headers={"Authorization": ""}).status_code == 200
    assert client.get("/jobs/v1/").status_code == 200
    problem(client.get("/jobs/v1/nope"), 404, "not_found")
    assert client.get("/elsewhere").status_code == 404  # the outer app's own 404


@pytest.mark.parametrize("module", ["prometheus_client", "starlette"])
def test_without_the_server_extra_the_import_error_says_how_to_install_it(module: str) -> None:
    hidden = f"import sys; sys.modules[{module!r}] = None; import deadletter.http"
    result = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"ImportError: deadletter.http needs the server extra ({module} is missing): "
        "pip install 'deadletter[server]'"
    )
    queue_only = f"import sys; sys.modules[{module!r}] = None; import deadletter; print('ok')"
    assert subprocess.run([sys.executable, "-c", queue_only], capture_output=True).stdout == b"ok\n"
