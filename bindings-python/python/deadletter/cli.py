"""The ``deadletter`` console script: an operator's way into a queue database, and the server.

Commands (``deadletter COMMAND -h`` for their options)::

    deadletter serve PATH [--host 127.0.0.1] [--port 8000] [--workers N] [--token T]
    deadletter stats PATH [QUEUE]
    deadletter list PATH QUEUE [--status S] [--limit N] [--after-id ID]
    deadletter show PATH QUEUE ID
    deadletter replay PATH QUEUE (ID | --all [--error-contains T] [--dead-after I]
                                             [--dead-before I] [--limit N])
    deadletter purge PATH QUEUE --status {succeeded,dead} --older-than DURATION
    deadletter enqueue PATH QUEUE [--max-retries N] [--delay DURATION]
                                  (PAYLOAD [--idempotency-key K] | -)

Output is an aligned table for people, or JSON with ``--json`` (messages and statistics as the
HTTP API writes them), both written by `emit`. For people, control characters in values (a
payload's, an error's) are shown escaped (``\\n``, ``\\x1b``), never sent to the terminal. Exit
status: 0 on success, 1 on a deadletter error (its message on stderr), 2 on a usage error. PATH is
a SQLite file or a PostgreSQL URL (``postgresql://user:password@host/db``; every command takes
``--schema``, default ``deadletter``). Commands other than ``serve`` and ``enqueue`` refuse a
SQLite PATH that does not exist rather than create an empty database. A long ``replay --all`` or
``enqueue -`` shows its progress on stderr when that is a terminal. ``serve`` needs the
``server`` extra (``pip install 'deadletter[server]'``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Optional, TextIO, Union

import deadletter

from ._json import jsonable, parse_timestamp

__all__ = ["main"]

Record = dict[str, Any]
Rows = Union[Record, list[Record]]

CELL_WIDTH = 48  # characters of a table cell before it is cut with "…" (--json never cuts)
PROGRESS_EVERY = 0.2  # seconds between progress lines on a terminal
CHUNK = 1000  # messages per enqueue_many (its limit) and per replay_all of `replay --all`


class Failure(Exception):
    """A failure that is not the queue's (a missing file, a missing extra): exit status 1."""


class Usage(Exception):
    """Arguments that do not go together: exit status 2, with the command's usage."""


# ---------------------------------------------------------------------------------------------
# Output: one function for every command


def emit(
    rows: Rows,
    columns: Sequence[str],
    *,
    as_json: bool,
    out: TextIO,
    width: Optional[int] = CELL_WIDTH,
) -> None:
    """Writes ``rows`` as JSON, or as a table of ``columns``: a list of records is one row per
    record, a single record is one ``column  value`` line per column. Table cells are cut at
    ``width`` characters (``None``: never)."""
    if as_json:
        out.write(json.dumps(jsonable(rows), ensure_ascii=False, indent=2) + "\n")
        return
    if isinstance(rows, dict):
        records = [{"field": c, "value": readable(rows.get(c))} for c in columns]
        write_table(records, ("field", "value"), header=False, out=out, width=width)
    else:
        records = [{c: readable(r.get(c)) for c in columns} for r in rows]
        write_table(records, columns, header=True, out=out, width=width)


def readable(value: Any) -> Any:
    """A value as a table shows it: durations as ``1h 30m``, the rest as in JSON."""
    return duration(value) if isinstance(value, timedelta) else jsonable(value)


def duration(value: timedelta) -> str:
    """``42s``, ``1.5s``, ``1m 40s``, ``1h 30m``, ``2d 4h``: the two largest units."""
    seconds = value.total_seconds()
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    first = next(i for i, (n, _) in enumerate(parts) if n)
    return " ".join(f"{n}{unit}" for n, unit in parts[first : first + 2] if n)


def write_table(
    records: list[Record],
    columns: Sequence[str],
    *,
    header: bool,
    out: TextIO,
    width: Optional[int],
) -> None:
    """Aligned columns; numbers right-aligned, ``None`` as ``-``, long cells cut."""
    cells = [[cell(r.get(c), width) for c in columns] for r in records]
    numeric = [
        bool(records) and all(isinstance(r.get(c), int) for r in records) for c in columns
    ]
    lines = ([list(columns)] if header else []) + cells
    widths = [max((len(line[i]) for line in lines), default=0) for i in range(len(columns))]
    for line in lines:
        padded = [
            text.rjust(size) if right else text.ljust(size)
            for text, size, right in zip(line, widths, numeric)
        ]
        out.write("  ".join(padded).rstrip() + "\n")


