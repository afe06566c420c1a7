"""The move routes of issue 22 in the HTTP API: ``POST /queues/{queue}/messages/{id}/move``
(the message, or a 409 problem with its reason) and ``POST /queues/{queue}/move`` (the bulk
action with its exact dry-run count), their validation problems, and the OpenAPI document's part.
Exact values on a virtual clock."""

from __future__ import annotations

from typing import Any

import deadletter
import pytest
from http_client import TestClient, at, client_of, fields, problem
from virtual_clock import Clock

from deadletter._deadletter import FILTERS
from deadletter.http import document


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    """Queue "q": 1 (key k1) dead at T0+10 of "HTTP 503", 2 dead at T0+20 of "HTTP 410", 3
    pending with a delay of 600 s, 4 succeeded at T0+30; queue "other" holds 5 with key k1. The
    clock ends at T0+100."""
    db = deadletter.open(clock=clock, lease=30)
    q = db.queue("q")
    q.enqueue("a 42", idempotency_key="k1", max_retries=1)
    q.enqueue("b 7", max_retries=1)
    q.enqueue("later", delay=600)
    q.enqueue("done")
    for id, error in ((1, "HTTP 503"), (2, "HTTP 410")):
        clock.advance(10)
        m = q.claim()
        assert m is not None and m.id == id
        q.fail(id, error, lease_token=m.lease_token)
    clock.advance(10)
    m = q.claim()
    assert m is not None and m.id == 4
    q.succeed(4, lease_token=m.lease_token)
    db.queue("other").enqueue("holder", idempotency_key="k1")
    clock.advance(70)
    return db


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


def listed(client: TestClient, queue: str = "q") -> list[dict[str, Any]]:
    r = client.get(f"/queues/{queue}/messages")
    assert r.status_code == 200, r.text
    messages: list[dict[str, Any]] = r.json()["messages"]
    return messages


def test_move_answers_the_message_in_its_new_queue(client: TestClient) -> None:
    before = client.get("/queues/q/messages/2").json()
    assert before["moved_from"] is None
    r = client.post("/queues/q/messages/2/move", json={"to_queue": "parking"})
    assert r.status_code == 200, r.text
    assert r.json() == {**before, "queue": "parking", "moved_from": "q", "updated_at": at(100)}
    assert client.get("/queues/parking/messages/2").json() == r.json()
    assert problem(client.get("/queues/q/messages/2"), 404, "not_found")["id"] == 2
    r = client.post("/queues/a%2Fb/messages/2/move", json={"to_queue": "q"})
    assert problem(r, 404, "not_found")["queue"] == "a/b"


def test_move_refuses_a_taken_key_and_a_wrong_status_with_their_reasons(
    client: TestClient,
) -> None:
    before = listed(client)
    r = client.post("/queues/q/messages/1/move", json={"to_queue": "other"})
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (1, "key_taken", None)
    r = client.post("/queues/q/messages/4/move", json={"to_queue": "other"})
    body = problem(r, 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (4, "wrong_status", "succeeded")
    assert listed(client) == before


@pytest.mark.parametrize(
    "path, body, expected",
    [
        ("messages/1/move", {"to_queue": "q"}, [("to_queue", "invalid")]),
        ("messages/1/move", {"to_queue": ""}, [("to_queue", "empty")]),
        ("messages/1/move", {}, [("to_queue", "type")]),
        ("messages/x/move", {"to_queue": 3}, [("id", "type"), ("to_queue", "type")]),
        ("messages/1/move", {"to_queue": "p", "group": "g"}, [("group", "unknown")]),
        ("move", {"to_queue": "q"}, [("to_queue", "invalid")]),
        ("move", {}, [("to_queue", "type")]),
        (
            "move",
            {"to_queue": "p", "status": "succeeded", "limit": 0, "dry_run": "no"},
            [("status", "invalid"), ("limit", "out_of_range"), ("dry_run", "type")],
        ),
        ("move", {"to_queue": "p", "dead_before": "yesterday"}, [("dead_before", "invalid")]),
    ],
)
def test_bad_move_bodies_are_422_and_change_nothing(
    client: TestClient, path: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    before = listed(client)
    r = client.post(f"/queues/q/{path}", json=body)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert listed(client) == before


def test_move_all_counts_exactly_on_a_dry_run_and_changes_nothing(client: TestClient) -> None:
    before = listed(client)
    for body, count in [
        ({}, 3),  # 1 and 2 dead, 3 pending; not 4 (succeeded)
        ({"status": "dead"}, 2),
        ({"delayed": True}, 1),
        ({"error_contains": "410"}, 1),
        ({"limit": 2}, 2),
    ]:
        r = client.post("/queues/q/move", json={"to_queue": "parking", **body, "dry_run": True})
        assert (r.status_code, r.json()) == (200, {"count": count, "dry_run": True}), body
    r = client.post("/queues/q/move", json={"to_queue": "other", "dry_run": True})
    assert r.json() == {"count": 2, "dry_run": True}  # 1's key is taken in "other"
    assert listed(client) == before
    assert listed(client, "parking") == []


def test_move_all_moves_what_the_filters_select(client: TestClient) -> None:
    r = client.post("/queues/q/move", json={"to_queue": "other", "status": "dead"})
    assert r.json() == {"count": 1, "dry_run": False}  # 2; 1 stays: its key is taken there
    assert [(m["id"], m["status"]) for m in listed(client)] == [
        (1, "dead"),
        (3, "pending"),
        (4, "succeeded"),
    ]
    moved = [(m["id"], m["moved_from"]) for m in listed(client, "other")]
    assert moved == [(2, "q"), (5, None)]


def test_the_document_has_both_routes_and_the_enqueue_links_to_move() -> None:
    doc = document()
    one = doc["paths"]["/queues/{queue}/messages/{id}/move"]["post"]
    assert one["operationId"] == "move"
    assert one["requestBody"]["required"] is True
    assert {"200", "404", "409", "422"} <= set(one["responses"])
    bulk = doc["paths"]["/queues/{queue}/move"]["post"]
    assert bulk["operationId"] == "moveAll"
    assert bulk["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/BulkResult"
    }
    schemas = doc["components"]["schemas"]
    request = schemas["MoveAllRequest"]
    assert list(request["properties"]) == ["to_queue", *FILTERS, "limit", "dry_run"]
    assert request["required"] == ["to_queue"]
    assert request["properties"]["status"]["anyOf"][0] == {"enum": ["pending", "dead"]}
    assert schemas["MoveRequest"]["required"] == ["to_queue"]
    assert "moved_from" in schemas["Message"]["properties"]
    reasons = schemas["Problem"]["properties"]["reason"]["enum"]
    assert reasons == ["wrong_status", "lease_lost", "key_taken"]
    links = doc["paths"]["/queues/{queue}/messages"]["post"]["responses"]["201"]["links"]
    assert links["Move"]["operationId"] == "move"
    assert links["Move"]["parameters"] == {
        "queue": "$request.path.queue",
        "id": "$response.body#/id",
    }
