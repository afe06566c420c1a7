"""The components of the OpenAPI document of `deadletter.http` (``/openapi.json``): the schemas
of messages, statistics, request bodies and problems, the problem responses and the path
parameters, with the JSON Schema helpers that `_openapi`'s operations use too. Every status name
and limit in them is the core's (`deadletter._deadletter`), never a copy. One file (about 670 lines) so that the document's components read in one place;
the operations are `_openapi`'s."""

from __future__ import annotations

from decimal import Decimal
import re
from typing import Any

from .._deadletter import (
    BACKOFF_MULTIPLIER_RANGE,
    BULK_STATUSES,
    DEFAULT_MAX_RETRIES,
    DELAY_RANGE_MS,
    EXPIRES_IN_RANGE_MS,
    LEASE_EXPIRED,
    LEASE_RANGE_MS,
    MAX_BATCH,
    MAX_ERROR_BYTES,
    MAX_GROUP_CHARS,
    MAX_HISTORY,
    MAX_ID,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_QUEUE_CHARS,
    MAX_RETRIES_RANGE,
    ON_EXPIRY,
    RETRY_IN_RANGE_MS,
    TIME_RANGE_MS,
)
from .._deadletter import STATUSES as CORE_STATUSES
from .._json import INSTANT_PATTERN
from .._invisible import HIDDEN, IGNORABLE
from ._problems import PROBLEMS

__all__ = [
    "IDEMPOTENCY_HEADER_PATTERN",
    "PARAMETERS",
    "RESPONSES",
    "SCHEMAS",
    "STATUSES",
    "Json",
    "json_content",
    "ref",
]

Json = dict[str, Any]

STATUSES: list[str] = list(CORE_STATUSES)
"""The core's status names, in lifecycle order."""

PROBLEM_CODES: list[str] = list(PROBLEMS)
"""Every problem `code` the API answers (`_problems.PROBLEMS`)."""

def ref(kind: str, name: str) -> Json:
    """``{"$ref": "#/components/<kind>/<name>"}``."""
    return {"$ref": f"#/components/{kind}/{name}"}


def nullable(schema: Json) -> Json:
    """``schema`` or JSON ``null``: an omitted optional field may also be sent as null."""
    return {"anyOf": [schema, {"type": "null"}]}


NO_NUL = r"^[^\u0000]*$"
"""Strings the core refuses with NUL (U+0000) in them: queue names, idempotency keys, error texts
(not every store can hold it)."""

CONTROLS = r"\u0000-\u001f\u007f-\u009f" + HIDDEN
"""The characters enqueue refuses in a queue name: C0, DEL, C1 and the invisible ones
(`deadletter._invisible.HIDDEN`: format characters, other default-ignorable ones, line and
paragraph separators; a test checks them against the queue, character by character). Those past
U+FFFF are written as themselves: a JSON Schema pattern is read with ECMA-262's `u` flag, as
Python's `re` reads it."""
SPACES = r"\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\u2800"
"""Unicode's White_Space characters besides the controls, and U+2800 BRAILLE PATTERN BLANK, which
shows as a blank (session 10): a name made only of them is refused (spelled out, since ``\\s``
differs between regular expression dialects)."""
SELECTORS = "\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef"
"""The variation selectors: `IGNORABLE` but the joiners."""
TAGS = (
    "\U0001f3f4\U000e0067\U000e0062"
    "(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074|\U000e0077\U000e006c\U000e0073)"
    "\U000e007f"
)
"""The flags of England, Scotland and Wales (the black flag, the tags gbeng, gbsct or gbwls, the
end tag: Unicode's recommended emoji tag sequences): the only place a queue name allows tag
characters (any other tags show as the black flag alone)."""
HIGH = rf"(?:{TAGS}|[^{CONTROLS}{SPACES}{IGNORABLE}\u0000-\u052f])"
"""A character from U+0530 on (past ASCII, Latin, Greek and Cyrillic) that a name shows, or a
whole emoji tag sequence: what a joiner may join, and what a variation selector may vary."""
def _ranges(chars: list[int]) -> str:
    """A regular expression class body of the code points ``chars`` (ascending), as ranges."""
    body, start = "", 0
    for i, code in enumerate(chars):
        if i + 1 == len(chars) or chars[i + 1] != code + 1:
            body += f"\\u{chars[start]:04x}-\\u{code:04x}"
            start = i + 1
    return body


