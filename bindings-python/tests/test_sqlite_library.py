"""Which SQLite library the module runs on, and other SQLite libraries on the same file.

A source build (``make python``, the sdist) links the system ``libsqlite3``, the library the
interpreter's ``sqlite3`` module links: one copy per process, so SQLite's lock bookkeeping is
shared and a ``sqlite3`` connection in the same process excludes ours as another process would.
A release wheel carries its own copy (``SQLITE_BUNDLED``); two copies in one process do not see
each other's locks, which the README's semantics document (these tests run against the wheel too,
from tests/install). Other processes are safe with either build.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import deadletter
from lock_holder import write_lock_held

BUNDLED_REASON = (
    "this build carries its own SQLite (SQLITE_BUNDLED, the release wheel): the sqlite3 module's "
    "copy does not see its locks, so the README says not to open one file with both in a process"
)


def test_sqlite_bundled_says_whether_the_module_links_libsqlite3() -> None:
    code = (
        "import deadletter\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libsqlite3' in maps, deadletter.SQLITE_BUNDLED, deadletter.SQLITE_VERSION)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [str(not deadletter.SQLITE_BUNDLED), str(deadletter.SQLITE_BUNDLED), deadletter.SQLITE_VERSION]
    assert [int(part) for part in deadletter.SQLITE_VERSION.split(".")] >= [3, 37, 0]  # STRICT tables


@pytest.mark.skipif(deadletter.SQLITE_BUNDLED, reason=BUNDLED_REASON)
def test_source_build_shares_the_interpreters_sqlite_library() -> None:
    assert deadletter.SQLITE_VERSION == sqlite3.sqlite_version
    maps = Path("/proc/self/maps").read_text(encoding="utf-8").splitlines()
    libraries = {line.split()[-1] for line in maps if "libsqlite3" in line}
    assert len(libraries) == 1, libraries  # one copy, used by both deadletter and sqlite3


@pytest.mark.skipif(deadletter.SQLITE_BUNDLED, reason=BUNDLED_REASON)
def test_a_sqlite3_transaction_in_the_same_process_is_waited_for(tmp_path: Path) -> None:
    """Issue 6, item 3: the enqueue waits for the other connection's transaction; nothing that
    either side acknowledged is lost."""
    path = tmp_path / "two.db"
    with deadletter.open(path) as db:
        q = db.queue("q")
        assert q.enqueue("m0").id == 1
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE messages SET payload = 'x' WHERE id = 1")

        started, committed = threading.Event(), threading.Event()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                started.set()
                outcome["enqueued"] = q.enqueue("new")
                outcome["returned_after_commit"] = committed.is_set()
                outcome["claimed"] = q.claim()
            except BaseException as err:  # noqa: BLE001 - reported by the assertions below
                outcome["error"] = err

        worker = threading.Thread(target=work)
        worker.start()
        started.wait()
        time.sleep(0.5)  # the enqueue is now inside SQLite, waiting for the write lock
        assert worker.is_alive()
        committed.set()
        other.execute("COMMIT")
        other.close()
        worker.join(timeout=60)

        assert "error" not in outcome, outcome.get("error")
        assert outcome["returned_after_commit"] is True
        m = outcome["enqueued"]
        assert (m.id, m.payload, m.status) == (2, "new", "pending")
        c = outcome["claimed"]
        assert (c.id, c.payload, c.status) == (1, "x", "processing")  # the other's write is kept
        got = q.get(m.id)
        assert (got.id, got.payload, got.status) == (2, "new", "pending")


WRITERS = 2
CYCLES = 150
SNAPSHOT = (
    "SELECT count(*), coalesce(max(id), 0), "
    "coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'processing'), 0), "
    "coalesce(sum(status = 'succeeded'), 0), coalesce(sum(status = 'dead'), 0), "
    "coalesce(sum(status = 'processing' AND (lease_token IS NULL OR lease_expires_at IS NULL)), 0) "
    "FROM messages"
)

# Another process that reads the file with Python's sqlite3 module (not deadletter) until told to
# stop; each snapshot is one read transaction. Prints the snapshots as JSON.
READER = f"""
import json, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
snapshots = []
while True:
    conn.execute("BEGIN")
    snapshots.append(conn.execute({SNAPSHOT!r}).fetchone())
    conn.execute("COMMIT")
    if sys.stdin.readline() == "":
        break
