"""What the console shows of texts and due times, in headless Chromium against `deadletter
serve` with a token (console_text.mjs): a dead message whose payload, error, group and key hold
U+202E (right-to-left override) shows each with the override escaped, in the list, its tooltips
and the panel, as the CLI's tables do (new-user findings N6, M7, session 7); the console escapes
exactly the CLI's set (`deadletter._invisible`, less tab and the line breaks, which it shows its
own way); a queue name stored before names refused zero-width spaces shows it escaped (N7); a
group's members behind its head read "in group order" rather than due now, an expired pending
message "not delivered" and marked expired, and Reap is offered for it, which takes it out (M6).
Screenshots go to build/console/ (console-bidi.png, console-due.png, console-queue-names.png)."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive
from deadletter._invisible import CONTROLS, HIDDEN
from serving import deadletter_serve

DRIVER = Path(__file__).with_name("console_text.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "text-token"
BIDI, HOOKS, OLD = "bidi", "hooks", "emails\u200b"
GROUP = "https://a.example/hook"


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue(BIDI)
        m = q.enqueue("pay \u202egnp.exe", group="grp-\u202eabc", idempotency_key="key-\u202exyz")
        assert m.id == 1 and (c := q.claim()) is not None
        q.fail(c.id, "Invoice \u202efdp.exe", lease_token=c.lease_token, retryable=False)
        hooks = db.queue(HOOKS)
        assert [hooks.enqueue(f"hook {n}", group=GROUP).id for n in range(3)] == [2, 3, 4]
        head = hooks.claim()
        assert head is not None and head.id == 2
        hooks.fail(2, "HTTP 429", lease_token=head.lease_token, retry_in=600)
        db.queue("emails").enqueue("x")  # 5, renamed below
    hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
    with deadletter.open(path, clock=lambda: hour_ago) as db:
        assert db.queue(HOOKS).enqueue("late", expires_in=60).id == 6  # expired 59 min ago
    with closing(sqlite3.connect(path)) as raw, raw:  # a name stored before the rule (N7)
        raw.execute("UPDATE messages SET queue = ? WHERE queue = 'emails'", (OLD,))


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("text") / "text.db"
    fill(path)
    with deadletter_serve(path, token=TOKEN) as url:
        return drive(DRIVER, url, TOKEN, BIDI, HOOKS, str(SHOTS))


def test_bidi_controls_are_shown_escaped_in_every_text_of_a_message(shown: dict[str, Any]) -> None:
    """Finding N6: the list read "Invoice exe.pdf", the panel "pay exe.png", "grp-cba", "key-zyx"."""
    bidi = shown["bidi"]
    row = bidi["row"]
    assert row["last error"] == {"text": r"Invoice \u202efdp.exe", "title": r"Invoice \u202efdp.exe"}
    assert row["payload"] == {"text": r"pay \u202egnp.exe", "title": r"pay \u202egnp.exe"}
    assert row["group"]["text"] == r"grp-\u202eabc"
    assert bidi["fields"]["group"] == r"grp-\u202eabc"
    assert bidi["fields"]["idempotency key"] == r"key-\u202exyz"
    assert bidi["payload"] == r"pay \u202egnp.exe"
    assert [entry.split(": ", 1)[1] for entry in bidi["history"]] == [r"Invoice \u202efdp.exe"]
    assert "\u202e" not in repr(bidi)  # nowhere raw
    assert Path(shown["shotBidi"]).stat().st_size > 0


def test_the_console_escapes_the_clis_set(shown: dict[str, Any]) -> None:
    """The console's `visible` (visible.js) escapes exactly what the CLI's `printable` does,
    every code point checked, but tab, line feed and carriage return (the console shows line
    breaks as ↵ in a cell and as breaks in the payload)."""
    cli = re.compile(f"[{CONTROLS}{HIDDEN}]")
    expected: list[list[int]] = []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF or chr(code) in "\t\n\r" or not cli.match(chr(code)):
            continue
        if expected and expected[-1][1] == code - 1:
            expected[-1][1] = code
        else:
            expected.append([code, code])
    assert shown["escaped"] == expected


def test_a_queue_name_stored_with_a_zero_width_space_shows_it(shown: dict[str, Any]) -> None:
    """Finding N7: such a row read "emails", like the real one."""
    assert [r"emails\u200b", r"emails\u200b"] in shown["queues"]


def test_members_behind_their_head_and_an_expired_message_are_not_due_now(shown: dict[str, Any]) -> None:
    """Finding M6: #3 and #4 (behind #2, in backoff for 10 min) and the expired #6 read
    "due: now"; no Reap was offered for #6."""
    hooks = shown["hooks"]
    due = {id: row["due"]["text"] for id, row in hooks["rows"].items()}
    assert due["2"].startswith("in ") and due["2"].endswith("delayed")  # "in 10 min delayed"
    assert (due["3"], due["4"]) == ("in group order", "in group order")
    assert hooks["rows"]["3"]["due"]["title"].startswith("a group's messages are claimed one at a time")
    assert due["6"] == "not delivered expired"
    assert hooks["member"].startswith("in group order (a group's messages")
    assert hooks["expired"] == "not delivered (expired: the next claim or reap takes it out)"
    assert hooks["reapShown"] is True
    assert hooks["reapNotice"].startswith(f'Reaped 1 message in "{HOOKS}"')
    assert hooks["afterReap"] == [2, 3, 4]
