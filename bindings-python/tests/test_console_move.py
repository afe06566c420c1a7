"""The console's move (issue 22) in headless Chromium, against `deadletter serve` with a token,
driven as an operator would (console_move.mjs): a pending message moved to another queue from
its panel (the other queues offered), the notice's link followed to it there, where its panel
says "Moved from billing"; a move refused because the target holds the message's idempotency key
(key_taken) and one to the queue itself (422), each said in words; every dead message selected
("all N matching") and moved, N in the confirmation. The database must then hold exactly what
those actions leave. Screenshots go to build/console/ (beside test_dashboard's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deadletter
import pytest
from chromium_driver import ROOT, drive
from serving import deadletter_serve

Moves = tuple[dict[str, Any], Path]
"""The driver's result (its JSON), and the database the console acted on."""

DRIVER = Path(__file__).with_name("console_move.mjs")
SHOTS = ROOT / "build" / "console"
TOKEN = "move-token"
QUEUE, TARGET, OTHER = "billing", "quarantine", "audit"
DEAD = range(1, 13)
MOVED, TAKEN = 13, 14  # pending; TAKEN's key is held in TARGET by HOLDER
HOLDER = 15
KEY = "k-dup"
DRAIN = [17, 18]  # pending in QUEUE, payload "drain": moved in bulk to OVERFLOW
OVERFLOW = "overflow"


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue(QUEUE)
        for n in DEAD:
            assert q.enqueue(json.dumps({"invoice": n})).id == n
        for n in DEAD:
            m = q.claim()
            assert m is not None and m.id == n
            q.fail(m.id, "HTTP 500", lease_token=m.lease_token, retryable=False)
        assert q.enqueue("to move", idempotency_key="k-move").id == MOVED
        assert q.enqueue("stays", idempotency_key=KEY).id == TAKEN
        assert db.queue(TARGET).enqueue("holder", idempotency_key=KEY).id == HOLDER
        assert db.queue(OTHER).enqueue("other").id == 16
        for n in DRAIN:
            assert q.enqueue(f"drain {n}").id == n


@pytest.fixture(scope="module")
def moves(tmp_path_factory: pytest.TempPathFactory) -> Moves:
    path = tmp_path_factory.mktemp("move") / "billing.db"
    fill(path)
    with deadletter_serve(path, token=TOKEN) as url:
        result = drive(DRIVER, url, TOKEN, QUEUE, TARGET, str(MOVED), str(TAKEN), str(SHOTS))
    return result, path


def test_a_pending_message_moves_from_its_panel_and_its_link_opens_it_there(moves: Moves) -> None:
    result, path = moves
    assert result["offered"] == [OTHER, TARGET]  # the other queues, not billing itself
    assert result["formShown"] is True
    assert result["movedOne"] == {
        "notice": {"text": f'Moved message {MOVED} (pending) from "{QUEUE}" to "{TARGET}".', "error": False},
        "link": f'Open message {MOVED} in "{TARGET}"',
        "panelHidden": True,  # it is not in billing any more
        "ids": [TAKEN, *DRAIN],
    }
    assert result["followed"] == {
        "hash": f"#queue={TARGET}&status=pending&message={MOVED}",
        "title": f"Message #{MOVED}",
        "movedFrom": f"Moved from {QUEUE}",
        "movedFromHref": f"#queue={QUEUE}",
    }
    with deadletter.open(path) as db:
        m = db.queue(TARGET).get(MOVED)
        assert (m.queue, m.moved_from, m.status, m.payload) == (TARGET, QUEUE, "pending", "to move")
        with pytest.raises(deadletter.NotFoundError):
            db.queue(QUEUE).get(MOVED)


