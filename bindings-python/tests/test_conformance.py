"""The shared conformance cases (tests/conformance/*.json, format in tests/README.md) through the
public Python API: ``deadletter.open(":memory:", clock=<virtual clock>, random=<fixed sample>)``,
and the same on PostgreSQL, ``deadletter.open(URL, schema=<fresh>, ...)`` with one new schema per
case (so ids start at 1), dropped afterwards; those need ``DEADLETTER_POSTGRES_URL`` (``make
test-postgres``) and are skipped with that reason without it.

Names and units are mapped to the Python API: the core's integer milliseconds (``lease_ms``,
``delay_ms``, ``older_than_ms``, a backoff's ``initial_ms`` and ``cap_ms``) become seconds
(``lease``, ``delay``, ``older_than``, ``initial``, ``cap``), and so do the fields of expected
validation errors; timestamps and instants are milliseconds relative to BASE in the cases and
aware datetimes in Python; ages are milliseconds in the cases and timedeltas in Python.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Optional

import postgres_server as postgres
import pytest

import deadletter
from deadletter._deadletter import FILTERS

# A case whose handle has its own backoff while the queue stores another checks that the handle's
# wins; the warning that comes with it (once per handle) is test_queue_settings.py's subject.
pytestmark = pytest.mark.filterwarnings("ignore:queue .*this handle's backoff:UserWarning")

CASES_DIR = Path(__file__).resolve().parents[2] / "tests" / "conformance"
BASE = 1767225600000  # 2026-01-01T00:00:00Z in ms
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
TIMESTAMPS = (
    "retry_after",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "first_failed_at",
    "dead_at",
    "replayed_at",
    "expires_at",
)
# Core field name -> Python argument name (in seconds).
NAMES = {
    "lease_ms": "lease",
    "delay_ms": "delay",
    "older_than_ms": "older_than",
    "initial_ms": "initial",
    "cap_ms": "cap",
    "retry_in_ms": "retry_in",
    "expires_in_ms": "expires_in",
}
# Keyword-only arguments the Python API requires: an absent one is passed as None, which the core
# rejects like the other bindings' absent argument.
REQUIRED = {"extend": ("lease_token",), "purge": ("status", "older_than")}
# The filters on instants (the list's and the bulk actions'), written relative to BASE.
INSTANTS = tuple(name for name in FILTERS if name.endswith(("_after", "_before")))
# The keys of an enqueue_many item object, as the core's runner reads them.
ITEM_KEYS = ("payload", "max_retries", "idempotency_key", "delay_ms", "group", "expires_in_ms")

# Cases the Python API cannot express, with the reason. Each must fail (strict), so a case that
# starts passing is noticed and removed from here. None today.
EXPECTED_FAILURES: dict[str, str] = {}
# Case files the Python package does not run yet, file name -> reason: their cases are skipped
# with it. None today.
SKIPPED_FILES: dict[str, str] = {}


def load_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            cases.append((f"{path.name}: {case['name']}", case))
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        params = []
        for name, case in load_cases():
            marks = []
            skipped = SKIPPED_FILES.get(name.split(": ", 1)[0])
            if skipped is not None:
                marks.append(pytest.mark.skip(reason=skipped))
            if name in EXPECTED_FAILURES:
                marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=True))
            params.append(pytest.param(case, id=name, marks=marks))
        metafunc.parametrize("case", params)


def test_every_expected_failure_names_a_case() -> None:
    names = {name for name, _ in load_cases()}
    assert len(names) >= 60
    assert set(EXPECTED_FAILURES) <= names


def resolve(value: Any, tokens: list[str]) -> Any:
    """Replaces ``{"$token": k}``, ``{"$repeat": [s, n]}`` and ``{"$list": [v, n]}``."""
    if isinstance(value, dict):
        if "$token" in value:
            return tokens[value["$token"]]
        if "$repeat" in value:
            s, n = value["$repeat"]
            return s * n
        if "$list" in value:
            item, n = value["$list"]
            return [resolve(item, tokens) for _ in range(n)]
        return {k: resolve(v, tokens) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, tokens) for v in value]
    return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def seconds(ms: Any) -> Any:
    """Integer milliseconds as seconds (an int when whole); anything else is passed as it is,
    for the binding to reject like the core does (a bool stays a bool: ``True`` is not an int)."""
    if is_int(ms):
        return ms // 1000 if ms % 1000 == 0 else ms / 1000
    return ms


def instant(ms: Any) -> Any:
    """An integer instant relative to BASE as an aware datetime; anything else unchanged."""
    return EPOCH + timedelta(milliseconds=BASE + ms) if is_int(ms) else ms


def to_ms(value: datetime) -> int:
    assert value.tzinfo is not None, "timestamps are aware datetimes"
    return (value - EPOCH) // timedelta(milliseconds=1)


def as_case_json(message: Optional[deadletter.Message]) -> Optional[dict[str, Any]]:
    """A message as the cases write it: timestamps in ms relative to BASE."""
    if message is None:
        return None
    d: dict[str, Any] = message.to_dict()
    for field in TIMESTAMPS:
        if d[field] is not None:
            d[field] = to_ms(d[field]) - BASE
    d["errors"] = [{**e, "at": to_ms(e["at"]) - BASE} for e in d["errors"]]
    return d


def stats_json(stats: deadletter.QueueStats) -> dict[str, Any]:
    """Queue statistics as the cases write them: ``next_due_at`` relative to BASE, ages in ms."""
    d: dict[str, Any] = stats.to_dict()
    if d["next_due_at"] is not None:
        d["next_due_at"] = to_ms(d["next_due_at"]) - BASE
    for age in ("oldest_due_age", "oldest_dead_age"):
        value = d.pop(age)
        d[f"{age}_ms"] = None if value is None else value // timedelta(milliseconds=1)
    return d


def python_names(spec: dict[str, Any]) -> dict[str, Any]:
    """The keys of a case's object in Python's names, milliseconds as seconds."""
    return {NAMES.get(k, k): seconds(v) if k in NAMES else v for k, v in spec.items()}


def backoff(spec: Any) -> Optional[deadletter.Backoff]:
    """A backoff object of a case as a `deadletter.Backoff` (its errors are the step's)."""
    if spec is None:
        return None
    return deadletter.Backoff(**python_names(spec))


def settings_json(settings: deadletter.QueueSettings) -> dict[str, Any]:
    """A queue's settings as the cases write them: durations in ms, the backoff an object."""
    d: dict[str, Any] = settings.to_dict()
    policy = d.pop("backoff")
    d["backoff"] = None if policy is None else {
        "initial_ms": policy.initial // timedelta(milliseconds=1),
        "multiplier": policy.multiplier,
        "cap_ms": policy.cap // timedelta(milliseconds=1),
        "jitter": policy.jitter,
    }  # fmt: skip
    for name in ("lease", "expires_in"):
        value = d.pop(name)
        d[f"{name}_ms"] = None if value is None else value // timedelta(milliseconds=1)
    return {"settings": d}


def item(value: Any) -> Any:
    """One enqueue_many item: an object with the core runner's keys, in Python's names."""
    if not isinstance(value, dict):
        return value
    return {NAMES.get(k, k): seconds(v) if k in NAMES else v for k, v in value.items() if k in ITEM_KEYS}


def call(
    db: deadletter.Database,
    op: str,
    args: dict[str, Any],
    policy: Optional[dict[str, Any]],
    tokens: list[str],
) -> Any:
    """Runs one step through the public API; returns what the case compares."""
    arg: Callable[[str], Any] = args.get  # absent -> None, as the cases want
    if op == "backoff":
        delay = deadletter.backoff(arg("retry_count"))
        return {"delay_ms": delay // timedelta(milliseconds=1)}
    if op == "queues":
        return [stats_json(s) for s in db.queues()]
    # A bad policy or queue name raises here: that is the step's result. The backoff of a
    # set_settings step is the one to store, not the handle's.
    own = policy if op == "set_settings" else args.get("backoff", policy)
    q = db.queue(arg("queue"), backoff=backoff(own))
    kwargs = {NAMES.get(k, k): seconds(v) if k in NAMES else v for k, v in args.items()}
    for name in ("queue", "backoff"):
        kwargs.pop(name, None)
    for name in REQUIRED.get(op, ()):
        kwargs.setdefault(name, None)
    for name in INSTANTS:
        if name in kwargs:
            kwargs[name] = instant(kwargs[name])
    claimed: list[deadletter.Message] = []
    if op == "queue":
        return None
    if op in ("settings", "pause", "resume"):
        return settings_json(getattr(q, op)())
    if op == "set_settings":
        # The policy to store as a dict of Backoff's arguments: checked with the other fields.
        stored = args.get("backoff")
        if stored is not None:
            kwargs["backoff"] = python_names(stored)
        return settings_json(q.set_settings(**kwargs))
    if op == "enqueue":
        return as_case_json(q.enqueue(kwargs.pop("payload", None), **kwargs))
    if op == "enqueue_many":
        items = kwargs["items"]
        return [as_case_json(m) for m in q.enqueue_many([item(i) for i in items])]
    if op == "claim":
        m = q.claim(**kwargs)
        claimed = [] if m is None else [m]
        result: Any = as_case_json(m)
    elif op == "claim_many":
        claimed = q.claim_many(kwargs.pop("n", None), **kwargs)
        result = [as_case_json(m) for m in claimed]
    elif op == "extend":
        return as_case_json(q.extend(kwargs.pop("id", None), **kwargs))
    elif op == "succeed":
        return as_case_json(q.succeed(kwargs.pop("id", None), **kwargs))
    elif op == "fail":
        return as_case_json(q.fail(kwargs.pop("id", None), kwargs.pop("error", None), **kwargs))
    elif op == "replay":
        return as_case_json(q.replay(kwargs.pop("id", None), **kwargs))
    elif op in ("get", "delete", "retry_now"):
        return as_case_json(getattr(q, op)(arg("id")))
    elif op == "move":
        return as_case_json(q.move(arg("id"), arg("to_queue")))
    elif op in ("replay_all", "delete_all", "retry_now_all", "purge"):
        return {"count": getattr(q, op)(**kwargs)}
    elif op == "move_all":
        return {"count": q.move_all(kwargs.pop("to_queue", None), **kwargs)}
    elif op == "reap":
        return {"count": q.reap()}
    elif op == "stats":
        return stats_json(q.stats())
    elif op == "next_due_at":
        due = q.next_due_at()
        return {"next_due_at": None if due is None else to_ms(due) - BASE}
    elif op == "list":
        page = q.list(**kwargs)
        assert isinstance(page, deadletter.MessagePage), type(page)
        return {"messages": [as_case_json(m) for m in page], "next_after_id": page.next_after_id}
    else:
        raise AssertionError(f"unknown op {op!r}")
    for m in claimed:
        assert m.lease_token is not None
        tokens.append(m.lease_token)
    return result


def subset(want: dict[str, Any], got: Optional[dict[str, Any]], what: str) -> None:
    assert got is not None, f"expected {what}, got none (want {want})"
    assert {k: got.get(k, "<absent>") for k in want} == want, f"{got}"


def check(expect: dict[str, Any], outcome: Callable[[], Any], tokens: list[str]) -> None:
    """Compares the outcome with ``expect``, resolved after the call (a claim adds its token)."""
    try:
        got = outcome()
    except deadletter.Error as err:
        expect = resolve(expect, tokens)
        assert "error" in expect, f"unexpected {err!r}"
        assert err.code == expect["error"], f"expected {expect['error']}, got {err!r}"
        if "fields" in expect:
            assert isinstance(err, deadletter.ValidationError)
            want = sorted(
                (NAMES.get(f["field"], f["field"]), f["code"], f.get("index", -1))
                for f in expect["fields"]
            )
            got_fields = sorted((f["field"], f["code"], f.get("index", -1)) for f in err.errors)
            assert got_fields == want, repr(err)
        return
    expect = resolve(expect, tokens)
    assert "error" not in expect, f"expected error {expect['error']}, got {got!r}"
    if "message" in expect:
        if expect["message"] is None:
            assert got is None, f"expected no message, got {got!r}"
        else:
            subset(expect["message"], got, "a message")
    elif "messages" in expect or "queues" in expect:
        want = expect.get("messages", expect.get("queues"))
        listed = got["messages"] if isinstance(got, dict) else got  # a list's page
        assert len(listed) == len(want), listed
        for one, message in zip(want, listed):
            subset(one, message, "an entry")
    elif "page" in expect:
        want = expect["page"]
        assert len(got["messages"]) == len(want["messages"]), got
        for one, message in zip(want["messages"], got["messages"]):
            subset(one, message, "an entry")
        assert got["next_after_id"] == want["next_after_id"], got
    elif "stats" in expect:
        subset(expect["stats"], got, "stats")
    elif "settings" in expect:
        subset(expect["settings"], got["settings"], "settings")
    elif "count" in expect:
        assert got == {"count": expect["count"]}
    elif "delay_ms" in expect:
        assert got == {"delay_ms": expect["delay_ms"]}
    elif "next_due_at" in expect:
        assert got == {"next_due_at": expect["next_due_at"]}


Opener = Callable[..., deadletter.Database]


@pytest.fixture(scope="module")
def case_schemas() -> Iterator[postgres.Schemas]:
    """The schemas of the cases, dropped at once after the last (one psql call, not one a case)."""
    made = postgres.Schemas("py_conformance")
    yield made
    made.drop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=postgres.NEEDS_POSTGRES)])
