"""The CLI's rough edges that new users met (new-user findings M9 and M10, session 7): help
text with an unformatted placeholder, the top-level usage for a mistyped option of a command, a
directory called "no such database file", bad option values that were the core's validation
errors (exit 1) rather than usage errors (exit 2), a ``--json`` key per bulk command, and tables
aligned by code points rather than by the columns a terminal gives them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import deadletter
import pytest
from deadletter import cli
from deadletter.cli import _output
from test_cli import path, run  # noqa: F401 (path is a fixture)

COMMANDS = sorted(cli.parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_shows_a_placeholder(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    help = capsys.readouterr().out
    assert re.findall(r"\{[A-Z_]+\}", help) == []
    if command == "list":
        assert "A call examines at most 10000 messages" in " ".join(help.split())


def test_a_mistyped_option_shows_the_commands_usage_and_the_option_meant(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse writes usage errors to sys.stderr."""
    assert run("list", path, "emails", "--stauts", "dead") == (2, "", "")
    err = capsys.readouterr().err
    assert err.startswith("usage: deadletter list [-h]")
    assert err.endswith(
        "deadletter list: error: unrecognized arguments: --stauts dead (did you mean --status?)\n"
    )
    assert run("replay", path, "emails", "--all", "--dryrun")[0] == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deadletter replay")
    assert err.endswith("(did you mean --dry-run?)\n")


@pytest.mark.parametrize("argv", [["stats"], ["enqueue", "q", "x"], ["serve"]])
def test_a_directory_is_not_called_missing(tmp_path: Path, argv: list[str]) -> None:
    command, *rest = argv
    assert run(command, str(tmp_path), *rest) == (
        1,
        "",
        f"deadletter {command}: {tmp_path}: is a directory, not a database file\n",
    )


@pytest.mark.parametrize(
    "argv, error",
    [
        (["list", "--status", "daed"], "argument --status: invalid choice: 'daed'"),
        (["list", "--limit", "0"], "argument --limit: must be 1..1000, got 0"),
        (["list", "--limit", "100000"], "argument --limit: must be 1..1000, got 100000"),
        (["replay", "--all", "--status", "daed"], "argument --status: invalid choice: 'daed'"),
        (["enqueue", "x", "--max-retries", "0"], "argument --max-retries: must be 1..10, got 0"),
        (["settings", "--backoff-multiplier", "0.5"], "argument --backoff-multiplier: must be 1.."),
    ],
)
def test_bad_option_values_are_usage_errors(
    path: str, argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script tells a typo (2) from a failure of the store (1). A status that the action does
    not take (``retry-now --all --status dead``) stays the core's validation error (1): which
    statuses an action takes is the core's rule."""
    command, *options = argv
    assert run(command, path, "emails", *options) == (2, "", "")
    assert f"deadletter {command}: error: {error}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, count",
    [
        (["replay", "--all"], 1),
        (["delete", "--all"], 2),  # the dead and the succeeded message
        (["retry-now", "--all"], 0),
        (["move", "--all", "--to", "emails"], 1),
        (["purge", "--status", "dead", "--older-than", "0"], 1),
        (["reap"], 0),
    ],
)
def test_bulk_actions_write_one_json_shape(path: str, argv: list[str], count: int) -> None:
    """``{"count", "dry_run"}``, as the HTTP API's bulk routes answer (it was ``would_replay``,
    ``deleted``, ``retried_now``, ``moved``, ``purged``, ``reaped``)."""
    command, *options = argv
    queue = "other" if command == "move" else "emails"
    with deadletter.open(path) as db:
        db.queue("other").enqueue("to move")
    if command not in ("purge", "reap"):
        status, out, _ = run(command, path, queue, *options, "--dry-run", "--json")
        assert (status, json.loads(out)) == (0, {"count": count, "dry_run": True})
    status, out, _ = run(command, path, queue, *options, "--json")
    assert (status, json.loads(out)) == (0, {"count": count, "dry_run": False})


def test_tables_align_wide_characters_and_booleans() -> None:
    rows = [
        {"queue": "ユニコード/キュー", "pending": 1, "paused": True},
        {"queue": "orders", "pending": 12, "paused": False},
    ]
    out = _Out()
    _output.emit(rows, ("queue", "pending", "paused"), as_json=False, out=out)
    assert out.text.splitlines() == [
        "queue              pending  paused",
        "ユニコード/キュー        1  True",
        "orders                  12  False",
    ]
    assert _output.shown_width("ユニコード/キュー") == 17
    cut = _output.cell("キュー" * 20, 48)
    assert (cut, _output.shown_width(cut)) == ("キュー" * 7 + "キュ…", 47)


def test_tables_align_emoji_sequences_accents_and_ideographs() -> None:
    """Tester T3: ``👩\\u200d💻`` counted four columns where terminals draw one glyph of two, so
    the rest of its row stood two columns left of the others'."""
    drawn = {  # the columns a terminal draws each name in (what the wcwidth package counts)
        "\U0001f469\u200d\U0001f4bb": 2,
        "caf\u00e9": 4,
        "\u0432\u043e\u0301\u0434\u044b": 4,  # a stress mark (cafe\u0301 shows escaped: session 11)
        "\u4f5c\u696d": 4,
        "\u2764\ufe0f": 2,
        "#\ufe0f\u20e3": 2,
        "\U0001f3f3\ufe0f\u200d\U0001f308": 2,
        "\u0645\u06cc\u200c\u062e": 3,
        "jobs": 4,
    }
    out = _Out()
    rows = [{"queue": q, "pending": 1} for q in drawn]
    _output.emit(rows, ("queue", "pending"), as_json=False, out=out)
    header, *lines = out.text.splitlines()
    assert header == "queue  pending"
    # Every row ends in the header's last column: its name's drawn columns, then the padding.
    assert [drawn[q] + len(line) - len(q) for q, line in zip(drawn, lines)] == [14] * len(drawn)
    assert [line[len(q) :].lstrip() for q, line in zip(drawn, lines)] == ["1"] * len(drawn)


class _Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)
