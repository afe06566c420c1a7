"""The OpenAPI 3.1 document of `deadletter.http`, served at ``/openapi.json``: one entry of
`OPERATIONS` per endpoint of `_routes.Api` (a test checks both ways), and `document`, which
assembles it with the components of `_schemas`. schemathesis tests the server against it; the
dashboard reads the status names and limits from it."""

from __future__ import annotations

import copy
from typing import Any

from .._deadletter import (
    BATCH,
    DEFAULT_LIST_LIMIT,
    LIST_LIMIT_RANGE,
    MAX_BATCH,
    MAX_ID,
    MAX_IDEMPOTENCY_KEY_CHARS,
    SCAN_BUDGET,
)
from ._schemas import (
    FILTER_PROPERTIES,
    IDEMPOTENCY_HEADER_PATTERN,
    PARAMETERS,
    RESPONSES,
    SCHEMAS,
    STATUSES,
    Json,
    json_content,
    ref,
)

__all__ = ["OPERATIONS", "document"]


def body(name: str, *, required: bool) -> Json:
    """A JSON request body with the schema ``components/schemas/<name>``."""
    return {"required": required, "content": json_content(ref("schemas", name))}


def ok(description: str, schema: Json) -> Json:
    return {"description": description, "content": json_content(schema)}


MESSAGE_OK = ok("The message after the operation.", ref("schemas", "Message"))


def problems(*names: str) -> Json:
    """The problem responses of an operation, by status: ``Unauthorized``, ``NotFound``, ..."""
    statuses = {
        "BadRequest": "400",
        "Unauthorized": "401",
        "Forbidden": "403",
        "NotFound": "404",
        "Conflict": "409",
        "TooLarge": "413",
        "UnsupportedMediaType": "415",
        "MisdirectedRequest": "421",
        "ValidationFailed": "422",
        "StoreUnavailable": "503",
    }
    return {statuses[name]: ref("responses", name) for name in names}


def link(operation_id: str, description: str, body: Any = None, *, by_id: bool = True) -> Json:
    """An OpenAPI link from a message response to ``operation_id`` on the same queue (and the
    same message when ``by_id``): the workflow for readers, stateful tests for schemathesis."""
    parameters = {"queue": "$request.path.queue"}
    if by_id:
        parameters["id"] = "$response.body#/id"
    result: Json = {
        "operationId": operation_id,
        "description": description,
        "parameters": parameters,
    }
    if body is not None:
        result["requestBody"] = body
    return result


def location(description: str) -> Json:
    return {"description": description, "schema": {"type": "string"}}


def count(name: str) -> Json:
    """``{"<name>": n}``."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [name],
        "properties": {name: {"type": "integer", "minimum": 0}},
    }


def switch(
    operation_id: str, summary: str, description: str = "", parameters: tuple[Json, ...] = ()
) -> Json:
    """Pausing or resuming a queue: no body, the settings back. ``parameters``: the queue's
    and the query's."""
    return {
        "operationId": operation_id,
        "summary": summary,
        **({"description": description} if description else {}),
        "parameters": list(parameters) or [QUEUE],
        "requestBody": body("Empty", required=False),
        "responses": {
            "200": ok("The queue's settings.", ref("schemas", "QueueSettings")),
            **problems(*WRITE),
        },
    }


def bulk(
    operation_id: str, summary: str, description: str, request: str, result: str
) -> Json:
    """A bulk action over the list's filters: batch by batch, or counted by a dry run."""
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": f"{description} The filters are the list's, combined with AND; the "
        "messages are taken in id order (the oldest first), at most `limit`. With `dry_run` "
        "true nothing changes, and `count` is the exact number the action would touch now. "
        f"Else it commits in batches of {BATCH} messages, each re-checked as it is written: a "
        "request that fails keeps the batches before it (run it again to finish).",
        "parameters": [QUEUE],
        "requestBody": body(request, required=False),
        "responses": {
            "200": ok("How many messages the action touched (or would, on a dry run).",
                      ref("schemas", result)),
            **problems(*WRITE),
        },
    }


