"""Random sequences of operations against a small model of the documented rules (hypothesis).

The model below restates the README's rules in plain Python: enqueue; claim (reap expired leases
as failed attempts, then lease the first due pending message in enqueue order, by id); succeed
and fail with the current, a stale, a made-up or no lease token; replay; delete and purge; and a
clock that moves both ways. After every step the whole database must equal the model, listed
whole and by status, with the statistics' counts, and the invariants hold: one holder per
message, `retry_after` set exactly while a message is pending in backoff (set by fail, cleared by
claim and replay), `retry_count <= max_retries`, ids strictly increasing and never reused (a
deleted message's id is not found, and is not given again); and the failure context: one history
entry per failed attempt (the last 20 kept, the rest counted), `first_failed_at` set once,
`dead_at` set exactly while dead, replays counted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

import deadletter

EXAMPLES = 2000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms
QUEUES = ("a", "b")
STATUSES = ("pending", "processing", "succeeded", "dead")
FINISHED = ("succeeded", "dead")
LEASE_EXPIRED = "lease expired"
MAX_HISTORY = 20


def backoff_ms(retry_count: int) -> int:
    """The README's schedule: min(2^n, 3600) seconds after the n-th failure."""
    return min(2**retry_count, 3600) * 1000


@dataclass(frozen=True)
class Model:
    """One message as the documented rules say it must be (timestamps in UTC ms)."""

    id: int
    queue: str
    payload: str
    status: str
    retry_count: int
    max_retries: int
    retry_after: Optional[int]
    last_error: Optional[str]
    created_at: int
    updated_at: int
    lease_token: Optional[str]
    lease_expires_at: Optional[int]
    idempotency_key: Optional[str] = None
    first_failed_at: Optional[int] = None
    dead_at: Optional[int] = None
    errors: tuple[tuple[int, str, int], ...] = ()  # (attempt, error, at)
    errors_dropped: int = 0
    replay_count: int = 0
    replayed_at: Optional[int] = None
    deduplicated: bool = False
    group: Optional[str] = None
    expires_at: Optional[int] = None
    moved_from: Optional[str] = None  # the model never moves a message


class Refused(Exception):
    """What the model says a call must raise: ("conflict", reason, status) or ("not_found",)."""


def fail(m: Model, error: str, token: Optional[str], retryable: bool, now: int) -> Model:
    if m.status != "processing":
        raise Refused("conflict", "wrong_status", m.status)
    if token is not None and token != m.lease_token:
        raise Refused("conflict", "lease_lost", None)
    count = m.retry_count + 1
    dead = not retryable or count >= m.max_retries
    history = (*m.errors, (m.errors_dropped + len(m.errors) + 1, error, now))
    dropped = max(0, len(history) - MAX_HISTORY)
    return replace(
        m,
        status="dead" if dead else "pending",
        retry_count=count,
        retry_after=None if dead else now + backoff_ms(count),
        last_error=error,
        updated_at=now,
        lease_token=None,
        lease_expires_at=None,
        first_failed_at=now if m.first_failed_at is None else m.first_failed_at,
        dead_at=now if dead else None,
        errors=history[dropped:],
        errors_dropped=m.errors_dropped + dropped,
    )


def succeed(m: Model, token: Optional[str], now: int) -> Model:
    if m.status != "processing":
        raise Refused("conflict", "wrong_status", m.status)
    if token is not None and token != m.lease_token:
        raise Refused("conflict", "lease_lost", None)
    return replace(m, status="succeeded", updated_at=now, lease_token=None, lease_expires_at=None)


def replay(m: Model, now: int) -> Model:
    if m.status != "dead":
        raise Refused("conflict", "wrong_status", m.status)
    return replace(
        m,
        status="pending",
        retry_count=0,
        retry_after=None,
        last_error=None,
        updated_at=now,
        dead_at=None,
        replay_count=m.replay_count + 1,
        replayed_at=now,
    )


def ms(value: Optional[datetime]) -> Optional[int]:
    return None if value is None else (value - EPOCH) // timedelta(milliseconds=1)


def observed(message: deadletter.Message) -> Model:
    d: dict[str, Any] = message.to_dict()
    for field in (
        "retry_after", "created_at", "updated_at", "lease_expires_at", "first_failed_at",
        "dead_at", "replayed_at", "expires_at",
    ):  # fmt: skip
        d[field] = ms(d[field])
    d["errors"] = tuple((e["attempt"], e["error"], ms(e["at"])) for e in d["errors"])
    return Model(**d)


