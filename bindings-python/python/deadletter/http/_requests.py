"""Reading requests: the body (its size limit, JSON objects with known fields only), query
parameters, percent-encoded path segments, RFC 3339 instants and the ``Idempotency-Key`` header.
Only JSON and URL decoding: every rule on the values is the queue's, which gets them as sent.
The HTTP layer's own field errors (an unknown field or parameter, ...) are `note`-d on the
request, so that its 422 lists them with the queue's errors on the other fields (`noted`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional
from urllib.parse import unquote, unquote_to_bytes

from starlette.exceptions import HTTPException
from starlette.requests import Request

import deadletter

from .._json import parse_timestamp
from ._problems import invalid, validation_error

__all__ = [
    "IDEMPOTENCY_HEADER",
    "Fields",
    "body_limit",
    "boolean",
    "idempotency_header",
    "instants",
    "integer",
    "note",
    "noted",
    "parse_body",
    "query",
    "read",
    "renamed",
    "segment",
]


def body_limit(max_payload_bytes: int) -> int:
    """The largest request body accepted: any payload of ``max_payload_bytes`` fits, even with
    every byte escaped as ``\\u00XX`` (6 bytes), plus 64 KiB for the other fields."""
    return 6 * max_payload_bytes + (64 << 10)


INTEGER = re.compile(r"-?[0-9]+")
MAX_DIGITS = 20
"""More digits than any integer the API takes (ids and limits fit in 64 bits: 19 digits)."""
BEYOND = 1 << 64
"""Stands for a number too long to read: out of every range the queue checks."""


def integer(text: str) -> Any:
    """A decimal integer as an int; anything else unchanged, for the queue to reject. One of more
    than `MAX_DIGITS` digits (leading zeros aside) is not read: it is ``±BEYOND``, which the queue
    rejects as out of range (``int()`` of more than 4 300 digits raises ValueError: a 500 before,
    new-user finding F2)."""
    if not INTEGER.fullmatch(text):
        return text
    digits = text.lstrip("-").lstrip("0")
    value = BEYOND if len(digits) > MAX_DIGITS else int(digits or "0")
    return -value if text.startswith("-") else value


def boolean(text: str) -> Any:
    """``true`` or ``false`` as a bool; anything else unchanged, for the queue to reject."""
    return {"true": True, "false": False}.get(text, text)


BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
"""A ``%`` that does not start a percent-escape (RFC 3986 2.1): a literal one is ``%25``."""


def decoded(raw: bytes, name: str) -> str:
    """Percent-encoded UTF-8 as text; a validation error on ``name`` for a malformed escape or
    bytes that are not UTF-8 (`unquote` would keep ``%ZZ`` as it is and turn ``%FF`` into
    U+FFFD: the request would name another queue, or search for another text; finding F10)."""
    if BAD_ESCAPE.search(raw):
        raise invalid(name, "invalid", "has a % that starts no percent-escape (write % as %25)")
    try:
        return unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(name, "type", "is not percent-encoded UTF-8") from None


def segment(request: Request, name: str) -> str:
    """A percent-decoded path parameter (the app routes on the raw path: see `RawPathRouting`)."""
    return decoded(request.path_params[name].encode("latin-1"), name)


def query_items(request: Request) -> list[tuple[str, str]]:
    """The query string's parameters in order (form encoding: ``+`` is a space), decoded as
    `decoded` does: strictly, unlike Starlette's ``query_params``."""
    items = []
    for part in request.scope.get("query_string", b"").split(b"&"):
        if part:
            raw_name, _, raw_value = part.replace(b"+", b" ").partition(b"=")
            name = decoded(raw_name, "query")
            items.append((name, decoded(raw_value, name)))
    return items


def note(request: Request, errors: Iterable[deadletter.FieldError]) -> None:
    """Keeps field ``errors`` of the HTTP layer for the request's 422 (`noted`)."""
    request.state.rejected = [*noted(request), *errors]


def noted(request: Request) -> list[deadletter.FieldError]:
    """The field errors `note`-d on the request so far, in order: the request's 422 lists them
    first, then the queue's (tester T6's F1, session 13: an unknown field was a 422 alone, which
    hid the other rejected fields of the request)."""
    return list(getattr(request.state, "rejected", []))


