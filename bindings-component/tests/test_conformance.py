"""The shared conformance cases (tests/conformance/*.json, format in tests/README.md) through
deadletter's WebAssembly component in wasmtime (PyPI ``wasmtime``), on the in-memory store of
``hosts/python/memory_store.py``, which selects and persists and asks the component for every
decision. The component is ``build/component/deadletter-X.Y.Z.component.wasm`` (``make
component``), or the file ``DEADLETTER_COMPONENT`` names.

The cases are run as the core's own runner runs them (``deadletter::conformance``): arguments in
the core's names and units (milliseconds), each passed as the WIT ``arg`` a dynamically typed
caller would give; a step's queue handle is its backoff policy (the step's, else the case's),
checked first; every other argument is checked by the operation, all together.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bindings-component" / "hosts" / "python"))

from component import ComponentError, Core, arg, get, record  # noqa: E402
from memory_store import MemoryDatabase  # noqa: E402

CASES_DIR = ROOT / "tests" / "conformance"
BASE = 1767225600000  # 2026-01-01T00:00:00Z in ms
INSTANTS = (
    "retry_after",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "first_failed_at",
    "dead_at",
    "replayed_at",
    "expires_at",
)
MESSAGE_FIELDS = (
    "id",
    "queue",
    "payload",
    "status",
    "retry_count",
    "max_retries",
    "last_error",
    "lease_token",
    "idempotency_key",
    "errors_dropped",
    "replay_count",
    "group",
    "moved_from",
    "deduplicated",
    *INSTANTS,
)
STATS_FIELDS = (
    "queue",
    "pending",
    "processing",
    "succeeded",
    "dead",
    "expired",
    "delayed",
    "next_due_at",
    "oldest_due_age_ms",
    "oldest_dead_age_ms",
    "paused",
    "expired_dead",
    "expired_discarded",
)
ITEM_KEYS = ("payload", "max_retries", "idempotency_key", "delay_ms", "group", "expires_in_ms")
#: The list and bulk filters (the core's ``FilterArgs::NAMES``); the last six are instants.
FILTER_KEYS = (
    "status",
    "delayed",
    "payload_contains",
    "error_contains",
    "group",
    "idempotency_key",
    "created_after",
    "created_before",
    "updated_after",
    "updated_before",
    "dead_after",
    "dead_before",
)

#: The bulk operations and their ``bulk-action``.
BULK = {"replay_all": "replay", "delete_all": "delete", "retry_now_all": "retry-now"}

# Cases a store on the component cannot express, with the reason. None.
EXPECTED_FAILURES: dict[str, str] = {}


def component_path() -> Path:
    given = os.environ.get("DEADLETTER_COMPONENT")
    if given:
        return Path(given)
    found = sorted((ROOT / "build" / "component").glob("deadletter-*.component.wasm"))
    if not found:
        pytest.fail("no build/component/deadletter-*.component.wasm: run `make component` first")
    return found[-1]


@pytest.fixture(scope="session")
def core() -> Core:
    return Core(component_path())


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
            if name in EXPECTED_FAILURES:
                marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[name], strict=True))
            params.append(pytest.param(case, id=name, marks=marks))
        metafunc.parametrize("case", params)


def resolve(value: Any, tokens: list[str]) -> Any:
    """``{"$token": k}``, ``{"$repeat": [s, n]}`` and ``{"$list": [v, n]}`` resolved."""
    if isinstance(value, list):
        return [resolve(v, tokens) for v in value]
    if not isinstance(value, dict):
        return value
    if "$token" in value:
        return tokens[value["$token"]]
    if "$repeat" in value:
        text, n = value["$repeat"]
        return text * n
    if "$list" in value:
        item, n = value["$list"]
        return [resolve(item, tokens) for _ in range(n)]
    return {k: resolve(v, tokens) for k, v in value.items()}


def backoff_args(given: dict[str, Any]) -> Any:
    return record(
        initial_ms=arg(given.get("initial_ms")),
        multiplier=arg(given.get("multiplier")),
        cap_ms=arg(given.get("cap_ms")),
        jitter=arg(given.get("jitter")),
    )


def item(value: Any) -> Any:
    """An ``enqueue_many`` item (a bare value is a payload), or an ``enqueue`` step's arguments."""
    if isinstance(value, dict):
        return record(**{key: arg(value.get(key)) for key in ITEM_KEYS})
    return record(**{key: arg(value if key == "payload" else None) for key in ITEM_KEYS})


