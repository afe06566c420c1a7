"""The HTTP API of deadletter: an ASGI application (Starlette) over one `deadletter.Database`.

>>> import deadletter, deadletter.http
>>> db = deadletter.open(":memory:")
>>> api = deadletter.http.app(db, token="s3cret")   # mount it anywhere, or serve it alone

It is a thin translation of the public Python API: every rule stays in the queue, the HTTP layer
only reads requests and writes responses. Mount it under a prefix of any ASGI application
(``Mount("/jobs", app=api)`` in Starlette, ``app.mount("/jobs", api)`` in FastAPI, a path
dispatcher in Django's ASGI handler), or run it with ``deadletter serve PATH`` (uvicorn). It needs
the ``server`` extra: ``pip install 'deadletter[server]'``.

Routes (relative to where the app is mounted; ``/openapi.json`` describes every one):

====== ============================================ ============================================
GET    ``/queues``                                  every queue's statistics: ``{"queues": [...]}``
GET    ``/queues/{queue}/stats``                    the queue's statistics
POST   ``/queues/{queue}/messages``                 enqueue: 201, the message, ``Location``; 200
                                                    with the existing message for a known
                                                    idempotency key (``Idempotency-Key`` header)
POST   ``/queues/{queue}/messages:batch``           ``enqueue_many``: ``{"items": [...]}``
GET    ``/queues/{queue}/messages``                 list: ``status``, ``limit``, ``after_id``
GET    ``/queues/{queue}/messages/{id}``            the message
DELETE ``/queues/{queue}/messages/{id}``            delete a succeeded or dead message
POST   ``/queues/{queue}/claim``                    200 the leased message, 204 when none is due
                                                    (``Retry-After`` when one is delayed)
POST   ``/queues/{queue}/messages/{id}/extend``     heartbeat: ``lease_token``, ``lease``
POST   ``/queues/{queue}/messages/{id}/succeed``
POST   ``/queues/{queue}/messages/{id}/fail``
POST   ``/queues/{queue}/messages/{id}/replay``
POST   ``/queues/{queue}/replay``                   ``replay_all``: ``{"replayed": n}``
POST   ``/queues/{queue}/purge``                    ``purge``: ``{"purged": n}``
GET    ``/metrics``                                 Prometheus metrics (`deadletter._metrics`)
GET    ``/healthz``                                 200 while the database answers (no token)
GET    ``/openapi.json``                            the OpenAPI 3.1 document
GET    ``/``                                        the dashboard (``static/``; no token: no data)
====== ============================================ ============================================

A message is ``Message.to_dict()`` with timestamps as RFC 3339 UTC strings with milliseconds;
statistics are ``QueueStats.to_dict()`` with ages in seconds. Instants in requests
(``dead_before``, ``dead_after``) are RFC 3339 in UTC (``Z`` or ``+00:00``); durations are
seconds. Queue names are percent-decoded path segments (``a%2Fb`` is the queue ``a/b``).

Errors are RFC 9457 ``application/problem+json`` objects with ``type``, ``title``, ``status``,
``detail`` and ``code``, mapped once, in `PROBLEMS`, from the error codes: ``validation_failed``
422 (with ``errors``: ``field``, ``code``, ``message``; also for a body that is not a JSON object
or has unknown fields, field code ``unknown``), ``not_found`` 404, ``conflict`` 409, ``store`` 503
(``Retry-After``), and the HTTP layer's own ``unauthorized`` 401, ``too_large`` 413 (a body over
``6 * max_payload_bytes + 64 KiB``, refused before it is parsed: enough for any accepted payload
in its most escaped JSON form), ``method_not_allowed`` 405 and ``internal`` 500.
"""

from __future__ import annotations

import hmac
import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote, unquote

try:
    from prometheus_client.exposition import choose_encoder
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import Headers
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import BaseRoute, Mount, Route
    from starlette.staticfiles import StaticFiles
    from starlette.types import ASGIApp, Receive, Scope, Send
