"""Group commit: calls that threads make while another call of the same `Database` is committing
share the next commit, and each keeps exactly the outcome it would have had alone: a refused call
(wrong lease token, wrong status, unknown id) changes nothing, and every returned message is what
the database holds afterwards. Also `durability` (validated, and both values keep every message).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import deadletter

THREADS = 8
ROUNDS = 40


@pytest.mark.parametrize("durability", ["full", "normal"])
def test_threads_keep_their_own_outcomes(tmp_path: Path, durability: str) -> None:
    with deadletter.open(tmp_path / "jobs.db", durability=durability) as db:
        q = db.queue("jobs")
        last: dict[int, deadletter.Message] = {}  # id -> what the last call that wrote it returned
        refused: list[tuple[str, str]] = []
        lock = threading.Lock()
        start = threading.Barrier(THREADS)

        def work(thread: int) -> None:
            start.wait()
            for i in range(ROUNDS):
                made = q.enqueue(f"{thread}-{i}")
                job = q.claim(lease=300)
                assert job is not None  # at least the one this thread just enqueued
                with lock:
                    last[made.id] = last.get(made.id, made)
                    last[job.id] = job
                kind = i % 4
                if kind == 0:
                    with pytest.raises(deadletter.ConflictError) as lost:
                        q.succeed(job.id, lease_token="not the token")
                    with lock:
                        refused.append(("lease", lost.value.code))
                    done = q.succeed(job.id, lease_token=job.lease_token)
                elif kind == 1:
                    done = q.fail(job.id, "boom", lease_token=job.lease_token)
                    assert done.status == "pending" and done.retry_after is not None
                else:
                    done = q.succeed(job.id, lease_token=job.lease_token)
                with lock:
                    last[job.id] = done
                if kind == 2:
                    with pytest.raises(deadletter.ConflictError):
                        q.succeed(job.id)  # already succeeded: wrong status
                    with pytest.raises(deadletter.NotFoundError):
                        q.succeed(10**9)
                    with lock:
                        refused.append(("status", "conflict"))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        stored = q.list(limit=1000)
        assert [m.id for m in stored] == list(range(1, THREADS * ROUNDS + 1))
        assert {m.id: m.to_dict() for m in stored} == {i: m.to_dict() for i, m in last.items()}
        assert len(refused) == THREADS * (ROUNDS // 2)
        counts = q.stats()
        assert (counts.succeeded, counts.pending, counts.processing) == (
            THREADS * ROUNDS * 3 // 4,
            THREADS * ROUNDS // 4,
            0,
        )


def test_close_commits_the_calls_waiting_for_a_commit(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    db = deadletter.open(path)
    q = db.queue("jobs")
    acknowledged: list[int] = []
    closed: list[str] = []

    def produce() -> None:
        for i in range(500):
            try:
                acknowledged.append(q.enqueue(str(i)).id)
            except deadletter.StoreError as err:
                closed.append(str(err))
                return

    threads = [threading.Thread(target=produce) for _ in range(4)]
    for t in threads:
        t.start()
    while len(acknowledged) < 100:
        pass
    db.close()
    for t in threads:
        t.join()
    assert len(closed) == 4 and all("closed" in text for text in closed)
    # Exactly what was acknowledged is in the file: nothing lost, nothing half-done.
    with deadletter.open(path) as again:
        stored = [m.id for m in again.queue("jobs").list(limit=1000)]
    assert sorted(acknowledged) == stored


@pytest.mark.parametrize(
    ("given", "code"),
    [("fast", "invalid"), ("FULL", "invalid"), (1, "type"), (b"full", "type")],
)
def test_an_unknown_durability_is_rejected(tmp_path: Path, given: object, code: str) -> None:
    with pytest.raises(deadletter.ValidationError) as rejected:
        deadletter.open(tmp_path / "jobs.db", durability=given)  # type: ignore[arg-type]
    assert [(e["field"], e["code"]) for e in rejected.value.errors] == [("durability", code)]
    assert not (tmp_path / "jobs.db").exists()
