"""The shared conformance cases (tests/conformance/*.json, format in tests/README.md) through the
public Python API: ``deadletter.open(":memory:", clock=<virtual clock>, ...)``.

Argument names are mapped to the Python API: ``lease_ms`` (integer milliseconds) becomes ``lease``
in seconds; expected timestamps are milliseconds relative to BASE; the field ``lease_ms`` of an
expected validation error is ``lease`` in Python.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import deadletter

CASES_DIR = Path(__file__).resolve().parents[2] / "tests" / "conformance"
BASE = 1767225600000  # 2026-01-01T00:00:00Z in ms
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
TIMESTAMPS = ("retry_after", "created_at", "updated_at", "lease_expires_at")
NAMES = {"lease_ms": "lease"}  # core field name -> Python argument name

# Cases the Python API cannot express, with the reason. Each must fail (strict), so a case that
# starts passing is noticed and removed from here. None today.
EXPECTED_FAILURES: dict[str, str] = {}


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


def test_every_expected_failure_names_a_case() -> None:
    names = {name for name, _ in load_cases()}
    assert len(names) >= 60
    assert set(EXPECTED_FAILURES) <= names


def resolve(value: Any, tokens: list[str]) -> Any:
    """Replaces ``{"$token": k}`` and ``{"$repeat": [s, n]}`` (tests/README.md)."""
    if isinstance(value, dict):
        if "$token" in value:
            return tokens[value["$token"]]
        if "$repeat" in value:
            s, n = value["$repeat"]
            return s * n
        return {k: resolve(v, tokens) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, tokens) for v in value]
    return value


def seconds(lease_ms: Any) -> Any:
    """An integer ``lease_ms`` as seconds; anything else is passed as it is, for the binding to
    reject like the core does (a bool stays a bool: ``True`` is not an int here)."""
    if isinstance(lease_ms, int) and not isinstance(lease_ms, bool):
        return lease_ms / 1000
    return lease_ms


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
    return d


def call(db: deadletter.Database, op: str, args: dict[str, Any], tokens: list[str]) -> Any:
    """Runs one step through the public API; returns what the case compares."""
    m: Optional[deadletter.Message]
    arg: Callable[[str], Any] = args.get  # absent -> None, as the cases want
    if op == "backoff":
        delay = deadletter.backoff(arg("retry_count"))
        return {"delay_ms": delay // timedelta(milliseconds=1)}
    q = db.queue(arg("queue"))  # a bad name raises here: that is the step's result
    kwargs = {k: v for k, v in args.items() if k != "queue"}
    if op == "enqueue":
        m = q.enqueue(kwargs.pop("payload", None), **kwargs)
    elif op == "claim":
        if "lease_ms" in kwargs:
            kwargs["lease"] = seconds(kwargs.pop("lease_ms"))
        m = q.claim(**kwargs)
        if m is not None:
            assert m.lease_token is not None
            tokens.append(m.lease_token)
    elif op == "succeed":
        m = q.succeed(kwargs.pop("id", None), **kwargs)
    elif op == "fail":
        m = q.fail(kwargs.pop("id", None), kwargs.pop("error", None), **kwargs)
    elif op == "replay":
        m = q.replay(arg("id"))
    elif op == "get":
        m = q.get(arg("id"))
    elif op == "list":
        return [as_case_json(m) for m in q.list(**kwargs)]
    else:
        raise AssertionError(f"unknown op {op!r}")
    return as_case_json(m)


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
            want = sorted((NAMES.get(f["field"], f["field"]), f["code"]) for f in expect["fields"])
            assert sorted((f["field"], f["code"]) for f in err.errors) == want, repr(err)
        return
    expect = resolve(expect, tokens)
    assert "error" not in expect, f"expected error {expect['error']}, got {got!r}"
    if "message" in expect:
        want = expect["message"]
        if want is None:
            assert got is None, f"expected no message, got {got!r}"
        else:
            assert got is not None, f"expected a message, got none (want {want})"
            assert {k: got[k] for k in want} == want
    elif "messages" in expect:
        assert len(got) == len(expect["messages"]), got
        for want, message in zip(expect["messages"], got):
            assert {k: message[k] for k in want} == want
    elif "delay_ms" in expect:
        assert got == {"delay_ms": expect["delay_ms"]}


def test_case(case: dict[str, Any]) -> None:
    now = [BASE]
    options = case.get("options", {})
    db = deadletter.open(
        ":memory:",
        clock=lambda: EPOCH + timedelta(milliseconds=now[0]),
        lease=seconds(options["lease_ms"]) if "lease_ms" in options else 30.0,
        max_payload_bytes=options.get("max_payload_bytes", 1048576),
    )
    tokens: list[str] = []
    with db:
        for index, step in enumerate(case["steps"]):
            now[0] = BASE + step.get("at", now[0] - BASE)
            args = resolve(step.get("args", {}), tokens)
            try:
                check(step.get("expect", {}), lambda: call(db, step["op"], args, tokens), tokens)
            except AssertionError as failure:
                raise AssertionError(f"step {index} ({step['op']}): {failure}") from None