class QueueMachine(RuleBasedStateMachine):
    """The database (SQLite in memory, through the public API) next to the model."""

    runs = 0
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        QueueMachine.runs += 1
        self.now = BASE
        self.db = deadletter.open(
            ":memory:", clock=lambda: EPOCH + timedelta(milliseconds=self.now)
        )
        self.model: dict[int, Model] = {}
        self.gone: dict[int, str] = {}  # deleted (or purged) ids, with their queue
        self.last_id = 0
        self.tokens: list[str] = []  # every token handed out, for stale ones

    def teardown(self) -> None:
        self.db.close()

    def expect(self, call: Any, want: Any) -> Any:
        """Runs `call`; `want` is a Model, or a Refused the call must raise."""
        if isinstance(want, Refused):
            try:
                got = call()
            except deadletter.ConflictError as err:
                assert want.args == ("conflict", err.reason, err.status), (want.args, err)
                return None
            except deadletter.NotFoundError as err:
                assert want.args == ("not_found",), (want.args, err)
                return None
            raise AssertionError(f"expected {want.args}, got {got!r}")
        got = observed(call())
        follows_the_rules(got)
        assert got == want, f"\n got {got}\nwant {want}"
        return got

    @rule(target=ids, queue=st.sampled_from(QUEUES), max_retries=st.integers(1, 4))
    def enqueue(self, queue: str, max_retries: int) -> int:
        new_id = self.last_id + 1
        payload = f"p{new_id}"
        want = Model(
            new_id, queue, payload, "pending", 0, max_retries, None, None, self.now, self.now,
            None, None,
        )  # fmt: skip
        message = self.db.queue(queue).enqueue(payload, max_retries=max_retries)
        assert message.id > self.last_id, "ids must strictly increase, never reused"
        self.expect(lambda: message, want)
        self.model[new_id] = want
        self.last_id = new_id
        return new_id

    def deleted(self, message_id: int, call: Any) -> bool:
        """For an id that was deleted: `call(queue)` must raise not_found; then True."""
        if message_id not in self.gone:
            return False
        self.expect(lambda: call(self.db.queue(self.gone[message_id])), Refused("not_found"))
        return True

    @rule(
        queue=st.sampled_from(QUEUES),
        lease_ms=st.sampled_from([1, 999, 1000, 2000, 30_000]),
    )
    def claim(self, queue: str, lease_ms: int) -> None:
        now, mine = self.now, [m for m in self.model.values() if m.queue == queue]
        due = [m for m in mine if m.status == "pending" and (m.retry_after or now) <= now]
        for m in mine:
            if m.status == "processing" and m.lease_expires_at is not None:
                if m.lease_expires_at <= now:
                    self.model[m.id] = fail(m, LEASE_EXPIRED, None, True, now)
        got = self.db.queue(queue).claim(lease=timedelta(milliseconds=lease_ms))
        if not due:
            assert got is None, f"nothing is due, got {got}"
            return
        first = min(due, key=lambda m: m.id)  # claim order: enqueue order, the id
        assert got is not None, f"message {first.id} is due"
        assert got.lease_token is not None and got.lease_token not in self.tokens
        want = replace(
            first,
            status="processing",
            retry_after=None,
            updated_at=now,
            lease_token=got.lease_token,
            lease_expires_at=now + lease_ms,
        )
        self.expect(lambda: got, want)
        self.model[first.id] = want
        self.tokens.append(got.lease_token)

    def token(self, message_id: int, which: str) -> Optional[str]:
        current = self.model[message_id].lease_token
        if which == "current":
            return current
        if which == "stale":
            return next((t for t in reversed(self.tokens) if t != current), "never-issued")
        return None if which == "none" else "never-issued"

    @rule(message_id=ids, which=st.sampled_from(["current", "stale", "none", "made-up"]))
    def succeed(self, message_id: int, which: str) -> None:
        if self.deleted(message_id, lambda q: q.succeed(message_id)):
            return
        m, token = self.model[message_id], self.token(message_id, which)
        try:
            want: Any = succeed(m, token, self.now)
        except Refused as refused:
            want = refused
        self.expect(lambda: self.db.queue(m.queue).succeed(m.id, lease_token=token), want)
        if isinstance(want, Model):
            self.model[m.id] = want

    @rule(
        message_id=ids,
        which=st.sampled_from(["current", "stale", "none", "made-up"]),
        retryable=st.booleans(),
    )
    def fail(self, message_id: int, which: str, retryable: bool) -> None:
        if self.deleted(message_id, lambda q: q.fail(message_id, "e")):
            return
        m, token = self.model[message_id], self.token(message_id, which)
        error = f"error at {self.now}"
        try:
            want: Any = fail(m, error, token, retryable, self.now)
        except Refused as refused:
            want = refused
        call = self.db.queue(m.queue).fail
        self.expect(lambda: call(m.id, error, lease_token=token, retryable=retryable), want)
        if isinstance(want, Model):
            self.model[m.id] = want

    @rule(message_id=ids)
    def replay(self, message_id: int) -> None:
        if self.deleted(message_id, lambda q: q.replay(message_id)):
            return
        m = self.model[message_id]
        try:
            want: Any = replay(m, self.now)
        except Refused as refused:
            want = refused
        self.expect(lambda: self.db.queue(m.queue).replay(m.id), want)
        if isinstance(want, Model):
            self.model[m.id] = want

    @rule(message_id=ids)
    def delete(self, message_id: int) -> None:
        if self.deleted(message_id, lambda q: q.delete(message_id)):
            return
        m = self.model[message_id]
        if m.status not in FINISHED:
            want: Any = Refused("conflict", "wrong_status", m.status)
        else:
            want = m
        self.expect(lambda: self.db.queue(m.queue).delete(m.id), want)
        if isinstance(want, Model):
            del self.model[m.id]
            self.gone[m.id] = m.queue

    @rule(
        queue=st.sampled_from(QUEUES),
        status=st.sampled_from(FINISHED),
        older_than_ms=st.sampled_from([0, 1, 1000, 30_000, 90_000]),
    )
    def purge(self, queue: str, status: str, older_than_ms: int) -> None:
        until = self.now - older_than_ms
        purged = [
            m for m in self.model.values()
            if m.queue == queue and m.status == status and m.updated_at <= until
        ]  # fmt: skip
        older_than = timedelta(milliseconds=older_than_ms)
        assert self.db.queue(queue).purge(status=status, older_than=older_than) == len(purged)
        for m in purged:
            del self.model[m.id]
            self.gone[m.id] = m.queue

    @rule(message_id=ids)
    def other_queue_sees_nothing(self, message_id: int) -> None:
        mine = self.gone.get(message_id) or self.model[message_id].queue
        other = next(q for q in QUEUES if q != mine)
        self.expect(lambda: self.db.queue(other).get(message_id), Refused("not_found"))

    @rule(
        delta=st.one_of(
            st.sampled_from([1, 999, 1000, 2000, 4000, 30_000, 3_600_000]),
            st.integers(-90_000, 90_000),
        )
    )
    def move_clock(self, delta: int) -> None:
        self.now += delta

    @invariant()
    def database_follows_the_rules_and_equals_the_model(self) -> None:
        holders: set[str] = set()
        for queue in QUEUES:
            got = [observed(m) for m in self.db.queue(queue).list(limit=1000)]
            for m in got:
                follows_the_rules(m)
                if m.lease_token is not None:
                    assert m.lease_token not in holders, f"two holders of one token: {m}"
                    holders.add(m.lease_token)
            want = sorted((m for m in self.model.values() if m.queue == queue), key=lambda m: m.id)
            assert got == want, f"\n got {got}\nwant {want}"
            handle = self.db.queue(queue)
            for status in STATUSES:
                listed = [observed(m) for m in handle.list(status=status, limit=1000)]
                assert listed == [m for m in want if m.status == status], f"list {status}"
            stats = handle.stats()
            counted = {status: getattr(stats, status) for status in STATUSES}
            assert counted == {s: sum(m.status == s for m in want) for s in STATUSES}, counted


