"""A browser on the operator's machine against `deadletter serve` without a token (issue 23), in
headless Chromium (cross_origin.mjs): a page of another origin that posts text/plain bodies and a
bodiless POST (which used to purge, enqueue and replay: 200, 201) is refused with 403; a page
re-pointed at the server by DNS rebinding reads nothing (421); the dashboard's own requests still
work, served by `deadletter serve` and mounted at a prefix of another application. Chromium comes
from `scripts/setup.sh browser`, playwright-core from `npm ci` (both run by `make
test-python`)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import deadletter
import httpx
from chromium_driver import drive
from serving import STARTUP_TIMEOUT, deadletter_serve, free_port

DRIVER = Path(__file__).with_name("cross_origin.mjs")
SECRET = "secret payload"

FOREIGN_PAGE = b"""<!doctype html>
<title>another site</title>
<script>
  // What any page may send to any origin without a CORS preflight; the answers are opaque.
  const target = new URLSearchParams(location.search).get("target");
  const plain = (path, body) =>
    fetch(target + path, {
      method: "POST",
      mode: "no-cors",
      headers: { "Content-Type": "text/plain" },
      body: JSON.stringify(body),
    });
  window.outcomes = Promise.allSettled([
    plain("/queues/jobs/purge", { status: "dead", older_than: 0 }),
    plain("/queues/jobs/messages", { payload: "planted by another site" }),
    fetch(target + "/queues/other/replay", { method: "POST", mode: "no-cors" }),
  ]).then((all) => all.map((r) => (r.status === "fulfilled" ? r.value.type : String(r.reason))));
</script>
"""

MOUNTED_APP = """
import sys, uvicorn, deadletter, deadletter.http
from starlette.applications import Starlette
from starlette.routing import Mount
db = deadletter.open(sys.argv[1])
app = Starlette(routes=[Mount("/ops/deadletter", app=deadletter.http.app(db))])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


class ForeignPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(FOREIGN_PAGE)))
        self.end_headers()
        self.wfile.write(FOREIGN_PAGE)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def foreign_site() -> Iterator[str]:
    """Another origin: a page on another port of 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ForeignPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def mounted(path: Path) -> Iterator[str]:
    """The API mounted at /ops/deadletter of another Starlette application, under uvicorn."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", MOUNTED_APP, str(path), str(port)])
    url = f"http://127.0.0.1:{port}/ops/deadletter"
    try:
        for _ in range(int(STARTUP_TIMEOUT * 10)):
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "the mounted app exited"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def dead(q: deadletter.Queue, payload: str) -> int:
    q.enqueue(payload)
    m = q.claim()
    assert m is not None
    q.fail(m.id, "HTTP 410 Gone", lease_token=m.lease_token, retryable=False)
    return m.id


def test_pages_of_other_sites_cannot_drive_a_server_without_a_token(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with deadletter.open(path) as db:
        assert dead(db.queue("jobs"), SECRET) == 1
        assert dead(db.queue("other"), "other") == 2
        assert dead(db.queue("ui"), "served") == 3
        assert dead(db.queue("ui"), "mounted") == 4
    log = tmp_path / "serve.log"
    with (
        deadletter_serve(path, args=["--log-level", "info"], log=log) as url,
        foreign_site() as foreign,
        mounted(path) as mounted_url,
    ):
        result = drive(DRIVER, url, foreign, mounted_url)

    # 1. The foreign page's requests were sent (opaque answers) and refused: 403, nothing done.
    assert result["foreign"] == ["opaque"] * 3
    answered = re.findall(r'"POST (\S+) HTTP/1.1" (\d+)', log.read_text())
    assert sorted(answered[:3]) == [
        ("/queues/jobs/messages", "403"),
        ("/queues/jobs/purge", "403"),
        ("/queues/other/replay", "403"),
    ], log.read_text()

    # 2. The rebinding page got 421 for the page and for each read, and no payload.
    assert result["rebindLanding"] == 421
    assert [(r["path"], r["status"]) for r in result["rebindReads"]] == [
        ("/queues", 421),
        ("/queues/jobs/messages", 421),
    ]
    assert all(SECRET not in r["body"] for r in result["rebindReads"])

    # 3. The dashboard's own requests (a replay by its row's button), served and mounted.
    assert [(d["state"], d["notice"]) for d in result["dashboards"]] == [
        ("ready", "Replayed message 3: it is pending again."),
        ("ready", "Replayed message 4: it is pending again."),
    ]

    with deadletter.open(path) as db:
        summary = {
            name: [(m.id, m.status, m.replay_count) for m in db.queue(name).list()]
            for name in ("jobs", "other", "ui")
        }
    assert summary == {
        "jobs": [(1, "dead", 0)],  # not purged, nothing planted
        "other": [(2, "dead", 0)],  # not replayed
        "ui": [(3, "pending", 1), (4, "pending", 1)],  # replayed by the dashboards
    }
