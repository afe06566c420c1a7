"""The WebAssembly component in dist/ (`make dist`), loaded as a Python user loads it: in a fresh
folder holding only ``deadletter-X.Y.Z.component.wasm``, with a fresh venv where only the host
package is installed (PyPI ``wasmtime``, the version bindings-component/requirements.txt pins),
the README's Python host (the block fenced ```python component) runs. Also: the component ships
with its WIT, the repository's ``wit/deadletter.wit`` at the workspace version. (Its JavaScript
twin, through jco, is component.test.mjs.)"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from test_pip import DIST, ROOT, VERSION, run

WIT = ROOT / "bindings-component" / "wit" / "deadletter.wit"
REQUIREMENTS = ROOT / "bindings-component" / "requirements.txt"
COMPONENT = DIST / f"deadletter-{VERSION}.component.wasm"


def test_the_component_ships_with_its_wit_at_the_workspace_version() -> None:
    assert COMPONENT.is_file(), f"no {COMPONENT.name} in dist/ (run `make dist`)"
    assert COMPONENT.read_bytes()[:8] == b"\0asm\x0d\0\x01\0", "not a component (layer 1)"
    shipped = DIST / f"deadletter-{VERSION}.wit"
    assert shipped.read_text(encoding="utf-8") == WIT.read_text(encoding="utf-8")
    assert f"\npackage deadletter:queue@{VERSION};\n" in shipped.read_text(encoding="utf-8")


def test_the_readme_host_runs_with_only_wasmtime_installed(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [host] = re.findall(r"```python component\n(.*?)```", readme, re.S)
    pin = next(
        line for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines()
        if line.startswith("wasmtime==")
    )
    base = getattr(sys, "_base_executable", sys.executable)
    run(base, "-m", "venv", tmp_path / "venv", cwd=tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run(*pip, "--only-binary", ":all:", pin, cwd=tmp_path)
    installed = run(python, "-m", "pip", "list", "--format=freeze", cwd=tmp_path).split()
    assert [p for p in installed if not p.startswith(("pip==", "setuptools=="))] == [pin]
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(COMPONENT, app)
    (app / "host.py").write_text(host, encoding="utf-8")
    run(python, "host.py", cwd=app)
