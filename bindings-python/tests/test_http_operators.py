"""The operator routes of the HTTP API (issue 7): queue statistics, bulk replay with its filters,
purge, delete, and the Prometheus metrics. Exact values on a virtual clock."""

from __future__ import annotations

from typing import Any

import deadletter
import pytest
from http_client import JSON, TestClient, at, client_of, fields, problem
from prometheus_client.parser import text_string_to_metric_families
from virtual_clock import Clock

# When each dead message of "emails" died (seconds after T0), and of what.
DEATHS = {1: (0, "HTTP 503 Service Unavailable"), 2: (10, "HTTP 410 Gone"), 3: (20, "HTTP 503")}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(clock: Clock) -> deadletter.Database:
    """Queue "emails": messages 1-3 dead (`DEATHS`), 4 succeeded at T0+30, 5 pending since T0;
    queue "other": message 6, enqueued at T0+30 with a delay of 600 s. The clock ends at T0+100."""
    db = deadletter.open(clock=clock, lease=30)
    emails = db.queue("emails")
    for n in range(1, 6):
        emails.enqueue(f"email {n}")
    for id, (when, error) in DEATHS.items():
        clock.now = clock.now.replace(second=when)
        m = emails.claim()
        assert m is not None and m.id == id
        emails.fail(id, error, lease_token=m.lease_token, retryable=False)
    clock.advance(10)
    m = emails.claim()
    assert m is not None and m.id == 4
    emails.succeed(4, lease_token=m.lease_token)
    db.queue("other").enqueue("later", delay=600)
    clock.advance(70)
    return db


@pytest.fixture
def client(db: deadletter.Database, clock: Clock) -> TestClient:
    return client_of(db, clock)


def statuses(client: TestClient, queue: str = "emails") -> dict[int, str]:
    messages = client.get(f"/queues/{queue}/messages").json()["messages"]
    return {m["id"]: m["status"] for m in messages}


EMAILS = {
    "queue": "emails",
    "pending": 1,
    "processing": 0,
    "succeeded": 1,
    "dead": 3,
    "expired": 0,
    "delayed": 0,
    "next_due_at": None,
    "oldest_due_age": 100.0,
    "oldest_dead_age": 100.0,
    "paused": False,
    "expired_dead": 0,
    "expired_discarded": 0,
}
OTHER = {
    "queue": "other",
    "pending": 1,
    "processing": 0,
    "succeeded": 0,
    "dead": 0,
    "expired": 0,
    "delayed": 1,
    "next_due_at": at(630),
    "oldest_due_age": None,
    "oldest_dead_age": None,
    "paused": False,
    "expired_dead": 0,
    "expired_discarded": 0,
}


# ---------------------------------------------------------------------------------------------
# Statistics


def test_the_statistics_of_one_queue(client: TestClient) -> None:
    assert client.get("/queues/emails/stats").json() == EMAILS
    assert client.get("/queues/other/stats").json() == OTHER
    empty = client.get("/queues/nothing%2Fhere/stats").json()
    assert empty == {
        **OTHER,
        "queue": "nothing/here",
        "pending": 0,
        "delayed": 0,
        "next_due_at": None,
    }


def test_every_queue_that_holds_messages_by_name(client: TestClient, clock: Clock) -> None:
    assert client.get("/queues").json() == {"queues": [EMAILS, OTHER]}
    assert client_of(deadletter.open(clock=clock), clock).get("/queues").json() == {"queues": []}


def test_a_bad_queue_name_for_stats_is_422(client: TestClient) -> None:
    r = client.get("/queues/" + "x" * 256 + "/stats")
    assert fields(problem(r, 422, "validation_failed")) == [("queue", "too_long")]
    r = client.get("/queues/a%00b/stats")
    assert fields(problem(r, 422, "validation_failed")) == [("queue", "invalid")]


# ---------------------------------------------------------------------------------------------
# Replay all