def relative(value: Any) -> Any:
    """An instant argument written relative to BASE, made absolute."""
    return BASE + value if isinstance(value, int) and not isinstance(value, bool) else value


def filters(args: dict[str, Any]) -> Any:
    """The ``filter-args`` record of a step's filters: each given one as the ``arg`` the caller
    gave (instants made absolute), the others unset."""
    given = {
        key: arg(relative(args[key]) if key.endswith(("_after", "_before")) else args[key])
        for key in FILTER_KEYS
        if key in args
    }
    return record(**{key: given.get(key) for key in FILTER_KEYS})


def instant(ms: int | None) -> int | None:
    return None if ms is None else ms - BASE


def message_json(message: Any) -> dict[str, Any]:
    """A message as the cases write it."""
    out = {name: get(message, name) for name in MESSAGE_FIELDS}
    for name in INSTANTS:
        out[name] = instant(out[name])
    out["errors"] = [
        {"attempt": e.attempt, "error": e.error, "at": instant(e.at)} for e in message.errors
    ]
    return out


def stats_json(stats: Any) -> dict[str, Any]:
    out = {name: get(stats, name) for name in STATS_FIELDS}
    out["next_due_at"] = instant(out["next_due_at"])
    return out


def settings_json(settings: Any) -> dict[str, Any]:
    policy = settings.backoff
    backoff = policy and {
        "initial_ms": get(policy, "initial_ms"),
        "multiplier": policy.multiplier,
        "cap_ms": get(policy, "cap_ms"),
        "jitter": None if policy.jitter == "none" else policy.jitter,
    }
    return {
        "backoff": backoff,
        "max_retries": get(settings, "max_retries"),
        "lease_ms": get(settings, "lease_ms"),
        "expires_in_ms": get(settings, "expires_in_ms"),
        "on_expiry": get(settings, "on_expiry"),
        "paused": settings.paused,
    }


def policy(core: Core, case: dict[str, Any], step: dict[str, Any]) -> Any:
    """The step's queue handle's own backoff policy (the step's, else the case's), checked."""
    own = None if step["op"] == "set_settings" else step.get("args", {}).get("backoff")
    given = own if own is not None else case.get("options", {}).get("backoff")
    return None if given is None else core.validate.backoff_policy(backoff_args(given))


