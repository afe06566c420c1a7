"""The CLI's arguments: `parser`, every command's options (limits and status names from the
core), and the argument types that read integers, durations and instants strictly."""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta
from typing import Callable, Optional

import deadletter

from .._deadletter import (
    BACKOFF_MULTIPLIER_RANGE,
    DEFAULT_LIST_LIMIT,
    DEFAULT_MAX_PAYLOAD_BYTES,
    DEFAULT_MAX_RETRIES,
    LIST_LIMIT_RANGE,
    MAX_BATCH,
    MAX_RETRIES_RANGE,
    ON_EXPIRY,
    SCAN_BUDGET,
    STATUSES,
)
from .._json import parse_timestamp
from ._commands import (
    SETTINGS,
    cmd_delete,
    cmd_enqueue,
    cmd_list,
    cmd_pause,
    cmd_purge,
    cmd_reap,
    cmd_replay,
    cmd_resume,
    cmd_retry_now,
    cmd_move,
    cmd_serve,
    cmd_settings,
    cmd_show,
    cmd_stats,
)

__all__ = [
    "instant",
    "integer",
    "low_high",
    "number",
    "parser",
    "port",
    "positive",
    "seconds",
    "within",
]


INTEGER = re.compile(r"[+-]?[0-9]+")
MAX_DIGITS = 20
"""More digits than any integer deadletter takes (ids, limits: 64 bits, 19 digits)."""
OUTSIDE: int = 10**MAX_DIGITS
"""What `integer` reads an integer of more than `MAX_DIGITS` digits as (with its sign)."""


def integer(text: str) -> int:
    """A whole number in ASCII digits: not ``int()``'s ``3_7`` (37) or other scripts' digits.
    One of more than `MAX_DIGITS` digits reads as ``10**MAX_DIGITS`` with its sign, as far out of
    every range as the number itself (``int()`` refuses more than 4 300 digits): the core refuses
    it ``out_of_range`` (exit 1), as it refuses 9223372036854775808, whatever its digit count
    (new-user finding N3, session 7: exit 2 from 21 digits on, 1 below)."""
    if not INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > MAX_DIGITS:
        return -OUTSIDE if text.startswith("-") else OUTSIDE
    return int(text)


def said(text: str, value: int) -> str:
    """`value` as a refusal quotes it: an integer of more than `MAX_DIGITS` digits by its count."""
    digits = len(text.lstrip("+-").lstrip("0"))
    return f"an integer of {digits} digits" if digits > MAX_DIGITS else str(value)


def port(text: str) -> int:
    value = integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0..65535, got {said(text, value)}")
    return value


def positive(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {said(text, value)}")
    return value


DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smhd]?)")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def within(bounds: tuple[int, int]) -> Callable[[str], int]:
    """An `integer` in the core's range ``bounds`` (``--limit``'s, ``--max-retries``'): out of it
    a usage error (exit 2) as a word is, not the core's validation error (exit 1), so a script
    tells a typo from a failure of the store by its exit status (new-user finding M10, session
    7: ``--limit 0`` was exit 1)."""
    low, high = bounds

    def read(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}..{high}, got {said(text, value)}")
        return value

    return read


def seconds(text: str) -> timedelta:
    """A duration: seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``90``, ``15m``,
    ``1.5h``, ``7d``)."""
    match = DURATION.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90, 15m, 12h or 7d")
    try:
        return timedelta(seconds=float(match.group(1)) * UNITS[match.group(2)])
    except OverflowError:  # past timedelta's 999 999 999 days: a traceback before
        raise argparse.ArgumentTypeError(f"{text!r} is out of range") from None


NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def number(text: str) -> float:
    """A decimal number in ASCII digits (``2``, ``1.5``): not ``float()``'s ``nan`` or ``1e3``;
    in the core's `BACKOFF_MULTIPLIER_RANGE` (the one number option: finding M10)."""
    if not NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number such as 2 or 1.5")
    low, high = BACKOFF_MULTIPLIER_RANGE
    if not low <= float(text) <= high:
        raise argparse.ArgumentTypeError(f"must be {low:g}..{high:g}, got {text}")
    return float(text)


