"""schemathesis against the HTTP API's own OpenAPI document: for every operation, requests
generated from the document (valid ones, and invalid ones that must be refused with a 4xx) get no
5xx, and every response conforms to the document (status, media type, body schema, headers,
`Allow` on 405). One database is shared by all these cases, so later requests meet messages that
earlier ones enqueued, claimed and failed. Then stateful scenarios follow the document's links
(a claim's lease token goes to extend, succeed or fail, a failed message to replay or delete),
each from an empty database: hypothesis replays a scenario and needs the same answers to the same
calls. The token is on: every request carries it."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

import schemathesis
from schemathesis.specs.openapi.checks import ensure_resource_availability
from hypothesis import HealthCheck, settings
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

import deadletter
import deadletter.http
from deadletter.http import document

# Examples per operation, and stateful scenarios: ~10 s each on 2 cores.
MAX_EXAMPLES = 100
STATEFUL_EXAMPLES = 80
TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_PAYLOAD_BYTES = 4096


def make_app(db: deadletter.Database) -> Starlette:
    """The app, answering for schemathesis's host name (``testserver``)."""
    return deadletter.http.app(
        db, token=TOKEN, max_payload_bytes=MAX_PAYLOAD_BYTES, allowed_hosts=["testserver"]
    )


class Server:
    """The app under test, over a database that `reset` replaces with an empty one."""

    def __init__(self) -> None:
        self.db = deadletter.open(":memory:", max_payload_bytes=MAX_PAYLOAD_BYTES)
        self.app = make_app(self.db)

    def reset(self) -> None:
        self.db.close()
        self.db = deadletter.open(":memory:", max_payload_bytes=MAX_PAYLOAD_BYTES)
        self.app = make_app(self.db)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


server = Server()
schema = schemathesis.openapi.from_asgi("/openapi.json", server, headers=AUTH)


NEW_QUEUE = re.compile(document()["components"]["parameters"]["new_queue"]["schema"]["pattern"])
"""The queue names the routes that make a queue take (no control characters, not only white
space)."""
NEW_QUEUE_ROUTES = {
    ("/queues/{queue}/messages", "POST"),
    ("/queues/{queue}/messages:batch", "POST"),
    ("/queues/{queue}/pause", "POST"),
    ("/queues/{queue}/settings", "PUT"),
}
"""The enqueue routes, pause and storing settings (which make a queue without a message)."""


@schema.hook("map_case")
def valid_as_documented(context: object, case: schemathesis.Case) -> schemathesis.Case:
    """OpenAPI cannot say that the `Idempotency-Key` header and the body's `idempotency_key`
    exclude each other (the document says it in words; giving both is a 422 that
    test_http_producers.py checks): a valid request generated with both keeps the header only.
    An invalid one is left as it is: it gets its 422 either way.

    And a stateful scenario may carry a queue name from one operation to an enqueue (the links
    schemathesis infers), where the document's stricter pattern of new names refuses it
    (`new_queue`, also of pause and storing settings: a 422 that test_http_queues.py checks);
    such a step, still counted as valid, acts on the queue ``q`` instead. Schemathesis keeps path parameters percent-encoded
    (``%C2%95`` for U+0095, a C1 control): the name is decoded before it is checked."""
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    if not negative and "Idempotency-Key" in (case.headers or {}) and isinstance(case.body, dict):
        case.body.pop("idempotency_key", None)
    if not negative:
        delayed_with_a_status(case)
        elsewhere(case)
        due_before_expiry(case)
        within_body_limit(case)
    queue = (case.path_parameters or {}).get("queue")
    if (
        not negative
        and (case.operation.path, case.method.upper()) in NEW_QUEUE_ROUTES
        and isinstance(queue, str)
        and not NEW_QUEUE.search(unquote(queue))
    ):
        case.path_parameters["queue"] = "q"
    return case


def elsewhere(case: schemathesis.Case) -> None:
    """Nor that a move's ``to_queue`` is another queue than the one in the path (a 422 that
    test_http_moves.py checks): a valid request generated with the same name moves to the
    queue ``elsewhere`` (or ``elsewhere-2`` from there)."""
    queue = (case.path_parameters or {}).get("queue")
    if isinstance(case.body, dict) and isinstance(queue, str):
        if case.body.get("to_queue") == unquote(queue):
            case.body["to_queue"] = "elsewhere-2" if queue == "elsewhere" else "elsewhere"


BODY_LIMIT = 6 * MAX_PAYLOAD_BYTES + 64 * 1024
"""The largest body the app reads (6 times the largest payload plus 64 KiB; a 413 beyond)."""


def within_body_limit(case: schemathesis.Case) -> None:
    """Nor a body's size in bytes (a 413, documented in words): a valid batch generated heavier
    than the limit (up to 1 000 items of long multi-byte strings) keeps its first items that fit
    (session 11: schemathesis sent one and counted the 413 as a valid request refused)."""
    body = case.body
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return
    while len(items) > 1 and len(json.dumps(body).encode()) > BODY_LIMIT:
        del items[len(items) // 2 :]


def due_before_expiry(case: schemathesis.Case) -> None:
    """Nor that an enqueue's ``delay`` must be shorter than its ``expires_in`` (the core refuses
    a message that could only expire, since 0bbc070): a valid request generated with both keeps
    the expiry only, in its body and in each item of a batch."""
    body = case.body
    items = body.get("items") if isinstance(body, dict) else None
    for given in [body, *(items if isinstance(items, list) else [])]:
        if not isinstance(given, dict):
            continue
        delay, expires_in = given.get("delay"), given.get("expires_in")
        if not (isinstance(delay, (int, float)) and isinstance(expires_in, (int, float))):
            continue
        if delay >= expires_in - 0.001:  # within a millisecond, the rounding decides
            given.pop("delay")


def delayed_with_a_status(case: schemathesis.Case) -> None:
    """OpenAPI cannot say either that ``delayed`` goes only with the status pending (or none),
    in the list's query and in a move's body (test_http_filters.py checks the 422): a valid
    request generated with both keeps the status only."""
    for given in (case.query, case.body):
        if not isinstance(given, dict):
            continue
        status = given.get("status")
        if given.get("delayed") is not None and status is not None and status != "pending":
            given.pop("delayed")


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=AUTH)


class Workflow(schema.as_state_machine()):  # type: ignore[misc]
    """Sequences of calls that follow the document's links (enqueue -> claim -> extend, succeed
    or fail with the lease token -> replay or delete), each response checked against the
    document."""

    def setup(self) -> None:
        server.reset()

    def before_call(self, case: schemathesis.Case) -> None:
        valid_as_documented(None, case)  # the steps are not mapped by the hook

    def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
        return {"headers": AUTH}

    def validate_response(
        self,
        response: Any,
        case: schemathesis.Case,
        additional_checks: Any = None,
        **kwargs: Any,
    ) -> None:
        """Every check but "a resource just created is found" (ST302): a scenario's move, bulk
        delete or purge of the message between its enqueue and a later call on it (a link from
        the enqueue) makes that call's 404 right, and the check counts only DELETEs as removals
        (it failed on the move of issue 22)."""
        __tracebackhide__ = True
        case.validate_response(
            response,
            additional_checks=additional_checks,
            excluded_checks=[ensure_resource_availability],
            transport_kwargs=kwargs or None,
            recorder=getattr(self, "recorder", None),
        )


TestWorkflow = Workflow.TestCase
TestWorkflow.settings = settings(
    max_examples=STATEFUL_EXAMPLES,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
