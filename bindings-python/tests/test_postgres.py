"""``deadletter.open`` with a PostgreSQL URL: the options only it takes, errors that never show
the password, a ``fork()``, and a server restart under a call. The tests without a server run
everywhere; the others need ``DEADLETTER_POSTGRES_URL`` (``make test-postgres``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import postgres_server as postgres
import pytest
import readmes
from serving import deadletter_serve

import deadletter
from deadletter import cli
from postgres_server import needs_postgres, schemas  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parents[2]
PG_SH = ROOT / "scripts" / "pg.sh"


def fields(error: deadletter.ValidationError) -> list[tuple[str, str]]:
    return [(f["field"], f["code"]) for f in error.errors]


# ---------------------------------------------------------------------------------------------
# Without a server


def test_postgresql_options_given_with_a_sqlite_path_are_rejected_by_name(tmp_path: Path) -> None:
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open(
            tmp_path / "jobs.db", schema="jobs", max_connections=4, connect_timeout=1, lease=0
        )
    assert fields(caught.value) == [
        ("schema", "invalid"),
        ("max_connections", "invalid"),
        ("connect_timeout", "invalid"),
        ("lease", "out_of_range"),
    ]
    assert "applies only to a PostgreSQL URL" in str(caught.value)
    assert not (tmp_path / "jobs.db").exists(), "a rejected call creates nothing"
    for path in (":memory:", None, str(tmp_path / "postgresql.db")):
        with pytest.raises(deadletter.ValidationError) as caught:
            deadletter.open(path, lock_timeout=timedelta(seconds=5))
        assert fields(caught.value) == [("lock_timeout", "invalid")]
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open(tmp_path / "jobs.db", create=False)
    assert fields(caught.value) == [("create", "invalid")]
    # None is every option's default, for SQLite too; so are the defaults given explicitly (a
    # wrapper may forward them), for either kind: create=True, durability="full".
    with deadletter.open(":memory:", schema=None, max_connections=None, create=None) as db:
        assert not db.closed
    with deadletter.open(tmp_path / "jobs.db", create=True, durability="full") as db:
        assert db.queue("q").enqueue("x").id == 1
    url = "postgresql://u@host:notaport/db"
    for durability, rejected in (("full", "path"), (None, "path"), ("normal", "durability")):
        with pytest.raises(deadletter.ValidationError) as caught:  # (the URL's port: after)
            deadletter.open(url, durability=durability, create=True)
        assert fields(caught.value) == [(rejected, "invalid")]


def test_the_scheme_alone_makes_a_url() -> None:
    # In any case (RFC 3986): "POSTGRESQL://u:sekret@..." was a file name, and the error that it
    # could not be opened quoted it, password and all.
    for url in (
        "postgresql://u:sekret@host:notaport/db",
        "postgres://u:sekret@host:notaport/db",
        "POSTGRESQL://u:sekret@host:notaport/db",
        "Postgres://u:sekret@host:notaport/db",
    ):
        with pytest.raises(deadletter.ValidationError) as caught:
            deadletter.open(url)
        assert fields(caught.value) == [("path", "invalid")]
        assert str(caught.value) == (
            "validation failed: path: not a PostgreSQL URL: invalid connection string: "
            "invalid value for option `port`"
        )
    # A PathLike is always a file path, as is a str with another scheme.
    for not_a_url in (Path("postgresql:") / "x.db", "postgresql:/x/y", "sqlite://x"):
        with pytest.raises(deadletter.StoreError):  # a file in a folder that does not exist
            deadletter.open(not_a_url)


def test_postgresql_options_are_checked_all_at_once_before_connecting() -> None:
    url = "postgresql://u:sekret@127.0.0.1:1/db"  # nobody listens: options fail first
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open(
            url,
            schema="s" * 64,
            max_connections=True,
            connect_timeout=0,
            lock_timeout="30",
            max_payload_bytes=0,
        )
    assert fields(caught.value) == [
        ("max_connections", "type"),
        ("connect_timeout", "out_of_range"),
        ("lock_timeout", "type"),
        ("schema", "too_long"),
        ("max_payload_bytes", "out_of_range"),
    ]
    messages = {f["field"]: f["message"] for f in caught.value.errors}
    assert messages["connect_timeout"] == "must be between 0.001 and 3600 seconds"
    assert messages["lock_timeout"] == (
        "must be a number of seconds or a datetime.timedelta, got a string"
    )
    cases: list[tuple[dict[str, Any], tuple[str, str]]] = [
        ({"schema": ""}, ("schema", "empty")),
        ({"schema": "a\0b"}, ("schema", "invalid")),
        ({"schema": b"jobs"}, ("schema", "type")),
        ({"max_connections": 1001}, ("max_connections", "out_of_range")),
        ({"max_connections": 2.0}, ("max_connections", "type")),
        ({"lock_timeout": 3601}, ("lock_timeout", "out_of_range")),
        ({"lock_timeout": timedelta(milliseconds=-1)}, ("lock_timeout", "out_of_range")),
    ]
    for options, rejected in cases:
        with pytest.raises(deadletter.ValidationError) as caught:
            deadletter.open(url, **options)
        assert fields(caught.value) == [rejected], options


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(deadletter.StoreError) as caught:
        deadletter.open("postgresql://u:sekret@127.0.0.1:1/db", connect_timeout=0.5)
    assert str(caught.value) == (
        "store error: PostgreSQL: cannot connect: error connecting to server: "
        "Connection refused (os error 111)"
    )


# ---------------------------------------------------------------------------------------------
# With a server


def test_a_url_with_nul_or_a_system_schema_is_a_validation_error() -> None:
    with pytest.raises(deadletter.ValidationError) as caught:
        deadletter.open("postgresql://u:sekret@127.0.0.1:1/d\0b")
    assert fields(caught.value) == [("path", "invalid")]
    for schema in ("pg_catalog", "pg_mine", "information_schema"):
        with pytest.raises(deadletter.ValidationError) as caught:
            deadletter.open("postgresql://u:sekret@127.0.0.1:1/db", schema=schema)
        assert fields(caught.value) == [("schema", "invalid")]
        assert "reserved" in str(caught.value)


def test_create_must_be_a_bool() -> None:
    for given in ("no", 0, 1.0):
        with pytest.raises(deadletter.ValidationError) as caught:
            deadletter.open("postgresql://u:sekret@127.0.0.1:1/db", create=given)
        assert fields(caught.value) == [("create", "type")]


@needs_postgres
def test_create_false_opens_only_a_schema_that_holds_deadletter_queues(
    schemas: postgres.Schemas,
) -> None:
    missing, made = schemas.name(), schemas.name()
    with pytest.raises(deadletter.StoreError) as caught:
        deadletter.open(postgres.url(), schema=missing, create=False)
    assert str(caught.value) == (
        f'store error: schema "{missing}" holds no deadletter queues (it is missing or empty); '
        "nothing was created"
    )
    assert postgres.psql(f"SELECT count(*) FROM pg_namespace WHERE nspname = '{missing}'").strip() == "0"
    deadletter.open(postgres.url(), schema=made).close()
    with deadletter.open(postgres.url(), schema=made, create=False) as db:
        assert db.queue("q").enqueue("x").id == 1


@needs_postgres
def test_a_refused_login_says_why_without_the_password() -> None:
    url = postgres.url()
    wrong = url.replace("://deadletter:deadletter@", "://deadletter:sekret@", 1)
    assert wrong != url, "the URL of scripts/pg.sh has the password `deadletter`"
    with pytest.raises(deadletter.StoreError) as caught:
        deadletter.open(wrong)
    assert str(caught.value) == (
        'store error: PostgreSQL: cannot connect: password authentication failed for user '
        '"deadletter" (SQLSTATE 28P01)'
    )


@needs_postgres
def test_a_schema_keeps_its_queues_apart_and_threads_share_the_pool(
    schemas: postgres.Schemas,
) -> None:
    first, second = schemas.name(), schemas.name()
    with deadletter.open(postgres.url(), schema=first, max_connections=3) as db:
        q = db.queue("jobs")
        assert q.enqueue("a").id == 1

        def produce(n: int) -> None:
            q.enqueue_many([f"{n}-{i}" for i in range(50)])

        threads = [threading.Thread(target=produce, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert q.stats().pending == 301
    with deadletter.open(postgres.url(), schema=second) as other:
        assert other.queues() == []
        assert other.queue("jobs").enqueue("b").id == 1
    with deadletter.open(postgres.url(), schema=first) as again:
        assert [s.pending for s in again.queues()] == [301]
    assert postgres.psql(f"SELECT count(*) FROM \"{first}\".messages").strip() == "301"


FORKING_PARENT = """
import os, sys, deadletter
url, schema, parent = sys.argv[1:]
db = deadletter.open(url, schema=schema)
db.queue("jobs").enqueue("from the parent")
if parent == "closed":
    db.close()
