// A queue database in a JavaScript Map over deadletter's WebAssembly component: the store
// selects (by queue, by id, by idempotency key, by status) and persists; every decision is the
// component's. Each method is one operation of the core's engine, in the core's order: check the
// arguments (`validate`), read the clock and the queue's row (`validate.writeContext`), read the
// messages, ask `apply` or `plan`, write what they answer. A call that throws a ComponentError
// changed nothing.
//
// Arguments are WIT `arg` values (component.mjs's `arg`) as a caller gave them; `now` is the
// host's clock (UTC milliseconds, a BigInt); `policy` a queue handle's own backoff policy (a
// checked `backoff` record, or undefined) and `sample` the jitter sample the host drew. Lease
// tokens are version-4 UUIDs. The mirror of hosts/python/memory_store.py.

import { randomUUID } from "node:crypto";

/** The statuses of the messages a claim, a group's order and a group's head look at (the index of live messages a store keeps, as the SQL stores select them). */
const LIVE = ["pending", "processing"];

const byId = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** Messages (`stored` records: a message with its place in its group) by id, and queues' rows by name. */
export class MemoryDatabase {
  constructor(core, limits) {
    this.core = core;
    this.limits = limits;
    this.messages = new Map();
    this.rows = new Map();
    this.lastId = 0n;
    this.onDead = [];
  }

  // Selection: what the store reads.

