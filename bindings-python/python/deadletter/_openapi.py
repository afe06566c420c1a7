"""The OpenAPI 3.1 document of `deadletter.http`, served at ``/openapi.json``.

One entry of `OPERATIONS` per route of ``deadletter.http.Api.routes`` (a test checks both ways);
schemathesis tests the server against this document. Shared pieces (the message, the problem
responses, the path parameters) live in ``components``.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from ._json import INSTANT_PATTERN

__all__ = ["OPERATIONS", "document"]

Json = dict[str, Any]

STATUSES = ["pending", "processing", "succeeded", "dead"]
MAX_ID = 2**63 - 1


def ref(kind: str, name: str) -> Json:
    """``{"$ref": "#/components/<kind>/<name>"}``."""
    return {"$ref": f"#/components/{kind}/{name}"}


def nullable(schema: Json) -> Json:
    """``schema`` or JSON ``null``: an omitted optional field may also be sent as null."""
    return {"anyOf": [schema, {"type": "null"}]}


NO_NUL = r"^[^\u0000]*$"
"""Strings the core refuses with NUL (U+0000) in them: queue names, idempotency keys, error texts
(not every store can hold it)."""

TIMESTAMP: Json = {
    "type": "string",
    "format": "date-time",
    "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$",
    "description": "RFC 3339, UTC, milliseconds: 2026-11-30T16:24:03.123Z",
}

INSTANT: Json = {
    "type": "string",
    "format": "date-time",
    "pattern": INSTANT_PATTERN,
    "description": "RFC 3339 in UTC, as the API writes instants (2026-11-30T16:24:03.123Z; "
    "+00:00 is accepted for Z, other offsets are not); fractions floored to the millisecond.",
}

def seconds(low_ms: int, high_ms: int, description: str) -> Json:
    """A duration in seconds. The queue rounds it to the nearest millisecond (half away from
    zero), then checks ``low_ms..=high_ms``: the bounds here are those of the numbers that round
    into that range (``0.0005`` is a lease of 1 ms; ``-0.0004`` a delay of 0)."""
    low: Json = (
        {"exclusiveMinimum": -0.0005} if low_ms == 0 else {"minimum": (low_ms - 0.5) / 1000}
    )
    return {
        "type": "number",
        **low,
        "exclusiveMaximum": (high_ms + 0.5) / 1000,
        "description": f"{description} Rounded to the millisecond, then "
        f"{Decimal(low_ms) / 1000} to {Decimal(high_ms) / 1000} seconds.",
    }


LEASE = seconds(1, 12 * 3600 * 1000, "Seconds (the server's default lease when omitted).")

SECONDS_AGE: Json = {
    "type": ["number", "null"],
    "minimum": 0,
    "description": "Seconds (with milliseconds), or null.",
}

IDEMPOTENCY_KEY: Json = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL}

SF_STRING_OR_BARE = r'^(?:"(?:[ !#-\[\]-~]|\\["\\]){1,255}"|[^"\u0000][^\u0000]{0,254})$'
"""The ``Idempotency-Key`` header: an RFC 8941 sf-string (``"8e03978e-..."``, as the IETF draft
writes it) or, as most clients send it, the bare key; 1 to 255 characters once unquoted."""


def json_content(schema: Json) -> Json:
    return {"application/json": {"schema": schema}}


def body(name: str, *, required: bool) -> Json:
    """A JSON request body with the schema ``components/schemas/<name>``."""
    return {"required": required, "content": json_content(ref("schemas", name))}


def ok(description: str, schema: Json) -> Json:
    return {"description": description, "content": json_content(schema)}


MESSAGE_OK = ok("The message after the operation.", ref("schemas", "Message"))


def problems(*names: str) -> Json:
    """The problem responses of an operation, by status: ``Unauthorized``, ``NotFound``, ..."""
    statuses = {
        "Unauthorized": "401",
        "NotFound": "404",
        "Conflict": "409",
        "TooLarge": "413",
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


LEASED = "$response.body#/lease_token"
CLAIM_NEXT = link("claim", "Claim the next due message of the queue.", by_id=False)
ENQUEUED_LINKS = {
    "GetMessage": link("getMessage", "Read the message back."),
    "Claim": CLAIM_NEXT,
}
BATCH: Json = {
    "type": "object",
    "additionalProperties": False,
    "required": ["messages"],
    "properties": {"messages": {"type": "array", "items": ref("schemas", "Message")}},
}


# Which problems each kind of route can answer.
READ = ("Unauthorized", "NotFound", "ValidationFailed", "StoreUnavailable")
WRITE = ("Unauthorized", "NotFound", "TooLarge", "ValidationFailed", "StoreUnavailable")
TRANSITION = (*WRITE, "Conflict")

QUEUE = ref("parameters", "queue")
ID = ref("parameters", "id")

OPERATIONS: dict[tuple[str, str], Json] = {
    ("/queues", "get"): {
        "operationId": "listQueues",
        "summary": "Every queue that holds messages, with its statistics, by name",
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
            QUEUE,
            {
                "name": "Idempotency-Key",
                "in": "header",
                "description": "The idempotency key: an RFC 8941 string (`\"8e03978e-40d5\"`, as "
                "the IETF httpapi draft writes it; printable ASCII) or the bare key "
                "(`8e03978e-40d5`; its bytes are read as UTF-8, so a non-ASCII key is sent bare); "
                "1 to 255 characters once unquoted. Sent at most once.",
                "schema": {"type": "string", "pattern": SF_STRING_OR_BARE},
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
        "summary": "Enqueue up to 1000 messages in one transaction, all or nothing",
        "description": "Each item is a payload or an object with the fields of an enqueue body. "
        "Validation errors carry the item's `index`. Idempotency keys go in the items: an "
        "`Idempotency-Key` header is a 422 here. The body may weigh 6 times the largest payload "
        "plus 64 KiB (413 beyond).",
        "parameters": [QUEUE],
        "requestBody": body("EnqueueBatchRequest", required=True),
        "responses": {
            "201": ok("The messages, in item order; at least one is new.", BATCH),
            "200": ok("The messages, in item order; every one was deduplicated.", BATCH),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/messages", "get"): {
        "operationId": "listMessages",
        "summary": "List messages by id, optionally of one status (keyset pagination)",
        "parameters": [
            QUEUE,
            {"name": "status", "in": "query", "schema": {"enum": STATUSES}},
            {
                "name": "limit",
                "in": "query",
                "description": "Page size (default 100).",
                "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
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
        "summary": "Lease the next due message (FIFO)",
        "description": "Expired leases of the queue count as failed attempts first.",
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
                "description": "No message is due.",
                "headers": {
                    "Retry-After": {
                        "description": "Seconds until the queue's next delayed message is due "
                        "(rounded up); absent when none is delayed.",
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
        "summary": "Fail an attempt: pending after backoff, or dead",
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
        "parameters": [QUEUE, ID],
        "requestBody": body("Empty", required=False),
        "responses": {
            "200": {**MESSAGE_OK, "links": {"Claim": CLAIM_NEXT}},
            **problems(*TRANSITION),
        },
    },
    ("/queues/{queue}/replay", "post"): {
        "operationId": "replayAll",
        "summary": "Replay every dead message the filters select",
        "description": "Selects dead messages with `dead_after <= dead_at < dead_before` whose "
        "last error contains `error_contains` (case-sensitive), in id order (the oldest message "
        "first), at most `limit`; an empty body replays every dead message of the queue. "
        "Commits in batches of 200 messages: a request that fails keeps the batches before "
        "it (run it again to finish; only dead messages are touched).",
        "parameters": [QUEUE],
        "requestBody": body("ReplayAllRequest", required=False),
        "responses": {
            "200": ok("How many messages were replayed.", count("replayed")),
            **problems(*WRITE),
        },
    },
    ("/queues/{queue}/purge", "post"): {
        "operationId": "purge",
        "summary": "Delete the succeeded or dead messages not changed for older_than seconds",
        "description": "Commits in batches of 200 messages; their idempotency keys are free "
        "again.",
        "parameters": [QUEUE],
        "requestBody": body("PurgeRequest", required=True),
        "responses": {
            "200": ok("How many messages were deleted.", count("purged")),
            **problems(*WRITE),
        },
    },
    ("/metrics", "get"): {
        "operationId": "metrics",
        "summary": "Prometheus metrics: messages per queue and status, oldest dead age",
        "description": "`deadletter_messages{queue, status}` and "
        "`deadletter_oldest_dead_age_seconds{queue}` (gauges, read from indexes at scrape "
        "time). The OpenMetrics format when the Accept header asks for it.",
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


def problem_schema(code: str, extra: Json | None = None, required: tuple[str, ...] = ()) -> Json:
    """A problem object with ``code`` fixed, plus the members of that code."""
    return {
        "allOf": [
            ref("schemas", "Problem"),
            {
                "type": "object",
                "required": list(required),
                "properties": {"code": {"const": code}, **(extra or {})},
            },
        ]
    }


def problem_response(description: str, schema: Json, headers: Json | None = None) -> Json:
    response: Json = {
        "description": description,
        "content": {"application/problem+json": {"schema": schema}},
    }
    if headers:
        response["headers"] = headers
    return response


MESSAGE_PROPERTIES: Json = {
    "id": {"type": "integer", "minimum": 1},
    "queue": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL},
    "payload": {"type": "string"},
    "status": {"enum": STATUSES},
    "retry_count": {
        "type": "integer",
        "minimum": 0,
        "description": "Failed attempts since enqueue or the last replay.",
    },
    "max_retries": {"type": "integer", "minimum": 1, "maximum": 10},
    "retry_after": {
        **nullable(TIMESTAMP),
        "description": "Set exactly while pending in backoff or delayed: not claimable before.",
    },
    "last_error": {"type": ["string", "null"], "pattern": NO_NUL},
    "created_at": TIMESTAMP,
    "updated_at": TIMESTAMP,
    "lease_token": {"type": ["string", "null"]},
    "lease_expires_at": nullable(TIMESTAMP),
    "idempotency_key": nullable(IDEMPOTENCY_KEY),
    "deduplicated": {
        "type": "boolean",
        "description": "On an enqueue's answer: the queue already held a message with the key.",
    },
    "first_failed_at": nullable(TIMESTAMP),
    "dead_at": {**nullable(TIMESTAMP), "description": "While dead: when it last became dead."},
    "errors": {
        "type": "array",
        "maxItems": 20,
        "description": "The failure history, oldest first, at most the last 20 attempts.",
        "items": {"$ref": "#/components/schemas/FailedAttempt"},
    },
    "errors_dropped": {
        "type": "integer",
        "minimum": 0,
        "description": "How many older entries of the history were dropped.",
    },
    "replay_count": {"type": "integer", "minimum": 0},
    "replayed_at": nullable(TIMESTAMP),
}

STATS_PROPERTIES: Json = {
    "queue": MESSAGE_PROPERTIES["queue"],
    "pending": {"type": "integer", "minimum": 0, "description": "Due, in backoff or delayed."},
    "processing": {"type": "integer", "minimum": 0, "description": "Expired leases included."},
    "succeeded": {"type": "integer", "minimum": 0},
    "dead": {"type": "integer", "minimum": 0},
    "expired": {
        "type": "integer",
        "minimum": 0,
        "description": "Processing messages whose lease has run out (not reaped yet).",
    },
    "delayed": {"type": "integer", "minimum": 0, "description": "Pending, not due yet."},
    "next_due_at": {
        **nullable(TIMESTAMP),
        "description": "When the next delayed message becomes due.",
    },
    "oldest_due_age": {
        **SECONDS_AGE,
        "description": "Seconds the oldest due pending message has waited since it was enqueued.",
    },
    "oldest_dead_age": {
        **SECONDS_AGE,
        "description": "Seconds since the oldest dead message died.",
    },
}


def closed_object(properties: Json, description: str) -> Json:
    """An object with exactly ``properties``, all required."""
    return {
        "type": "object",
        "description": description,
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


ENQUEUE_PROPERTIES: Json = {
    "payload": {
        "type": "string",
        "description": "Stored as is; at most the server's payload limit in UTF-8 bytes.",
    },
    "max_retries": nullable({"type": "integer", "minimum": 1, "maximum": 10, "default": 3}),
    "idempotency_key": {
        **nullable(IDEMPOTENCY_KEY),
        "description": "Or the Idempotency-Key header (not both).",
    },
    "delay": nullable(
        seconds(0, 30 * 86400 * 1000, "Seconds before the message may be claimed (default 0).")
    ),
}

SCHEMAS: Json = {
    "Message": closed_object(
        MESSAGE_PROPERTIES,
        "Message.to_dict() of the Python package, timestamps as RFC 3339 strings.",
    ),
    "FailedAttempt": closed_object(
        {
            "attempt": {"type": "integer", "minimum": 1},
            "error": {"type": "string", "pattern": NO_NUL},
            "at": TIMESTAMP,
        },
        "One failed attempt; an expired lease is the error `lease expired`.",
    ),
    "QueueStats": closed_object(
        STATS_PROPERTIES, "QueueStats.to_dict() of the Python package; ages in seconds."
    ),
    "MessagePage": {
        "type": "object",
        "additionalProperties": False,
        "required": ["messages", "next_after_id"],
        "properties": {
            "messages": {"type": "array", "items": ref("schemas", "Message")},
            "next_after_id": {
                "type": ["integer", "null"],
                "description": "after_id of the next page; null when this page is not full.",
            },
        },
    },
    "EnqueueRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["payload"],
        "properties": ENQUEUE_PROPERTIES,
    },
    "EnqueueBatchRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["items"],
        "properties": {
            "items": {
                "type": "array",
                "maxItems": 1000,
                "items": {
                    "anyOf": [
                        ENQUEUE_PROPERTIES["payload"],
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["payload"],
                            "properties": ENQUEUE_PROPERTIES,
                        },
                    ]
                },
            }
        },
    },
    "ClaimRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"lease": nullable(LEASE)},
    },
    "ExtendRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["lease_token"],
        "properties": {"lease_token": {"type": "string"}, "lease": nullable(LEASE)},
    },
    "SucceedRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"lease_token": {"type": ["string", "null"]}},
    },
    "FailRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["error"],
        "properties": {
            "error": {
                "type": "string",
                "pattern": NO_NUL,
                "description": "Kept as the last error and in the history (cut past 64 KiB).",
            },
            "lease_token": {"type": ["string", "null"]},
            "retryable": nullable({"type": "boolean", "default": True}),
        },
    },
    "ReplayAllRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "error_contains": {
                "type": ["string", "null"],
                "description": "Only messages whose last error contains this text (case-sensitive; no NUL, which no error text holds).",
            },
            "dead_before": {**nullable(INSTANT), "description": "Only deaths before (exclusive)."},
            "dead_after": {**nullable(INSTANT), "description": "Only deaths at or after."},
            "limit": nullable({"type": "integer", "minimum": 1, "maximum": MAX_ID}),
        },
    },
    "PurgeRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["status", "older_than"],
        "properties": {
            "status": {"enum": ["succeeded", "dead"]},
            "older_than": seconds(
                0,
                315537897599999,  # the core's range of instants, 0001 to 9999
                "Seconds since the message last changed (updated_at).",
            ),
        },
    },
    "Empty": {"type": "object", "additionalProperties": False},
    "Problem": {
        "type": "object",
        "description": "RFC 9457 problem details, with the stable error code.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "code": {"type": "string"},
        },
    },
    "FieldError": {
        "type": "object",
        "required": ["field", "code", "message"],
        "properties": {
            "field": {
                "type": "string",
                "description": "queue, id, payload, body, a query parameter, ...",
            },
            "code": {
                "enum": [
                    "type",
                    "empty",
                    "too_long",
                    "too_large",
                    "out_of_range",
                    "invalid",
                    "unknown",
                ]
            },
            "message": {"type": "string"},
            "index": {
                "type": "integer",
                "minimum": 0,
                "description": "The item of a batch the field belongs to.",
            },
        },
    },
}

RESPONSES: Json = {
    "Unauthorized": problem_response(
        "No `Authorization: Bearer <token>` header with the server's token.",
        problem_schema("unauthorized"),
        {"WWW-Authenticate": {"schema": {"type": "string"}}},
    ),
    "NotFound": problem_response(
        "No message with this id in this queue (queue and id are given), or no such route.",
        problem_schema("not_found", {"queue": {"type": "string"}, "id": {"type": "integer"}}),
    ),
    "Conflict": problem_response(
        "The message's status does not allow the operation, or the lease token is not the "
        "current one (the lease expired).",
        problem_schema(
            "conflict",
            {
                "id": {"type": "integer"},
                "reason": {"enum": ["wrong_status", "lease_lost"]},
                "message_status": {"enum": [*STATUSES, None]},
            },
            ("id", "reason", "message_status"),
        ),
    ),
    "TooLarge": problem_response(
        "The body is larger than 6 x the payload limit + 64 KiB (refused before parsing).",
        problem_schema("too_large"),
    ),
    "ValidationFailed": problem_response(
        "Rejected input: every rejected field, path segment or query parameter is listed.",
        problem_schema(
            "validation_failed",
            {"errors": {"type": "array", "minItems": 1, "items": ref("schemas", "FieldError")}},
            ("errors",),
        ),
    ),
    "StoreUnavailable": problem_response(
        "SQLite failed or stayed locked; retry after Retry-After seconds.",
        problem_schema("store"),
        {"Retry-After": {"schema": {"type": "string"}}},
    ),
}

PARAMETERS: Json = {
    "queue": {
        "name": "queue",
        "in": "path",
        "required": True,
        "description": "The queue name, percent-encoded (a/b is a%2Fb): 1..=255 characters, "
        "without NUL.",
        "schema": MESSAGE_PROPERTIES["queue"],
    },
    "id": {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
    },
}


def document() -> Json:
    """A new copy of the whole document."""
    paths: Json = {}
    for (path, method), operation in OPERATIONS.items():
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
