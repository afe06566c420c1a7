"""The application: `app` (and `build`, which ``deadletter serve`` calls with a lifespan) checks its
arguments and assembles the routes, the middleware (routing on the raw path, the ``Host`` and
``Origin`` checks of `_guard`, CORS for the allowed origins, bearer tokens) and the exception
handlers that answer with problems."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Callable, Optional
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

import deadletter

from .._deadletter import DEFAULT_MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES_RANGE
from ._guard import Guard, check_hosts, check_origins
from ._problems import error_problem, http_problem, internal_problem, problem
from ._requests import body_limit
from ._routes import Api, routes

__all__ = ["BearerAuth", "RawPathRouting", "app", "build", "token_problem"]

PUBLIC_PATHS = ("/healthz", "/")
PUBLIC_PREFIX = "/static/"


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
    allowed_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> Starlette:
    """The HTTP API over ``db``, as an ASGI application to serve or mount under any prefix.

    ``token``: when given (a non-empty str), every route but ``/healthz`` and the dashboard's
    files requires ``Authorization: Bearer <token>`` (401 problem otherwise). Without one, the
    API is open to every program that can reach it, every local user of the machine included.
    ``allowed_hosts``: the names, besides ``localhost`` and IP addresses, that requests may be
    addressed to (their ``Host`` header): ``queue.example.com``, ``*.example.com`` for its
    subdomains, ``*`` for any name (when the application it is mounted in checks ``Host``
    itself); 421 problem otherwise (a page re-pointed at this server by DNS rebinding carries its
    own name). ``allow_origins``: origins (``https://app.example.com``) besides the server's own
    whose requests are served, with CORS headers; a request with any other ``Origin`` is refused
    with 403. Request bodies must be ``Content-Type: application/json`` (415 otherwise). These
    checks apply with a token too (`_guard` says why).
    ``max_payload_bytes``: the limit ``db`` was opened with; bodies over `body_limit` of it are
    refused with 413 before they are parsed. ``clock``: the clock ``db`` was opened with, if not
    the system's (it dates the ``Retry-After`` of an empty claim). The caller keeps ``db`` open
    while the app serves and closes it afterwards. Raises `TypeError` naming an argument of the
    wrong type (``db`` not a `deadletter.Database`, ``token`` not a str, ``max_payload_bytes`` not
    an int, ``clock`` not callable, ``allowed_hosts`` or ``allow_origins`` not a list of str)
    and `ValueError` for an empty token, one that begins or ends with white space, a
    ``max_payload_bytes`` outside 1..=67108864, a host that is not a name or an address without
    a port, or an origin that is not ``http(s)://host[:port]``.
    """
    return build(
        db,
        token=token,
        max_payload_bytes=max_payload_bytes,
        clock=clock,
        allowed_hosts=allowed_hosts,
        allow_origins=allow_origins,
    )


def token_problem(token: str) -> Optional[str]:
    """Why no client could send ``token`` (the end of a sentence about it), or None. A client's
    credential is read without surrounding white space; a header carries printable ASCII only
    (RFC 9110 5.5: other bytes are obsolete), and a browser's ``fetch()`` refuses any character
    past U+00FF, so the console said "The server is not answering" (finding F12)."""
    if token != token.strip():
        return "begins or ends with white space: no client could send it"
    for char in token:
        if not " " <= char <= "~":
            return (
                f"holds {char!r}: a token is printable ASCII (letters, digits, punctuation, "
                "inner spaces), the only text an HTTP header carries reliably"
            )
    return None


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
    problem = None if token is None else token_problem(token)
    if problem is not None:
        raise ValueError(f"token {problem}")
    if isinstance(max_payload_bytes, bool) or not isinstance(max_payload_bytes, int):
        raise TypeError(f"max_payload_bytes must be an int, got {kind(max_payload_bytes)}")
    low, high = MAX_PAYLOAD_BYTES_RANGE  # the range deadletter.open accepts
    if not low <= max_payload_bytes <= high:
        raise ValueError(
            f"max_payload_bytes must be {low}..={high} (the limit db was opened "
            f"with), got {max_payload_bytes}"
        )
    if clock is not None and not callable(clock):
        raise TypeError(
            f"clock must be a zero-argument callable returning an aware datetime, or None; "
            f"got {kind(clock)}"
        )


def listed(name: str, values: Any) -> list[str]:
    """``values`` as a list, when it is a list, tuple or set (a str is not: it would be read
    letter by letter)."""
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise TypeError(f"{name} must be a list of str, got {type(values).__name__}")
    return list(values)


def build(
    db: deadletter.Database,
    *,
    token: Optional[str],
    max_payload_bytes: int,
    clock: Optional[Callable[[], datetime]] = None,
    allowed_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    lifespan: Any = None,
) -> Starlette:
    """`app`, with an optional Starlette lifespan (``deadletter serve`` closes its database)."""
    check_arguments(db, token, max_payload_bytes, clock)
    hosts = check_hosts(listed("allowed_hosts", allowed_hosts))
    origins = check_origins(listed("allow_origins", allow_origins))
    api = Api(db, body_limit(max_payload_bytes), clock)
    cors = [
        Middleware(
            CORSMiddleware,
            allow_origins=sorted(origins),
            # Every method of the API (PUT .../settings was refused: finding F4).
            allow_methods=sorted({method.upper() for _, method in api.endpoints()}),
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
            expose_headers=["Location", "Content-Location", "Retry-After"],
        )
    ]
    return Starlette(
        routes=routes(api.endpoints()),
        middleware=[
            Middleware(RawPathRouting),
            Middleware(Guard, allowed_hosts=hosts, allow_origins=origins),
            *(cors if origins else []),
            Middleware(BearerAuth, token=token),
        ],
        exception_handlers={
            deadletter.Error: error_problem,
            HTTPException: http_problem,
            Exception: internal_problem,
        },
        lifespan=lifespan,
    )
