"""The `deadletter` console script: tables, --json, exit statuses (0, 1 on a deadletter error with
its message on stderr, 2 on a usage error) and progress only on a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import deadletter
import pytest
from deadletter import cli

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCRIPT = Path(sys.executable).with_name("deadletter")


def run(*argv: str) -> tuple[int, str, str]:
    """`deadletter ARGV` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        status = cli.main(list(argv), out=out, err=err)
    except SystemExit as exit:  # argparse's usage errors
        status = int(exit.code or 0)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def path(tmp_path: Path) -> str:
    """A database with queue "emails": 1 dead (two-line error), 2 succeeded, 3 pending."""
    file = tmp_path / "jobs.db"
    with deadletter.open(file, clock=lambda: T0) as db:
        q = db.queue("emails")
        q.enqueue("one")
        q.enqueue('{"to": "b"}', max_retries=5)
        q.enqueue("three " + "x" * 60)
        m = q.claim()
        assert m is not None
        q.fail(m.id, "SMTP 550\nmailbox unavailable", lease_token=m.lease_token, retryable=False)
        m = q.claim()
        assert m is not None
        q.succeed(m.id, lease_token=m.lease_token)
    return str(file)


def test_list_prints_an_aligned_table(path: str) -> None:
    status, out, err = run("list", path, "emails")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "id  status     retries  updated_at                last_error                     payload",
        " 1  dead       1/3      2026-01-01T00:00:00.000Z  SMTP 550\\nmailbox unavailable  one",
        " 2  succeeded  0/5      2026-01-01T00:00:00.000Z  -                              "
        '{"to": "b"}',
        " 3  pending    0/3      2026-01-01T00:00:00.000Z  -                              "
        "three xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…",
    ]


def test_list_filters_and_pages(path: str) -> None:
    assert run("list", path, "emails", "--status", "dead")[1].splitlines()[1].startswith(" 1  dead")
    _, out, _ = run("list", path, "emails", "--limit", "1", "--after-id", "1")
    assert [line.split()[0] for line in out.splitlines()] == ["id", "2"]
    assert run("list", path, "other")[1] == "id  status  retries  updated_at  last_error  payload\n"


def test_list_json_is_the_messages_as_the_http_api_writes_them(path: str) -> None:
    status, out, _ = run("list", path, "emails", "--status", "dead", "--json")
    assert status == 0
    assert json.loads(out) == [
        {
            "id": 1,
            "queue": "emails",
            "payload": "one",
            "status": "dead",
            "retry_count": 1,
            "max_retries": 3,
            "retry_after": None,
            "last_error": "SMTP 550\nmailbox unavailable",
            "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
            "lease_token": None,
            "lease_expires_at": None,
        }
    ]


def test_show_prints_every_field_then_the_payload(path: str) -> None:
    status, out, _ = run("show", path, "emails", "3")
    assert status == 0
    assert out.splitlines() == [
        "id                3",
        "queue             emails",
        "status            pending",
        "retry_count       0",
        "max_retries       3",
        "retry_after       -",
        "last_error        -",
        "created_at        2026-01-01T00:00:00.000Z",
        "updated_at        2026-01-01T00:00:00.000Z",
        "lease_expires_at  -",
        "payload:",
        "three " + "x" * 60,  # never cut
    ]
    assert json.loads(run("show", path, "emails", "1", "--json")[1])["last_error"] == (
        "SMTP 550\nmailbox unavailable"
    )


def test_replay_sends_a_dead_message_back(path: str) -> None:
    status, out, _ = run("replay", path, "emails", "1")
    assert status == 0
    assert out.splitlines() == [
        "id           1",
        "queue        emails",
        "status       pending",
        "retry_count  0",
    ]
    with deadletter.open(path) as db:
        assert db.queue("emails").get(1).status == "pending"