_NOT_LOW = re.compile(rf"[{CONTROLS}{SPACES}A-Za-z0-9#*\u00a9\u00ae\u0300-\u036f]")
LOW = f"[{_ranges([c for c in range(0x530) if not _NOT_LOW.match(chr(c))])}]"
"""A character below U+0530 that a name shows, but the ASCII letters, the keycaps' bases and the
emoji U+00A9 and U+00AE (their own steps in `SHOWN`) and the accents: no joiner or selector may
follow it. Spelled out as ranges: Hypothesis, with which schemathesis generates names, took 6 s
to set up the negated class of the same characters each time it met it."""
ACCENTS = "[\u0300-\u034e\u0350-\u036f]"
"""The combining accents that no new name has after an ASCII letter (``cafe\\u0301`` is
``caf\\u00e9`` in NFC: session 11)."""
JOINS = rf"(?:[\u200c\u200d]{HIGH}[{SELECTORS}]?)*"
"""Joiners, each before something `HIGH` with at most one variation selector (``ema\\u200dils``
reads as ``emails``)."""
SHOWN = (
    rf"(?:(?:{HIGH}[{SELECTORS}]?{JOINS}|[\u00a9\u00ae](?:[{SELECTORS}]{JOINS})?"
    rf"|[0-9#*](?:[{SELECTORS}]\u20e3[{SELECTORS}]?{JOINS})?|{LOW}){ACCENTS}*|[A-Za-z])"
)
"""One step of a name that enqueue accepts, but its spaces (the core's ``look_alike``, session
11), with the accents after it but after an ASCII letter: something `HIGH`, with at most one
variation selector and `JOINS`; U+00A9 or U+00AE, with a selector (emoji) that joiners may follow; a keycap's base, with a
selector only before U+20E3; another character below U+0530; an ASCII letter. No step starts
with a space, an accent, a selector or a joiner, so a name splits into steps one way only (no
backtracking blow-up), and no lookahead (Hypothesis, with which schemathesis generates names,
draws past one and filters what it refuses)."""
NEW_QUEUE = (
    rf"^(?!\.\.?$)(?:{SHOWN}|{ACCENTS}+)(?:(?:{SHOWN}| {ACCENTS}*)*(?:{SHOWN}| {ACCENTS}+))?$"
)
"""A queue name that enqueue accepts (where messages are put under it): no control or invisible
character but the joiners, the variation selectors and the tags of an emoji tag sequence (finding
N7, session 7), no white space at its start or end (session 9), no joiner or variation selector
that joins or varies nothing (sessions 10, 11: at an end, after ASCII, Latin, Greek or Cyrillic),
no white space but U+0020, no accent after an ASCII letter (session 11), not ``.`` or ``..`` (dot
segments, which clients remove from URLs: finding F3, refused by the core since 0bbc070): steps
of `SHOWN` and spaces, with accents after any of them, neither starting nor ending with a space.
Such a name always shows something: a selector or joiner follows something shown."""

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


LEASE = seconds(
    *LEASE_RANGE_MS,
    "Seconds (when omitted: the queue's stored lease, else the server's default lease).",
)

EXPIRES_IN = seconds(
    *EXPIRES_IN_RANGE_MS,
    "Seconds until the message expires: still pending then, it is never delivered (dead with "
    "the error `expired`, or discarded: the queue's `on_expiry`). When omitted: the queue's "
    "stored `expires_in`, else never.",
)

MAX_RETRIES: Json = {
    "type": "integer",
    "minimum": MAX_RETRIES_RANGE[0],
    "maximum": MAX_RETRIES_RANGE[1],
}

GROUP: Json = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_GROUP_CHARS,
    "pattern": NO_NUL,
}

SECONDS_AGE: Json = {
    "type": ["number", "null"],
    "minimum": 0,
    "description": "Seconds (with milliseconds), or null.",
}

IDEMPOTENCY_KEY: Json = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_IDEMPOTENCY_KEY_CHARS,
    "pattern": NO_NUL,
}

