"""A worker process for the pause tests: runs ``Queue.process`` (``threads``) or
``Queue.process_async`` (``async``) on the queue "jobs" of a SQLite file, 2 handlers at once, a
1 s lease, no backoff, until the queue is idle. Each handler prints ``started <id>`` and sleeps
HANDLER_SECONDS; then the process prints ``handled <n>`` and exits 0.

Usage: python paused_worker_child.py PATH threads|async HANDLER_SECONDS
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
    path, mode, sleep = sys.argv[1], sys.argv[2], float(sys.argv[3])
    options = {"concurrency": 2, "lease": 1, "poll_interval": 0.1, "stop_when_idle": True}
    with deadletter.open(path) as db:
        jobs = db.queue("jobs", backoff=deadletter.Backoff(initial=0, cap=0))

        def handler(message: deadletter.Message) -> None:
            say(f"started {message.id}")
            time.sleep(sleep)

        async def async_handler(message: deadletter.Message) -> None:
            say(f"started {message.id}")
            await asyncio.sleep(sleep)

        if mode == "threads":
            handled = jobs.process(handler, **options)
        else:
            handled = asyncio.run(jobs.process_async(async_handler, **options))
    say(f"handled {handled}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