@pytest.mark.parametrize(
    "body, replayed",
    [
        ({}, [1, 2, 3]),
        (None, [1, 2, 3]),  # no body at all
        ({"error_contains": "503"}, [1, 3]),
        ({"error_contains": "Gone"}, [2]),
        ({"error_contains": "gone"}, []),  # case-sensitive
        ({"dead_after": at(10)}, [2, 3]),  # inclusive
        ({"dead_before": at(10)}, [1]),  # exclusive
        ({"dead_after": at(5), "dead_before": at(20)}, [2]),
        # Message 2 died at 10.000 s: sub-millisecond bounds compare exactly with it.
        ({"dead_before": "2026-01-01T00:00:10.0019Z"}, [1, 2]),
        ({"dead_before": "2026-01-01T00:00:10.0009+00:00"}, [1, 2]),
        ({"dead_before": "2026-01-01T00:00:10.0000001Z"}, [1, 2]),  # beyond the microsecond
        ({"dead_after": "2026-01-01T00:00:10.0001Z"}, [3]),
        ({"dead_after": "2026-01-01T00:00:10.0000001Z"}, [3]),
        ({"dead_after": "2026-01-01T00:00:09.9999Z"}, [2, 3]),
        ({"dead_before": "9999-12-31T23:59:59.99999999Z"}, [1, 2, 3]),
        ({"dead_after": "2026-01-01t00:00:10z"}, [2, 3]),
        ({"dead_after": "2026-01-01T00:00:00-00:00", "error_contains": "503"}, [1, 3]),
        ({"limit": 1}, [1]),  # the lowest id first
        ({"limit": 2, "error_contains": "503"}, [1, 3]),
        (dict.fromkeys(("error_contains", "dead_before", "dead_after", "limit")), [1, 2, 3]),
    ],
)
def test_replay_all_replays_what_the_filters_select(
    client: TestClient, body: Any, replayed: list[int]
) -> None:
    r = client.post("/queues/emails/replay", json=body)
    assert r.status_code == 200
    assert r.json() == {"count": len(replayed), "dry_run": False, "replayed": len(replayed)}
    expected = {1: "dead", 2: "dead", 3: "dead", 4: "succeeded", 5: "pending"}
    expected.update({id: "pending" for id in replayed})
    assert statuses(client) == expected


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"dead_before": "2026-01-01T00:00:00+01:00"}, [("dead_before", "invalid")]),
        ({"dead_before": "2026-02-30T00:00:00Z"}, [("dead_before", "invalid")]),
        ({"dead_before": "2026-01-01T23:59:60Z"}, [("dead_before", "invalid")]),
        ({"dead_before": "0000-01-01T00:00:00Z"}, [("dead_before", "invalid")]),
        ({"dead_before": "2026-01-01"}, [("dead_before", "invalid")]),
        ({"dead_before": "2026-01-01 00:00:00Z"}, [("dead_before", "invalid")]),
        (
            {"dead_before": "yesterday", "dead_after": ""},
            [("dead_after", "invalid"), ("dead_before", "invalid")],  # the core's order
        ),
        ({"dead_before": 1767225600}, [("dead_before", "type")]),
        ({"limit": 0}, [("limit", "out_of_range")]),
        ({"limit": "all"}, [("limit", "type")]),
        ({"error_contains": 503}, [("error_contains", "type")]),
        ({"status": "pending"}, [("status", "invalid")]),
        ({"dry_run": "no"}, [("dry_run", "type")]),
        ({"delayed": True}, [("delayed", "invalid")]),
        ({"status": "dead", "color": "red"}, [("color", "unknown")]),
    ],
)
def test_bad_replay_filters_are_422_and_replay_nothing(
    client: TestClient, body: dict[str, object], expected: list[tuple[str, str]]
) -> None:
    r = client.post("/queues/emails/replay", json=body)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert statuses(client)[1] == "dead"


# ---------------------------------------------------------------------------------------------
# Purge and delete


def test_purge_deletes_finished_messages_not_changed_for_older_than(client: TestClient) -> None:
    r = client.post("/queues/emails/purge", json={"status": "dead", "older_than": 85})
    assert (r.status_code, r.json()) == (200, {"purged": 2})  # died 100 and 90 s ago
    assert statuses(client) == {3: "dead", 4: "succeeded", 5: "pending"}
    r = client.post("/queues/emails/purge", json={"status": "succeeded", "older_than": 0.5})
    assert r.json() == {"purged": 1}
    r = client.post("/queues/emails/purge", json={"status": "dead", "older_than": 3600})
    assert r.json() == {"purged": 0}
    assert statuses(client) == {3: "dead", 5: "pending"}


