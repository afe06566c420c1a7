"""What keeps web pages from driving the HTTP API through a browser (issue 23; `_guard`): request
bodies must be ``application/json`` (415), a request from another ``Origin`` is refused (403), a
``Host`` the server does not answer for is refused (421, DNS rebinding), with or without a token,
mounted or not; allowed hosts and origins; the arguments of `app` and `deadletter serve`. The
same in Chromium: test_cross_origin.py."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import deadletter
import deadletter.http
import pytest
from http_client import TestClient, problem
from starlette.applications import Starlette
from starlette.routing import Mount

TOKEN = "guard-token"
PURGE = {"status": "dead", "older_than": 0}


@pytest.fixture
def db() -> deadletter.Database:
    """A database with one dead message (id 1, queue "jobs")."""
    db = deadletter.open()
    q = db.queue("jobs")
    q.enqueue("secret payload")
    m = q.claim()
    assert m is not None
    q.fail(m.id, "HTTP 410", lease_token=m.lease_token, retryable=False)
    return db


def untouched(db: deadletter.Database) -> None:
    """The fixture's database as it was: one dead message, nothing replayed or added."""
    assert [(m.id, m.status, m.replay_count) for m in db.queue("jobs").list()] == [(1, "dead", 0)]


# ---------------------------------------------------------------------------------------------
# Bodies: application/json only


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain"},  # what a page may send anywhere without a preflight
        {"Content-Type": "text/plain;charset=UTF-8"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "multipart/form-data; boundary=x"},
        {"Content-Type": "application/jsonx"},
        {},  # a body without a type
    ],
)
def test_a_body_that_is_not_declared_json_is_415_and_changes_nothing(
    db: deadletter.Database, headers: dict[str, str]
) -> None:
    client = TestClient(deadletter.http.app(db))
    for path, body in [
        ("/queues/jobs/purge", b'{"status": "dead", "older_than": 0}'),
        ("/queues/jobs/messages", b'{"payload": "planted"}'),
        ("/queues/jobs/replay", b"{}"),
    ]:
        r = client.post(path, content=body, headers=headers)
        detail = problem(r, 415, "unsupported_media_type")["detail"]
        assert detail == "the request body must be JSON, sent with `Content-Type: application/json`"
    untouched(db)


def test_an_empty_body_of_another_type_is_415_too(db: deadletter.Database) -> None:
    # A form of a foreign page without fields: no body, but declared as a form; replay-all with no
    # filters would replay every dead message.
    client = TestClient(deadletter.http.app(db))
    r = client.post("/queues/jobs/replay", headers={"Content-Type": "text/plain"})
    problem(r, 415, "unsupported_media_type")
    untouched(db)


def test_json_with_parameters_and_bodiless_requests_are_served(db: deadletter.Database) -> None:
    client = TestClient(deadletter.http.app(db))
    r = client.post(
        "/queues/jobs/messages",
        content=b'{"payload": "x"}',
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert r.status_code == 201
    assert client.post("/queues/jobs/claim").json()["payload"] == "x"  # no body, no type
    assert client.post("/queues/jobs/replay").json() == {
        "count": 1,
        "dry_run": False,
        "replayed": 1,
    }


def test_a_get_with_a_content_type_is_served(db: deadletter.Database) -> None:
    client = TestClient(deadletter.http.app(db))
    r = client.get("/queues/jobs/messages/1", headers={"Content-Type": "text/plain"})
    assert r.status_code == 200


# ---------------------------------------------------------------------------------------------
# Origin: the server's own, or one the operator allowed


@pytest.mark.parametrize("token", [None, TOKEN])
@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://localhost:8080",  # another port of this machine is another origin
        "https://localhost",  # and another scheme
        "null",  # a sandboxed frame, a data: URL
        "http://localhost/path",
    ],
)
def test_a_request_from_another_origin_is_403_with_or_without_a_token(
    db: deadletter.Database, origin: str, token: Any
) -> None:
    headers = {"Origin": origin}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    client = TestClient(deadletter.http.app(db, token=token))
    for method, path, body in [
        ("POST", "/queues/jobs/purge", PURGE),
        ("POST", "/queues/jobs/messages", {"payload": "planted"}),
        ("POST", "/queues/jobs/replay", None),
        ("DELETE", "/queues/jobs/messages/1", None),
        ("GET", "/queues/jobs/messages", None),
    ]:
        r = client.request(method, path, json=body, headers=headers)
        detail = problem(r, 403, "forbidden")["detail"]
        assert detail.startswith(f"requests from the origin {origin!r} are refused"), detail
        assert "secret" not in r.text
    untouched(db)