except ModuleNotFoundError as _missing:  # (private names: not the module's API)
    _package = (_missing.name or "a package").partition(".")[0]
    raise ImportError(
        f"deadletter.http needs the server extra ({_package} is missing): "
        "pip install 'deadletter[server]'",
        name=_package,
    ) from _missing

import deadletter

from . import _metrics
from ._json import jsonable, parse_timestamp
from ._openapi import document

__all__ = ["PROBLEMS", "Problem", "app", "body_limit"]

STATIC = Path(__file__).with_name("static")
DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20
"""`deadletter.open`'s default ``max_payload_bytes``."""
DEFAULT_LIST_LIMIT = 100
"""`Queue.list`'s default ``limit``."""
PROBLEM_TYPE = "urn:deadletter:problem:"
"""Prefix of every problem ``type``: ``urn:deadletter:problem:validation-failed``, ..."""
PROBLEM_JSON = "application/problem+json"
PUBLIC_PATHS = ("/healthz", "/")
PUBLIC_PREFIX = "/static/"


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
    "unauthorized": Problem(401, "Unauthorized", headers={"WWW-Authenticate": "Bearer"}),
    "too_large": Problem(413, "Content too large"),
    "method_not_allowed": Problem(405, "Method not allowed"),
    "internal": Problem(500, "Internal server error"),
}
"""Every problem the API answers, by ``code``: the one mapping from errors to responses."""


def body_limit(max_payload_bytes: int) -> int:
    """The largest request body accepted: any payload of ``max_payload_bytes`` fits, even with
    every byte escaped as ``\\u00XX`` (6 bytes), plus 64 KiB for the other fields."""
    return 6 * max_payload_bytes + (64 << 10)


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
    (re.compile(r"\bgot a NoneType\b"), "got null"),
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


def error_problem(_: Request, exc: Exception) -> Response:
    """A `deadletter.Error` as its problem (members copied from the exception's attributes;
    validation messages in JSON's terms)."""
    assert isinstance(exc, deadletter.Error)
    spec = PROBLEMS[exc.code]
    members = {member: getattr(exc, attr) for member, attr in spec.members if hasattr(exc, attr)}
    if isinstance(exc, deadletter.ValidationError):
        members["errors"] = [{**e, "message": in_json_terms(e["message"])} for e in exc.errors]
    return problem(exc.code, in_json_terms(str(exc)), **members)


def http_problem(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (no route, wrong method, body too large) as problems."""
    assert isinstance(exc, HTTPException)
    where = f"{request.method} {request.url.path}"
    codes = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}
    code = codes.get(exc.status_code)
    if code is None:
        return PlainTextResponse(exc.detail, exc.status_code, headers=exc.headers)
    details = {
        "not_found": f"no route for {where}",
        "method_not_allowed": f"{where}: method not allowed",
        "too_large": "the request body is larger than this server accepts",
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


# ---------------------------------------------------------------------------------------------
# Reading requests: only JSON and URL decoding; every rule on the values is the queue's.

INTEGER = re.compile(r"-?[0-9]+")


def integer(text: str) -> Any:
    """A decimal integer as an int; anything else unchanged, for the queue to reject."""
    return int(text) if INTEGER.fullmatch(text) else text


def segment(request: Request, name: str) -> str:
    """A percent-decoded path parameter (the app routes on the raw path: see `RawPathRouting`)."""
    try:
        return unquote(request.path_params[name], errors="strict")
    except UnicodeDecodeError:
        raise invalid(name, "type", "is not percent-encoded UTF-8") from None


def query(request: Request, fields: Mapping[str, Callable[[str], Any]]) -> Fields:
    """The query parameters named in ``fields``, each converted by its function; an unknown or
    repeated parameter is a validation error."""
    errors: list[deadletter.FieldError] = []
    values = Fields()
    for name, value in request.query_params.multi_items():
        if name not in fields:
            expected = ", ".join(fields) or "none"
            errors.append(
                {
                    "field": name,
                    "code": "unknown",
                    "message": f"is not a query parameter of this route (expected: {expected})",
                }
            )
        elif name in values:
            errors.append({"field": name, "code": "invalid", "message": "is given more than once"})
        else:
            values[name] = fields[name](value)
    if errors:
        raise validation_error(errors)
    return values


def no_constants(name: str) -> object:
    """``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not a JSON value")


def json_number(text: str) -> Any:
    """A JSON number written with a fraction or an exponent: an int when its value is integral
    (JSON has one number type: ``10.0`` is the integer 10, as JSON Schema says), else a float."""
    value = float(text)
    return int(value) if value.is_integer() else value


class Fields(dict[str, Any]):
    """A request body's fields; an absent one reads as ``None`` (the API's "omitted")."""

    def __missing__(self, key: str) -> None:
        return None


def unique_keys(pairs: list[tuple[str, Any]]) -> Fields:
    """A JSON object whose keys all differ."""
    data = Fields()
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} appears more than once")
        data[key] = value
    return data


JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


async def read(request: Request, limit: int) -> bytes:
    """The raw body, or a 413 problem as soon as it is known to exceed ``limit`` bytes (from
    ``Content-Length``, or while reading a chunked body). Starlette's own ``max_body_size``
    answers a declared oversize body in text/plain, hence these few lines."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HTTPException(413)
    chunks = bytearray()
    async for chunk in request.stream():
        chunks += chunk
        if len(chunks) > limit:
            raise HTTPException(413)
    return bytes(chunks)


def parse_body(raw: bytes, fields: Iterable[str], *, required: bool) -> Fields:
    """A request body: a JSON object with only ``fields`` (none required here: a missing one is
    ``None``, which the queue rejects where it needs a value). No body at all is ``{}`` unless
    ``required``; a body of whitespace only is not JSON."""
    if not raw.strip():
        if raw or required:
            what = "only whitespace" if raw else "empty"
            raise invalid("body", "type", f"must be a JSON object; the body is {what}")
        return Fields()
    try:
        data = json.loads(
            raw, parse_constant=no_constants, parse_float=json_number, object_pairs_hook=unique_keys
        )
    except (ValueError, RecursionError) as err:
        raise invalid("body", "invalid", f"is not JSON: {err}") from None
    if not isinstance(data, Fields):  # objects are Fields (unique_keys)
        kind = JSON_KINDS.get(type(data), "null")
        raise invalid("body", "type", f"must be a JSON object, got {kind}")
    allowed = tuple(fields)
    unknown = [key for key in data if key not in allowed]
    if unknown:
        expected = ", ".join(allowed) or "no fields"
        raise validation_error(
            [
                {
                    "field": key,
                    "code": "unknown",
                    "message": f"is not a field of this body (expected: {expected})",
                }
                for key in unknown
            ]
        )
    return data


def instants(data: Fields, names: Iterable[str]) -> None:
    """Replaces the RFC 3339 strings of ``data[name]`` by aware datetimes (`parse_timestamp`);
    other values stay as they are, for the queue to reject. A string that is not an instant in
    UTC (the pattern of the OpenAPI document) or names no real day is a validation error."""
    errors: list[deadletter.FieldError] = []
    for name in names:
        if isinstance(data[name], str):
            try:
                data[name] = parse_timestamp(data[name])
            except ValueError:
                message = (
                    "must be an RFC 3339 date-time in UTC, such as 2026-11-30T16:24:03.123Z "
                    "(Z or +00:00)"
                )
                errors.append({"field": name, "code": "invalid", "message": message})
    if errors:
        raise validation_error(errors)


IDEMPOTENCY_HEADER = "Idempotency-Key"
SF_STRING = re.compile(r'"((?:[ !#-\[\]-~]|\\["\\])*)"')
"""An RFC 8941 sf-string: printable ASCII in double quotes, ``\\"`` and ``\\\\`` escaped."""


