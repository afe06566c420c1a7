"""The routes of issue 22 in the HTTP API: the list's filters and keyset pages, the bulk actions
(replay, delete, retry now) with their exact dry-run counts, and retry now of one message; their
validation problems (every rejected field at once) and the OpenAPI document's part. Exact values
on a virtual clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import deadletter
import pytest
from http_client import TestClient, at, client_of, fields, problem
from virtual_clock import T0, Clock

from deadletter._deadletter import FILTERS
from deadletter.http import document


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    """Queue "q": 1 (group g1, key k1) dead at T0+30 of "HTTP 503 Service Unavailable", 2 dead at
    T0+40 of "HTTP 410 Gone", 3 enqueued at T0+10 with a delay of 600 s, 4 enqueued at T0+20 and
    succeeded at T0+50. The clock ends at T0+100."""
    db = deadletter.open(clock=clock, lease=30)
    q = db.queue("q")
    q.enqueue('{"customer": 42}', group="g1", idempotency_key="k1", max_retries=1)
    q.enqueue('{"customer": 7}', max_retries=1)
    clock.advance(10)
    q.enqueue("plain", delay=600)
    clock.advance(10)
    q.enqueue("plain 4")
    for id, error in ((1, "HTTP 503 Service Unavailable"), (2, "HTTP 410 Gone")):
        clock.advance(10)
        m = q.claim()
        assert m is not None and m.id == id
        q.fail(id, error, lease_token=m.lease_token)
    clock.advance(10)
    m = q.claim()
    assert m is not None and m.id == 4
    q.succeed(4, lease_token=m.lease_token)
    clock.advance(50)
    return db


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


def listed(client: TestClient, query: str = "") -> list[dict[str, Any]]:
    r = client.get(f"/queues/q/messages?{query}")
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def ids(client: TestClient, query: str) -> list[int]:
    return [m["id"] for m in listed(client, query)]


def statuses(client: TestClient) -> dict[int, str]:
    return {m["id"]: m["status"] for m in listed(client)}


# ---------------------------------------------------------------------------------------------
# The list's filters and pages


@pytest.mark.parametrize(
    "query, expected",
    [
        ("", [1, 2, 3, 4]),
        ("payload_contains=customer", [1, 2]),
        ("payload_contains=Customer", []),  # case-sensitive
        ("payload_contains=%22customer%22%3A%2042", [1]),  # '"customer": 42'
        ("error_contains=HTTP", [1, 2]),
        ("error_contains=410&status=dead", [2]),
        ("group=g1", [1]),
        ("group=g", []),  # exactly
        ("idempotency_key=k1", [1]),
        ("delayed=true", [3]),
        ("delayed=false", []),
        ("status=pending&delayed=true", [3]),
        (f"created_after={at(10)}", [3, 4]),  # after <= t
        (f"created_before={at(10)}", [1, 2]),  # t < before
        (f"updated_after={at(40)}&updated_before={at(50)}", [2]),
        (f"dead_after={at(35)}", [2]),
        (f"dead_before={at(35)}", [1]),
        (f"dead_after={at(0)}&error_contains=503&payload_contains=customer", [1]),
    ],
)
def test_the_list_selects_by_every_filter(
    client: TestClient, query: str, expected: list[int]
) -> None:
    assert ids(client, query) == expected


def test_a_filtered_list_goes_on_by_next_after_id(client: TestClient) -> None:
    pages = []
    after = ""
    while True:
        r = client.get(f"/queues/q/messages?payload_contains=customer&limit=1{after}")
        page = r.json()
        pages.append(([m["id"] for m in page["messages"]], page["next_after_id"]))
        if page["next_after_id"] is None:
            break
        after = f"&after_id={page['next_after_id']}"
    assert pages == [([1], 1), ([2], 2), ([], None)]
    page = client.get("/queues/q/messages?payload_contains=customer&limit=2").json()
    assert ([m["id"] for m in page["messages"]], page["next_after_id"]) == ([1, 2], 2)
    page = client.get("/queues/q/messages?payload_contains=customer&limit=3").json()
    assert ([m["id"] for m in page["messages"]], page["next_after_id"]) == ([1, 2], None)


def test_bad_list_filters_are_reported_together(client: TestClient) -> None:
    r = client.get(
        "/queues/q/messages?payload_contains=&group=&delayed=yes&created_after=yesterday"
        "&idempotency_key=a%00b&limit=0"
    )
    assert sorted(fields(problem(r, 422, "validation_failed"))) == [
        ("created_after", "invalid"),  # the HTTP layer's (not RFC 3339), with the queue's
        ("delayed", "type"),
        ("group", "empty"),
        ("idempotency_key", "invalid"),
        ("limit", "out_of_range"),
        ("payload_contains", "empty"),
    ]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("status=processing&delayed=true", [("delayed", "invalid")]),
        ("error_contains=a%00", [("error_contains", "invalid")]),
        (f"dead_before={at(0)[:-1]}%2B01:00", [("dead_before", "invalid")]),  # not UTC
        ("color=red", [("color", "unknown")]),
        ("group=a&group=b", [("group", "invalid")]),  # given twice
    ],
)
def test_a_bad_list_filter_is_422(
    client: TestClient, query: str, expected: list[tuple[str, str]]
) -> None:
    r = client.get(f"/queues/q/messages?{query}")
    assert fields(problem(r, 422, "validation_failed")) == expected


# ---------------------------------------------------------------------------------------------
# Bulk actions and their dry runs


def test_a_dry_run_counts_exactly_and_changes_nothing(client: TestClient) -> None:
    before = listed(client)
    for route, body, count in [
        ("replay", {"payload_contains": "customer"}, 2),
        ("replay", {"error_contains": "410"}, 1),
        ("replay", {"limit": 1}, 1),
        ("delete", {}, 3),  # 1 and 2 dead, 4 succeeded
        ("delete", {"status": "succeeded"}, 1),
        ("retry-now", {}, 1),  # 3, delayed
        ("retry-now", {"payload_contains": "customer"}, 0),
    ]:
        r = client.post(f"/queues/q/{route}", json={**body, "dry_run": True})
        expected: dict[str, Any] = {"count": count, "dry_run": True}
        if route == "replay":
            expected["replayed"] = 0  # nothing was replayed
        assert (r.status_code, r.json()) == (200, expected), (route, body)
    assert listed(client) == before  # every field of every message


def test_replay_takes_the_filters(client: TestClient) -> None:
    r = client.post("/queues/q/replay", json={"payload_contains": "42", "dry_run": False})
    assert r.json() == {"count": 1, "dry_run": False, "replayed": 1}
    assert statuses(client) == {1: "pending", 2: "dead", 3: "pending", 4: "succeeded"}
    assert client.post("/queues/q/replay", json={"group": "g1"}).json()["count"] == 0


def test_delete_removes_the_finished_messages_the_filters_select(client: TestClient) -> None:
    r = client.post("/queues/q/delete", json={"error_contains": "HTTP"})
    assert r.json() == {"count": 2, "dry_run": False}
    assert statuses(client) == {3: "pending", 4: "succeeded"}
    r = client.post("/queues/q/messages", json={"payload": "again", "idempotency_key": "k1"})
    assert (r.status_code, r.json()["id"]) == (201, 5)  # the key is free again
    assert client.post("/queues/q/delete", json={}).json() == {"count": 1, "dry_run": False}
    assert statuses(client) == {3: "pending", 5: "pending"}


def test_retry_now_makes_the_delayed_messages_due(
    client: TestClient, db: deadletter.Database
) -> None:
    assert client.post("/queues/q/claim").status_code == 204  # 3 is delayed until T0+610
    r = client.post("/queues/q/retry-now", json={"created_after": at(5)})
    assert r.json() == {"count": 1, "dry_run": False}
    message = db.queue("q").get(3)
    assert (message.retry_after, message.updated_at) == (None, T0 + timedelta(seconds=100))
    r = client.post("/queues/q/claim")
    assert (r.status_code, r.json()["id"]) == (200, 3)


@pytest.mark.parametrize(
    "route, body, expected",
    [
        ("replay", {"status": "pending"}, [("status", "invalid")]),
        ("replay", {"delayed": True}, [("delayed", "invalid")]),
        ("delete", {"status": "pending"}, [("status", "invalid")]),
        ("delete", {"status": "processing"}, [("status", "invalid")]),
        ("delete", {"status": "dead", "delayed": False}, [("delayed", "invalid")]),
        ("delete", {"delayed": True}, [("delayed", "invalid")]),  # it deletes no pending one
        ("retry-now", {"status": "dead"}, [("status", "invalid")]),
        ("retry-now", {"delayed": False}, [("delayed", "invalid")]),
        ("retry-now", {"dry_run": 1}, [("dry_run", "type")]),
        ("retry-now", {"move_to": "x"}, [("move_to", "unknown")]),
        (
            "replay",
            {"dead_before": "yesterday", "limit": 0, "dry_run": "no", "group": ""},
            [  # the HTTP layer's error first, then the queue's
                ("dead_before", "invalid"),
                ("group", "empty"),
                ("limit", "out_of_range"),
                ("dry_run", "type"),
            ],
        ),
        ("delete", {"created_after": "2026-01-01"}, [("created_after", "invalid")]),
    ],
)
def test_bad_bulk_bodies_are_422_and_change_nothing(
    client: TestClient, route: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    before = listed(client)
    r = client.post(f"/queues/q/{route}", json=body)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert listed(client) == before


# ---------------------------------------------------------------------------------------------
# Retry now, one message


def test_retry_now_answers_the_message_due_now(client: TestClient) -> None:
    r = client.post("/queues/q/messages/3/retry-now")
    assert r.status_code == 200
    message = r.json()
    assert (message["id"], message["status"], message["retry_after"]) == (3, "pending", None)
    assert message["updated_at"] == at(100)
    again = client.post("/queues/q/messages/3/retry-now", json={})
    assert again.json() == message  # already due: unchanged


def test_retry_now_refuses_what_is_not_pending(client: TestClient) -> None:
    r = client.post("/queues/q/messages/1/retry-now")
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "wrong_status", "dead")
    r = client.post("/queues/q/messages/99/retry-now")
    assert (problem(r, 404, "not_found")["id"]) == 99
    r = client.post("/queues/q/messages/x/retry-now")
    assert fields(problem(r, 422, "validation_failed")) == [("id", "type")]
    r = client.post("/queues/q/messages/3/retry-now", json={"now": True})
    assert fields(problem(r, 422, "validation_failed")) == [("now", "unknown")]


# ---------------------------------------------------------------------------------------------
# The OpenAPI document


def test_the_document_lists_every_filter_for_the_list_and_the_bulk_bodies() -> None:
    doc = document()
    parameters = doc["paths"]["/queues/{queue}/messages"]["get"]["parameters"]
    names = [p["name"] for p in parameters if "name" in p]
    assert names == [*FILTERS, "limit", "after_id"]
    schemas = doc["components"]["schemas"]
    for name, statuses in [
        ("ReplayAllRequest", ["dead"]),
        ("DeleteAllRequest", ["succeeded", "dead"]),
        ("RetryNowAllRequest", ["pending"]),
    ]:
        properties = schemas[name]["properties"]
        assert list(properties) == [*FILTERS, "limit", "dry_run"], name
        assert properties["status"]["anyOf"][0] == {"enum": statuses}, name
    for path in ("replay", "delete", "retry-now"):
        operation = doc["paths"][f"/queues/{{queue}}/{path}"]["post"]
        assert operation["requestBody"]["required"] is False


def test_every_error_response_is_the_one_problem_schema() -> None:
    """A schema per code (``allOf`` of Problem and a ``const`` code) made openapi-python-client
    drop every error response; one referenced schema is typed by generators."""
    doc = document()
    for name, response in doc["components"]["responses"].items():
        content = response["content"]
        assert content == {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        }, name
    codes = doc["components"]["schemas"]["Problem"]["properties"]["code"]["enum"]
    assert codes == list(deadletter.http.PROBLEMS)


def test_an_enqueued_message_links_to_retry_now_and_delete() -> None:
    links = document()["paths"]["/queues/{queue}/messages"]["post"]["responses"]["201"]["links"]
    assert links["RetryNow"]["operationId"] == "retryNow"
    assert links["Delete"]["operationId"] == "deleteMessage"
    assert links["RetryNow"]["parameters"] == {
        "queue": "$request.path.queue",
        "id": "$response.body#/id",
    }
