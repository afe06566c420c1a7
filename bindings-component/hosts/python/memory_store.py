"""A queue database in a Python dictionary over deadletter's WebAssembly component: the store
selects (by queue, by id, by idempotency key, by status) and persists; every decision is the
component's. Each method is one operation of the core's engine, in the core's order: check the
arguments (``validate``), read the clock and the queue's row (``validate.write_context``), read
the messages, ask ``apply`` or ``plan``, write what they answer. A call that raises
:class:`component.ComponentError` changed nothing.

Arguments are WIT ``arg`` values (:func:`component.arg`) as a caller gave them; ``now`` is the
host's clock (UTC milliseconds); ``policy`` a queue handle's own backoff policy (a checked
``backoff`` record, or ``None``) and ``sample`` the jitter sample the host drew. Lease tokens are
version-4 UUIDs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from component import Core, get

#: What a call made dead goes to the database's dead-letter callbacks.
OnDead = Callable[[Any], None]

#: The statuses of the messages a claim, a group's order and a group's head look at (the index
#: of live messages a store keeps, as the SQL stores select them).
LIVE = ("pending", "processing")


class MemoryDatabase:
    """Messages (``plan.stored`` records: a message with its place in its group) by id, and
    queues' rows by name."""

    def __init__(self, core: Core, limits: Any) -> None:
        self.core = core
        self.limits = limits
        self.messages: dict[int, Any] = {}
        self.rows: dict[str, Any] = {}
        self.last_id = 0
        self.on_dead: list[OnDead] = []

    # Selection: what the store reads.

    def _queue(self, queue: str, *statuses: str) -> list[Any]:
        """The stored messages of ``queue`` (only in ``statuses`` when given), by id."""
        return [
            s
            for _, s in sorted(self.messages.items())
            if s.message.queue == queue and (not statuses or s.message.status in statuses)
        ]

    def _holds(self, queue: str) -> bool:
        """Whether a message of ``queue`` is stored (what a write of its row tells ``apply``)."""
        return any(s.message.queue == queue for s in self.messages.values())

    def _found(self, id: int) -> Any:
        """The message stored under ``id``, or ``None`` (the component checks its queue)."""
        stored = self.messages.get(id)
        return None if stored is None else stored.message

    def _keyed(self, queue: str, key: str | None) -> Any:
        """The stored message of ``queue`` with idempotency key ``key`` (the unique index)."""
        if key is None:
            return None
        return next(
            (
                s.message
                for s in self.messages.values()
                if s.message.queue == queue and get(s.message, "idempotency_key") == key
            ),
            None,
        )

    def _taken(self, queue: str, message: Any) -> bool:
        """Whether a stored message of ``queue`` carries the idempotency key of ``message`` (false
        without one): what a move asks of its target queue."""
        key = None if message is None else get(message, "idempotency_key")
        return self._keyed(queue, key) is not None

    def _context(self, queue: str, now: int) -> Any:
        return self.core.validate.write_context(now, self.rows.get(queue))

    # Persistence: what the store writes.

    def _group(self, queue: str, group: str | None) -> list[Any]:
        """The live (pending or processing) messages of ``group`` of ``queue``; none without a
        group."""
        if group is None:
            return []
        return [s for s in self._queue(queue, *LIVE) if s.message.group == group]

    def _write(self, now: int, after: Any) -> None:
        """Writes ``after`` over what is stored under its id, in its place in its group (for a
        moved message, its group in the queue it went to)."""
        before = self.messages.get(after.id)
        group = self._group(after.queue, after.group)
        self.messages[after.id] = self.core.plan.place(now, before, after, group)

    def _changes(self, changes: list[Any]) -> None:
        """Writes a claim's changes. wasmtime-py lifts the variant ``change`` untagged (its cases
        lift to different Python classes): ``put`` is the ``stored`` record, ``delete`` the id."""
        for change in changes:
            if isinstance(change, int):
                self.messages.pop(change, None)
            else:
                self.messages[change.message.id] = change

    def _row(self, queue: str, row: Any) -> Any:
        """Stores a queue's row when it is worth storing; else the queue has none (back to the
        defaults)."""
        if self.core.apply.worth_storing(row):
            self.rows[queue] = row
        else:
            self.rows.pop(queue, None)
        return row

    def _died(self, dead: list[Any]) -> None:
        for message in dead:
            for callback in self.on_dead:
                callback(message)

    # The operations.

    def enqueue(self, queue: Any, items: list[Any], batch: bool, now: int) -> list[Any]:
        args = self.core.validate.enqueue(queue, items, batch, self.limits)
        ctx = self._context(args.queue, now)
        out = []
        for new in self.core.apply.enqueue(args, ctx):
            existing = self._keyed(new.queue, get(new, "idempotency_key"))
            if existing is not None:
                out.append(self.core.apply.deduplicated(existing))
                continue
            self.last_id += 1
            message = self.core.apply.inserted(new, self.last_id)
            self._write(now, message)
            out.append(message)
        return out

    def claim(self, args: Any, now: int) -> Any:
        """Runs a claim (or reap) checked by ``validate.claim`` (``validate.reap``); returns
        ``plan.claimed``."""
        ctx = self._context(args.queue, now)
        tokens = [str(uuid.uuid4()) for _ in range(args.n)]
        live = self._queue(args.queue, *LIVE)
        claimed = self.core.plan.claim(args, ctx, live, tokens)
        self._changes(claimed.changes)
        if claimed.row is not None:
            self.rows[args.queue] = claimed.row
        self._died(claimed.dead)
        return claimed

    def claim_many(
        self, queue: Any, n: Any, lease_ms: Any, policy: Any, sample: float, now: int
    ) -> list[Any]:
        args = self.core.validate.claim(queue, n, lease_ms, policy, sample, self.limits)
        return self.claim(args, now).taken

    def reap(self, queue: Any, policy: Any, sample: float, now: int) -> int:
        args = self.core.validate.reap(queue, policy, sample)
        return self.claim(args, now).reaped

    def _update(self, step: Callable[..., Any], args: Any, now: int) -> Any:
        """One message's step inside a write: read, ask, write."""
        ctx = self._context(args.queue, now)
        message = step(args, self._found(args.id), ctx)
        self._write(now, message)
        return message

    def succeed(self, queue: Any, id: Any, lease_token: Any, now: int) -> Any:
        args = self.core.validate.succeed(queue, id, lease_token)
        return self._update(self.core.apply.succeed, args, now)

    def fail(
        self,
        queue: Any,
        id: Any,
        error: Any,
        lease_token: Any,
        retryable: Any,
        retry_in_ms: Any,
        policy: Any,
        sample: float,
        now: int,
    ) -> Any:
        validate = self.core.validate
        args = validate.fail(queue, id, error, lease_token, retryable, retry_in_ms, policy, sample)
        message = self._update(self.core.apply.fail, args, now)
        self._died(self.core.apply.dead([message]))
        return message

    def extend(self, queue: Any, id: Any, lease_token: Any, lease_ms: Any, now: int) -> Any:
        args = self.core.validate.extend(queue, id, lease_token, lease_ms, self.limits)
        return self._update(self.core.apply.extend, args, now)

    def replay(self, queue: Any, id: Any, expires_in_ms: Any, now: int) -> Any:
        args = self.core.validate.replay(queue, id, expires_in_ms)
        return self._update(self.core.apply.replay, args, now)

    def _in_batches(
        self,
        queue: str,
        statuses: tuple[str, ...],
        limit: int,
        selects: Callable[[Any], bool],
        apply: Callable[[list[int]], int],
    ) -> int:
        """Runs ``apply`` on the ids of the messages of ``queue`` (in ``statuses`` when given)
        that ``selects`` takes, in the component's batches."""
        with self.core.batches(limit) as batches:
            while (selection := batches.next()) is not None:
                after, room = selection
                candidates = [s.message for s in self._queue(queue, *statuses)]
                ids = [m.id for m in candidates if m.id > after and selects(m)][:room]
                batches.record(ids, apply(ids) if ids else 0)
            return batches.done()

    def bulk(
        self, action: str, queue: Any, filters: Any, limit: Any, dry_run: Any, now: int
    ) -> int:
        """A bulk action (``bulk-action``: ``replay``, ``delete``, ``retry-now``): its selection
        at ``now``, then each batch written in its own transaction, or, on a dry run, counted
        at ``now`` with the queue's row as it is."""
        core = self.core
        args = core.validate.bulk(action, queue, filters, limit, dry_run, now)
        dry_ctx = self._context(args.queue, now) if get(args, "dry_run") else None

        def count(ids: list[int]) -> int:
            found = [m for m in map(self._found, ids) if m is not None]
            return sum(core.apply.bulk_touches(args, m, dry_ctx) for m in found)

        def write(ids: list[int]) -> int:
            ctx = self._context(args.queue, now)
            found = [m for m in map(self._found, ids) if m is not None]
            if args.action == "delete":
                doomed = [m.id for m in found if core.apply.bulk_deletes(args, m, now)]
                for id in doomed:
                    del self.messages[id]
                return len(doomed)
            written = [core.apply.bulk_step(args, m, ctx) for m in found]
            written = [m for m in written if m is not None]
            for message in written:
                self._write(now, message)
            return len(written)

        selects = lambda m: core.apply.bulk_selects(args, m, now)  # noqa: E731
        apply = write if dry_ctx is None else count
        return self._in_batches(args.queue, (), args.limit, selects, apply)

    def move(self, queue: Any, id: Any, to_queue: Any, now: int) -> Any:
        """``move``: the message read with whether ``to_queue`` holds its idempotency key, moved
        and written there."""
        args = self.core.validate.move(queue, id, to_queue)
        to = get(args, "to_queue")

        def step(args: Any, found: Any, ctx: Any) -> Any:
            return self.core.apply.move(args, found, ctx, self._taken(to, found))

        return self._update(step, args, now)

    def move_all(
        self, queue: Any, to_queue: Any, filters: Any, limit: Any, dry_run: Any, now: int
    ) -> int:
        """``move_all``: its selection at ``now``, then each batch moved in its own transaction,
        or, on a dry run, counted at ``now`` with the queue's row as it is (a message whose key
        the target holds is skipped either way)."""
        core = self.core
        args = core.validate.move_all(queue, to_queue, filters, limit, dry_run, now)
        bulk, to = args.bulk, get(args, "to_queue")
        dry_ctx = self._context(bulk.queue, now) if get(bulk, "dry_run") else None

        def move(ids: list[int]) -> int:
            ctx = self._context(bulk.queue, now) if dry_ctx is None else dry_ctx
            found = [m for m in map(self._found, ids) if m is not None]
            moved = [core.apply.move_all_step(args, m, ctx, self._taken(to, m)) for m in found]
            moved = [m for m in moved if m is not None]
            if dry_ctx is None:
                for message in moved:
                    self._write(now, message)
            return len(moved)

        selects = lambda m: core.apply.bulk_selects(bulk, m, now)  # noqa: E731
        return self._in_batches(bulk.queue, (), bulk.limit, selects, move)

    def retry_now(self, queue: Any, id: Any, now: int) -> Any:
        args = self.core.validate.message(queue, id)
        return self._update(self.core.apply.retry_now, args, now)

    def purge(self, queue: Any, status: Any, older_than_ms: Any, now: int) -> int:
        args = self.core.validate.purge(queue, status, older_than_ms, now)

        def delete(ids: list[int]) -> int:
            found = [m for m in map(self._found, ids) if m is not None]
            doomed = [m.id for m in found if self.core.apply.purge_selects(args, m)]
            for id in doomed:
                del self.messages[id]
            return len(doomed)

        selects = lambda m: self.core.apply.purge_selects(args, m)  # noqa: E731
        return self._in_batches(args.queue, (args.status,), 2**64 - 1, selects, delete)

    def delete(self, queue: Any, id: Any) -> Any:
        args = self.core.validate.message(queue, id)
        message = self.core.apply.delete(args, self._found(args.id))
        del self.messages[message.id]
        return message

    def get(self, queue: Any, id: Any) -> Any:
        args = self.core.validate.message(queue, id)
        return self.core.apply.found(args, self._found(args.id))

    def _read(self, query: Any) -> list[Any]:
        """One read of ``list`` (``list-query``): the messages of a queue (of one status when
        set), ids above ``after-id``, in id order, at most ``limit``."""
        after = get(query, "after_id")
        statuses = () if query.status is None else (query.status,)
        found = [
            s.message
            for s in self._queue(query.queue, *statuses)
            if after is None or s.message.id > after
        ]
        return found[: query.limit]

    def list_messages(self, queue: Any, filters: Any, limit: Any, after_id: Any, now: int) -> Any:
        """A page (``page``) of the messages the filters select: the reads the component's
        ``scan`` asks for."""
        args = self.core.validate.list(queue, filters, limit, after_id, now)
        with self.core.scan(args, now) as scan:
            while (query := scan.next()) is not None:
                scan.feed(self._read(query))
            return scan.finish()

    def stats(self, queue: Any, now: int) -> Any:
        name = self.core.validate.queue_at(queue, now)
        return self.core.plan.queue_stats(name, self._queue(name), self.rows.get(name), now)

    def queues(self, now: int) -> list[Any]:
        self.core.validate.clock(now)
        names = sorted({s.message.queue for s in self.messages.values()} | set(self.rows))
        return [
            self.core.plan.queue_stats(n, self._queue(n), self.rows.get(n), now) for n in names
        ]

    def next_due_at(self, queue: Any, now: int) -> int | None:
        name = self.core.validate.queue_at(queue, now)
        return self.core.plan.next_due_at(self._queue(name), now)

    def settings(self, queue: Any) -> Any:
        name = self.core.validate.queue_name(queue)
        return self.core.apply.stored_settings(self.rows.get(name))

    def set_settings(
        self,
        queue: Any,
        backoff: Any,
        max_retries: Any,
        lease_ms: Any,
        expires_in_ms: Any,
        on_expiry: Any,
    ) -> Any:
        validate = self.core.validate
        args = validate.settings(queue, backoff, max_retries, lease_ms, expires_in_ms, on_expiry)
        row = self.rows.get(args.queue)
        row = self.core.apply.settings(args, row, self._holds(args.queue))
        return self._row(args.queue, row).settings

    def pause(self, queue: Any, paused: bool) -> Any:
        name = self.core.validate.queue_name(queue)
        row = self.core.apply.pause(name, self.rows.get(name), paused, self._holds(name))
        return self._row(name, row).settings
