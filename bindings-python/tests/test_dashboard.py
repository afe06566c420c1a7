"""The console in headless Chromium, against `deadletter serve` with a token, driven as an operator
would (dashboard.mjs): it asks for the token once per tab; lists the queues with their counts,
expired leases, delayed messages, lag and state; shows every status tab of a queue (and the
delayed one) with its rows and next page; opens the message of row 40 beside the list, in view;
keeps the view in the URL (reload, back, forward); replays and deletes one message, filters by an
error text, selects all N matching and replays them (N in the confirmation), selects and deletes
every succeeded one; pauses and resumes; shows a banner while the server is stopped and recovers
when it answers again; and stays within a 400 px wide window with a 255-character queue name.
The database must then hold exactly what those actions leave. Screenshots go to build/console/
(the test prints the folder). test_console_search.py drives the search, the scan budget, bulk
delete and retry now. Chromium comes from `scripts/setup.sh browser`, playwright-core from `npm
ci` (both run by `make test-python`)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive_with
from serving import deadletter_serve, free_port

Console = tuple[dict[str, Any], Path]
"""The driver's result (its JSON), and the database the console acted on."""

DRIVER = Path(__file__).with_name("dashboard.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "dashboard-token"
QUEUE = "orders/eu"  # a slash: percent-encoded by the page
LONG = ("payments-reconciliation-" * 11)[:255]
DEAD = range(1, 46)  # 45 dead: row 40 is on the first page
GONE = {n for n in DEAD if n % 5 == 0}  # died with "HTTP 410 Gone"
SUCCEEDED = range(46, 50)
HELD, EXPIRED = 50, 51  # processing; the lease of 51 has run out
PENDING = range(52, 112)  # 60: a second page of 10
GROUPED, DELAYED = 52, 53


def error(n: int) -> str:
    return "HTTP 410 Gone" if n in GONE else "HTTP 503 Service Unavailable\nretry later"


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue(QUEUE, backoff=deadletter.Backoff(initial=0))  # retried at once
        for n in DEAD:
            q.enqueue(json.dumps({"order": n, "sku": f"A-{n}"}))
        for n in DEAD:
            m = q.claim()
            assert m is not None and m.id == n
            if n == 2:  # two failed attempts
                q.fail(m.id, "connection reset", lease_token=m.lease_token)
                m = q.claim()
                assert m is not None and m.id == n
            q.fail(m.id, error(n), lease_token=m.lease_token, retryable=False)
        for n in SUCCEEDED:
            q.enqueue(f"done {n}")
            m = q.claim()
            assert m is not None and m.id == n
            q.succeed(m.id, lease_token=m.lease_token)
        q.enqueue("held")
        q.enqueue("abandoned")
        assert q.claim(lease=600).id == HELD  # type: ignore[union-attr]
        assert q.claim(lease=0.001).id == EXPIRED  # type: ignore[union-attr]
        for n in PENDING:
            if n == GROUPED:
                q.enqueue('{"customer": 7}', group="customer-7", expires_in=86400)
            else:
                q.enqueue(f"waiting {n}", delay=3600 if n == DELAYED else None)
        q.set_settings(max_retries=5, lease=60)
        long = db.queue(LONG)
        long.enqueue('{"long": true}')
        long.enqueue("second")
        m = long.claim()
        assert m is not None
        long.fail(m.id, "boom", lease_token=m.lease_token, retryable=False)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Console:
    """The driver's result, and the database it leaves."""
    path = tmp_path_factory.mktemp("console") / "shop.db"
    fill(path)
    port = free_port()
    with ExitStack() as server:
        server.enter_context(deadletter_serve(path, token=TOKEN, port=port))
        handlers = {
            "stop": server.close,
            "start": lambda: server.enter_context(deadletter_serve(path, token=TOKEN, port=port)),
        }
        url = f"http://127.0.0.1:{port}"
        result = drive_with(DRIVER, handlers, url, TOKEN, QUEUE, LONG, str(SHOTS))
    print(f"console screenshots: {SHOTS}")
    return result, path


def test_the_token_is_asked_once_per_tab(console: Console) -> None:
    result, _ = console
    assert result["askedForToken"] is True
    assert result["state"] == "ready"
    assert result["afterReload"]["askedForToken"] is False  # kept in sessionStorage


def test_the_queue_table_shows_counts_leases_delays_lag_and_state(
    console: Console,
) -> None:
    result, _ = console
    [orders, long] = result["queues"]
    assert orders["name"] == QUEUE and long["name"] == LONG  # the full name on hover
    pending, processing, succeeded, dead, lag, oldest_dead, state = orders["cells"]
    assert [pending, processing, succeeded, dead] == [
        "60 1 delayed",
        "2 1 lease expired",
        "4",
        "45",
    ]
    assert lag.endswith(" s") and oldest_dead.endswith(" s") and state == "running"
    assert long["cells"][:4] == ["1", "0", "0", "1"]
    assert all(row["countsRight"] <= 1280 for row in result["queues"])  # not pushed off-screen


def test_every_status_tab_shows_its_messages(console: Console) -> None:
    result, _ = console
    assert result["defaultTab"] == "dead"
    assert result["tabs"] == [
        "pending 60",
        "delayed 1",
        "processing 2 1 lease expired",
        "succeeded 4",
        "dead 45",
    ]
    by = result["byStatus"]
    assert by["pending"]["ids"] == list(PENDING)[:50]
    assert by["pending"]["marked"] == [[DELAYED, "delayed"]]
    assert by["pending"]["next"]["ids"] == list(PENDING)[50:]  # keyset: after the 50th id
    assert by["pending"]["next"]["hash"].endswith(f"&after={PENDING[49]}")
    assert by["delayed"]["ids"] == [DELAYED]
    assert by["delayed"]["hash"] == "#queue=orders%2Feu&status=pending&delayed=true"
    assert by["processing"]["ids"] == [HELD, EXPIRED]
    assert by["processing"]["marked"] == [[EXPIRED, "lease expired"]]
    assert by["succeeded"]["ids"] == list(SUCCEEDED)
    assert by["dead"]["ids"] == list(DEAD)
    assert "next" not in by["dead"]
    assert by["dead"]["hash"] == "#queue=orders%2Feu&status=dead"
    assert result["arrowLeftOfDead"] == "succeeded"
    assert result["facts"]["delayed"] == "1" and result["facts"]["expired leases"] == "1"


def test_a_message_opens_in_view_and_its_link_restores_the_view(
    console: Console,
) -> None:
    result, _ = console
    assert result["row40"] == 40
    assert result["opened"] == "Message #40"
    assert result["panel"]["inView"] is True, result["panel"]
    assert result["focused"] == "message-title"
    assert result["current"] == [40]
    assert result["hashOpen"] == "#queue=orders%2Feu&status=dead&message=40"
    reloaded = result["afterReload"]
    assert (reloaded["hash"], reloaded["tab"], reloaded["title"]) == (
        result["hashOpen"],
        "dead",
        "Message #40",
    )
    assert reloaded["panel"]["inView"] is True
    assert result["afterBack"] == {"hash": "#queue=orders%2Feu&status=dead", "panelHidden": True}
    assert result["afterForward"] == "Message #40"


def test_a_message_shows_its_history_payload_and_fields(console: Console) -> None:
    result, _ = console
    assert [line.split(": ", 1)[1] for line in result["history"]] == [
        "connection reset",
        error(2),
    ]
    assert all(line.startswith(f"attempt {n}, ") for n, line in enumerate(result["history"], 1))
    assert all(title.endswith(" UTC") for title in result["historyTitles"])
    assert json.loads(result["payload"]) == {"order": 2, "sku": "A-2"}
    assert result["payload"].startswith("{\n  ")  # pretty-printed
    assert result["fields"]["status"] == "dead"
    assert result["fields"]["attempts"] == "2 failed of at most 3"
    assert result["fields"]["replays"] == "0"


def test_the_operator_replays_deletes_and_acts_on_all_matching(console: Console) -> None:
    result, path = console
    assert result["replayNotice"] == "Replayed message 2: it is pending again."
    assert result["replayedFields"]["status"] == "pending"
    assert result["replayedFields"]["replays"].startswith("1, last ")
    assert result["replayDisabled"] is True
    assert result["tabsAfterReplay"][4] == "dead 44"
    assert result["deleteNotice"] == f'Deleted message 3 (dead) of "{QUEUE}".'
    assert result["deadAfterDelete"] == [n for n in DEAD if n not in (2, 3)]
    assert result["filteredIds"] == sorted(GONE)
    assert result["selectedAll"] == f"All {len(GONE)} matching dead messages selected."
    assert result["replayAllNotice"] == f"Replayed {len(GONE)} dead messages."
    assert result["tabsAfterReplayAll"][4] == f"dead {43 - len(GONE)}"
    assert result["selectLabelBefore"] == "Select all matching"  # not counted before asked
    assert result["selectedSucceeded"] == "All 4 matching succeeded messages selected."
    assert result["checkedSucceeded"] == len(SUCCEEDED)
    assert result["deleteAllNotice"] == "Deleted 4 succeeded messages."
    assert result["dialogs"] == [
        f'Delete message 3 (dead) of "{QUEUE}"? It cannot be replayed afterwards.',
        f'Replay {len(GONE)} dead messages of "{QUEUE}" whose last error contains "410"?',
        f'Delete 4 succeeded messages of "{QUEUE}"?\n\nThey cannot be replayed afterwards.',
    ]
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        messages = {m.id: m for m in q.list(limit=1000)}
        assert 3 not in messages and not any(n in messages for n in SUCCEEDED)
        dead = {n for n, m in messages.items() if m.status == "dead"}
        assert dead == set(DEAD) - {2, 3} - GONE
        replayed = {n for n, m in messages.items() if m.replay_count == 1}
        assert replayed == {2} | GONE
        assert all(messages[n].status == "pending" for n in replayed)
        assert q.settings().paused is False


def test_pause_resume_and_the_stored_settings(console: Console) -> None:
    result, _ = console
    assert (result["paused"]["state"], result["paused"]["button"]) == ("paused", "Resume")
    assert result["paused"]["settings"]["paused"] == "yes"
    assert (result["resumed"]["state"], result["resumed"]["button"]) == ("running", "Pause")
    assert result["resumed"]["settings"] == {
        "max_retries": "5",
        "lease": "1 min",
        "expires_in": "unset",
        "on_expiry": "dead",
        "backoff": "unset (the default)",
        "paused": "no",
    }


def test_the_expired_lease_is_reaped_from_the_queue_view(console: Console) -> None:
    """Finding F9: the console marked the lease expired but offered nothing to do about it."""
    result, path = console
    assert (result["reapShown"], result["reapShownAfter"]) == (True, False)
    assert result["reapNotice"] == (
        f'Reaped 1 message in "{QUEUE}": each lease that ran out counts as a failed attempt.'
    )
    with deadletter.open(path) as db:
        m = db.queue(QUEUE).get(EXPIRED)
        assert (m.status, m.retry_count, m.last_error is not None) == ("pending", 1, True)


def test_a_stopped_server_shows_a_banner_that_goes_when_it_answers(
    console: Console,
) -> None:
    result, _ = console
    banner = result["banner"]
    assert banner.startswith("The server is not answering. No answer from http://127.0.0.1:")
    assert "(the connection failed). Retrying every 5 s." in banner
    assert "Failed to fetch" not in banner
    assert result["recovered"].startswith("The server answers again (")


def test_400_px_wide_with_a_255_character_queue_name(console: Console) -> None:
    result, _ = console
    narrow = result["narrow"]
    assert narrow["scrollWidth"] <= 400
    assert [row["name"] for row in narrow["rows"]] == [QUEUE, LONG]
    assert all(row["right"] <= 400 for row in narrow["rows"]), narrow["rows"]
    title = result["narrowQueue"]["title"]
    assert title == {"text": LONG, "title": LONG, "clipped": True}
    assert result["narrowQueue"]["scrollWidth"] <= 400
    assert result["narrowQueue"]["selectable"] == {"page": True, "row": True}  # not in a hidden head
    opened = result["narrowMessage"]
    assert opened["listHidden"] is True and opened["panel"]["inView"] is True
    assert opened["scrollWidth"] <= 400
    assert result["narrowBack"]["listVisible"] is True
    assert "message=" not in result["narrowBack"]["hash"]


def test_the_screenshots_are_written(console: Console) -> None:
    result, _ = console
    for shot in ("Queues", "Message", "Queue", "Down", "Narrow", "NarrowQueue", "NarrowMessage"):
        assert Path(result[f"shot{shot}"]).stat().st_size > 10_000