def test_enqueue_one_payload(path: str) -> None:
    status, out, _ = run("enqueue", path, "emails", "hello", "--max-retries", "7")
    assert status == 0
    assert out.splitlines() == [
        "id           4",
        "queue        emails",
        "status       pending",
        "max_retries  7",
    ]
    status, out, _ = run("enqueue", path, "emails", "--json", "again")  # options anywhere
    message = json.loads(out)
    assert (message["id"], message["payload"], message["max_retries"]) == (5, "again", 3)
    assert set(message) == set(json.loads(run("show", path, "emails", "1", "--json")[1]))


def test_enqueue_reads_one_payload_per_stdin_line(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"n": 1}\n\nlast without newline'))
    status, out, err = run("enqueue", path, "bulk", "-")
    assert (status, err) == (0, "")
    assert out.splitlines() == ["enqueued  3", "first_id  4", "last_id   6"]
    with deadletter.open(path) as db:
        payloads = [m.payload for m in db.queue("bulk").list()]
    assert payloads == ['{"n": 1}', "", "last without newline"]


def test_a_deadletter_error_exits_1_with_its_message_on_stderr(path: str) -> None:
    assert run("replay", path, "emails", "3") == (
        1,
        "",
        "deadletter replay: cannot replay message 3: it is pending\n",
    )
    assert run("show", path, "emails", "99") == (
        1,
        "",
        'deadletter show: message 99 not found in queue "emails"\n',
    )
    status, out, err = run("list", path, "emails", "--status", "bogus")
    assert (status, out) == (1, "")
    assert err.startswith("deadletter list: validation failed: status: must be one of")
    status, _, err = run("enqueue", path, "x" * 256, "p")
    assert status == 1 and "queue: must be at most 255 characters" in err


def test_a_missing_database_file_is_an_error_not_a_new_file(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    assert run("list", str(missing), "q") == (
        1,
        "",
        f"deadletter list: {missing}: no such database file\n",
    )
    assert not missing.exists()


def test_a_bad_stdin_line_names_its_line_and_what_was_enqueued_before(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    too_long = "x" * (1 << 20) + "x"  # over the default 1 MiB limit
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"ok\n{too_long}\nnever read\n"))
    status, _, err = run("enqueue", path, "q", "-")
    assert status == 1
    assert err.startswith("deadletter enqueue: line 2: validation failed: payload")
    assert err.endswith("(the 1 lines before it were enqueued)\n")
    with deadletter.open(path) as db:
        assert [m.payload for m in db.queue("q").list()] == ["ok"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nope"],
        ["list", "db"],
        ["list", "db", "q", "--limit", "ten"],
        ["show", "db", "q", "x"],
        ["enqueue", "db", "q"],
        ["serve", "db", "--workers", "0"],
        ["list", "db", "q", "--unknown"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    status, out, _ = run(*argv)
    assert status == 2 and out == ""


def test_the_console_script_is_installed(path: str) -> None:
    """The real `deadletter` executable, its exit statuses, and quiet stderr when piped."""
    result = subprocess.run(
        [SCRIPT, "enqueue", path, "piped", "-"],
        input="a\nb\nc\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[0] == "enqueued  3"
    usage = subprocess.run([SCRIPT, "list"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: deadletter list")
    error = subprocess.run([SCRIPT, "show", path, "piped", "99"], capture_output=True, check=False)
    assert error.returncode == 1


def test_enqueue_shows_progress_on_a_terminal(path: str) -> None:
    """stderr on a pseudo-terminal: progress lines; piped (the test above): nothing."""
    primary, secondary = pty.openpty()
    with subprocess.Popen(
        [SCRIPT, "enqueue", path, "tty", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=secondary,
    ) as proc:
        os.close(secondary)
        out, _ = proc.communicate("".join(f"{n}\n" for n in range(50)).encode(), timeout=60)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    assert proc.returncode == 0
    assert out.decode().splitlines()[0] == "enqueued  50"
    assert b"\renqueued 1" in shown  # the first progress line, rewritten in place
    assert shown.endswith(b"\r\x1b[K")  # and cleared at the end
