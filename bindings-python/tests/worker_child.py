"""A worker process for the signal tests: runs ``Queue.process`` (``threads``) or
``Queue.process_async`` (``async``) on the queue "jobs" of a SQLite file, with 3 handlers at once
and a 30 s lease; ``threads2`` runs two such loops, one in the main thread and one in another
thread, ``async2`` two on one event loop. Each handler prints ``started <id>`` and then sleeps;
once the loops returned, the process prints ``handled <n>`` (their total) and exits 0.

Usage: python worker_child.py PATH threads|async|threads2|async2 HANDLER_SECONDS SHUTDOWN_TIMEOUT
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
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

        def handler(message: deadletter.Message) -> None:
            say(f"started {message.id}")
            time.sleep(sleep)

        async def async_handler(message: deadletter.Message) -> None:
            say(f"started {message.id}")
            await asyncio.sleep(sleep)

        async def two_async_loops() -> int:
            loops = [jobs.process_async(async_handler, **options) for _ in range(2)]
            return sum(await asyncio.gather(*loops))

        if mode == "threads":
            handled = jobs.process(handler, **options)
        elif mode == "threads2":
            other: list[int] = []
            thread = threading.Thread(target=lambda: other.append(jobs.process(handler, **options)))
            thread.start()
            handled = jobs.process(handler, **options)
            thread.join()
            handled += other[0]
        elif mode == "async":
            handled = asyncio.run(jobs.process_async(async_handler, **options))
        else:
            handled = asyncio.run(two_async_loops())
    say(f"handled {handled}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
