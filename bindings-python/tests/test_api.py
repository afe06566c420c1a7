"""Real-value tests of what the shared cases cannot show: Python types, the clock, closing, files,
threads, and the exception hierarchy."""

from __future__ import annotations

import multiprocessing
import pickle
import sqlite3
import threading
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from virtual_clock import T0, Clock

import deadletter

def test_context_manager_closes_and_later_calls_raise_store_error() -> None:
    with deadletter.open() as db:
        q = db.queue("emails")
        q.enqueue("x")
        assert not db.closed
    assert db.closed
    with pytest.raises(deadletter.StoreError) as info:
        q.get(1)
    assert info.value.code == "store"
    with pytest.raises(deadletter.StoreError):
        db.queue("other").enqueue("y")
    db.close()  # closing twice is fine


def test_exit_does_not_swallow_exceptions() -> None:
    with pytest.raises(KeyError):
        with deadletter.open() as db:
            raise KeyError("boom")
    assert db.closed


def test_timestamps_are_aware_utc_datetimes_from_the_clock() -> None:
    clock = Clock()
    db = deadletter.open(clock=clock)
    q = db.queue("q")
    m = q.enqueue("x")
    assert m.created_at == T0 and m.updated_at == T0
    assert m.created_at.tzinfo is timezone.utc
    assert m.retry_after is None and m.lease_expires_at is None
    clock.advance(1.5)
    c = q.claim(lease=10)
    assert c is not None
    assert c.lease_expires_at == T0 + timedelta(seconds=11.5)
    f = q.fail(c.id, "boom", lease_token=c.lease_token)
    assert f.retry_after == clock.now + timedelta(seconds=2)  # min(2^1, 3600) s


def test_a_clock_in_another_timezone_is_converted_to_utc() -> None:
    tz = timezone(timedelta(hours=5, minutes=30))
    db = deadletter.open(clock=lambda: T0.astimezone(tz))
    m = db.queue("q").enqueue("x")
    assert m.created_at == T0
    assert m.created_at.utcoffset() == timedelta(0)


def test_a_naive_clock_is_a_validation_error() -> None:
    db = deadletter.open(clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(deadletter.ValidationError) as info:
        db.queue("q").enqueue("x")
    assert isinstance(info.value, ValueError)
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("clock", "invalid")]
    with pytest.raises(deadletter.ValidationError):
        deadletter.open(clock=lambda: 5).queue("q").claim()  # type: ignore[arg-type, return-value]
    with pytest.raises(deadletter.ValidationError) as info:
        deadletter.open(clock=5)  # type: ignore[arg-type]
    assert info.value.errors[0]["field"] == "clock"


def test_the_default_clock_is_the_system_clock() -> None:
    before = datetime.now(timezone.utc)
    m = deadletter.open().queue("q").enqueue("x")
    after = datetime.now(timezone.utc)
    assert before - timedelta(milliseconds=1) <= m.created_at <= after


@pytest.mark.parametrize(
    "lease, ms",
    [
        (timedelta(minutes=2), 120_000),
        (timedelta(microseconds=1500), 2),  # rounded to the nearest millisecond
        (2, 2000),
        (0.25, 250),
        (0.0014, 1),
    ],
)
def test_lease_in_seconds_or_timedelta(lease: float | timedelta, ms: int) -> None:
    db = deadletter.open(clock=Clock())
    q = db.queue("q")
    q.enqueue("x")
    m = q.claim(lease=lease)
    assert m is not None
    assert m.lease_expires_at == T0 + timedelta(milliseconds=ms)


def test_open_time_lease_accepts_a_timedelta() -> None:
    db = deadletter.open(clock=Clock(), lease=timedelta(seconds=90))
    q = db.queue("q")
    q.enqueue("x")
    m = q.claim()
    assert m is not None and m.lease_expires_at == T0 + timedelta(seconds=90)


@pytest.mark.parametrize("lease", [0, -1, 43200.001, timedelta(hours=13), 10**30, float("inf")])
def test_lease_out_of_range_is_reported_as_lease(lease: object) -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.claim(lease=lease)  # type: ignore[arg-type]
    assert [e["field"] for e in info.value.errors] == ["lease"]


@pytest.mark.parametrize("lease", [True, "30", [30], float("nan")])
def test_lease_of_the_wrong_type(lease: object) -> None:
    with pytest.raises(deadletter.ValidationError) as info:
        deadletter.open(lease=lease)  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in info.value.errors] == [("lease", "type")]


