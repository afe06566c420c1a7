"""Benchmark, not a test: deadletter against the SQLite queues Python users pick today
(localqueue, litequeue, persist-queue) and a raw SQL reference, in one run.

Every library runs on a file (WAL) in a new folder per measurement, through its public API, one
message at a time, each operation its own transaction:
- enqueue: N single enqueues;
- claim+ack: N claims, each followed by its ack, on a queue filled with N messages;
- end-to-end: N times enqueue, claim, ack.
N is 20 000 at durability "normal" and 2 000 at "full" (BENCH_N, BENCH_N_FULL): at "full" every
operation waits for a sync of the WAL (0.3 to 2 ms on the shared machines here), and 20 000 would
take the better part of an hour for five libraries and three rounds.
Each at two durabilities: "full" (SQLite `synchronous=FULL`: what was acknowledged survives a
power loss) and "normal" (`synchronous=NORMAL`: survives the application's crash; the last
commits may be lost on power loss). A library's default is marked with `*`. The libraries are
interleaved within each of ROUNDS rounds; every figure is min / median / max over the rounds.

The raw SQL reference is a minimal hand-written queue with Python's `sqlite3`: one table, one
partial index on the ready messages, INSERT to enqueue, one UPDATE ... RETURNING to claim, one
UPDATE to ack, at the same durability. Beside it, "raw SQL+idx": the same statements on a table
with a queue column and the indexes deadletter's operations read since its schema version 8 (the
pending messages by queue and id, in claim order; the leased ones by lease end; the succeeded ones
by id), so that it writes the same B-trees per step as deadletter (enqueue 2, claim 3, ack 3
pages; until version 8 deadletter wrote 4, 4 and 2): the least any SQLite store with those
operations writes. deadletter's ratio to it is what its own code costs; its ratio to "raw SQL"
adds what the indexes cost.

Then the cost of one claim as pending messages pile up (2 000 against 1 000 000 for deadletter,
2 000 against 200 000 for the others: their claim grows with the backlog), and the WAL bytes one
message's enqueue, and its enqueue + claim + ack, append (deadletter, the build before with
BEFORE, and the raw references).

Run: make bench-anchors   (its own venv, .venv-bench, with the libraries pinned in
bindings-python/benches/requirements.txt; prints figures, asserts nothing). With BEFORE=DIR (the
`bindings-python/python` folder of another build, its extension built there), that build's
deadletter is measured too, interleaved with the rest, each of its measurements in a process of
its own ("deadletter (before)" in the tables and ratios): a paired before/after in one run.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deadletter

N = {
    "normal": int(os.environ.get("BENCH_N", "20000")),
    "full": int(os.environ.get("BENCH_N_FULL", "2000")),
}
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PAYLOAD = '{"event": "signup", "user": 12345, "email": "alice@example.com"}'
DURABILITIES = ("full", "normal")
CLAIM_SAMPLES = 300  # claims timed per backlog size
BEFORE = os.environ.get("BEFORE")


def durability_supported() -> bool:
    """Whether this deadletter has `open(..., durability=)` (the figures before it had not)."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            deadletter.open(Path(tmp) / "probe.db", durability="full").close()  # type: ignore[call-arg]
        except TypeError:
            return False
    return True


class Deadletter:
    name = "deadletter"
    default = "full"

    def __init__(self, folder: Path, durability: str) -> None:
        options = {"durability": durability} if HAS_DURABILITY else {}
        self.db = deadletter.open(folder / "q.db", **options)
        self.q = self.db.queue("q")

    def enqueue(self) -> None:
        self.q.enqueue(PAYLOAD)

    def fill(self, n: int) -> None:
        for start in range(0, n, 1000):
            self.q.enqueue_many([PAYLOAD] * min(1000, n - start))

    def claim(self) -> Any:
        m = self.q.claim(lease=300)
        assert m is not None
        return m

    def ack(self, m: Any) -> None:
        self.q.succeed(m.id, lease_token=m.lease_token)

    def close(self) -> None:
        self.db.close()