IDEMPOTENCY_HEADER_PATTERN = (
    r'^(?:"(?:[ !#-\[\]-~]|\\["\\])'
    + f"{{1,{MAX_IDEMPOTENCY_KEY_CHARS}}}"
    + r'"|[^"\u0000][^\u0000]'
    + f"{{0,{MAX_IDEMPOTENCY_KEY_CHARS - 1}}})$"
)
"""The ``Idempotency-Key`` header: an RFC 8941 sf-string (``"8e03978e-..."``, as the IETF draft
writes it) or, as most clients send it, the bare key; 1 to `MAX_IDEMPOTENCY_KEY_CHARS` characters
once unquoted."""


TEXT_FILTER: Json = {"type": "string", "minLength": 1, "pattern": NO_NUL}


def between(field: str, what: str) -> Json:
    """The two bounds of a filter on the instant ``field``: half-open, after <= t < before."""
    return {
        f"{field}_after": {**INSTANT, "description": f"Only messages {what} at or after this."},
        f"{field}_before": {**INSTANT, "description": f"Only messages {what} before this."},
    }


FILTER_PROPERTIES: Json = {
    "status": {"enum": STATUSES, "description": "Only messages in this status."},
    "delayed": {
        "type": "boolean",
        "description": "true: only pending messages waiting for a time (a delay or a backoff, "
        "`retry_after` later than now); false: only pending messages without (due, or waiting "
        "behind their group's head). With a status other than pending: 422.",
    },
    "payload_contains": {
        **TEXT_FILTER,
        "description": "Only payloads that contain this text (case-sensitive). No index answers "
        "it: a list examines at most the scan budget of messages per page.",
    },
    "error_contains": {
        **TEXT_FILTER,
        "description": "Only messages whose last error contains this text (case-sensitive).",
    },
    "group": {**GROUP, "description": "Only messages of this ordering group (exactly)."},
    "idempotency_key": {
        **IDEMPOTENCY_KEY,
        "description": "Only the message with this idempotency key (exactly).",
    },
    **between("created", "enqueued"),
    **between("updated", "last changed"),
    **between("dead", "that died"),
}
"""The filters of the list and of every bulk action (the core's `FilterArgs::NAMES`, in order: a
test checks it), all optional, combined with AND: a query parameter each on the list, a body field
each on the bulk actions."""


NOT_DELAYED: Json = {
    "type": "null",
    "description": "Not taken (a bool is a 422): only pending messages are delayed, and this "
    "action touches none.",
}


def described_nullable(schema: Json) -> Json:
    """`nullable` with ``schema``'s description on the outside, where readers look for it."""
    inner = {key: value for key, value in schema.items() if key != "description"}
    described = {"description": schema["description"]} if "description" in schema else {}
    return {**nullable(inner), **described}


def bulk_request(statuses: list[str], action: str, delayed: Json) -> Json:
    """The body of a bulk action: the filters (``status`` among ``statuses``, ``delayed`` as
    the action takes it), ``limit`` and ``dry_run``, each optional; all but ``dry_run`` nullable."""
    filters = {
        **FILTER_PROPERTIES,
        "status": {
            "enum": statuses,
            "description": f"The status to {action} from (only {' or '.join(statuses)}).",
        },
        "delayed": delayed,
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "The filters (all optional, combined with AND), limit and dry_run; an "
        "empty body selects every message the action applies to.",
        "properties": {
            **{name: described_nullable(schema) for name, schema in filters.items()},
            "limit": {
                **nullable({"type": "integer", "minimum": 1, "maximum": MAX_ID}),
                "description": "At most this many, lowest ids first (default: all).",
            },
            "dry_run": {
                "type": "boolean",
                "default": False,
                "description": "true: change nothing and answer the exact count the action "
                "would touch now.",
            },
        },
    }


def move_all_request() -> Json:
    """The body of ``move_all``: a bulk action's over pending and dead messages, and the target
    queue ``to_queue`` (required)."""
    statuses: list[str] = list(BULK_STATUSES["move_all"])
    request = bulk_request(statuses, "move", FILTER_PROPERTIES["delayed"])
    to_queue = {**TO_QUEUE, "description": "The queue they go to (not this queue)."}
    return {
        **request,
        "required": ["to_queue"],
        "description": "The target queue, the filters (all optional, combined with AND), limit "
        "and dry_run; with no filter it selects every pending and dead message.",
        "properties": {"to_queue": to_queue, **request["properties"]},
    }