def test_python_values_are_mapped_without_judging() -> None:
    q = deadletter.open().queue("q")
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue(b"bytes", max_retries=True)  # type: ignore[arg-type]
    errors = {e["field"]: e for e in info.value.errors}
    assert errors["payload"]["code"] == "type" and "bytes" in errors["payload"]["message"]
    assert errors["max_retries"]["code"] == "type"  # a bool is not an int
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue("x", max_retries=2**70)
    assert info.value.errors[0]["code"] == "out_of_range"  # a big int is an int, out of range
    with pytest.raises(deadletter.ValidationError):
        q.enqueue("x", max_retries=3.0)  # type: ignore[arg-type]
    with pytest.raises(deadletter.ValidationError):
        q.get("1")  # type: ignore[arg-type]


def test_exception_hierarchy_and_codes() -> None:
    db = deadletter.open()
    q = db.queue("q")
    with pytest.raises(deadletter.ValidationError) as validation:
        db.queue("")
    assert isinstance(validation.value, (deadletter.Error, ValueError))
    assert validation.value.code == "validation_failed"
    assert validation.value.errors == [
        {"field": "queue", "code": "empty", "message": "must not be empty"}
    ]
    with pytest.raises(LookupError) as missing:
        q.get(42)
    assert isinstance(missing.value, deadletter.NotFoundError)
    assert (missing.value.code, missing.value.queue, missing.value.id) == ("not_found", "q", 42)
    m = q.enqueue("x")
    with pytest.raises(deadletter.ConflictError) as conflict:
        q.succeed(m.id)
    assert isinstance(conflict.value, deadletter.Error)
    assert (conflict.value.code, conflict.value.reason, conflict.value.status) == (
        "conflict",
        "wrong_status",
        "pending",
    )
    q.claim()
    with pytest.raises(deadletter.ConflictError) as lost:
        q.succeed(m.id, lease_token="not-the-token")
    assert (lost.value.reason, lost.value.status, lost.value.id) == ("lease_lost", None, m.id)
    assert issubclass(deadletter.StoreError, deadletter.Error)
    assert not issubclass(deadletter.ConflictError, (ValueError, LookupError))


def test_errors_pickle_with_their_fields_and_cross_a_process_pool() -> None:
    q = deadletter.open().queue("q")
    raised: list[deadletter.Error] = []
    calls = (
        lambda: q.enqueue("x", max_retries=0),
        lambda: q.get(7),
        lambda: q.succeed(q.enqueue("x").id),
    )
    for call in calls:
        with pytest.raises(deadletter.Error) as info:
            call()
        raised.append(info.value)
    raised.append(deadletter.StoreError("database is closed"))
    for err in raised:
        back = pickle.loads(pickle.dumps(err))
        assert (type(back), str(back), vars(back)) == (type(err), str(err), vars(err))
    out_of_range = {"field": "max_retries", "code": "out_of_range"}
    assert vars(raised[0]) == {"errors": [{**out_of_range, "message": "must be between 1 and 10"}]}
    assert vars(raised[2]) == {"id": 1, "reason": "wrong_status", "status": "pending"}
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(deadletter.NotFoundError) as info:
            pool.submit(_get_missing, 42).result(timeout=60)
    assert (info.value.queue, info.value.id, info.value.code) == ("q", 42, "not_found")


def _get_missing(id: int) -> None:
    deadletter.open().queue("q").get(id)


def test_extend_without_a_lease_takes_the_database_s_not_the_claim_s() -> None:
    clock = Clock()
    q = deadletter.open(clock=clock, lease=30).queue("q")
    q.enqueue("x")
    m = q.claim(lease=300)
    assert m is not None and m.lease_expires_at == T0 + timedelta(seconds=300)
    clock.advance(10)
    extended = q.extend(m.id, lease_token=m.lease_token)
    assert extended.lease_expires_at == T0 + timedelta(seconds=40)  # now + 30 s, not + 300 s


def test_a_stale_token_is_lease_lost_while_another_worker_holds_it_else_wrong_status() -> None:
    """The two reasons a worker that outlived its lease can get (ConflictError's docstring)."""
    clock = Clock()
    q = deadletter.open(clock=clock, lease=10).queue("q")
    q.enqueue("x", max_retries=3)
    mine = q.claim()
    assert mine is not None
    clock.advance(11)
    assert q.reap() == 1  # reaped: pending in backoff, no longer processing
    stale = {"lease_token": mine.lease_token}
    for call in (lambda: q.succeed(mine.id, **stale), lambda: q.extend(mine.id, **stale)):
        with pytest.raises(deadletter.ConflictError) as refused:
            call()
        assert (refused.value.reason, refused.value.status) == ("wrong_status", "pending")
    clock.advance(2)  # the backoff of the first failure is over
    theirs = q.claim()
    assert theirs is not None and theirs.id == mine.id  # another worker holds it now
    with pytest.raises(deadletter.ConflictError) as refused:
        q.fail(mine.id, "late", **stale)
    assert (refused.value.reason, refused.value.status) == ("lease_lost", None)
    q.succeed(theirs.id, lease_token=theirs.lease_token)  # finished by the other worker
    with pytest.raises(deadletter.ConflictError) as refused:
        q.succeed(mine.id, **stale)
    assert (refused.value.reason, refused.value.status) == ("wrong_status", "succeeded")