def perform(
    db: MemoryDatabase, op: str, args: dict[str, Any], handle: Any, sample: float, now: int
) -> Any:
    """Runs one step's operation; returns its value as the cases write it."""
    a = lambda name: arg(args.get(name))  # noqa: E731
    q = a("queue")
    core = db.core
    if op == "queue":
        core.validate.queue_name(q)
        return None
    if op == "enqueue":
        return message_json(db.enqueue(q, [item(args)], False, now)[0])
    if op == "enqueue_many":
        items = args["items"]
        if not isinstance(items, list):
            raise ValueError(f"bad items {items!r}")
        return [message_json(m) for m in db.enqueue(q, [item(i) for i in items], True, now)]
    if op in ("claim", "claim_many"):
        n = arg(1) if op == "claim" else a("n")
        taken = [message_json(m) for m in db.claim_many(q, n, a("lease_ms"), handle, sample, now)]
        return taken if op == "claim_many" else (taken[0] if taken else None)
    if op == "reap":
        return {"count": db.reap(q, handle, sample, now)}
    if op == "succeed":
        return message_json(db.succeed(q, a("id"), a("lease_token"), now))
    if op == "fail":
        fail = db.fail(
            q, a("id"), a("error"), a("lease_token"), a("retryable"), a("retry_in_ms"),
            handle, sample, now,
        )
        return message_json(fail)
    if op == "extend":
        return message_json(db.extend(q, a("id"), a("lease_token"), a("lease_ms"), now))
    if op == "replay":
        return message_json(db.replay(q, a("id"), a("expires_in_ms"), now))
    if op in BULK:
        return {"count": db.bulk(BULK[op], q, filters(args), a("limit"), a("dry_run"), now)}
    if op == "move":
        return message_json(db.move(q, a("id"), a("to_queue"), now))
    if op == "move_all":
        moved = db.move_all(q, a("to_queue"), filters(args), a("limit"), a("dry_run"), now)
        return {"count": moved}
    if op == "retry_now":
        return message_json(db.retry_now(q, a("id"), now))
    if op == "purge":
        return {"count": db.purge(q, a("status"), a("older_than_ms"), now)}
    if op == "delete":
        return message_json(db.delete(q, a("id")))
    if op == "get":
        return message_json(db.get(q, a("id")))
    if op == "list":
        page = db.list_messages(q, filters(args), a("limit"), a("after_id"), now)
        return {
            "messages": [message_json(m) for m in page.messages],
            "next_after_id": get(page, "next_after_id"),
        }
    if op == "stats":
        return stats_json(db.stats(q, now))
    if op == "queues":
        return [stats_json(s) for s in db.queues(now)]
    if op == "next_due_at":
        return {"next_due_at": instant(db.next_due_at(q, now))}
    if op == "backoff":
        return {"delay_ms": core.validate.backoff_ms(a("retry_count"))}
    if op == "settings":
        return settings_json(db.settings(q))
    if op == "set_settings":
        given = args.get("backoff")
        stored = None if given is None else backoff_args(given)
        settings = db.set_settings(
            q, stored, a("max_retries"), a("lease_ms"), a("expires_in_ms"), a("on_expiry")
        )
        return settings_json(settings)
    if op in ("pause", "resume"):
        return settings_json(db.pause(q, op == "pause"))
    raise ValueError(f"unknown op {op!r}")


def same(want: Any, got: Any) -> bool:
    """JSON equality where numbers compare by value (a multiplier stored as 3.0 equals 3)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return want == got
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(same(w, g) for w, g in zip(want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(same(v, got[k]) for k, v in want.items())
    return want == got


def matches(want: Any, got: Any) -> None:
    """``got`` has every field of the object ``want``, each the same."""
    if isinstance(want, dict):
        assert got is not None, f"expected a message, got none (want {want})"
        for field, value in want.items():
            actual = got.get(field)
            assert same(value, actual), f"{field}: expected {value!r}, got {actual!r} ({got})"
    else:
        assert same(want, got), f"expected {want!r}, got {got!r}"


def fields(triples: Any) -> list[tuple[str, str, int]]:
    """Rejected fields ``(field, code, index)`` in a comparable order (no index: -1)."""
    return sorted((f, c, -1 if i is None else i) for f, c, i in triples)


def check(expect: dict[str, Any], outcome: Any, error: ComponentError | None) -> None:
    """Compares an outcome with a step's ``expect`` (tests/README.md)."""
    if "error" in expect:
        assert error is not None, f"expected error {expect['error']}, got {outcome!r}"
        assert error.code.replace("-", "_") == expect["error"], (
            f"expected error {expect['error']}, got {error.code}: {error}"
        )
        if "fields" in expect:
            want = fields((f["field"], f["code"], f.get("index")) for f in expect["fields"])
            got = fields(error.fields)
            assert want == got, f"expected fields {want}, got {got}: {error}"
        return
    assert error is None, f"unexpected error {error.code}: {error}"
    for key in ("message", "stats", "settings"):
        if key in expect:
            matches(expect[key], outcome)
    for key in ("delay_ms", "next_due_at", "count"):
        if key in expect:
            matches({key: expect[key]}, outcome)
    if "page" in expect:
        want = expect["page"]
        check({"messages": want["messages"]}, outcome, None)
        matches({"next_after_id": want["next_after_id"]}, outcome)
    if isinstance(outcome, dict) and "next_after_id" in outcome:
        outcome = outcome["messages"]  # a page of `list`
    for key in ("messages", "queues"):
        if key in expect:
            want = expect[key]
            assert isinstance(outcome, list), f"expected a list, got {outcome!r}"
            assert len(want) == len(outcome), f"expected {len(want)} {key}, got {outcome}"
            for w, g in zip(want, outcome):
                matches(w, g)