LEASED = "$response.body#/lease_token"
CLAIM_NEXT = link("claim", "Claim the next due message of the queue.", by_id=False)
ENQUEUED_LINKS = {
    "GetMessage": link("getMessage", "Read the message back."),
    "RetryNow": link("retryNow", "Make it due now (a delayed enqueue)."),
    "Delete": link("deleteMessage", "Delete it (refused while it is pending: 409)."),
    "Move": link(
        "move", "Move it to another queue.", {"to_queue": "moved-by-link"}
    ),
    "Claim": CLAIM_NEXT,
}
MESSAGES: Json = {
    "type": "object",
    "additionalProperties": False,
    "required": ["messages"],
    "properties": {"messages": {"type": "array", "items": ref("schemas", "Message")}},
}


# Which problems each kind of route can answer. Every route can also answer those of `_guard`
# (`GUARDED`), and every route with a body 415: `document` adds them.
GUARDED = ("BadRequest", "Forbidden", "MisdirectedRequest")
READ = ("Unauthorized", "NotFound", "ValidationFailed", "StoreUnavailable")
WRITE = ("Unauthorized", "NotFound", "TooLarge", "ValidationFailed", "StoreUnavailable")
TRANSITION = (*WRITE, "Conflict")

QUEUE = ref("parameters", "queue")
NEW_QUEUE = ref("parameters", "new_queue")
CREATE = ref("parameters", "create")
ID = ref("parameters", "id")

