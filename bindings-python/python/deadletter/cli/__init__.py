"""The ``deadletter`` console script: an operator's way into a queue database, and the server.

Commands (``deadletter COMMAND -h`` for their options)::

    deadletter serve PATH [--create] [--host 127.0.0.1] [--port 8000] [--workers N]
                          [--token T | --token-file FILE]
    deadletter stats PATH [QUEUE]
    deadletter list PATH QUEUE [--status S] [FILTERS] [--limit N] [--after-id ID]
    deadletter show PATH QUEUE ID
    deadletter replay PATH QUEUE (ID | --all [--status S] [FILTERS] [--limit N] [--dry-run])
    deadletter delete PATH QUEUE (ID | --all [--status S] [FILTERS] [--limit N] [--dry-run])
    deadletter retry-now PATH QUEUE (ID | --all [--status S] [FILTERS] [--limit N] [--dry-run])
    deadletter move PATH QUEUE (ID TO | --all --to TO [--status S] [FILTERS] [--limit N]
                                [--dry-run])
    deadletter purge PATH QUEUE --status {succeeded,dead} --older-than DURATION
    deadletter reap PATH QUEUE
    deadletter enqueue PATH QUEUE [--max-retries N] [--delay DURATION] [--group G]
                                  [--expires-in DURATION] (PAYLOAD [--idempotency-key K] | -)
    deadletter settings PATH QUEUE [--max-retries N] [--lease D] [--expires-in D]
                                   [--on-expiry {dead,discard}] [--backoff-initial D]
                                   [--backoff-multiplier X] [--backoff-cap D]
                                   [--backoff-jitter {full,equal,none}] [--unset SETTING]
                                   [--create]
    deadletter pause PATH QUEUE [--create]
    deadletter resume PATH QUEUE

FILTERS, combined with AND: ``--delayed`` or ``--not-delayed``, ``--payload-contains T``,
``--error-contains T``, ``--group G``, ``--idempotency-key K``, ``--created-after I``,
``--created-before I`` (and ``--updated-``, ``--dead-``): instants in RFC 3339, UTC. A bulk
form's ``--dry-run`` changes nothing and prints the exact count (``would replay 12``).

Output is an aligned table for people, or JSON with ``--json`` (messages and statistics as the
HTTP API writes them), both written by `emit`. For people, control characters in values (a
payload's, an error's) are shown escaped (``\\n``, ``\\x1b``), never sent to the terminal. Exit
status: 0 on success, 1 on a deadletter error (its message on stderr), 2 on a usage error. PATH is
a SQLite file or a PostgreSQL URL (``postgresql://user:password@host/db``; every command takes
``--schema``, default ``deadletter``). Commands other than ``serve`` and ``enqueue`` refuse a
SQLite PATH that does not exist rather than create an empty database. ``:memory:`` is a usage error
but for ``serve`` (one process), which serves a private in-memory database that is lost when it
stops; ``./:memory:`` is a file of that name. A QUEUE that `Database.queues` does not list (no
message, no stored settings) is no queue: the commands note it on stderr with the queues there
are, and ``pause``, ``resume`` and ``settings`` refuse it (exit 1) unless ``--create`` (finding
M8). The bulk actions' ``--json`` is ``{"count": n, "dry_run": bool}``. ``list --json`` writes the page's messages as a JSON
array; when more may follow, stderr's last line is ``more may follow: --after-id N``. A long
``--all`` or ``enqueue -`` shows its progress on stderr when that is a terminal. ``serve`` needs the
``server`` extra (``pip install 'deadletter[server]'``).

The package: `_arguments` (the parser and its argument types), `_commands` (one function a
command, over the public `deadletter` API) and `_output` (`emit`, the one writer of tables and
JSON, and the progress line). Limits and status names in the help come from the core.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from typing import Optional, TextIO

import deadletter

from ._arguments import parser
from ._commands import Failure, Usage
from ._output import printable

__all__ = ["main"]


def main(
    argv: Optional[Sequence[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """Runs one command; returns the exit status (argparse exits with 2 on a usage error)."""
    args, unknown = parser().parse_known_args(argv)
    if unknown:  # the command's usage, not the top-level one (new-user finding M10, session 7)
        args.parser.error(unrecognized(args.parser, unknown))
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


def unrecognized(sub: argparse.ArgumentParser, unknown: list[str]) -> str:
    """argparse's ``unrecognized arguments: ...``, with the command's option closest to the
    first unknown one (``--stauts``: did you mean --status?)."""
    options = [name for action in sub._actions for name in action.option_strings]
    flags = [word.partition("=")[0] for word in unknown if word.startswith("--")]
    close = difflib.get_close_matches(flags[0], options, n=1) if flags else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unrecognized arguments: {' '.join(unknown)}{hint}"
