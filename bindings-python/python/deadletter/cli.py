"""The ``deadletter`` console script: an operator's way into a queue database, and the server.

Commands (``deadletter COMMAND -h`` for their options)::

    deadletter serve PATH [--host 127.0.0.1] [--port 8000] [--workers N] [--token T]
    deadletter list PATH QUEUE [--status S] [--limit N] [--after-id ID]
    deadletter show PATH QUEUE ID
    deadletter replay PATH QUEUE ID
    deadletter enqueue PATH QUEUE [--max-retries N] (PAYLOAD | -)

Output is an aligned table for people, or JSON with ``--json`` (messages as the HTTP API writes
them). Exit status: 0 on success, 1 on a deadletter error (its message on stderr), 2 on a usage
error. PATH is a SQLite file or a PostgreSQL URL (``postgresql://user:password@host/db``; every
command takes ``--schema``, default ``deadletter``). Commands other than ``serve`` and ``enqueue``
refuse a SQLite PATH that does not exist rather than create an empty database. ``serve`` needs the
``server`` extra (``pip install 'deadletter[server]'``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Callable, Optional, TextIO, Union

import deadletter

from ._json import jsonable

__all__ = ["main"]

Record = dict[str, Any]
Rows = Union[Record, list[Record]]

CELL_WIDTH = 48  # characters of a table cell before it is cut with "…" (--json never cuts)
PROGRESS_EVERY = 0.2  # seconds between progress lines on a terminal


class Failure(Exception):
    """A failure that is not the queue's (a missing file, a missing extra): exit status 1."""


# ---------------------------------------------------------------------------------------------
# Output: one function for every command


def emit(rows: Rows, columns: Sequence[str], *, as_json: bool, out: TextIO) -> None:
    """Writes ``rows`` as JSON, or as a table of ``columns``: a list of records is one row per
    record, a single record is one ``column  value`` line per column."""
    if as_json:
        out.write(json.dumps(jsonable(rows), ensure_ascii=False, indent=2) + "\n")
        return
    if isinstance(rows, dict):
        records = [{"field": c, "value": jsonable(rows.get(c))} for c in columns]
        write_table(records, ("field", "value"), header=False, out=out)
    else:
        write_table([jsonable(r) for r in rows], columns, header=True, out=out)


def write_table(
    records: list[Record], columns: Sequence[str], *, header: bool, out: TextIO
) -> None:
    """Aligned columns; numbers right-aligned, ``None`` as ``-``, long cells cut."""
    cells = [[cell(r.get(c)) for c in columns] for r in records]
    numeric = [all(isinstance(r.get(c), int) for r in records) and bool(records) for c in columns]
    lines = ([list(columns)] if header else []) + cells
    widths = [max((len(line[i]) for line in lines), default=0) for i in range(len(columns))]
    for line in lines:
        padded = [
            text.rjust(width) if right else text.ljust(width)
            for text, width, right in zip(line, widths, numeric)
        ]
        out.write("  ".join(padded).rstrip() + "\n")


def cell(value: Any) -> str:
    """One table cell: one line, at most `CELL_WIDTH` characters."""
    text = "-" if value is None else str(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


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
    "payload",
)
LIST_COLUMNS = ("id", "status", "retries", "updated_at", "last_error", "payload")


def listed(message: deadletter.Message) -> Record:
    """A message as a row of `list`: the retry count as ``n/max``."""
    record = message.to_dict()
    record["retries"] = f"{message.retry_count}/{message.max_retries}"
    return record


class Progress:
    """``N done`` on stderr, rewritten in place, only when stderr is a terminal."""

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
    return path.startswith(("postgresql://", "postgres://"))


def existing(path: str) -> str:
    """``path``, which must name an existing file or be a URL (operators' commands never create a
    file)."""
    if path != ":memory:" and not is_url(path) and not Path(path).is_file():
        raise Failure(f"{path}: no such database file")
    return path


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with deadletter.open(existing(args.path), schema=args.schema) as db:
        page = db.queue(args.queue).list(
            status=args.status, limit=args.limit, after_id=args.after_id
        )
        rows = [m.to_dict() for m in page] if args.json else [listed(m) for m in page]
        emit(rows, LIST_COLUMNS, as_json=args.json, out=out)


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with deadletter.open(existing(args.path), schema=args.schema) as db:
        message = db.queue(args.queue).get(args.id)
        emit(message.to_dict(), MESSAGE_COLUMNS[:-1], as_json=args.json, out=out)
        if not args.json:
            out.write("payload:\n" + message.payload + "\n")


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with deadletter.open(existing(args.path), schema=args.schema) as db:
        message = db.queue(args.queue).replay(args.id)
        emit(
            message.to_dict(), ("id", "queue", "status", "retry_count"), as_json=args.json, out=out
        )


