"""Runs ``deadletter serve`` in a subprocess for the tests and the HTTP benchmark."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Union

import httpx

STARTUP_TIMEOUT = 60.0  # seconds; four workers on two busy cores take a few


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def deadletter_serve(
    path: Union[Path, str],
    *,
    workers: int = 1,
    token: Optional[str] = None,
    args: Sequence[str] = (),
    log: Optional[Path] = None,
    port: Optional[int] = None,
) -> Iterator[str]:
    """``deadletter serve PATH`` on a free port of 127.0.0.1; yields its base URL once
    ``/healthz`` answers 200, and stops it (SIGTERM, as Ctrl-C would) afterwards. ``path``: a
    SQLite file, or a PostgreSQL URL (a str; then ``log`` is required). The server's output goes
    to ``log`` (default: a file beside the database). ``port``: default, a free one."""
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "deadletter.cli",
        "serve",
        str(path),
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
        "--create",  # the tests' databases are often new (else refused: finding M15)
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "DEADLETTER_TOKEN"}
    if token is not None:
        env["DEADLETTER_TOKEN"] = token
    log = log or Path(path).with_suffix(".serve.log")
    cwd = path.parent if isinstance(path, Path) else log.parent
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"deadletter serve exited {proc.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"deadletter serve did not answer:\n{log.read_text()}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