def bulk_result(extra: Json | None = None) -> Json:
    """What a bulk action answers: the count it acted on (or would, on a dry run)."""
    properties: Json = {
        "count": {
            "type": "integer",
            "minimum": 0,
            "description": "How many messages the action touched, or would touch on a dry run.",
        },
        "dry_run": {"type": "boolean", "description": "Whether this was a dry run."},
        **(extra or {}),
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


def json_content(schema: Json) -> Json:
    return {"application/json": {"schema": schema}}


def problem_response(description: str, headers: Json | None = None) -> Json:
    """An error response: the one `Problem` schema under ``application/problem+json`` (a schema
    per code, as ``allOf`` of `Problem` and a ``const`` code, made openapi-python-client drop
    every error response: it cannot merge ``str`` with a literal)."""
    response: Json = {
        "description": description,
        "content": {"application/problem+json": {"schema": ref("schemas", "Problem")}},
    }
    if headers:
        response["headers"] = headers
    return response


MESSAGE_PROPERTIES: Json = {
    "id": {"type": "integer", "minimum": 1},
    "queue": {"type": "string", "minLength": 1, "maxLength": MAX_QUEUE_CHARS, "pattern": NO_NUL},
    "payload": {"type": "string"},
    "status": {"enum": STATUSES},
    "retry_count": {
        "type": "integer",
        "minimum": 0,
        "description": "Failed attempts since enqueue or the last replay.",
    },
    "max_retries": MAX_RETRIES,
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
        "maxItems": MAX_HISTORY,
        "description": "The failure history, oldest first, at most the last "
        f"{MAX_HISTORY} attempts.",
        "items": {"$ref": "#/components/schemas/FailedAttempt"},
    },
    "errors_dropped": {
        "type": "integer",
        "minimum": 0,
        "description": "How many older entries of the history were dropped.",
    },
    "replay_count": {"type": "integer", "minimum": 0},
    "replayed_at": nullable(TIMESTAMP),
    "group": {
        **nullable(GROUP),
        "description": "Its ordering group: a group's messages are delivered one at a time, in "
        "the order they entered it.",
    },
    "expires_at": {
        **nullable(TIMESTAMP),
        "description": "When it expires: still pending then, it is never delivered.",
    },
    "moved_from": {
        **nullable(
            {"type": "string", "minLength": 1, "maxLength": MAX_QUEUE_CHARS, "pattern": NO_NUL}
        ),
        "description": "The queue it was last moved from (`move`, `moveAll`); null if never "
        "moved.",
    },
}

TO_QUEUE: Json = {**MESSAGE_PROPERTIES["queue"], "pattern": NEW_QUEUE}
"""The target of a move: a name messages can be put under (the enqueue's rules, `new_queue`)."""

COUNT_NOTES = {
    "pending": "Due, in backoff or delayed, or waiting behind its group's head.",
    "processing": "Expired leases included.",
}
"""What two of the statistics' counts per status include."""

PART_OF = "x-part-of-status"
"""An OpenAPI extension on a count of `QueueStats`: the status whose count includes it (the
dashboard marks expired leases and delayed messages in that status's tab without naming it)."""

