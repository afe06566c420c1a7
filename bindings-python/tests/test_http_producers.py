"""The producer and worker routes of the HTTP API (issue 8): the `Idempotency-Key` header (and the
body's `idempotency_key`), enqueue delays and the `Retry-After` of an empty claim, batch enqueue,
and lease extension. Exact values: a virtual clock, which the app also reads for Retry-After."""

from __future__ import annotations

import asyncio

import deadletter
import httpx
import pytest
from http_client import JSON, TestClient, at, client_of, fields, pending, problem
from virtual_clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    return deadletter.open(clock=clock, lease=30)


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


# ---------------------------------------------------------------------------------------------
# Idempotency keys


def test_a_known_idempotency_key_answers_200_with_the_existing_message(
    client: TestClient, clock: Clock
) -> None:
    first = client.post("/queues/q/messages", json={"payload": "a"}, headers=key("order-7"))
    assert first.status_code == 201
    assert first.headers["location"] == "/queues/q/messages/1"
    assert "content-location" not in first.headers
    assert first.json() == pending(1, "q", "a", idempotency_key="order-7")

    clock.advance(5)
    client.post("/queues/q/claim")  # the message moves on; the key still finds it
    again = client.post("/queues/q/messages", json={"payload": "b"}, headers=key("order-7"))
    assert again.status_code == 200
    assert again.headers["content-location"] == "/queues/q/messages/1"
    assert "location" not in again.headers
    body = again.json()
    assert (body["id"], body["payload"], body["status"]) == (1, "a", "processing")
    assert body["deduplicated"] is True
    assert client.get("/queues/q/messages/1").json()["deduplicated"] is False
    assert [m["id"] for m in client.get("/queues/q/messages").json()["messages"]] == [1]


def test_the_key_is_per_queue(client: TestClient) -> None:
    a = client.post("/queues/a/messages", json={"payload": "x"}, headers=key("k"))
    b = client.post("/queues/b/messages", json={"payload": "x"}, headers=key("k"))
    assert (a.status_code, b.status_code) == (201, 201)
    assert (a.json()["id"], b.json()["id"]) == (1, 2)


@pytest.mark.parametrize(
    "header, stored",
    [
        ("8e03978e-40d5", "8e03978e-40d5"),  # bare, as most clients send it
        ('"8e03978e-40d5"', "8e03978e-40d5"),  # an RFC 8941 string, as the IETF draft writes it
        ('"say \\"hi\\" \\\\ bye"', 'say "hi" \\ bye'),  # its two escapes
        ('say "hi"', 'say "hi"'),  # bare: quotes inside are the key's
    ],
)
def test_the_header_is_a_quoted_string_or_the_bare_key(
    client: TestClient, header: str, stored: str
) -> None:
    r = client.post("/queues/q/messages", json={"payload": "x"}, headers=key(header))
    assert r.status_code == 201, r.text
    assert r.json()["idempotency_key"] == stored
    again = client.post("/queues/q/messages", json={"payload": "x", "idempotency_key": stored})
    assert (again.status_code, again.json()["id"]) == (200, 1)


def post_raw(db: deadletter.Database, header: bytes, body: dict[str, object]) -> httpx.Response:
    """An enqueue whose ``Idempotency-Key`` header is these bytes, as they are (Starlette's test
    client would re-encode them as UTF-8)."""

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=deadletter.http.app(db))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.post(
                "/queues/q/messages", json=body, headers=[(b"Idempotency-Key", header)]
            )

    return asyncio.run(post())


def test_a_non_ascii_header_is_read_as_utf_8_and_finds_the_body_s_key(
    db: deadletter.Database, client: TestClient
) -> None:
    first = post_raw(db, "clé".encode(), {"payload": "x"})
    assert (first.status_code, first.json()["idempotency_key"]) == (201, "clé")
    again = client.post("/queues/q/messages", json={"payload": "x", "idempotency_key": "clé"})
    assert (again.status_code, again.json()["id"], again.json()["deduplicated"]) == (200, 1, True)
    # The other way round: the body's key first, then the header's.
    client.post("/queues/q/messages", json={"payload": "y", "idempotency_key": "ключ"})
    header = post_raw(db, "ключ".encode(), {"payload": "y"})
    assert (header.status_code, header.json()["id"], header.json()["deduplicated"]) == (
        200,
        2,
        True,
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"cl\xe9",  # Latin-1, not UTF-8
        b'"cl\xc3\xa9"',  # UTF-8 in quotes: an RFC 8941 string is printable ASCII
    ],
)
def test_a_header_that_is_not_utf_8_or_a_non_ascii_quoted_string_is_422(
    db: deadletter.Database, client: TestClient, raw: bytes
) -> None:
    r = post_raw(db, raw, {"payload": "x"})
    assert fields(problem(r, 422, "validation_failed")) == [("Idempotency-Key", "invalid")]
    assert client.get("/queues/q/messages").json()["messages"] == []


