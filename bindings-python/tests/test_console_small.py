"""The console's small things, in headless Chromium against `deadletter serve` with a token
(console_small.mjs), as a new user found them (findings M11, M17, session 7): a link whose tab
is no tab says so rather than silently opening the dead tab; a selection dropped by Next page is
said; at 1200 px with a message open every row's buttons stay in view; stored settings read as
the console's other durations ("2 d", "6 h"); a search that the scan budget stopped before it
found anything does not say "No pending message whose payload contains ..." above the note that
more may match. Screenshots go to build/console/ (console-1200-open.png,
console-stopped-empty.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive
from serving import deadletter_serve

DRIVER = Path(__file__).with_name("console_small.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "small-token"
ORDERS, HAY = "orders", "hay"
DEAD = 60  # more than the console's page (50)
LONG = "ConnectionResetError: the peer closed the connection " * 4  # clipped in the list
SCAN_BUDGET = 10_000  # messages a list call examines at most (the core's SCAN_BUDGET)


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue(ORDERS)
        q.enqueue_many([f"order {n}" for n in range(1, DEAD + 1)])
        for n in range(1, DEAD + 1):
            m = q.claim()
            assert m is not None and m.id == n
            error = f"Traceback (most recent call last): order {n}: {LONG}"
            q.fail(m.id, error, lease_token=m.lease_token, retryable=False)
        q.set_settings(
            lease=90,
            expires_in=2 * 86400,
            backoff=deadletter.Backoff(initial=60, multiplier=3, cap=6 * 3600, jitter="full"),
        )
        hay = db.queue(HAY)
        payloads = ["hay"] * (SCAN_BUDGET + 1) + ["needle"]
        for start in range(0, len(payloads), 1000):
            hay.enqueue_many(payloads[start : start + 1000])


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("small") / "small.db"
    fill(path)
    with deadletter_serve(path, token=TOKEN) as url:
        return drive(DRIVER, url, TOKEN, ORDERS, HAY, str(SHOTS))


def test_a_link_whose_tab_is_no_tab_says_so(shown: dict[str, Any]) -> None:
    """Finding M17: `status=Dead` or `status=nope` opened the dead tab without a word."""
    links = shown["links"]
    for status in ("Dead", "nope"):
        assert links[status]["notice"] == {
            "text": f'The link\'s tab "{status}" is none of pending, delayed, processing, '
            "succeeded, dead: showing the dead messages.",
            "error": True,
        }
        assert links[status]["tab"] == "dead"
        assert links[status]["hash"] == f"#queue={ORDERS}&status=dead"


def test_a_link_may_name_the_delayed_tab(shown: dict[str, Any]) -> None:
    """`status=delayed` names the delayed tab, whose own link is status=pending&delayed=true."""
    delayed = shown["links"]["delayed"]
    assert delayed == {
        "notice": {"text": "", "error": False},
        "tab": "delayed",
        "hash": f"#queue={ORDERS}&status=pending&delayed=true",
    }


def test_a_selection_dropped_by_next_page_is_said(shown: dict[str, Any]) -> None:
    """Finding M17: 3 picked on page 1 and 2 on page 2 replayed the 2 without a word."""
    paging = shown["paging"]
    assert paging["before"] == "2 dead messages selected on this page."
    assert paging["notice"] == {
        "text": "Selection cleared (2 messages on the page left: #1, #2): a selection holds one "
        "page's messages, or all that match.",
        "error": False,
    }
    assert paging["after"] == "No message selected."


def test_at_1200_px_with_a_message_open_every_rows_buttons_are_in_view(
    shown: dict[str, Any],
) -> None:
    """Finding M17: each row's Delete… was cut off at the list pane's right edge."""
    layout = shown["layout"]
    for width in ("1000", "1200", "1280"):
        assert layout[width]["buttons"] == 2 * 50  # Replay and Delete… on each dead row
        assert layout[width]["clipped"] == [], width
    assert Path(shown["shotLayout"]).stat().st_size > 10_000


def test_stored_settings_read_as_durations(shown: dict[str, Any]) -> None:
    """Finding M17: they read "expires_in 172800 s", "cap 21600 s"; a figure the words round
    keeps its seconds."""
    assert shown["settings"] == {
        "max_retries": "unset",
        "lease": "1 min (90 s)",
        "expires_in": "2 d",
        "on_expiry": "dead",
        "backoff": "1 min × 3, cap 6 h, jitter full",
        "paused": "no",
    }


def test_a_search_stopped_before_it_found_anything_says_no_more_than_it_knows(
    shown: dict[str, Any],
) -> None:
    """Finding M11: it said 'No pending message whose payload contains "needle".' above the
    note that it stopped early (the needle is the message after the budget's last and one more)."""
    stopped = shown["stopped"]
    last = DEAD + SCAN_BUDGET  # ORDERS holds ids 1..60, HAY the next ones
    assert stopped["empty"] == (
        'No pending message whose payload contains "needle" among the messages examined so far '
        f"(up to #{last})."
    )
    assert stopped["note"].startswith(f"This search stopped at message #{last} before")
    assert Path(shown["shotStopped"]).stat().st_size > 10_000
