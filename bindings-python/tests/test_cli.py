"""The `deadletter` console script, command by command: tables, --json, exit statuses (0, 1 on a
deadletter error with its message on stderr, 2 on a usage error) and progress only on a
terminal. One file (about 750 lines), a section per command, since they share one runner and
one database fixture."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import socket
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import deadletter
import pytest
from deadletter import cli
from deadletter.cli import _arguments, _commands, _output

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
    assert run("list", path, "other")[:2] == (0, "id  status  retries  updated_at  last_error  payload\n")


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
            "idempotency_key": None,
            "deduplicated": False,
            "first_failed_at": "2026-01-01T00:00:00.000Z",
            "dead_at": "2026-01-01T00:00:00.000Z",
            "errors": [
                {
                    "attempt": 1,
                    "error": "SMTP 550\nmailbox unavailable",
                    "at": "2026-01-01T00:00:00.000Z",
                }
            ],
            "errors_dropped": 0,
            "replay_count": 0,
            "replayed_at": None,
            "group": None,
            "expires_at": None,
            "moved_from": None,
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
        "idempotency_key   -",
        "first_failed_at   -",
        "dead_at           -",
        "errors_dropped    0",
        "replay_count      0",
        "replayed_at       -",
        "group             -",
        "expires_at        -",
        "payload:",
        "three " + "x" * 60,  # never cut
    ]
    assert json.loads(run("show", path, "emails", "1", "--json")[1])["last_error"] == (
        "SMTP 550\nmailbox unavailable"
    )


def test_show_prints_the_failed_attempts_uncut(tmp_path: Path) -> None:
    file = tmp_path / "h.db"
    long = "Traceback: " + " ".join(["frame"] * 20)
    with deadletter.open(file, clock=lambda: T0) as db:
        q = db.queue("q", backoff=deadletter.Backoff(initial=0))
        q.enqueue("p", max_retries=2)
        for error in ("timeout", long):
            m = q.claim()
            assert m is not None
            q.fail(m.id, error, lease_token=m.lease_token)
    status, out, _ = run("show", str(file), "q", "1")
    assert status == 0
    lines = out.splitlines()
    assert lines[2] == "status            dead"
    assert lines[6] == f"last_error        {long}"
    assert lines[lines.index("errors:") :] == [
        "errors:",
        "attempt  at                        error",
        "      1  2026-01-01T00:00:00.000Z  timeout",
        f"      2  2026-01-01T00:00:00.000Z  {long}",
        "payload:",
        "p",
    ]


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\x01\x7f\r\nend\t"
"""A payload and an error that would drive a terminal: OSC (set the title, ended by BEL), CSI
(clear the screen; also as the one-byte C1 CSI), SOH, DEL, CR, LF, TAB."""
SHOWN = r"\x1b]0;owned\x07\x1b[2J\x9b31m\x01\x7f\r\nend\t"
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # any but the lines' own \n


def test_people_s_output_shows_control_characters_escaped(tmp_path: Path) -> None:
    file = tmp_path / "hostile.db"
    with deadletter.open(file, clock=lambda: T0) as db:
        q = db.queue("q")
        q.enqueue(HOSTILE)
        m = q.claim()
        assert m is not None
        q.fail(m.id, HOSTILE, lease_token=m.lease_token, retryable=False)
    status, listed, _ = run("list", str(file), "q")
    assert status == 0 and not RAW_CONTROL.search(listed), repr(listed)
    row = f" 1  dead    1/3      2026-01-01T00:00:00.000Z  {SHOWN}  {SHOWN}"
    assert listed.splitlines()[1] == row
    status, shown, _ = run("show", str(file), "q", "1")
    assert status == 0 and not RAW_CONTROL.search(shown), repr(shown)
    lines = shown.splitlines()
    assert lines[6] == f"last_error        {SHOWN}"
    assert lines[-4:] == [
        "attempt  at                        error",
        f"      1  2026-01-01T00:00:00.000Z  {SHOWN}",
        "payload:",
        SHOWN,
    ]
    # --json is JSON: the exact text, escaped by JSON.
    assert json.loads(run("show", str(file), "q", "1", "--json")[1])["payload"] == HOSTILE
    # An error message that carries such text is escaped on stderr too.
    status, _, err = run("list", f"{tmp_path}/x\x1b[2J.db", "q")
    assert (status, err) == (
        1,
        f"deadletter list: {tmp_path}/x\\x1b[2J.db: no such database file\n",
    )


def test_replay_sends_a_dead_message_back(path: str) -> None:
    status, out, _ = run("replay", path, "emails", "1")
    assert status == 0
    assert out.splitlines() == [
        "id            1",
        "queue         emails",
        "status        pending",
        "replay_count  1",
    ]
    with deadletter.open(path) as db:
        assert db.queue("emails").get(1).status == "pending"


def test_replay_takes_an_id_or_all_and_says_which_when_given_both_or_neither(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("replay", path, "emails", "1", "--all")[0] == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "deadletter replay: error: give a message ID or --all, not both"
    )
    assert run("replay", path, "emails")[0] == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "deadletter replay: error: give a message ID or --all"
    )
    with deadletter.open(path) as db:
        assert db.queue("emails").get(1).status == "dead"


def test_delete_removes_one_finished_message(path: str) -> None:
    status, out, err = run("delete", path, "emails", "1")
    assert (status, err) == (0, "")
    assert out.splitlines() == ["id      1", "queue   emails", "status  dead"]
    status, out, _ = run("delete", path, "emails", "2", "--json")
    deleted = json.loads(out)
    assert (status, deleted["id"], deleted["status"], deleted["payload"]) == (
        0,
        2,
        "succeeded",
        '{"to": "b"}',
    )
    with deadletter.open(path) as db:
        assert [m.id for m in db.queue("emails").list()] == [3]


def test_delete_reports_a_conflict_and_a_missing_message_as_the_others_do(path: str) -> None:
    assert run("delete", path, "emails", "3") == (
        1,
        "",
        "deadletter delete: cannot delete message 3: it is pending\n",
    )
    assert run("delete", path, "emails", "99") == (
        1,
        "",
        'deadletter delete: message 99 not found in queue "emails"\n',
    )
    assert run("delete", path, "emails")[0] == 2  # no ID: a usage error
    with deadletter.open(path) as db:
        assert [m.id for m in db.queue("emails").list()] == [1, 2, 3]  # nothing deleted


def test_enqueue_one_payload(path: str) -> None:
    status, out, _ = run("enqueue", path, "emails", "hello", "--max-retries", "7")
    assert status == 0
    assert out.splitlines() == [
        "id               4",
        "queue            emails",
        "status           pending",
        "max_retries      7",
        "retry_after      -",
        "idempotency_key  -",
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


def test_enqueue_drops_the_crlf_line_endings_of_stdin(path: str) -> None:
    """Through the real script's stdin: a line ending CRLF loses both; a CR elsewhere stays."""
    result = subprocess.run(
        [SCRIPT, "enqueue", path, "crlf", "-"],
        input=b"a\r\nb\r\n\r\nc\rd\r\nlf\nlast\r",
        capture_output=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    with deadletter.open(path) as db:
        payloads = [m.payload for m in db.queue("crlf").list()]
    assert payloads == ["a", "b", "", "c\rd", "lf", "last\r"]


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
    """Lines go in chunks of `_commands.CHUNK` (1000; 2 here), each all or nothing."""
    monkeypatch.setattr(_commands, "CHUNK", 2)
    too_long = "x" * (1 << 20) + "x"  # over the default 1 MiB limit
    lines = ["ok 1", "ok 2", "ok 3", too_long, "never read"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines)))
    status, _, err = run("enqueue", path, "q", "-")
    assert status == 1
    assert err == (
        "deadletter enqueue: line 4: payload: is 1048577 bytes; the limit is 1048576 "
        "(lines 3 to 4 were not enqueued; the 2 before them were)\n"
    )
    with deadletter.open(path) as db:
        assert [m.payload for m in db.queue("q").list()] == ["ok 1", "ok 2"]


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
        ["serve", "db", "--port", "99999"],
        ["serve", "db", "--port", "-1"],
        ["serve", "db", "--port", "http"],
        ["list", "db", "q", "--unknown"],
        ["list", "db", "q", "--status", "bogus"],
        ["list", "db", "q", "--limit", "0"],
        ["list", "db", "q", "--limit", "1001"],
        ["replay", "db", "q", "--all", "--status", "daed"],
        ["enqueue", "db", "q", "x", "--max-retries", "11"],
        ["settings", "db", "q", "--max-retries", "0"],
        ["settings", "db", "q", "--backoff-multiplier", "0.5"],
        ["serve", "db", "--token", "t", "--token-file", "f"],
        ["stats"],
        ["replay", "db", "q"],  # neither ID nor --all
        ["replay", "db", "q", "1", "--all"],
        ["replay", "db", "q", "1", "--limit", "5"],  # filters go with --all
        ["replay", "db", "q", "--all", "--dead-before", "2026-01-01T00:00:00+01:00"],
        ["replay", "db", "q", "--all", "--dead-after", "yesterday"],
        ["replay", "db", "q", "--all", "--limit", "0"],
        ["purge", "db", "q", "--older-than", "7d"],  # --status is required
        ["purge", "db", "q", "--status", "dead"],  # --older-than too
        ["purge", "db", "q", "--status", "pending", "--older-than", "1"],
        ["purge", "db", "q", "--status", "dead", "--older-than", "a week"],
        ["enqueue", "db", "q", "-", "--idempotency-key", "k"],
        ["enqueue", "db", "q", "x", "--delay", "-5"],
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PATH "db" is relative: in a directory of its own, a command that opened (so created) it
    # before refusing its arguments is seen, and leaves no file where the tests run.
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(*argv)
    assert status == 2 and out == ""
    assert list(tmp_path.iterdir()) == []  # a usage error creates nothing


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{path}", "q", "1_0"],  # int() would read 10
        ["show", "{path}", "q", "\u0661"],  # ARABIC-INDIC DIGIT ONE: int() would read 1
        ["list", "{path}", "q", "--limit", " 5"],
        ["replay", "{path}", "q", "--all", "--limit", "1e3"],
        ["enqueue", "{path}", "q", "x", "--max-retries", "0x3"],
        ["serve", "{path}", "--port", "8_000"],
    ],
)
def test_integer_arguments_are_ascii_digits_only(
    path: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with deadletter.open(path) as db:
        for payload in ("a",) * 10:
            db.queue("q").enqueue(payload)
    status, out, _ = run(*(a.format(path=path) for a in argv))
    assert (status, out) == (2, "")
    assert "is not an integer" in capsys.readouterr().err  # argparse writes to sys.stderr
    with deadletter.open(path) as db:
        assert [m.status for m in db.queue("q").list()] == ["pending"] * 10


@pytest.mark.parametrize(
    "argv, error",
    [
        (["--port", "99999"], "argument --port: must be 0..65535, got 99999"),
        (["--port", "-1"], "argument --port: must be 0..65535, got -1"),
        (["--host", "256.1.1.1"], "cannot listen on 256.1.1.1 port 8000: "),
        (["--host", "192.0.2.7"], "cannot listen on 192.0.2.7 port 8000: "),  # not this machine's
    ],
)
def test_serve_reports_an_address_it_cannot_listen_on_as_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    status, out, _ = run("serve", str(tmp_path / "s.db"), *argv)
    err = capsys.readouterr().err
    assert (status, out) == (2, "")
    assert err.startswith("usage: deadletter serve ")
    assert err.splitlines()[-1].startswith(f"deadletter serve: error: {error}"), err
    assert "Traceback" not in err and "WARNING" not in err
    assert not (tmp_path / "s.db").exists()  # refused before anything started


def test_serve_reports_a_port_in_use_as_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        status, _, _ = run("serve", str(tmp_path / "s.db"), "--port", port)
    last = capsys.readouterr().err.splitlines()[-1]
    assert (status, last) == (
        2,
        f"deadletter serve: error: cannot listen on 127.0.0.1 port {port}: Address already in use",
    )


@pytest.mark.parametrize("module", ["uvicorn", "starlette", "prometheus_client"])
def test_serve_without_the_server_extra_says_how_to_install_it(tmp_path: Path, module: str) -> None:
    hidden = (
        f"import sys; sys.modules[{module!r}] = None; from deadletter import cli; "
        f"sys.exit(cli.main(['serve', {str(tmp_path / 's.db')!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"deadletter serve: `deadletter serve` needs the server extra ({module} is missing): "
        "pip install 'deadletter[server]'\n"
    )


def test_help_lists_only_the_options_of_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("serve", "--help")[0] == 0
    serve = capsys.readouterr().out
    assert "--schema" in serve and "--json" not in serve
    assert "port, 0..65535 (default 8000)" in serve
    assert run("show", "--help")[0] == 0
    show = capsys.readouterr().out
    assert "--json" in show
    assert re.search(r"^  ID +the message's id$", show, re.MULTILINE), show


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
        out, _ = proc.communicate("".join(f"{n}\n" for n in range(2500)).encode(), timeout=60)
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
    assert out.decode().splitlines()[0] == "enqueued  2500"
    assert b"\renqueued 1000" in shown  # the first chunk's progress line, rewritten in place
    assert shown.endswith(b"\r\x1b[K")  # and cleared at the end


# ---------------------------------------------------------------------------------------------
# stats, replay --all, purge, enqueue options


class Terminal(io.StringIO):
    """stderr as a terminal, for the progress lines."""

    def isatty(self) -> bool:
        return True


def dead_letters(file: Path, errors: list[str], *, died: datetime = T0) -> None:
    """One dead message per error text, in queue "q", all dead at ``died`` + their index in ms."""
    with deadletter.open(file, clock=lambda: died) as db:
        q = db.queue("q")
        q.enqueue_many(["p"] * len(errors))
    for n, error in enumerate(errors):
        moment = died + timedelta(milliseconds=n)
        with deadletter.open(file, clock=lambda: moment) as db:
            q = db.queue("q")
            m = q.claim()
            assert m is not None
            q.fail(m.id, error, lease_token=m.lease_token, retryable=False)


def test_stats_of_every_queue_and_of_one(path: str) -> None:
    with deadletter.open(path, clock=lambda: T0) as db:
        db.queue("later").enqueue("x", delay=90)
    before = datetime.now(timezone.utc) - T0
    status, out, err = run("stats", path, "--json")
    after = datetime.now(timezone.utc) - T0
    assert (status, err) == (0, "")
    [emails, later] = json.loads(out)
    assert before.total_seconds() <= emails.pop("oldest_dead_age") <= after.total_seconds()
    assert before.total_seconds() <= emails.pop("oldest_due_age") <= after.total_seconds()
    assert emails == {
        "queue": "emails",
        "pending": 1,
        "processing": 0,
        "succeeded": 1,
        "dead": 1,
        "expired": 0,
        "delayed": 0,
        "next_due_at": None,
        "paused": False,
        "expired_dead": 0,
        "expired_discarded": 0,
    }
    # Enqueued at T0 with a delay of 90 s: due long ago by the system clock the CLI reads.
    assert (later["pending"], later["delayed"], later["next_due_at"]) == (1, 0, None)

    status, out, _ = run("stats", path)
    header, first, second = out.splitlines()
    assert header.split() == [
        "queue",
        "pending",
        "processing",
        "succeeded",
        "dead",
        "expired",
        "delayed",
        "next_due_at",
        "oldest_due_age",
        "oldest_dead_age",
        "paused",
        "expired_dead",
        "expired_discarded",
    ]
    assert first.split()[:8] == ["emails", "1", "0", "1", "1", "0", "0", "-"]
    assert first.split()[-3:] == ["False", "0", "0"]
    # The two ages since T0, e.g. "334d 19h  334d 19h" ("334d  334d" in the first hour of a day).
    assert re.fullmatch(r"(\d+d( \d+h)?) \1", " ".join(first.split()[8:-3]))
    assert second.split()[:8] == ["later", "1", "0", "0", "0", "0", "0", "-"]

    status, out, _ = run("stats", path, "emails")
    lines = out.splitlines()
    assert lines[:5] == [
        "queue              emails",
        "pending            1",
        "processing         0",
        "succeeded          1",
        "dead               1",
    ]
    assert re.fullmatch(r"oldest_dead_age    \d+d( \d+h)?", lines[9])
    assert lines[10:] == ["paused             False", "expired_dead       0", "expired_discarded  0"]
    assert run("stats", path, "none", "--json")[1].count('"pending": 0') == 1


def test_durations_in_tables() -> None:
    assert [
        _output.duration(timedelta(seconds=s))
        for s in (0, 0.5, 42, 100, 3600, 5400, 86400 * 2 + 3600 * 4 + 5, 86400)
    ] == ["0s", "0.5s", "42s", "1m 40s", "1h", "1h 30m", "2d 4h", "1d"]


def test_replay_all_with_its_filters(tmp_path: Path) -> None:
    file = tmp_path / "dead.db"
    dead_letters(file, ["HTTP 503", "HTTP 410", "HTTP 503", "timeout"])  # dead at T0 + 0..3 ms
    db = str(file)
    status, out, err = run("replay", db, "q", "--all", "--error-contains", "503", "--limit", "1")
    assert (status, out, err) == (0, "replayed  1\n", "")
    status, out, _ = run(
        "replay",
        db,
        "q",
        "--all",
        "--dead-after",
        "2026-01-01T00:00:00.001Z",
        "--dead-before",
        "2026-01-01T00:00:00.003+00:00",
        "--json",
    )
    assert (status, json.loads(out)) == (0, {"count": 2, "dry_run": False})  # deaths at 1, 2 ms
    with deadletter.open(file) as opened:
        assert [m.status for m in opened.queue("q").list()] == [
            "pending",
            "pending",
            "pending",
            "dead",
        ]
    assert run("replay", db, "q", "--all") == (0, "replayed  1\n", "")
    assert run("replay", db, "q", "--all") == (0, "replayed  0\n", "")


def test_replay_all_goes_in_chunks_with_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "dead.db"
    dead_letters(file, ["e"] * 5)
    monkeypatch.setattr(_commands, "CHUNK", 2)
    monkeypatch.setattr(_output, "PROGRESS_EVERY", 0)
    out, err = io.StringIO(), Terminal()
    assert cli.main(["replay", str(file), "q", "--all"], out=out, err=err) == 0
    assert out.getvalue() == "replayed  5\n"
    assert err.getvalue() == "\rreplayed 2\rreplayed 4\rreplayed 5\r\x1b[K"
    dead_letters(file, ["e"] * 3)  # ids 6-8
    out, err = io.StringIO(), io.StringIO()  # piped: quiet
    assert cli.main(["replay", str(file), "q", "--all", "--limit", "3"], out=out, err=err) == 0
    assert (out.getvalue(), err.getvalue()) == ("replayed  3\n", "")


def test_replay_all_leaves_the_messages_that_die_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its upper bound is when it started: a message replayed and killed again by a worker
    during the run is not replayed a second time (the calls end)."""
    file = tmp_path / "dead.db"
    now = datetime.now(timezone.utc)
    dead_letters(file, ["e"] * 3, died=now - timedelta(seconds=5))
    with deadletter.open(file, clock=lambda: now + timedelta(seconds=5)) as db:
        db.queue("q").enqueue("dies later")
        m = db.queue("q").claim_many(10)
        assert [x.id for x in m] == [4]
        db.queue("q").fail(4, "later", lease_token=m[0].lease_token, retryable=False)
    assert run("replay", str(file), "q", "--all") == (0, "replayed  3\n", "")
    assert run("replay", str(file), "q", "--all", "--dead-before", "9999-12-31T00:00:00Z") == (
        0,
        "replayed  1\n",
        "",
    )


def test_purge(path: str) -> None:
    assert run("purge", path, "emails", "--status", "dead", "--older-than", "9999d") == (
        0,
        "purged  0\n",
        "",
    )
    status, out, _ = run("purge", path, "emails", "--status", "dead", "--older-than", "15m")
    assert (status, out) == (0, "purged  1\n")  # dead since T0, long before now
    status, out, _ = run(
        "purge", path, "emails", "--status", "succeeded", "--older-than", "1.5h", "--json"
    )
    assert json.loads(out) == {"count": 1, "dry_run": False}
    with deadletter.open(path) as db:
        assert [m.id for m in db.queue("emails").list()] == [3]


def test_purge_durations() -> None:
    assert [_arguments.seconds(t).total_seconds() for t in ("90", "90s", "1.5m", "12h", "7d", ".5")] == [
        90,
        90,
        90,
        43200,
        604800,
        0.5,
    ]


def test_enqueue_with_an_idempotency_key_and_a_delay(path: str) -> None:
    status, out, _ = run("enqueue", path, "keyed", "first", "--idempotency-key", "k-1")
    assert status == 0
    assert out.splitlines()[-1] == "idempotency_key  k-1"
    status, out, _ = run("enqueue", path, "keyed", "second", "--idempotency-key", "k-1")
    assert status == 0
    assert out.splitlines()[0] == "id               4"  # the first one
    assert out.splitlines()[-1] == "deduplicated     True"
    status, out, _ = run("enqueue", path, "keyed", "later", "--delay", "2h", "--json")
    message = json.loads(out)
    due = datetime.fromisoformat(message["retry_after"].replace("Z", "+00:00"))
    created = datetime.fromisoformat(message["created_at"].replace("Z", "+00:00"))
    assert due - created == timedelta(hours=2)
    with deadletter.open(path) as db:
        assert [m.payload for m in db.queue("keyed").list()] == ["first", "later"]
    status, _, err = run("enqueue", path, "keyed", "x", "--idempotency-key", "")
    assert (status, err) == (
        1,
        "deadletter enqueue: validation failed: idempotency_key: must not be empty\n",
    )


def test_enqueue_lines_with_options(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\nb\n"))
    status, out, _ = run("enqueue", path, "opts", "-", "--max-retries", "5", "--delay", "60")
    assert (status, out.splitlines()[0]) == (0, "enqueued  2")
    with deadletter.open(path) as db:
        messages = db.queue("opts").list()
    delays = [m.retry_after - m.created_at for m in messages if m.retry_after is not None]
    assert [m.max_retries for m in messages] == [5, 5]
    assert delays == [timedelta(seconds=60)] * 2


@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["list", "q"],
        ["show", "q", "1"],
        ["enqueue", "q", "x"],
        ["replay", "q", "--all"],
        ["delete", "q", "--all", "--dry-run"],
        ["purge", "q", "--status", "dead", "--older-than", "0"],
        ["settings", "q", "--max-retries", "1"],
        ["pause", "q"],
    ],
)
def test_a_one_shot_command_refuses_memory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    """Finding F11: `enqueue :memory: ...` created a file named :memory: (and -wal, -shm) in the
    working directory, which later commands read back; a command's in-memory database would be
    empty every time. ./:memory: names that file."""
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(argv[0], ":memory:", *argv[1:])
    assert (status, out) == (2, "")
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"deadletter {argv[0]}: error: :memory: is an in-memory database, empty at every "
        "command: give a SQLite file (./:memory: for a file of that name) or a PostgreSQL URL; "
        "only `deadletter serve` takes :memory:, for a demo"
    )
    assert list(tmp_path.iterdir()) == []
    assert run("enqueue", "./:memory:", "q", "kept")[0] == 0
    status, out, _ = run("list", "./:memory:", "q", "--json")
    assert status == 0 and [m["payload"] for m in json.loads(out)] == ["kept"]


@pytest.mark.parametrize(
    "argv, error",
    [
        (["serve", "--port", "9" * 5000], "argument --port: must be 0..65535, got an integer of 5000 digits"),
        (
            ["purge", "q", "--status", "dead", "--older-than", "99999999999999999999d"],
            "argument --older-than: '99999999999999999999d' is out of range",
        ),
        (
            ["enqueue", "q", "x", "--delay", "9" * 400],
            f"argument --delay: '{'9' * 400}' is out of range",
        ),
    ],
)
def test_numbers_too_large_to_read_are_usage_errors_not_tracebacks(
    path: str, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    """Siblings of finding F2: int() of more than 4 300 digits raised ValueError (argparse: a
    usage line quoting the whole number), a duration past timedelta's range OverflowError (a
    traceback)."""
    status, out, _ = run(argv[0], path, *argv[1:])
    assert (status, out) == (2, "")
    assert capsys.readouterr().err.splitlines()[-1] == f"deadletter {argv[0]}: error: {error}"
    assert run("show", path, "emails", "1")[0] == 0  # leading zeros and small ids still read
    assert run("show", path, "emails", "0" * 30 + "1")[0] == 0


@pytest.mark.parametrize(
    "argv, error",
    [
        (["show", "emails", "9223372036854775808"], "id: must be between 1 and 9223372036854775807"),
        (["show", "emails", "9" * 23], "id: must be between 1 and 9223372036854775807"),
        (["show", "emails", "9" * 5000], "id: must be between 1 and 9223372036854775807"),
        (["show", "emails", "-" + "9" * 30], "id: must be between 1 and 9223372036854775807"),
        (["replay", "emails", "9" * 21], "id: must be between 1 and 9223372036854775807"),
        (["list", "emails", "--after-id", "-" + "9" * 21], "after_id: must be between 0 and 9223372036854775807"),
    ],
)
def test_an_id_out_of_range_is_exit_1_whatever_its_digit_count(
    path: str, argv: list[str], error: str
) -> None:
    """Finding N3 (session 7): 9223372036854775808 was exit 1 (the core's out_of_range) and
    99999999999999999999999 exit 2 (argparse: "an integer of 23 digits is out of range"). The
    README: 1 on a deadletter error, and over HTTP "a number too large for its field is 422
    out_of_range, however many digits it has"."""
    status, out, err = run(argv[0], path, *argv[1:])
    assert (status, out) == (1, "")
    assert err.splitlines()[-1] == f"deadletter {argv[0]}: validation failed: {error}"


def test_invisible_format_characters_are_escaped_and_old_queues_under_them_still_work(
    tmp_path: Path,
) -> None:
    """Findings N6, N7 (session 7): ZERO WIDTH SPACE, WORD JOINER, the BOM, SOFT HYPHEN and tags
    went to the terminal as they are: a queue ``emails\u200b`` read as ``emails`` and one named
    ``\u2060`` as an empty cell. Enqueue now refuses such names; a file that holds them from
    before (written here with the sqlite3 module, the file closed before deadletter opens it)
    shows them escaped, and its messages are still claimed, failed, replayed and listed."""
    file = tmp_path / "old.db"
    with deadletter.open(file, clock=lambda: T0) as db:
        q = db.queue("emails")
        q.enqueue("pay\u200b \ufeffnow\u00ad \U000e0041 \u2764\ufe0f a\u200db")
        db.queue("blank").enqueue("x")
        with pytest.raises(deadletter.ValidationError):
            db.queue("emails\u200b").enqueue("x")
    with closing(sqlite3.connect(file)) as raw, raw:
        raw.execute("UPDATE messages SET queue = 'emails\u200b' WHERE queue = 'emails'")
        raw.execute("UPDATE messages SET queue = '\u2060' WHERE queue = 'blank'")
    status, stats, _ = run("stats", str(file))
    assert status == 0
    assert [line.split()[0] for line in stats.splitlines()[1:]] == [r"emails\u200b", r"\u2060"]
    status, listed, _ = run("list", str(file), "emails\u200b")
    assert status == 0
    kept = "\u2764\ufe0f a\u200db"  # a variation selector and a joiner show as they are
    assert listed.splitlines()[1].endswith(r"pay\u200b \ufeffnow\xad \U000e0041 " + kept)
    with deadletter.open(file, clock=lambda: T0) as db:
        q = db.queue("emails\u200b")
        m = q.claim()
        assert m is not None and m.id == 1
        q.fail(m.id, "boom", lease_token=m.lease_token, retryable=False)
        assert q.replay(1).status == "pending"
        assert q.stats().pending == 1 and db.queue("\u2060").get(2).payload == "x"
    assert run("replay", str(file), "\u2060", "--all")[0] == 0


def test_bidirectional_controls_are_escaped_too(tmp_path: Path) -> None:
    """Finding F10: U+202E (right-to-left override) went to the terminal as it is, and showed
    the rest of the line reversed (a payload could disguise the columns after it)."""
    file = tmp_path / "bidi.db"
    with deadletter.open(file, clock=lambda: T0) as db:
        db.queue("q").enqueue("a\u202eb\u2066c\u2069d")
    status, listed, _ = run("list", str(file), "q")
    assert status == 0 and listed.splitlines()[1].endswith(r"  a\u202eb\u2066c\u2069d")
    status, shown, _ = run("show", str(file), "q", "1")
    assert status == 0 and shown.splitlines()[-1] == r"a\u202eb\u2066c\u2069d"
