"""`deadletter serve` for real: uvicorn processes on one SQLite file.

The main test runs four server processes and eight concurrent HTTP workers that drain 2 000
messages, each failing as its payload dictates; afterwards every message must be succeeded or dead
exactly as its failures say, each must have been claimed exactly once per attempt, and no response
may be a 5xx."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import deadletter
import deadletter.http
import httpx
import pytest
from deadletter import cli
from deadletter.http import _serve
from http_client import TestClient
from lock_holder import write_lock_held
from serving import STARTUP_TIMEOUT, deadletter_serve, free_port

MESSAGES = 2000
HTTP_WORKERS = 8
SERVER_WORKERS = 4
MAX_RETRIES = 3
DRAIN_TIMEOUT = 240.0  # seconds; about 20 on two cores
IDLE_SLEEP = 0.05  # seconds a worker waits after a 204


def plan(seed: int = 9) -> list[dict[str, Any]]:
    """Each message's fate: ``failures`` retryable failures before it succeeds (3 = it dies of
    the third), or ``permanent`` (dies of its first attempt)."""
    rng = random.Random(seed)
    fates = []
    for n in range(MESSAGES):
        roll = rng.random()
        if roll < 0.1:
            fates.append({"n": n, "failures": 0, "permanent": True})
        else:
            failures = rng.choices([0, 1, 2, 3], weights=[60, 20, 10, 10])[0]
            fates.append({"n": n, "failures": failures, "permanent": False})
    return fates


class Drain:
    """What the workers saw, shared between their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.finished = 0
        self.claims: Counter[int] = Counter()
        self.statuses: Counter[int] = Counter()
        self.errors: list[str] = []
        self.done = threading.Event()

    def record(self, response: httpx.Response) -> None:
        with self.lock:
            self.statuses[response.status_code] += 1
            if response.status_code >= 500:
                self.errors.append(
                    f"{response.request.url}: {response.status_code} {response.text}"
                )
                self.done.set()


def worker(url: str, drain: Drain) -> None:
    """The seed's worker loop over HTTP: claim, process, succeed or fail, sleep on 204."""
    with httpx.Client(base_url=url, timeout=60) as client:
        while not drain.done.is_set():
            r = client.post("/queues/jobs/claim", json={"lease": 60})
            drain.record(r)
            if r.status_code == 204:
                time.sleep(IDLE_SLEEP)
                continue
            if r.status_code != 200:
                drain.errors.append(f"claim: {r.status_code} {r.text}")
                drain.done.set()
                return
            m = r.json()
            fate = json.loads(m["payload"])
            with drain.lock:
                drain.claims[m["id"]] += 1
            token = m["lease_token"]
            if fate["permanent"]:
                body = {"error": "permanent", "lease_token": token, "retryable": False}
                r = client.post(f"/queues/jobs/messages/{m['id']}/fail", json=body)
            elif m["retry_count"] < fate["failures"]:
                body = {"error": f"failure {m['retry_count'] + 1}", "lease_token": token}
                r = client.post(f"/queues/jobs/messages/{m['id']}/fail", json=body)
            else:
                r = client.post(
                    f"/queues/jobs/messages/{m['id']}/succeed", json={"lease_token": token}
                )
            drain.record(r)
            if r.status_code != 200:
                drain.errors.append(f"settle {m['id']}: {r.status_code} {r.text}")
                drain.done.set()
                return
            if r.json()["status"] in ("succeeded", "dead"):
                with drain.lock:
                    drain.finished += 1
                    if drain.finished == MESSAGES:
                        drain.done.set()