def idempotency_header(request: Request) -> Optional[str]:
    """The key of the ``Idempotency-Key`` header: an RFC 8941 string (``"k-1"``, as the IETF
    httpapi draft writes it; printable ASCII) unquoted, or a bare value (``k-1``, any UTF-8) as it
    is; ``None`` without the header. Sent twice, not UTF-8, or starting with ``"`` without being
    such a string: a validation error."""
    values = request.headers.getlist(IDEMPOTENCY_HEADER)
    if not values:
        return None
    if len(values) > 1:
        raise invalid(IDEMPOTENCY_HEADER, "invalid", "is given more than once")
    try:  # Starlette decodes header bytes as Latin-1; the key is the bytes' UTF-8 text
        value = values[0].encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(IDEMPOTENCY_HEADER, "invalid", "is not UTF-8") from None
    if not value.startswith('"'):
        return value
    quoted = SF_STRING.fullmatch(value)
    if quoted is None:
        raise invalid(
            IDEMPOTENCY_HEADER,
            "invalid",
            'starts with a double quote but is not an RFC 8941 string ("...", printable ASCII, '
            'with \\" and \\\\ as its only escapes)',
        )
    return re.sub(r"\\(.)", r"\1", quoted.group(1))


def renamed(error: deadletter.ValidationError, old: str, new: str) -> deadletter.ValidationError:
    """``error`` with the field ``old`` called ``new`` (an argument that came from a header)."""
    errors: list[deadletter.FieldError] = [
        {**e, "field": new} if e["field"] == old else e
        for e in error.errors
    ]
    return validation_error(errors)


def message_response(
    message: deadletter.Message, status: int = 200, headers: Optional[Mapping[str, str]] = None
) -> Response:
    """A message as JSON."""
    return JSONResponse(jsonable(message.to_dict()), status, headers=headers)


def system_clock() -> datetime:
    """Now, in UTC (`deadletter.open`'s default clock)."""
    return datetime.now(timezone.utc)


def retry_after(due: datetime, now: datetime) -> str:
    """``Retry-After``: the whole seconds from ``now`` until ``due``, rounded up (0 when past)."""
    return str(max(0, math.ceil((due - now) / timedelta(milliseconds=1) / 1000)))


def message_path(request: Request, message: deadletter.Message) -> str:
    """The message's URL path, under the prefix the app is mounted at."""
    prefix = quote(request.scope.get("root_path", ""), safe="/")
    return f"{prefix}/queues/{path_segment(message.queue)}/messages/{message.id}"


def path_segment(name: str) -> str:
    """``name`` percent-encoded as one path segment; ``.`` and ``..`` too (as ``%2E``), since
    clients remove dot segments from paths."""
    return "%2E" * len(name) if name in (".", "..") else quote(name, safe="")


# ---------------------------------------------------------------------------------------------
# The routes