  /** The stored messages of `queue` (only in `statuses` when given), by id. */
  #queue(queue, ...statuses) {
    return [...this.messages.entries()]
      .sort(([a], [b]) => byId(a, b))
      .map(([, s]) => s)
      .filter((s) => s.message.queue === queue && (statuses.length === 0 || statuses.includes(s.message.status)));
  }

  /** Whether a message of `queue` is stored (what a write of its row tells `apply`). */
  #holds(queue) {
    for (const s of this.messages.values()) if (s.message.queue === queue) return true;
    return false;
  }

  /** The live messages of `group` of `queue`; none without a group. */
  #group(queue, group) {
    return group === undefined ? [] : this.#queue(queue, ...LIVE).filter((s) => s.message.group === group);
  }

  /** The message stored under `id`, or undefined (the component checks its queue). */
  #found(id) {
    return this.messages.get(id)?.message;
  }

  /** The stored message of `queue` with idempotency key `key` (the unique index). */
  #keyed(queue, key) {
    if (key === undefined) return undefined;
    for (const s of this.messages.values()) if (s.message.queue === queue && s.message.idempotencyKey === key) return s.message;
    return undefined;
  }

  /** Whether a stored message of `queue` carries the idempotency key of `message` (false without one): what a move asks of its target queue. */
  #taken(queue, message) {
    return this.#keyed(queue, message?.idempotencyKey) !== undefined;
  }

  #context(queue, now) {
    return this.core.validate.writeContext(now, this.rows.get(queue));
  }

  // Persistence: what the store writes.

  /** Writes `after` over what is stored under its id, in its place in its group (for a moved message, its group in the queue it went to). */
  #write(now, after) {
    const before = this.messages.get(after.id);
    this.messages.set(after.id, this.core.plan.place(now, before, after, this.#group(after.queue, after.group)));
  }

  /** Stores a queue's row when it is worth storing; else the queue has none (back to the defaults). */
  #row(queue, row) {
    if (this.core.apply.worthStoring(row)) this.rows.set(queue, row);
    else this.rows.delete(queue);
    return row;
  }

  #died(dead) {
    for (const message of dead) for (const callback of this.onDead) callback(message);
  }

  // The operations.

  enqueue(queue, items, batch, now) {
    const args = this.core.validate.enqueue(queue, items, batch, this.limits);
    const ctx = this.#context(args.queue, now);
    const out = [];
    for (const created of this.core.apply.enqueue(args, ctx)) {
      const existing = this.#keyed(created.queue, created.idempotencyKey);
      if (existing !== undefined) {
        out.push(this.core.apply.deduplicated(existing));
        continue;
      }
      this.lastId += 1n;
      const message = this.core.apply.inserted(created, this.lastId);
      this.#write(now, message);
      out.push(message);
    }
    return out;
  }

  /** Runs a claim (or reap) checked by `validate.claim` (`validate.reap`); returns `plan.claimed`. */
  claim(args, now) {
    const ctx = this.#context(args.queue, now);
    const tokens = Array.from({ length: args.n }, () => randomUUID());
    const claimed = this.core.plan.claim(args, ctx, this.#queue(args.queue, ...LIVE), tokens);
    for (const change of claimed.changes) {
      if (change.tag === "put") this.messages.set(change.val.message.id, change.val);
      else this.messages.delete(change.val);
    }
    if (claimed.row !== undefined) this.rows.set(args.queue, claimed.row);
    this.#died(claimed.dead);
    return claimed;
  }

  claimMany(queue, n, leaseMs, policy, sample, now) {
    return this.claim(this.core.validate.claim(queue, n, leaseMs, policy, sample, this.limits), now).taken;
  }

  reap(queue, policy, sample, now) {
    return this.claim(this.core.validate.reap(queue, policy, sample), now).reaped;
  }

  /** One message's step inside a write: read, ask, write. */
  #update(step, args, now) {
    const ctx = this.#context(args.queue, now);
    const message = step(args, this.#found(args.id), ctx);
    this.#write(now, message);
    return message;
  }

  succeed(queue, id, leaseToken, now) {
    return this.#update(this.core.apply.succeed, this.core.validate.succeed(queue, id, leaseToken), now);
  }

  fail(queue, id, error, leaseToken, retryable, retryInMs, policy, sample, now) {
    const args = this.core.validate.fail(queue, id, error, leaseToken, retryable, retryInMs, policy, sample);
    const message = this.#update(this.core.apply.fail, args, now);
    this.#died(this.core.apply.dead([message]));
    return message;
  }

  extend(queue, id, leaseToken, leaseMs, now) {
    return this.#update(this.core.apply.extend, this.core.validate.extend(queue, id, leaseToken, leaseMs, this.limits), now);
  }

  replay(queue, id, expiresInMs, now) {
    return this.#update(this.core.apply.replay, this.core.validate.replay(queue, id, expiresInMs), now);
  }

  /** Runs `apply` on the ids of the messages of `queue` (in `statuses` when given) that `selects` takes, in the component's batches. */
  #inBatches(queue, statuses, limit, selects, apply) {
    const batches = new this.core.plan.Batches(limit);
    try {
      for (let selection = batches.next(); selection !== undefined; selection = batches.next()) {
        const [after, room] = selection;
        const candidates = this.#queue(queue, ...statuses).filter((s) => s.message.id > after);
        const ids = candidates.map((s) => s.message).filter(selects).slice(0, room).map((m) => m.id);
        batches.record(BigInt64Array.from(ids), ids.length === 0 ? 0n : BigInt(apply(ids)));
      }
      return batches.done();
    } finally {
      batches[Symbol.dispose]();
    }
  }

  /** A bulk action (`bulk-action`: `replay`, `delete`, `retry-now`): its selection at `now`, then each batch written in its own transaction, or, on a dry run, counted at `now` with the queue's row as it is. */
  bulk(action, queue, filters, limit, dryRun, now) {
    const { apply } = this.core;
    const args = this.core.validate.bulk(action, queue, filters, limit, dryRun, now);
    const dryCtx = args.dryRun ? this.#context(args.queue, now) : undefined;
    const found = (ids) => ids.map((id) => this.#found(id)).filter((m) => m !== undefined);
    const count = (ids) => found(ids).filter((m) => apply.bulkTouches(args, m, dryCtx)).length;
    const write = (ids) => {
      const ctx = this.#context(args.queue, now);
      if (args.action === "delete") {
        const doomed = found(ids).filter((m) => apply.bulkDeletes(args, m, now));
        for (const m of doomed) this.messages.delete(m.id);
        return doomed.length;
      }
      const written = found(ids).map((m) => apply.bulkStep(args, m, ctx)).filter((m) => m !== undefined);
      for (const message of written) this.#write(now, message);
      return written.length;
    };
    return this.#inBatches(args.queue, [], args.limit, (m) => apply.bulkSelects(args, m, now), dryCtx === undefined ? write : count);
  }

  /** `move`: the message read with whether `toQueue` holds its idempotency key, moved and written there. */
  move(queue, id, toQueue, now) {
    const args = this.core.validate.move(queue, id, toQueue);
    return this.#update((a, found, ctx) => this.core.apply.move(a, found, ctx, this.#taken(args.toQueue, found)), args, now);
  }

  /** `move_all`: its selection at `now`, then each batch moved in its own transaction, or, on a dry run, counted at `now` with the queue's row as it is (a message whose key the target holds is skipped either way). */
  moveAll(queue, toQueue, filters, limit, dryRun, now) {
    const { apply } = this.core;
    const args = this.core.validate.moveAll(queue, toQueue, filters, limit, dryRun, now);
    const { bulk } = args;
    const dryCtx = bulk.dryRun ? this.#context(bulk.queue, now) : undefined;
    const move = (ids) => {
      const ctx = dryCtx ?? this.#context(bulk.queue, now);
      const found = ids.map((id) => this.#found(id)).filter((m) => m !== undefined);
      const moved = found.map((m) => apply.moveAllStep(args, m, ctx, this.#taken(args.toQueue, m))).filter((m) => m !== undefined);
      if (dryCtx === undefined) for (const message of moved) this.#write(now, message);
      return moved.length;
    };
    return this.#inBatches(bulk.queue, [], bulk.limit, (m) => apply.bulkSelects(bulk, m, now), move);
  }

  retryNow(queue, id, now) {
    return this.#update(this.core.apply.retryNow, this.core.validate.message(queue, id), now);
  }

  purge(queue, status, olderThanMs, now) {
    const args = this.core.validate.purge(queue, status, olderThanMs, now);
    const remove = (ids) => {
      const found = ids.map((id) => this.#found(id)).filter((m) => m !== undefined);
      const doomed = found.filter((m) => this.core.apply.purgeSelects(args, m));
      for (const m of doomed) this.messages.delete(m.id);
      return doomed.length;
    };
    return this.#inBatches(args.queue, [args.status], 2n ** 64n - 1n, (m) => this.core.apply.purgeSelects(args, m), remove);
  }

  delete(queue, id) {
    const args = this.core.validate.message(queue, id);
    const message = this.core.apply.delete(args, this.#found(args.id));
    this.messages.delete(message.id);
    return message;
  }

  get(queue, id) {
    const args = this.core.validate.message(queue, id);
    return this.core.apply.found(args, this.#found(args.id));
  }

  /** One read of `list` (a `list-query`): the messages of a queue (of one status when set), ids above `afterId`, in id order, at most `limit`. */
  #read(query) {
    const statuses = query.status === undefined ? [] : [query.status];
    const found = this.#queue(query.queue, ...statuses).filter((s) => query.afterId === undefined || s.message.id > query.afterId);
    return found.slice(0, query.limit).map((s) => s.message);
  }

  /** A page (`page`) of the messages the filters select: the reads the component's `scan` asks for. */
  listMessages(queue, filters, limit, afterId, now) {
    const args = this.core.validate.list(queue, filters, limit, afterId, now);
    const scan = new this.core.plan.Scan(args, now);
    try {
      for (let query = scan.next(); query !== undefined; query = scan.next()) scan.feed(this.#read(query));
    } catch (err) {
      scan[Symbol.dispose]();
      throw err;
    }
    return this.core.plan.Scan.finish(scan);
  }

  stats(queue, now) {
    const name = this.core.validate.queueAt(queue, now);
    return this.core.plan.queueStats(name, this.#queue(name), this.rows.get(name), now);
  }

  queues(now) {
    this.core.validate.clock(now);
    const names = new Set([...this.messages.values()].map((s) => s.message.queue));
    for (const name of this.rows.keys()) names.add(name);
    // By UTF-8 bytes, as the other stores list them.
    const encoder = new TextEncoder();
    const sorted = [...names].sort((a, b) => Buffer.compare(encoder.encode(a), encoder.encode(b)));
    return sorted.map((name) => this.core.plan.queueStats(name, this.#queue(name), this.rows.get(name), now));
  }

  nextDueAt(queue, now) {
    const name = this.core.validate.queueAt(queue, now);
    return this.core.plan.nextDueAt(this.#queue(name), now);
  }

  settings(queue) {
    return this.core.apply.storedSettings(this.rows.get(this.core.validate.queueName(queue)));
  }

  setSettings(queue, backoff, maxRetries, leaseMs, expiresInMs, onExpiry) {
    const args = this.core.validate.settings(queue, backoff, maxRetries, leaseMs, expiresInMs, onExpiry);
    const row = this.core.apply.settings(args, this.rows.get(args.queue), this.#holds(args.queue));
    return this.#row(args.queue, row).settings;
  }

  pause(queue, paused) {
    const name = this.core.validate.queueName(queue);
    return this.#row(name, this.core.apply.pause(name, this.rows.get(name), paused, this.#holds(name))).settings;
  }
}