print(json.dumps(snapshots))
"""


def writer(path: str, start: Any, results: Any) -> None:
    """Enqueues, claims and acks CYCLES messages; reports (ids it enqueued, error or None)."""
    ids: list[int] = []
    try:
        with deadletter.open(path) as db:
            q = db.queue("jobs")
            start.wait()
            for i in range(CYCLES):
                ids.append(q.enqueue(f'{{"n": {i}}}').id)
                m = q.claim()
                assert m is not None  # every claim follows an enqueue: something is pending
                q.succeed(m.id, lease_token=m.lease_token)
        results.put((ids, None))
    except BaseException:  # noqa: BLE001 - sent to the parent, which fails the test
        results.put((ids, traceback.format_exc()))


def check_snapshot(snapshot: list[int]) -> None:
    """What every committed state of the file satisfies."""
    count, max_id, pending, processing, succeeded, dead, bad_leases = snapshot
    assert count == max_id, f"ids 1..{max_id} but {count} rows: an acknowledged enqueue is missing"
    assert pending + processing + succeeded + dead == count
    assert dead == 0 and bad_leases == 0


def test_other_processes_read_the_file_safely_while_workers_write(tmp_path: Path) -> None:
    """The sqlite3 command-line tool and Python's sqlite3 module, each in its own process, read
    the file while two worker processes write: every read is consistent, counts never go back,
    and every acknowledged message is there at the end."""
    cli = shutil.which("sqlite3")
    if cli is None:
        pytest.skip("the sqlite3 command-line tool is not installed (scripts/setup.sh installs it)")
    path = str(tmp_path / "jobs.db")
    deadletter.open(path).close()  # creates the schema

    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WRITERS + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=writer, args=(path, start, results)) for _ in range(WRITERS)]
    for p in procs:
        p.start()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert reader.stdin is not None
    start.wait()
    cli_snapshots = []
    while any(p.is_alive() for p in procs) or not cli_snapshots:
        out = subprocess.run(
            [cli, "-cmd", ".timeout 30000", "-separator", " ", path, SNAPSHOT],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0 and out.stderr == "", out.stderr
        cli_snapshots.append([int(v) for v in out.stdout.split()])
        reader.stdin.write("\n")
        reader.stdin.flush()
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    reader_out, _ = reader.communicate(timeout=60)
    py_snapshots = json.loads(reader_out)

    errors = [error for _, error in outcomes if error is not None]
    assert errors == [], "\n".join(errors)
    total = WRITERS * CYCLES
    for snapshots in (cli_snapshots, py_snapshots):
        assert any(snapshot[0] < total for snapshot in snapshots), "no read while the workers wrote"
        for snapshot in snapshots:
            check_snapshot(snapshot)
        for before, after in zip(snapshots, snapshots[1:]):
            assert after[0] >= before[0] and after[4] >= before[4], (before, after)

    enqueued = sorted(i for ids, _ in outcomes for i in ids)
    assert enqueued == list(range(1, total + 1))
    final = subprocess.run(
        [cli, "-separator", " ", path, SNAPSHOT + ";", "PRAGMA integrity_check;"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert final == [str(total), str(total), "0", "0", str(total), "0", "0", "ok"]


def test_reads_go_on_while_a_write_waits_for_another_process_s_lock(tmp_path: Path) -> None:
    """A file database reads through its own connection: while one thread's enqueue waits for the
    write lock that another process holds, the other threads' reads answer at once (they used to
    wait behind it, up to the 30 s busy timeout); the enqueue then goes through."""
    path = tmp_path / "locked.db"
    with deadletter.open(path) as db:
        q = db.queue("q")
        first = q.enqueue("before")
        with ThreadPoolExecutor(1) as pool:
            with write_lock_held(path):
                waiting = pool.submit(q.enqueue, "during")
                time.sleep(0.3)  # the enqueue is waiting for the lock by now
                assert [m.payload for m in q.list()] == ["before"]
                assert q.get(first.id).payload == "before"
                assert (q.stats().pending, [s.queue for s in db.queues()]) == (1, ["q"])
                assert q.next_due_at() is None
                assert not waiting.done()
            assert waiting.result(timeout=60).payload == "during"
        assert [m.payload for m in q.list()] == ["before", "during"]