def opener(request: pytest.FixtureRequest, case_schemas: postgres.Schemas) -> Opener:
    """Opens a new, empty database of the store the test is parametrized with."""
    if request.param == "sqlite":
        return lambda **options: deadletter.open(":memory:", **options)
    return lambda **options: deadletter.open(
        postgres.url(), schema=case_schemas.name(), max_connections=1, **options
    )


def test_case(case: dict[str, Any], opener: Opener) -> None:
    now = [BASE]
    options = case.get("options", {})
    sample = options.get("jitter_sample", 0)
    db = opener(
        clock=lambda: EPOCH + timedelta(milliseconds=now[0]),
        lease=seconds(options["lease_ms"]) if "lease_ms" in options else 30.0,
        max_payload_bytes=options.get("max_payload_bytes", 1048576),
        random=lambda: sample,
    )
    died: list[int] = []
    db.on_dead(lambda m: died.append(m.id))
    tokens: list[str] = []
    with db:
        for index, step in enumerate(case["steps"]):
            now[0] = BASE + step.get("at", now[0] - BASE)
            for _ in range(step.get("times", 1)):
                args = resolve(step.get("args", {}), tokens)
                died.clear()
                try:
                    check(
                        step.get("expect", {}),
                        lambda: call(db, step["op"], args, options.get("backoff"), tokens),
                        tokens,
                    )
                    if "died" in step:
                        assert died == step["died"], f"expected deaths {step['died']}, got {died}"
                except AssertionError as failure:
                    raise AssertionError(f"step {index} ({step['op']}): {failure}") from None
