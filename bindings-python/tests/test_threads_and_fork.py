"""Threads that are inside a call when the interpreter exits, and processes forked while another
thread is inside a call (issue 6, items 1 and 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The script with four polling threads instead of one: without the fix it aborted in about
# nine runs of ten on a file (exit status 134, SIGABRT), seven of ten in memory.
DAEMONS_AT_EXIT = """
import sys, threading, time
import deadletter
q = deadletter.open(sys.argv[1]).queue("q")
def poll():
    while True:
        q.enqueue("t"); m = q.claim(); q.succeed(m.id, lease_token=m.lease_token)
for _ in range(4):
    threading.Thread(target=poll, daemon=True).start()
time.sleep(0.3)
"""


@pytest.mark.parametrize("where", ["memory", "file"])
def test_daemon_threads_inside_calls_at_exit_leave_exit_status_0(tmp_path: Path, where: str) -> None:
    codes = []
    for run in range(3):
        path = ":memory:" if where == "memory" else str(tmp_path / f"daemons{run}.db")
        done = subprocess.run(
            [sys.executable, "-c", DAEMONS_AT_EXIT, path], capture_output=True, timeout=60
        )
        codes.append((done.returncode, done.stderr.decode(errors="replace")[-500:]))
    assert codes == [(0, "")] * 3