def query(request: Request, fields: Mapping[str, Callable[[str], Any]]) -> Fields:
    """The query parameters named in ``fields``, each converted by its function; an unknown or
    repeated parameter is a field error, `note`-d (the request is then a 422). Every route checks
    its query string so (`routes`: with no ``fields`` for the routes that take none), so that a
    parameter is never dropped without a word (finding F1: ``POST .../delete?dry_run=true``
    deleted)."""
    errors: list[deadletter.FieldError] = []
    values = Fields()
    for name, value in query_items(request):
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
    note(request, errors)
    return values


def no_constants(name: str) -> object:
    """``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not a JSON value")


def json_integer(text: str) -> int:
    """A JSON number written without a fraction or an exponent, as `integer` reads it: one too
    long to read is ``±BEYOND`` (out of range), not "is not JSON: Exceeds the limit (4300
    digits)..." (finding F2)."""
    value = integer(text)
    assert isinstance(value, int)  # the JSON parser hands over -?[0-9]+ only
    return value


def json_number(text: str) -> Any:
    """A JSON number written with a fraction or an exponent: an int when its value is integral
    (JSON has one number type: ``10.0`` is the integer 10, as JSON Schema says), else a float.
    One too large for a double (``1e400``) is ``±BEYOND``: out of range, not infinity, which the
    queue would call "not a number" (finding F10)."""
    value = float(text)
    if math.isinf(value):
        return -BEYOND if value < 0 else BEYOND
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


BOOLEANS = ("dry_run",)
"""Body fields that take ``true`` or ``false`` only. Other optional fields may be ``null`` for
"omitted", whose default keeps every message (``retryable``: retried); ``dry_run``'s default acts,
so a null there is a client's mistake that must not run the action (``{"dry_run": null}`` did:
finding F10)."""


def parse_body(
    raw: bytes, fields: Iterable[str], *, required: bool
) -> tuple[Fields, list[deadletter.FieldError]]:
    """A request body: a JSON object's ``fields`` (none required here: a missing one is ``None``,
    which the queue rejects where it needs a value), and the field errors of the others (unknown)
    and of a ``null`` in `BOOLEANS`, which are left out. No body at all is ``{}`` unless
    ``required``; a body of white space only, or one that is not a JSON object, is a validation
    error at once."""
    if not raw.strip():
        if raw or required:
            what = "only white space" if raw else "empty"
            raise invalid("body", "type", f"must be a JSON object; the body is {what}")
        return Fields(), []
    try:
        data = json.loads(
            raw,
            parse_constant=no_constants,
            parse_float=json_number,
            parse_int=json_integer,
            object_pairs_hook=unique_keys,
        )
    except (ValueError, RecursionError) as err:
        raise invalid("body", "invalid", f"is not JSON: {err}") from None
    if not isinstance(data, Fields):  # objects are Fields (unique_keys)
        kind = JSON_KINDS.get(type(data), "null")
        raise invalid("body", "type", f"must be a JSON object, got {kind}")
    allowed = tuple(fields)
    expected = ", ".join(allowed) or "no fields"
    errors: list[deadletter.FieldError] = [
        {
            "field": key,
            "code": "unknown",
            "message": f"is not a field of this body (expected: {expected})",
        }
        for key in data
        if key not in allowed
    ]
    errors += [
        {
            "field": key,
            "code": "type",
            "message": "must be true or false, got null (omit it for its default)",
        }
        for key in BOOLEANS
        if key in allowed and key in data and data[key] is None
    ]
    known = Fields({key: value for key, value in data.items() if key in allowed})
    for error in errors:
        known.pop(error["field"], None)
    return known, errors


def instants(data: Fields, names: Iterable[str]) -> list[deadletter.FieldError]:
    """Replaces the RFC 3339 strings of ``data[name]`` by aware datetimes (`parse_timestamp`);
    other values stay as they are, for the queue to reject. A string that is not an instant in
    UTC (the pattern of the OpenAPI document) or names no real day is a field error, returned (its
    value becomes ``None``) so that the caller reports it with the queue's own errors."""
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
                data[name] = None
    return errors


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
