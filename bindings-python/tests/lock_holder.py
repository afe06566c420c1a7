"""Another process that holds a SQLite file's write lock (``BEGIN EXCLUSIVE``) until released."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # until released
conn.execute("COMMIT")
"""


@contextmanager
def write_lock_held(path: Path) -> Iterator[None]:
    """Holds the write lock of ``path`` in another process (Python's ``sqlite3``) inside the
    block; released (committed) when it ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
