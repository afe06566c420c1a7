"""Eight processes, each opening the PostgreSQL URL itself, claim 20 000 messages with planned
failures, crashes (messages dropped without a word, left to their lease) and short leases, until
every message is finished.

Each message's payload is its plan, and a worker decides from the attempt it holds (the claimed
message's ``retry_count``, which lease expiries raise too), so every message's end is known in
advance: ``retry`` plans fail their first ``fail`` attempts, then succeed (``max_retries`` 10
leaves room for a lease lost by a slow worker); ``exhaust`` plans fail every attempt and die of
the second (``max_retries`` 2); ``permanent`` plans fail with ``retryable=False`` and die at once.
Afterwards: none is left pending or processing, each ended as planned, each failed attempt of a
message is one of its claims that did not end in an ack, and no message was ever held by two
workers at once (a claim after a crash or a lost lease came only once that lease had run out) or
acked twice.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
import traceback
from collections import Counter, defaultdict
from typing import Any

import postgres_server as postgres

import deadletter
from postgres_server import schemas  # noqa: F401 - the fixture

pytestmark = postgres.NEEDS_POSTGRES

MESSAGES = 20_000
PROCESSES = 8
LEASE = 0.3  # seconds: crashed workers' messages come back soon
BACKOFF = deadletter.Backoff(initial=0.01, cap=0.05)
CRASH = 0.3  # the share of planned failures that are crashes instead of `fail` calls
DEADLINE = 300.0  # seconds

# How one claim ended.
ACKED, FAILED, CRASHED, LEASE_LOST = "acked", "failed", "crashed", "lease lost"


def plans(seed: int = 11) -> list[dict[str, Any]]:
    """Each message's plan (its payload)."""
    rng = random.Random(seed)
    out = []
    for n in range(MESSAGES):
        roll = rng.random()
        if roll < 0.05:
            out.append({"n": n, "plan": "permanent", "max_retries": 10})
        elif roll < 0.10:
            out.append({"n": n, "plan": "exhaust", "max_retries": 2})
        else:
            fail = rng.choices([0, 1, 2], weights=[80, 14, 6])[0]
            out.append({"n": n, "plan": "retry", "fail": fail, "max_retries": 10})
    return out


def work(url: str, schema: str, seed: int, start: Any, results: Any) -> None:
    """Claims until every message is finished; sends back (claims, error or None). A claim is
    (id, claimed at ms, lease expires at ms, how it ended)."""
    claims: list[tuple[int, int, int, str]] = []
    rng = random.Random(seed)
    try:
        with deadletter.open(url, schema=schema, max_connections=1) as db:
            q = db.queue("jobs", backoff=BACKOFF)
            start.wait()
            deadline = time.monotonic() + DEADLINE
            while True:
                assert time.monotonic() < deadline, "the workers did not finish in time"
                m = q.claim(lease=LEASE)
                if m is None:
                    stats = q.stats()
                    if stats.succeeded + stats.dead == MESSAGES:
                        break
                    time.sleep(0.01)
                    continue
                assert m.lease_token is not None and m.lease_expires_at is not None
                plan = json.loads(m.payload)
                attempt = m.retry_count + 1
                planned_failure = plan["plan"] != "retry" or attempt <= plan["fail"]
                end = ACKED
                try:
                    if planned_failure and plan["plan"] != "permanent" and rng.random() < CRASH:
                        end = CRASHED
                    elif planned_failure:
                        retryable = plan["plan"] != "permanent"
                        q.fail(m.id, "planned", lease_token=m.lease_token, retryable=retryable)
                        end = FAILED
                    else:
                        q.succeed(m.id, lease_token=m.lease_token)
                except deadletter.ConflictError as conflict:
                    # The lease ran out and another worker's claim reaped it: the message is
                    # held by someone else (lease_lost), or no longer processing at all
                    # (wrong_status: that expiry was its last attempt and it is dead, or it
                    # waits in backoff, or another worker has finished it since).
                    assert conflict.reason in ("lease_lost", "wrong_status"), conflict
                    end = LEASE_LOST
                claims.append((m.id, millis(m.updated_at), millis(m.lease_expires_at), end))
        results.put((claims, None))
    except BaseException:  # noqa: BLE001 - sent to the parent, which fails the test
        results.put((claims, traceback.format_exc()))


def millis(instant: Any) -> int:
    return round(instant.timestamp() * 1000)


def check_holders(claims: list[tuple[int, int, int, str]]) -> dict[int, list[Any]]:
    """No message held by two workers at once, none claimed after its ack; the claims by id."""
    by_id: dict[int, list[Any]] = defaultdict(list)
    for claim in claims:
        by_id[claim[0]].append(claim)
    for id, held in by_id.items():
        held.sort(key=lambda c: c[1])
        for (_, at, expires, end), (_, next_at, _, _) in zip(held, held[1:]):
            assert next_at > at, f"message {id}: two claims at one instant: {held}"
            assert end != ACKED, f"message {id} was claimed again after its ack: {held}"
            if end in (CRASHED, LEASE_LOST):
                assert next_at >= expires, f"message {id} had two holders at once: {held}"
    return by_id


def test_eight_processes_claim_20000_messages_exactly_once(schemas: postgres.Schemas) -> None:
    url, schema = postgres.url(), schemas.name()
    fates = plans()
    with deadletter.open(url, schema=schema) as db:
        q = db.queue("jobs")
        for first in range(0, MESSAGES, 1000):
            batch = fates[first : first + 1000]
            items = [{"payload": json.dumps(p), "max_retries": p["max_retries"]} for p in batch]
            q.enqueue_many(items)

    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(PROCESSES + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=work, args=(url, schema, seed, start, results))
        for seed in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    start.wait(timeout=120)
    began = time.monotonic()
    outcomes = [results.get(timeout=DEADLINE + 60) for _ in procs]
    elapsed = time.monotonic() - began
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    errors = [error for _, error in outcomes if error is not None]
    assert errors == [], "\n".join(errors)

    claims = [claim for worker_claims, _ in outcomes for claim in worker_claims]
    by_id = check_holders(claims)
    with deadletter.open(url, schema=schema) as db:
        q = db.queue("jobs")
        stats = q.stats()
        assert (stats.pending, stats.processing) == (0, 0), stats
        finished: list[deadletter.Message] = []
        while page := q.list(limit=1000, after_id=finished[-1].id if finished else None):
            finished += page
    assert len(finished) == MESSAGES
    for m in finished:
        plan = json.loads(m.payload)
        ends = Counter(end for *_, end in by_id[m.id])
        want = "succeeded" if plan["plan"] == "retry" else "dead"
        assert m.status == want, (plan, m, by_id[m.id])
        assert ends[ACKED] == (1 if want == "succeeded" else 0), (plan, by_id[m.id])
        assert m.retry_count == len(by_id[m.id]) - ends[ACKED], (m, by_id[m.id])
        if plan["plan"] == "retry":
            assert m.retry_count >= plan["fail"]
        elif plan["plan"] == "exhaust":
            assert m.retry_count == 2 and m.last_error in ("planned", "lease expired"), m
        else:
            assert m.last_error == "planned" and m.errors[-1]["error"] == "planned", m
    total = Counter(end for *_, end in claims)
    print(
        f"{PROCESSES} processes finished {MESSAGES} messages in {elapsed:.1f} s: "
        f"{stats.succeeded} succeeded, {stats.dead} dead, {len(claims)} claims {dict(total)}"
    )

