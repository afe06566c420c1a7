"""The PostgreSQL server of the tests: ``DEADLETTER_POSTGRES_URL``, which ``scripts/pg.sh run``
exports (``make test-postgres`` runs ``pytest -m postgres`` under it). Tests that need it carry
`NEEDS_POSTGRES` (`needs_postgres` as a decorator): marked ``postgres``, and skipped with the
reason when the URL is not set (or empty).

Each test works in fresh schemas (`Schemas`), dropped afterwards with ``psql``, which comes with
the server's Debian packages."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from typing import Callable, TypeVar

import pytest

URL = os.environ.get("DEADLETTER_POSTGRES_URL") or None
REASON = (
    "DEADLETTER_POSTGRES_URL is not set: this test needs a PostgreSQL server; "
    "`make test-postgres` runs it on a throwaway cluster (scripts/pg.sh)"
)
NEEDS_POSTGRES = [pytest.mark.postgres, pytest.mark.skipif(URL is None, reason=REASON)]

Test = TypeVar("Test", bound=Callable[..., None])


def needs_postgres(test: Test) -> Test:
    """Marks ``test`` with `NEEDS_POSTGRES`."""
    for mark in NEEDS_POSTGRES:
        test = mark(test)
    return test

_numbers = itertools.count()


def url() -> str:
    """The server's URL (only called by tests that are not skipped)."""
    assert URL is not None, REASON
    return URL


def psql(sql: str) -> str:
    """Runs ``sql`` on the server; returns its unaligned output."""
    done = subprocess.run(
        ["psql", url(), "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


class Schemas:
    """Schema names unique to this process, dropped (with everything in them) by `drop`."""

    def __init__(self, prefix: str) -> None:
        self.prefix = f"{prefix}_{os.getpid()}"
        self.made: list[str] = []

    def name(self) -> str:
        name = f"{self.prefix}_{next(_numbers)}"
        self.made.append(name)
        return name

    def drop(self) -> None:
        if self.made:
            psql("".join(f'DROP SCHEMA IF EXISTS "{name}" CASCADE;' for name in self.made))
            self.made.clear()


@pytest.fixture
def schemas(request: pytest.FixtureRequest) -> Iterator[Schemas]:
    """Fresh schemas for one test, dropped after it."""
    made = Schemas(f"py_{request.node.originalname}"[:40])
    yield made
    made.drop()