def test_the_body_may_carry_the_key_instead(client: TestClient) -> None:
    body = {"payload": "x", "idempotency_key": "k"}
    assert client.post("/queues/q/messages", json=body).status_code == 201
    r = client.post("/queues/q/messages", json=body)
    assert (r.status_code, r.json()["deduplicated"]) == (200, True)
    # A null key in the body is an omitted one: the header's is used.
    body = {"payload": "y", "idempotency_key": None}
    assert client.post("/queues/q/messages", json=body, headers=key("k")).status_code == 200


@pytest.mark.parametrize(
    "headers, body, expected",
    [
        (key("k"), {"idempotency_key": "k"}, [("Idempotency-Key", "invalid")]),
        (key(""), {}, [("Idempotency-Key", "empty")]),
        (key('""'), {}, [("Idempotency-Key", "empty")]),
        (key("x" * 256), {}, [("Idempotency-Key", "too_long")]),
        (key('"' + "x" * 256 + '"'), {}, [("Idempotency-Key", "too_long")]),
        (key('"unterminated'), {}, [("Idempotency-Key", "invalid")]),
        (key('"bad \\n escape"'), {}, [("Idempotency-Key", "invalid")]),
        (key('"trailing" x'), {}, [("Idempotency-Key", "invalid")]),
        ({}, {"idempotency_key": ""}, [("idempotency_key", "empty")]),
        ({}, {"idempotency_key": "a\x00b"}, [("idempotency_key", "invalid")]),
        ({}, {"idempotency_key": 7}, [("idempotency_key", "type")]),
        (key("x" * 256), {"max_retries": 0}, [("max_retries", "out_of_range")]),
    ],
)
def test_a_bad_key_is_422_naming_where_it_came_from(
    client: TestClient,
    headers: dict[str, str],
    body: dict[str, object],
    expected: list[tuple[str, str]],
) -> None:
    r = client.post("/queues/q/messages", json={"payload": "x", **body}, headers=headers)
    errors = fields(problem(r, 422, "validation_failed"))
    assert errors[: len(expected)] == expected
    assert client.get("/queues/q/messages").json()["messages"] == []


def test_a_header_given_twice_is_422(client: TestClient) -> None:
    r = client.post(
        "/queues/q/messages",
        json={"payload": "x"},
        headers=[("Idempotency-Key", "a"), ("Idempotency-Key", "b")],  # type: ignore[arg-type]
    )
    assert fields(problem(r, 422, "validation_failed")) == [("Idempotency-Key", "invalid")]


# ---------------------------------------------------------------------------------------------
# Delays and Retry-After


def test_a_delayed_message_and_the_retry_after_of_an_empty_claim(
    client: TestClient, clock: Clock
) -> None:
    r = client.post("/queues/q/messages", json={"payload": "later", "delay": 90})
    assert r.status_code == 201
    assert r.json() == pending(1, "q", "later", retry_after=at(90))
    empty = client.post("/queues/q/claim")
    assert (empty.status_code, empty.headers["retry-after"]) == (204, "90")
    clock.advance(89.5)
    assert client.post("/queues/q/claim").headers["retry-after"] == "1"  # rounded up
    clock.advance(0.5)
    claimed = client.post("/queues/q/claim")
    assert claimed.status_code == 200 and claimed.json()["retry_after"] is None


