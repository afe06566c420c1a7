"""A file written by deadletter 0.1.0 (tests/fixtures/v0.1.0.sqlite, made by
tests/fixtures/make_v1_sqlite.py) opens at schema version 8 with every message intact."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

from virtual_clock import T0, Clock

import deadletter

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "v0.1.0.sqlite"


def at(seconds: float) -> object:
    return T0 + timedelta(seconds=seconds)


def expected(id: int, payload: str, status: str, retries: tuple[int, int], **changes: object) -> dict[str, object]:
    retry_count, max_retries = retries
    fields: dict[str, object] = {
        "id": id, "queue": "emails", "payload": payload, "status": status,
        "retry_count": retry_count, "max_retries": max_retries, "retry_after": None,
        "last_error": None, "created_at": T0, "updated_at": at(10), "lease_token": None,
        "lease_expires_at": None, "idempotency_key": None, "deduplicated": False,
        "first_failed_at": None, "dead_at": None, "errors": [],
        "errors_dropped": retry_count, "replay_count": 0, "replayed_at": None, "group": None,
        "expires_at": None, "moved_from": None,
    }  # fmt: skip
    fields.update(changes)
    return fields


def test_a_0_1_0_file_is_upgraded_and_keeps_every_message(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    shutil.copyfile(FIXTURE, path)
    clock = Clock(T0 + timedelta(seconds=100))
    with deadletter.open(path, clock=clock) as db:
        q = db.queue("emails")
        assert [m.to_dict() for m in q.list() + db.queue("other queue/ü").list()] == [
            expected(
                1, '{"to": "a@example.com"}', "processing", (1, 3), last_error="boom",
                lease_token="3af2372f-a438-4bdd-801f-f029843f632a", lease_expires_at=at(70),
            ),  # its retry_after of 0.1.0 is dropped: set only while pending
            expected(
                2, "claimed", "processing", (0, 5), updated_at=T0,
                lease_token="5d91d29d-6a48-48a9-9c57-90722f796f7d", lease_expires_at=at(60),
            ),
            expected(3, "acked", "succeeded", (0, 3)),
            expected(4, "retried", "pending", (1, 4), retry_after=at(12), last_error="HTTP 503"),
            expected(5, "poison", "dead", (1, 1), last_error="malformed", dead_at=at(10)),
            expected(6, "replayed", "pending", (0, 1), updated_at=at(15)),
            expected(7, "x" * 1000, "pending", (0, 3), queue="other queue/ü", updated_at=T0),
        ]  # fmt: skip
        assert [(s.queue, s.pending, s.processing, s.expired, s.dead) for s in db.queues()] == [
            ("emails", 2, 2, 2, 1),
            ("other queue/ü", 1, 0, 0, 0),
        ]
        # claim reaps the two expired leases, then takes the oldest due message (4).
        taken = q.claim(lease=30)
        assert taken is not None and (taken.id, taken.retry_after) == (4, None)
        assert [(e["attempt"], e["error"]) for e in q.get(1).errors] == [(2, "lease expired")]
        failed = q.fail(4, "HTTP 500", lease_token=taken.lease_token)
        assert (failed.status, failed.retry_count, failed.errors_dropped) == ("pending", 2, 1)
        assert failed.errors == [{"attempt": 2, "error": "HTTP 500", "at": clock.now}]
        replayed = q.replay(5)
        assert (replayed.status, replayed.replay_count, replayed.replayed_at) == (
            "pending",
            1,
            clock.now,
        )
        assert q.enqueue("new").id == 8
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (8,)
    conn.close()
    assert FIXTURE.read_bytes() != path.read_bytes()
