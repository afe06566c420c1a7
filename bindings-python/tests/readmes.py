"""The READMEs whose code runs in the tests (docs that run): the repository's and the Python
package's own (bindings-python/README.md, PyPI's long description). Blocks fenced ```python run
in test_readme.py; ```python server (they need the server extra) in test_http.py; ```python
postgres (they need a server) in test_postgres.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", ROOT / "bindings-python" / "README.md"]


def blocks(fence: str) -> list[Any]:
    """pytest parameters ``(path, code)``, one per block fenced ```<fence> in the READMEs, with
    ids such as ``bindings-python/README.md:2``."""
    found = []
    for readme in READMES:
        codes = re.findall(rf"```{fence}\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
        assert codes, f"no block fenced {fence!r} in {readme}"
        name = readme.relative_to(ROOT).as_posix()
        found += [pytest.param(readme, code, id=f"{name}:{n}") for n, code in enumerate(codes)]
    return found


def run(readme: Path, code: str) -> dict[str, Any]:
    """Runs one block as a module would (its globals are returned)."""
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    exec(compile(code, str(readme), "exec"), namespace)
    return namespace
