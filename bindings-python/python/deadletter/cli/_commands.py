"""The CLI's commands: one ``cmd_*`` function a command, each a few calls of the public
`deadletter` API and one `emit`; the usage and failure exceptions that `main` turns into exit
statuses 2 and 1."""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import os
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from itertools import islice
from pathlib import Path
from typing import Any, Callable, TextIO, Union

import deadletter

from .._deadletter import FILTERS as CORE_FILTERS
from .._deadletter import MAX_BATCH
from .._queues import missing, queue_names, unknown
from ._output import (
    ATTEMPT_COLUMNS,
    ENQUEUED_COLUMNS,
    LIST_COLUMNS,
    MESSAGE_COLUMNS,
    SETTINGS_COLUMNS,
    STATS_COLUMNS,
    Progress,
    Record,
    Rows,
    emit,
    listed,
    printable,
    shown_settings,
)

__all__ = [
    "SETTINGS",
    "Failure",
    "Usage",
    "cmd_delete",
    "cmd_enqueue",
    "cmd_list",
    "cmd_move",
    "cmd_pause",
    "cmd_purge",
    "cmd_reap",
    "cmd_replay",
    "cmd_resume",
    "cmd_retry_now",
    "cmd_serve",
    "cmd_settings",
    "cmd_show",
    "cmd_stats",
]

SETTINGS = ("backoff", "max_retries", "lease", "expires_in", "on_expiry")
"""The settings `Queue.set_settings` stores (``settings --unset`` takes these names)."""

CHUNK = MAX_BATCH
"""Messages per ``enqueue_many`` (the core's limit of one batch) and per bulk call of ``replay
--all``, ``delete --all``, ``retry-now --all`` and ``move --all``."""

FILTERS = tuple(name for name in CORE_FILTERS if name != "status")
"""The filter options of ``list`` and the bulk forms, besides ``--status`` (the core's names)."""


def filters(args: argparse.Namespace) -> dict[str, Any]:
    """The filters given on the command line (``--status`` included), as keywords."""
    given = {name: getattr(args, name) for name in ("status", *FILTERS)}
    return {name: value for name, value in given.items() if value is not None}


class Failure(Exception):
    """A failure that is not the queue's (a missing file, a missing extra): exit status 1."""


class Usage(Exception):
    """Arguments that do not go together: exit status 2, with the command's usage."""


def is_url(path: str) -> bool:
    """Whether ``path`` is a PostgreSQL URL (as `deadletter.open` tells)."""
    return path[:13].lower().startswith(("postgresql://", "postgres://"))


MEMORY = ":memory:"
"""`deadletter.open`'s private in-memory database: only ``serve`` takes it as PATH (finding F11)."""


def database(path: str) -> Union[str, Path]:
    """What `deadletter.open` gets for the command line's PATH: a URL, or a file name (a
    `pathlib.Path`). ``:memory:`` is a usage error: a command's in-memory database would be
    empty at every command, and the file of that name that it was before (96faf03) surprised
    users, who expect `deadletter.open`'s meaning (finding F11); ``./:memory:`` is that file. A
    directory is a `Failure` that says so (new-user finding M10, session 7: "no such database
    file", or the store's "unable to open database file")."""
    if path == MEMORY:
        raise Usage(
            f"{MEMORY} is an in-memory database, empty at every command: give a SQLite file "
            "(./:memory: for a file of that name) or a PostgreSQL URL; only `deadletter serve` "
            "takes :memory:, for a demo"
        )
    if is_url(path):
        return path
    if Path(path).is_dir():
        raise Failure(f"{path}: is a directory, not a database file")
    return Path(path)


def open_existing(args: argparse.Namespace) -> deadletter.Database:
    """The database of ``args.path`` for operators' commands, which never create one: a file
    must exist, a PostgreSQL schema must hold deadletter's tables (``create=False``: a mistyped
    ``--schema`` is an error, not an empty queue)."""
    if is_url(args.path):
        return deadletter.open(args.path, schema=args.schema, create=False)
    path = Path(database(args.path))
    if not path.is_file():
        raise Failure(f"{args.path}: no such database file")
    return deadletter.open(path, schema=args.schema)


def known(db: deadletter.Database, args: argparse.Namespace, err: TextIO) -> list[str]:
    """The queue names of ``db``, after a note on stderr when ``args.queue`` is none of them: the
    command still runs (its answer, 0 or nothing, is true: a queue emptied by its workers is one
    too), but a mistyped name no longer reads as "nothing to do" (new-user finding M8, session
    7). A queue is among them while `Database.queues` lists it; no other rule is the CLI's."""
    names = queue_names(db)
    if args.queue not in names:
        err.write(f"deadletter {args.command}: note: {unknown(args.queue, names)}\n")
    return names


