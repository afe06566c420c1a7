"""The dashboard in headless Chromium, against `deadletter serve` with a token: it asks for the
token, lists a queue's dead letters with their errors, shows a message's payload, and replays one
dead message with its row's button; the database must then hold that message pending and the
others still dead. Screenshots go to build/ (dashboard.png, dashboard-message.png,
dashboard-replayed.png). Chromium comes from `scripts/setup.sh browser`, playwright-core from
`npm ci` (both run by `make test-python`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import deadletter
import deadletter.http
from serving import deadletter_serve

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("dashboard.mjs")
SHOTS = ROOT / "build"
TOKEN = "dashboard-token"
QUEUE = "orders/eu"  # a slash: percent-encoded by the page
ERRORS = {1: "HTTP 410 Gone", 3: "schema: missing field 'sku'", 4: "HTTP 410 Gone"}


def test_the_dashboard_replays_a_dead_message(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is missing (the README's requirements)"
    assert (ROOT / "node_modules" / "playwright-core").is_dir(), "run `npm ci` (make test does)"
    path = tmp_path / "shop.db"
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        for n in range(1, 6):
            q.enqueue(json.dumps({"order": n, "sku": f"A-{n}"}))
        for n in range(1, 5):  # 5 stays pending
            m = q.claim()
            assert m is not None and m.id == n
            if n in ERRORS:
                q.fail(m.id, ERRORS[n], lease_token=m.lease_token, retryable=False)
            elif n == 2:
                q.succeed(m.id, lease_token=m.lease_token)
        db.queue("other").enqueue("not shown")

    with deadletter_serve(path, token=TOKEN) as url:
        run = subprocess.run(
            [node, str(DRIVER), url, TOKEN, QUEUE, str(SHOTS)],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=ROOT,
            check=False,
        )
        operations = {
            op["operationId"]
            for item in deadletter.http.document()["paths"].values()
            for op in item.values()
        }
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert "failure" not in result, result["failure"] + run.stderr
    assert result["askedForToken"] is True
    assert result["state"] == "ready"
    assert result["queueTitle"] == QUEUE
    assert result["deadBefore"] == [1, 3, 4]
    assert result["errors"] == [ERRORS[1], ERRORS[3], ERRORS[4]]
    assert json.loads(result["payload"]) == {"order": 1, "sku": "A-1"}
    assert result["payload"].startswith("{\n  ")  # pretty-printed
    assert result["history"] == [ERRORS[1]]
    assert result["replayed"] == 1
    assert result["deadAfter"] == [3, 4]
    assert result["notice"] == "Replayed message 1: it is pending again."
    assert result["replayOneDisabled"] is True  # the message shown is no longer dead
    if "queueStats" in operations:
        assert result["countsBefore"]["dead"] == 3 and result["countsAfter"]["dead"] == 2
        assert result["countsAfter"]["pending"] == result["countsBefore"]["pending"] + 1
    else:  # until the server has queue statistics, the page says what it waits for
        assert result["countsBefore"] is None and result["countsWaiting"] is True
        assert result["queuesWaiting"] is True
    assert result["replayAllDisabled"] is ("replayAll" not in operations)
    assert result["purgeDisabled"] is ("purge" not in operations)
    for shot in ("screenshotQueue", "screenshotMessage", "screenshotReplayed"):
        assert Path(result[shot]).stat().st_size > 10_000

    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        assert [(m.id, m.status, m.retry_count) for m in q.list()] == [
            (1, "pending", 0),
            (2, "succeeded", 0),
            (3, "dead", 1),
            (4, "dead", 1),
            (5, "pending", 0),
        ]
