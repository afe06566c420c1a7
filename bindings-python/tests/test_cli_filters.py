"""The commands of issue 22: ``list`` with the filters and the next page on stderr, the bulk
forms ``replay|delete|retry-now PATH QUEUE --all [filters] [--dry-run]`` (a dry run prints the
exact count, "would replay 12", and changes nothing) and ``retry-now PATH QUEUE ID``. The
commands read the system clock: the database is written with a clock near it."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import deadletter
import pytest
from deadletter import cli
from deadletter.cli import _commands, _output
from test_cli import Terminal, run

NOW = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
"""When the database below was written: an hour ago, so the commands' own instant is later."""


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def path(tmp_path: Path) -> str:
    """Queue "q": 1 and 2 dead ('{"customer": 42}' of "HTTP 503" at NOW, '{"customer": 7}' of
    "HTTP 410" at NOW+1 s), 3 pending with a delay of 2 days, 4 succeeded at NOW+2 s, 5 pending
    and due, enqueued at NOW+3 s."""
    file = tmp_path / "jobs.db"
    moment = [NOW]
    with deadletter.open(file, clock=lambda: moment[0]) as db:
        q = db.queue("q")
        q.enqueue('{"customer": 42}', max_retries=1, group="g1")
        q.enqueue('{"customer": 7}', max_retries=1)
        q.enqueue("later", delay=timedelta(days=2))
        q.enqueue("done")
        for id, error in ((1, "HTTP 503"), (2, "HTTP 410")):
            m = q.claim()
            assert m is not None and m.id == id
            q.fail(id, error, lease_token=m.lease_token)
            moment[0] += timedelta(seconds=1)
        m = q.claim()
        assert m is not None and m.id == 4
        q.succeed(4, lease_token=m.lease_token)
        moment[0] += timedelta(seconds=1)
        q.enqueue("now")
    return str(file)


def state(path: str) -> list[deadletter.Message]:
    with deadletter.open(path) as db:
        return list(db.queue("q").list())


def ids(out: str) -> list[int]:
    return [int(line.split()[0]) for line in out.splitlines()[1:]]


# ---------------------------------------------------------------------------------------------
# list


@pytest.mark.parametrize(
    "options, expected",
    [
        ([], [1, 2, 3, 4, 5]),
        (["--payload-contains", "customer"], [1, 2]),
        (["--payload-contains", "customer", "--error-contains", "410"], [2]),
        (["--group", "g1"], [1]),
        (["--delayed"], [3]),
        (["--not-delayed"], [5]),
        (["--status", "dead", "--dead-after", rfc3339(NOW + timedelta(seconds=1))], [2]),
        (["--dead-before", rfc3339(NOW + timedelta(seconds=1))], [1]),
        (["--created-after", rfc3339(NOW + timedelta(seconds=3))], [5]),
        (["--updated-before", rfc3339(NOW + timedelta(seconds=1))], [1, 3]),
    ],
)
def test_list_takes_every_filter(path: str, options: list[str], expected: list[int]) -> None:
    status, out, err = run("list", path, "q", *options)
    assert (status, err) == (0, "")
    assert ids(out) == expected


def test_list_says_where_the_next_page_starts(path: str) -> None:
    status, out, err = run("list", path, "q", "--payload-contains", "customer", "--limit", "1")
    assert (status, ids(out), err) == (0, [1], "more may follow: --after-id 1\n")
    status, out, err = run(
        "list", path, "q", "--payload-contains", "customer", "--limit", "1", "--after-id", "1"
    )
    assert (status, ids(out), err) == (0, [2], "more may follow: --after-id 2\n")
    status, out, err = run(
        "list", path, "q", "--payload-contains", "customer", "--after-id", "2", "--json"
    )
    assert (status, json.loads(out), err) == (0, [], "")


def test_bad_list_filters_are_reported_together(path: str) -> None:
    status, out, err = run("list", path, "q", "--payload-contains", "", "--group", "")
    assert (status, out) == (1, "")
    assert err.startswith("deadletter list: validation failed: ")
    assert "payload_contains: must not be empty" in err and "group:" in err
    assert run("list", path, "q", "--delayed", "--not-delayed")[0] == 2  # not both
    assert run("list", path, "q", "--created-after", "yesterday")[0] == 2