def follows_the_rules(m: Model) -> None:
    """The invariants of one message."""
    processing = m.status == "processing"
    # One holder per message: a processing message has exactly one lease; no other has any.
    assert (m.lease_token is not None) == processing, f"lease token vs status: {m}"
    assert (m.lease_expires_at is not None) == processing, f"lease expiry vs status: {m}"
    # retry_after is set exactly while the message is pending in backoff: set by fail (or an
    # expired lease), cleared by claim and replay.
    in_backoff = m.status == "pending" and m.retry_count > 0
    assert (m.retry_after is not None) == in_backoff, f"retry_after vs pending in backoff: {m}"
    assert 0 <= m.retry_count <= m.max_retries, f"retry_count > max_retries: {m}"
    # The failure context: dead_at exactly while dead; a bounded history numbered without gaps;
    # first_failed_at once anything failed.
    assert (m.dead_at is not None) == (m.status == "dead"), f"dead_at vs status: {m}"
    assert len(m.errors) <= MAX_HISTORY, f"history over {MAX_HISTORY}: {m}"
    attempts = [attempt for attempt, _, _ in m.errors]
    assert attempts == list(range(m.errors_dropped + 1, m.errors_dropped + len(m.errors) + 1))
    assert (m.first_failed_at is not None) == bool(m.errors), f"first_failed_at: {m}"


def test_random_operation_sequences_follow_the_documented_rules() -> None:
    QueueMachine.runs = 0
    run_state_machine_as_test(
        QueueMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    assert QueueMachine.runs >= EXAMPLES
