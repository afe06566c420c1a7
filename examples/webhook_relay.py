"""Webhook relay: the main demo of deadletter.

Forwards every example payload of the npm package ``@octokit/webhooks-examples`` (real GitHub
webhook deliveries, one per event type and action) to subscriber endpoints on a local HTTP server,
through a deadletter queue stored in a SQLite file (one file, about 650 lines, as a demo is read
top to bottom):

- ``/ok`` answers 200.
- ``/flaky`` answers 503 to the first two attempts of each delivery, then 200.
- ``/gone`` answers 410 always: a partner endpoint that disappeared.
- ``/strict`` answers 422 to the event types it does not understand (``STRICT_EVENTS`` below):
  a contract that changed under us.

Deliveries are routed round-robin by their index in the examples file, so each endpoint gets a
quarter of them, and each endpoint's deliveries are one ordering group (``group=endpoint``): the
queue hands out an endpoint's deliveries one at a time, in the order they were enqueued, so a
subscriber sees them in order, never two at once. The worker loop, ``queue.process(relay,
concurrency=4, stop_when_idle=True)``, runs the handler ``Relay`` on four threads: it POSTs a
message's delivery and returns (the loop acks the message) or raises (the loop fails it with the
exception's text, such as ``HTTPError: HTTP Error 503: Service Unavailable``). The queue's
settings, stored with it (``set_settings``), say ``max_retries=3`` and a backoff of 50 ms, then
100 ms: the third failure is dead. (A failing delivery holds its endpoint's group until it
succeeds or dies: with the default backoff, 2 s then 4 s, /gone's 82 deliveries would die one
after the other, 6 s apart.) The idle loop sleeps until the next retry is due, and returns once
nothing is due, in flight or delayed. Its heartbeats keep each lease while a POST is in
progress. The demo prints the dead letters and the error history of one of them, then "fixes"
``/gone`` and ``/strict``, replays every dead message with ``replay_all`` (each goes to the end
of its endpoint's group), drains again, and exits 0 only if every message ended ``succeeded``,
the server never saw two deliveries of one message, nor of one endpoint, in progress at once, and
each endpoint's successful deliveries of each drain came in enqueue order.

Retry policy: a subscriber that read the delivery and refused its content (400, 413, 415, 422)
will refuse the same bytes again, so those failures are permanent (the handler raises `Refused`,
a ``deadletter.PermanentError``) and the message is dead at once. Everything else is retried, 410
included: "gone" is as often a partner moving its endpoint as a partner leaving, and two short
retries before the dead-letter queue cost little. Network errors and 5xx are retried too.

``--http`` runs the same relay through the HTTP API: the queue file is served by
``deadletter.http`` under uvicorn (in a thread of this process, on a free port of 127.0.0.1), and
the workers, the replay and the summaries use it over HTTP with ``RemoteQueue`` of
``examples/http_worker.py`` (httpx), whose methods and exceptions are those of `deadletter.Queue`
(its ``process`` is a simpler worker loop of its own). ``make demo-http`` runs it; it needs the
``server`` extra.

Run it with ``make demo`` (which installs everything first), or after ``npm ci`` and building the
binding: ``.venv/bin/python examples/webhook_relay.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union

import deadletter

if TYPE_CHECKING:
    from http_worker import RemoteMessage, RemoteQueue

EXAMPLES_PACKAGE = "@octokit/webhooks-examples"
EXAMPLES_DIR = Path("node_modules", *EXAMPLES_PACKAGE.split("/"))
EXAMPLES_FILE = EXAMPLES_DIR / "api.github.com" / "index.json"

HOST = "127.0.0.1"
# The queue in this process, or the same file through the HTTP API (--http).
Queue = Union[deadletter.Queue, "RemoteQueue"]
Message = Union[deadletter.Message, "RemoteMessage"]
ENDPOINTS = ("/ok", "/flaky", "/gone", "/strict")
# The events /strict still understands; it answers 422 to every other event.
STRICT_EVENTS = frozenset(
    {
        "check_run",
        "check_suite",
        "create",
        "delete",
        "issue_comment",
        "issues",
        "ping",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "push",
        "release",
        "status",
        "workflow_job",
        "workflow_run",
    }
)
FLAKY_FAILURES = 2  # /flaky answers 503 to this many attempts of each delivery
PERMANENT_STATUSES = frozenset({400, 413, 415, 422})

QUEUE_NAME = "webhooks"
MAX_RETRIES = 3
# Stored with the queue: a failing delivery holds its endpoint's group while it waits.
BACKOFF = deadletter.Backoff(initial=0.05, cap=1)
POLL_INTERVAL = 0.05  # seconds (the HTTP loop's idle wait; the in-process one waits until due)
WORKERS = 4
DRAIN_TIMEOUT = 60.0  # seconds; the whole demo takes about 20 (30 over HTTP)
HTTP_TIMEOUT = 10.0
SERVER_LATENCY = 0.002  # seconds each request spends "in progress" on the server
PAGE_SIZE = 100
Status = Literal["pending", "processing", "succeeded", "dead"]
STATUSES: tuple[Status, ...] = ("pending", "processing", "succeeded", "dead")
MESSAGE_ID_HEADER = "X-Deadletter-Message-Id"
DEAD_SAMPLES_PER_ERROR = 2


class SetupError(Exception):
    """Something the demo needs is missing; the message says how to get it."""


# ---------------------------------------------------------------------------------------------
# Data: the webhook examples and the delivery envelope stored in the queue


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery: a GitHub event payload bound for one subscriber endpoint.

    Its JSON text is the queue payload; the queue never looks inside it.
    """

    event: str
    action: str | None
    endpoint: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        """``event.action`` (or just ``event``), as GitHub names webhook triggers."""
        return f"{self.event}.{self.action}" if self.action else self.event

    def to_payload(self) -> str:
        """The envelope as JSON text, ready to enqueue."""
        envelope = {"event": self.event, "action": self.action, "endpoint": self.endpoint}
        return json.dumps({**envelope, "body": self.body}, separators=(",", ":"))

    @classmethod
    def from_payload(cls, payload: str) -> Delivery:
        """Parse an envelope written by :meth:`to_payload`."""
        data = json.loads(payload)
        return cls(data["event"], data["action"], data["endpoint"], data["body"])