@pytest.fixture
def memory_dir(tmp_path: Path) -> Iterator[Path]:
    """A temporary directory on tmpfs when there is one: every commit's fsync costs milliseconds
    on the disks of our machines, which would make the drain test a disk benchmark."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="deadletter-test-") as tmp:
        yield Path(tmp)


def test_four_server_processes_and_eight_http_workers_drain_2000_messages(
    memory_dir: Path,
) -> None:
    path = memory_dir / "jobs.db"
    fates = plan()
    with deadletter_serve(path, workers=SERVER_WORKERS) as url:
        started = time.monotonic()
        with httpx.Client(base_url=url, timeout=60) as client:

            def enqueue(fate: dict[str, Any]) -> int:
                body = {"payload": json.dumps(fate), "max_retries": MAX_RETRIES}
                r = client.post("/queues/jobs/messages", json=body)
                assert r.status_code == 201, r.text
                return int(r.json()["id"])

            with ThreadPoolExecutor(HTTP_WORKERS) as pool:
                ids = list(pool.map(enqueue, fates))
        enqueued = time.monotonic() - started
        drain = Drain()
        threads = [threading.Thread(target=worker, args=(url, drain)) for _ in range(HTTP_WORKERS)]
        for thread in threads:
            thread.start()
        drain.done.wait(DRAIN_TIMEOUT)
        drain.done.set()
        for thread in threads:
            thread.join(timeout=120)
        drained = time.monotonic() - started - enqueued

    assert drain.errors == []
    assert not [s for s in drain.statuses if s >= 500]
    assert drain.finished == MESSAGES
    assert sorted(ids) == list(range(1, MESSAGES + 1))
    by_id = dict(zip(ids, fates))
    with deadletter.open(path) as db:
        queue = db.queue("jobs")
        messages = queue.list(limit=1000) + queue.list(limit=1000, after_id=1000)
    assert len(messages) == MESSAGES
    wrong = []
    for m in messages:
        fate = by_id[m.id]
        if fate["permanent"]:
            expected = ("dead", 1, "permanent")
        elif fate["failures"] >= MAX_RETRIES:
            expected = ("dead", MAX_RETRIES, f"failure {MAX_RETRIES}")
        else:
            last = f"failure {fate['failures']}" if fate["failures"] else None
            expected = ("succeeded", fate["failures"], last)
        if (m.status, m.retry_count, m.last_error) != expected:
            wrong.append((m.id, fate, m.status, m.retry_count, m.last_error))
        if drain.claims[m.id] != expected[1] + (expected[0] == "succeeded"):
            wrong.append((m.id, fate, "claimed", drain.claims[m.id]))
    assert wrong == []
    print(
        f"\n{MESSAGES} messages: enqueued in {enqueued:.1f} s, drained in {drained:.1f} s "
        f"by {HTTP_WORKERS} HTTP workers over {SERVER_WORKERS} server processes; "
        f"responses {dict(sorted(drain.statuses.items()))}"
    )


def test_percent_encoded_queue_names_through_uvicorn(tmp_path: Path) -> None:
    names = ["a/b", "%2F", "100%", "with space", "ünï/cødé", "?x=1#y", ".a", "..."]
    with deadletter_serve(tmp_path / "q.db") as url, httpx.Client(base_url=url) as client:
        for name in names:
            segment = deadletter.http.path_segment(name)
            r = client.post(f"/queues/{segment}/messages", json={"payload": name})
            assert r.status_code == 201, (name, r.text)
            assert r.json()["queue"] == name
            assert client.get(r.headers["location"]).json()["payload"] == name
        assert client.get("/queues/a/messages").json()["messages"] == []
    with deadletter.open(tmp_path / "q.db") as db:
        assert [db.queue(n).get(i + 1).payload for i, n in enumerate(names)] == names


def test_the_token_from_the_environment_guards_the_server(tmp_path: Path) -> None:
    with deadletter_serve(tmp_path / "t.db", token="from-env") as url:
        assert httpx.get(url + "/queues/q/messages").status_code == 401
        assert httpx.get(url + "/healthz").status_code == 200
        r = httpx.get(url + "/queues/q/messages", headers={"Authorization": "Bearer from-env"})
        assert r.status_code == 200


def test_the_server_answers_while_one_request_waits_for_the_write_lock(tmp_path: Path) -> None:
    """Another process holds the file's write lock: an enqueue waits for it (up to SQLite's busy
    timeout, 30 s), and meanwhile the server answers other requests at once (a short-timeout
    client: /healthz used to wait behind the enqueue, ~32 s); released, the enqueue gets 201."""
    path = tmp_path / "locked.db"
    with deadletter_serve(path) as url, ThreadPoolExecutor(1) as pool:
        with write_lock_held(path):
            waiting = pool.submit(
                httpx.post, url + "/queues/q/messages", json={"payload": "x"}, timeout=60
            )
            time.sleep(0.5)  # the enqueue is waiting for the lock by now
            health = httpx.get(url + "/healthz", timeout=2)
            assert (health.status_code, health.json()) == (200, {"status": "ok"})
            stats = httpx.get(url + "/queues/q/stats", timeout=2)
            assert (stats.status_code, stats.json()["pending"]) == (200, 0)
            assert httpx.get(url + "/metrics", timeout=2).status_code == 200
            assert not waiting.done()
        created = waiting.result(timeout=60)
        assert (created.status_code, created.json()["id"]) == (201, 1)


class ServeCall:
    """Records the arguments of `deadletter.http._serve.run` instead of serving."""

    def __init__(self) -> None:
        self.args: tuple[Any, ...] = ()

    def __call__(self, *args: Any) -> bool:
        self.args = args
        return True


@pytest.mark.parametrize(
    "host, token, warned",
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("0.0.0.0", None, True),
        ("192.0.2.7", None, True),
        ("0.0.0.0", "t", False),
    ],
)
def test_serve_warns_when_it_exposes_the_api_without_a_token(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    host: str,
    token: str | None,
    warned: bool,
) -> None:
    call, checked = ServeCall(), ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    monkeypatch.setattr(_serve, "check_address", checked)  # 192.0.2.7 is no address of ours
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    monkeypatch.setattr(os, "environ", environ)  # what the CLI sets for its workers stays here
    argv = ["serve", str(tmp_path / "s.db"), "--create", "--host", host, "--port", "9"]
    argv += ["--workers", "3"]
    if token:
        argv += ["--token", token]
    assert cli.main(argv, out=sys.stdout, err=sys.stderr) == 0
    err = capsys.readouterr().err
    assert ("WARNING: serving" in err) == warned, err
    assert call.args == (host, 9, 3, "info")
    assert checked.args == (host, 9)
    assert environ[_serve.ENV_PATH] == str((tmp_path / "s.db").resolve())
    assert environ[_serve.ENV_MAX_PAYLOAD_BYTES] == "1048576"
    assert environ.get(_serve.ENV_TOKEN) == token
    assert (tmp_path / "s.db").is_file()  # opened once before serving: errors show early


@pytest.mark.parametrize(
    "argv, environment, error",
    [
        (
            ["--token", ""],
            {},
            "--token is empty: give a token, or omit --token to serve without one",
        ),
        (
            [],
            {"DEADLETTER_TOKEN": ""},
            "DEADLETTER_TOKEN is set but empty: set a token, or unset it to serve without one",
        ),
        (
            ["--token", ""],
            {"DEADLETTER_TOKEN": "t"},
            "--token is empty: give a token, or omit --token to serve without one",
        ),
        (
            ["--token", " s3cret"],
            {},
            "--token begins or ends with white space: no client could send it",
        ),
        (
            [],
            {"DEADLETTER_TOKEN": "s3cret\n"},
            "DEADLETTER_TOKEN begins or ends with white space: no client could send it",
        ),
        (  # finding F12: a browser's fetch() cannot send it; the console said "not answering"
            ["--token", "pässwörd€"],
            {},
            "--token holds 'ä': a token is printable ASCII (letters, digits, punctuation, inner "
            "spaces), the only text an HTTP header carries reliably",
        ),
        (
            [],
            {"DEADLETTER_TOKEN": "a\x1bb"},
            "DEADLETTER_TOKEN holds '\\x1b': a token is printable ASCII (letters, digits, "
            "punctuation, inner spaces), the only text an HTTP header carries reliably",
        ),
    ],
)
def test_an_empty_token_is_a_usage_error_not_authentication_off(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    environment: dict[str, str],
    error: str,
) -> None:
    call = ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    monkeypatch.setattr(os, "environ", {**environ, **environment})
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", str(tmp_path / "s.db"), *argv], out=sys.stdout, err=sys.stderr)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"deadletter serve: error: {error}"
    assert call.args == () and not (tmp_path / "s.db").exists()


def test_serve_takes_memory_as_a_private_in_memory_database(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Finding F11: `serve :memory:` created a file named :memory: in the working directory."""
    call = ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    monkeypatch.chdir(tmp_path)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    monkeypatch.setattr(os, "environ", environ)
    assert cli.main(["serve", ":memory:", "--port", "0"], out=sys.stdout, err=sys.stderr) == 0
    assert "in-memory database (:memory:): its messages are lost" in capsys.readouterr().err
    assert call.args == ("127.0.0.1", 0, 1, "info")
    assert environ[_serve.ENV_PATH] == ":memory:"
    app = _serve.app_from_environment()  # what the server process builds: in memory
    with TestClient(app) as client:
        assert client.post("/queues/q/messages", json={"payload": "x"}).status_code == 201
    assert list(tmp_path.iterdir()) == []


