"""Checks that the workspace's `rust-version` is true of Cargo.lock: no locked package declares
that it needs a newer Rust (a `cargo update` can pull one in, e.g. parking_lot 0.13 needs Rust
1.95). Run by `make lint`; prints the offenders and exits 1."""

from __future__ import annotations

import json
import subprocess
import sys


def version(text: str) -> tuple[int, int, int]:
    """``"1.85"`` as ``(1, 85, 0)``."""
    major, minor, patch = (text.split(".") + ["0", "0"])[:3]
    return int(major), int(minor), int(patch)


def main() -> int:
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    members = [p for p in metadata["packages"] if p["id"] in metadata["workspace_members"]]
    declared = max(version(p["rust_version"]) for p in members)
    newer = sorted(
        f"{p['name']} {p['version']} needs Rust {p['rust_version']}"
        for p in metadata["packages"]
        if p.get("rust_version") and version(p["rust_version"]) > declared
    )
    for line in newer:
        print(f"the workspace's rust-version is too low: {line}", file=sys.stderr)
    return 1 if newer else 0


if __name__ == "__main__":
    sys.exit(main())