class Api:
    """The endpoints, over one database. Each calls one method of the public API in a thread
    (SQLite may wait for a lock held by another process; meanwhile the database's reads, such as
    ``/healthz``, still answer)."""

    def __init__(
        self,
        db: deadletter.Database,
        body_limit: int,
        clock: Optional[Callable[[], datetime]] = None,
    ) -> None:
        self.db = db
        self.body_limit = body_limit
        self.clock = clock or system_clock
        self.metrics_registry = _metrics.registry(db)

    async def body(self, request: Request, fields: Iterable[str], *, required: bool) -> Fields:
        """The JSON object of the request body (`parse_body`); 413 past the size limit."""
        return parse_body(await read(request, self.body_limit), fields, required=required)

    def queue(self, request: Request) -> deadletter.Queue:
        """The queue named by the ``{queue}`` path segment."""
        return self.db.queue(segment(request, "queue"))

    def id(self, request: Request) -> Any:
        """The ``{id}`` path segment: an int, or the text for the queue to reject."""
        return integer(segment(request, "id"))

    async def list_queues(self, request: Request) -> Response:
        queues = await run_in_threadpool(self.db.queues)
        return JSONResponse({"queues": [jsonable(stats.to_dict()) for stats in queues]})

    async def queue_stats(self, request: Request) -> Response:
        stats = await run_in_threadpool(self.queue(request).stats)
        return JSONResponse(jsonable(stats.to_dict()))

    async def enqueue(self, request: Request) -> Response:
        queue = self.queue(request)
        data = await self.body(
            request, ("payload", "max_retries", "idempotency_key", "delay"), required=True
        )
        header = idempotency_header(request)
        if header is not None and data["idempotency_key"] is not None:
            raise invalid(
                IDEMPOTENCY_HEADER,
                "invalid",
                "is given as this header and as the body's idempotency_key: give one",
            )
        try:
            message = await run_in_threadpool(
                queue.enqueue,
                data["payload"],
                max_retries=data["max_retries"],
                idempotency_key=data["idempotency_key"] if header is None else header,
                delay=data["delay"],
            )
        except deadletter.ValidationError as error:
            raise error if header is None else renamed(error, "idempotency_key", IDEMPOTENCY_HEADER)
        path = message_path(request, message)
        if message.deduplicated:
            return message_response(message, 200, {"Content-Location": path})
        return message_response(message, 201, {"Location": path})

    async def enqueue_batch(self, request: Request) -> Response:
        queue = self.queue(request)
        if request.headers.getlist(IDEMPOTENCY_HEADER):
            # One key cannot name several messages, and ignoring it would duplicate a retried batch.
            raise invalid(
                IDEMPOTENCY_HEADER,
                "invalid",
                "is not taken by a batch: give each item its own idempotency_key",
            )
        data = await self.body(request, ("items",), required=True)
        messages = await run_in_threadpool(queue.enqueue_many, data["items"])
        created = any(not m.deduplicated for m in messages)
        return JSONResponse(
            {"messages": [jsonable(m.to_dict()) for m in messages]}, 201 if created else 200
        )

    async def list_messages(self, request: Request) -> Response:
        queue = self.queue(request)
        params = query(request, {"status": str, "limit": integer, "after_id": integer})
        limit = params.get("limit", DEFAULT_LIST_LIMIT)
        page = await run_in_threadpool(
            queue.list, status=params["status"], limit=limit, after_id=params["after_id"]
        )
        full = bool(page) and len(page) == limit
        return JSONResponse(
            {
                "messages": [jsonable(m.to_dict()) for m in page],
                "next_after_id": page[-1].id if full else None,
            }
        )

    async def get_message(self, request: Request) -> Response:
        queue = self.queue(request)
        return message_response(await run_in_threadpool(queue.get, self.id(request)))

    async def delete_message(self, request: Request) -> Response:
        queue = self.queue(request)
        return message_response(await run_in_threadpool(queue.delete, self.id(request)))

    async def claim(self, request: Request) -> Response:
        queue = self.queue(request)
        data = await self.body(request, ("lease",), required=False)
        message = await run_in_threadpool(queue.claim, lease=data["lease"])
        if message is not None:
            return message_response(message)
        due = await run_in_threadpool(queue.next_due_at)
        headers = {} if due is None else {"Retry-After": retry_after(due, self.clock())}
        return Response(status_code=204, headers=headers)

    async def extend(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("lease_token", "lease"), required=True)
        message = await run_in_threadpool(
            queue.extend, id, lease_token=data["lease_token"], lease=data["lease"]
        )
        return message_response(message)

    async def succeed(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("lease_token",), required=False)
        message = await run_in_threadpool(queue.succeed, id, lease_token=data["lease_token"])
        return message_response(message)

    async def fail(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("error", "lease_token", "retryable"), required=True)
        message = await run_in_threadpool(
            queue.fail,
            id,
            data["error"],
            lease_token=data["lease_token"],
            retryable=data["retryable"],
        )
        return message_response(message)

    async def replay(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        await self.body(request, (), required=False)
        return message_response(await run_in_threadpool(queue.replay, id))

    async def replay_all(self, request: Request) -> Response:
        queue = self.queue(request)
        filters = ("error_contains", "dead_before", "dead_after", "limit")
        data = await self.body(request, filters, required=False)
        instants(data, ("dead_before", "dead_after"))
        replayed = await run_in_threadpool(
            queue.replay_all,
            error_contains=data["error_contains"],
            dead_before=data["dead_before"],
            dead_after=data["dead_after"],
            limit=data["limit"],
        )
        return JSONResponse({"replayed": replayed})

    async def purge(self, request: Request) -> Response:
        queue = self.queue(request)
        data = await self.body(request, ("status", "older_than"), required=True)
        purged = await run_in_threadpool(
            queue.purge, status=data["status"], older_than=data["older_than"]
        )
        return JSONResponse({"purged": purged})

    async def metrics(self, request: Request) -> Response:
        """The queue metrics in the format the ``Accept`` header asks for (prometheus-client's
        negotiation: OpenMetrics, else the Prometheus text format)."""
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        body = await run_in_threadpool(encoder, self.metrics_registry)
        return Response(body, headers={"Content-Type": content_type})

    async def healthz(self, request: Request) -> Response:
        """200 while the database answers a read (an index lookup on a queue named ``healthz``)."""
        await run_in_threadpool(self.db.queue("healthz").list, limit=1)
        return JSONResponse({"status": "ok"})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(document())

    async def dashboard(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    def endpoints(self) -> dict[tuple[str, str], Endpoint]:
        """Every endpoint by (path, method): `_openapi.OPERATIONS` has the same keys (a test
        checks it), so a new operation is one method here and one entry there."""
        q = "/queues/{queue}"
        m = q + "/messages/{id}"
        return {
            ("/queues", "get"): self.list_queues,
            (q + "/stats", "get"): self.queue_stats,
            (q + "/messages", "post"): self.enqueue,
            (q + "/messages:batch", "post"): self.enqueue_batch,
            (q + "/messages", "get"): self.list_messages,
            (m, "get"): self.get_message,
            (m, "delete"): self.delete_message,
            (q + "/claim", "post"): self.claim,
            (m + "/extend", "post"): self.extend,
            (m + "/succeed", "post"): self.succeed,
            (m + "/fail", "post"): self.fail,
            (m + "/replay", "post"): self.replay,
            (q + "/replay", "post"): self.replay_all,
            (q + "/purge", "post"): self.purge,
            ("/metrics", "get"): self.metrics,
            ("/healthz", "get"): self.healthz,
            ("/openapi.json", "get"): self.openapi,
            ("/", "get"): self.dashboard,
        }


Endpoint = Callable[[Request], Awaitable[Response]]


def routes(endpoints: Mapping[tuple[str, str], Endpoint]) -> list[BaseRoute]:
    """One Starlette route per path (so that a 405's ``Allow`` lists all its methods), and the
    dashboard's files under ``/static``."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for (path, method), endpoint in endpoints.items():
        by_path.setdefault(path, {})[method.upper()] = endpoint

    def dispatcher(methods: dict[str, Endpoint]) -> Endpoint:
        async def dispatch(request: Request) -> Response:
            return await methods["GET" if request.method == "HEAD" else request.method](request)

        return dispatch

    return [
        *(
            Route(path, dispatcher(methods), methods=list(methods))
            for path, methods in by_path.items()
        ),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


# ---------------------------------------------------------------------------------------------
# Middleware


def route_path(scope: Scope) -> str:
    """The request's path below the prefix the app is mounted at."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


class RawPathRouting:
    """Routes on the percent-encoded path, so that a queue name may hold ``/`` (``%2F``).

    ASGI servers decode ``path``; the still-encoded ``raw_path`` keeps ``a%2Fb`` one segment.
    Below the mount prefix, the path is replaced by the raw path's matching tail (the one whose
    decoding equals the decoded path); endpoints decode their segments with `segment`.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and raw:
            decoded = route_path(scope)
            parts = raw.decode("latin-1").split("?", 1)[0].split("/")
            for start in range(1, len(parts)):
                tail = "/" + "/".join(parts[start:])
                if unquote(tail) == decoded:
                    scope = {**scope, "path": scope.get("root_path", "") + tail}
                    break
        await self.app(scope, receive, send)


class BearerAuth:
    """Every route but `PUBLIC_PATHS` (and the dashboard's static files) requires
    ``Authorization: Bearer <token>``; compared in constant time."""

    def __init__(self, app: ASGIApp, token: Optional[str]) -> None:
        self.app = app
        self.token = None if token is None else token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.token is not None:
            path = route_path(scope)
            if path not in PUBLIC_PATHS and not path.startswith(PUBLIC_PREFIX):
                scheme, _, credentials = (
                    Headers(scope=scope).get("authorization", "").partition(" ")
                )
                given = credentials.strip().encode("latin-1")
                if scheme.lower() != "bearer" or not hmac.compare_digest(given, self.token):
                    detail = "this route requires the header `Authorization: Bearer <token>`"
                    await problem("unauthorized", detail)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------------------------
# The application


def app(
    db: deadletter.Database,
    *,
    token: Optional[str] = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    clock: Optional[Callable[[], datetime]] = None,
) -> Starlette:
    """The HTTP API over ``db``, as an ASGI application to serve or mount under any prefix.

    ``token``: when given (a non-empty str), every route but ``/healthz`` and the dashboard's
    files requires ``Authorization: Bearer <token>`` (401 problem otherwise).
    ``max_payload_bytes``: the limit ``db`` was opened with; bodies over `body_limit` of it are
    refused with 413 before they are parsed. ``clock``: the clock ``db`` was opened with, if not
    the system's (it dates the ``Retry-After`` of an empty claim). The caller keeps ``db`` open
    while the app serves and closes it afterwards. Raises `TypeError` naming an argument of the
    wrong type (``db`` not a `deadletter.Database`, ``token`` not a str, ``max_payload_bytes`` not
    an int, ``clock`` not callable) and `ValueError` for an empty token, one that begins or ends
    with whitespace, or a ``max_payload_bytes`` outside 1..=67108864.
    """
    return build(db, token=token, max_payload_bytes=max_payload_bytes, clock=clock)


MAX_PAYLOAD_BYTES_LIMIT = 64 << 20
"""The largest ``max_payload_bytes`` `deadletter.open` accepts."""


def check_arguments(db: Any, token: Any, max_payload_bytes: Any, clock: Any) -> None:
    """`app`'s arguments, checked when the app is made rather than failing at request time."""

    def kind(value: Any) -> str:
        return type(value).__name__

    if not isinstance(db, deadletter.Database):
        raise TypeError(f"db must be a deadletter.Database, got {kind(db)}")
    if token is not None and not isinstance(token, str):
        raise TypeError(f"token must be a str or None, got {kind(token)}")
    if token == "":
        raise ValueError("token must be a non-empty str (or None for no authentication)")
    if token is not None and token != token.strip():
        # A client's credential is read without surrounding whitespace: it could never match.
        raise ValueError("token must not begin or end with whitespace")
    if isinstance(max_payload_bytes, bool) or not isinstance(max_payload_bytes, int):
        raise TypeError(f"max_payload_bytes must be an int, got {kind(max_payload_bytes)}")
    if not 1 <= max_payload_bytes <= MAX_PAYLOAD_BYTES_LIMIT:
        raise ValueError(
            f"max_payload_bytes must be 1..={MAX_PAYLOAD_BYTES_LIMIT} (the limit db was opened "
            f"with), got {max_payload_bytes}"
        )
    if clock is not None and not callable(clock):
        raise TypeError(
            f"clock must be a zero-argument callable returning an aware datetime, or None; "
            f"got {kind(clock)}"
        )


def build(
    db: deadletter.Database,
    *,
    token: Optional[str],
    max_payload_bytes: int,
    clock: Optional[Callable[[], datetime]] = None,
    lifespan: Any = None,
) -> Starlette:
    """`app`, with an optional Starlette lifespan (``deadletter serve`` closes its database)."""
    check_arguments(db, token, max_payload_bytes, clock)
    return Starlette(
        routes=routes(Api(db, body_limit(max_payload_bytes), clock).endpoints()),
        middleware=[Middleware(RawPathRouting), Middleware(BearerAuth, token=token)],
        exception_handlers={
            deadletter.Error: error_problem,
            HTTPException: http_problem,
            Exception: internal_problem,
        },
        lifespan=lifespan,
    )