class LocalQueue:
    name = "localqueue"
    default = "normal"

    def __init__(self, folder: Path, durability: str) -> None:
        import localqueue

        mode = {"full": localqueue.DurabilityMode.DURABLE, "normal": localqueue.DurabilityMode.RELAXED}
        self.q = localqueue.SimpleQueue(str(folder), "q", durability=mode[durability])

    def enqueue(self) -> None:
        self.q.put(PAYLOAD)

    def fill(self, n: int) -> None:
        for start in range(0, n, 1000):
            self.q.put_many([PAYLOAD] * min(1000, n - start))

    def claim(self) -> Any:
        return self.q.get(block=False)

    def ack(self, job: Any) -> None:
        self.q.ack(job)

    def close(self) -> None:
        self.q.close()


class LiteQueue:
    name = "litequeue"
    default = "normal"

    def __init__(self, folder: Path, durability: str) -> None:
        import litequeue

        self.q = litequeue.LiteQueue(str(folder / "q.db"))
        self.q.conn.execute(f"PRAGMA synchronous = {durability.upper()}")

    def enqueue(self) -> None:
        self.q.put(PAYLOAD)

    def fill(self, n: int) -> None:
        with self.q.transaction():
            for _ in range(n):
                self.q.put(PAYLOAD)

    def claim(self) -> Any:
        m = self.q.pop()
        assert m is not None
        return m

    def ack(self, m: Any) -> None:
        self.q.done(m.message_id)

    def close(self) -> None:
        self.q.conn.close()


class PersistQueue:
    name = "persist-queue"
    default = "full"

    def __init__(self, folder: Path, durability: str) -> None:
        import persistqueue

        self.q = persistqueue.SQLiteAckQueue(str(folder), auto_resume=False)
        self.q._conn.execute(f"PRAGMA synchronous = {durability.upper()}")

    def enqueue(self) -> None:
        self.q.put(PAYLOAD)

    def fill(self, n: int) -> None:
        # Its own INSERT, in one transaction (it has no batch put).
        conn = self.q._putter
        row = (self.q._serializer.dumps(PAYLOAD), time.time())
        with conn:
            conn.executemany(self.q._sql_insert, [row] * n)
        self.q.total += n

    def claim(self) -> Any:
        return self.q.get(block=False, raw=True)

    def ack(self, item: Any) -> None:
        self.q.ack(id=item["pqid"])

    def close(self) -> None:
        self.q.close()


class RawSql:
    """The reference: the least a SQLite queue with leases must do, written by hand."""

    name = "raw SQL"
    default = "full"
    SCHEMA = """
        CREATE TABLE IF NOT EXISTS jobs (
            id INTEGER PRIMARY KEY, payload TEXT NOT NULL, status INTEGER NOT NULL,
            lease_until INTEGER);
        CREATE INDEX IF NOT EXISTS ready ON jobs (id) WHERE status = 0;
        """

    def __init__(self, folder: Path, durability: str) -> None:
        self.conn = sqlite3.connect(folder / "q.db", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {durability.upper()}")
        self.conn.executescript(self.SCHEMA)

    def enqueue(self) -> None:
        self.conn.execute("INSERT INTO jobs (payload, status) VALUES (?, 0)", (PAYLOAD,))

    def fill(self, n: int) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO jobs (payload, status) VALUES (?, 0)", [(PAYLOAD,)] * n)
        self.conn.execute("COMMIT")

    def claim(self) -> Any:
        return self.conn.execute(
            "UPDATE jobs SET status = 1, lease_until = ? WHERE id = "
            "(SELECT id FROM jobs WHERE status = 0 ORDER BY id LIMIT 1) RETURNING id, payload",
            (int(time.time() * 1000) + 300_000,),
        ).fetchone()

    def ack(self, row: Any) -> None:
        self.conn.execute("UPDATE jobs SET status = 2 WHERE id = ?", (row[0],))

    def close(self) -> None:
        self.conn.close()


class RawSqlIndexed(RawSql):
    """The reference with the B-trees deadletter writes (see the module docs)."""

    name = "raw SQL+idx"
    SCHEMA = """
        CREATE TABLE IF NOT EXISTS jobs (
            id INTEGER PRIMARY KEY, queue TEXT NOT NULL, payload TEXT NOT NULL,
            status INTEGER NOT NULL, created_at INTEGER NOT NULL, lease_until INTEGER);
        CREATE INDEX IF NOT EXISTS pending ON jobs (queue, id, created_at) WHERE status = 0;
        CREATE INDEX IF NOT EXISTS leased ON jobs (queue, lease_until) WHERE status = 1;
        CREATE INDEX IF NOT EXISTS succeeded ON jobs (queue, id) WHERE status = 2;
        """

    def enqueue(self) -> None:
        self.conn.execute(
            "INSERT INTO jobs (queue, payload, status, created_at) VALUES ('q', ?, 0, ?)",
            (PAYLOAD, int(time.time() * 1000)),
        )

    def fill(self, n: int) -> None:
        now = int(time.time() * 1000)
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT INTO jobs (queue, payload, status, created_at) VALUES ('q', ?, 0, ?)",
            [(PAYLOAD, now)] * n,
        )
        self.conn.execute("COMMIT")

    def claim(self) -> Any:
        return self.conn.execute(
            "UPDATE jobs SET status = 1, lease_until = ? WHERE id = (SELECT id FROM jobs "
            "WHERE queue = 'q' AND status = 0 ORDER BY id LIMIT 1) "
            "RETURNING id, payload",
            (int(time.time() * 1000) + 300_000,),
        ).fetchone()