def test_retry_after_follows_the_backoff_of_a_failed_message(
    client: TestClient, clock: Clock
) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    m = client.post("/queues/q/claim").json()
    client.post("/queues/q/messages/1/fail", json={"error": "e", "lease_token": m["lease_token"]})
    assert client.post("/queues/q/claim").headers["retry-after"] == "2"  # min(2^1, 3600) s
    clock.advance(0.001)
    assert client.post("/queues/q/claim").headers["retry-after"] == "2"


def test_no_retry_after_when_nothing_is_delayed(client: TestClient) -> None:
    empty = client.post("/queues/q/claim")
    assert empty.status_code == 204 and "retry-after" not in empty.headers
    client.post("/queues/q/messages", json={"payload": "x"})
    client.post("/queues/q/claim")  # processing: nothing pending
    empty = client.post("/queues/q/claim")
    assert empty.status_code == 204 and "retry-after" not in empty.headers


def test_no_retry_after_from_a_paused_queue(client: TestClient, clock: Clock) -> None:
    """A paused queue takes nothing until resumed, whenever its delayed message comes due: its
    empty claim says no time to come back (it said the message's, 90)."""
    client.post("/queues/q/messages", json={"payload": "later", "delay": 90})
    assert client.post("/queues/q/pause").status_code == 200
    empty = client.post("/queues/q/claim")
    assert empty.status_code == 204 and "retry-after" not in empty.headers
    clock.advance(90)
    empty = client.post("/queues/q/claim")
    assert empty.status_code == 204 and "retry-after" not in empty.headers
    client.post("/queues/q/resume")
    assert client.post("/queues/q/claim").json()["payload"] == "later"
    client.post("/queues/q/messages", json={"payload": "again", "delay": 5})
    assert client.post("/queues/q/claim").headers["retry-after"] == "5"


@pytest.mark.parametrize(
    "delay, code",
    [(-1, "out_of_range"), (30 * 86400 + 1, "out_of_range"), ("10", "type"), (True, "type")],
)
def test_a_bad_delay_is_422(client: TestClient, delay: object, code: str) -> None:
    r = client.post("/queues/q/messages", json={"payload": "x", "delay": delay})
    assert fields(problem(r, 422, "validation_failed")) == [("delay", code)]


# ---------------------------------------------------------------------------------------------
# Batch enqueue


def test_a_batch_is_enqueued_in_item_order(client: TestClient) -> None:
    items = ["a", {"payload": "b", "max_retries": 5, "idempotency_key": "b", "delay": 10}]
    r = client.post("/queues/q/messages:batch", json={"items": items})
    assert r.status_code == 201
    assert r.json() == {
        "messages": [
            pending(1, "q", "a"),
            pending(2, "q", "b", max_retries=5, idempotency_key="b", retry_after=at(10)),
        ]
    }
    again = [{"payload": "b2", "idempotency_key": "b"}]
    r = client.post("/queues/q/messages:batch", json={"items": again})
    assert r.status_code == 200  # nothing new
    assert [(m["id"], m["deduplicated"]) for m in r.json()["messages"]] == [(2, True)]
    r = client.post("/queues/q/messages:batch", json={"items": [*again, "d"]})
    assert r.status_code == 201
    assert [(m["id"], m["deduplicated"]) for m in r.json()["messages"]] == [(2, True), (3, False)]


def test_a_batch_is_all_or_nothing_and_its_errors_name_the_item(client: TestClient) -> None:
    def errors(items: list[object]) -> list[tuple[str, str, object]]:
        body = problem(
            client.post("/queues/q/messages:batch", json={"items": items}),
            422,
            "validation_failed",
        )
        return [(e["field"], e["code"], e.get("index")) for e in body["errors"]]

    assert errors(["a", {"payload": 5}, {"payload": "c", "idempotency_key": ""}]) == [
        ("payload", "type", 1),
        ("idempotency_key", "empty", 2),
    ]
    assert errors(["a", {"payload": "b", "priority": 1}]) == [("priority", "unknown", 1)]
    assert client.get("/queues/q/messages").json()["messages"] == []


