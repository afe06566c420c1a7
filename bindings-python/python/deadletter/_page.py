"""`MessagePage`: what `Queue.list` returns, a list of messages that says where the next page
starts. The native module builds it (a pyo3 class cannot subclass `list` under the stable ABI)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from ._deadletter import Message

__all__ = ["MessagePage"]


class MessagePage(list[Message]):
    """One page of `Queue.list`: the messages in id order (a ``list``, so it is indexed, sliced,
    compared and serialised as one) and ``next_after_id``, the ``after_id`` to pass to continue,
    or ``None`` when the call reached the end of the queue before the page was full.

    ``next_after_id`` is the last id of the page when the page is full (more may follow, or
    not). Every filter but ``status`` is checked on the messages themselves in id order (no index
    answers ``payload_contains``, nor ``idempotency_key``, ``group`` or a time range), and a call
    examines at most ``SCAN_BUDGET`` messages; when the budget runs out before the page is full,
    the page may be short or even empty while more messages may match beyond, and
    ``next_after_id`` is the last id examined: an empty page with a ``next_after_id`` does not
    mean "no match". So a loop reads every match with::

        after = None
        while True:
            page = queue.list(payload_contains="customer", after_id=after)
            ...
            if page.next_after_id is None:
                break
            after = page.next_after_id
    """

    __slots__ = ("next_after_id",)

    next_after_id: Optional[int]

    def __init__(self, messages: Iterable[Message] = (), next_after_id: Optional[int] = None):
        super().__init__(messages)
        self.next_after_id = next_after_id

    def __repr__(self) -> str:
        return f"MessagePage({list.__repr__(self)}, next_after_id={self.next_after_id!r})"
