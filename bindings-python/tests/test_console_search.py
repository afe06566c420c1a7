"""The console's search, bulk actions and retry now in headless Chromium, against `deadletter
serve` with a token, driven as an operator would (console_search.mjs): search a queue's dead
letters by payload and open the one found; a pasted link restores that search in a new tab; a
time range typed in the browser's zone goes to the link in UTC and shows in another zone's time;
filter by error text, select all N matching (N from the bulk route's dry run) and replay them
with that count in the confirmation; select two messages from the keyboard and delete them;
retry one delayed message now from its row, one from its panel, then all the others (their
count confirmed); a payload search that stops at the server's scan budget says so, and "Search
further" finds the match beyond. The database must then hold exactly what those actions leave.
Screenshots go to build/console/ (beside test_dashboard's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive
from serving import deadletter_serve

Search = tuple[dict[str, Any], Path]
"""The driver's result (its JSON), and the database the console acted on."""

DRIVER = Path(__file__).with_name("console_search.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "search-token"
QUEUE, ARCHIVE = "billing", "archive"
DEAD = range(1, 31)  # their last error: a timeout for every third, else an HTTP 500
TIMEOUTS = [n for n in DEAD if n % 3 == 0]
SUCCEEDED = range(31, 35)
DELAYED = range(35, 39)  # enqueued with a delay
BACKOFF = 39  # failed once, waits an hour for its retry
DUE = range(40, 42)
SCAN_BUDGET = 10_000  # messages a list call examines at most (the core's SCAN_BUDGET)
HAY = SCAN_BUDGET + 10
FIRST_NEEDLE = 42  # the first message of ARCHIVE; the second is its last, beyond the budget
LAST_NEEDLE = FIRST_NEEDLE + HAY - 1


def invoice(n: int) -> str:
    return f"INV-{n:04d}"


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        for n in DEAD:
            q.enqueue(json.dumps({"invoice": invoice(n), "customer": f"c-{n % 4}"}))
        for n in DEAD:
            m = q.claim()
            assert m is not None and m.id == n
            error = "timeout after 30 s" if n in TIMEOUTS else "HTTP 500 Internal Server Error"
            q.fail(m.id, error, lease_token=m.lease_token, retryable=False)
        for n in SUCCEEDED:
            q.enqueue(f"paid {n}")
            m = q.claim()
            assert m is not None and m.id == n
            q.succeed(m.id, lease_token=m.lease_token)
        for n in DELAYED:
            assert q.enqueue(f"reminder {n}", delay=3600).id == n
        assert q.enqueue("flaky").id == BACKOFF
        m = q.claim()
        assert m is not None and m.id == BACKOFF
        q.fail(m.id, "connection refused", lease_token=m.lease_token, retry_in=3600)
        for n in DUE:
            assert q.enqueue(f"due {n}").id == n
        archive = db.queue(ARCHIVE)
        payloads = ["needle", *["hay"] * (HAY - 2), "needle"]
        for start in range(0, HAY, 1000):
            made = archive.enqueue_many(payloads[start : start + 1000])
            assert made[0].id == FIRST_NEEDLE + start


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> Search:
    """The driver's result, and the database it leaves."""
    path = tmp_path_factory.mktemp("search") / "billing.db"
    fill(path)
    with deadletter_serve(path, token=TOKEN) as url:
        result = drive(DRIVER, url, TOKEN, QUEUE, ARCHIVE, invoice(7), str(SHOTS))
    return result, path


def test_a_payload_search_finds_the_message_and_opens_it(search: Search) -> None:
    result, _ = search
    found = result["byPayload"]
    assert found["ids"] == [7]
    assert found["caption"] == f'Showing each dead message whose payload contains "{invoice(7)}", by id.'
    assert found["title"] == "Message #7" and invoice(7) in found["payload"]
    assert found["hash"] == f"#queue={QUEUE}&status=dead&payload_contains={invoice(7)}&message=7"


def test_a_pasted_link_restores_the_search(search: Search) -> None:
    result, _ = search
    pasted = result["pasted"]
    assert pasted["asked"] is True  # a new tab: the token is asked again
    assert pasted["input"] == invoice(7)
    assert pasted["ids"] == [7] and pasted["title"] == "Message #7"
    assert result["back"] == {"ids": list(DEAD), "input": ""}  # back: before the search


def test_a_time_range_is_local_in_the_form_and_utc_in_the_link(search: Search) -> None:
    result, _ = search
    ranged = result["timeRange"]
    assert ranged["hash"] == f"#queue={QUEUE}&status=dead&dead_before=2000-01-01T00%3A00%3A00.000Z"
    assert ranged["ids"] == []  # none died before 2000
    assert ranged["empty"] == "No dead message that died before Jan 1, 2000, 5:30:00 AM."
    assert ranged["elsewhere"] == {
        "input": "1999-12-31T19:00",  # the same instant in New York
        "open": True,  # "More filters" opens to show it
        "empty": "No dead message that died before Dec 31, 1999, 7:00:00 PM.",
    }


def test_filter_by_error_then_replay_all_matching_with_the_count(search: Search) -> None:
    result, path = search
    assert result["byError"] == TIMEOUTS
    assert result["beforeAll"] == "1 dead message selected on this page."
    assert result["selectAllLabel"] == f"Select all {len(TIMEOUTS)} matching"
    assert result["allSelected"] == f"All {len(TIMEOUTS)} matching dead messages selected."
    assert result["focusAfterSelectAll"] == "clear-selection"  # where the pressed button was
    assert result["openWhileSelected"] == result["allSelected"]  # opening one keeps it
    assert result["dialogs"][0] == (
        f'Replay {len(TIMEOUTS)} dead messages of "{QUEUE}" whose last error contains "timeout"?'
    )
    assert result["replayed"] == f"Replayed {len(TIMEOUTS)} dead messages."
    assert result["afterReplay"] == {
        "ids": [],
        "empty": 'No dead message whose last error contains "timeout".',
        "bar": "No dead message matches now.",  # not "All 0 matching ... selected"
        "selectHidden": True,
        "replayDisabled": True,
    }
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        assert [m.id for m in q.list("pending", limit=1000) if m.replay_count == 1] == TIMEOUTS


def test_two_messages_selected_from_the_keyboard_are_deleted(search: Search) -> None:
    result, path = search
    assert result["dialogs"][1] == (
        f'Delete 2 selected dead messages of "{QUEUE}" (#1, #2)?\n\n'
        "They cannot be replayed afterwards."
    )
    assert result["keyboard"] == {
        "focused": "select:2",
        "outline": "solid",  # the focus is visible
        "selected": "2 dead messages selected on this page.",
    }
    assert result["deleted"] == "Deleted 2 selected dead messages."
    left = [n for n in DEAD if n not in TIMEOUTS and n not in (1, 2)]
    assert result["deadAfterDelete"] == left
    with deadletter.open(path) as db:
        assert [m.id for m in db.queue(QUEUE).list("dead", limit=1000)] == left


def test_retry_now_from_a_row_from_the_panel_then_all_the_delayed_ones(search: Search) -> None:
    result, path = search
    waiting = [*DELAYED, BACKOFF]
    assert result["delayedTab"] == {"ids": waiting, "hash": f"#queue={QUEUE}&status=pending&delayed=true"}
    assert result["retriedOne"] == f"Message {DELAYED[0]} is due now: the next claim may take it."
    assert result["delayedAfterOne"] == waiting[1:]
    assert result["retriedInPanel"] == {
        "notice": f"Message {DELAYED[1]} is due now: the next claim may take it.",
        "buttonHidden": True,  # it is due: nothing to retry now
        "nextAttempt": "–",
        "ids": waiting[2:],
    }
    assert result["dialogs"][2] == (
        f'Retry now 3 delayed messages of "{QUEUE}"?\n\n'
        "Each becomes due at once instead of waiting for its backoff or delay (a message behind "
        "its group's head still waits for it)."
    )
    assert result["retriedAll"] == "3 delayed messages made due now."
    assert result["delayedAfterAll"] == []
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        for n in waiting:
            m = q.get(n)
            assert (m.status, m.retry_after) == ("pending", None)
        assert q.get(BACKOFF).retry_count == 1  # the failed attempt stays counted
        assert q.stats().delayed == 0


def test_a_search_stopped_by_the_scan_budget_says_so_and_goes_further(search: Search) -> None:
    result, _ = search
    assert result["archiveTab"] == f"pending {HAY:,}"  # grouped in the browser's locale (en-US)
    stopped = result["stopped"]
    last_examined = FIRST_NEEDLE + SCAN_BUDGET - 1
    assert stopped["ids"] == [FIRST_NEEDLE]
    assert stopped["note"].startswith(f"This search stopped at message #{last_examined} before")
    assert stopped["button"] == "Search further"
    further = result["further"]
    assert further["ids"] == [LAST_NEEDLE]
    assert further["noteHidden"] is True and further["nextDisabled"] is True
    assert further["hash"].endswith(f"&after={last_examined}")


def test_the_screenshots_are_written(search: Search) -> None:
    result, _ = search
    for shot in ("Search", "Bulk", "Readme", "Stopped"):
        assert Path(result[f"shot{shot}"]).stat().st_size > 10_000