class Before(Deadletter):
    """deadletter of the build in BEFORE, measured in a process of its own (see the module docs)."""

    name = "deadletter (before)"


LIBRARIES: list[type] = [Deadletter, LocalQueue, LiteQueue, PersistQueue, RawSql, RawSqlIndexed]
if BEFORE:
    LIBRARIES.insert(1, Before)
HAS_DURABILITY = durability_supported()


def rate(library: type, durability: str, kind: str) -> float:
    """Messages per second of one measurement on a new folder."""
    n = N[durability]
    if library is Before:
        env = dict(os.environ, PYTHONPATH=str(BEFORE))
        out = subprocess.run(
            [sys.executable, __file__, "--rate", durability, kind],
            env=env, capture_output=True, text=True, check=True,
        )
        return float(out.stdout)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        q = library(Path(tmp), durability)
        try:
            if kind == "claim+ack":
                q.fill(n)
            gc.collect()
            start = time.perf_counter()
            if kind == "enqueue":
                for _ in range(n):
                    q.enqueue()
            elif kind == "claim+ack":
                for _ in range(n):
                    q.ack(q.claim())
            else:
                for _ in range(n):
                    q.enqueue()
                    q.ack(q.claim())
            return n / (time.perf_counter() - start)
        finally:
            q.close()


