"""The one mapping from errors to responses: `PROBLEMS`, each error code's RFC 9457 problem
(HTTP status, title, the exception's attributes it copies, headers), the exception handlers that
answer with them, and the validation errors the HTTP layer raises itself (a body's shape, a path
segment's encoding), written as the queue writes its own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

import deadletter

__all__ = [
    "PROBLEMS",
    "NoQueue",
    "Problem",
    "error_problem",
    "http_problem",
    "internal_problem",
    "invalid",
    "problem",
    "validation_error",
]

PROBLEM_TYPE = "urn:deadletter:problem:"
"""Prefix of every problem ``type``: ``urn:deadletter:problem:validation-failed``, ..."""
PROBLEM_JSON = "application/problem+json"


@dataclass(frozen=True)
class Problem:
    """How one error code is answered: HTTP status, title, the exception attributes copied into
    the problem object (``(member, attribute)`` pairs) and extra headers."""

    status: int
    title: str
    members: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)


PROBLEMS: dict[str, Problem] = {
    # The queue's codes (deadletter.CODES), from its exceptions.
    "validation_failed": Problem(422, "Validation failed", (("errors", "errors"),)),
    "not_found": Problem(404, "Not found", (("queue", "queue"), ("id", "id"))),
    "conflict": Problem(
        409, "Conflict", (("id", "id"), ("reason", "reason"), ("message_status", "status"))
    ),
    "store": Problem(503, "Store unavailable", headers={"Retry-After": "1"}),
    # The HTTP layer's own.
    "bad_request": Problem(400, "Bad request"),
    "unauthorized": Problem(401, "Unauthorized", headers={"WWW-Authenticate": "Bearer"}),
    "forbidden": Problem(403, "Forbidden"),
    "too_large": Problem(413, "Content too large"),
    "unsupported_media_type": Problem(415, "Unsupported media type"),
    "misdirected_request": Problem(421, "Misdirected request"),
    "method_not_allowed": Problem(405, "Method not allowed"),
    "internal": Problem(500, "Internal server error"),
}
"""Every problem the API answers, by ``code``: the one mapping from errors to responses."""


def problem(
    code: str, detail: str, headers: Optional[Mapping[str, str]] = None, **members: Any
) -> Response:
    """The problem response for ``code`` (a key of `PROBLEMS`)."""
    spec = PROBLEMS[code]
    body = {
        "type": PROBLEM_TYPE + code.replace("_", "-"),
        "title": spec.title,
        "status": spec.status,
        "detail": detail,
        "code": code,
        **members,
    }
    return JSONResponse(
        body, spec.status, headers={**spec.headers, **(headers or {})}, media_type=PROBLEM_JSON
    )


JSON_TERMS = [
    (re.compile(r"\bgot an? (?:Fields|dict)\b"), "got an object"),
    (re.compile(r"\bgot a list\b"), "got an array"),
    (re.compile(r"\bgot a float\b"), "got a number"),
    (re.compile(r"\bgot a bool\b"), "got a boolean"),
    (re.compile(r"\bgot (?:a NoneType|None)\b"), "got null"),
    (re.compile(r"\bgot an int\b"), "got an integer"),
    (re.compile(r"\bgot a str\b"), "got a string"),
    (re.compile(r"\bmust be a bool\b"), "must be a boolean"),
    (re.compile(r" or a datetime\.timedelta\b"), ""),
    (re.compile(r"\bmust be an aware datetime\b"), "must be an RFC 3339 date-time in UTC"),
    (re.compile(r"\ba list of payloads or dicts\b"), "an array of payloads or objects"),
]
"""The Python API's words for types in validation messages, and what a JSON client sent instead."""


def in_json_terms(text: str) -> str:
    """A validation message of the Python API as a JSON client reads it (`JSON_TERMS`)."""
    for pattern, words in JSON_TERMS:
        text = pattern.sub(words, text)
    return text


LOST_LEASE_STATUS = "processing"
"""A ``lease_lost`` conflict's ``message_status``. The core refuses a lease token only of a message
it read as processing (``machine::check_lease`` runs after the status check), so its conflict
carries no status (`deadletter.ConflictError.status` is ``None``): the problem said
``message_status: null`` of a message processing under its live lease (tester T6's F3, session
13)."""


def error_problem(_: Request, exc: Exception) -> Response:
    """A `deadletter.Error` as its problem (members copied from the exception's attributes, a lost
    lease's `LOST_LEASE_STATUS`; validation messages in JSON's terms)."""
    assert isinstance(exc, deadletter.Error)
    spec = PROBLEMS[exc.code]
    members = {member: getattr(exc, attr) for member, attr in spec.members if hasattr(exc, attr)}
    if isinstance(exc, deadletter.ConflictError) and exc.reason == "lease_lost":
        members["message_status"] = LOST_LEASE_STATUS
    if isinstance(exc, deadletter.ValidationError):
        members["errors"] = [{**e, "message": in_json_terms(e["message"])} for e in exc.errors]
    return problem(exc.code, in_json_terms(str(exc)), **members)


def http_problem(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (no route, wrong method, body too large) as problems."""
    assert isinstance(exc, HTTPException)
    where = f"{request.method} {request.url.path}"
    codes = {
        404: "not_found",
        405: "method_not_allowed",
        413: "too_large",
        415: "unsupported_media_type",
    }
    code = codes.get(exc.status_code)
    if code is None:
        return PlainTextResponse(exc.detail, exc.status_code, headers=exc.headers)
    details = {
        "not_found": f"no route for {where}",
        "method_not_allowed": f"{where}: method not allowed",
        "too_large": "the request body is larger than this server accepts",
        "unsupported_media_type": "the request body must be JSON, sent with "
        "`Content-Type: application/json`",
    }
    return problem(code, details[code], headers=exc.headers)


def internal_problem(_: Request, exc: Exception) -> Response:
    """An unexpected exception: 500, without details (the server logs it)."""
    return problem("internal", "an unexpected error occurred; the server log has the details")


def validation_error(errors: list[deadletter.FieldError]) -> deadletter.ValidationError:
    """A `deadletter.ValidationError` of ``errors``, described as the queue describes them."""
    described = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return deadletter.ValidationError(f"validation failed: {described}", errors)


def invalid(field_name: str, code: str, message: str) -> deadletter.ValidationError:
    """A validation error of the HTTP layer (the body's shape, a path segment's encoding)."""
    return validation_error([{"field": field_name, "code": code, "message": message}])


class NoQueue(deadletter.NotFoundError):
    """A 404 `not_found` that names a queue and no message (``queue`` without ``id``): a route
    that would store a queue (pause, PUT settings) was given a name that names none."""

    def __init__(self, message: str, queue: str) -> None:
        Exception.__init__(self, message)  # not NotFoundError's: there is no id
        self.queue = queue