def test_serve_refuses_a_database_that_does_not_exist_unless_told_to_create_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding M15: `serve jobs.db` for a mistyped name created an empty database and served an
    all-clear console, where every other command says "no such database file" (exit 1)."""
    call = ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    monkeypatch.setattr(os, "environ", environ)
    path = tmp_path / "jobs.db"
    assert cli.main(["serve", str(path), "--port", "9"], out=sys.stdout, err=sys.stderr) == 1
    err = capsys.readouterr().err
    assert err == f"deadletter serve: {path}: no such database file\n"
    assert call.args == () and list(tmp_path.iterdir()) == []
    assert cli.main(["serve", str(tmp_path), "--port", "9"], out=sys.stdout, err=sys.stderr) == 1
    assert capsys.readouterr().err.endswith("is a directory, not a database file\n")
    argv = ["serve", str(path), "--create", "--port", "9"]
    assert cli.main(argv, out=sys.stdout, err=sys.stderr) == 0
    assert path.is_file() and call.args == ("127.0.0.1", 9, 1, "info")
    call.args = ()
    assert cli.main(["serve", str(path), "--port", "9"], out=sys.stdout, err=sys.stderr) == 0
    assert call.args == ("127.0.0.1", 9, 1, "info")  # it exists now


def test_serve_refuses_memory_with_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    call = ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", ":memory:", "--workers", "2"], out=sys.stdout, err=sys.stderr)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "deadletter serve: error: :memory: is private to one process: it cannot be served with "
        "--workers"
    )
    assert call.args == () and list(tmp_path.iterdir()) == []


def test_a_worker_process_refuses_an_empty_token_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_serve.ENV_PATH, str(tmp_path / "w.db"))
    monkeypatch.setenv(_serve.ENV_TOKEN, "")
    with pytest.raises(ValueError, match="token must be a non-empty str"):
        _serve.app_from_environment()


def test_the_shared_listening_socket_is_tcp_so_responses_are_not_delayed() -> None:
    """uvicorn issue #3149: with protocol 0 on the listener, asyncio leaves Nagle on."""
    config = _serve.Config(_serve.FACTORY, factory=True, host="127.0.0.1", port=0, workers=2)
    with config.bind_socket() as listener:
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.family == socket.AF_INET and listener.type == socket.SOCK_STREAM
        assert listener.get_inheritable()  # the worker processes get it