@pytest.mark.parametrize(
    "path, body, message",
    [
        ("messages", {"payload": None}, "must be a string, got null"),
        ("messages", {"payload": {"a": 1}}, "must be a string, got an object"),
        ("messages", {"payload": [1]}, "must be a string, got an array"),
        ("messages", {"payload": 1.5}, "must be a string, got a number"),
        ("messages", {"payload": "x", "max_retries": True}, "must be an integer, got a boolean"),
        ("messages", {"payload": "x", "idempotency_key": 5}, "must be a string, got an integer"),
        ("messages", {"payload": "x", "delay": "5"}, "must be a number of seconds, got a string"),
        ("messages:batch", {"items": None}, "must be an array of payloads or objects, got null"),
        ("claim", {"lease": "5"}, "must be a number of seconds, got a string"),
        ("replay", {"dead_before": 5}, "must be an RFC 3339 date-time in UTC, got an integer"),
        ("messages/1/fail", {"error": "x", "retryable": "no"}, "must be a boolean, got a string"),
    ],
)
def test_validation_messages_name_json_types_not_python_ones(
    client: TestClient, path: str, body: dict[str, object], message: str
) -> None:
    r = client.post(f"/queues/q/{path}", json=body)
    problem_body = problem(r, 422, "validation_failed")
    assert [e["message"] for e in problem_body["errors"]] == [message]
    assert problem_body["detail"].endswith(message)


def test_a_batch_refuses_the_idempotency_key_header_and_enqueues_nothing(
    client: TestClient,
) -> None:
    # Ignored, the header would let a client's retry of a batch enqueue it twice.
    for _ in range(2):
        r = client.post(
            "/queues/q/messages:batch", json={"items": ["a"]}, headers={"Idempotency-Key": "k"}
        )
        body = problem(r, 422, "validation_failed")
        assert body["errors"] == [
            {
                "field": "Idempotency-Key",
                "code": "invalid",
                "message": "is not taken by a batch: give each item its own idempotency_key",
            }
        ]
    assert client.get("/queues/q/messages").json()["messages"] == []


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"items": "a"}, [("items", "type")]),
        ({"items": ["x"] * 1001}, [("items", "too_large")]),
        ({}, [("items", "type")]),
        ({"messages": []}, [("messages", "unknown"), ("items", "type")]),  # items is missing
    ],
)
def test_a_bad_batch_body_is_422(
    client: TestClient, body: dict[str, object], expected: list[tuple[str, str]]
) -> None:
    r = client.post("/queues/q/messages:batch", json=body)
    assert fields(problem(r, 422, "validation_failed")) == expected


# ---------------------------------------------------------------------------------------------
# Lease extension


def test_extend_moves_the_lease_and_keeps_the_token(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    m = client.post("/queues/q/claim", json={"lease": 10}).json()
    clock.advance(5)
    r = client.post(
        "/queues/q/messages/1/extend", json={"lease_token": m["lease_token"], "lease": 60}
    )
    assert r.status_code == 200
    assert r.json() == {**m, "lease_expires_at": at(65), "updated_at": at(5)}
    default = client.post("/queues/q/messages/1/extend", json={"lease_token": m["lease_token"]})
    assert default.json()["lease_expires_at"] == at(35)  # the database's lease, 30 s


def test_extend_after_the_lease_was_lost_is_409(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    m = client.post("/queues/q/claim", json={"lease": 1}).json()
    clock.advance(2)
    assert client.post("/queues/q/claim").status_code == 204  # reaped: in backoff for 2 s
    r = client.post("/queues/q/messages/1/extend", json={"lease_token": m["lease_token"]})
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "wrong_status", "pending")
    clock.advance(2)
    assert client.post("/queues/q/claim").json()["lease_token"] != m["lease_token"]
    r = client.post("/queues/q/messages/1/extend", json={"lease_token": m["lease_token"]})
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "lease_lost", "processing")


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", [("body", "type")]),
        (b"{}", [("lease_token", "type")]),
        (b'{"lease_token": "t", "lease": 0}', [("lease", "out_of_range")]),
        (b'{"lease_token": "t", "visibility": 5}', [("visibility", "unknown")]),
    ],
)
def test_a_bad_extend_body_is_422(
    client: TestClient, content: bytes, expected: list[tuple[str, str]]
) -> None:
    client.post("/queues/q/messages", json={"payload": "x"})
    client.post("/queues/q/claim")
    r = client.post("/queues/q/messages/1/extend", content=content, headers=JSON)
    assert fields(problem(r, 422, "validation_failed")) == expected