def test_message_is_immutable_comparable_and_printable() -> None:
    q = deadletter.open(clock=Clock()).queue("q")
    m = q.enqueue('{"a": 1}')
    assert m == q.get(m.id)
    assert m != q.enqueue('{"a": 1}')
    with pytest.raises(AttributeError):
        m.status = "dead"  # type: ignore[misc]
    assert "id=1" in repr(m) and "'pending'" in repr(m) and "'q'" in repr(m)
    d = m.to_dict()
    assert d["payload"] == '{"a": 1}' and d["created_at"] == T0 and d["lease_token"] is None
    assert d == {
        "id": 1, "queue": "q", "payload": '{"a": 1}', "status": "pending", "retry_count": 0,
        "max_retries": 3, "retry_after": None, "last_error": None, "created_at": T0,
        "updated_at": T0, "lease_token": None, "lease_expires_at": None, "idempotency_key": None,
        "deduplicated": False, "first_failed_at": None, "dead_at": None, "errors": [],
        "errors_dropped": 0, "replay_count": 0, "replayed_at": None, "group": None,
        "expires_at": None, "moved_from": None,
    }  # fmt: skip


def test_payload_is_byte_exact_with_unicode(tmp_path: Path) -> None:
    payloads = ["héllo wörld", "日本語 ✓ 😀", "\x00nul\x00", "  spaces  \n\ttabs\r\n", "e\u0301"]
    with deadletter.open(tmp_path / "u.db") as db:
        q = db.queue("ünïcode 😀")
        ids = [q.enqueue(p).id for p in payloads]
    with deadletter.open(str(tmp_path / "u.db")) as db:
        q = db.queue("ünïcode 😀")
        got = [q.get(i).payload for i in ids]
    assert got == payloads
    assert [p.encode() for p in got] == [p.encode() for p in payloads]


def test_payload_limit_counts_utf8_bytes() -> None:
    q = deadletter.open(max_payload_bytes=4).queue("q")
    q.enqueue("éé")  # 4 bytes
    with pytest.raises(deadletter.ValidationError) as info:
        q.enqueue("ééé")  # 6 bytes, 3 characters
    assert info.value.errors[0]["code"] == "too_large"


def test_a_file_database_reopened_keeps_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with deadletter.open(path) as db:
        q = db.queue("emails")
        q.enqueue("a", max_retries=5)
        claimed = q.claim()
        assert claimed is not None
        q.fail(claimed.id, "SMTP timeout", lease_token=claimed.lease_token, retryable=False)
        q.enqueue("b")
    with deadletter.open(path) as db:
        q = db.queue("emails")
        [dead] = q.list(status="dead")
        assert (dead.payload, dead.last_error, dead.max_retries) == ("a", "SMTP timeout", 5)
        assert [m.payload for m in q.list()] == ["a", "b"]
        assert q.enqueue("c").id == 3


def test_a_database_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "new.db"
    deadletter.open(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(deadletter.StoreError, match="schema version 99"):
        deadletter.open(path)


def test_threads_sharing_a_database_claim_each_message_once() -> None:
    db = deadletter.open()
    q = db.queue("jobs")
    ids = {q.enqueue(str(i)).id for i in range(400)}
    claimed: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while (m := q.claim()) is not None:
                q.succeed(m.id, lease_token=m.lease_token)
                with lock:
                    claimed.append(m.id)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(claimed) == sorted(ids)
    assert len(q.list(status="succeeded", limit=1000)) == 400


def test_backoff_schedule() -> None:
    assert deadletter.backoff(0) == timedelta(seconds=1)
    assert deadletter.backoff(3) == timedelta(seconds=8)
    assert deadletter.backoff(12) == timedelta(hours=1)  # capped at 3600 s
    assert deadletter.backoff(2**63 - 1) == timedelta(hours=1)
    with pytest.raises(deadletter.ValidationError):
        deadletter.backoff(-1)
    with pytest.raises(deadletter.ValidationError):
        deadletter.backoff(True)


def test_list_pages_by_id() -> None:
    q = deadletter.open().queue("q")
    for i in range(5):
        q.enqueue(str(i))
    first = q.list(limit=2)
    second = q.list(limit=2, after_id=first[-1].id)
    assert [m.id for m in first + second] == [1, 2, 3, 4]


def test_a_clock_before_year_1_utc_is_rejected_and_writes_nothing() -> None:
    early = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))  # 0000-12-31T23:00Z
    clock = [early]
    with deadletter.open(clock=lambda: clock[0]) as db:
        q = db.queue("q")
        with pytest.raises(deadletter.ValidationError) as caught:
            q.enqueue("x")
        assert [(e["field"], e["code"]) for e in caught.value.errors] == [("clock", "out_of_range")]
        clock[0] = T0
        assert q.list() == [] and q.enqueue("y").id == 1