def find_repo_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` that holds the root ``package.json``."""
    for directory in (start, *start.parents):
        if (directory / "package.json").is_file() and (directory / "Cargo.toml").is_file():
            return directory
    raise SetupError(f"no repository root (package.json beside Cargo.toml) above {start}")


def examples_file(root: Path) -> Path:
    """The examples file of the npm package, with a clear error if it is not installed."""
    path = root / EXAMPLES_FILE
    if not path.is_file():
        raise SetupError(
            f"{path} is missing: install the demo data with `npm ci` in {root} "
            "(`make demo` does it for you)"
        )
    return path


def package_version(root: Path) -> str:
    """The installed version of the examples package."""
    manifest = json.loads((root / EXAMPLES_DIR / "package.json").read_text(encoding="utf-8"))
    return str(manifest["version"])


def load_deliveries(path: Path) -> list[Delivery]:
    """Every example of every event type, routed round-robin to the endpoints by its index."""
    definitions = json.loads(path.read_text(encoding="utf-8"))
    examples = [(d["name"], body) for d in definitions for body in d["examples"]]
    return [
        Delivery(event, body.get("action"), ENDPOINTS[index % len(ENDPOINTS)], body)
        for index, (event, body) in enumerate(examples)
    ]


# ---------------------------------------------------------------------------------------------
# The subscribers: a local HTTP server that also checks deliveries never overlap


@dataclass
class Subscribers:
    """The state of the simulated subscriber endpoints, shared by the server's handler threads."""

    fixed: bool = False  # once True, /gone and /strict answer 200
    lock: threading.Lock = field(default_factory=threading.Lock)
    attempts: Counter[str] = field(default_factory=Counter)  # per message id
    in_flight: set[str] = field(default_factory=set)
    overlaps: list[str] = field(default_factory=list)
    busy: set[str] = field(default_factory=set)  # endpoints with a delivery in progress
    endpoint_overlaps: list[str] = field(default_factory=list)
    requests: Counter[tuple[str, int]] = field(default_factory=Counter)  # (path, status)
    delivered: dict[str, list[int]] = field(default_factory=dict)  # 200s per path, this drain

    def begin(self, message_id: str, path: str = "") -> int:
        """Record that a delivery of ``message_id`` to ``path`` started; return its attempt
        number."""
        with self.lock:
            if message_id in self.in_flight:
                self.overlaps.append(message_id)
            if path and path in self.busy:
                self.endpoint_overlaps.append(path)
            self.in_flight.add(message_id)
            self.busy.add(path)
            self.attempts[message_id] += 1
            return self.attempts[message_id]

    def end(self, message_id: str, path: str = "") -> None:
        """Record that the delivery of ``message_id`` to ``path`` is no longer in progress."""
        with self.lock:
            self.in_flight.discard(message_id)
            self.busy.discard(path)

    def record(self, path: str, status: int, message_id: str = "") -> None:
        """Count a request to ``path`` answered with ``status`` (and a success's message id)."""
        with self.lock:
            self.requests[(path, status)] += 1
            if status == HTTPStatus.OK and message_id.isdigit():
                self.delivered.setdefault(path, []).append(int(message_id))

    def out_of_order(self) -> list[str]:
        """The endpoints whose successful deliveries since the last call did not come in
        enqueue (id) order; forgets them."""
        with self.lock:
            late = [p for p, ids in self.delivered.items() if ids != sorted(ids)]
            self.delivered = {}
        return late

    def fix(self) -> None:
        """The partners repair /gone and /strict: from now on they answer 200."""
        with self.lock:
            self.fixed = True

    def decide(self, path: str, event: str, attempt: int) -> HTTPStatus:
        """The status an endpoint answers to the ``attempt``-th delivery of an ``event``."""
        with self.lock:
            fixed = self.fixed
        if path == "/ok":
            return HTTPStatus.OK
        if path == "/flaky":
            return HTTPStatus.SERVICE_UNAVAILABLE if attempt <= FLAKY_FAILURES else HTTPStatus.OK
        if path == "/gone":
            return HTTPStatus.OK if fixed else HTTPStatus.GONE
        if path == "/strict":
            understood = fixed or event in STRICT_EVENTS
            return HTTPStatus.OK if understood else HTTPStatus.UNPROCESSABLE_ENTITY
        return HTTPStatus.NOT_FOUND


def is_json(body: bytes) -> bool:
    """Whether ``body`` parses as JSON."""
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


class SubscriberHandler(BaseHTTPRequestHandler):
    """Answers POSTs according to the shared :class:`Subscribers` state of its server."""

    server: SubscriberServer

    def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
        """Receive one webhook delivery."""
        state = self.server.subscribers
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message_id = self.headers.get(MESSAGE_ID_HEADER, "")
        attempt = state.begin(message_id, self.path)
        try:
            time.sleep(SERVER_LATENCY)
            event = self.headers.get("X-GitHub-Event", "")
            status = HTTPStatus.BAD_REQUEST
            if is_json(body):
                status = state.decide(self.path, event, attempt)
        finally:
            # Before answering: the client cannot start another delivery before it has the answer.
            state.end(message_id, self.path)
        state.record(self.path, status, message_id)
        self._answer(status)

    def _answer(self, status: HTTPStatus) -> None:
        """Send ``status`` with its phrase as a plain-text body."""
        text = f"{status.value} {status.phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base signature)
        """Keep the demo's output to its summaries."""


class SubscriberServer(ThreadingHTTPServer):
    """A threading HTTP server on 127.0.0.1 that carries the :class:`Subscribers` state."""

    daemon_threads = True

    def __init__(self, subscribers: Subscribers) -> None:
        super().__init__((HOST, 0), SubscriberHandler)  # port 0: any free port
        self.subscribers = subscribers

    @property
    def url(self) -> str:
        """The base URL, with the port the system chose."""
        return f"http://{HOST}:{self.server_address[1]}"


# ---------------------------------------------------------------------------------------------
# The worker: a handler for Queue.process


class Refused(deadletter.PermanentError):
    """A subscriber read the delivery and refused its content: it will refuse the same bytes
    again, so the message goes to the dead-letter queue at once."""


class Relay:
    """The handler: POSTs one queued delivery to the subscriber server.

    Returning acks the message; an exception fails it with its text (``urllib``'s ``HTTPError``
    for an error status, ``URLError`` for a network error: retried after the backoff);
    `Refused` (a `deadletter.PermanentError`) fails it for good. It counts its attempts per
    endpoint; ``Queue.process`` calls it from several threads at once.
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        # No proxies: the subscribers are on the loopback interface.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self.lock = threading.Lock()
        self.attempts: Counter[str] = Counter()  # per endpoint

    def __call__(self, message: Message) -> None:
        delivery = Delivery.from_payload(message.payload)
        with self.lock:
            self.attempts[delivery.endpoint] += 1
        request = urllib.request.Request(
            self.base_url + delivery.endpoint,
            data=json.dumps(delivery.body).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "deadletter-webhook-relay",
                "X-GitHub-Event": delivery.event,
                MESSAGE_ID_HEADER: str(message.id),
                "X-Deadletter-Attempt": str(message.retry_count + 1),
            },
        )
        try:
            with self.opener.open(request, timeout=HTTP_TIMEOUT) as response:
                response.read()
        except urllib.error.HTTPError as err:
            if err.code in PERMANENT_STATUSES:
                raise Refused(f"HTTP {err.code} {err.reason}") from err
            raise


@dataclass(frozen=True)
class DrainResult:
    """What one drain did."""

    seconds: float
    attempts: Counter[str]  # per endpoint
    handled: int  # what Queue.process returned
    errors: list[str]


def run_drain(queue: Queue, relay: Relay) -> DrainResult:
    """Run the worker loop until no message is due, in flight or delayed (or a timeout)."""
    before = relay.attempts.copy()
    stop = threading.Event()
    timer = threading.Timer(DRAIN_TIMEOUT, stop.set)
    timer.daemon = True
    timer.start()
    started = time.monotonic()
    handled = queue.process(
        relay, concurrency=WORKERS, poll_interval=POLL_INTERVAL, stop_when_idle=True, stop=stop
    )
    seconds = time.monotonic() - started
    timer.cancel()
    errors: list[str] = []
    left = queue.stats()
    if stop.is_set():
        errors.append(f"the drain did not finish within {DRAIN_TIMEOUT:.0f} s")
    elif left.pending or left.processing:  # process returned early: SIGTERM or Ctrl-C
        errors.append(f"the drain stopped with {left.pending + left.processing} messages left")
    return DrainResult(seconds, relay.attempts - before, handled, errors)


# ---------------------------------------------------------------------------------------------
# Reading the queue back


def messages(queue: Queue, status: Status) -> Iterator[Message]:
    """Every message with ``status``, page by page (keyset pagination on the id)."""
    after_id: int | None = None
    while True:
        page = queue.list(status=status, limit=PAGE_SIZE, after_id=after_id)
        yield from page
        if len(page) < PAGE_SIZE:
            return
        after_id = page[-1].id


def status_table(queue: Queue) -> dict[Status, Counter[str]]:
    """For each status, how many messages have it, per endpoint."""
    table: dict[Status, Counter[str]] = {status: Counter() for status in STATUSES}
    for status in STATUSES:
        for message in messages(queue, status):
            table[status][Delivery.from_payload(message.payload).endpoint] += 1
    return table


def lease_expiries(queue: Queue) -> int:
    """How many attempts ended because a lease ran out, read from the error histories."""
    return sum(
        entry["error"] == "lease expired"
        for status in STATUSES
        for message in messages(queue, status)
        for entry in message.errors
    )


# ---------------------------------------------------------------------------------------------
# Printing


def print_summary(title: str, queue: Queue, result: DrainResult) -> Counter[str]:
    """Print the statuses per endpoint and the throughput of a drain; return the status counts."""
    table = status_table(queue)
    totals: Counter[str] = Counter({s: sum(table[s].values()) for s in STATUSES})
    print(f"\n== {title} ==")
    print(f"{'endpoint':<10}" + "".join(f"{s:>12}" for s in STATUSES) + f"{'attempts':>12}")
    for endpoint in ENDPOINTS:
        cells = "".join(f"{table[s][endpoint]:>12}" for s in STATUSES)
        print(f"{endpoint:<10}{cells}{result.attempts[endpoint]:>12}")
    attempts = sum(result.attempts.values())
    print(f"{'total':<10}" + "".join(f"{totals[s]:>12}" for s in STATUSES) + f"{attempts:>12}")
    counts = " ".join(f"{s}={totals[s]}" for s in STATUSES)
    print(f"statuses: {counts} total={sum(totals.values())}")
    rate = attempts / result.seconds if result.seconds > 0 else 0.0
    print(
        f"throughput: {attempts} deliveries in {result.seconds:.2f} s = {rate:.1f} deliveries/s; "
        f"the worker loop handled {result.handled}; "
        f"leases that ran out so far: {lease_expiries(queue)}"
    )
    return totals


def print_dead_letters(queue: Queue) -> None:
    """Print how many messages died of each error, and the first few of each with their retries."""
    by_error: dict[str, list[Message]] = {}
    for message in messages(queue, "dead"):
        by_error.setdefault(message.last_error or "", []).append(message)
    for error, dead in by_error.items():
        print(f"dead letters with last_error={error!r}: {len(dead)}, for example")
        for message in dead[:DEAD_SAMPLES_PER_ERROR]:
            delivery = Delivery.from_payload(message.payload)
            print(
                f"  #{message.id:<4} {delivery.endpoint:<8} {delivery.kind:<40} "
                f"retry_count={message.retry_count} max_retries={message.max_retries}"
            )
    retried = max(messages(queue, "dead"), key=lambda m: len(m.errors), default=None)
    if retried is not None:
        print_error_history(retried)


def print_error_history(message: Message) -> None:
    """Print every failed attempt of a message, timed from its enqueue (the backoff shows)."""
    delivery = Delivery.from_payload(message.payload)
    print(f"error history of dead letter #{message.id} ({delivery.endpoint} {delivery.kind}):")
    for entry in message.errors:
        after = (entry["at"] - message.created_at).total_seconds()
        print(f"  attempt {entry['attempt']}  +{after:.1f} s  {entry['error']}")
    if message.dead_at is not None:
        print(f"  dead       +{(message.dead_at - message.created_at).total_seconds():.1f} s")


# ---------------------------------------------------------------------------------------------
# The demo


def verdict(
    totals: Counter[str], expected: int, subscribers: Subscribers, errors: list[str]
) -> list[str]:
    """Every reason the demo failed; empty when it succeeded."""
    reasons = list(errors)
    if totals["succeeded"] != expected or sum(totals.values()) != expected:
        counts = ", ".join(f"{totals[s]} {s}" for s in STATUSES)
        reasons.append(f"expected all {expected} messages succeeded, found {counts}")
    return reasons + overlap_reasons(subscribers)


def overlap_reasons(subscribers: Subscribers) -> list[str]:
    """A failure reason if the server saw two deliveries of one message, or of one endpoint (one
    ordering group), in progress at once."""
    reasons = []
    if subscribers.overlaps:
        ids = ", ".join(sorted(set(subscribers.overlaps), key=int)[:10])
        reasons.append(f"{len(subscribers.overlaps)} overlapping deliveries (message ids {ids})")
    if subscribers.endpoint_overlaps:
        paths = ", ".join(sorted(set(subscribers.endpoint_overlaps)))
        reasons.append(f"two deliveries to one endpoint at once ({paths})")
    return reasons


def order_reasons(subscribers: Subscribers, drain: str) -> list[str]:
    """A failure reason if an endpoint's successes of the drain just ended came out of order."""
    late = subscribers.out_of_order()
    return [f"{drain}: deliveries to {', '.join(late)} out of enqueue order"] if late else []


def relay_all(
    queue: Queue, deliveries: list[Delivery], subscribers: Subscribers, url: str
) -> list[str]:
    """Enqueue, drain, fix, replay and drain again; return the reasons for failure, if any."""
    relay = Relay(url)
    started = time.monotonic()
    for delivery in deliveries:
        # One ordering group per endpoint: its deliveries go one at a time, in this order.
        queue.enqueue(delivery.to_payload(), group=delivery.endpoint)
    print(f"enqueued {len(deliveries)} deliveries in {time.monotonic() - started:.2f} s")

    first = run_drain(queue, relay)
    print_summary("after the first drain", queue, first)
    print_dead_letters(queue)
    unordered = order_reasons(subscribers, "first drain")
    if first.errors or unordered:
        return first.errors + unordered + overlap_reasons(subscribers)

    subscribers.fix()
    replayed = queue.replay_all()
    print(f"\nfixed /gone and /strict (they answer 200 now); replayed {replayed} dead messages")
    second = run_drain(queue, relay)
    totals = print_summary("final", queue, second)
    errors = second.errors + order_reasons(subscribers, "second drain")
    return verdict(totals, len(deliveries), subscribers, errors)


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serves the ASGI ``app`` with uvicorn in a thread, on a free port of 127.0.0.1; yields its
    base URL and stops it afterwards."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="deadletter-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the deadletter HTTP server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{HOST}:{port}"
    finally:
        server.should_exit = True
        thread.join()


@contextmanager
def open_queue(path: Path, over_http: bool) -> Iterator[Queue]:
    """The demo's queue in the file ``path``: a `deadletter.Queue`, or the same queue through
    `deadletter.http` with `RemoteQueue` (``--http``)."""
    with deadletter.open(str(path)) as db:
        # Stored with the queue, for every process that uses it (here, also the HTTP server).
        db.queue(QUEUE_NAME).set_settings(backoff=BACKOFF, max_retries=MAX_RETRIES)
        if not over_http:
            yield db.queue(QUEUE_NAME)
            return
        import httpx
        from http_worker import RemoteQueue

        from deadletter.http import app

        with serve_in_thread(app(db)) as url, httpx.Client(base_url=url, timeout=60) as client:
            print(f"through the HTTP API at {url} (deadletter.http under uvicorn)")
            yield RemoteQueue(client, QUEUE_NAME)


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return the process exit code."""
    parser = argparse.ArgumentParser(description="The webhook relay demo of deadletter.")
    parser.add_argument("--http", action="store_true", help="use the queue through its HTTP API")
    args = parser.parse_args(argv)
    try:
        root = find_repo_root(Path(__file__).resolve().parent)
        path = examples_file(root)
    except SetupError as err:
        print(f"webhook_relay: {err}", file=sys.stderr)
        return 2
    deliveries = load_deliveries(path)
    events = len({d.event for d in deliveries})
    subscribers = Subscribers()
    server = SubscriberServer(subscribers)
    threading.Thread(target=server.serve_forever, name="subscribers", daemon=True).start()
    print(
        f"relaying {len(deliveries)} GitHub webhook examples ({events} event types, "
        f"{EXAMPLES_PACKAGE} {package_version(root)}) to {', '.join(ENDPOINTS)} at {server.url}"
    )
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="deadletter-demo-") as tmp:
            with open_queue(Path(tmp) / "jobs.db", args.http) as queue:
                reasons = relay_all(queue, deliveries, subscribers, server.url)
    finally:
        server.shutdown()
        server.server_close()
    requests = sum(subscribers.requests.values())
    print(f"server: {requests} requests, {len(subscribers.overlaps)} overlapping deliveries")
    print(
        f"server: {len(subscribers.endpoint_overlaps)} deliveries to an endpoint that was busy "
        "(one group per endpoint: one at a time, in order)"
    )
    print(f"demo took {time.monotonic() - started:.1f} s")
    if reasons:
        for reason in reasons:
            print(f"FAILED: {reason}")
        return 1
    print(
        f"OK: all {len(deliveries)} messages succeeded; no delivery overlapped another, and each "
        "endpoint got its deliveries one at a time, in order"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
