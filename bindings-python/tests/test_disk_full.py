"""A full disk: the call that does not fit raises `StoreError`, nothing stored is lost, and the
same `Database` works again once space is freed. On a 4 MiB tmpfs, mounted for the test (root on
Linux; skipped, with the reason, where that is not possible)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

import deadletter

PAYLOAD = 16 * 1024  # bytes per message: some 50 fit beside the ballast


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = shutil.which("mount")
    if mount is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8) (Linux)")
    mounted = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_full_disk_is_a_store_error_that_loses_nothing_and_passes(small_disk: Path) -> None:
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * (2 * 1024 * 1024))
    path = small_disk / "q.db"
    with deadletter.open(path) as db:
        q = db.queue("q")
        stored: dict[int, str] = {}

        def everything() -> dict[int, str]:
            found: dict[int, str] = {}
            while page := q.list(limit=1000, after_id=max(found, default=0)):
                found.update((m.id, m.payload) for m in page)
            return found

        with pytest.raises(deadletter.StoreError) as full:
            for n in range(1000):
                payload = f"{n:08d}" + "x" * (PAYLOAD - 8)
                stored[q.enqueue(payload).id] = payload
        assert "full" in str(full.value), full.value
        assert len(stored) > 10  # the disk filled up along the way, not at once
        # Nothing acknowledged is lost, and the refused message is not there.
        assert everything() == stored
        try:
            claimed = q.claim()  # a claim writes too: it may not fit either
        except deadletter.StoreError:
            assert q.get(min(stored)).status == "pending"
        else:
            assert claimed is not None and claimed.id == min(stored)
            q.fail(claimed.id, "no room", lease_token=claimed.lease_token, retryable=False)
            q.replay(claimed.id)

        # Space is freed: the same Database takes new messages and works through some. (Not
        # through all: the WAL grows until its checkpoint at 1,000 pages, 4 MiB, and the first
        # messages fill 2 MiB of it.)
        ballast.unlink()
        extra = q.enqueue("after the disk was full")
        stored[extra.id] = extra.payload
        assert everything() == stored
        done = []
        for _ in range(5):
            m = q.claim()
            assert m is not None
            done.append(q.succeed(m.id, lease_token=m.lease_token).id)
        assert done == sorted(stored)[:5]
        assert len(q.list(status="pending", limit=1000)) == len(stored) - 5
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
