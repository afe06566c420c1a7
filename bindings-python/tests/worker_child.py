"""A worker process for the signal tests: runs ``Queue.process`` (``threads``) or
``Queue.process_async`` (``async``) on the queue "jobs" of a SQLite file, with 3 handlers at once
and a 30 s lease. Each handler prints ``started <id>`` and then sleeps; once the loop returned,
the process prints ``handled <n>`` and exits 0.

Usage: python worker_child.py PATH threads|async HANDLER_SECONDS SHUTDOWN_TIMEOUT
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import deadletter


def say(line: str) -> None:
    """One line on stdout, whole even when handler threads write at once."""
    os.write(sys.stdout.fileno(), f"{line}\n".encode())


def main() -> int:
    path, mode = sys.argv[1], sys.argv[2]
    sleep, shutdown_timeout = float(sys.argv[3]), float(sys.argv[4])
    options = {"concurrency": 3, "lease": 30, "shutdown_timeout": shutdown_timeout}
    with deadletter.open(path) as db:
        jobs = db.queue("jobs")
        if mode == "threads":

            def handler(message: deadletter.Message) -> None:
                say(f"started {message.id}")
                time.sleep(sleep)

            handled = jobs.process(handler, **options)
        else:

            async def async_handler(message: deadletter.Message) -> None:
                say(f"started {message.id}")
                await asyncio.sleep(sleep)

            handled = asyncio.run(jobs.process_async(async_handler, **options))
    say(f"handled {handled}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
