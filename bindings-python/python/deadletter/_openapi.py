"""The OpenAPI 3.1 document of `deadletter.http`, served at ``/openapi.json``.

One entry of `OPERATIONS` per route of ``deadletter.http.Api.routes`` (a test checks both ways);
schemathesis tests the server against this document. Shared pieces (the message, the problem
responses, the path parameters) live in ``components``.
"""

from __future__ import annotations

import copy
from typing import Any

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


TIMESTAMP: Json = {
    "type": "string",
    "format": "date-time",
    "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
    "description": "RFC 3339, UTC, milliseconds: 2026-11-30T16:24:03.123Z",
}


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


LEASED = "$response.body#/lease_token"
CLAIM_NEXT = link("claim", "Claim the next due message of the queue.", by_id=False)


# Which problems each kind of route can answer.
READ = ("Unauthorized", "NotFound", "ValidationFailed", "StoreUnavailable")
WRITE = ("Unauthorized", "NotFound", "TooLarge", "ValidationFailed", "StoreUnavailable")
TRANSITION = (*WRITE, "Conflict")

QUEUE = ref("parameters", "queue")
ID = ref("parameters", "id")

OPERATIONS: dict[tuple[str, str], Json] = {
    ("/queues/{queue}/messages", "post"): {
        "operationId": "enqueue",
        "summary": "Enqueue a message",
        "parameters": [QUEUE],
        "requestBody": body("EnqueueRequest", required=True),
        "responses": {
            "201": {
                "description": "The new pending message.",
                "headers": {
                    "Location": {
                        "description": "The message's path.",
                        "schema": {"type": "string"},
                    }
                },
                "content": json_content(ref("schemas", "Message")),
                "links": {
                    "GetMessage": link("getMessage", "Read the message back."),
                    "Claim": CLAIM_NEXT,
                },
            },
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
                },
            },
            "204": {"description": "No message is due."},
            **problems(*WRITE),
        },
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


SCHEMAS: Json = {
    "Message": {
        "type": "object",
        "description": "Message.to_dict() of the Python package, timestamps as RFC 3339 strings.",
        "required": [
            "id",
            "queue",
            "payload",
            "status",
            "retry_count",
            "max_retries",
            "retry_after",
            "last_error",
            "created_at",
            "updated_at",
            "lease_token",
            "lease_expires_at",
        ],
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "queue": {"type": "string", "minLength": 1},
            "payload": {"type": "string"},
            "status": {"enum": STATUSES},
            "retry_count": {"type": "integer", "minimum": 0},
            "max_retries": {"type": "integer", "minimum": 1, "maximum": 10},
            "retry_after": nullable(TIMESTAMP),
            "last_error": {"type": ["string", "null"]},
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "lease_token": {"type": ["string", "null"]},
            "lease_expires_at": nullable(TIMESTAMP),
        },
    },
    "MessagePage": {
        "type": "object",
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
        "properties": {
            "payload": {
                "type": "string",
                "description": "Stored as is; at most the server's payload limit in UTF-8 bytes.",
            },
            "max_retries": nullable({"type": "integer", "minimum": 1, "maximum": 10, "default": 3}),
        },
    },
    "ClaimRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "lease": nullable(
                {
                    "type": "number",
                    "minimum": 0.001,
                    "maximum": 43200,
                    "description": "Seconds (the server's default lease when omitted).",
                }
            )
        },
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
            "error": {"type": "string"},
            "lease_token": {"type": ["string", "null"]},
            "retryable": nullable({"type": "boolean", "default": True}),
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
        "description": "The queue name, percent-encoded (a/b is a%2Fb): 1..=255 characters.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
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
