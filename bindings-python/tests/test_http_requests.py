"""What a request may carry besides its body, and what the server refuses in it (the new-user
findings of session 6): a query string on a route that takes none (F1: it was dropped, so
``POST .../delete?dry_run=true`` deleted), integers too long to read (F2: a 500), ``null`` for
``dry_run`` (F10: ``{"dry_run": null}`` ran the action), percent-encoding that is not UTF-8 or
not an escape (F10), CORS for every method (F4), the console's anti-framing headers (F10) and
tokens no client could send (F12); and an ``Idempotency-Key`` header on a route that takes none
(session 7's N10: ignored, so a client believed its retried claim or bulk action safe)."""

from __future__ import annotations

from typing import Any

import deadletter
import deadletter.http
import pytest
from http_client import TestClient, problem

TOKEN = "requests-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LONG = "9" * 5000
"""More digits than Python's int() reads (4 300): it raised ValueError, a 500."""


@pytest.fixture
def db() -> deadletter.Database:
    """Queue "q": 1 and 2 dead (errors ``keep-me`` and ``delete-me``), 3 pending, 4 processing."""
    db = deadletter.open()
    q = db.queue("q")
    for error in ("keep-me", "delete-me"):
        q.enqueue(error)
        m = q.claim()
        assert m is not None
        q.fail(m.id, error, lease_token=m.lease_token, retryable=False)
    q.enqueue("pending", delay=60)
    q.enqueue("processing")
    assert q.claim() is not None
    return db


@pytest.fixture
def client(db: deadletter.Database) -> TestClient:
    return TestClient(deadletter.http.app(db, token=TOKEN), headers=AUTH)


def state(db: deadletter.Database) -> list[tuple[Any, ...]]:
    """Every message of the database, with what an action could change."""
    return [
        (m.queue, m.id, m.status, m.replay_count, m.retry_after, m.lease_token)
        for name in ("q", "elsewhere")
        for m in db.queue(name).list()
    ]


def fields_of(response: Any) -> list[tuple[str, str]]:
    return [(e["field"], e["code"]) for e in response.json()["errors"]]


# ---------------------------------------------------------------------------------------------
# F1: a query string on a route that takes none is refused; nothing changes


ROUTES = [
    ("POST", "/queues/q/delete?error_contains=delete-me&dry_run=true", None),
    ("POST", "/queues/q/replay?error_contains=delete-me&dry_run=true", None),
    ("POST", "/queues/q/retry-now?dry_run=true", None),
    ("POST", "/queues/q/move?dry_run=true", {"to_queue": "elsewhere"}),
    ("POST", "/queues/q/purge?dry_run=true", {"status": "dead", "older_than": 0}),
    ("DELETE", "/queues/q/messages/1?dry_run=true", None),
    ("POST", "/queues/q/messages/1/replay?dry_run=true", None),
    ("POST", "/queues/q/messages/3/retry-now?dry_run=true", None),
    ("POST", "/queues/q/messages/1/move?dry_run=true", {"to_queue": "elsewhere"}),
    ("POST", "/queues/q/claim?lease=5", None),
    ("POST", "/queues/q/messages?delay=60", {"payload": "x"}),
    ("POST", "/queues/q/messages:batch?x=1", {"items": ["x"]}),
    ("POST", "/queues/q/pause?x=1", None),
    ("POST", "/queues/q/resume?x=1", None),
    ("PUT", "/queues/q/settings?max_retries=1", {}),
    ("GET", "/queues/q/stats?foo=1", None),
    ("GET", "/queues?foo=1", None),
    ("GET", "/queues/q/messages/1?foo=1", None),
    ("GET", "/queues/q/settings?foo=1", None),
    ("GET", "/metrics?foo=1", None),
    ("GET", "/healthz?foo=1", None),
    ("GET", "/openapi.json?foo=1", None),
]


@pytest.mark.parametrize(("method", "url", "body"), ROUTES)
def test_a_query_parameter_a_route_does_not_take_is_422_and_changes_nothing(
    db: deadletter.Database, client: TestClient, method: str, url: str, body: Any
) -> None:
    before, settings = state(db), db.queue("q").settings()
    r = client.request(method, url, json=body)
    problem(r, 422, "validation_failed")
    names = [part.partition("=")[0] for part in url.partition("?")[2].split("&")]
    assert fields_of(r) == [(name, "unknown") for name in names]
    # Pause and PUT settings take `create` (a queue that names none is a 404 without it).
    creating = {("POST", "/queues/q/pause"), ("PUT", "/queues/q/settings")}
    takes = "create" if (method, url.partition("?")[0]) in creating else "none"
    assert f"(expected: {takes})" in r.json()["errors"][0]["message"]
    assert (state(db), db.queue("q").settings()) == (before, settings)


