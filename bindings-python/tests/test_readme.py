"""Every ```python block of the READMEs (the repository's and the package's) runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from readmes import ROOT, blocks, run


@pytest.mark.parametrize(("readme", "code"), blocks("python"))
def test_readme_block_runs(
    readme: Path, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a block that names a file creates it here
    run(readme, code)


def test_the_package_readme_is_for_pip_users() -> None:
    """PyPI's long description: links to the project's addresses (pyproject's, replaced together
    before a release), nothing that only a clone of the repository has."""
    package = ROOT / "bindings-python"
    text = (package / "README.md").read_text(encoding="utf-8")
    pyproject = (package / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^readme = "README.md"$', pyproject, re.M)
    urls = dict(re.findall(r'^(Repository|Changelog) = "([^"]+)"$', pyproject, re.M))
    links = re.findall(r"\]\((https?://[^)]+)\)", text)
    assert links and all(link.startswith(urls["Repository"]) for link in links), links
    assert urls["Changelog"] in links
    for repository_only in ("make ", "examples/", "scripts/", "cargo "):
        assert repository_only not in text, repository_only
