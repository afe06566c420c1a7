"""Benchmark, not a test: requests per second of `deadletter serve` with 1 and 4 worker processes,
for enqueue and for claim+succeed, against the Python API on the same kind of file in the same
run (the reference: what the HTTP layer costs on top of the queue).

Each figure is measured twice: on the regular disk, where every commit waits for fsync (SQLite's
durability), and on tmpfs (/dev/shm), where what remains is the cost of HTTP, JSON and SQLite's
locking between processes. The load comes from CLIENTS threads with one keep-alive httpx
connection each, in this process, on the same cores as the server: the figures are for
comparing, not capacity planning.

Run: make bench-http   (prints figures; asserts nothing: these machines are shared and noisy)
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

import deadletter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serving import deadletter_serve  # noqa: E402 (the tests' helper)

ENQUEUES = 2000
CYCLES = 1000
CLIENTS = 16
STORAGE = {"disk": None, "tmpfs": "/dev/shm"}


def rate(count: int, run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return count / (time.perf_counter() - start)


def library(directory: str | None) -> tuple[float, float]:
    """Enqueues/s and claim+succeed cycles/s of the Python API from CLIENTS threads on one
    connection (the same concurrency as the HTTP clients)."""
    with (
        tempfile.TemporaryDirectory(dir=directory) as tmp,
        deadletter.open(Path(tmp) / "lib.db") as db,
    ):
        q = db.queue("bench")

        def cycle(_: int) -> None:
            m = q.claim()
            assert m is not None
            q.succeed(m.id, lease_token=m.lease_token)

        with ThreadPoolExecutor(CLIENTS) as pool:
            enqueue = rate(
                ENQUEUES, lambda: list(pool.map(lambda _: q.enqueue("x" * 100), range(ENQUEUES)))
            )
            cycles = rate(CYCLES, lambda: list(pool.map(cycle, range(CYCLES))))
        return enqueue, cycles


def over_http(directory: str | None, workers: int) -> tuple[float, float]:
    """Enqueue requests/s and claim+succeed cycles/s through `deadletter serve`."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        with deadletter_serve(Path(tmp) / "http.db", workers=workers) as url:
            local = threading.local()

            def client() -> httpx.Client:
                if not hasattr(local, "client"):
                    local.client = httpx.Client(base_url=url, timeout=120)
                return local.client  # type: ignore[no-any-return]

            def enqueue(_: int) -> None:
                r = client().post("/queues/bench/messages", json={"payload": "x" * 100})
                assert r.status_code == 201, r.text

            def cycle(_: int) -> None:
                r = client().post("/queues/bench/claim")
                assert r.status_code == 200, r.text
                m = r.json()
                done = client().post(
                    f"/queues/bench/messages/{m['id']}/succeed",
                    json={"lease_token": m["lease_token"]},
                )
                assert done.status_code == 200, done.text

            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(lambda _: client().get("/healthz"), range(CLIENTS)))  # connect
                enqueues = rate(ENQUEUES, lambda: list(pool.map(enqueue, range(ENQUEUES))))
                cycles = rate(CYCLES, lambda: list(pool.map(cycle, range(CYCLES))))
    return enqueues, cycles


def main() -> int:
    print(
        f"{ENQUEUES} enqueues, then {CYCLES} claim+succeed cycles (2 requests each), "
        f"{CLIENTS} client threads; payload 100 bytes. Each HTTP run follows a run of the "
        "Python API on the same storage (fsync latency on shared disks drifts by 3x)."
    )
    print(f"{'storage':<8}{'':<22}{'enqueue/s':>12}{'cycles/s':>12}{'requests/s':>12}")
    for storage, directory in STORAGE.items():
        if directory is not None and not Path(directory).is_dir():
            print(f"{storage:<8}(no {directory}: skipped)")
            continue
        for workers in (1, 4):
            enqueue, cycles = library(directory)
            enq, cyc = over_http(directory, workers)
            label = f"HTTP, {workers} worker{'s' if workers > 1 else ''}"
            print(f"{storage:<8}{'Python API':<22}{enqueue:>12.0f}{cycles:>12.0f}")
            print(
                f"{'':<8}{label:<22}{enq:>12.0f}{cyc:>12.0f}{2 * cyc:>12.0f}"
                f"   ({enq / enqueue:.2f}x, {cyc / cycles:.2f}x the API)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