def test_a_purged_messages_idempotency_key_is_free_again(client: TestClient, clock: Clock) -> None:
    client.post("/queues/q/messages", json={"payload": "x"}, headers={"Idempotency-Key": "k"})
    m = client.post("/queues/q/claim").json()
    client.post(f"/queues/q/messages/{m['id']}/succeed", json={"lease_token": m["lease_token"]})
    again = {"payload": "y", "idempotency_key": "k"}
    assert client.post("/queues/q/messages", json=again).status_code == 200
    clock.advance(0.001)
    assert client.post("/queues/q/purge", json={"status": "succeeded", "older_than": 0}).json() == {
        "purged": 1
    }
    assert client.post("/queues/q/messages", json=again).status_code == 201


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", [("body", "type")]),
        (b'{"status": "pending", "older_than": 1}', [("status", "invalid")]),
        (b'{"status": "dead"}', [("older_than", "type")]),
        (b'{"older_than": 1}', [("status", "type")]),
        (b'{"status": "dead", "older_than": -1}', [("older_than", "out_of_range")]),
        (b'{"status": "dead", "older_than": "7d"}', [("older_than", "type")]),
        (b'{"status": "dead", "older_than": 1, "limit": 5}', [("limit", "unknown")]),
    ],
)
def test_a_bad_purge_body_is_422_and_purges_nothing(
    client: TestClient, content: bytes, expected: list[tuple[str, str]]
) -> None:
    r = client.post("/queues/emails/purge", content=content, headers=JSON)
    assert fields(problem(r, 422, "validation_failed")) == expected
    assert len(statuses(client)) == 5


def test_delete_answers_the_deleted_message(client: TestClient) -> None:
    before = client.get("/queues/emails/messages/2").json()
    r = client.delete("/queues/emails/messages/2")
    assert (r.status_code, r.json()) == (200, before)
    assert before["status"] == "dead"
    problem(client.get("/queues/emails/messages/2"), 404, "not_found")
    body = problem(client.delete("/queues/emails/messages/2"), 404, "not_found")
    assert (body["queue"], body["id"]) == ("emails", 2)
    assert client.delete("/queues/emails/messages/4").json()["status"] == "succeeded"


def test_delete_refuses_a_live_message(client: TestClient) -> None:
    body = problem(client.delete("/queues/emails/messages/5"), 409, "conflict")
    assert (body["id"], body["reason"], body["message_status"]) == (5, "wrong_status", "pending")
    assert statuses(client)[5] == "pending"


# ---------------------------------------------------------------------------------------------
# Metrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_in_the_prometheus_text_format(client: TestClient) -> None:
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")
    values = samples(r.text)
    messages = {
        (labels[0][1], labels[1][1]): value
        for (name, labels), value in values.items()
        if name == "deadletter_messages"
    }
    assert messages == {
        ("emails", "pending"): 1,
        ("emails", "processing"): 0,
        ("emails", "succeeded"): 1,
        ("emails", "dead"): 3,
        ("other", "pending"): 1,
        ("other", "processing"): 0,
        ("other", "succeeded"): 0,
        ("other", "dead"): 0,
    }
    oldest = {k: v for k, v in values.items() if k[0] == "deadletter_oldest_dead_age_seconds"}
    assert oldest == {("deadletter_oldest_dead_age_seconds", (("queue", "emails"),)): 100.0}
    assert "# HELP deadletter_messages Messages in the queue, per status." in r.text


def test_metrics_in_openmetrics_when_asked(client: TestClient) -> None:
    r = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.endswith("# EOF\n")
    assert 'deadletter_messages{queue="emails",status="dead"} 3.0' in r.text


def test_metrics_need_the_token(db: deadletter.Database, clock: Clock) -> None:
    client = client_of(db, clock, token="t")
    problem(client.get("/metrics"), 401, "unauthorized")
    assert client.get("/metrics", headers={"Authorization": "Bearer t"}).status_code == 200
