"""``deadletter serve``: `deadletter.http` under uvicorn, one database connection per process.

The CLI checks its arguments, then puts the settings in the environment, where every worker
process (uvicorn spawns them) finds them when it imports `app_from_environment` by name.
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

import deadletter

from .._deadletter import DEFAULT_MAX_PAYLOAD_BYTES
from ._app import build, token_problem
from ._guard import check_hosts, check_origins

__all__ = [
    "ENV_ALLOWED_HOSTS",
    "ENV_ALLOW_ORIGINS",
    "ENV_MAX_PAYLOAD_BYTES",
    "ENV_PATH",
    "ENV_SCHEMA",
    "ENV_TOKEN",
    "app_from_environment",
    "check_address",
    "check_hosts",
    "check_origins",
    "host_name",
    "run",
    "token_problem",
]

ENV_PATH = "DEADLETTER_SERVE_PATH"
ENV_SCHEMA = "DEADLETTER_SERVE_SCHEMA"
ENV_MAX_PAYLOAD_BYTES = "DEADLETTER_SERVE_MAX_PAYLOAD_BYTES"
ENV_TOKEN = "DEADLETTER_TOKEN"
ENV_ALLOWED_HOSTS = "DEADLETTER_SERVE_ALLOWED_HOSTS"
ENV_ALLOW_ORIGINS = "DEADLETTER_SERVE_ALLOW_ORIGINS"
ENV_SUPERVISOR = "DEADLETTER_SERVE_SUPERVISOR_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
FACTORY = "deadletter.http._serve:app_from_environment"


def app_from_environment() -> Starlette:
    """The app of one worker process: it opens its own connection to the file or PostgreSQL URL
    named by ``DEADLETTER_SERVE_PATH`` and closes it at shutdown. ``DEADLETTER_TOKEN``,
    ``DEADLETTER_SERVE_MAX_PAYLOAD_BYTES``, ``DEADLETTER_SERVE_SCHEMA`` and the JSON lists
    ``DEADLETTER_SERVE_ALLOWED_HOSTS`` and ``DEADLETTER_SERVE_ALLOW_ORIGINS`` are optional; an
    empty ``DEADLETTER_TOKEN`` raises `ValueError` (it would turn authentication off)."""
    supervisor = os.environ.get(ENV_SUPERVISOR)
    if supervisor is not None:
        exit_with_supervisor(int(supervisor))
    max_payload = int(os.environ.get(ENV_MAX_PAYLOAD_BYTES, DEFAULT_MAX_PAYLOAD_BYTES))
    schema = os.environ.get(ENV_SCHEMA)
    db = deadletter.open(os.environ[ENV_PATH], max_payload_bytes=max_payload, schema=schema)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            db.close()

    token = os.environ.get(ENV_TOKEN)  # empty: build refuses it
    return build(
        db,
        token=token,
        max_payload_bytes=max_payload,
        allowed_hosts=json.loads(os.environ.get(ENV_ALLOWED_HOSTS, "[]")),
        allow_origins=json.loads(os.environ.get(ENV_ALLOW_ORIGINS, "[]")),
        lifespan=lifespan,
    )


def exit_with_supervisor(supervisor: int) -> None:
    """In a worker process of ``deadletter serve --workers N``: a SIGTERM (uvicorn's graceful
    shutdown) once the supervisor that started it is gone. A supervisor killed with SIGKILL (or
    the OOM killer) cannot stop its workers: they served on, holding the port, and a restart
    failed with "Address already in use".

    On Linux, ``prctl(PR_SET_PDEATHSIG)``: the kernel sends the signal when the parent dies, with
    no thread and no polling (uvicorn starts the workers from the supervisor's main thread, the
    one whose end the kernel watches). Elsewhere, a daemon thread looks at ``os.getppid()`` every
    half second. Either way, a supervisor that died before this call is noticed at once."""
    if not sys.platform.startswith("linux"):

        def watch() -> None:
            while os.getppid() == supervisor:
                time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, name="deadletter-supervisor-watch", daemon=True).start()
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != supervisor:  # died before the call
        os.kill(os.getpid(), signal.SIGTERM)


def host_name(host: str) -> list[str]:
    """``[host]`` when the server binds a name (``--host queue.lan``): requests addressed to the
    name it was told to listen on are its own; ``[]`` for an address."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return [host]
    return []


class Config(uvicorn.Config):
    """uvicorn's config, with a listening socket that says it is TCP.

    uvicorn binds the shared socket of ``workers > 1`` with protocol 0; connections accepted from
    it inherit that, so asyncio does not set ``TCP_NODELAY`` on them and every keep-alive
    response waits ~40 ms for the client's delayed ACK (uvicorn issue #3149). The same socket,
    rewrapped, reads its real family, type and protocol from the file descriptor.
    """

    def bind_socket(self) -> socket.socket:
        return socket.socket(fileno=super().bind_socket().detach())


def check_address(host: str, port: int) -> None:
    """Binds a socket to ``host`` and ``port`` as uvicorn will, then closes it, so that an address
    the server cannot listen on (a host that does not resolve or is not this machine's, a port in
    use or not allowed) is known before anything starts; `OSError` saying why."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))


def run(host: str, port: int, workers: int, log_level: str) -> bool:
    """Serves until interrupted, as ``uvicorn.run(FACTORY, factory=True, ...)`` would; returns
    whether the server started."""
    config = Config(
        FACTORY, factory=True, host=host, port=port, workers=workers, log_level=log_level
    )
    if workers > 1:
        os.environ[ENV_SUPERVISOR] = str(os.getpid())  # its workers exit when it dies
        Multiprocess(config, sockets=[config.bind_socket()]).run()
        return True
    server = uvicorn.Server(config)
    server.run()
    return server.started