statuses = []
for _ in range(3):
    child = os.fork()
    if child == 0:  # the child: its own database, then a plain exit status
        code = 1
        try:
            with deadletter.open(url, schema=schema) as mine:
                jobs = mine.queue("jobs")
                for _ in range(100):
                    jobs.enqueue("c")
                    m = jobs.claim()
                    jobs.succeed(m.id, lease_token=m.lease_token)
            code = 0
        finally:
            os._exit(code)
    statuses.append(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
print(statuses)
"""


@needs_postgres
@pytest.mark.parametrize("parent", ["open", "closed"])
def test_forked_children_work_on_their_own_databases(
    schemas: postgres.Schemas, parent: str
) -> None:
    # With r2d2's pool (the store's first) a child forked after the parent had opened the store
    # crashed (SIGSEGV) once its own pool started threads: r2d2 parks them in parking_lot's
    # global table, which the child inherited with entries of threads it did not have. A new
    # interpreter, as a service that forks its workers is (this one's threads may hide it).
    schema = schemas.name()
    done = subprocess.run(
        [sys.executable, "-c", FORKING_PARENT, postgres.url(), schema, parent],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "[0, 0, 0]\n", "")
    with deadletter.open(postgres.url(), schema=schema) as db:
        stats = db.queue("jobs").stats()
        assert (stats.pending, stats.succeeded) == (1, 300)


@needs_postgres
def test_a_forked_child_neither_uses_nor_closes_the_parents_connections(
    schemas: postgres.Schemas,
) -> None:
    tag = f"deadletter-fork-{os.getpid()}"
    schema = schemas.name()
    url = postgres.url() + f"?application_name={tag}"
    db = deadletter.open(url, schema=schema, max_connections=1)
    q = db.queue("jobs")
    q.enqueue("before the fork")
    sessions = f"SELECT pid FROM pg_stat_activity WHERE application_name = '{tag}'"
    parent_session = postgres.psql(sessions).split()
    assert len(parent_session) == 1

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report, never raise
        os.close(read)
        lines = []
        try:
            try:
                q.get(1)
                lines.append("get worked")
            except deadletter.StoreError as err:
                lines.append(f"get: {err}")
            lines.append(f"closed: {db.closed}")
            try:
                db.close()
                lines.append("close worked")
            except deadletter.StoreError:
                lines.append("close: StoreError")
            with deadletter.open(url, schema=schema) as mine:
                lines.append(f"own: {mine.queue('jobs').enqueue('from the child').id}")
            del q, db  # dropping them must leave the parent's session alone
        except BaseException as err:  # noqa: BLE001
            lines.append(f"unexpected: {err!r}")
        os.write(write, "\n".join(lines).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        report = pipe.read().splitlines()
    assert os.waitpid(child, 0)[1] == 0
    assert report == [
        "get: store error: this database was opened before a fork, in the parent process, whose "
        "PostgreSQL connections must not be used by a child: open the database again in this "
        "process",
        "closed: True",
        "close: StoreError",
        "own: 2",
    ]
    # The parent's session is the one it had before: the child sent nothing on it.
    assert postgres.psql(sessions).split() == parent_session
    assert [m.payload for m in q.list()] == ["before the fork", "from the child"]
    db.close()


@needs_postgres
def test_a_server_restart_under_a_call_is_a_store_error_and_the_next_call_works(
    schemas: postgres.Schemas,
) -> None:
    cluster = subprocess.run([PG_SH, "url"], capture_output=True, text=True, check=False)
    if cluster.stdout.strip() != postgres.url():
        pytest.skip("restarts the server: needs the cluster of scripts/pg.sh (make test-postgres)")
    schema = schemas.name()
    db = deadletter.open(postgres.url(), schema=schema, lock_timeout=60)
    q = db.queue("jobs")
    q.enqueue_many(["acked before", "held"])
    acked, held = q.claim_many(2)
    assert acked.lease_token is not None and held.lease_token is not None
    q.succeed(acked.id, lease_token=acked.lease_token)

    # Another session locks the row of `held`, so that `succeed` waits inside its transaction.
    locker = subprocess.Popen(
        [
            "psql",
            postgres.url(),
            "-qAt",
            "-c",
            f'BEGIN; SELECT id FROM "{schema}".messages WHERE id = {held.id} FOR UPDATE; '
            "SELECT pg_sleep(120); COMMIT;",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    outcome: list[BaseException] = []
    try:
        wait_for(
            "a session holds the lock",
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' "
            "AND state = 'active' AND pid <> pg_backend_pid()",
        )

        def succeed() -> None:
            try:
                q.succeed(held.id, lease_token=held.lease_token)
            except BaseException as err:  # noqa: BLE001 - checked below
                outcome.append(err)

        caller = threading.Thread(target=succeed)
        caller.start()
        wait_for(
            "the call waits for the lock",
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = 'deadletter' AND wait_event_type = 'Lock'",
        )
        subprocess.run([PG_SH, "restart"], check=True)
        caller.join(timeout=60)
        assert not caller.is_alive()
    finally:
        locker.kill()
        locker.wait()
    [error] = outcome
    assert isinstance(error, deadletter.StoreError) and error.code == "store", repr(error)
    assert str(error).startswith("store error: PostgreSQL:"), str(error)
    # The next calls work, on new connections; the ack before the restart stayed, the one under
    # it was not half-written.
    assert q.get(acked.id).status == "succeeded"
    assert q.get(held.id).status == "processing"
    assert q.succeed(held.id, lease_token=held.lease_token).status == "succeeded"
    db.close()


def wait_for(what: str, count_sql: str, timeout: float = 30.0) -> None:
    """Polls ``count_sql`` until it counts at least one row."""
    deadline = time.monotonic() + timeout
    while int(postgres.psql(count_sql).strip() or 0) < 1:
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`deadletter ARGV` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@needs_postgres
def test_the_cli_takes_a_url_and_a_schema(schemas: postgres.Schemas, tmp_path: Path) -> None:
    url, schema = postgres.url(), schemas.name()
    status, out, err = run_cli("enqueue", url, "emails", "hello", "--schema", schema, "--json")
    assert (status, err) == (0, "")
    enqueued = json.loads(out)
    assert (enqueued["id"], enqueued["queue"], enqueued["payload"]) == (1, "emails", "hello")
    with deadletter.open(url, schema=schema) as db:
        q = db.queue("emails")
        m = q.claim()
        assert m is not None
        q.fail(m.id, "SMTP 550", lease_token=m.lease_token, retryable=False)
    status, out, err = run_cli("list", url, "emails", "--schema", schema, "--status", "dead")
    assert (status, err) == (0, "")
    assert out.splitlines()[1].split()[:3] == ["1", "dead", "1/3"]
    assert run_cli("replay", url, "emails", "1", "--schema", schema)[0] == 0
    status, out, _ = run_cli("show", url, "emails", "1", "--schema", schema, "--json")
    assert (status, json.loads(out)["status"]) == (0, "pending")
    # Operators' commands never create a schema: a mistyped one is an error, not an empty queue.
    other = schemas.name()
    for command in (["list", "emails"], ["stats"], ["show", "emails", "1"], ["purge", "emails",
                    "--status", "dead", "--older-than", "0"]):
        assert run_cli(command[0], url, *command[1:], "--schema", other) == (
            1,
            "",
            f'deadletter {command[0]}: store error: schema "{other}" holds no deadletter queues '
            "(it is missing or empty); nothing was created\n",
        )
    assert postgres.psql(f"SELECT count(*) FROM pg_namespace WHERE nspname = '{other}'").strip() == "0"
    # A SQLite path takes no schema.
    sqlite = tmp_path / "jobs.db"
    deadletter.open(sqlite).close()
    assert run_cli("list", str(sqlite), "emails", "--schema", schema) == (
        1,
        "",
        "deadletter list: validation failed: schema: applies only to a PostgreSQL URL\n",
    )


@needs_postgres
def test_deadletter_serve_takes_a_url(schemas: postgres.Schemas, tmp_path: Path) -> None:
    url, schema = postgres.url(), schemas.name()
    serve = deadletter_serve(
        url, workers=2, args=["--schema", schema], log=tmp_path / "serve.log"
    )
    with serve as base, httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/queues/emails/messages", json={"payload": "hi"})
        assert created.status_code == 201, created.text
        claimed = client.post("/queues/emails/claim").json()
        done = client.post(
            f"/queues/emails/messages/{claimed['id']}/succeed",
            json={"lease_token": claimed["lease_token"]},
        )
        assert done.json()["status"] == "succeeded"
    with deadletter.open(url, schema=schema) as db:
        assert db.queue("emails").get(1).status == "succeeded"


@needs_postgres
def test_deadletter_serve_refuses_a_schema_without_queues_unless_told_to_create_it(
    schemas: postgres.Schemas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding M15 for a URL: `serve --schema` of a mistyped name served a new, empty schema;
    every other command refuses it. With --create it is made (test_deadletter_serve_takes_a_url)."""
    from deadletter.http import _serve

    monkeypatch.setattr(_serve, "run", lambda *args: True)  # the old CLI served here
    monkeypatch.setattr(os, "environ", dict(os.environ))
    url, other = postgres.url(), schemas.name()
    assert run_cli("serve", url, "--schema", other, "--port", "0") == (
        1,
        "",
        f'deadletter serve: store error: schema "{other}" holds no deadletter queues (it is '
        "missing or empty); nothing was created\n",
    )
    assert postgres.psql(f"SELECT count(*) FROM pg_namespace WHERE nspname = '{other}'").strip() == "0"


@needs_postgres
@pytest.mark.parametrize(("readme", "code"), readmes.blocks("python postgres"))
def test_the_readme_postgres_example_runs(
    readme: Path, code: str, schemas: postgres.Schemas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README blocks fenced `python postgres` need a server, so test_readme.py leaves them here."""
    monkeypatch.setenv("DATABASE_URL", postgres.url())
    postgres.psql('DROP SCHEMA IF EXISTS "billing" CASCADE')
    schemas.made.append("billing")  # the READMEs' schema: dropped afterwards
    readmes.run(readme, code)