def instant(text: str) -> datetime:
    """An RFC 3339 date-time in UTC, as the JSON output writes them."""
    try:
        return parse_timestamp(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an RFC 3339 date-time in UTC, such as 2026-11-30T16:24:03Z"
        ) from None


def low_high(bounds: tuple[int, int]) -> str:
    """A range of the core as the help shows it: ``1..1000``."""
    return f"{bounds[0]}..{bounds[1]}"


def filter_options(sub: argparse.ArgumentParser) -> None:
    """The filters of `Queue.list` and the bulk actions, but ``status`` (each command says which
    it takes): ``--payload-contains``, ``--created-after``, ..."""
    delayed = sub.add_mutually_exclusive_group()
    delayed.add_argument(
        "--delayed",
        action="store_const",
        const=True,
        help="only pending messages waiting for a backoff or delay",
    )
    delayed.add_argument(
        "--not-delayed",
        dest="delayed",
        action="store_const",
        const=False,
        help="only pending messages not waiting for one",
    )
    sub.add_argument(
        "--payload-contains", metavar="TEXT", help="its payload contains TEXT (case-sensitive)"
    )
    sub.add_argument(
        "--error-contains", metavar="TEXT", help="its last error contains TEXT (case-sensitive)"
    )
    sub.add_argument("--group", metavar="GROUP", help="of this ordering group")
    sub.add_argument("--idempotency-key", metavar="KEY", help="with this idempotency key")
    for field, what in (("created", "enqueued"), ("updated", "last changed"), ("dead", "died")):
        sub.add_argument(
            f"--{field}-after", metavar="INSTANT", type=instant, help=f"{what} at or after INSTANT"
        )
        sub.add_argument(
            f"--{field}-before", metavar="INSTANT", type=instant, help=f"{what} before INSTANT"
        )


def bulk_options(sub: argparse.ArgumentParser, selects: str, verb: str) -> None:
    """``--all`` with the filters, ``--status``, ``--limit`` and ``--dry-run``, beside the ID."""
    sub.add_argument("--all", action="store_true", help=selects)
    sub.add_argument(
        "--status",
        choices=STATUSES,
        metavar="STATUS",
        help="the status to act on (the action's own by default; the core refuses one the "
        "action does not take, exit 1)",
    )
    filter_options(sub)
    sub.add_argument("--limit", type=positive, help="at most this many, lowest ids first")
    sub.add_argument(
        "--dry-run",
        action="store_true",
        help=f"change nothing: print the exact count of messages it would {verb}",
    )


