"""The typed surface: the hand-written stub matches the runtime (mypy.stubtest), and the error
codes of the core, the stub and the Python exceptions agree."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import get_args

import deadletter
from deadletter import _deadletter, _errors

PACKAGE = Path(deadletter.__file__).resolve().parent
ALLOWLIST = str(Path(__file__).with_name("stubtest-allowlist.txt"))


def test_stub_matches_the_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "deadletter", "--concise", "--allowlist", ALLOWLIST],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_is_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_deadletter.pyi").is_file()


def test_error_codes_agree_with_the_core() -> None:
    core = list(_deadletter.CODES)  # deadletter::CODES, from the native module
    assert core == ["validation_failed", "not_found", "conflict", "store"]
    assert list(deadletter.CODES) == core
    assert list(_errors.CODES) == core
    assert list(get_args(_errors.ErrorCode)) == core
    classes: list[type[deadletter.Error]] = [
        deadletter.ValidationError,
        deadletter.NotFoundError,
        deadletter.ConflictError,
        deadletter.StoreError,
    ]
    assert [cls.code for cls in classes] == core


def test_error_codes_agree_with_the_stub_source() -> None:
    """The `ErrorCode` literal as written in _errors.py (which the stub imports)."""
    tree = ast.parse((PACKAGE / "_errors.py").read_text(encoding="utf-8"))
    literal = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "ErrorCode" for t in node.targets)
    )
    assert isinstance(literal, ast.Subscript)
    codes = [elt.value for elt in ast.walk(literal.slice) if isinstance(elt, ast.Constant)]
    assert codes == list(_deadletter.CODES)
    stub = (PACKAGE / "_deadletter.pyi").read_text(encoding="utf-8")
    assert "from ._errors import ErrorCode" in stub


def test_mypy_accepts_typed_usage(tmp_path: Path) -> None:
    example = tmp_path / "usage.py"
    example.write_text(
        "import asyncio, threading\n"
        "from datetime import datetime, timedelta, timezone\n"
        "import deadletter\n"
        "with deadletter.open(':memory:', clock=lambda: datetime.now(timezone.utc)) as db:\n"
        "    q: deadletter.Queue = db.queue('emails')\n"
        "    m: deadletter.Message = q.enqueue('x', max_retries=5)\n"
        "    c = q.claim(lease=timedelta(seconds=5))\n"
        "    if c is not None:\n"
        "        done = q.fail(c.id, 'boom', lease_token=c.lease_token, retryable=False)\n"
        "        when: datetime | None = done.retry_after\n"
        "    page: list[deadletter.Message] = q.list(status='dead', limit=10)\n"
        "    delay: timedelta = deadletter.backoff(3)\n"
        "    jobs = db.queue('jobs', backoff=deadletter.Backoff(initial=1, cap=60, jitter='full'))\n"
        "    batch: list[deadletter.Message] = jobs.enqueue_many(\n"
        "        ['a', {'payload': 'b', 'idempotency_key': 'k', 'delay': timedelta(seconds=5)}]\n"
        "    )\n"
        "    payloads: list[str] = ['c', 'd']\n"
        "    rows: list[dict[str, object]] = [{'payload': 'e', 'max_retries': 2}]\n"
        "    batch = jobs.enqueue_many(payloads) + jobs.enqueue_many(rows)\n"
        "    dedup: bool = jobs.enqueue('c', idempotency_key='k').deduplicated\n"
        "    for m in jobs.claim_many(10, lease=30):\n"
        "        m = jobs.extend(m.id, lease_token=m.lease_token or '', lease=60)\n"
        "        attempts: list[int] = [e['attempt'] for e in m.errors]\n"
        "    n: int = jobs.replay_all(error_contains='503', dead_before=datetime.now(timezone.utc))\n"
        "    n = jobs.purge(status='succeeded', older_than=timedelta(days=7)) + jobs.reap()\n"
        "    stats: deadletter.QueueStats = jobs.stats()\n"
        "    age: timedelta | None = stats.oldest_dead_age\n"
        "    names: list[str] = [s.queue for s in db.queues()]\n"
        "    unsubscribe = db.on_dead(lambda m: print(m.id, m.dead_at))\n"
        "    unsubscribe()\n"
        "    due: datetime | None = jobs.next_due_at()\n"
        "    def handle(m: deadletter.Message) -> None:\n"
        "        raise deadletter.PermanentError(m.payload)\n"
        "    async def handle_async(m: deadletter.Message) -> None:\n"
        "        pass\n"
        "    handled: int = jobs.process(handle, concurrency=4, poll_interval=timedelta(seconds=2),\n"
        "                                stop_when_idle=True, stop=threading.Event())\n"
        "    handled = asyncio.run(jobs.process_async(handle_async, lease=60, stop=asyncio.Event()))\n"
        "try:\n"
        "    pass\n"
        "except deadletter.ValidationError as err:\n"
        "    fields = [e['field'] for e in err.errors]\n"
        "    where: list[int] = [e['index'] for e in err.errors if 'index' in e]\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(example)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_python_modules_type_check_strictly() -> None:
    """deadletter.http, the CLI, the serve glue, the OpenAPI document, the metrics."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", "deadletter"],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