def test_case(core: Core, case: dict[str, Any]) -> None:
    options = case.get("options", {})
    lease_ms, max_payload_bytes = (arg(options.get(k)) for k in ("lease_ms", "max_payload_bytes"))
    limits = core.validate.open_options(lease_ms, max_payload_bytes)
    sample = core.validate.jitter_sample(arg(float(options.get("jitter_sample", 0))))
    db = MemoryDatabase(core, limits)
    died: list[int] = []
    db.on_dead.append(lambda message: died.append(message.id))
    tokens: list[str] = []
    at = 0
    for index, step in enumerate(case["steps"]):
        at = step.get("at", at)
        op = step["op"]
        for run in range(step.get("times", 1)):
            where = f"step {index} ({op}){f' run {run + 1}' if 'times' in step else ''}"
            args = resolve(step.get("args", {}), tokens)
            died.clear()
            outcome, error = None, None
            try:
                handle = policy(core, case, step)
                outcome = perform(db, op, args, handle, sample, BASE + at)
            except ComponentError as raised:
                error = raised
            if error is None and op in ("claim", "claim_many"):
                claimed = outcome if isinstance(outcome, list) else [outcome]
                tokens.extend(m["lease_token"] for m in claimed if m is not None)
            try:
                check(resolve(step.get("expect", {}), tokens), outcome, error)
                if "died" in step:
                    assert died == step["died"], f"expected deaths {step['died']}, got {died}"
            except AssertionError as why:
                raise AssertionError(f"{where}: {why}") from None


def test_the_component_exports_the_world_at_the_workspace_version(core: Core) -> None:
    """The four interfaces of ``deadletter:queue`` at the Cargo workspace's version (``Core``
    refuses a component that imports anything)."""
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    version = next(
        line.split('"')[1] for line in cargo.splitlines() if line.startswith("version = ")
    )
    assert core.version == version
    assert core.exports == [
        f"deadletter:queue/{name}@{version}" for name in ("apply", "plan", "types", "validate")
    ]


def test_bulk_with_the_move_action_asks_for_its_target(core: Core) -> None:
    """``validate.bulk`` takes no target queue: with ``move`` it rejects the missing
    ``to_queue`` (``move_all`` is ``validate.move-all``), with every other rejected field."""
    with pytest.raises(ComponentError) as raised:
        core.validate.bulk("move", arg("q"), filters({}), arg(0), arg(None), BASE)
    assert fields(raised.value.fields) == [("limit", "out_of_range", -1), ("to_queue", "type", -1)]
    args = core.validate.move_all(arg("q"), arg("q2"), filters({}), arg(None), arg(True), BASE)
    bulk = args.bulk
    assert (bulk.action, get(bulk, "dry_run"), get(args, "to_queue")) == ("move", True, "q2")