def create_option(sub: argparse.ArgumentParser, verb: str) -> None:
    """``--create``: act on a queue that does not exist yet (without it, exit 1: a mistyped name
    is not a new queue; new-user finding M8, session 7)."""
    sub.add_argument(
        "--create",
        action="store_true",
        help=f"{verb} a queue that holds no message and no settings yet (else exit 1: a "
        "mistyped QUEUE is refused, with the queues there are)",
    )


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
            "path",
            metavar="PATH",
            help="the SQLite database file, or a PostgreSQL URL"
            + (" (:memory: for a private in-memory database)" if name == "serve" else ""),
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

    sub = command(
        "list",
        cmd_list,
        "list messages by id, filtered",
        details=f"The filters combine with AND. When more may follow, stderr's last line says the "
        "--after-id of the next page (`more may follow: --after-id N`, with --json too: its "
        f"array holds the messages only). A call examines at most {SCAN_BUDGET} messages "
        "(--payload-contains and --error-contains scan): a page may then be short, and the next "
        "one goes on.",
    )
    sub.add_argument(
        "--status",
        choices=STATUSES,
        metavar="STATUS",
        help=f"{', '.join(STATUSES[:-1])} or {STATUSES[-1]}",
    )
    filter_options(sub)
    sub.add_argument(
        "--limit",
        type=within(LIST_LIMIT_RANGE),
        default=DEFAULT_LIST_LIMIT,
        help=f"at most this many ({low_high(LIST_LIMIT_RANGE)}; default {DEFAULT_LIST_LIMIT})",
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
        details="Each goes back to pending with retry count 0. --all takes the messages that "
        "died before the command started (unless --dead-before says otherwise: messages that "
        "die while it runs are not replayed); --dry-run counts them instead (would replay N).",
    )
    sub.add_argument("id", metavar="ID", type=integer, nargs="?", help="the dead message")
    bulk_options(sub, "every dead message the filters select", "replay")

    sub = command(
        "delete",
        cmd_delete,
        "delete one succeeded or dead message, or with --all those the filters select",
        details="Prints the message as it was (its status when deleted); a message in any other "
        "status is a conflict (exit 1) and stays. --all deletes the succeeded and dead messages "
        "the filters select (--status narrows to one), last changed before the command started; "
        "--dry-run counts them instead (would delete N).",
    )
    sub.add_argument("id", metavar="ID", type=integer, nargs="?", help="the message's id")
    bulk_options(sub, "every succeeded or dead message the filters select", "delete")

    sub = command(
        "retry-now",
        cmd_retry_now,
        "make a message waiting for its backoff or delay due now, or with --all those the "
        "filters select",
        details="Its retry count stays; a message of an ordering group still waits behind its "
        "group's head. A message already due is shown unchanged; one that is not pending is a "
        "conflict (exit 1). --all takes the delayed messages last changed before the command "
        "started; --dry-run counts them instead (would retry now N).",
    )
    sub.add_argument("id", metavar="ID", type=integer, nargs="?", help="the pending message")
    bulk_options(sub, "every delayed pending message the filters select", "retry now")

    sub = command(
        "move",
        cmd_move,
        "move a pending or dead message to another queue, or with --all those the filters "
        "select",
        details="It keeps its id, payload, status, counts, history and idempotency key; its "
        "moved_from is QUEUE. A processing or succeeded message is a conflict (exit 1), and so "
        "is one whose idempotency key a message of the target queue carries; both stay. --all "
        "(with --to) takes the pending and dead messages last changed before the command "
        "started, skipping those whose key the target holds; --dry-run counts them instead "
        "(would move N).",
    )
    sub.add_argument("id", metavar="ID", type=integer, nargs="?", help="the message's id")
    sub.add_argument("to", metavar="TO", nargs="?", help="the queue it goes to")
    sub.add_argument("--to", dest="to_all", metavar="TO", help="with --all: the queue they go to")
    bulk_options(sub, "every pending and dead message the filters select", "move")

    sub = command(
        "purge",
        cmd_purge,
        "delete the succeeded or dead messages not changed for a while",
    )
    # The finished statuses, which the core's purge takes (it exports no list of them).
    sub.add_argument("--status", required=True, choices=["succeeded", "dead"])
    sub.add_argument(
        "--older-than",
        required=True,
        type=seconds,
        metavar="DURATION",
        help="not changed for this long: seconds, or 15m, 12h, 7d",
    )

    command(
        "reap",
        cmd_reap,
        "take back the queue's expired leases now (and take out its expired pending messages)",
        details="Each message held past its lease counts as a failed attempt: pending again "
        "with its backoff, or dead past its retries, as the next claim would do (a paused or "
        "idle queue claims nothing). Prints how many.",
    )

    sub = command(
        "enqueue",
        cmd_enqueue,
        "enqueue a payload, or one payload per line of stdin (-)",
        details=f"Lines are enqueued {MAX_BATCH} per transaction, all or nothing: a bad line stops "
        f"the command; the transactions before it are committed, none of the {MAX_BATCH} lines of "
        "its own is enqueued.",
    )
    sub.add_argument(
        "payload",
        metavar="PAYLOAD",
        help="the payload, or - to read one per line (ending in LF or CRLF, which is not kept)",
    )
    sub.add_argument(
        "--max-retries",
        type=within(MAX_RETRIES_RANGE),
        help=f"attempts before a message is dead ({low_high(MAX_RETRIES_RANGE)}; "
        f"default {DEFAULT_MAX_RETRIES})",
    )
    sub.add_argument(
        "--delay", type=seconds, metavar="DURATION", help="not claimable before this long"
    )
    sub.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="when the queue holds a message with this key, show it instead of enqueueing",
    )
    sub.add_argument(
        "--group",
        metavar="GROUP",
        help="the ordering group: a group's messages are delivered one at a time, in order",
    )
    sub.add_argument(
        "--expires-in",
        type=seconds,
        metavar="DURATION",
        help="still pending after this long, it is never delivered (default: the queue's "
        "setting, else never)",
    )

    sub = command(
        "settings",
        cmd_settings,
        "show the settings stored with a queue, or change some of them",
        details="The settings apply to every process that uses the queue; a value given in a "
        "call (or a backoff given to a queue handle in code) wins over them. Options change "
        "only the settings they name: the others keep their stored values.",
    )
    sub.add_argument(
        "--max-retries",
        type=within(MAX_RETRIES_RANGE),
        help=f"attempts before a message is dead, for enqueues that give none "
        f"({low_high(MAX_RETRIES_RANGE)}; unset: {DEFAULT_MAX_RETRIES})",
    )
    sub.add_argument(
        "--lease",
        type=seconds,
        metavar="DURATION",
        help="the lease of claims and heartbeats that give none (unset: the opener's default)",
    )
    sub.add_argument(
        "--expires-in",
        type=seconds,
        metavar="DURATION",
        help="the expiry of enqueues and replays that give none (unset: never)",
    )
    sub.add_argument(
        "--on-expiry",
        choices=list(ON_EXPIRY),
        help="what expiry does to a pending message: dead (with the error `expired`) or "
        "discard (deleted)",
    )
    sub.add_argument(
        "--backoff-initial",
        type=seconds,
        metavar="DURATION",
        help="the backoff's delay after the first failure (default 2s)",
    )
    sub.add_argument(
        "--backoff-multiplier",
        type=number,
        metavar="X",
        help=f"the backoff's growth per further failure "
        f"({BACKOFF_MULTIPLIER_RANGE[0]:g}..{BACKOFF_MULTIPLIER_RANGE[1]:g}; default 2)",
    )
    sub.add_argument(
        "--backoff-cap",
        type=seconds,
        metavar="DURATION",
        help="the backoff's longest delay (default 1h)",
    )
    sub.add_argument(
        "--backoff-jitter",
        choices=["full", "equal", "none"],
        help="how the backoff's delays are spread (default none)",
    )
    sub.add_argument(
        "--unset",
        action="append",
        default=[],
        choices=SETTINGS,
        metavar="SETTING",
        help=f"unset a setting (its fallback applies again): {', '.join(SETTINGS)}; repeatable",
    )
    create_option(sub, "store settings for")

    sub = command(
        "pause",
        cmd_pause,
        "pause a queue: it claims nothing (for every process) until resumed",
        details="Enqueues and the other commands still work; leases already held keep running.",
    )
    create_option(sub, "pause")
    command("resume", cmd_resume, "resume a paused queue")


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
        "--create",
        action="store_true",
        help="serve a new database: create PATH's file (a URL's schema) when there is none (else "
        "exit 1, as every command: a mistyped PATH is no new, empty database)",
    )
    token = sub.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        help="require `Authorization: Bearer TOKEN` (default: $DEADLETTER_TOKEN; prefer it or "
        "--token-file on a shared machine, where every user sees this option in `ps`; empty: "
        "refused)",
    )
    token.add_argument(
        "--token-file",
        metavar="FILE",
        help="require the token that FILE holds (one line: its line ending is not part of it); "
        "unlike --token, other users of the machine cannot read it in `ps`",
    )
    sub.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients address the server by (the Host header), besides localhost, "
        "IP addresses and the --host name: queue.example.com, *.example.com, or * for any; "
        "repeatable (others: 421)",
    )
    sub.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="an origin (https://app.example.com) whose web pages may call the API, with CORS, "
        "besides the server's own; repeatable (others: 403)",
    )
    sub.add_argument(
        "--max-payload-bytes",
        type=positive,
        default=DEFAULT_MAX_PAYLOAD_BYTES,
        help=f"payload limit (default {DEFAULT_MAX_PAYLOAD_BYTES})",
    )
    sub.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="uvicorn's log level (info shows each request)",
    )
    return root
