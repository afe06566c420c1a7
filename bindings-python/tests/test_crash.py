"""Worker processes draining one SQLite file are SIGKILLed at random: afterwards every message is
succeeded, none is lost or stuck after its lease, a message was delivered twice only when a killed
worker held it, and the file passes `PRAGMA integrity_check`. With several threads per worker,
the kills land while calls wait for a shared commit (group commit): an ack that returned is
never lost.

This file is also the worker: `python test_crash.py DB LOG THREADS` claims and acks until nothing
is left, on THREADS threads sharing one database, writing `claim ID` before each ack and `done ID`
after it to LOG.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import deadletter

MESSAGES = 5000
WORKERS = 4
KILLS = 8  # fewer than max_retries: a message never goes dead however often its holder dies
LEASE = 2.0  # seconds; short, so that the messages of killed workers come back quickly


def work(path: str, log: str, threads: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with deadletter.open(path) as db:
        q = db.queue("jobs")

        def drain() -> None:
            while True:
                m = q.claim(lease=LEASE)
                if m is None:
                    if not q.list(status="pending", limit=1) and not q.list(
                        status="processing", limit=1
                    ):
                        return
                    time.sleep(0.05)  # messages of killed workers wait for lease and backoff
                    continue
                os.write(fd, f"claim {m.id}\n".encode())
                q.succeed(m.id, lease_token=m.lease_token)
                os.write(fd, f"done {m.id}\n".encode())

        running = [threading.Thread(target=drain) for _ in range(int(threads))]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()


def claimed_any(log: Path) -> bool:
    return log.exists() and log.stat().st_size > 0


@pytest.mark.parametrize("threads", [1, 4])
def test_workers_killed_at_random_lose_nothing(tmp_path: Path, threads: int) -> None:
    path = str(tmp_path / "jobs.db")
    with deadletter.open(path) as db:
        q = db.queue("jobs")
        ids = [q.enqueue(f"job {i}", max_retries=10).id for i in range(MESSAGES)]
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    logs: list[Path] = []
    killed: set[int] = set()

    def start() -> None:
        """Starts worker number `len(logs)`, logging to `logs[number]`."""
        index = len(logs)
        logs.append(tmp_path / f"worker{index}.log")
        command = [sys.executable, __file__, path, str(logs[index]), str(threads)]
        with (tmp_path / f"worker{index}.err").open("wb") as errors:
            running[index] = subprocess.Popen(command, stderr=errors)

    running: dict[int, subprocess.Popen[bytes]] = {}
    for _ in range(WORKERS):
        start()
    with deadletter.open(path) as db:  # the workers have started acking
        deadline = time.monotonic() + 60
        while not db.queue("jobs").list(status="succeeded", limit=1):
            assert time.monotonic() < deadline, "no worker got going"
            time.sleep(0.01)
    for _ in range(KILLS):
        time.sleep(rng.uniform(0.01, 0.08))
        # A worker that is working: one still starting (importing) holds nothing yet.
        while not (working := [i for i in sorted(running) if claimed_any(logs[i])]):
            time.sleep(0.01)
        victim = rng.choice(working)
        running[victim].kill()
        running[victim].wait()
        killed.add(victim)
        del running[victim]
        start()
    for index, worker in running.items():
        status = worker.wait(timeout=120)
        assert status == 0, (seed, (tmp_path / f"worker{index}.err").read_text()[-3000:])

    with deadletter.open(path) as db:
        q = db.queue("jobs")
        done: list[deadletter.Message] = []
        while page := q.list(limit=1000, after_id=done[-1].id if done else None):
            done += page
    assert [m.id for m in done] == ids, f"seed {seed}: messages lost"
    assert {m.status for m in done} == {"succeeded"}, f"seed {seed}: not all succeeded"
    # Each lease that ran out is a failed attempt: only the messages of killed workers have one.
    expired = {m.id: m.retry_count for m in done if m.retry_count > 0}
    assert len(killed) == KILLS
    assert sum(expired.values()) <= KILLS * threads, f"seed {seed}"  # each held at most `threads`
    assert expired, f"seed {seed}: no kill hit a worker holding a message (drained too soon?)"
    assert {m.last_error for m in done if m.retry_count > 0} <= {"lease expired"}

    claims: dict[int, list[int]] = defaultdict(list)  # message id -> workers that claimed it
    acks: dict[int, list[int]] = defaultdict(list)  # message id -> workers that acked it
    for worker, log in enumerate(logs):
        lines = log.read_text().splitlines() if log.exists() else []  # killed while starting
        for line in lines:
            kind, message_id = line.split()
            (claims if kind == "claim" else acks)[int(message_id)].append(worker)
    assert sorted(claims) == ids, f"seed {seed}: a message was acked without a logged claim"
    for message_id, holders in claims.items():
        # One ack; every other delivery went to a worker that was killed while holding it.
        acked = acks.get(message_id, [])
        assert len(acked) <= 1, f"seed {seed}: message {message_id} acked by {acked}"
        unacked = list(holders)
        for worker in acked:
            unacked.remove(worker)
        assert set(unacked) <= killed, f"seed {seed}: message {message_id}: {holders}, {acked}"
        assert expired.get(message_id, 0) >= len(holders) - 1, f"seed {seed}"

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


if __name__ == "__main__":
    work(*sys.argv[1:])
