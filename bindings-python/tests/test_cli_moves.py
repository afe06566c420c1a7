"""``deadletter move PATH QUEUE ID TO`` and ``deadletter move PATH QUEUE --all --to TO [filters]
[--limit N] [--dry-run]`` (issue 22), and ``moved_from`` in ``show`` and ``list`` once a message
was moved. The database is the one of test_cli_filters.py."""

from __future__ import annotations

import deadletter
import pytest
from test_cli import run
from test_cli_filters import path, state  # noqa: F401 (path is a fixture)

NEW = 'deadletter move: note: queue "parking" is new (it holds no message and no settings)\n'
"""The note of a move to a queue that does not exist yet (new-user finding M8, session 7)."""


def queue(path: str, name: str) -> list[deadletter.Message]:
    with deadletter.open(path) as db:
        return list(db.queue(name).list())


def test_move_one_message(path: str) -> None:
    status, out, err = run("move", path, "q", "2", "parking")
    assert (status, err) == (0, NEW)
    assert out.splitlines() == [
        "id          2",
        "queue       parking",
        "moved_from  q",
        "status      dead",
    ]
    assert [m.id for m in state(path)] == [1, 3, 4, 5]
    assert [(m.id, m.moved_from) for m in queue(path, "parking")] == [(2, "q")]
    assert run("move", path, "q", "4", "parking") == (
        1,
        "",
        "deadletter move: cannot move message 4: it is succeeded\n",
    )
    assert run("move", path, "q", "1", "q")[0] == 1  # the same queue: a validation error
    assert run("move", path, "q", "99", "parking")[0] == 1


@pytest.mark.parametrize("target", ["..", "a\u200bb", "a\u2028b", "jobs\u3164"])
def test_a_refused_target_is_not_said_to_be_new(path: str, target: str) -> None:
    """Session 8: ``move`` to an invalid name said ``queue ".." is new`` before the refusal;
    the note now comes once the core took the name (never for a refused one)."""
    before = state(path)
    for argv in (["2", target], ["--all", "--to", target], ["--all", "--to", target, "--dry-run"]):
        status, out, err = run("move", path, "q", *argv)
        assert (status, out) == (1, ""), argv
        assert "is new" not in err, argv
        assert err.startswith("deadletter move: validation failed: to_queue: must not"), err
    assert state(path) == before
    assert queue(path, target) == []


def test_a_taken_key_is_an_error_and_the_message_stays(path: str) -> None:
    with deadletter.open(path) as db:
        db.queue("q").enqueue("keyed", idempotency_key="k")
        db.queue("parking").enqueue("holder", idempotency_key="k")
    status, out, err = run("move", path, "q", "6", "parking")
    assert (status, out) == (1, "")
    assert err == (
        'deadletter move: cannot move message 6 to queue "parking": a message there already '
        'carries its idempotency key "k"\n'
    )
    assert 6 in [m.id for m in state(path)]
    # --all skips it: not counted, left where it is.
    argv = ["move", path, "q", "--all", "--to", "parking", "--dry-run", "--status", "pending"]
    assert run(*argv) == (0, "would move 2\n", "")  # 3 and 5


def test_a_dry_run_prints_the_exact_count_and_changes_nothing(path: str) -> None:
    before = state(path)
    for options, line in [
        ([], "would move 4"),  # 1, 2 dead; 3, 5 pending; not 4 (succeeded)
        (["--status", "dead"], "would move 2"),
        (["--delayed"], "would move 1"),
        (["--payload-contains", "customer", "--limit", "1"], "would move 1"),
    ]:
        argv = ["move", path, "q", "--all", "--to", "parking", "--dry-run", *options]
        assert run(*argv) == (0, line + "\n", NEW), options
    assert run("move", path, "q", "--all", "--to", "parking", "--dry-run", "--json") == (
        0,
        '{\n  "count": 4,\n  "dry_run": true\n}\n',
        NEW,
    )
    assert state(path) == before
    assert queue(path, "parking") == []


def test_move_all_moves_what_the_filters_select(path: str) -> None:
    assert run("move", path, "q", "--all", "--to", "parking", "--error-contains", "HTTP") == (
        0,
        "moved  2\n",
        NEW,
    )
    assert [m.id for m in state(path)] == [3, 4, 5]
    assert [(m.id, m.status, m.moved_from) for m in queue(path, "parking")] == [
        (1, "dead", "q"),
        (2, "dead", "q"),
    ]
    status, _, err = run("move", path, "q", "--all", "--to", "parking", "--status", "succeeded")
    assert status == 1 and "status:" in err


def test_show_and_list_show_moved_from_once_a_message_moved(path: str) -> None:
    _, out, _ = run("show", path, "q", "1")
    assert "moved_from" not in out
    _, out, _ = run("list", path, "q")
    header = ["id", "status", "retries", "updated_at", "last_error", "payload"]
    assert out.splitlines()[0].split() == header
    assert run("move", path, "q", "1", "parking")[0] == 0
    assert run("move", path, "q", "2", "parking")[0] == 0
    assert run("move", path, "parking", "2", "other")[0] == 0
    _, out, _ = run("show", path, "parking", "1")
    assert "moved_from        q" in out.splitlines()
    with deadletter.open(path) as db:
        db.queue("other").enqueue("never moved")
    _, out, _ = run("list", path, "other")
    rows = [line.split()[:3] for line in out.splitlines()]
    assert rows == [["id", "status", "moved_from"], ["2", "dead", "parking"], ["6", "pending", "-"]]


@pytest.mark.parametrize(
    "argv",
    [
        ["1"],  # no target
        ["1", "parking", "--to", "parking"],  # the ID form takes TO after the ID
        ["--all"],  # no --to
        ["--all", "parking"],  # --all takes --to
        ["--all", "--to", "parking", "1"],  # not both
        ["1", "parking", "--dry-run"],
        [],
    ],
)
def test_usage_errors_change_nothing(path: str, argv: list[str]) -> None:
    before = state(path)
    assert run("move", path, "q", *argv)[0] == 2
    assert state(path) == before