ENQUEUES = ("/queues/q/messages", "/queues/q/messages:batch")
POSTS = [
    *((url.partition("?")[0], body) for method, url, body in ROUTES if method == "POST"),
    ("/queues/q/reap", None),
    ("/queues/q/messages/4/succeed", None),
    ("/queues/q/messages/4/fail", {"error": "e"}),
    ("/queues/q/messages/4/extend", {"lease_token": "t"}),
]
"""Every POST route, with a body it takes (`ENQUEUES` too)."""


@pytest.mark.parametrize(("url", "body"), [(u, b) for u, b in POSTS if u not in ENQUEUES])
def test_an_idempotency_key_header_is_422_and_changes_nothing_but_on_an_enqueue(
    db: deadletter.Database, client: TestClient, url: str, body: Any
) -> None:
    before, settings = state(db), db.queue("q").settings()
    r = client.post(url, json=body, headers={"Idempotency-Key": "k-1"})
    problem(r, 422, "validation_failed")
    assert r.json()["errors"] == [
        {
            "field": "Idempotency-Key",
            "code": "invalid",
            "message": "is taken only by an enqueue (POST /queues/{queue}/messages): "
            "this request is not deduplicated",
        }
    ]
    assert (state(db), db.queue("q").settings()) == (before, settings)


def test_a_refused_header_comes_with_the_other_faults_of_the_request(
    db: deadletter.Database, client: TestClient
) -> None:
    before = state(db)
    r = client.post(
        "/queues/q/claim?x=1", json={"lease": 0, "y": 1}, headers={"Idempotency-Key": "k-1"}
    )
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [
        ("Idempotency-Key", "invalid"),
        ("x", "unknown"),
        ("y", "unknown"),
        ("lease", "out_of_range"),
    ]
    assert state(db) == before


def test_a_malformed_idempotency_key_comes_with_the_other_faults_of_the_enqueue(
    db: deadletter.Database, client: TestClient
) -> None:
    # Tester T9 (session 13): the enqueue's own header check raised at once, and the 422 named
    # only the header.
    before = state(db)
    for headers in (
        [("Idempotency-Key", '"unterminated')],
        [("Idempotency-Key", "a"), ("Idempotency-Key", "b")],
    ):
        r = client.post(
            "/queues/q/messages?x=1",
            content=b'{"payload": "p", "delay": -1, "y": 1}',
            headers=[("content-type", "application/json"), *headers],
        )
        problem(r, 422, "validation_failed")
        assert fields_of(r) == [
            ("x", "unknown"),
            ("Idempotency-Key", "invalid"),
            ("y", "unknown"),
            ("delay", "out_of_range"),
        ]
    assert state(db) == before


def test_without_a_query_string_the_bulk_delete_still_deletes(
    db: deadletter.Database, client: TestClient
) -> None:
    r = client.post("/queues/q/delete", json={"error_contains": "delete-me"})
    assert r.json() == {"count": 1, "dry_run": False}
    assert [m.id for m in db.queue("q").list(status="dead")] == [1]


def test_the_console_page_takes_any_query_string(client: TestClient) -> None:
    assert client.get("/?utm_source=mail").status_code == 200


def test_the_list_still_takes_its_own_parameters_and_refuses_others(client: TestClient) -> None:
    r = client.get("/queues/q/messages?error_contains=keep&status=dead")
    assert [m["id"] for m in r.json()["messages"]] == [1]
    r = client.get("/queues/q/messages?dry_run=true")
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [("dry_run", "unknown")]


def test_the_query_string_is_checked_after_the_token(db: deadletter.Database) -> None:
    r = TestClient(deadletter.http.app(db, token=TOKEN)).post("/queues/q/delete?dry_run=true")
    problem(r, 401, "unauthorized")


# ---------------------------------------------------------------------------------------------
# F2: integers too long to read are out of range, not a 500


@pytest.mark.parametrize(
    ("method", "url", "field"),
    [
        ("GET", f"/queues/q/messages/{LONG}", "id"),
        ("GET", f"/queues/q/messages/-{LONG}", "id"),
        ("POST", f"/queues/q/messages/{LONG}/succeed", "id"),
        ("DELETE", f"/queues/q/messages/{LONG}", "id"),
        ("GET", f"/queues/q/messages?after_id={LONG}", "after_id"),
        ("GET", f"/queues/q/messages?limit={LONG}", "limit"),
        ("GET", "/queues/q/messages?limit=99999999999999999999999", "limit"),
    ],
)
def test_an_integer_of_any_length_out_of_range_is_422(
    db: deadletter.Database, client: TestClient, method: str, url: str, field: str
) -> None:
    before = state(db)
    r = client.request(method, url)
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [(field, "out_of_range")]
    assert state(db) == before


def test_leading_zeros_do_not_count_as_digits(client: TestClient) -> None:
    r = client.get(f"/queues/q/messages/{'0' * 5000}1")
    assert (r.status_code, r.json()["id"]) == (200, 1)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"payload": "x", "max_retries": %s}' % LONG, "max_retries"),
        ('{"payload": "x", "max_retries": -%s}' % LONG, "max_retries"),
        ('{"payload": "x", "delay": 1e400}', "delay"),  # infinity as a double
        ('{"payload": "x", "delay": -1e400}', "delay"),
    ],
)
def test_a_number_in_a_body_too_large_to_read_is_out_of_range(
    db: deadletter.Database, client: TestClient, raw: str, field: str
) -> None:
    before = state(db)
    r = client.post("/queues/q/messages", content=raw, headers={"Content-Type": "application/json"})
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [(field, "out_of_range")]
    assert "set_int_max_str_digits" not in r.text
    assert state(db) == before