# ---------------------------------------------------------------------------------------------
# Bulk forms and their dry runs


def test_a_dry_run_prints_the_exact_count_and_changes_nothing(path: str) -> None:
    before = state(path)
    for command, options, line in [
        ("replay", [], "would replay 2"),
        ("replay", ["--payload-contains", "42"], "would replay 1"),
        ("delete", [], "would delete 3"),
        ("delete", ["--status", "succeeded"], "would delete 1"),
        ("retry-now", [], "would retry now 1"),
        ("retry-now", ["--limit", "1", "--payload-contains", "nothing"], "would retry now 0"),
    ]:
        assert run(command, path, "q", "--all", "--dry-run", *options) == (0, line + "\n", "")
    assert run("replay", path, "q", "--all", "--dry-run", "--json") == (
        0,
        '{\n  "count": 2,\n  "dry_run": true\n}\n',
        "",
    )
    assert state(path) == before


def test_replay_all_takes_the_filters(path: str) -> None:
    assert run("replay", path, "q", "--all", "--group", "g1") == (0, "replayed  1\n", "")
    assert [m.status for m in state(path)] == ["pending", "dead", "pending", "succeeded", "pending"]


def test_delete_all_deletes_the_finished_messages_the_filters_select(path: str) -> None:
    assert run("delete", path, "q", "--all", "--error-contains", "HTTP") == (
        0,
        "deleted  2\n",
        "",
    )
    assert [m.id for m in state(path)] == [3, 4, 5]
    assert run("delete", path, "q", "--all", "--json") == (
        0,
        '{\n  "count": 1,\n  "dry_run": false\n}\n',
        "",
    )
    assert [m.id for m in state(path)] == [3, 5]
    status, out, err = run("delete", path, "q", "--all", "--status", "pending")
    assert (status, out) == (1, "")
    assert "status: must be succeeded or dead (only finished messages are deleted)" in err


def test_delete_all_goes_in_chunks_with_progress_on_a_terminal(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_commands, "CHUNK", 2)
    monkeypatch.setattr(_output, "PROGRESS_EVERY", 0)
    out, err = io.StringIO(), Terminal()
    assert cli.main(["delete", path, "q", "--all"], out=out, err=err) == 0
    assert out.getvalue() == "deleted  3\n"
    assert err.getvalue() == "\rdeleted 2\rdeleted 3\r\x1b[K"


def test_retry_now_all_makes_the_delayed_messages_due(path: str) -> None:
    assert run("retry-now", path, "q", "--all") == (0, "retried_now  1\n", "")
    [message] = [m for m in state(path) if m.id == 3]
    assert message.retry_after is None
    assert run("retry-now", path, "q", "--all") == (0, "retried_now  0\n", "")
    status, _, err = run("retry-now", path, "q", "--all", "--status", "dead")
    assert status == 1 and "status: must be pending (only pending" in err


# ---------------------------------------------------------------------------------------------
# retry-now ID, and the usage of the forms


def test_retry_now_one_message(path: str) -> None:
    status, out, err = run("retry-now", path, "q", "3")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "id           3",
        "queue        q",
        "status       pending",
        "retry_count  0",
        "retry_after  -",
    ]
    assert run("retry-now", path, "q", "1") == (
        1,
        "",
        "deadletter retry-now: cannot retry now message 1: it is dead\n",
    )
    assert run("retry-now", path, "q", "99")[0] == 1


@pytest.mark.parametrize("command", ["replay", "delete", "retry-now"])
def test_an_id_or_all_not_both_nor_neither(path: str, command: str) -> None:
    before = state(path)
    assert run(command, path, "q")[0] == 2
    assert run(command, path, "q", "1", "--all")[0] == 2
    assert run(command, path, "q", "1", "--dry-run")[0] == 2
    assert run(command, path, "q", "1", "--group", "g1")[0] == 2
    assert run(command, path, "q", "1", "--limit", "1")[0] == 2
    assert state(path) == before