def cell(value: Any, width: Optional[int]) -> str:
    """One table cell: one line, at most ``width`` characters."""
    text = printable("-" if value is None else str(value))
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""The C0 and C1 control characters and DEL: what a terminal obeys (ESC, BEL, OSC, ...)."""
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with every control character (`CONTROL`) escaped, ``\\n``, ``\\r``, ``\\t`` or
    ``\\x1b``: people's output is one line per value and never drives the terminal (payloads and
    errors come from whoever can enqueue). ``--json`` escapes them its own way."""
    return CONTROL.sub(lambda m: NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


MESSAGE_COLUMNS = (
    "id",
    "queue",
    "status",
    "retry_count",
    "max_retries",
    "retry_after",
    "last_error",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "idempotency_key",
    "first_failed_at",
    "dead_at",
    "errors_dropped",
    "replay_count",
    "replayed_at",
)
LIST_COLUMNS = ("id", "status", "retries", "updated_at", "last_error", "payload")
ATTEMPT_COLUMNS = ("attempt", "at", "error")
ENQUEUED_COLUMNS = ("id", "queue", "status", "max_retries", "retry_after", "idempotency_key")
STATS_COLUMNS = (
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
)


def listed(message: deadletter.Message) -> Record:
    """A message as a row of `list`: the retry count as ``n/max``."""
    record = message.to_dict()
    record["retries"] = f"{message.retry_count}/{message.max_retries}"
    return record


class Progress:
    """``<what> N`` on stderr, rewritten in place, only when stderr is a terminal."""

    def __init__(self, what: str, err: TextIO) -> None:
        self.what = what
        self.err = err
        self.shown = err.isatty()
        self.last = 0.0

    def update(self, count: int) -> None:
        now = time.monotonic()
        if self.shown and now - self.last >= PROGRESS_EVERY:
            self.last = now
            self.err.write(f"\r{self.what} {count}")
            self.err.flush()

    def done(self) -> None:
        if self.shown and self.last:
            self.err.write("\r\033[K")
            self.err.flush()


# ---------------------------------------------------------------------------------------------
# Commands


def is_url(path: str) -> bool:
    """Whether ``path`` is a PostgreSQL URL (as `deadletter.open` tells)."""
    return path[:13].lower().startswith(("postgresql://", "postgres://"))


def database(path: str) -> Union[str, Path]:
    """What `deadletter.open` gets for the command line's PATH: a URL, or a file name (a
    `pathlib.Path`, so that ``:memory:`` is the file of that name, not a database that would
    vanish with the command)."""
    return path if is_url(path) else Path(path)


def open_existing(args: argparse.Namespace) -> deadletter.Database:
    """The database of ``args.path`` for operators' commands, which never create one: a file
    must exist, a PostgreSQL schema must hold deadletter's tables (``create=False``: a mistyped
    ``--schema`` is an error, not an empty queue)."""
    if is_url(args.path):
        return deadletter.open(args.path, schema=args.schema, create=False)
    if not Path(args.path).is_file():
        raise Failure(f"{args.path}: no such database file")
    return deadletter.open(database(args.path), schema=args.schema)


def cmd_stats(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        if args.queue is None:
            rows: Rows = [stats.to_dict() for stats in db.queues()]
        else:
            rows = db.queue(args.queue).stats().to_dict()
        emit(rows, STATS_COLUMNS, as_json=args.json, out=out)


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        page = db.queue(args.queue).list(
            status=args.status, limit=args.limit, after_id=args.after_id
        )
        rows = [m.to_dict() for m in page] if args.json else [listed(m) for m in page]
        emit(rows, LIST_COLUMNS, as_json=args.json, out=out)


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        message = db.queue(args.queue).get(args.id)
    if args.json:
        emit(message.to_dict(), (), as_json=True, out=out)
        return
    emit(message.to_dict(), MESSAGE_COLUMNS, as_json=False, out=out, width=None)
    if message.errors:
        out.write("errors:\n")
        attempts = [dict(entry) for entry in message.errors]
        emit(attempts, ATTEMPT_COLUMNS, as_json=False, out=out, width=None)
    out.write("payload:\n" + printable(message.payload) + "\n")


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    filters = (args.error_contains, args.dead_after, args.dead_before, args.limit)
    if (args.id is None) == (not args.all):
        raise Usage("give a message ID or --all")
    if args.id is not None and any(f is not None for f in filters):
        raise Usage("--error-contains, --dead-after, --dead-before and --limit go with --all")
    with open_existing(args) as db:
        queue = db.queue(args.queue)
        if args.id is not None:
            message = queue.replay(args.id)
            columns = ("id", "queue", "status", "replay_count")
            emit(message.to_dict(), columns, as_json=args.json, out=out)
            return
        replayed = replay_all(queue, args, Progress("replayed", err))
    emit({"replayed": replayed}, ("replayed",), as_json=args.json, out=out)


def replay_all(queue: deadletter.Queue, args: argparse.Namespace, progress: Progress) -> int:
    """`Queue.replay_all` in calls of `CHUNK` messages, for progress. The messages that die while
    it runs are not replayed: without ``--dead-before``, the upper bound is the moment it
    started (so that the calls end even while workers keep killing replayed messages)."""
    start = datetime.now(timezone.utc) + timedelta(milliseconds=1)  # dead_before is exclusive
    before = args.dead_before or start
    total = 0
    try:
        while args.limit is None or total < args.limit:
            chunk = CHUNK if args.limit is None else min(CHUNK, args.limit - total)
            replayed = queue.replay_all(
                error_contains=args.error_contains,
                dead_after=args.dead_after,
                dead_before=before,
                limit=chunk,
            )
            total += replayed
            progress.update(total)
            if replayed < chunk:
                break
    finally:
        progress.done()
    return total


def cmd_purge(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        purged = db.queue(args.queue).purge(status=args.status, older_than=args.older_than)
    emit({"purged": purged}, ("purged",), as_json=args.json, out=out)


def stdin_payloads(stream: TextIO) -> Iterator[str]:
    """Every line of ``stream`` without its line ending, ``\\n`` or ``\\r\\n`` (an empty line is an
    empty payload; a ``\\r`` anywhere else stays in it)."""
    for line in stream:
        yield line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line


def cmd_enqueue(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    if args.payload == "-" and args.idempotency_key is not None:
        raise Usage("--idempotency-key goes with one PAYLOAD, not with - (one key per message)")
    with deadletter.open(database(args.path), schema=args.schema) as db:
        queue = db.queue(args.queue)
        if args.payload != "-":
            message = queue.enqueue(
                args.payload,
                max_retries=args.max_retries,
                idempotency_key=args.idempotency_key,
                delay=args.delay,
            )
            columns = ENQUEUED_COLUMNS + (("deduplicated",) if message.deduplicated else ())
            emit(message.to_dict(), columns, as_json=args.json, out=out)
            return
        summary = enqueue_lines(queue, args, Progress("enqueued", err))
    emit(summary, tuple(summary), as_json=args.json, out=out)


def enqueue_lines(
    queue: deadletter.Queue, args: argparse.Namespace, progress: Progress
) -> Record:
    """One message per line of stdin, by `Queue.enqueue_many` in chunks of `CHUNK` lines: each
    chunk is enqueued whole or not at all, so a bad line stops the command with the chunks
    before its own enqueued."""
    options = {"max_retries": args.max_retries, "delay": args.delay}
    ids: list[int] = []
    lines = stdin_payloads(sys.stdin)
    try:
        while chunk := list(islice(lines, CHUNK)):
            items: list[Any] = chunk
            if any(value is not None for value in options.values()):
                items = [{"payload": line, **options} for line in chunk]
            try:
                ids += [m.id for m in queue.enqueue_many(items)]
            except deadletter.ValidationError as error:
                first = error.errors[0]
                line = len(ids) + first.get("index", 0) + 1
                raise Failure(
                    f"line {line}: {first['field']}: {first['message']} (lines {len(ids) + 1}"
                    f" to {len(ids) + len(chunk)} were not enqueued; the {len(ids)} before them"
                    " were)"
                ) from error
            progress.update(len(ids))
    finally:
        progress.done()
    return {
        "enqueued": len(ids),
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    try:
        from . import _serve
    except ImportError as missing:
        package = (missing.name or "a package").partition(".")[0]
        raise Failure(
            f"`deadletter serve` needs the server extra ({package} is missing): "
            "pip install 'deadletter[server]'"
        ) from None
    token = args.token if args.token is not None else os.environ.get(_serve.ENV_TOKEN)
    if token == "":  # never read as "no token": authentication would be off without a word
        if args.token is not None:
            raise Usage("--token is empty: give a token, or omit --token to serve without one")
        raise Usage(
            f"{_serve.ENV_TOKEN} is set but empty: set a token, or unset it to serve without one"
        )
    if token is not None and token != token.strip():  # clients' credentials are read stripped
        origin = "--token" if args.token is not None else _serve.ENV_TOKEN
        raise Usage(f"{origin} begins or ends with whitespace: no client could send it")
    try:
        _serve.check_address(args.host, args.port)
    except OSError as error:
        reason = error.strerror or str(error)
        raise Usage(f"cannot listen on {args.host} port {args.port}: {reason}") from None
    if token is None and not is_loopback(args.host):
        err.write(
            f"deadletter serve: WARNING: serving {args.host} without a token: anyone who can "
            "reach it can read, replay and enqueue messages (set DEADLETTER_TOKEN or --token)\n"
        )
    deadletter.open(  # fail early
        database(args.path), schema=args.schema, max_payload_bytes=args.max_payload_bytes
    ).close()
    # Each worker process builds its app from these (uvicorn imports a factory by name).
    os.environ[_serve.ENV_PATH] = args.path if is_url(args.path) else str(Path(args.path).resolve())
    os.environ[_serve.ENV_MAX_PAYLOAD_BYTES] = str(args.max_payload_bytes)
    if args.schema is not None:
        os.environ[_serve.ENV_SCHEMA] = args.schema
    if token is not None:
        os.environ[_serve.ENV_TOKEN] = token
    if not _serve.run(args.host, args.port, args.workers, args.log_level):
        raise Failure("the server did not start (see uvicorn's messages above)")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# Arguments


INTEGER = re.compile(r"[+-]?[0-9]+")


def integer(text: str) -> int:
    """A whole number in ASCII digits: not ``int()``'s ``3_7`` (37) or other scripts' digits."""
    if not INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(text)


def port(text: str) -> int:
    value = integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0..65535, got {value}")
    return value


def positive(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smhd]?)")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text: str) -> timedelta:
    """A duration: seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``90``, ``15m``,
    ``1.5h``, ``7d``)."""
    match = DURATION.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90, 15m, 12h or 7d")
    return timedelta(seconds=float(match.group(1)) * UNITS[match.group(2)])


def instant(text: str) -> datetime:
    """An RFC 3339 date-time in UTC, as the JSON output writes them."""
    try:
        return parse_timestamp(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an RFC 3339 date-time in UTC, such as 2026-11-30T16:24:03Z"
        ) from None


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    root = argparse.ArgumentParser(
        prog="deadletter",
        description="Operate deadletter queue databases (SQLite files, PostgreSQL URLs) and serve "
        "their HTTP API.",
    )
    root.add_argument("--version", action="version", version=f"deadletter {deadletter.__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    writes = argparse.ArgumentParser(add_help=False)
    writes.add_argument("--json", action="store_true", help="write JSON instead of a table")
    schema = argparse.ArgumentParser(add_help=False)
    schema.add_argument("--schema", help="a PostgreSQL URL's schema (default deadletter)")

    def command(
        name: str,
        run: Callable[..., None],
        help: str,
        queue: Optional[str] = "QUEUE",
        details: str = "",
        output: bool = True,
    ) -> argparse.ArgumentParser:
        description = f"{help}. {details}" if details else help
        parents = [writes, schema] if output else [schema]
        sub = commands.add_parser(name, help=help, description=description, parents=parents)
        sub.add_argument(
            "path", metavar="PATH", help="the SQLite database file, or a PostgreSQL URL"
        )
        if queue == "QUEUE":
            sub.add_argument("queue", metavar="QUEUE", help="the queue name")
        elif queue == "[QUEUE]":
            sub.add_argument("queue", metavar="QUEUE", nargs="?", help="one queue (default: all)")
        sub.set_defaults(run=run, parser=sub)
        return sub

    command(
        "stats",
        cmd_stats,
        "counts per status and oldest ages of every queue that holds messages, or of one",
        queue="[QUEUE]",
    )

    sub = command("list", cmd_list, "list messages by id, optionally of one status")
    sub.add_argument("--status", help="pending, processing, succeeded or dead")
    sub.add_argument(
        "--limit", type=integer, default=100, help="at most this many (1..1000; default 100)"
    )
    sub.add_argument("--after-id", type=integer, help="only ids above this one (the next page)")

    sub = command(
        "show", cmd_show, "one message: every field, its failed attempts and its payload"
    )
    sub.add_argument("id", metavar="ID", type=integer, help="the message's id")

    sub = command(
        "replay",
        cmd_replay,
        "replay (redrive) a dead message, or with --all the dead messages the filters select",
        details="Each goes back to pending with retry count 0.",
    )
    sub.add_argument("id", metavar="ID", type=integer, nargs="?", help="the dead message")
    sub.add_argument("--all", action="store_true", help="every dead message the filters select")
    sub.add_argument("--error-contains", metavar="TEXT", help="its last error contains TEXT")
    sub.add_argument(
        "--dead-after", metavar="INSTANT", type=instant, help="it died at or after INSTANT"
    )
    sub.add_argument(
        "--dead-before",
        metavar="INSTANT",
        type=instant,
        help="it died before INSTANT (default: when the command started; messages that die "
        "while it runs are not replayed)",
    )
    sub.add_argument("--limit", type=positive, help="at most this many, lowest ids first")

    sub = command(
        "purge",
        cmd_purge,
        "delete the succeeded or dead messages not changed for a while",
    )
    sub.add_argument("--status", required=True, choices=["succeeded", "dead"])
    sub.add_argument(
        "--older-than",
        required=True,
        type=seconds,
        metavar="DURATION",
        help="not changed for this long: seconds, or 15m, 12h, 7d",
    )

    sub = command(
        "enqueue",
        cmd_enqueue,
        "enqueue a payload, or one payload per line of stdin (-)",
        details="Lines are enqueued 1000 per transaction, all or nothing: a bad line stops the "
        "command; the transactions before it are committed, none of the 1000 lines of its own "
        "is enqueued.",
    )
    sub.add_argument(
        "payload",
        metavar="PAYLOAD",
        help="the payload, or - to read one per line (ending in LF or CRLF, which is not kept)",
    )
    sub.add_argument(
        "--max-retries", type=integer, help="attempts before a message is dead (1..10; default 3)"
    )
    sub.add_argument(
        "--delay", type=seconds, metavar="DURATION", help="not claimable before this long"
    )
    sub.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="when the queue holds a message with this key, show it instead of enqueueing",
    )

    sub = command(
        "serve",
        cmd_serve,
        "serve the HTTP API and the dashboard (uvicorn)",
        queue=None,
        output=False,
    )
    sub.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    sub.add_argument("--port", type=port, default=8000, help="port, 0..65535 (default 8000)")
    sub.add_argument("--workers", type=positive, default=1, help="server processes (default 1)")
    sub.add_argument(
        "--token",
        help="require `Authorization: Bearer TOKEN` (default: $DEADLETTER_TOKEN; empty: refused)",
    )
    sub.add_argument(
        "--max-payload-bytes",
        type=positive,
        default=1 << 20,
        help="payload limit (default 1048576)",
    )
    sub.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="uvicorn's log level (info shows each request)",
    )
    return root


def main(
    argv: Optional[Sequence[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """Runs one command; returns the exit status (argparse exits with 2 on a usage error)."""
    args = parser().parse_args(argv)
    try:
        args.run(args, out, err)
    except Usage as usage:
        args.parser.error(str(usage))  # exits with status 2
    except (deadletter.Error, Failure) as error:
        err.write(f"deadletter {args.command}: {printable(str(error))}\n")
        return 1
    except BrokenPipeError:  # `deadletter list ... | head`: quiet, as the Python docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
