"""What keeps web pages from driving the API through a browser (issue 23): the ``Host`` a request
is addressed to (DNS rebinding), the ``Origin`` it comes from (cross-site requests), and the media
type of its body (`json_body`: a ``text/plain`` body is a "simple" request that a page may send to
any origin without a CORS preflight).

A page on another origin can make the operator's browser send requests to a server on this
machine, and a page whose name the attacker re-points at 127.0.0.1 (DNS rebinding) can even read
the answers, as its own origin. Neither can send a bearer token it does not have, but a server
without a token has nothing else to go on. So, whatever the token:

- The ``Host`` header must name this server: ``localhost``, an IP address (a rebinding page is
  reached by a *name*, which its ``Host`` carries), or a name the operator allowed (``*`` allows
  any); 421 Misdirected Request otherwise (RFC 9110 15.5.20: the request went to a server that is
  not the authority for that name; the request itself is well-formed, hence not 400). A ``Host``
  that is not a valid host[:port], or is sent twice, is 400 (RFC 9112 3.2 asks for it).
- A request with an ``Origin`` header (browsers send one with every POST, and with every
  cross-origin request of a script) must come from the server's own origin (the scheme and the
  ``Host`` of the request) or one the operator allowed; 403 otherwise. Allowed origins also get
  CORS answers (Starlette's `CORSMiddleware`), so that a web application there can call the API.
- A request body must be ``application/json`` (`json_body`, where the endpoints read bodies): 415
  otherwise.

Written here rather than taken from Starlette's ``TrustedHostMiddleware``: that one answers 400 in
plain text and knows nothing of origins; these answer with the API's problems."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Optional
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ._problems import problem

__all__ = ["Guard", "check_hosts", "check_origins", "json_body"]

LOOPBACK_NAMES = frozenset({"localhost"})
"""Names every server answers to besides IP addresses: a browser resolves ``localhost`` itself
(RFC 6761), so no page can re-point it."""

DEFAULT_PORTS = {"http": 80, "https": 443}
LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
HOST_NAME = re.compile(rf"{LABEL}(?:\.{LABEL})*\.?")
"""A DNS name as a ``Host`` header carries it (case folded; ``_`` is tolerated, as browsers do)."""


def split_host(value: str) -> Optional[tuple[str, Optional[int]]]:
    """``(host, port)`` of a ``Host`` header or an ``--allowed-host``: the name case folded and
    without a final dot, an IPv6 address without its brackets; None when it is not host[:port]."""
    match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([0-9]{1,5}))?", value)
    if match is None:
        return None
    host, port = match.group(1).lower(), match.group(2)
    if host.startswith("["):
        try:
            host = str(ipaddress.IPv6Address(host[1:-1]))
        except ValueError:
            return None
    elif not (is_address(host) or HOST_NAME.fullmatch(host)):
        return None
    if port is not None and int(port) > 65535:
        return None
    return host.rstrip("."), None if port is None else int(port)


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def check_hosts(hosts: Iterable[str], what: str = "allowed_hosts") -> frozenset[str]:
    """The names of ``allowed_hosts``: ``*`` (any host), ``*.example.com`` (its subdomains) or a
    name or address without a port; `ValueError` naming the first one that is none of these
    (``what``: the argument's name in the message)."""
    names = set()
    for host in hosts:
        if not isinstance(host, str):
            raise TypeError(f"{what} must hold str, got {type(host).__name__}")
        if host == "*":
            names.add(host)
            continue
        wildcard = "*." if host.startswith("*.") else ""
        parsed = split_host(host[len(wildcard) :])
        if parsed is None or parsed[1] is not None:
            raise ValueError(
                f"{what}: {host!r} is not a host name or address without a port "
                "(example.com, *.example.com, 10.0.0.5, or * for any)"
            )
        names.add(wildcard + parsed[0])
    return frozenset(names)


def origin_of(value: str) -> Optional[str]:
    """An origin (``scheme://host[:port]``, http or https) in one spelling: case folded, the
    default port left out; None for anything else (``null``, a path, credentials)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in DEFAULT_PORTS or not host or parts.username is not None or parts.password:
        return None
    if parts.path or parts.query or parts.fragment or value.endswith(("?", "#")):
        return None
    if ":" in host:
        host = f"[{ipaddress.IPv6Address(host)}]" if is_address(host) else host
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def check_origins(origins: Iterable[str], what: str = "allow_origins") -> frozenset[str]:
    """The origins of ``allow_origins``, each ``http(s)://host[:port]``; `ValueError` naming the
    first that is not one (``what``: the argument's name in the message)."""
    result = set()
    for origin in origins:
        if not isinstance(origin, str):
            raise TypeError(f"{what} must hold str, got {type(origin).__name__}")
        normal = origin_of(origin)
        if normal is None:
            raise ValueError(
                f"{what}: {origin!r} is not an origin (scheme://host[:port], http or "
                "https, no path: https://app.example.com)"
            )
        result.add(normal)
    return frozenset(result)


class Guard:
    """The ``Host`` and ``Origin`` checks (see the module), before the token and the routes."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: frozenset[str], allow_origins: frozenset[str]
    ) -> None:
        self.app = app
        self.any_host = "*" in allowed_hosts
        self.hosts = allowed_hosts | LOOPBACK_NAMES
        self.suffixes = tuple(h[1:] for h in allowed_hosts if h.startswith("*."))
        self.origins = allow_origins

    def host_allowed(self, host: str) -> bool:
        return (
            self.any_host
            or host in self.hosts
            or is_address(host)
            or host.endswith(self.suffixes)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        parsed = split_host(hosts[0]) if len(hosts) == 1 else None
        if len(hosts) > 1 or (hosts and parsed is None):
            detail = "the Host header must be given once, as host[:port]"
            await problem("bad_request", detail)(scope, receive, send)
            return
        if parsed is not None and not self.host_allowed(parsed[0]):
            detail = (
                f"this server does not answer for the host {parsed[0]!r}: allow it with "
                "`deadletter serve --allowed-host NAME` (deadletter.http.app(..., "
                "allowed_hosts=[...])), or use an IP address or localhost"
            )
            await problem("misdirected_request", detail)(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None:
            own = origin_of(f"{scope.get('scheme', 'http')}://{hosts[0]}") if hosts else None
            given = origin_of(origin)
            if given is None or (given != own and given not in self.origins):
                detail = (
                    f"requests from the origin {origin!r} are refused (not this server's own "
                    "origin): allow it with `deadletter serve --allow-origin URL` "
                    "(deadletter.http.app(..., allow_origins=[...]))"
                )
                await problem("forbidden", detail)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def json_body(request: Request) -> None:
    """Raises the 415 of a request whose body is not declared ``application/json``: a
    ``Content-Type`` of another type, or a body without one (an empty body needs none)."""
    declared = request.headers.get("content-type")
    if declared is None:
        length = request.headers.get("content-length", "0")
        if length.strip() in ("", "0") and "transfer-encoding" not in request.headers:
            return
    elif declared.partition(";")[0].strip().lower() == "application/json":
        return
    raise HTTPException(415)
