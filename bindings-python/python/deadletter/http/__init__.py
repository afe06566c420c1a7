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
GET    ``/queues/{queue}/messages``                 list, filtered: ``status``, ``delayed``,
                                                    ``payload_contains``, ``error_contains``,
                                                    ``group``, ``idempotency_key``,
                                                    ``created_after``/``_before`` (also
                                                    ``updated_``, ``dead_``), ``limit``,
                                                    ``after_id``; ``next_after_id`` to go on
GET    ``/queues/{queue}/messages/{id}``            the message
DELETE ``/queues/{queue}/messages/{id}``            delete a succeeded or dead message
POST   ``/queues/{queue}/claim``                    200 the leased message, 204 when none is due
                                                    (``Retry-After`` when one is delayed and the
                                                    queue is not paused)
POST   ``/queues/{queue}/messages/{id}/extend``     heartbeat: ``lease_token``, ``lease``
POST   ``/queues/{queue}/messages/{id}/succeed``
POST   ``/queues/{queue}/messages/{id}/fail``
POST   ``/queues/{queue}/messages/{id}/replay``
POST   ``/queues/{queue}/messages/{id}/retry-now``  ``retry_now``: due now, the message
POST   ``/queues/{queue}/messages/{id}/move``       ``move``: ``{"to_queue"}``, the message
POST   ``/queues/{queue}/replay``                   ``replay_all``: the list's filters, ``limit``,
                                                    ``dry_run``: ``{"count", "dry_run",
                                                    "replayed"}``
POST   ``/queues/{queue}/delete``                   ``delete_all``: the same body, ``{"count",
                                                    "dry_run"}``
POST   ``/queues/{queue}/retry-now``                ``retry_now_all``: the same
POST   ``/queues/{queue}/move``                     ``move_all``: ``to_queue`` and the same
POST   ``/queues/{queue}/purge``                    ``purge``: ``{"purged": n}``
POST   ``/queues/{queue}/reap``                     ``reap``: the expired leases and expiries now,
                                                    ``{"reaped": n}``
GET    ``/queues/{queue}/settings``                 the settings stored with the queue
PUT    ``/queues/{queue}/settings``                 ``set_settings``: the settings; a queue that
                                                    holds no message and no settings is a 404
                                                    unless ``?create=true`` (a typo is no queue)
POST   ``/queues/{queue}/pause``                    ``pause``: the settings; the same 404 unless
                                                    ``?create=true``
POST   ``/queues/{queue}/resume``                   ``resume``: the settings
GET    ``/metrics``                                 Prometheus metrics (`_metrics`)
GET    ``/healthz``                                 200 while the database answers (no token)
GET    ``/openapi.json``                            the OpenAPI 3.1 document
GET    ``/``                                        the dashboard (``static/``; no token: no data)
====== ============================================ ============================================

A message is ``Message.to_dict()`` with timestamps as RFC 3339 UTC strings with milliseconds;
statistics are ``QueueStats.to_dict()`` with ages in seconds. Instants in requests (the
filters ``created_after`` ... ``dead_before``) are RFC 3339 in UTC (``Z`` or ``+00:00``); durations are
seconds. Queue names are percent-decoded path segments (``a%2Fb`` is the queue ``a/b``).

Errors are RFC 9457 ``application/problem+json`` objects with ``type``, ``title``, ``status``,
``detail`` and ``code``, mapped once, in `PROBLEMS`, from the error codes: ``validation_failed``
422 (with ``errors``: ``field``, ``code``, ``message``; also for a body that is not a JSON object
or has unknown fields, field code ``unknown``), ``not_found`` 404, ``conflict`` 409, ``store`` 503
(``Retry-After``), and the HTTP layer's own ``unauthorized`` 401, ``too_large`` 413 (a body over
``6 * max_payload_bytes + 64 KiB``, refused before it is parsed: enough for any accepted payload
in its most escaped JSON form), ``method_not_allowed`` 405, ``internal`` 500, and the refusals of
`_guard`, token or not: ``unsupported_media_type`` 415 (a body not sent as
``application/json``), ``forbidden`` 403 (an ``Origin`` that is neither the server's own nor an
allowed one), ``misdirected_request`` 421 (a ``Host`` that is neither ``localhost``, an IP
address nor an allowed name: DNS rebinding) and ``bad_request`` 400 (a malformed ``Host``).

The package, one role a module: `_app` (the factory `app`, its middleware), `_guard` (what keeps
web pages from driving the API through a browser: ``Host``, ``Origin``, the body's media type),
`_routes` (the endpoints), `_requests` (reading bodies, query parameters, path segments, headers),
`_problems` (`PROBLEMS`: errors to responses), `_openapi` and `_schemas` (the OpenAPI document),
`_metrics`, `_serve` (``deadletter serve`` under uvicorn) and ``static/`` (the dashboard). Status
names and limits come from the core through the native module; the dashboard reads them from
``/openapi.json``.
"""

from __future__ import annotations

try:  # the server extra, named in the error rather than a bare ModuleNotFoundError
    import prometheus_client  # noqa: F401
    import starlette  # noqa: F401
except ModuleNotFoundError as _missing:  # (private names: not the module's API)
    _package = (_missing.name or "a package").partition(".")[0]
    raise ImportError(
        f"deadletter.http needs the server extra ({_package} is missing): "
        "pip install 'deadletter[server]'",
        name=_package,
    ) from _missing

from ._app import app
from ._problems import PROBLEMS, Problem
from ._requests import body_limit

# Importable from here as before the package was split, though not its API (the tests use them).
from ._app import build as build
from ._openapi import document as document
from ._routes import Api as Api
from ._routes import path_segment as path_segment

__all__ = ["PROBLEMS", "Problem", "app", "body_limit"]