STATS_PROPERTIES: Json = {
    "queue": MESSAGE_PROPERTIES["queue"],
    **{
        status: {
            "type": "integer",
            "minimum": 0,
            **({"description": COUNT_NOTES[status]} if status in COUNT_NOTES else {}),
        }
        for status in STATUSES
    },
    "expired": {
        "type": "integer",
        "minimum": 0,
        "description": "Processing messages whose lease has run out (not reaped yet).",
        PART_OF: "processing",
    },
    "delayed": {
        "type": "integer",
        "minimum": 0,
        "description": "Pending, not due yet.",
        PART_OF: "pending",
    },
    "next_due_at": {
        **nullable(TIMESTAMP),
        "description": "When the next delayed message becomes due.",
    },
    "oldest_due_age": {
        **SECONDS_AGE,
        "description": (
            "Seconds the due pending message the next claim takes (the first in enqueue order) "
            "has waited since it was enqueued."
        ),
    },
    "oldest_dead_age": {
        **SECONDS_AGE,
        "description": "Seconds since the oldest dead message died.",
    },
    "paused": {"type": "boolean", "description": "A paused queue claims nothing."},
    "expired_dead": {
        "type": "integer",
        "minimum": 0,
        "description": "Messages that expired while pending and became dead (ever).",
    },
    "expired_discarded": {
        "type": "integer",
        "minimum": 0,
        "description": "Messages that expired while pending and were deleted (ever).",
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
    "max_retries": {
        **nullable(MAX_RETRIES),
        "description": "Attempts before it is dead (when omitted: the queue's stored "
        f"`max_retries`, else {DEFAULT_MAX_RETRIES}).",
    },
    "idempotency_key": {
        **nullable(IDEMPOTENCY_KEY),
        "description": "Or the Idempotency-Key header (not both).",
    },
    "delay": nullable(
        seconds(*DELAY_RANGE_MS, "Seconds before the message may be claimed (default 0).")
    ),
    "group": {
        **nullable(GROUP),
        "description": "Its ordering group: a group's messages are delivered one at a time, in "
        "the order they entered it (a claim takes only a group's head).",
    },
    "expires_in": nullable(EXPIRES_IN),
}

BACKOFF_PROPERTIES: Json = {
    "initial": seconds(*DELAY_RANGE_MS, "The delay after the first failure (default 2)."),
    "multiplier": {
        "type": "number",
        "minimum": BACKOFF_MULTIPLIER_RANGE[0],
        "maximum": BACKOFF_MULTIPLIER_RANGE[1],
        "description": "The growth factor per further failure (default 2).",
    },
    "cap": seconds(*DELAY_RANGE_MS, "The longest delay (default 3600)."),
    "jitter": {
        "enum": ["full", "equal", None],
        "description": "full: uniform in [0, delay); equal: in [delay/2, delay); null: none.",
    },
}

SETTINGS_NOTES: Json = {
    "backoff": "The policy of failures and expired leases; null: the default "
    "(2 s doubling to 3600 s), unless a handle was given its own in code, which wins.",
    "max_retries": f"For enqueues that give none; null: {DEFAULT_MAX_RETRIES}.",
    "lease": "Seconds, for claims and extends that give none; null: the server's default lease.",
    "expires_in": "Seconds, for enqueues and replays that give none; null: never.",
    "on_expiry": "What expiry does to a pending message: dead (with the error `expired`), or "
    "discard (deleted); null in a request: dead.",
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
        f"One failed attempt; an expired lease is the error `{LEASE_EXPIRED}`.",
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
                "description": "The after_id of the next page; null when the queue holds no "
                "further match. The last id of a full page, or the last id examined when the "
                "scan budget ran out first (the page is then short, maybe empty).",
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
                "maxItems": MAX_BATCH,
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
                "description": "Kept as the last error and in the history (cut past "
                f"{MAX_ERROR_BYTES // 1024} KiB).",
            },
            "lease_token": {"type": ["string", "null"]},
            "retryable": nullable({"type": "boolean", "default": True}),
            "retry_in": nullable(
                seconds(
                    *RETRY_IN_RANGE_MS,
                    "Seconds before the next attempt, instead of the backoff's delay (the "
                    "attempt still counts).",
                )
            ),
        },
    },
    "ReplayRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"expires_in": nullable(EXPIRES_IN)},
    },
    "Backoff": closed_object(
        {
            "initial": {"type": "number", "minimum": 0, "description": "Seconds."},
            "multiplier": {"type": "number"},
            "cap": {"type": "number", "minimum": 0, "description": "Seconds."},
            "jitter": {"enum": ["full", "equal", None]},
        },
        "A backoff policy: after the n-th failure, min(initial * multiplier^(n-1), cap) "
        "seconds, spread by jitter.",
    ),
    "QueueSettings": closed_object(
        {
            "backoff": {
                "anyOf": [ref("schemas", "Backoff"), {"type": "null"}],
                "description": SETTINGS_NOTES["backoff"],
            },
            "max_retries": {**nullable(MAX_RETRIES), "description": SETTINGS_NOTES["max_retries"]},
            "lease": {
                "type": ["number", "null"],
                "minimum": 0,
                "description": SETTINGS_NOTES["lease"],
            },
            "expires_in": {
                "type": ["number", "null"],
                "minimum": 0,
                "description": SETTINGS_NOTES["expires_in"],
            },
            "on_expiry": {"enum": list(ON_EXPIRY), "description": SETTINGS_NOTES["on_expiry"]},
            "paused": {"type": "boolean", "description": "A paused queue claims nothing."},
        },
        "The settings stored with a queue, for every client; null: unset (the fallback applies).",
    ),
    "SettingsRequest": {
        "type": "object",
        "additionalProperties": False,
        "description": "All five settings: an omitted or null one is unset. Pausing is separate.",
        "properties": {
            "backoff": {
                "anyOf": [
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            name: nullable(schema) for name, schema in BACKOFF_PROPERTIES.items()
                        },
                    },
                    {"type": "null"},
                ],
                "description": SETTINGS_NOTES["backoff"] + " An omitted field takes its default.",
            },
            "max_retries": {**nullable(MAX_RETRIES), "description": SETTINGS_NOTES["max_retries"]},
            "lease": {**nullable(LEASE), "description": SETTINGS_NOTES["lease"]},
            "expires_in": {**nullable(EXPIRES_IN), "description": SETTINGS_NOTES["expires_in"]},
            "on_expiry": {
                **nullable({"enum": list(ON_EXPIRY)}),
                "description": SETTINGS_NOTES["on_expiry"],
            },
        },
    },
    "ReplayAllRequest": bulk_request(["dead"], "replay", NOT_DELAYED),
    # The finished statuses, which delete_all takes (the core exports no list of them).
    "DeleteAllRequest": bulk_request(["succeeded", "dead"], "delete", NOT_DELAYED),
    "RetryNowAllRequest": bulk_request(
        ["pending"],
        "retry now",
        {
            "const": True,
            "description": "Always true here (the action makes delayed messages due); false "
            "is a 422.",
        },
    ),
    "MoveRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["to_queue"],
        "properties": {
            "to_queue": {**TO_QUEUE, "description": "The queue it goes to (not this queue)."}
        },
    },
    "MoveAllRequest": move_all_request(),
    "BulkResult": bulk_result(),
    "ReplayAllResult": bulk_result(
        {
            "replayed": {
                "type": "integer",
                "minimum": 0,
                "description": "How many were replayed: `count`, or 0 on a dry run (the answer "
                "of this route before dry runs, kept for its clients).",
            }
        }
    ),
    "PurgeRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["status", "older_than"],
        "properties": {
            # The finished statuses, which the core's purge takes (it exports no list of them).
            "status": {"enum": ["succeeded", "dead"]},
            "older_than": seconds(
                0,
                TIME_RANGE_MS[1] - TIME_RANGE_MS[0],  # the core's span of instants, 0001 to 9999
                "Seconds since the message last changed (updated_at).",
            ),
        },
    },
    "Empty": {"type": "object", "additionalProperties": False},
    "Problem": {
        "type": "object",
        "description": "RFC 9457 problem details with the stable error `code`; the members of "
        "some codes: `errors` (validation_failed), `queue` and `id` (not_found), `id`, `reason` "
        "and `message_status` (conflict). One schema for every error response, so that "
        "generated clients type them all.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "code": {"enum": PROBLEM_CODES},
            "errors": {
                "type": "array",
                "minItems": 1,
                "items": ref("schemas", "FieldError"),
                "description": "validation_failed: every rejected field.",
            },
            "queue": {"type": "string", "description": "not_found: the queue."},
            "id": {"type": "integer", "description": "not_found, conflict: the message's id."},
            "reason": {
                "enum": ["wrong_status", "lease_lost", "key_taken"],
                "description": "conflict: the message is in another status, its lease is "
                "another worker's, or (move) a message of the target queue carries its "
                "idempotency key.",
            },
            "message_status": {
                "enum": [*STATUSES, None],
                "description": "conflict: the message's status (`processing` for `lease_lost`; "
                "null for `key_taken`).",
            },
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
        "`unauthorized`: no `Authorization: Bearer <token>` header with the server's token.",
        {"WWW-Authenticate": {"schema": {"type": "string"}}},
    ),
    "NotFound": problem_response(
        "`not_found`: no message with this id in this queue (`queue` and `id` are given), no "
        "such queue where a route would store one without `create=true` (pause, PUT settings: "
        "`queue` is given, and `detail` names the queues there are, closest first), or no such "
        "route."
    ),
    "Conflict": problem_response(
        "`conflict`: the message's status does not allow the operation, the lease token is "
        "not the one of its current lease (that lease expired and the message was claimed "
        "again, or the token was never this message's), or (move) a message of the target queue "
        "carries its idempotency key (`key_taken`); `id`, `reason` and `message_status` are "
        "given."
    ),
    "BadRequest": problem_response(
        "`bad_request`: the Host header is sent more than once, or is not host[:port]."
    ),
    "Forbidden": problem_response(
        "`forbidden`: the request's Origin is neither this server's own origin nor one it allows "
        "(`deadletter serve --allow-origin`): a page of another site cannot drive the API."
    ),
    "MisdirectedRequest": problem_response(
        "`misdirected_request`: the Host header names a host this server does not answer for: "
        "localhost, IP addresses and the names it allows (`deadletter serve --allowed-host`); "
        "against DNS rebinding."
    ),
    "UnsupportedMediaType": problem_response(
        "`unsupported_media_type`: the request has a body (or a Content-Type) that is not "
        "`application/json`."
    ),
    "TooLarge": problem_response(
        "`too_large`: the body is larger than 6 x the payload limit + 64 KiB (refused before "
        "parsing)."
    ),
    "ValidationFailed": problem_response(
        "`validation_failed`: rejected input; `errors` lists every rejected field, path segment "
        "or query parameter: the HTTP layer's (a header, unknown parameters and fields, ...) "
        "first, then the queue's."
    ),
    "StoreUnavailable": problem_response(
        "`store`: the store failed or stayed locked; retry after Retry-After seconds.",
        {"Retry-After": {"schema": {"type": "string"}}},
    ),
}

