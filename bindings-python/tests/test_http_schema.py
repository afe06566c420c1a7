"""schemathesis against the HTTP API's own OpenAPI document: for every operation, requests
generated from the document (valid ones, and invalid ones that must be refused with a 4xx) get no
5xx, and every response conforms to the document (status, media type, body schema, headers,
`Allow` on 405). Then stateful scenarios follow the document's links (a claim's lease token goes to
succeed or fail, a failed message to replay). One database is shared by all cases, so later
requests meet messages that earlier ones enqueued, claimed and failed. The token is on: every
request carries it."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings

import deadletter
import deadletter.http

# Examples per operation, and stateful scenarios: ~10 s each on 2 cores.
MAX_EXAMPLES = 100
STATEFUL_EXAMPLES = 80
TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

db = deadletter.open(":memory:", max_payload_bytes=4096)
app = deadletter.http.app(db, token=TOKEN, max_payload_bytes=4096)
schema = schemathesis.openapi.from_asgi("/openapi.json", app, headers=AUTH)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=AUTH)


class Workflow(schema.as_state_machine()):  # type: ignore[misc]
    """Sequences of calls that follow the document's links (enqueue -> claim -> succeed or fail
    with the lease token -> replay), each response checked against the document."""

    def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
        return {"headers": AUTH}


TestWorkflow = Workflow.TestCase
TestWorkflow.settings = settings(
    max_examples=STATEFUL_EXAMPLES,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
