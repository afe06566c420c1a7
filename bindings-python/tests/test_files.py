"""Files that are not what deadletter wrote: other applications' databases are refused without a
byte changed (issue 6 item 4), and rows with values deadletter never writes are reported as
`StoreError` naming the message and the column, from every read path (item 6)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pytest

import deadletter


def other_application(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    conn.close()


def same_version_other_shape(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, subject TEXT, sent INTEGER)")
        conn.execute("INSERT INTO messages (subject, sent) VALUES ('hello', 1)")
        conn.execute("PRAGMA user_version = 1")
    conn.close()


def newer_schema(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY)")
        conn.execute("PRAGMA user_version = 99")
    conn.close()


def negative_version(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = -3")
    conn.close()


def not_sqlite(path: Path) -> None:
    path.write_bytes(b"name,age\nalice,41\n" * 300)


@pytest.mark.parametrize(
    "make, refusal",
    [
        (other_application, "not a deadletter database"),
        (same_version_other_shape, "not a deadletter database"),
        (newer_schema, "schema version 99"),
        (negative_version, "not a deadletter database"),
        (not_sqlite, "not a database"),
    ],
    ids=["other-tables", "our-version-other-shape", "newer-version", "negative-version", "csv"],
)
def test_a_refused_file_is_left_byte_for_byte_as_it_was(
    tmp_path: Path, make: Callable[[Path], None], refusal: str
) -> None:
    path = tmp_path / "app.db"
    make(path)
    before = path.read_bytes()
    with pytest.raises(deadletter.StoreError, match=refusal):
        deadletter.open(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, -shm or -journal
    if before.startswith(b"SQLite format 3\x00"):
        assert before[18:20] == b"\x01\x01"  # still a rollback-journal database, not WAL


def test_a_new_file_is_ours_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    deadletter.open(path).close()
    header = path.read_bytes()[:100]
    assert header[18:20] == b"\x02\x02"  # WAL
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (8,)
    conn.close()
    with deadletter.open(path) as db:  # and it opens again
        assert db.queue("q").list() == []


T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LOOSE = "replace(replace(sql, ') STRICT', ')'), 'NOT NULL', '')"


def with_corrupt_row(tmp_path: Path, update: str, loosen: bool) -> Path:
    """Message 1 (pending, or processing with an expired lease when `update` makes it so) among
    others of queue "q", then `update` applied to its row behind deadletter's back. `loosen`
    first drops STRICT and NOT NULL from the table, as an older or foreign writer might have."""
    path = tmp_path / "q.db"
    with deadletter.open(path, clock=lambda: T0) as db:
        q = db.queue("q")
        for payload in ("one", "two", "three"):
            q.enqueue(payload)
    if loosen:
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute(f"UPDATE sqlite_schema SET sql = {LOOSE} WHERE name = 'messages'")
        conn.close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE messages SET {update} WHERE id = 1")
        # The others are not due: a claim can only take message 1 (or reap it).
        conn.execute("UPDATE messages SET retry_after = 1893456000000, retry_count = 1 WHERE id > 1")
    conn.close()
    return path


PROCESSING = "status = 'processing', lease_token = 't', lease_expires_at = "
EXPIRED = PROCESSING + "1767225000000, "  # 10 minutes before T0
READS: dict[str, Callable[[deadletter.Queue], object]] = {
    "get": lambda q: q.get(1),
    "list": lambda q: q.list(),
    "list-status": lambda q: q.list(status="pending"),
    "claim": lambda q: q.claim(),
}


@pytest.mark.parametrize(
    "update, column, loosen, reads",
    [
        ("created_at = 9223372036854775807", "created_at", False, "get list list-status claim"),
        ("updated_at = -62135596800001", "updated_at", False, "get list list-status claim"),
        (EXPIRED + "retry_after = 300000000000000", "retry_after", False, "get list claim"),
        (PROCESSING + "-9223372036854775808", "lease_expires_at", False, "get list claim"),
        ("retry_count = -1", "retry_count", False, "get list list-status claim"),
        ("max_retries = 4294967296", "max_retries", False, "get list list-status claim"),
        # A status deadletter never writes is in none of the status indexes (the SQLite schema
        # has no index of every message since version 8), so only a read by id sees it.
        ("status = 'zombie'", "status", False, "get"),
        ("created_at = 'yesterday'", "created_at", True, "get list list-status claim"),
        ("created_at = 1.5", "created_at", True, "get list list-status claim"),
        ("payload = NULL", "payload", True, "get list list-status claim"),
        ("payload = x'ff00'", "payload", True, "get list list-status claim"),
        (EXPIRED.replace("'t'", "x'07'") + "last_error = NULL", "lease_token", True,
         "get list claim"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.isidentifier() else None,
)
def test_a_value_deadletter_never_writes_is_a_store_error_naming_message_and_column(
    tmp_path: Path, update: str, column: str, loosen: bool, reads: str
) -> None:
    path = with_corrupt_row(tmp_path, update, loosen)
    with sqlite3.connect(path) as conn:
        before = conn.execute("SELECT * FROM messages ORDER BY id").fetchall()
    conn.close()
    with deadletter.open(path, clock=lambda: T0) as db:
        q = db.queue("q")
        for read in reads.split():
            with pytest.raises(deadletter.StoreError) as caught:
                READS[read](q)
            assert f"message 1 is corrupt: column {column}:" in str(caught.value), read
        assert q.get(2).payload == "two"  # the other messages still read
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT * FROM messages ORDER BY id").fetchall() == before
    conn.close()


def test_the_edges_of_the_time_range_read_back_as_datetimes(tmp_path: Path) -> None:
    path = tmp_path / "edges.db"
    with deadletter.open(path, clock=lambda: T0) as db:
        db.queue("q").enqueue("x")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE messages SET created_at = -62135596800000, updated_at = 253402300799999"
        )
    conn.close()
    with deadletter.open(path, clock=lambda: T0) as db:
        m = db.queue("q").get(1)
    assert m.created_at == datetime(1, 1, 1, tzinfo=timezone.utc)
    assert m.updated_at == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)


@pytest.mark.parametrize("name", ["file:bar.db?mode=memory", "file:foo.db"])
def test_a_path_is_a_file_name_never_a_sqlite_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with deadletter.open(name) as db:
        db.queue("q").enqueue("kept")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no foo.db, nothing in memory
    with deadletter.open(name) as db:
        assert [m.payload for m in db.queue("q").list()] == ["kept"]
    with deadletter.open(tmp_path / name) as db:  # the same file, by its absolute path
        assert [m.payload for m in db.queue("q").list()] == ["kept"]


def test_only_the_str_memory_is_in_memory_a_path_of_that_name_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with deadletter.open(":memory:") as db:
        db.queue("q").enqueue("gone")
    assert list(tmp_path.iterdir()) == []
    with deadletter.open(Path(":memory:")) as db:
        db.queue("q").enqueue("kept")
    assert [p.name for p in tmp_path.iterdir()] == [":memory:"]
    with deadletter.open(Path(":memory:")) as db:
        assert [m.payload for m in db.queue("q").list()] == ["kept"]


@pytest.mark.parametrize("path", ["/tmp/a\x00b", Path("a\x00b")])
def test_a_path_with_a_nul_character_is_a_validation_error(path: object) -> None:
    with pytest.raises(deadletter.ValidationError) as raised:
        deadletter.open(path)  # type: ignore[arg-type]
    assert raised.value.errors == [
        {"field": "path", "code": "invalid", "message": "must not contain a NUL character"}
    ]