def test_a_taken_key_and_the_same_queue_are_refused_in_words(moves: Moves) -> None:
    result, path = moves
    assert result["keyTaken"] == {
        "notice": {
            "text": f'The move failed: "{TARGET}" already holds a message with idempotency key '
            f'"{KEY}", so message {TAKEN} stays where it is.',
            "error": True,
        },
        # Beside the form as well, where the operator looks (the notice may be scrolled away).
        "inPanel": f'"{TARGET}" already holds a message with idempotency key "{KEY}", so message '
        f"{TAKEN} stays where it is.",
        "inView": True,
        "title": f"Message #{TAKEN}",  # still open: nothing moved
    }
    assert result["sameQueue"] == {  # the 422's field error, said of the queue typed
        "text": f'The move failed: The target queue "{QUEUE}" is the source queue too: the source '
        "and the target are the same queue.",
        "error": True,
    }
    with deadletter.open(path) as db:
        assert db.queue(QUEUE).get(TAKEN).moved_from is None
        assert [m.id for m in db.queue(TARGET).list("pending")] == [MOVED, HOLDER]


def test_all_matching_dead_messages_move_with_the_count_confirmed(moves: Moves) -> None:
    result, path = moves
    assert result["deadBefore"] == list(DEAD)
    assert result["bulkMoveHidden"] is False and result["bulkMoveDisabled"] is True
    assert result["allSelected"] == f"All {len(DEAD)} matching dead messages selected."
    assert result["dialogs"][0] == (
        f'Move {len(DEAD)} dead messages of "{QUEUE}" to "{TARGET}"?\n\n'
        "A message whose idempotency key the target already holds stays where it is and is not counted."
    )
    assert result["bulkMoved"] == {
        "notice": {"text": f'Moved {len(DEAD)} dead messages to "{TARGET}".', "error": False},
        "link": f'Open "{TARGET}"',
        "ids": [],
    }
    assert result["targetDead"] == {"hash": f"#queue={TARGET}&status=dead", "ids": list(DEAD)}
    with deadletter.open(path) as db:
        dead = db.queue(TARGET).list("dead", limit=100)
        assert [(m.id, m.moved_from, m.last_error) for m in dead] == [(n, QUEUE, "HTTP 500") for n in DEAD]
        assert db.queue(QUEUE).list("dead") == []


def test_matching_pending_messages_move_in_bulk_counted_in_the_confirmation(moves: Moves) -> None:
    result, path = moves
    assert result["drain"]["ids"] == DRAIN
    # No route counts pending messages without the move's target: the confirmation counts them.
    assert result["drain"]["selectLabel"] == "Select all matching"
    assert result["drain"]["allSelected"] == "All matching pending messages selected (the move counts them)."
    assert result["dialogs"][1] == (
        f'Move {len(DRAIN)} pending messages of "{QUEUE}" whose payload contains "drain" to '
        f'"{OVERFLOW}"?\n\n'
        "A message whose idempotency key the target already holds stays where it is and is not counted."
    )
    assert result["drain"]["notice"] == f'Moved {len(DRAIN)} pending messages to "{OVERFLOW}".'
    assert result["drain"]["after"] == []
    with deadletter.open(path) as db:
        assert [(m.id, m.moved_from) for m in db.queue(OVERFLOW).list("pending")] == [
            (n, QUEUE) for n in DRAIN
        ]
        assert [m.id for m in db.queue(QUEUE).list("pending")] == [TAKEN]


def test_a_picked_message_whose_key_the_target_holds_is_named_in_the_result(moves: Moves) -> None:
    result, path = moves
    assert result["dialogs"][2] == (
        f'Move 1 selected pending message of "{QUEUE}" (#{TAKEN}) to "{TARGET}"?\n\n'
        "A message whose idempotency key the target already holds stays where it is and is not counted."
    )
    assert len(result["dialogs"]) == 3
    assert result["picked"] == {
        "notice": {
            "text": f'Moved 0 of 1 selected pending message to "{TARGET}". Not done: #{TAKEN}: '
            f'"{TARGET}" already holds a message with its idempotency key, so message {TAKEN} stays '
            "where it is.",
            "error": False,
        },
        "linkHidden": True,  # none went there
        "ids": [TAKEN],
    }
    with deadletter.open(path) as db:
        assert db.queue(QUEUE).get(TAKEN).moved_from is None


def test_the_screenshots_are_written(moves: Moves) -> None:
    result, _ = moves
    assert result["narrow"]["right"] <= 400 and result["narrow"]["scrollWidth"] <= 400
    for shot in ("Moved", "MovedFrom", "KeyTaken", "Bulk", "Drain", "Narrow"):
        assert Path(result[f"shot{shot}"]).stat().st_size > 10_000
