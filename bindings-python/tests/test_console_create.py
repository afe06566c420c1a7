"""The console's Pause on a queue name that names no queue, in headless Chromium against
`deadletter serve` with a token (console_create.mjs). A new user opened the console on a mistyped
name and clicked Pause: the server stored a new, paused queue while the real one ran on, without
a word (session 8). The server now refuses it (404 `not_found`, unless ``create=true``), and the
console says that the name names no queue and asks before Pause creates it, with the queues
there are; Cancel stores nothing. Screenshots go to
build/console/ (console-unknown-queue.png, console-unknown-queue-paused.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive
from serving import deadletter_serve

DRIVER = Path(__file__).with_name("console_create.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "create-token"
ORDERS, TYPO = "orders", "ordres"


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("create") / "create.db"
    with deadletter.open(path) as db:
        db.queue(ORDERS).enqueue("order 1")
        db.queue("invoices").enqueue("invoice 1")
    with deadletter_serve(path, token=TOKEN) as url:
        result = drive(DRIVER, url, TOKEN, ORDERS, TYPO, str(SHOTS))
    with deadletter.open(path) as db:
        result["stored"] = {s.queue: s.paused for s in db.queues()}
    return result


def test_pause_of_an_unknown_queue_asks_first_and_cancel_stores_nothing(
    shown: dict[str, Any],
) -> None:
    assert shown["opened"]["state"] == "running" and shown["opened"]["button"] == "Pause"
    assert shown["opened"]["note"] == (
        f'No queue "{TYPO}" yet: it holds no message and no settings (the queues are listed '
        "under Queues)."
    )
    assert shown["dialogs"][0] == (
        f'There is no queue "{TYPO}" (it holds no message and no settings); queues: '
        f'"{ORDERS}", "invoices".\n\nPause "{TYPO}" anyway? That creates a new, paused queue; '
        "no other queue is paused."
    )
    cancelled = shown["cancelled"]
    assert cancelled["dialogs"] == 1
    assert cancelled["queues"] == ["invoices", ORDERS]  # no "ordres"
    assert (cancelled["state"], cancelled["button"]) == ("running", "Pause")
    assert cancelled["note"] == shown["opened"]["note"]
    assert (cancelled["notice"], cancelled["error"]) == ("", False)


def test_pause_confirmed_creates_the_queue_paused(shown: dict[str, Any]) -> None:
    confirmed = shown["confirmed"]
    assert confirmed["dialogs"] == 2 and shown["dialogs"][1] == shown["dialogs"][0]
    assert confirmed["queues"] == ["invoices", ORDERS, TYPO]
    assert (confirmed["state"], confirmed["button"]) == ("paused", "Resume")
    assert confirmed["note"] is None  # a queue now
    assert confirmed["notice"] == (
        f'Paused "{TYPO}": workers claim nothing from it until it is resumed.'
    )
    assert shown["stored"] == {"invoices": False, ORDERS: False, TYPO: True}
    for shot in ("shotOpened", "shotConfirmed"):
        assert Path(shown[shot]).stat().st_size > 0


def test_pause_of_a_queue_that_exists_asks_nothing(shown: dict[str, Any]) -> None:
    assert shown["known"]["dialogs"] == 2  # none more
    assert shown["known"]["note"] is None
    assert (shown["known"]["state"], shown["known"]["notice"]) == (
        "paused",
        f'Paused "{ORDERS}": workers claim nothing from it until it is resumed.',
    )
    resumed = shown["resumed"]
    assert (resumed["state"], resumed["notice"]) == ("running", f'Resumed "{ORDERS}".')
