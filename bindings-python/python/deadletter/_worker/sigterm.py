"""SIGTERM for the worker loops: one handler of deadletter's stops every loop running, installed
only when the application leaves SIGTERM alone, and removed (the default back) when the last
loop ends.

- The threaded loops (`threads`) share one per process, installed by a loop that starts in the
  main thread (only the main thread may install one); while installed it stops the loops of
  every thread. A loop started in another thread while none is installed is not stopped by
  SIGTERM (the default ends the process). When the last loop ends in another thread, which may
  not restore the default, the handler stays: the next SIGTERM, finding no loop, restores the
  default and acts as it.
- The ``process_async`` loops (`tasks`) of one event loop (running in the main thread, on Unix)
  share one, through ``loop.add_signal_handler``.

A loop is anything with an ``on_sigterm()`` method (`Stoppable`), so that this module imports
neither loop.

A child forked while loops run (a handler starting a ``multiprocessing`` process: fork is its
default on Linux) runs none of them: it gets SIGTERM's default back (`_after_fork_in_child`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Protocol

__all__ = ["Stoppable", "unwatch_async", "unwatch_threads", "watch_async", "watch_threads"]


class Stoppable(Protocol):
    """A worker loop that SIGTERM stops."""

    def on_sigterm(self) -> None:
        """Stops the loop; called from a signal handler (so it takes no lock)."""


_thread_loops: set[Stoppable] = set()
"""The threaded loops running in this process, which deadletter's SIGTERM handler stops."""
_thread_loops_lock = threading.Lock()


def _on_sigterm(signum: int, frame: object) -> None:
    """deadletter's SIGTERM handler of the threaded loops: stops every one running. With none
    running (the last ended in a thread that may not restore the default), it restores the
    default and raises the signal again, which ends the process as if it had never been
    installed. It takes no lock: it runs between two bytecodes of the main thread, which may hold
    it."""
    loops = tuple(_thread_loops)  # one C call: atomic under the GIL
    if not loops:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
    for loop in loops:
        loop.on_sigterm()


def _sigterm_is_free() -> bool:
    """Whether SIGTERM may be deadletter's: its disposition is the default, or deadletter's own
    handler of the threaded loops, left installed (not an application's handler, nor one
    installed from C, nor asyncio's)."""
    current = signal.getsignal(signal.SIGTERM)
    return current is signal.SIG_DFL or current is _on_sigterm


def watch_threads(loop: Stoppable, main: bool) -> None:
    """Lets SIGTERM stop the threaded ``loop``; from the main thread, installs deadletter's
    handler unless the application handles SIGTERM."""
    with _thread_loops_lock:
        _thread_loops.add(loop)
    if main and _sigterm_is_free():
        signal.signal(signal.SIGTERM, _on_sigterm)


def unwatch_threads(loop: Stoppable, main: bool) -> None:
    """``loop`` ended; from the main thread, the last one restores SIGTERM's default."""
    with _thread_loops_lock:
        _thread_loops.discard(loop)
        last = not _thread_loops
    if main and last and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


_async_loops: dict[asyncio.AbstractEventLoop, set[Stoppable]] = {}
"""The ``process_async`` loops running on each event loop whose SIGTERM handler is deadletter's."""


def _stop_async_loops(loop: asyncio.AbstractEventLoop) -> None:
    """deadletter's SIGTERM handler on ``loop``: stops every ``process_async`` loop on it."""
    for tasks in tuple(_async_loops.get(loop, ())):
        tasks.on_sigterm()


def watch_async(loop: asyncio.AbstractEventLoop, tasks: Stoppable) -> None:
    """Lets SIGTERM stop ``tasks``: joins deadletter's handler on ``loop``, or installs it when the
    event loop allows it (Unix, main thread) and the application does not handle SIGTERM."""
    running = _async_loops.get(loop)
    if running is not None:
        running.add(tasks)
        return
    if threading.current_thread() is not threading.main_thread() or not _sigterm_is_free():
        return
    try:
        loop.add_signal_handler(signal.SIGTERM, _stop_async_loops, loop)
    except (NotImplementedError, RuntimeError, ValueError):
        return
    _async_loops[loop] = {tasks}


def unwatch_async(loop: asyncio.AbstractEventLoop, tasks: Stoppable) -> None:
    """``tasks`` ended; the last loop on ``loop`` removes the handler (SIGTERM's default is
    back)."""
    running = _async_loops.get(loop)
    if running is None or tasks not in running:
        return
    running.discard(tasks)
    if not running:
        del _async_loops[loop]
        loop.remove_signal_handler(signal.SIGTERM)


_fork_blocked = False
"""Whether `_before_fork` blocked SIGTERM (in the forking thread), for the fork's two sides."""


def _before_fork() -> None:
    """Blocks SIGTERM in the forking thread while loops run, until each side of the fork is
    ready for it: a SIGTERM sent to the child at once (``Process.start()`` then ``terminate()``)
    waits until `_after_fork_in_child` gave it its default, rather than reach the handler the
    child inherited."""
    global _fork_blocked
    _fork_blocked = False
    if _thread_loops or _async_loops:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        _fork_blocked = signal.SIGTERM not in old


def _after_fork_in_parent() -> None:
    """The parent's side of `_before_fork`: SIGTERM unblocked."""
    if _fork_blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _after_fork_in_child() -> None:
    """In a child forked while loops ran: the loops are the parent's (their threads are not in
    the child), so SIGTERM gets its default back when it was deadletter's, and the child forgets
    them; then SIGTERM is unblocked (`_before_fork`), a pending one ending the child. The
    inherited handler stopped loops that do not run there, so `Process.terminate()` did not end
    the child and `multiprocessing.Pool`'s exit hung (tester T8, session 13); under
    ``process_async`` the child's SIGTERM went through asyncio's wake-up socket, which the child
    shares, to the parent's event loop, and stopped the parent's loop."""
    global _thread_loops_lock
    _thread_loops_lock = threading.Lock()  # another thread may have held it at the fork
    threads, tasks = bool(_thread_loops), bool(_async_loops)
    _thread_loops.clear()
    _async_loops.clear()
    if (threads and signal.getsignal(signal.SIGTERM) is _on_sigterm) or tasks:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if tasks:
        signal.set_wakeup_fd(-1)  # asyncio's: the parent's event loop's socket
    if _fork_blocked:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
