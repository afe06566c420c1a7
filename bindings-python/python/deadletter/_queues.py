"""What the CLI and the HTTP API say of a queue name that names no queue: the queues there are,
closest first, so that a typo reads as one (new-user finding M8, session 7)."""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Optional

import deadletter

from ._invisible import name as shown_name

__all__ = ["missing", "queue_names", "unknown"]

SHOWN_QUEUES = 10
"""Queue names a note about an unknown queue shows, closest first."""


def queue_names(db: deadletter.Database) -> list[str]:
    """The queues of ``db``: those `Database.queues` lists (holding messages or stored settings)."""
    return [stats.queue for stats in db.queues()]


def missing(db: deadletter.Database, name: str) -> Optional[list[str]]:
    """``None`` when ``name`` is a queue of ``db`` (one that `Database.queues` lists); else the
    queues there are, for `unknown`. A queue that holds a message is known by one index read
    (`Queue.list` of one message); only one that holds none (its settings stored, or no queue)
    reads every queue's statistics (`Database.queues`)."""
    if db.queue(name).list(limit=1):
        return None
    names = queue_names(db)
    return None if name in names else names


def unknown(name: str, names: list[str]) -> str:
    """Why ``name`` is no queue, with the queues there are, closest to it first (a typo's
    intended name leads); each name as the CLI's tables show it (`_invisible.name`: ``emails\\x20``
    and ``emails\\u2800`` for 0.1.0's names, which read as ``emails`` otherwise: session 10,
    tester T3)."""
    closest = sorted(names, key=lambda other: (-similarity(name, other), other))
    shown = ", ".join(f'"{shown_name(other)}"' for other in closest[:SHOWN_QUEUES])
    more = f" and {len(closest) - SHOWN_QUEUES} more" if len(closest) > SHOWN_QUEUES else ""
    there = f"queues: {shown}{more}" if names else "the database holds no queue"
    return f'no queue "{shown_name(name)}" (it holds no message and no settings); {there}'


def similarity(name: str, other: str) -> float:
    """How alike two queue names are, 0..1, case aside."""
    return SequenceMatcher(None, name.casefold(), other.casefold()).ratio()