def test_the_last_millisecond_can_enqueue_but_not_lease() -> None:
    last = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
    with deadletter.open(clock=lambda: last) as db:
        q = db.queue("q")
        m = q.enqueue("x")
        assert m.created_at == last
        with pytest.raises(deadletter.ValidationError) as caught:
            q.claim(lease=0.001)  # now + 1 ms passes 9999-12-31T23:59:59.999Z
        assert [(e["field"], e["code"]) for e in caught.value.errors] == [("clock", "out_of_range")]
        assert q.get(m.id) == m  # still pending, unleased
        assert q.stats().processing == 0


def test_another_applications_sqlite_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE foo (x)")
    with pytest.raises(deadletter.StoreError, match="not a deadletter database"):
        deadletter.open(path)
    with sqlite3.connect(path) as other:
        tables = [row[0] for row in other.execute("SELECT name FROM sqlite_schema")]
    assert tables == ["foo"]


def test_a_folder_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 19: `./adir` read `././adir`.
    (tmp_path / "adir").mkdir()
    monkeypatch.chdir(tmp_path)
    for given in ["./adir", "adir"]:
        with pytest.raises(deadletter.StoreError) as caught:
            deadletter.open(given)
        assert str(caught.value) == f"store error: unable to open database file: {given}"


def test_a_path_ending_in_a_separator_is_a_folder_and_nothing_is_created(tmp_path: Path) -> None:
    # Tester T7 (session 13): SQLite dropped the "/" and made the file `trail`. (A str: pathlib
    # drops a trailing "/" itself.)
    given = f"{tmp_path / 'trail'}/"
    with pytest.raises(deadletter.StoreError) as caught:
        deadletter.open(given)
    assert caught.value.code == "store"
    assert str(caught.value) == f"store error: unable to open database file: {given}"
    assert list(tmp_path.iterdir()) == []


def test_messages_name_a_float_that_is_not_finite_and_none() -> None:
    # Issue 19: a NaN delay read "got a float", as if any float were wrong; None read "null".
    q = deadletter.open().queue("q")
    said = {}
    for name, value in [("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))]:
        with pytest.raises(deadletter.ValidationError) as caught:
            q.enqueue("x", delay=value)
        said[name] = [(e["field"], e["code"], e["message"]) for e in caught.value.errors]
    seconds = "must be a number of seconds or a datetime.timedelta"
    assert said == {
        "nan": [("delay", "type", f"{seconds}, got NaN (not a finite number)")],
        "inf": [("delay", "type", f"{seconds}, got infinity (not a finite number)")],
        "-inf": [("delay", "type", f"{seconds}, got -infinity (not a finite number)")],
    }
    with pytest.raises(deadletter.ValidationError) as caught:
        q.enqueue(None)  # type: ignore[arg-type]
    assert caught.value.errors[0]["message"] == "must be a string, got None"
    with pytest.raises(deadletter.ValidationError) as caught:
        q.move_all("q")
    assert caught.value.errors == [
        {
            "field": "to_queue",
            "code": "invalid",
            "message": "is the source queue too: the source and the target are the same queue",
        }
    ]
    with pytest.raises(deadletter.ValidationError) as caught:
        q.delete_all(status="pending")
    assert caught.value.errors[0]["message"] == (
        "must be succeeded or dead (only finished messages are deleted); got pending"
    )


def test_an_empty_path_is_a_validation_error_and_memory_is_asked_for_by_name() -> None:
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open("")
    assert [(e["field"], e["code"]) for e in caught.value.errors] == [("path", "empty")]
    assert ":memory:" in caught.value.errors[0]["message"]
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open(5, lease=-1, clock=3)  # type: ignore[arg-type]
    fields = [(e["field"], e["code"]) for e in caught.value.errors]
    assert fields == [("path", "type"), ("lease", "out_of_range"), ("clock", "type")]
    with deadletter.open(":memory:") as db:
        assert db.queue("q").enqueue("x").id == 1