def stdin_payloads(stream: TextIO) -> Iterator[str]:
    """Every line of ``stream`` without its line ending (an empty line is an empty payload)."""
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


def cmd_enqueue(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with deadletter.open(args.path, schema=args.schema) as db:
        queue = db.queue(args.queue)
        if args.payload != "-":
            message = queue.enqueue(args.payload, max_retries=args.max_retries)
            emit(
                message.to_dict(),
                ("id", "queue", "status", "max_retries"),
                as_json=args.json,
                out=out,
            )
            return
        progress = Progress("enqueued", err)
        ids: list[int] = []
        try:
            for number, payload in enumerate(stdin_payloads(sys.stdin), start=1):
                try:
                    ids.append(queue.enqueue(payload, max_retries=args.max_retries).id)
                except deadletter.Error as error:
                    before = f"the {len(ids)} lines before it were enqueued"
                    raise Failure(f"line {number}: {error} ({before})") from error
                progress.update(len(ids))
        finally:
            progress.done()
        summary = {
            "enqueued": len(ids),
            "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None,
        }
        emit(summary, tuple(summary), as_json=args.json, out=out)


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    try:
        from . import _serve
    except ImportError as missing:
        raise Failure(
            f"`deadletter serve` needs the server extra ({missing.name} is missing): "
            "pip install 'deadletter[server]'"
        ) from None
    token = args.token or os.environ.get(_serve.ENV_TOKEN) or None
    if token is None and not is_loopback(args.host):
        err.write(
            f"deadletter serve: WARNING: serving {args.host} without a token: anyone who can "
            "reach it can read, replay and enqueue messages (set DEADLETTER_TOKEN or --token)\n"
        )
    deadletter.open(  # fail early
        args.path, schema=args.schema, max_payload_bytes=args.max_payload_bytes
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


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    root = argparse.ArgumentParser(
        prog="deadletter",
        description="Operate deadletter queue databases (SQLite files, PostgreSQL URLs) and serve "
        "their HTTP API.",
    )
    root.add_argument("--version", action="version", version=f"deadletter {deadletter.__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="write JSON instead of a table")
    common.add_argument("--schema", help="a PostgreSQL URL's schema (default deadletter)")

    def command(
        name: str, run: Callable[..., None], help: str, queue: bool = True
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, parents=[common])
        sub.add_argument(
            "path", metavar="PATH", help="the SQLite database file, or a PostgreSQL URL"
        )
        if queue:
            sub.add_argument("queue", metavar="QUEUE", help="the queue name")
        sub.set_defaults(run=run)
        return sub

    sub = command("list", cmd_list, "list messages by id, optionally of one status")
    sub.add_argument("--status", help="pending, processing, succeeded or dead")
    sub.add_argument(
        "--limit", type=int, default=100, help="at most this many (1..1000; default 100)"
    )
    sub.add_argument("--after-id", type=int, help="only ids above this one (the next page)")

    sub = command("show", cmd_show, "one message: every field, its last error and its payload")
    sub.add_argument("id", metavar="ID", type=int)

    sub = command(
        "replay", cmd_replay, "replay (redrive) a dead message: pending again, retry count 0"
    )
    sub.add_argument("id", metavar="ID", type=int)

    sub = command("enqueue", cmd_enqueue, "enqueue a payload, or one payload per line of stdin (-)")
    sub.add_argument("payload", metavar="PAYLOAD", help="the payload, or - to read one per line")
    sub.add_argument(
        "--max-retries", type=int, help="attempts before a message is dead (1..10; default 3)"
    )

    sub = command("serve", cmd_serve, "serve the HTTP API and the dashboard (uvicorn)", queue=False)
    sub.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    sub.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    sub.add_argument("--workers", type=positive, default=1, help="server processes (default 1)")
    sub.add_argument(
        "--token", help="require `Authorization: Bearer TOKEN` (default: $DEADLETTER_TOKEN)"
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
    except (deadletter.Error, Failure) as error:
        err.write(f"deadletter {args.command}: {error}\n")
        return 1
    except BrokenPipeError:  # `deadletter list ... | head`: quiet, as the Python docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
