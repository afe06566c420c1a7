"""The endpoints (`Api`: one method a route, each a thin call of the public API) and the Starlette
routes they make, with the dashboard's files under ``/static``."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional, TypeVar
from urllib.parse import quote

from prometheus_client.exposition import choose_encoder
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

import deadletter

from .._json import jsonable
from .._deadletter import check_new_queue
from .._queues import missing, unknown
from . import _metrics
from ._openapi import document
from ._schemas import FILTER_PROPERTIES
from ._guard import json_body
from ._problems import NoQueue, invalid, validation_error
from ._requests import (
    IDEMPOTENCY_HEADER,
    Fields,
    boolean,
    idempotency_header,
    instants,
    integer,
    note,
    noted,
    parse_body,
    query,
    read,
    renamed,
    segment,
)

__all__ = ["Api", "Endpoint", "path_segment", "routes"]

T = TypeVar("T")

STATIC = Path(__file__).with_name("static")

FILTERS = tuple(FILTER_PROPERTIES)
"""The filters of the list and the bulk actions (query parameters, body fields)."""
INSTANT_FILTERS = tuple(name for name in FILTERS if name.endswith(("_after", "_before")))
"""The filters on instants, RFC 3339 strings in requests."""
LIST_PARAMETERS: dict[str, Callable[[str], Any]] = {
    **{name: str for name in FILTERS},
    "delayed": boolean,
    "limit": integer,
    "after_id": integer,
}
BULK_FIELDS = (*FILTERS, "limit", "dry_run")
TAKE_IDEMPOTENCY_KEY = frozenset(
    {("/queues/{queue}/messages", "post"), ("/queues/{queue}/messages:batch", "post")}
)
"""The POST routes whose ``Idempotency-Key`` header is not refused as a whole (`routes`): the
enqueue, which takes it, and the batch, which refuses it with its own message."""
CREATING = frozenset({("/queues/{queue}/pause", "post"), ("/queues/{queue}/settings", "put")})
"""The routes that store a queue, and so take the query parameter ``create`` (`Api.existing`)."""
TAKE_QUERY = frozenset({("/queues/{queue}/messages", "get"), ("/", "get"), *CREATING})
"""The routes whose query string is not refused as a whole (`routes`): the list, which reads its
own parameters (`LIST_PARAMETERS`), `CREATING`'s, which read ``create``, and the console's page,
whose links may carry a tracker's or a cache-buster's parameters and which changes nothing."""
FRAME_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'"}
"""The console is never shown in another site's frame, where a click would be a same-origin
request that passes the ``Origin`` check (clickjacking; finding F10)."""


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


def rejected(
    call: Callable[[deadletter.Queue], object], name: str, *, queue: bool = False
) -> list[deadletter.FieldError]:
    """The fields that ``call`` rejects (``queue`` only if asked), called on a queue named
    ``name`` in a private in-memory database (the checks are the core's, whatever the store): the
    faults of a request found without storing or changing anything, for a queue that is not there
    or besides the HTTP layer's own faults. A queue that exists keeps a name that no new queue
    takes (`Api.existing`), which a pause or a settings write there would reject: hence
    ``queue``. The arguments are checked before anything is read, so the scratch database's
    other errors (no message with this id there, ...) mean none was rejected."""
    with deadletter.open() as scratch:
        try:
            call(scratch.queue(name))
        except deadletter.ValidationError as error:
            return [e for e in error.errors if queue or e["field"] != "queue"]
        except deadletter.Error:  # past the checks: no such message there, ...
            pass
    return []


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
        """The JSON object of the request body (`parse_body`: its faults are `note`-d); 415
        unless it is declared ``application/json`` (`json_body`), 413 past the size limit."""
        json_body(request)
        data, errors = parse_body(await read(request, self.body_limit), fields, required=required)
        note(request, errors)
        return data

    async def act(
        self,
        request: Request,
        queue: deadletter.Queue,
        call: Callable[[deadletter.Queue], T],
        *,
        check_queue: bool = True,
    ) -> T:
        """``call(queue)`` in a thread, unless the HTTP layer `note`-d faults of the request:
        then a 422 with those and the queue's errors on the other fields (`rejected`: the call
        made on a scratch queue, so nothing changes). Every endpoint that changes something acts
        through here. ``check_queue``: whether the scratch queue's name errors count (not for a
        queue that exists, see `rejected`)."""
        errors = noted(request)
        if errors:
            errors += await run_in_threadpool(rejected, call, queue.name, queue=check_queue)
            raise validation_error(errors)
        return await run_in_threadpool(call, queue)

    def queue(self, request: Request) -> deadletter.Queue:
        """The queue named by the ``{queue}`` path segment."""
        return self.db.queue(segment(request, "queue"))

    def create(self, request: Request) -> bool:
        """The query parameter ``create`` of `CREATING`'s routes (`existing`), read before their
        body so that its faults come first in the 422, as any query string's."""
        create = query(request, {"create": boolean}).get("create", False)
        if isinstance(create, bool):
            return create
        note(request, [{"field": "create", "code": "type", "message": "must be true or false"}])
        return False

    async def existing(
        self,
        request: Request,
        create: bool = False,
        call: Optional[Callable[[deadletter.Queue], object]] = None,
    ) -> deadletter.Queue:
        """The queue of a route that changes a queue's row: one that `Database.queues` lists (it
        holds messages or has stored settings). For a route that would store it (`CREATING`: pause,
        PUT settings; ``call`` is its call of the queue), also any name a new queue takes with
        ``create`` (the query parameter ``create=true``: `create`); for resume (no ``call``), only a
        queue there is: resuming another changes nothing, and read as if the mistyped queue was
        resumed (as the CLI refuses it). Else `NoQueue`, a 404 naming the queues there are, closest
        first, and nothing is stored: the console's Pause on a mistyped name paused a new queue
        while the real one ran on (new-user finding, session 8; the CLI refuses it unless
        ``--create`` since session 7). The request's faults come first, in one 422 with every
        rejected field, as apps validate a body before they look anything up: ``create`` other than
        ``true`` or ``false``, a name that no new queue takes, also with ``create=true`` (its 404
        suggested ``create=true``, whose answer was that 422: session 10, testers T2 and T3), and
        the body's (`rejected`: a bad body under an unknown name was a 404, then a 422 once the
        queue was made: session 11, tester T3)."""
        queue = self.queue(request)
        errors = noted(request)
        refused: Optional[deadletter.ValidationError] = None
        if call is not None:
            try:
                check_new_queue(queue.name)
            except deadletter.ValidationError as error:
                refused = error
        names = None
        if create is not True or refused is not None:  # with create=true, only a refused name
            names = await run_in_threadpool(missing, self.db, queue.name)
        if call is not None and names is not None:
            errors += refused.errors if refused is not None else []
            errors += await run_in_threadpool(rejected, call, queue.name)
        if errors and names is not None:  # else `act` raises them with the body's
            raise validation_error(errors)
        if names is not None:
            create_it = "" if call is None else "; give create=true to create it"
            raise NoQueue(unknown(queue.name, names) + create_it, queue.name)
        return queue

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
        fields = ("payload", "max_retries", "idempotency_key", "delay", "group", "expires_in")
        try:
            header = idempotency_header(request)
        except deadletter.ValidationError as error:  # with the request's other faults (T9)
            note(request, error.errors)
            header = None
        data = await self.body(request, fields, required=True)
        if header is not None and data["idempotency_key"] is not None:
            why = "is given as this header and as the body's idempotency_key: give one"
            note(request, [{"field": IDEMPOTENCY_HEADER, "code": "invalid", "message": why}])
        try:
            message = await self.act(
                request,
                queue,
                lambda queue: queue.enqueue(
                    data["payload"],
                    max_retries=data["max_retries"],
                    idempotency_key=data["idempotency_key"] if header is None else header,
                    delay=data["delay"],
                    group=data["group"],
                    expires_in=data["expires_in"],
                ),
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
            why = "is not taken by a batch: give each item its own idempotency_key"
            note(request, [{"field": IDEMPOTENCY_HEADER, "code": "invalid", "message": why}])
        data = await self.body(request, ("items",), required=True)
        messages = await self.act(request, queue, lambda queue: queue.enqueue_many(data["items"]))
        created = any(not m.deduplicated for m in messages)
        return JSONResponse(
            {"messages": [jsonable(m.to_dict()) for m in messages]}, 201 if created else 200
        )

    async def list_messages(self, request: Request) -> Response:
        queue = self.queue(request)
        params = query(request, LIST_PARAMETERS)
        note(request, instants(params, INSTANT_FILTERS))
        page = await self.act(request, queue, lambda queue: queue.list(**params))
        return JSONResponse(
            {
                "messages": [jsonable(m.to_dict()) for m in page],
                "next_after_id": page.next_after_id,
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
        message = await self.act(request, queue, lambda queue: queue.claim(lease=data["lease"]))
        if message is not None:
            return message_response(message)
        # The core says when a claim can next succeed: never before a resume on a paused queue
        # (no Retry-After: it used to send the next delayed message's, left by session 6).
        due = await run_in_threadpool(queue._next_claim_at)
        headers = {} if due is None else {"Retry-After": retry_after(due, self.clock())}
        return Response(status_code=204, headers=headers)

    async def extend(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("lease_token", "lease"), required=True)
        message = await self.act(
            request,
            queue,
            lambda queue: queue.extend(id, lease_token=data["lease_token"], lease=data["lease"]),
        )
        return message_response(message)

    async def succeed(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("lease_token",), required=False)
        message = await self.act(
            request, queue, lambda queue: queue.succeed(id, lease_token=data["lease_token"])
        )
        return message_response(message)

    async def fail(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        fields = ("error", "lease_token", "retryable", "retry_in")
        data = await self.body(request, fields, required=True)
        message = await self.act(
            request,
            queue,
            lambda queue: queue.fail(
                id,
                data["error"],
                lease_token=data["lease_token"],
                retryable=data["retryable"],
                retry_in=data["retry_in"],
            ),
        )
        return message_response(message)

    async def replay(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("expires_in",), required=False)
        message = await self.act(
            request, queue, lambda queue: queue.replay(id, expires_in=data["expires_in"])
        )
        return message_response(message)

    async def bulk(
        self, request: Request, action: str, extra: tuple[str, ...] = ()
    ) -> tuple[int, bool]:
        """A bulk action (``replay_all``, ``delete_all``, ``retry_now_all``, ``move_all``) over
        the filters, ``limit`` and ``dry_run`` of the body (and the ``extra`` fields the action
        takes, ``move_all``'s ``to_queue``): its count, and whether it was a dry run."""
        queue = self.queue(request)
        data = await self.body(request, (*extra, *BULK_FIELDS), required=bool(extra))
        data.update({name: data[name] for name in extra})  # absent: None, for the queue to reject
        note(request, instants(data, INSTANT_FILTERS))
        count = await self.act(request, queue, lambda queue: getattr(queue, action)(**data))
        return count, data["dry_run"] is True

    async def replay_all(self, request: Request) -> Response:
        count, dry_run = await self.bulk(request, "replay_all")
        return JSONResponse(
            {"count": count, "dry_run": dry_run, "replayed": 0 if dry_run else count}
        )

    async def delete_all(self, request: Request) -> Response:
        count, dry_run = await self.bulk(request, "delete_all")
        return JSONResponse({"count": count, "dry_run": dry_run})

    async def retry_now_all(self, request: Request) -> Response:
        count, dry_run = await self.bulk(request, "retry_now_all")
        return JSONResponse({"count": count, "dry_run": dry_run})

    async def move_all(self, request: Request) -> Response:
        count, dry_run = await self.bulk(request, "move_all", ("to_queue",))
        return JSONResponse({"count": count, "dry_run": dry_run})

    async def move(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        data = await self.body(request, ("to_queue",), required=True)
        return message_response(
            await self.act(request, queue, lambda queue: queue.move(id, data["to_queue"]))
        )

    async def retry_now(self, request: Request) -> Response:
        queue = self.queue(request)
        id = self.id(request)
        await self.body(request, (), required=False)
        return message_response(await self.act(request, queue, lambda queue: queue.retry_now(id)))

    async def purge(self, request: Request) -> Response:
        queue = self.queue(request)
        data = await self.body(request, ("status", "older_than"), required=True)
        purged = await self.act(
            request,
            queue,
            lambda queue: queue.purge(status=data["status"], older_than=data["older_than"]),
        )
        return JSONResponse({"purged": purged})

    async def reap(self, request: Request) -> Response:
        queue = self.queue(request)
        await self.body(request, (), required=False)
        return JSONResponse({"reaped": await self.act(request, queue, deadletter.Queue.reap)})

    async def get_settings(self, request: Request) -> Response:
        settings = await run_in_threadpool(self.queue(request).settings)
        return JSONResponse(jsonable(settings))

    async def put_settings(self, request: Request) -> Response:
        create = self.create(request)
        fields = ("backoff", "max_retries", "lease", "expires_in", "on_expiry")
        data = await self.body(request, fields, required=True)
        queue = await self.existing(request, create, lambda queue: queue.set_settings(**data))
        settings = await self.act(
            request, queue, lambda queue: queue.set_settings(**data), check_queue=False
        )
        return JSONResponse(jsonable(settings))

    async def pause(self, request: Request) -> Response:
        create = self.create(request)
        await self.body(request, (), required=False)
        queue = await self.existing(request, create, deadletter.Queue.pause)
        paused = await self.act(request, queue, deadletter.Queue.pause, check_queue=False)
        return JSONResponse(jsonable(paused))

    async def resume(self, request: Request) -> Response:
        await self.body(request, (), required=False)
        queue = await self.existing(request)
        resumed = await self.act(request, queue, deadletter.Queue.resume, check_queue=False)
        return JSONResponse(jsonable(resumed))

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
        return FileResponse(STATIC / "index.html", headers=FRAME_HEADERS)

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
            (m + "/retry-now", "post"): self.retry_now,
            (m + "/move", "post"): self.move,
            (q + "/replay", "post"): self.replay_all,
            (q + "/delete", "post"): self.delete_all,
            (q + "/retry-now", "post"): self.retry_now_all,
            (q + "/move", "post"): self.move_all,
            (q + "/purge", "post"): self.purge,
            (q + "/reap", "post"): self.reap,
            (q + "/settings", "get"): self.get_settings,
            (q + "/settings", "put"): self.put_settings,
            (q + "/pause", "post"): self.pause,
            (q + "/resume", "post"): self.resume,
            ("/metrics", "get"): self.metrics,
            ("/healthz", "get"): self.healthz,
            ("/openapi.json", "get"): self.openapi,
            ("/", "get"): self.dashboard,
        }


Endpoint = Callable[[Request], Awaitable[Response]]


def without_query(endpoint: Endpoint, *, acts: bool) -> Endpoint:
    """``endpoint``, refusing any query parameter (`query` with none taken), so nothing is
    changed by a request whose parameters would be dropped (finding F1): 422 before it runs,
    or, for an endpoint that ``acts`` through `Api.act` (every POST and PUT), in the 422 that
    lists its body's faults too."""

    async def checked(request: Request) -> Response:
        query(request, {})
        if not acts and noted(request):
            raise validation_error(noted(request))
        return await endpoint(request)

    return checked


def without_idempotency_key(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` (a POST, which `Api.act`s), refusing an ``Idempotency-Key`` header: a 422
    with the request's other faults, nothing done. Only an enqueue
    takes one; a client that sends it with a claim, an ack or a bulk action believes a retry of
    the request safe, and a retried claim would lease a second message (new-user finding N10,
    session 7: the header was ignored there)."""

    async def checked(request: Request) -> Response:
        if request.headers.getlist(IDEMPOTENCY_HEADER):
            why = (
                "is taken only by an enqueue (POST /queues/{queue}/messages): "
                "this request is not deduplicated"
            )
            note(request, [{"field": IDEMPOTENCY_HEADER, "code": "invalid", "message": why}])
        return await endpoint(request)

    return checked


def routes(endpoints: Mapping[tuple[str, str], Endpoint]) -> list[BaseRoute]:
    """One Starlette route per path (so that a 405's ``Allow`` lists all its methods), and the
    dashboard's files under ``/static``. Every route but `TAKE_QUERY`'s refuses a query string,
    and every POST but `TAKE_IDEMPOTENCY_KEY`'s an ``Idempotency-Key`` header."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for (path, method), endpoint in endpoints.items():
        acts = method in ("post", "put")
        checked = endpoint if (path, method) in TAKE_QUERY else without_query(endpoint, acts=acts)
        if method == "post" and (path, method) not in TAKE_IDEMPOTENCY_KEY:
            checked = without_idempotency_key(checked)
        by_path.setdefault(path, {})[method.upper()] = checked

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
