"""The dashboard in headless Chromium, against `deadletter serve` with a token: it asks for the
token, lists the queues with their counts and oldest dead age, a queue's dead letters with their
errors and histories, shows a message's payload and failed attempts, replays one dead message with
its row's button (the counts change), replays all the dead messages matching an error text, and
purges the succeeded ones; the database must then hold exactly what those actions leave.
Screenshots go to build/ (dashboard.png, dashboard-replayed.png, dashboard-message.png,
dashboard-end.png). Chromium comes from `scripts/setup.sh browser`, playwright-core from `npm ci`
(both run by `make test-python`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import deadletter
from chromium_driver import ROOT, drive
from serving import deadletter_serve

DRIVER = Path(__file__).with_name("dashboard.mjs")
SHOTS = ROOT / "build"
TOKEN = "dashboard-token"
QUEUE = "orders/eu"  # a slash: percent-encoded by the page
ERRORS = {1: "HTTP 410 Gone", 3: "schema: missing field 'sku'", 4: "HTTP 410 Gone"}
FIRST_OF_3 = "connection reset"  # message 3 failed twice: this, then ERRORS[3]
ATTEMPT = re.compile(r"attempt (\d+), (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z): (.*)")


def attempts(lines: list[str]) -> list[tuple[int, str]]:
    """``attempt N, <RFC 3339>: error`` lines as (N, error)."""
    parsed = [ATTEMPT.fullmatch(line) for line in lines]
    assert all(parsed), lines
    return [(int(m.group(1)), m.group(3)) for m in parsed if m]


def test_the_dashboard_replays_dead_messages(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with deadletter.open(path) as db:
        q = db.queue(QUEUE, backoff=deadletter.Backoff(initial=0))  # retried at once
        for n in range(1, 6):
            q.enqueue(json.dumps({"order": n, "sku": f"A-{n}"}))
        for n in range(1, 5):  # 5 stays pending
            m = q.claim()
            assert m is not None and m.id == n
            if n == 3:
                q.fail(m.id, FIRST_OF_3, lease_token=m.lease_token)
                m = q.claim()
                assert m is not None and m.id == n
            if n in ERRORS:
                q.fail(m.id, ERRORS[n], lease_token=m.lease_token, retryable=False)
            elif n == 2:
                q.succeed(m.id, lease_token=m.lease_token)
        db.queue("other").enqueue("not shown")

    with deadletter_serve(path, token=TOKEN) as url:
        result = drive(DRIVER, url, TOKEN, QUEUE, str(SHOTS))
    assert result["askedForToken"] is True
    assert result["state"] == result["finalState"] == "ready"
    assert result["queueTitle"] == QUEUE

    # Every queue with its counts and the age of its oldest dead message (seconds: "< 1 s", ...).
    [orders, other] = result["queuesBefore"]
    assert orders[:5] == [QUEUE, "1", "0", "1", "3"] and orders[5].endswith(" s")
    assert other == ["other", "1", "0", "0", "0", "–"]
    assert result["countsBefore"] == {
        "pending": "1",
        "processing": "0",
        "succeeded": "1",
        "dead": "3",
        "oldest-dead": orders[5],
    }

    # The dead letters, each with its last error; the one that failed twice with its history.
    assert result["deadBefore"] == [1, 3, 4]
    assert result["errors"] == [ERRORS[1], ERRORS[3], ERRORS[4]]
    assert [attempts(h) for h in result["rowHistories"]] == [
        [],
        [(1, FIRST_OF_3), (2, ERRORS[3])],
        [],
    ]
    assert json.loads(result["payload"]) == {"order": 1, "sku": "A-1"}
    assert result["payload"].startswith("{\n  ")  # pretty-printed
    assert attempts(result["history"]) == [(1, ERRORS[1])]
    assert attempts(result["longHistory"]) == [(1, FIRST_OF_3), (2, ERRORS[3])]

    # Replayed with its row's button: the counts follow.
    assert result["replayed"] == 1
    assert result["deadAfter"] == [3, 4]
    assert result["notice"] == "Replayed message 1: it is pending again."
    assert result["replayOneDisabled"] is True  # the message shown is no longer dead
    assert (result["countsAfter"]["dead"], result["countsAfter"]["pending"]) == ("2", "2")

    # Replay all matching "410", then purge the succeeded messages (older than 0 days).
    assert result["dialogs"] == [
        f'Replay every dead message of "{QUEUE}" with error_contains "410"?',
        f'Delete every succeeded message of "{QUEUE}", whatever its age?',
    ]
    # An empty "older than" is not a purge of everything: the form refuses to submit.
    assert (result["emptyAgeDialogs"], result["emptyAgeValid"]) == (0, False)
    assert result["countsAfterEmptyAge"] == result["countsAfterReplayAll"]
    assert result["replayAllNotice"] == "Replayed 1 dead message."
    assert result["deadAfterReplayAll"] == [3]
    assert (result["countsAfterReplayAll"]["dead"], result["countsAfterReplayAll"]["pending"]) == (
        "1",
        "3",
    )
    assert result["purgeNotice"] == "Purged 1 message."
    assert result["countsAfterPurge"]["succeeded"] == "0"
    assert result["queuesAfter"][0][:5] == [QUEUE, "3", "0", "0", "1"]
    for shot in ("screenshotQueue", "screenshotMessage", "screenshotReplayed", "screenshotEnd"):
        assert Path(result[shot]).stat().st_size > 10_000

    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        assert [(m.id, m.status, m.retry_count, m.replay_count) for m in q.list()] == [
            (1, "pending", 0, 1),
            (3, "dead", 2, 0),
            (4, "pending", 0, 1),
            (5, "pending", 0, 0),
        ]
