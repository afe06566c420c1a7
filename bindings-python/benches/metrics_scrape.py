"""Benchmark, not a test: what a Prometheus scrape of ``GET /metrics`` costs on a SQLite file of
1,000,000 messages, in one queue and spread over 1,000 queues.

For each file it prints the median time of: `Database.queues()` (the statistics the metrics are
made of, read from indexes), ``GET /metrics`` through the ASGI app in this process (the same plus
prometheus-client's text format and Starlette), and ``GET /metrics`` of `deadletter serve` over
HTTP; and, as the reference measured in the same run, ``GET /metrics`` of the same app on an
empty database (the fixed cost of a request). The file is built as `make bench-dlq` builds it
(300,000 dead, 10,000 pending, the rest succeeded); the second one moves its messages into
1,000 queues by one UPDATE.

Run: make bench-metrics   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import httpx

import deadletter
import deadletter.http

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[0] / "tests"))
import dlq  # noqa: E402 (the DLQ benchmark's file builder)
from serving import deadletter_serve  # noqa: E402 (the tests' helper)

with warnings.catch_warnings():  # Starlette 1.x prefers httpx2 for its test client; httpx works
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

ROUNDS = 15


def median_ms(call: Callable[[], object]) -> float:
    call()  # warm the page cache and the statement cache
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def scrape(client: httpx.Client | TestClient) -> Callable[[], object]:
    def call() -> object:
        r = client.get("/metrics")
        assert r.status_code == 200, r.text
        return r.text

    return call


def measure(label: str, path: Path) -> None:
    with deadletter.open(path) as db:
        queues = db.queues()
        client = TestClient(deadletter.http.app(db))
        lines = scrape(client)().count("\n")
        in_process = median_ms(scrape(client))
        direct = median_ms(db.queues)
    with deadletter_serve(path) as url, httpx.Client(base_url=url) as http:
        served = median_ms(scrape(http))
    total = sum(s.pending + s.processing + s.succeeded + s.dead for s in queues)
    print(
        f"{label:<24}{len(queues):>7}{total:>10}{lines:>7}"
        f"{direct:>12.1f}{in_process:>12.1f}{served:>12.1f}"
    )


def main() -> int:
    print(f"median of {ROUNDS} calls, in ms")
    print(
        f"{'file':<24}{'queues':>7}{'messages':>10}{'lines':>7}"
        f"{'queues()':>12}{'app':>12}{'served':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.db"
        deadletter.open(empty).close()
        measure("empty (reference)", empty)
        path = Path(tmp) / "million.db"
        started = time.perf_counter()
        dlq.build(path)
        built = time.perf_counter() - started
        measure("1M in one queue", path)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE messages SET queue = 'q' || (id % 1000)")
        conn.close()
        measure("1M in 1,000 queues", path)
    print(f"(the file of 1,000,000 messages was built in {built:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
