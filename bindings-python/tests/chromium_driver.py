"""Runs a Chromium driver of the browser tests: a node script on playwright-core (`npm ci`) that
drives Debian's Chromium (`scripts/setup.sh browser`; both run by `make test-python`) and prints
one JSON object last."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def drive(driver: Path, *args: str) -> dict[str, Any]:
    """The JSON object ``node driver *args`` printed last, once it exited 0 without a
    ``failure``."""
    node = shutil.which("node")
    assert node, "node is missing (the README's requirements)"
    assert (ROOT / "node_modules" / "playwright-core").is_dir(), "run `npm ci` (make test does)"
    run = subprocess.run(
        [node, str(driver), *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    assert "failure" not in result, result["failure"] + run.stderr
    return result
