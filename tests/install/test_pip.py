"""The Python release artifacts in dist/ (`make dist`), installed as users install them.

- the wheel: its name, tags, files and metadata; installed into a fresh venv with
  ``--no-index --only-binary :all:`` (no Rust, no maturin), where the usage tests of
  bindings-python/tests run against it: the README's quick start, four worker processes, and the
  SQLite-library tests (the same-process one is skipped there with its reason: the wheel carries
  its own SQLite); and in venvs of CPython 3.10, the oldest its abi3 tag covers (and the
  ``Requires-Python`` the package declares), and of CPython 3.13, the newest it claims, the API
  and conformance suites (each skipped, saying so, on a machine without that version);
- the sdist: built with ``pip wheel`` in a clean folder (maturin pinned by requirements-dev.txt as
  a constraint; registry crates cached in target/sdist), installed into a fresh venv, where it
  links the system SQLite and the same-process test runs;
- one version everywhere: the Cargo workspace's, in the wheel, the sdist, ``deadletter.__version__``
  and the npm tarball.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
TESTS = ROOT / "bindings-python" / "tests"
REQUIREMENTS = ROOT / "bindings-python" / "requirements-dev.txt"
USAGE_TESTS = ["test_readme.py", "test_processes.py", "test_sqlite_library.py"]


def workspace_version() -> str:
    manifest = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    match = re.search(r'\[workspace\.package\][^\[]*?^version = "([^"]+)"', manifest, re.M | re.S)
    assert match, "no [workspace.package] version in Cargo.toml"
    return match.group(1)


VERSION = workspace_version()


def only(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {DIST} (run `make dist`), found {found}"
    return found[0]


def pinned(package: str) -> list[str]:
    """The `package==version; marker` lines of requirements-dev.txt (pip takes the one whose
    marker fits the interpreter)."""
    lines = REQUIREMENTS.read_text(encoding="utf-8").splitlines()
    found = [line.strip() for line in lines if line.startswith(f"{package}==")]
    assert found, f"{package} is not pinned in {REQUIREMENTS}"
    return found


def run(*args: object, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def fresh_venv(where: Path, base: str | None = None) -> Path:
    """A new venv of `base` (default: the interpreter under .venv; nothing from .venv itself);
    returns its python."""
    base = base or getattr(sys, "_base_executable", sys.executable)
    run(base, "-m", "venv", where, cwd=where.parent)
    return where / "bin" / "python"


def cpython(version: str) -> str | None:
    """A CPython ``version`` (``"3.10"``) of this machine (pyenv's, or python3.10 on PATH), if
    there is one."""
    pattern = f"~/.pyenv/versions/{version}.*/bin/python{version}"
    candidates = sorted(glob.glob(os.path.expanduser(pattern)))
    candidates.append(shutil.which(f"python{version}") or "")
    wanted = tuple(int(part) for part in version.split("."))
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", f"import sys, venv; print(sys.version_info[:2] == {wanted})"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return candidate
    return None


def install_and_test(python: Path, wheel: Path, tests: list[str], cwd: Path) -> str:
    """Installs `wheel` without an index, then pytest; runs `tests` against the installed package
    (from a folder outside the repository, so nothing imports the source tree). Tests that need a
    PostgreSQL server (marked `postgres`) are deselected: `make test-postgres` runs them."""
    run(python, "-m", "pip", "install", "-q", "--no-index", "--only-binary", ":all:", wheel, cwd=cwd)
    run(python, "-m", "pip", "install", "-q", *pinned("pytest"), cwd=cwd)
    where = run(python, "-c", "import deadletter; print(deadletter.__file__)", cwd=cwd).strip()
    assert Path(where).is_relative_to(python.parent.parent), where
    pytest = [python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "not postgres"]
    return run(*pytest, *[TESTS / t for t in tests], cwd=cwd)


def test_one_version_everywhere() -> None:
    assert only("deadletter-*.whl").name.startswith(f"deadletter-{VERSION}-")
    assert only("deadletter-*.tar.gz").name == f"deadletter-{VERSION}.tar.gz"
    assert only("deadletter-*.tgz").name == f"deadletter-{VERSION}.tgz"


def test_the_wheel_is_one_abi3_manylinux_wheel_with_typing_license_and_readme() -> None:
    wheel = only("deadletter-*.whl")
    assert re.fullmatch(rf"deadletter-{re.escape(VERSION)}-cp310-abi3-manylinux_2_\d+_x86_64\.whl", wheel.name)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"deadletter-{VERSION}.dist-info"
        metadata = z.read(f"{info}/METADATA").decode()
        wheel_file = z.read(f"{info}/WHEEL").decode()
    assert {
        "deadletter/__init__.py",
        "deadletter/_errors.py",
        "deadletter/_deadletter.pyi",
        "deadletter/py.typed",
        "deadletter/_deadletter.abi3.so",
        f"{info}/licenses/LICENSE",
    } <= names
    assert not [n for n in names if n.endswith((".rs", ".toml", ".lock"))]
    assert "Root-Is-Purelib: false" in wheel_file
    headers, _, description = metadata.partition("\n\n")
    for line in [
        "Name: deadletter",
        f"Version: {VERSION}",
        "License-Expression: MIT",
        "License-File: LICENSE",
        "Requires-Python: >=3.10",
        "Classifier: Typing :: Typed",
        "Classifier: Programming Language :: Python :: Implementation :: CPython",
        "Project-URL: Repository, https://example.invalid/deadletter",
    ]:
        assert line in headers.splitlines(), line
    assert "Description-Content-Type: text/markdown" in headers
    readme = ROOT / "bindings-python" / "README.md"  # written for pip users
    assert description.strip() == readme.read_text(encoding="utf-8").strip()


def test_the_sdist_holds_what_a_source_build_needs() -> None:
    sdist = only("deadletter-*.tar.gz")
    top = f"deadletter-{VERSION}"
    with tarfile.open(sdist) as t:
        names = set(t.getnames())
    assert {
        f"{top}/PKG-INFO",
        f"{top}/pyproject.toml",
        f"{top}/Cargo.toml",
        f"{top}/Cargo.lock",
        f"{top}/LICENSE",
        f"{top}/README.md",
        f"{top}/core/src/lib.rs",
        f"{top}/bindings-python/src/lib.rs",
        f"{top}/stores/postgres/src/lib.rs",
        f"{top}/python/deadletter/py.typed",
        f"{top}/python/deadletter/_deadletter.pyi",
    } <= names
    assert not [n for n in names if n.endswith(".so")]


def test_twine_accepts_the_artifacts() -> None:
    out = run(
        sys.executable, "-m", "twine", "check", "--strict", only("*.whl"), only("*.tar.gz"), cwd=ROOT
    )
    assert out.count("PASSED") == 2, out


def test_the_wheel_installs_without_an_index_and_works(tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "venv")
    out = install_and_test(python, only("deadletter-*.whl"), USAGE_TESTS, cwd=tmp_path)
    code = "import deadletter; print(deadletter.__version__, deadletter.SQLITE_BUNDLED)"
    assert run(python, "-c", code, cwd=tmp_path).split() == [VERSION, "True"]
    # Every usage test passes; only the two same-process tests skip, saying why.
    assert re.search(r"^\d+ passed, 2 skipped in ", out.splitlines()[-1]), out
    assert out.count("this build carries its own SQLite") == 2, out


@pytest.mark.parametrize("version", ["3.10", "3.13"])
def test_the_wheel_works_on_the_oldest_and_newest_cpython(tmp_path: Path, version: str) -> None:
    """The abi3 claim at both ends of what the package declares: the whole API and conformance
    suites on 3.10 (its Requires-Python, the abi3 tag's floor) and on 3.13 (its newest
    classifier)."""
    base = cpython(version)
    if base is None:
        where = f"pyenv's ~/.pyenv/versions/{version}.*, python{version}"
        pytest.skip(f"no CPython {version} on this machine ({where})")
    python = fresh_venv(tmp_path / "venv", base)
    tests = ["test_api.py", "test_conformance.py", "test_readme.py"]
    out = install_and_test(python, only("deadletter-*.whl"), tests, cwd=tmp_path)
    found = run(python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])", cwd=tmp_path)
    assert found.strip() == version
    assert re.search(r"^\d+ passed, \d+ deselected in ", out.splitlines()[-1]), out


def test_pip_refuses_the_wheel_on_cpython_3_9(tmp_path: Path) -> None:
    """Below its floor, pip says so rather than installing a package it cannot run."""
    base = cpython("3.9")
    if base is None:
        pytest.skip("no CPython 3.9 on this machine (pyenv's ~/.pyenv/versions/3.9.*, python3.9)")
    python = fresh_venv(tmp_path / "venv", base)
    wheel = only("deadletter-*.whl")
    result = subprocess.run(
        [python, "-m", "pip", "install", "--no-index", wheel], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "is not a supported wheel on this platform" in result.stderr, result.stderr


def test_the_sdist_builds_with_pip_wheel_in_a_clean_folder(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    sdist = Path(shutil.copy(only("deadletter-*.tar.gz"), clean))
    builder = fresh_venv(tmp_path / "builder")
    env = {
        **os.environ,
        "PIP_CONSTRAINT": str(REQUIREMENTS),  # the build backend's maturin: the pinned one
        "CARGO_TARGET_DIR": str(ROOT / "target" / "sdist"),  # reuses compiled registry crates
    }
    env.pop("PYO3_PYTHON", None)  # (the Makefile points it at .venv; a user's build has no such hint)
    run(builder, "-m", "pip", "wheel", "-q", "--no-deps", "-w", clean / "wheels", sdist, cwd=clean, env=env)
    [wheel] = (clean / "wheels").glob("*.whl")
    assert wheel.name.startswith(f"deadletter-{VERSION}-cp310-abi3-")

    python = fresh_venv(tmp_path / "venv")
    out = install_and_test(python, wheel, ["test_readme.py", "test_sqlite_library.py"], cwd=tmp_path)
    code = "import deadletter; print(deadletter.__version__, deadletter.SQLITE_BUNDLED)"
    assert run(python, "-c", code, cwd=tmp_path).split() == [VERSION, "False"]
    # Linked to the system SQLite: the same-process test runs, nothing is skipped.
    assert re.search(r"^\d+ passed in ", out.splitlines()[-1]), out