def spread(values: list[float], fmt: str = "{:,.0f}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def throughput() -> None:
    kinds = ("enqueue", "claim+ack", "end-to-end")
    durabilities = DURABILITIES if HAS_DURABILITY else DURABILITIES
    results: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(ROUNDS):
        for durability in durabilities:
            for kind in kinds:
                for library in LIBRARIES:
                    if library is Deadletter and durability == "normal" and not HAS_DURABILITY:
                        continue
                    key = (library.name, durability, kind)
                    results.setdefault(key, []).append(rate(library, durability, kind))
    print(f"messages/s, {ROUNDS} rounds (min / median / max); * = the library's default durability")
    for durability in durabilities:
        print(f"  durability {durability}, N = {N[durability]:,}:")
        print(f"    {'':<20}" + "".join(f"{k:>32}" for k in kinds))
        for library in LIBRARIES:
            mark = "*" if library.default == durability else " "
            cells = [results.get((library.name, durability, k)) for k in kinds]
            row = "".join(f"{spread(c) if c else 'n/a':>32}" for c in cells)
            print(f"    {library.name + mark:<20}{row}")

    def median(name: str, durability: str, kind: str) -> float | None:
        values = results.get((name, durability, kind))
        return statistics.median(values) if values else None

    print("  deadletter's ratio (medians); 'default': each at its own default durability")
    print(f"    {'against':<20}{'durability':>16}" + "".join(f"{k:>14}" for k in kinds))
    for library in LIBRARIES[1:]:
        for durability in (*durabilities, "default"):
            ours = Deadletter.default if durability == "default" else durability
            theirs = library.default if durability == "default" else durability
            cells = []
            for kind in kinds:
                a, b = median("deadletter", ours, kind), median(library.name, theirs, kind)
                cells.append(f"{a / b:>13.2f}x" if a and b else f"{'n/a':>14}")
            label = f"{ours} vs {theirs}" if durability == "default" else durability
            print(f"    {library.name:<20}{label:>16}" + "".join(cells))


def claim_cost() -> None:
    """Microseconds per claim with `backlog` pending messages ahead, durability normal (where the
    claim itself, not the sync, is what is measured)."""
    sizes = {Deadletter: (2_000, 1_000_000)}
    for library in LIBRARIES[1:]:
        if library is Before:
            continue
        sizes[library] = (2_000, 200_000)
    durability = "normal" if HAS_DURABILITY else "full"
    print(f"claim cost, microseconds per claim ({CLAIM_SAMPLES} claims, durability {durability}, "
          f"{ROUNDS} rounds: min / median / max)")
    for library, (small, large) in sizes.items():
        costs: dict[int, list[float]] = {small: [], large: []}
        for _ in range(ROUNDS):
            for backlog in (small, large):
                with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
                    q = library(Path(tmp), durability)
                    q.fill(backlog)
                    spent = 0.0
                    for _ in range(CLAIM_SAMPLES):
                        start = time.perf_counter()
                        m = q.claim()
                        spent += time.perf_counter() - start
                        q.ack(m)
                    q.close()
                costs[backlog].append(spent / CLAIM_SAMPLES * 1e6)
        growth = statistics.median(costs[large]) / statistics.median(costs[small])
        print(
            f"  {library.name:<14} {small:>9,} pending: {spread(costs[small], '{:,.1f}'):>22}   "
            f"{large:>9,} pending: {spread(costs[large], '{:,.1f}'):>22}   {growth:6.1f}x"
        )


READER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
print("reading", flush=True)
sys.stdin.read()
"""


def wal_bytes(library: type, cycle: bool, messages: int = 1000) -> float:
    """WAL bytes appended per enqueue (`cycle`: per enqueue+claim+ack). Another process holds a
    read transaction open so that no checkpoint can reset the WAL: its growth is what the messages
    appended. The build in BEFORE is measured in a process of its own."""
    if library is Before:
        env = dict(os.environ, PYTHONPATH=str(BEFORE))
        out = subprocess.run(
            [sys.executable, __file__, "--wal", "cycle" if cycle else "enqueue"],
            env=env, capture_output=True, text=True, check=True,
        )
        return float(out.stdout)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        q = library(Path(tmp), "normal" if HAS_DURABILITY or library is not Deadletter else "full")
        for _ in range(10):  # the schema and first pages exist
            q.enqueue()
            q.ack(q.claim())
        path = str(Path(tmp) / "q.db")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert reader.stdout is not None and reader.stdout.readline() == b"reading\n"
        wal = Path(path + "-wal")
        before = wal.stat().st_size
        for _ in range(messages):
            q.enqueue()
            if cycle:
                q.ack(q.claim())
        grown = wal.stat().st_size - before
        reader.communicate(b"")
        q.close()
        return grown / messages


def main() -> int:
    if sys.argv[1:2] == ["--rate"]:  # one measurement of this build, for another's BEFORE run
        print(rate(Deadletter, sys.argv[2], sys.argv[3]))
        return 0
    if sys.argv[1:2] == ["--wal"]:  # the WAL bytes of this build, for another's BEFORE run
        print(wal_bytes(Deadletter, sys.argv[2] == "cycle"))
        return 0
    print(f"deadletter {deadletter.__version__}, SQLite {deadletter.SQLITE_VERSION}")
    throughput()
    claim_cost()
    print("WAL bytes per message (1 000 messages; pages of 4 KiB + 24 B)")
    print(f"  {'':<20} {'enqueue':>24} {'enqueue + claim + ack':>24}")
    for library in [Deadletter, *([Before] if BEFORE else []), RawSql, RawSqlIndexed]:
        cells = [wal_bytes(library, cycle) for cycle in (False, True)]
        print(f"  {library.name:<20}" + "".join(f"{f'{b:,.0f} B ({b / 4120:.1f} pages)':>25}" for b in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
