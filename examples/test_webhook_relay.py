"""Tests of the webhook relay demo: its endpoint rules, its overlap detector, and a full run.

The full run starts the demo as a subprocess, as `make demo` does, and reads the numbers it prints:
every example of `@octokit/webhooks-examples` must end succeeded, after some of them went through
the dead-letter queue and back; once with the queue in the demo's process, once through the HTTP
API (`--http`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from http import HTTPStatus
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parent
DEMO = EXAMPLES / "webhook_relay.py"
ROOT = EXAMPLES.parent
DATA = ROOT / "node_modules" / "@octokit" / "webhooks-examples" / "api.github.com" / "index.json"
STATUSES = re.compile(
    r"^statuses: pending=(\d+) processing=(\d+) succeeded=(\d+) dead=(\d+) total=(\d+)$", re.M
)
THROUGHPUT = re.compile(
    r"^throughput: (\d+) deliveries .* the worker loop handled (\d+); "
    r"leases that ran out so far: (\d+)$",
    re.M,
)
HISTORY = re.compile(
    r"^error history of dead letter #\d+ \(/gone [^)]*\):\n((?:  attempt .*\n)+)", re.M
)
DEMO_TIMEOUT = 120  # seconds; the demo takes about 20 (30 over HTTP)


def load_demo() -> ModuleType:
    """Import examples/webhook_relay.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("webhook_relay", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def example_count() -> int:
    """How many examples the installed package holds, counted independently of the demo."""
    assert DATA.is_file(), f"{DATA} is missing: run `npm ci` in {ROOT}"
    return sum(len(definition["examples"]) for definition in json.loads(DATA.read_text()))


def statuses(section: str) -> dict[str, int]:
    """The numbers of the `statuses:` line of one summary of the demo's output."""
    match = STATUSES.search(section)
    assert match, f"no statuses line in:\n{section}"
    names = ("pending", "processing", "succeeded", "dead", "total")
    return dict(zip(names, map(int, match.groups())))


def test_endpoints_answer_as_documented() -> None:
    demo = load_demo()
    state = demo.Subscribers()
    assert state.decide("/ok", "star", 1) == HTTPStatus.OK
    assert [state.decide("/flaky", "star", n) for n in (1, 2, 3)] == [
        HTTPStatus.SERVICE_UNAVAILABLE,
        HTTPStatus.SERVICE_UNAVAILABLE,
        HTTPStatus.OK,
    ]
    assert state.decide("/gone", "push", 1) == HTTPStatus.GONE
    assert state.decide("/strict", "push", 1) == HTTPStatus.OK
    assert state.decide("/strict", "star", 1) == HTTPStatus.UNPROCESSABLE_ENTITY
    state.fix()
    assert state.decide("/gone", "push", 1) == HTTPStatus.OK
    assert state.decide("/strict", "star", 1) == HTTPStatus.OK


def test_overlap_detector_sees_concurrent_deliveries_of_one_message() -> None:
    state = load_demo().Subscribers()
    state.begin("7")
    state.begin("8")
    state.begin("7")
    assert state.overlaps == ["7"]
    state.end("7")
    state.end("7")
    state.begin("7")
    assert state.overlaps == ["7"]
    assert state.attempts["7"] == 3


def test_overlap_detector_sees_two_deliveries_to_one_endpoint_and_the_order() -> None:
    state = load_demo().Subscribers()
    state.begin("1", "/ok")
    state.begin("2", "/flaky")
    assert state.endpoint_overlaps == []
    state.begin("3", "/ok")
    assert state.endpoint_overlaps == ["/ok"]
    for id in ("1", "3", "2"):
        state.record("/ok", HTTPStatus.OK, id)
    state.record("/flaky", HTTPStatus.OK, "2")
    assert state.out_of_order() == ["/ok"]
    assert state.out_of_order() == []  # forgotten: each drain on its own


@pytest.mark.parametrize("mode", [[], ["--http"]], ids=["in-process", "http"])
def test_demo_relays_every_example_and_exits_0(mode: list[str]) -> None:
    expected = example_count()
    run = subprocess.run(
        [sys.executable, str(DEMO), *mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    first, final = run.stdout.split("\n== final ==\n", 1)
    over_http = re.search(r"^through the HTTP API at http://127\.0\.0\.1:\d+ ", first, re.M)
    assert bool(over_http) == bool(mode), output

    before = statuses(first)
    assert before["total"] == expected
    assert before["pending"] == before["processing"] == 0
    assert before["succeeded"] + before["dead"] == expected
    assert before["dead"] > 0, "the demo should send some messages to the dead-letter queue"
    replayed = re.search(r"replayed (\d+) dead messages", first)
    assert replayed and int(replayed.group(1)) == before["dead"], output
    for section in (first, final):  # every delivery's outcome was recorded by the worker loop
        loop = THROUGHPUT.search(section)
        assert loop and loop.group(1) == loop.group(2), output
        assert loop.group(3) == "0", output  # heartbeats kept every lease
    assert "dead letters with last_error='Refused: HTTP 422 Unprocessable Entity'" in first
    history = HISTORY.search(first)  # a /gone delivery: three retryable failures, then dead
    assert history, output
    entries = history.group(1).splitlines()
    assert [line.split("  ")[1] for line in entries] == ["attempt 1", "attempt 2", "attempt 3"]
    assert {line.split("  ")[-1] for line in entries} == {"HTTPError: HTTP Error 410: Gone"}

    after = statuses(final)
    assert after == {
        "pending": 0,
        "processing": 0,
        "succeeded": expected,
        "dead": 0,
        "total": expected,
    }, output
    assert re.search(r"^server: \d+ requests, 0 overlapping deliveries$", final, re.M), output
    assert re.search(r"^server: 0 deliveries to an endpoint that was busy ", final, re.M), output
    assert f"OK: all {expected} messages succeeded" in final, output