def test_the_servers_own_origin_is_served(db: deadletter.Database) -> None:
    client = TestClient(deadletter.http.app(db))
    for origin in ["http://localhost", "http://LOCALHOST:80"]:  # the default port, any case
        r = client.post("/queues/jobs/replay", headers={"Origin": origin})
        assert r.status_code == 200, r.text
    ip = TestClient(deadletter.http.app(db), base_url="http://127.0.0.1:8000")
    own = {"Origin": "http://127.0.0.1:8000"}
    r = ip.post("/queues/jobs/messages", json={"payload": "x"}, headers=own)
    assert r.status_code == 201
    assert "access-control-allow-origin" not in r.headers  # no CORS without allowed origins


def test_an_allowed_origin_is_served_with_cors(db: deadletter.Database) -> None:
    origins = ["https://ops.example.com", "http://localhost:3000"]
    client = TestClient(deadletter.http.app(db, allow_origins=origins))
    origin = {"Origin": "https://ops.example.com"}
    preflight = client.options(
        "/queues/jobs/purge",
        headers={
            **origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://ops.example.com"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    r = client.post("/queues/jobs/purge", json=PURGE, headers=origin)
    assert (r.status_code, r.json()) == (200, {"purged": 1})
    assert r.headers["access-control-allow-origin"] == "https://ops.example.com"
    created = client.post("/queues/jobs/messages", json={"payload": "y"}, headers=origin)
    assert "location" in created.headers["access-control-expose-headers"].lower()
    other = client.options(
        "/queues/jobs/purge",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    problem(other, 403, "forbidden")


# ---------------------------------------------------------------------------------------------
# Host: localhost, IP addresses, and the names the operator allowed


@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_rebinding_host_is_421_and_reads_nothing(db: deadletter.Database, token: Any) -> None:
    # A page of evil.example whose name now resolves to 127.0.0.1 reads the server as its own
    # origin: its requests carry its own name.
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    client = TestClient(deadletter.http.app(db, token=token), base_url="http://evil.example:8000")
    for method, path in [
        ("GET", "/queues/jobs/messages"),
        ("GET", "/queues"),
        ("GET", "/"),
        ("GET", "/healthz"),
        ("POST", "/queues/jobs/replay"),
    ]:
        r = client.request(method, path, headers={**auth, "Origin": "http://evil.example:8000"})
        detail = problem(r, 421, "misdirected_request")["detail"]
        assert detail.startswith("this server does not answer for the host 'evil.example'")
        assert "secret" not in r.text
    untouched(db)


@pytest.mark.parametrize(
    "host",
    ["localhost", "LocalHost.", "localhost:9", "127.0.0.1:8000", "10.1.2.3", "[::1]:8000", "[::1]"],
)
def test_localhost_and_ip_addresses_are_always_served(db: deadletter.Database, host: str) -> None:
    client = TestClient(deadletter.http.app(db))
    assert client.get("/queues/jobs/messages/1", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    ("allowed", "host", "status"),
    [
        (["queue.example.com"], "queue.example.com:8000", 200),
        (["Queue.Example.COM"], "queue.example.com", 200),
        (["queue.example.com"], "example.com", 421),
        (["queue.example.com"], "evil.queue.example.com", 421),
        (["*.example.com"], "queue.example.com", 200),
        (["*.example.com"], "a.b.example.com", 200),
        (["*.example.com"], "example.com", 421),
        (["*.example.com"], "evilexample.com", 421),
        (["*"], "anything.example", 200),
        ([], "localhost.evil.example", 421),
        ([], "127.0.0.1.evil.example", 421),
        ([], "testserver", 421),
    ],
)
def test_allowed_hosts(db: deadletter.Database, allowed: list[str], host: str, status: int) -> None:
    client = TestClient(deadletter.http.app(db, allowed_hosts=allowed))
    r = client.get("/queues/jobs/messages/1", headers={"Host": host})
    assert r.status_code == status, r.text


@pytest.mark.parametrize("host", ["a b", "host:port", "[::1", "[evil]", "a:1:2", "", "h:99999"])
def test_a_host_that_is_not_host_port_is_400(db: deadletter.Database, host: str) -> None:
    client = TestClient(deadletter.http.app(db))
    r = client.get("/queues/jobs/messages/1", headers={"Host": host})
    problem(r, 400, "bad_request")


def test_the_guard_holds_under_a_prefix_and_lets_the_pages_own_requests_through(
    db: deadletter.Database,
) -> None:
    outer = Starlette(routes=[Mount("/jobs/v1", app=deadletter.http.app(db))])
    client = TestClient(outer)
    foreign = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    r = client.post("/jobs/v1/queues/jobs/purge", json=PURGE, headers=foreign)
    problem(r, 403, "forbidden")
    plain = {"Content-Type": "text/plain"}
    r = client.post("/jobs/v1/queues/jobs/purge", content=b"{}", headers=plain)
    problem(r, 415, "unsupported_media_type")
    untouched(db)
    assert client.get("/jobs/v1/", headers={"Host": "evil.example"}).status_code == 421
    # The dashboard's own request: same origin, JSON.
    own = {"Origin": "http://localhost"}
    assert client.get("/jobs/v1/").status_code == 200
    r = client.post("/jobs/v1/queues/jobs/messages/1/replay", json={}, headers=own)
    assert (r.status_code, r.json()["status"]) == (200, "pending")


def test_the_openapi_document_lists_the_guards_problems(db: deadletter.Database) -> None:
    paths = TestClient(deadletter.http.app(db)).get("/openapi.json").json()["paths"]
    ref = "#/components/responses/"
    for path, methods in paths.items():
        for method, operation in methods.items():
            responses = operation["responses"]
            assert responses["400"] == {"$ref": ref + "BadRequest"}, (path, method)
            assert responses["403"] == {"$ref": ref + "Forbidden"}, (path, method)
            assert responses["421"] == {"$ref": ref + "MisdirectedRequest"}, (path, method)
            has_body = "requestBody" in operation
            assert ("415" in responses) == has_body, (path, method)


# ---------------------------------------------------------------------------------------------
# Arguments


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"allowed_hosts": "example.com"}, TypeError, "allowed_hosts must be a list of str"),
        ({"allowed_hosts": [1]}, TypeError, "allowed_hosts must hold str, got int"),
        ({"allowed_hosts": ["example.com:80"]}, ValueError, "allowed_hosts: 'example.com:80' is"),
        ({"allowed_hosts": ["http://example.com"]}, ValueError, "allowed_hosts: 'http://"),
        ({"allowed_hosts": ["*example.com"]}, ValueError, "allowed_hosts: '*example.com' is"),
        ({"allow_origins": "https://a.example"}, TypeError, "allow_origins must be a list of str"),
        ({"allow_origins": ["https://a.example/x"]}, ValueError, "allow_origins: 'https://a."),
        ({"allow_origins": ["a.example"]}, ValueError, "allow_origins: 'a.example' is not"),
        ({"allow_origins": ["*"]}, ValueError, "allow_origins: '*' is not an origin"),
        ({"allow_origins": ["null"]}, ValueError, "allow_origins: 'null' is not an origin"),
        ({"allow_origins": ["ftp://a.example"]}, ValueError, "allow_origins: 'ftp://a"),
    ],
)
def test_bad_hosts_and_origins_are_refused_when_the_app_is_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        deadletter.http.app(deadletter.open(), **options)
    assert str(raised.value).startswith(message), str(raised.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--allowed-host", "example.com:80"], "--allowed-host: 'example.com:80' is not a host"),
        (["--allow-origin", "example.com"], "--allow-origin: 'example.com' is not an origin"),
    ],
)
def test_serve_refuses_bad_hosts_and_origins_as_usage_errors(
    tmp_path: Any, args: list[str], message: str
) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "deadletter.cli", "serve", str(tmp_path / "x.db"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stderr
    assert message in run.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created