OPERATIONS: dict[tuple[str, str], Json] = {
    ("/queues", "get"): {
        "operationId": "listQueues",
        "summary": "Every queue that holds messages or has stored settings, with its "
        "statistics, by name",
        "responses": {
            "200": ok(
                "The statistics of each queue.",
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["queues"],
                    "properties": {
                        "queues": {"type": "array", "items": ref("schemas", "QueueStats")}
                    },
                },
            ),
            **problems("Unauthorized", "StoreUnavailable"),
        },
    },
    ("/queues/{queue}/stats", "get"): {
        "operationId": "queueStats",
        "summary": "A queue's counts per status and its oldest ages, read from indexes",
        "parameters": [QUEUE],
        "responses": {
            "200": ok("The queue's statistics now.", ref("schemas", "QueueStats")),
            **problems(*READ),
        },
    },
    ("/queues/{queue}/messages", "post"): {
        "operationId": "enqueue",
        "summary": "Enqueue a message",
        "description": "With an idempotency key (the `Idempotency-Key` header or the body's "
        "`idempotency_key`, not both), a queue that already holds a message with that key, in "
        "any status, answers 200 with that message as it is now (`deduplicated` true) and "
        "inserts nothing; the key alone decides (the payload is not compared). The key is "
        "free again once its message is deleted or purged.",
        "parameters": [
            NEW_QUEUE,
            {
                "name": "Idempotency-Key",
                "in": "header",
                "description": "The idempotency key: an RFC 8941 string (`\"8e03978e-40d5\"`, as "
                "the IETF httpapi draft writes it; printable ASCII) or the bare key "
                "(`8e03978e-40d5`; its bytes are read as UTF-8, so a non-ASCII key is sent bare); "
                f"1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters once unquoted. Sent at most once.",
                "schema": {"type": "string", "pattern": IDEMPOTENCY_HEADER_PATTERN},
            },
        ],
        "requestBody": body("EnqueueRequest", required=True),
        "responses": {
            "201": {
                "description": "The new pending message.",
                "headers": {"Location": location("The new message's path.")},
                "content": json_content(ref("schemas", "Message")),
                "links": ENQUEUED_LINKS,
            },
            "200": {
                "description": "The queue's message with this idempotency key, as it is now "
                "(`deduplicated` true); nothing was inserted.",
                "headers": {"Content-Location": location("The message's path.")},
                "content": json_content(ref("schemas", "Message")),
                "links": ENQUEUED_LINKS,
            },
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/messages:batch", "post"): {
        "operationId": "enqueueBatch",
        "summary": f"Enqueue up to {MAX_BATCH} messages in one transaction, all or nothing",
        "description": "Each item is a payload or an object with the fields of an enqueue body. "
        "Validation errors carry the item's `index`. Idempotency keys go in the items: an "
        "`Idempotency-Key` header is a 422 here. The body may weigh 6 times the largest payload "
        "plus 64 KiB (413 beyond).",
        "parameters": [NEW_QUEUE],
        "requestBody": body("EnqueueBatchRequest", required=True),
        "responses": {
            "201": ok("The messages, in item order; at least one is new.", MESSAGES),
            "200": ok("The messages, in item order; every one was deduplicated.", MESSAGES),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/messages", "get"): {
        "operationId": "listMessages",
        "summary": "List messages by id, filtered (keyset pagination)",
        "description": "The filters are combined with AND. A page holds at most `limit` "
        "messages in id order, with ids above `after_id`; continue with `after_id` = "
        "`next_after_id` until it is null. A call examines at most "
        f"{SCAN_BUDGET} messages (every filter but `status` is checked on the messages "
        "themselves, in id order; no index answers `idempotency_key`, `group` or a time range "
        "either): when that budget runs out before the page is full, the page may be short, "
        "even empty, and `next_after_id` is the last id examined, so that the next call goes "
        "on from there. Instants are RFC 3339 in UTC: write `Z` (a `+` in a query string "
        "reads as a space: `+00:00` is `%2B00:00`).",
        "parameters": [
            QUEUE,
            *(
                {"name": name, "in": "query", "description": schema["description"], "schema": {
                    key: value for key, value in schema.items() if key != "description"
                }}
                for name, schema in FILTER_PROPERTIES.items()
            ),
            {
                "name": "limit",
                "in": "query",
                "description": f"Page size (default {DEFAULT_LIST_LIMIT}).",
                "schema": {
                    "type": "integer",
                    "minimum": LIST_LIMIT_RANGE[0],
                    "maximum": LIST_LIMIT_RANGE[1],
                },
            },
            {
                "name": "after_id",
                "in": "query",
                "description": "Only ids above this one: the previous page's next_after_id.",
                "schema": {"type": "integer", "minimum": 0, "maximum": MAX_ID},
            },
        ],
        "responses": {
            "200": ok("A page of messages.", ref("schemas", "MessagePage")),
            **problems(*READ),
        },
    },
    ("/queues/{queue}/messages/{id}", "get"): {
        "operationId": "getMessage",
        "summary": "One message",
        "parameters": [QUEUE, ID],
        "responses": {"200": ok("The message.", ref("schemas", "Message")), **problems(*READ)},
    },
    ("/queues/{queue}/messages/{id}", "delete"): {
        "operationId": "deleteMessage",
        "summary": "Delete a succeeded or dead message",
        "description": "A pending or processing message is refused with 409 `conflict`.",
        "parameters": [QUEUE, ID],
        "responses": {
            "200": ok("The message as it was deleted.", ref("schemas", "Message")),
            **problems(*TRANSITION),
        },
    },
    ("/queues/{queue}/claim", "post"): {
        "operationId": "claim",
        "summary": "Lease the next due message (FIFO; of an ordering group, only its head)",
        "description": "Expired leases of the queue count as failed attempts first, and its "
        "pending messages whose expiry has come are taken out. A paused queue answers 204.",
        "parameters": [QUEUE],
        "requestBody": body("ClaimRequest", required=False),
        "responses": {
            "200": {
                **ok("The leased message, with its lease_token.", ref("schemas", "Message")),
                "links": {
                    "Succeed": link(
                        "succeed", "Ack it with its lease token.", {"lease_token": LEASED}
                    ),
                    "Fail": link(
                        "fail",
                        "Fail the attempt with its lease token.",
                        {"error": "failed through a link", "lease_token": LEASED},
                    ),
                    "FailPermanently": link(
                        "fail",
                        "Send it to the dead-letter queue at once.",
                        {"error": "permanent", "lease_token": LEASED, "retryable": False},
                    ),
                    "Extend": link(
                        "extend", "Extend its lease (a heartbeat).", {"lease_token": LEASED}
                    ),
                },
            },
            "204": {
                "description": "No message is due, or the queue is paused.",
                "headers": {
                    "Retry-After": {
                        "description": "Seconds until the queue's next delayed message is due "
                        "(rounded up); absent when none is delayed, and while the queue is paused "
                        "(it delivers nothing until resumed).",
                        "schema": {"type": "string", "pattern": "^[0-9]+$"},
                    }
                },
            },
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/messages/{id}/extend", "post"): {
        "operationId": "extend",
        "summary": "Heartbeat: the lease runs until now + lease",
        "description": "409 `conflict` once the lease is lost (the token is not the current one).",
        "parameters": [QUEUE, ID],
        "requestBody": body("ExtendRequest", required=True),
        "responses": {"200": MESSAGE_OK, **problems(*TRANSITION)},
    },
    ("/queues/{queue}/messages/{id}/succeed", "post"): {
        "operationId": "succeed",
        "summary": "Ack: processing -> succeeded",
        "parameters": [QUEUE, ID],
        "requestBody": body("SucceedRequest", required=False),
        "responses": {"200": MESSAGE_OK, **problems(*TRANSITION)},
    },
    ("/queues/{queue}/messages/{id}/fail", "post"): {
        "operationId": "fail",
        "summary": "Fail an attempt: pending after backoff (or `retry_in`), or dead",
        "description": "Dead once the attempts reach max_retries, when `retryable` is false, or "
        "when the message's expiry has come; else pending again after `retry_in` seconds when "
        "given, else after the queue's backoff.",
        "parameters": [QUEUE, ID],
        "requestBody": body("FailRequest", required=True),
        "responses": {
            "200": {
                **MESSAGE_OK,
                "links": {
                    "Replay": link("replay", "Replay it once it is dead."),
                    "Delete": link("deleteMessage", "Delete it once it is dead."),
                    "Claim": CLAIM_NEXT,
                },
            },
            **problems(*TRANSITION),
        },
    },
    ("/queues/{queue}/messages/{id}/replay", "post"): {
        "operationId": "replay",
        "summary": "Replay (redrive) a dead message: dead -> pending, retry_count 0",
        "description": "A message of an ordering group goes to the end of its group (behind the "
        "messages waiting there); one without a group is due at once. It expires after "
        "`expires_in` seconds (when omitted: the queue's stored `expires_in`, else never).",
        "parameters": [QUEUE, ID],
        "requestBody": body("ReplayRequest", required=False),
        "responses": {
            "200": {**MESSAGE_OK, "links": {"Claim": CLAIM_NEXT}},
            **problems(*TRANSITION),
        },
    },
    ("/queues/{queue}/messages/{id}/retry-now", "post"): {
        "operationId": "retryNow",
        "summary": "Retry now: a pending message waiting for its backoff or delay is due now",
        "description": "`retry_after` is cleared (a message of an ordering group still waits "
        "behind its group's head); the attempt counts stay. A pending message already due is "
        "answered unchanged; any other status is a 409 `conflict`.",
        "parameters": [QUEUE, ID],
        "requestBody": body("Empty", required=False),
        "responses": {
            "200": {**MESSAGE_OK, "links": {"Claim": CLAIM_NEXT}},
            **problems(*TRANSITION),
        },
    },
    ("/queues/{queue}/messages/{id}/move", "post"): {
        "operationId": "move",
        "summary": "Move a pending or dead message to another queue",
        "description": "It keeps its id, payload, status, counters, history, `retry_after`, "
        "expiry, idempotency key and group; `moved_from` is this queue, `updated_at` now. A "
        "message of an ordering group leaves its group here (the next member becomes its head) "
        "and joins the end of the group of the same name in `to_queue`. 409 `conflict` with "
        "`reason` `wrong_status` for a processing or succeeded message, `key_taken` when a "
        "message of `to_queue` carries its idempotency key (it stays here); `to_queue` equal "
        "to this queue is a 422.",
        "parameters": [QUEUE, ID],
        "requestBody": body("MoveRequest", required=True),
        "responses": {"200": MESSAGE_OK, **problems(*TRANSITION)},
    },
    ("/queues/{queue}/move", "post"): {
        **bulk(
            "moveAll",
            "Move every pending and dead message the filters select to another queue",
            "Each moves as `move` does (`moved_from` set); `status` may narrow to pending or "
            "dead (another is a 422). A message whose idempotency key a message of `to_queue` "
            "carries stays here and is not counted (nor by a dry run).",
            "MoveAllRequest",
            "BulkResult",
        ),
        "requestBody": body("MoveAllRequest", required=True),
    },
    ("/queues/{queue}/replay", "post"): bulk(
        "replayAll",
        "Replay every dead message the filters select",
        "Each goes back to pending with retry_count 0 (a message of an ordering group to the "
        "end of its group).",
        "ReplayAllRequest",
        "ReplayAllResult",
    ),
    ("/queues/{queue}/delete", "post"): bulk(
        "deleteAll",
        "Delete every succeeded or dead message the filters select",
        "Their idempotency keys are free again. Pending and processing messages are never "
        "deleted (`status` pending or processing: 422).",
        "DeleteAllRequest",
        "BulkResult",
    ),
    ("/queues/{queue}/retry-now", "post"): bulk(
        "retryNowAll",
        "Retry now every pending message the filters select that waits for its backoff or delay",
        "Each is due at once (`retry_after` cleared; a message of an ordering group still "
        "waits behind its group's head); the attempt counts stay.",
        "RetryNowAllRequest",
        "BulkResult",
    ),
    ("/queues/{queue}/purge", "post"): {
        "operationId": "purge",
        "summary": "Delete the succeeded or dead messages not changed for older_than seconds",
        "description": f"Commits in batches of {BATCH} messages; their idempotency keys are free "
        "again.",
        "parameters": [QUEUE],
        "requestBody": body("PurgeRequest", required=True),
        "responses": {
            "200": ok("How many messages were deleted.", count("purged")),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/reap", "post"): {
        "operationId": "reap",
        "summary": "Take back the expired leases now, and take out the expired pending messages",
        "description": "Each processing message whose lease ran out counts as a failed attempt "
        "(pending again with its backoff, or dead past its retries), as the next claim would do; "
        "pending messages whose expiry has come are taken out. Also on a paused queue, whose "
        "claims do none of it.",
        "parameters": [QUEUE],
        "requestBody": body("Empty", required=False),
        "responses": {
            "200": ok("How many messages were reaped or expired.", count("reaped")),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/settings", "get"): {
        "operationId": "getSettings",
        "summary": "The settings stored with a queue, and whether it is paused",
        "description": "A queue never configured reads as all unset (nothing is written); so "
        "does a name that names no queue, as every read of one answers as for an empty queue "
        "(its statistics zeros, its list empty): only the writes that change a queue's row "
        "(`PUT` settings, pause, resume) are a 404 for it.",
        "parameters": [QUEUE],
        "responses": {
            "200": ok("The queue's settings.", ref("schemas", "QueueSettings")),
            **problems(*READ),
        },
    },
    ("/queues/{queue}/settings", "put"): {
        "operationId": "putSettings",
        "summary": "Store a queue's settings, for every client (replaces all five)",
        "description": "A per-call value (an enqueue's `max_retries` or `expires_in`, a claim's "
        "`lease`, ...) wins over the stored one, which wins over the default. Pausing is "
        "`/pause` and `/resume`, which this leaves alone. A queue that holds no message and "
        "has no stored settings is a 404 unless `create=true`, which makes the queue: its name "
        "then takes an enqueue's rules (the pattern of `new_queue`), and a name no new queue "
        "takes is a 422 `invalid` on `queue` at once, with every other rejected field. The "
        "body is checked first: a bad one is a 422 listing every rejected field, also for a "
        "queue that is not there (the 404 comes once the body is right). A queue that exists "
        "keeps its name, also one stored by 0.1.0 that no new queue takes.",
        "parameters": [QUEUE, CREATE],
        "requestBody": body("SettingsRequest", required=True),
        "responses": {
            "200": ok("The settings now stored.", ref("schemas", "QueueSettings")),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/pause", "post"): switch(
        "pause",
        "Pause a queue: it claims nothing until resumed (idempotent)",
        "Enqueues and every other operation still work; leases already held keep running. A "
        "queue that holds no message and has no stored settings is a 404 unless `create=true`, "
        "which makes the queue: its name then takes an enqueue's rules (the pattern of "
        "`new_queue`), and a name no new queue takes is a 422 `invalid` on `queue` at once, "
        "with every other rejected field. A queue that exists keeps its name, also one stored "
        "by 0.1.0 that no new queue takes.",
        (QUEUE, CREATE),
    ),
    ("/queues/{queue}/resume", "post"): switch(
        "resume",
        "Resume a paused queue (idempotent)",
        "Takes any queue name, also one stored by 0.1.0 that no new queue takes. A queue that "
        "holds no message and has no stored settings is a 404 (resuming it would change nothing: "
        "a mistyped name read as resumed while the real queue stayed paused). So is a second "
        "resume of a queue that held no message and no other setting: the first one deleted "
        "its settings (all back to their defaults), and nothing tells it from a typo then. A "
        "client that retries a resume may read that 404 as done: no queue of that name is "
        "paused. The CLI's `resume` refuses it the same way; the Python API's `Queue.resume` "
        "takes any name.",
    ),
    ("/metrics", "get"): {
        "operationId": "metrics",
        "summary": "Prometheus metrics: messages per queue and status, oldest dead age, expired "
        "leases, delayed, lag, paused, expired",
        "description": "`deadletter_messages{queue, status}`, "
        "`deadletter_oldest_dead_age_seconds{queue}`, `deadletter_expired_leases{queue}`, "
        "`deadletter_delayed_messages{queue}`, `deadletter_oldest_due_age_seconds{queue}` (the "
        "lag) and `deadletter_paused{queue}` (gauges), "
        "`deadletter_expired_total{queue, outcome}` (a counter, outcome `dead` or `discard`), "
        "read from indexes and the queues' stored counters at scrape time. The OpenMetrics "
        "format when the Accept header asks for it.",
        "responses": {
            "200": {
                "description": "The Prometheus text exposition format.",
                "content": {
                    "text/plain": {"schema": {"type": "string"}},
                    "application/openmetrics-text": {"schema": {"type": "string"}},
                },
            },
            **problems("Unauthorized", "StoreUnavailable"),
        },
    },
    ("/healthz", "get"): {
        "operationId": "healthz",
        "summary": "200 while the database answers (needs no token)",
        "security": [],
        "responses": {
            "200": ok(
                "The database answered.",
                {
                    "type": "object",
                    "required": ["status"],
                    "properties": {"status": {"const": "ok"}},
                },
            ),
            **problems("StoreUnavailable"),
        },
    },
    ("/openapi.json", "get"): {
        "operationId": "openapi",
        "summary": "This document",
        "responses": {"200": ok("OpenAPI 3.1", {"type": "object"}), **problems("Unauthorized")},
    },
    ("/", "get"): {
        "operationId": "dashboard",
        "summary": "The dashboard page (its files need no token; it asks for one)",
        "security": [],
        "responses": {
            "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}
        },
    },
}


def document() -> Json:
    """A new copy of the whole document."""
    paths: Json = {}
    for (path, method), operation in OPERATIONS.items():
        guarded = (*GUARDED, "UnsupportedMediaType") if "requestBody" in operation else GUARDED
        responses = {**operation["responses"], **problems(*guarded)}
        operation = {**operation, "responses": dict(sorted(responses.items()))}
        paths.setdefault(path, {})[method] = operation
    return copy.deepcopy(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "deadletter",
                "version": "1",
                "summary": "A message queue with retries, backoff and a dead-letter queue.",
                "description": "Every error is an RFC 9457 application/problem+json object with "
                "a stable `code`. Timestamps are RFC 3339 UTC strings with milliseconds.",
            },
            "paths": paths,
            "components": {
                "schemas": SCHEMAS,
                "responses": RESPONSES,
                "parameters": PARAMETERS,
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            },
            "security": [{"bearer": []}, {}],
        }
    )
