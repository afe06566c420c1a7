"""A queue name that is no queue (new-user finding M8, session 7): a mistyped name succeeded
silently everywhere (``list``: no row; ``replay --all``: replayed 0; ``pause``: paused a new
queue while the real one ran on). A queue is one that `Database.queues` lists (it holds
messages or stored settings); the others get a note on stderr naming the queues there are,
closest first, and ``pause``, ``resume`` and ``settings`` refuse them (exit 1) unless
``--create``. ``enqueue`` creates queues, and ``move`` to a new one says so."""

from __future__ import annotations

from pathlib import Path

import deadletter
import pytest
from test_cli import run

QUEUES = '"orders", "orders-parked", "emails"'
"""The queues of `path`, closest to "ordres" first."""


def note(command: str, name: str = "ordres", queues: str = QUEUES) -> str:
    return (
        f'deadletter {command}: note: no queue "{name}" (it holds no message and no settings); '
        f"queues: {queues}\n"
    )


@pytest.fixture
def path(tmp_path: Path) -> str:
    """Queues "orders" (1 dead, 1 pending), "orders-parked" and "emails" (1 pending each)."""
    file = tmp_path / "ops.db"
    with deadletter.open(file) as db:
        orders = db.queue("orders")
        orders.enqueue("a", max_retries=1)
        orders.enqueue("b")
        m = orders.claim()
        assert m is not None
        orders.fail(m.id, "HTTP 503", lease_token=m.lease_token, retryable=False)
        db.queue("orders-parked").enqueue("c")
        db.queue("emails").enqueue("d")
    return str(file)


def state(path: str) -> list[tuple[str, int, int, bool]]:
    with deadletter.open(path) as db:
        return [(s.queue, s.pending, s.dead, s.paused) for s in db.queues()]


@pytest.mark.parametrize(
    "argv, out",
    [
        (["list"], "id  status  retries  updated_at  last_error  payload\n"),
        (["list", "--status", "dead", "--json"], "[]\n"),
        (["replay", "--all"], "replayed  0\n"),
        (["replay", "--all", "--dry-run"], "would replay 0\n"),
        (["delete", "--all"], "deleted  0\n"),
        (["retry-now", "--all", "--json"], '{\n  "count": 0,\n  "dry_run": false\n}\n'),
        (["purge", "--status", "dead", "--older-than", "0"], "purged  0\n"),
        (["reap"], "reaped  0\n"),
    ],
)
def test_a_command_on_an_unknown_queue_names_the_queues_there_are(
    path: str, argv: list[str], out: str
) -> None:
    before = state(path)
    command, *options = argv
    assert run(command, path, "ordres", *options) == (0, out, note(command))
    assert state(path) == before
    # The queue meant: no note.
    assert run(command, path, "orders", *options)[2] == ""


def test_stats_show_and_move_of_an_unknown_queue(path: str) -> None:
    status, out, err = run("stats", path, "ordres", "--json")
    assert (status, err) == (0, note("stats"))
    assert '"pending": 0' in out
    assert run("stats", path)[2] == ""
    assert run("show", path, "ordres", "1") == (
        1,
        "",
        note("show") + 'deadletter show: message 1 not found in queue "ordres"\n',
    )
    assert run("move", path, "ordres", "--all", "--to", "orders", "--dry-run") == (
        0,
        "would move 0\n",
        note("move"),
    )


def test_a_move_to_a_new_queue_says_so(path: str) -> None:
    new = (
        'deadletter move: note: queue "orders-parkd" is new (it holds no message and no '
        "settings)\n"
    )
    assert run("move", path, "orders", "--all", "--to", "orders-parkd") == (0, "moved  2\n", new)
    assert run("move", path, "orders-parkd", "1", "orders-parked")[2] == ""


@pytest.mark.parametrize("command", ["pause", "resume", "settings"])
def test_pause_resume_and_settings_refuse_an_unknown_queue(path: str, command: str) -> None:
    before = state(path)
    status, out, err = run(command, path, "ordres")
    create = "" if command == "resume" else " (give --create for a new queue)"
    assert (status, out) == (1, "")
    assert err == note(command).replace(": note:", ":")[:-1] + create + "\n"
    assert state(path) == before  # no queue "ordres" stored, "orders" not paused
    status, _, err = run(command, path, "ordres", "--max-retries", "5")
    assert status == (1 if command == "settings" else 2)


def test_create_pauses_or_sets_a_new_queue(path: str) -> None:
    assert run("pause", path, "new", "--create")[0] == 0
    assert run("settings", path, "newer", "--create", "--max-retries", "5")[0] == 0
    with deadletter.open(path) as db:
        assert db.queue("new").stats().paused
        assert db.queue("newer").settings().max_retries == 5
    # Stored settings make a queue: resume needs no --create, and a row back to the defaults is
    # deleted, so the name is no queue again.
    status, out, _ = run("resume", path, "new")
    assert (status, out.splitlines()[-1]) == (0, "paused       False")
    assert "new" not in [name for name, *_ in state(path)]
    assert run("settings", path, "newer", "--unset", "max_retries")[0] == 0
    assert run("settings", path, "newer")[0] == 1


def test_create_refuses_a_name_enqueue_refuses(path: str) -> None:
    """Session 9: ``deadletter pause jobs.db 'y\u3164' --create`` made a queue that enqueue
    refuses and that read as ``y``; pause and settings take enqueue's names now, exit 1."""
    before = state(path)
    for name in ("y\u3164", "..", " "):
        status, out, err = run("pause", path, name, "--create")
        assert (status, out) == (1, "") and "queue" in err and "invalid" not in out, (name, err)
        status, out, err = run("settings", path, name, "--create", "--max-retries", "5")
        assert (status, out) == (1, ""), (name, err)
    assert state(path) == before


def test_the_note_escapes_the_name_and_shows_at_most_ten_queues(tmp_path: Path) -> None:
    file = tmp_path / "many.db"
    with deadletter.open(file) as db:
        for n in range(12):
            db.queue(f"q{n:02}").enqueue("x")
    shown = ", ".join(f'"q{n:02}"' for n in range(10)) + " and 2 more"
    assert run("list", str(file), "q\x1b")[2] == note("list", "q\\x1b", shown)
    empty = tmp_path / "empty.db"
    deadletter.open(empty).close()
    assert run("reap", str(empty), "q")[2] == (
        'deadletter reap: note: no queue "q" (it holds no message and no settings); the '
        "database holds no queue\n"
    )