def living_children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` and that have not exited (zombies excluded), from
    /proc."""
    children = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:  # gone meanwhile
            continue
        if stat and int(stat.rpartition(")")[2].split()[1]) == pid:
            children.add(int(entry.name))
    return alive(children)


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` that still run (a zombie has exited: only its parent has to reap it)."""
    running = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            running.add(pid)
    return running


def test_the_worker_processes_exit_when_serve_is_killed(tmp_path: Path) -> None:
    # `kill -9` of the supervisor used to leave its workers serving, holding the port: a
    # restart failed with "Address already in use".
    port = free_port()
    command = [sys.executable, "-m", "deadletter.cli", "serve", str(tmp_path / "k.db"), "--create"]
    options = ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    supervisor = subprocess.Popen([*command, *options], env=env, cwd=tmp_path)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while len(workers) < 2 or not answers(f"http://127.0.0.1:{port}/healthz"):
            assert supervisor.poll() is None and time.monotonic() < deadline, "did not start"
            workers = living_children(supervisor.pid)
            time.sleep(0.1)
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait()
        deadline = time.monotonic() + 10
        while alive(workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(workers) == set(), "the workers outlived their supervisor"
        with deadletter_serve(tmp_path / "k.db", port=port) as url:  # the port is free again
            assert httpx.get(url + "/healthz").status_code == 200
    finally:
        supervisor.kill()
        for pid in alive(workers):  # the old code's orphans
            os.kill(pid, signal.SIGKILL)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def test_token_file_keeps_the_token_out_of_the_process_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """New-user finding N11 (session 7): ``--token`` is in the arguments every local user reads
    (``ps``); ``--token-file FILE`` reads it from a file (its one line's ending dropped), and
    ``--token`` says so on stderr."""
    call = ServeCall()
    monkeypatch.setattr(_serve, "run", call)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEADLETTER_")}
    monkeypatch.setattr(os, "environ", environ)
    token = tmp_path / "token"
    token.write_text("s3cret t0ken\r\n")
    argv = ["serve", str(tmp_path / "s.db"), "--create", "--port", "9"]
    assert cli.main([*argv, "--token-file", str(token)], out=sys.stdout, err=sys.stderr) == 0
    assert (environ[_serve.ENV_TOKEN], capsys.readouterr().err) == ("s3cret t0ken", "")
    assert cli.main([*argv, "--token", "t"], out=sys.stdout, err=sys.stderr) == 0
    assert capsys.readouterr().err == (
        "deadletter serve: note: every user of this machine can read --token's value (ps); on a "
        "shared machine give DEADLETTER_TOKEN or --token-file instead\n"
    )
    missing = tmp_path / "missing"
    assert cli.main([*argv, "--token-file", str(missing)], out=sys.stdout, err=sys.stderr) == 1
    assert capsys.readouterr().err == (
        f"deadletter serve: --token-file {missing}: No such file or directory\n"
    )
    for text, problem in [("", "is empty: write the token in it"), ("a\nb", "holds '\\n'")]:
        token.write_text(text)
        with pytest.raises(SystemExit) as exited:
            cli.main([*argv, "--token-file", str(token)], out=sys.stdout, err=sys.stderr)
        assert exited.value.code == 2
        assert f"error: --token-file {token} {problem}" in capsys.readouterr().err