def existing(db: deadletter.Database, args: argparse.Namespace) -> None:
    """`Failure` (exit 1) when ``args.queue`` is no queue of ``db`` and ``--create`` is not
    given: ``pause`` or ``settings`` of a typo stored a new queue while the real one ran on
    (new-user finding M8, session 7); ``resume`` of one would change nothing."""
    if getattr(args, "create", False):
        return
    names = missing(db, args.queue)
    if names is not None:
        create = "" if args.command == "resume" else " (give --create for a new queue)"
        raise Failure(unknown(args.queue, names) + create)


def cmd_stats(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        if args.queue is None:
            rows: Rows = [stats.to_dict() for stats in db.queues()]
        else:
            known(db, args, err)
            rows = db.queue(args.queue).stats().to_dict()
        emit(rows, STATS_COLUMNS, as_json=args.json, out=out)


def cmd_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        known(db, args, err)
        page = db.queue(args.queue).list(
            limit=args.limit, after_id=args.after_id, **filters(args)
        )
        rows = [m.to_dict() for m in page] if args.json else [listed(m) for m in page]
        emit(rows, with_moved_from(LIST_COLUMNS, page), as_json=args.json, out=out)
    if page.next_after_id is not None:
        err.write(f"more may follow: --after-id {page.next_after_id}\n")


def cmd_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        known(db, args, err)
        message = db.queue(args.queue).get(args.id)
    if args.json:
        emit(message.to_dict(), (), as_json=True, out=out)
        return
    columns = with_moved_from(MESSAGE_COLUMNS, [message])
    emit(message.to_dict(), columns, as_json=False, out=out, width=None)
    if message.errors:
        out.write("errors:\n")
        attempts = [dict(entry) for entry in message.errors]
        emit(attempts, ATTEMPT_COLUMNS, as_json=False, out=out, width=None)
    out.write("payload:\n" + printable(message.payload) + "\n")


def with_moved_from(
    columns: tuple[str, ...], messages: Iterable[deadletter.Message]
) -> tuple[str, ...]:
    """``columns`` with ``moved_from`` after ``status`` when one of ``messages`` was moved: a
    column that would read ``-`` on every row of a queue never moved is left out."""
    if not any(m.moved_from is not None for m in messages):
        return columns
    at = columns.index("status") + 1
    return (*columns[:at], "moved_from", *columns[at:])


def one_or_all(args: argparse.Namespace) -> None:
    """An ID, or ``--all`` with its options: not both, not neither."""
    if args.id is not None and args.all:
        raise Usage("give a message ID or --all, not both")
    if args.id is None and not args.all:
        raise Usage("give a message ID or --all")
    if args.id is not None and (filters(args) or args.limit is not None or args.dry_run):
        raise Usage("the filters, --status, --limit and --dry-run go with --all")


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    one_or_all(args)
    with open_existing(args) as db:
        known(db, args, err)
        queue = db.queue(args.queue)
        if args.id is not None:
            message = queue.replay(args.id)
            columns = ("id", "queue", "status", "replay_count")
            emit(message.to_dict(), columns, as_json=args.json, out=out)
            return
        bulk(queue.replay_all, args, "dead_before", ("replay", "replayed"), out, err)


def cmd_delete(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    one_or_all(args)
    with open_existing(args) as db:
        known(db, args, err)
        queue = db.queue(args.queue)
        if args.id is None:
            bulk(queue.delete_all, args, "updated_before", ("delete", "deleted"), out, err)
            return
        message = queue.delete(args.id)
    emit(message.to_dict(), ("id", "queue", "status"), as_json=args.json, out=out)


def cmd_retry_now(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    one_or_all(args)
    with open_existing(args) as db:
        known(db, args, err)
        queue = db.queue(args.queue)
        if args.id is None:
            words = ("retry now", "retried_now")
            bulk(queue.retry_now_all, args, "updated_before", words, out, err)
            return
        message = queue.retry_now(args.id)
    columns = ("id", "queue", "status", "retry_count", "retry_after")
    emit(message.to_dict(), columns, as_json=args.json, out=out)


def cmd_move(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    one_or_all(args)
    # The ID form takes TO after the ID, --all takes --to: the other one is not given.
    target, other = (args.to, args.to_all) if args.id is not None else (args.to_all, args.to)
    if not isinstance(target, str) or other is not None:
        if args.id is not None:
            raise Usage("give the target queue after the ID: move PATH QUEUE ID TO")
        raise Usage("give the target queue with --to: move PATH QUEUE --all --to TO")
    with open_existing(args) as db:
        new = target not in known(db, args, err)
        queue = db.queue(args.queue)
        if args.id is None:
            action = functools.partial(queue.move_all, target)
            bulk(action, args, "updated_before", ("move", "moved"), out, err)
        else:
            message = queue.move(args.id, target)
            columns = ("id", "queue", "moved_from", "status")
            emit(message.to_dict(), columns, as_json=args.json, out=out)
    if new:
        # Once the core took the name (the move or its dry run did not raise): a refused name
        # (`move q 1 'a\u2028b'`) was said to be a new queue, then refused (session 8).
        note = f'queue "{printable(target)}" is new (it holds no message and no settings)'
        err.write(f"deadletter move: note: {note}\n")


def bulk(
    action: Callable[..., int],
    args: argparse.Namespace,
    bound: str,
    words: tuple[str, str],
    out: TextIO,
    err: TextIO,
) -> None:
    """A bulk form (``--all``): the count of a dry run (``would replay 12``), or the action in
    calls of `CHUNK` messages with their progress on a terminal (``replayed  12``).

    The messages it selects are bounded by when it started, ``bound`` < now (unless the command
    line gives that filter): ``dead_before`` for replay, ``updated_before`` for the others, so
    that the calls end even while workers keep changing the messages acted on (a message
    replayed and killed again, made due and failed again, is not taken twice)."""
    verb, done = words
    given = filters(args)
    given.setdefault(bound, datetime.now(timezone.utc) + timedelta(milliseconds=1))  # exclusive
    if args.dry_run:
        counted(action(**given, limit=args.limit, dry_run=True), verb, args, out, dry_run=True)
        return
    total = 0
    progress = Progress(done.replace("_", " "), err)
    try:
        while args.limit is None or total < args.limit:
            chunk = CHUNK if args.limit is None else min(CHUNK, args.limit - total)
            acted = action(**given, limit=chunk)
            total += acted
            progress.update(total)
            if acted < chunk:
                break
    finally:
        progress.done()
    counted(total, done, args, out)


def counted(
    count: int, word: str, args: argparse.Namespace, out: TextIO, *, dry_run: bool = False
) -> None:
    """The result of an action on many messages: for people ``replayed  12`` (``would replay
    12`` on a dry run); with ``--json`` one shape for every command, ``{"count": n, "dry_run":
    bool}``, as the HTTP API's bulk routes answer (it was ``would_replay``, ``moved``,
    ``purged``... a key per command; new-user finding M10, session 7)."""
    if args.json:
        emit({"count": count, "dry_run": dry_run}, (), as_json=True, out=out)
    elif dry_run:
        out.write(f"would {word} {count}\n")
    else:
        emit({word: count}, (word,), as_json=False, out=out)


def cmd_purge(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        known(db, args, err)
        purged = db.queue(args.queue).purge(status=args.status, older_than=args.older_than)
    counted(purged, "purged", args, out)


def cmd_reap(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        known(db, args, err)
        reaped = db.queue(args.queue).reap()
    counted(reaped, "reaped", args, out)


def cmd_settings(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    policy = {
        "initial": args.backoff_initial,
        "multiplier": args.backoff_multiplier,
        "cap": args.backoff_cap,
        "jitter": args.backoff_jitter,
    }
    policy = {name: value for name, value in policy.items() if value is not None}
    given: dict[str, Any] = {
        "max_retries": args.max_retries,
        "lease": args.lease,
        "expires_in": args.expires_in,
        "on_expiry": args.on_expiry,
    }
    given = {name: value for name, value in given.items() if value is not None}
    if policy:
        given["backoff"] = policy
    both = [name for name in args.unset if name in given]
    if both:
        raise Usage(f"--unset {both[0]} goes with no option that sets it")
    with open_existing(args) as db:
        existing(db, args)
        queue = db.queue(args.queue)
        settings = queue.settings()
        if given or args.unset:
            settings = queue.set_settings(**changed(settings, given, args.unset))
    emit(shown_settings(settings, as_json=args.json), SETTINGS_COLUMNS, as_json=args.json, out=out)


def changed(
    settings: deadletter.QueueSettings, given: dict[str, Any], unset: list[str]
) -> dict[str, Any]:
    """`Queue.set_settings`' arguments: the stored ``settings`` with those ``given`` in their
    place and those named in ``unset`` unset. A ``backoff`` given as some of its arguments
    changes only those of the stored policy (or of the default one); its jitter ``none`` is
    None."""
    result: dict[str, Any] = {name: getattr(settings, name) for name in SETTINGS}
    policy = given.pop("backoff", None)
    if policy is not None:
        stored = settings.backoff or deadletter.Backoff()
        result["backoff"] = {**stored.to_dict(), **policy}
        if result["backoff"]["jitter"] == "none":
            result["backoff"]["jitter"] = None
    result.update(given)
    result.update({name: None for name in unset})
    return result


def cmd_pause(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        existing(db, args)
        settings = db.queue(args.queue).pause()
    emit(shown_settings(settings, as_json=args.json), SETTINGS_COLUMNS, as_json=args.json, out=out)


def cmd_resume(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    with open_existing(args) as db:
        existing(db, args)
        settings = db.queue(args.queue).resume()
    emit(shown_settings(settings, as_json=args.json), SETTINGS_COLUMNS, as_json=args.json, out=out)


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
                group=args.group,
                expires_in=args.expires_in,
            )
            columns = (
                *ENQUEUED_COLUMNS,
                *(("group",) if message.group is not None else ()),
                *(("expires_at",) if message.expires_at is not None else ()),
                *(("deduplicated",) if message.deduplicated else ()),
            )
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
    options = {
        "max_retries": args.max_retries,
        "delay": args.delay,
        "group": args.group,
        "expires_in": args.expires_in,
    }
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
        from ..http import _serve
    except ImportError as missing:
        package = (missing.name or "a package").partition(".")[0]
        raise Failure(
            f"`deadletter serve` needs the server extra ({package} is missing): "
            "pip install 'deadletter[server]'"
        ) from None
    origin = "--token" if args.token is not None else _serve.ENV_TOKEN
    token = args.token if args.token is not None else os.environ.get(_serve.ENV_TOKEN)
    if args.token_file is not None:
        origin, token = f"--token-file {args.token_file}", read_token(args.token_file)
    if token == "":  # never read as "no token": authentication would be off without a word
        if args.token is not None:
            raise Usage("--token is empty: give a token, or omit --token to serve without one")
        if args.token_file is not None:
            raise Usage(f"{origin} is empty: write the token in it")
        raise Usage(
            f"{_serve.ENV_TOKEN} is set but empty: set a token, or unset it to serve without one"
        )
    problem = None if token is None else _serve.token_problem(token)
    if problem is not None:
        raise Usage(f"{origin} {problem}")
    if args.token is not None:
        err.write(
            "deadletter serve: note: every user of this machine can read --token's value (ps); "
            f"on a shared machine give {_serve.ENV_TOKEN} or --token-file instead\n"
        )
    memory = args.path == MEMORY
    if memory and args.workers > 1:
        raise Usage(f"{MEMORY} is private to one process: it cannot be served with --workers")
    hosts = [*args.allowed_host, *_serve.host_name(args.host)]
    try:
        _serve.check_hosts(args.allowed_host, "--allowed-host")
        _serve.check_origins(args.allow_origin, "--allow-origin")
    except ValueError as error:
        raise Usage(str(error)) from None
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
    if not (args.allowed_host or is_loopback(args.host)):
        names = ", ".join(["localhost", *_serve.host_name(args.host)])
        err.write(
            f"deadletter serve: requests addressed to a host name other than {names} are "
            "refused (421): give --allowed-host NAME for each name clients use\n"
        )
    if memory:
        err.write(
            f"deadletter serve: serving an in-memory database ({MEMORY}): its messages are lost "
            "when the server stops\n"
        )
    else:
        if not args.create:  # refused as by every command: a typo served an empty database (M15)
            open_existing(args).close()
        deadletter.open(  # fail early
            database(args.path), schema=args.schema, max_payload_bytes=args.max_payload_bytes
        ).close()
    # Each worker process builds its app from these (uvicorn imports a factory by name).
    if memory or is_url(args.path):
        os.environ[_serve.ENV_PATH] = args.path
    else:
        os.environ[_serve.ENV_PATH] = str(Path(args.path).resolve())
    os.environ[_serve.ENV_MAX_PAYLOAD_BYTES] = str(args.max_payload_bytes)
    if args.schema is not None:
        os.environ[_serve.ENV_SCHEMA] = args.schema
    if token is not None:
        os.environ[_serve.ENV_TOKEN] = token
    os.environ[_serve.ENV_ALLOWED_HOSTS] = json.dumps(hosts)
    os.environ[_serve.ENV_ALLOW_ORIGINS] = json.dumps(args.allow_origin)
    if not _serve.run(args.host, args.port, args.workers, args.log_level):
        raise Failure("the server did not start (see uvicorn's messages above)")


def read_token(path: str) -> str:
    """The token that the file ``path`` holds, without the line ending of its one line: unlike
    ``--token``'s value, it is not in the process's arguments, which every local user reads
    (``ps``; new-user finding N11, session 7)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise Failure(f"--token-file {path}: {reason or error}") from None
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