def test_a_claim_handed_messages_of_another_queue_is_refused(core: Core) -> None:
    """New-user finding F6 (session 6): a host that handed ``plan.claim`` the live messages of
    every queue had a claim on ``emails`` lease the ``sms`` message. It is a ``store`` error that
    decides nothing."""
    db = MemoryDatabase(core, core.validate.open_options(arg(None), arg(None)))
    db.enqueue(arg("sms"), [item("for sms")], False, BASE)
    db.enqueue(arg("emails"), [item("for emails")], False, BASE)
    args = core.validate.claim(arg("emails"), arg(1), arg(None), None, 0.0, db.limits)
    ctx = core.validate.write_context(BASE, None)
    every = list(db.messages.values())
    with pytest.raises(ComponentError) as raised:
        core.plan.claim(args, ctx, every, ["t1"])
    assert raised.value.code == "store"
    assert 'queue "sms"' in str(raised.value)
    [taken] = core.plan.claim(args, ctx, db._queue("emails", "pending"), ["t1"]).taken
    assert (taken.queue, taken.payload) == ("emails", "for emails")


def test_a_step_handed_a_message_under_another_id_is_refused(core: Core) -> None:
    """New-user finding N1 (session 7): ``apply.fail`` (and every step on a found message)
    handed message 2 for a request on message 1 failed message 2 as if it were 1. It is
    ``not-found``, as a message of another queue is, and decides nothing."""
    db = MemoryDatabase(core, core.validate.open_options(arg(None), arg(None)))
    db.enqueue(arg("q"), [item("one"), item("two")], False, BASE)
    args = core.validate.claim(arg("q"), arg(2), arg(None), None, 0.0, db.limits)
    db.claim(args, BASE)
    ctx = core.validate.write_context(BASE, None)
    two = db.messages[2].message
    fail = core.validate.fail(arg("q"), arg(1), arg("e"), arg(None), arg(None), arg(None), None, 0.0)
    succeed = core.validate.succeed(arg("q"), arg(1), arg(None))
    for step, request in ((core.apply.fail, fail), (core.apply.succeed, succeed)):
        with pytest.raises(ComponentError) as raised:
            step(request, two, ctx)
        assert raised.value.code == "not-found"
    with pytest.raises(ComponentError) as raised:
        core.apply.found(core.validate.message(arg("q"), arg(1)), two)
    assert raised.value.code == "not-found"
    assert get(core.apply.succeed(succeed, db.messages[1].message, ctx), "status") == "succeeded"


@pytest.mark.parametrize("sample", [float("nan"), 5.0, 1.0, -3.0, float("inf")])
def test_a_jitter_sample_outside_zero_to_one_is_refused(core: Core, sample: float) -> None:
    """New-user finding F8 (session 6): ``validate.claim``, ``reap`` and ``fail`` clamped any
    sample (NaN, -3 and infinity gave no backoff at all); it is ``out_of_range`` on ``random``, as
    ``validate.jitter-sample`` says it."""
    limits = core.validate.open_options(arg(None), arg(None))
    calls = [
        lambda: core.validate.claim(arg("q"), arg(1), arg(None), None, sample, limits),
        lambda: core.validate.reap(arg("q"), None, sample),
        lambda: core.validate.fail(
            arg("q"), arg(1), arg("e"), arg(None), arg(None), arg(None), None, sample
        ),
    ]
    for call in calls:
        with pytest.raises(ComponentError) as raised:
            call()
        assert fields(raised.value.fields) == [("random", "out_of_range", -1)]


@pytest.mark.parametrize(
    ("tokens", "code"), [(["a", ""], "empty"), (["a\0b"], "invalid"), (["s", "s"], "invalid")]
)
def test_lease_tokens_that_are_empty_hold_nul_or_repeat_are_refused(
    core: Core, tokens: list[str], code: str
) -> None:
    """New-user finding F8 (session 6): ``plan.claim`` handed out the tokens it was given
    unchecked; a token proves a worker holds its lease."""
    db = MemoryDatabase(core, core.validate.open_options(arg(None), arg(None)))
    db.enqueue(arg("q"), [item("a"), item("b")], True, BASE)
    args = core.validate.claim(arg("q"), arg(1), arg(None), None, 0.0, db.limits)
    ctx = core.validate.write_context(BASE, None)
    with pytest.raises(ComponentError) as raised:
        core.plan.claim(args, ctx, db._queue("q", "pending"), tokens)
    assert fields(raised.value.fields) == [("lease_tokens", code, -1)]
