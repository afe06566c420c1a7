"""Benchmark, not a test: how draining one SQLite file scales with workers.

- Threads: 1 and 4 threads sharing one `Database` drain N messages (claim + succeed until empty),
  at durability "full" (where group commit lets the threads share each WAL sync) and "normal".
- Processes: 1 and 4 processes, each with its own `Database` on the file, drain N messages at the
  default durability; each process's share of the messages shows whether one starves (SQLite's
  write lock is not fair: the busy handler retries every millisecond).

Every figure is min / median / max over ROUNDS rounds, each on a new file.

Run: make bench-scaling   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import deadletter

N = int(os.environ.get("BENCH_SCALING_N", "10000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PAYLOAD = '{"event": "signup", "user": 12345, "email": "alice@example.com"}'


def fill(path: Path) -> None:
    with deadletter.open(path) as db:
        q = db.queue("q")
        for start in range(0, N, 1000):
            q.enqueue_many([PAYLOAD] * min(1000, N - start))


def drain(q: deadletter.Queue) -> int:
    handled = 0
    while (m := q.claim(lease=300)) is not None:
        q.succeed(m.id, lease_token=m.lease_token)
        handled += 1
    return handled


def open_with(path: Path, durability: str) -> deadletter.Database | None:
    """`deadletter.open` at `durability`; `None` for "normal" where this deadletter has no
    `durability` (the figures before it), which was always "full"."""
    try:
        return deadletter.open(path, durability=durability)  # type: ignore[call-arg]
    except TypeError:
        return deadletter.open(path) if durability == "full" else None


def threads_rate(threads: int, durability: str) -> float | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.db"
        fill(path)
        db = open_with(path, durability)
        if db is None:
            return None
        with db:
            q = db.queue("q")
            counts: list[int] = []
            workers = [threading.Thread(target=lambda: counts.append(drain(q))) for _ in range(threads)]
            start = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            elapsed = time.perf_counter() - start
            assert sum(counts) == N
            return N / elapsed


def process_worker(path: str, go: multiprocessing.synchronize.Event, results: multiprocessing.Queue) -> None:
    with deadletter.open(path) as db:
        q = db.queue("q")
        go.wait()
        results.put(drain(q))


def processes_rate(processes: int) -> tuple[float, list[float]]:
    """Messages/s of `processes` processes draining one file, and each one's share (sorted)."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.db"
        fill(path)
        go = context.Event()
        results: multiprocessing.Queue = context.Queue()
        workers = [context.Process(target=process_worker, args=(str(path), go, results)) for _ in range(processes)]
        for w in workers:
            w.start()
        time.sleep(1.0)  # every process has imported deadletter and opened the file
        start = time.perf_counter()
        go.set()
        counts = [results.get() for _ in workers]
        elapsed = time.perf_counter() - start
        for w in workers:
            w.join()
        assert sum(counts) == N
        return N / elapsed, sorted(c / N for c in counts)


def spread(values: list[float]) -> str:
    return f"{min(values):>8,.0f} / {statistics.median(values):>8,.0f} / {max(values):>8,.0f}"


def main() -> int:
    print(f"draining {N:,} messages (claim + succeed) from one SQLite file, {ROUNDS} rounds "
          "(min / median / max messages/s)")
    for durability in ("full", "normal"):
        one: list[float] = []
        four: list[float] = []
        for _ in range(ROUNDS):
            single_rate, four_rate = threads_rate(1, durability), threads_rate(4, durability)
            if single_rate is None or four_rate is None:
                break
            one.append(single_rate)
            four.append(four_rate)
        if not one:
            print(f"  durability {durability:<6}  n/a (no durability option)")
            continue
        ratio = statistics.median(four) / statistics.median(one)
        print(f"  durability {durability:<6}  1 thread  {spread(one)}   4 threads {spread(four)}   "
              f"{ratio:.2f}x")
    single: list[float] = []
    many: list[float] = []
    shares: list[list[float]] = []
    for _ in range(ROUNDS):
        single.append(processes_rate(1)[0])
        rate, share = processes_rate(4)
        many.append(rate)
        shares.append(share)
    ratio = statistics.median(many) / statistics.median(single)
    print(f"  durability full    1 process {spread(single)}   4 processes {spread(many)}   {ratio:.2f}x")
    for index, share in enumerate(shares):
        print(f"    round {index + 1}: share of each of the 4 processes "
              + ", ".join(f"{s:.0%}" for s in share))
    return 0


if __name__ == "__main__":
    sys.exit(main())