# ---------------------------------------------------------------------------------------------
# F10: null is not a boolean


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/queues/q/delete", {"error_contains": "delete-me", "dry_run": None}),
        ("/queues/q/replay", {"dry_run": None}),
        ("/queues/q/retry-now", {"dry_run": None}),
        ("/queues/q/move", {"to_queue": "elsewhere", "dry_run": None}),
    ],
)
def test_null_for_a_boolean_is_422_and_changes_nothing(
    db: deadletter.Database, client: TestClient, url: str, body: dict[str, Any]
) -> None:
    before = state(db)
    r = client.post(url, json=body)
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [("dry_run", "type")]
    assert state(db) == before


def test_null_still_means_omitted_for_the_other_optional_fields(
    db: deadletter.Database, client: TestClient
) -> None:
    body = {"error_contains": None, "limit": None, "status": "dead", "dry_run": True}
    assert client.post("/queues/q/delete", json=body).json() == {"count": 2, "dry_run": True}
    # retryable's default keeps the message (examples/http_worker.py sends null for it).
    r = client.post("/queues/q/messages/4/fail", json={"error": "e", "retryable": None})
    assert (r.json()["status"], db.queue("q").get(4).retry_count) == ("pending", 1)


def test_the_openapi_document_says_dry_run_is_not_nullable(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("ReplayAllRequest", "DeleteAllRequest", "RetryNowAllRequest", "MoveAllRequest"):
        assert schemas[name]["properties"]["dry_run"]["type"] == "boolean", name


# ---------------------------------------------------------------------------------------------
# F10: percent-encoding


@pytest.mark.parametrize(
    ("url", "field", "code"),
    [
        ("/queues/q/messages?payload_contains=%FF", "payload_contains", "type"),
        ("/queues/q/messages?payload_contains=%ZZ", "payload_contains", "invalid"),
        ("/queues/q/messages?%FF=1", "query", "type"),
        ("/queues/a%ZZ/stats", "queue", "invalid"),
        ("/queues/a%FF/stats", "queue", "type"),
        ("/queues/q/messages/1%", "id", "invalid"),
    ],
)
def test_a_query_or_path_that_is_not_percent_encoded_utf8_is_422(
    client: TestClient, url: str, field: str, code: str
) -> None:
    r = client.get(url)
    problem(r, 422, "validation_failed")
    assert fields_of(r) == [(field, code)]


def test_a_malformed_escape_creates_no_queue(db: deadletter.Database, client: TestClient) -> None:
    problem(client.post("/queues/a%ZZ/messages", json={"payload": "x"}), 422, "validation_failed")
    assert [s.queue for s in db.queues()] == ["q"]


def test_well_formed_query_strings_still_decode(client: TestClient) -> None:
    for query in ("error_contains=keep%2Dme", "error_contains=keep-me", "error_contains=keep+"):
        r = client.get(f"/queues/q/messages?{query}&status=dead")
        expected = [] if query.endswith("+") else [1]  # + is a space: "keep " is in no error
        assert [m["id"] for m in r.json()["messages"]] == expected, query


# ---------------------------------------------------------------------------------------------
# F4, F10, F12: CORS, framing, tokens


def test_an_allowed_origin_may_call_every_method_of_the_api(db: deadletter.Database) -> None:
    origin = "https://ops.example.com"
    client = TestClient(deadletter.http.app(db, allow_origins=[origin]))
    for method in ("GET", "POST", "PUT", "DELETE"):
        r = client.options(
            "/queues/q/settings",
            headers={"Origin": origin, "Access-Control-Request-Method": method},
        )
        assert r.status_code == 200, method
    r = client.put("/queues/q/settings", json={"max_retries": 7}, headers={"Origin": origin})
    assert (r.status_code, r.json()["max_retries"]) == (200, 7)
    assert r.headers["access-control-allow-origin"] == origin


def test_the_console_may_not_be_framed(client: TestClient) -> None:
    r = client.get("/")
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["content-security-policy"] == "frame-ancestors 'none'"


@pytest.mark.parametrize("token", ["pässwörd€", "tab\tin", "nul\x00", "del\x7f", "é"])
def test_a_token_no_header_can_carry_is_refused(db: deadletter.Database, token: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        deadletter.http.app(db, token=token)


def test_a_token_of_printable_ascii_with_inner_spaces_is_taken(db: deadletter.Database) -> None:
    token = "a b!~\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"
    client = TestClient(deadletter.http.app(db, token=token))
    assert client.get("/queues", headers={"Authorization": f"Bearer {token}"}).status_code == 200
