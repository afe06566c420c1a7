"""Runs a Chromium driver of the browser tests: a node script on playwright-core (`npm ci`) that
drives Debian's Chromium (`scripts/setup.sh browser`; both run by `make test-python`) and prints
one JSON object last."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def drive(driver: Path, *args: str) -> dict[str, Any]:
    """The JSON object ``node driver *args`` printed last, once it exited 0 without a
    ``failure``."""
    return drive_with(driver, {}, *args)


def drive_with(
    driver: Path, handlers: Mapping[str, Callable[[], object]], *args: str
) -> dict[str, Any]:
    """`drive`, for a driver that asks the test to act meanwhile (stop the server, start it
    again): each line ``@NAME`` it prints calls ``handlers[NAME]()``, then ``done`` is written to
    its stdin."""
    node = shutil.which("node")
    assert node, "node is missing (the README's requirements)"
    assert (ROOT / "node_modules" / "playwright-core").is_dir(), "run `npm ci` (make test does)"
    with tempfile.TemporaryFile("w+") as errors:
        run = subprocess.Popen(
            [node, str(driver), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=ROOT,
        )
        assert run.stdin is not None and run.stdout is not None
        lines = []
        for line in run.stdout:
            if line.startswith("@"):
                handlers[line[1:].strip()]()
                run.stdin.write("done\n")
                run.stdin.flush()
            else:
                lines.append(line)
        status = run.wait(timeout=180)
        errors.seek(0)
        stderr = errors.read()
    output = "".join(lines)
    assert status == 0, output + stderr
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    assert "failure" not in result, result["failure"] + stderr
    return result