PARAMETERS: Json = {
    "queue": {
        "name": "queue",
        "in": "path",
        "required": True,
        "description": "The queue name, percent-encoded (a/b is a%2Fb): "
        f"1..={MAX_QUEUE_CHARS} characters, "
        "without NUL.",
        "schema": MESSAGE_PROPERTIES["queue"],
    },
    "new_queue": {
        "name": "queue",
        "in": "path",
        "required": True,
        "description": "The queue name, percent-encoded (a/b is a%2Fb): "
        f"1..={MAX_QUEUE_CHARS} characters, without control characters (C0, DEL, C1), format "
        "characters (Unicode's Cf: bidirectional controls, zero-width spaces, ...), other "
        "default-ignorable ones (Hangul fillers, ...) or line and paragraph separators, but the "
        "joiners U+200C and U+200D, the variation selectors and the tags of the flags of "
        "England, Scotland and Wales, not only white space and invisible characters, not "
        "starting or ending with white space, with no white space but U+0020, no joiner or "
        "variation selector that joins or varies nothing (at an end, next to ASCII, Latin, Greek "
        "or Cyrillic, next to another one: ema\\u200dils reads as emails), no accent of "
        "U+0300..U+036F after an ASCII letter (caf\\u00e9, not cafe\\u0301), not . or ..: the "
        "names messages can be put under, and those pause and storing settings accept for a queue "
        "that does not exist yet.",
        "schema": {**MESSAGE_PROPERTIES["queue"], "pattern": NEW_QUEUE},
    },
    "create": {
        "name": "create",
        "in": "query",
        "required": False,
        "description": "`true`: store the queue even when it holds no message and has no stored "
        "settings (a new queue). Without it such a name is a 404 `not_found` and nothing is "
        "stored, so that a mistyped name does not pause or configure a new queue while the "
        "real one runs on.",
        "schema": {"type": "boolean", "default": False},
    },
    "id": {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
    },
}

