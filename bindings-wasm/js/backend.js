// The backend of `Database` and `Queue` (api.js) in browsers and workers: the IndexedDB store
// (store/) driven with the WebAssembly core's answers (core.js). Each call has the core check its
// arguments into a plan, runs the plan through the store in one transaction (or, for `replayAll`
// and `purge`, one per batch), and resolves to what the plan says once committed. Nothing here
// decides anything about a message.
//
// The interface api.js uses, which the Node backend over SQLite files (node/backend.js)
// implements the same way, all errors being DeadLetterErrors:
//   openDatabase(name, indexedDB, leaseMs, maxPayloadBytes, clock, random) -> Promise<handle>
//   handle.name; handle.queue(name, initialMs, multiplier, capMs, jitter, custom) -> queue handle
//     (throws; `custom`: the handle has a policy of its own); handle.queues() -> Promise<stats[]>;
//     handle.close()
//   queue handle: enqueue(payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs),
//     enqueueMany(rows) (a row: those six), claim(leaseMs), claimMany(n, leaseMs), reap()
//     (these three: { value, dead }), succeed(id, leaseToken), fail(id, error, leaseToken,
//     retryable, retryInMs) ({ value, dead }), extend(id, leaseToken, leaseMs), replay(id,
//     expiresInMs), retryNow(id), move(id, toQueue), moveAll(toQueue, filters, limit,
//     dryRun), replayAll / deleteAll / retryNowAll(filters, limit, dryRun)
//     (`filters`: the values of the core's FilterArgs::NAMES in that order, instants in ms),
//     purge(status, olderThanMs), delete(id), stats(), nextDueAt(), get(id), list(filters,
//     limit, afterId) ({ messages, nextAfterId }),
//     settings(), setSettings(backoff, maxRetries, leaseMs, expiresInMs, onExpiry) (`backoff`:
//     null or [initialMs, multiplier, capMs, jitter]), pause(), resume() (these three: the
//     settings), workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs) -> {
//     concurrency, leaseMs, shutdownTimeoutMs, idleWaitMs(nextDueAt), free() }
//   backoffMs(retryCount), errorCodes(), failureText(kind, message)
// A call that may kill or reschedule messages warns once per queue handle (console.warn, as
// Python's warnings.warn) when the handle's own backoff policy was applied instead of a
// different one stored with the queue.
//
// The clock: a write reads it inside its transaction, once the transaction's first request (the
// queue's row, or the message for a step that reads no row) completed (see store/store.js); a read (stats, nextDueAt, queues), purge and the
// worker loop's idle wait read it when the call starts. The random source is read when a call
// starts. A user's `clock` or `random` is called synchronously; what it throws rejects the call
// unchanged.

import { WorkerPlan, dueAt, openRules, settingsOf, statsPlan } from "./core.js";
import { DeadLetterError, Thrown } from "./errors.js";
import { IdbStore } from "./store/store.js";

export { backoffMs, errorCodes, failureText } from "./core.js";

/**
 * Code point order, which is UTF-8's byte order (the order of queue names in every store), for
 * names IndexedDB gives in UTF-16 code unit order (they differ where a surrogate pair meets a
 * character from U+E000 on).
 */
function byCodePoint(a, b) {
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    const [x, y] = [a.codePointAt(i), b.codePointAt(j)];
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}

/** The `value` of an outcome `{ value, dead }`. */
function value(outcome) {
  return outcome.value;
}

/** Opens the queue database `name` (an IndexedDB database of `indexedDB`, default the global one). */
export async function openDatabase(name, indexedDB, leaseMs, maxPayloadBytes, clock, random) {
  const rules = openRules(name, indexedDB, leaseMs, maxPayloadBytes, clock, random);
  const factory = indexedDB ?? globalThis.indexedDB;
  if (factory === null || typeof factory !== "object") {
    rules.free();
    throw new DeadLetterError("store error: no indexedDB in this environment: pass options.indexedDB (an IDBFactory)", { code: "store" });
  }
  let store;
  try {
    store = await IdbStore.open(factory, rules.name);
  } catch (err) {
    rules.free();
    throw err;
  }
  return new Handle(rules, store, clock, random);
}

/** Calls `fn` (the user's clock or random source); what it throws, boxed (see errors.js). */
function read(fn) {
  try {
    return fn();
  } catch (err) {
    throw new Thrown(err);
  }
}

/** A policy in the package's terms, for the warning of `killing`. */
function describe(policy) {
  const { initialMs, multiplier, capMs, jitter } = policy;
  return `{ initialMs: ${initialMs}, multiplier: ${multiplier}, capMs: ${capMs}, jitter: ${JSON.stringify(jitter)} }`;
}

/** What a database's queue handles share: its store, rules, clock and random source. */
class Context {
  constructor(rules, store, clock, random) {
    this.rules = rules;
    this.store = store;
    // What the clock says (judged by the core): read by the store inside a write's transaction.
    this.clock = typeof clock === "function" ? () => read(clock) : Date.now;
    this.random = typeof random === "function" ? () => read(random) : Math.random;
  }

  /** Throws the `store` error of a closed database (saying why it closed). */
  open() {
    if (this.store.closed) throw this.store.refusal();
  }

  /** What the clock says, once the database is known open (the calls that read at their start). */
  now() {
    this.open();
    return this.clock();
  }
}

/** One open database. */
class Handle {
  #ctx;

  constructor(rules, store, clock, random) {
    this.#ctx = new Context(rules, store, clock, random);
  }

  get name() {
    return this.#ctx.rules.name;
  }

  /** Whether the store closed for good (`close()`, or another page's upgrade or delete). */
  get closed() {
    return this.#ctx.store.closed;
  }

  queue(name, initialMs, multiplier, capMs, jitter, custom) {
    return new QueueHandle(this.#ctx, this.#ctx.rules.queue(name, initialMs, multiplier, capMs, jitter, custom));
  }

  async queues() {
    const { store, rules } = this.#ctx;
    const now = rules.queues(this.#ctx.now());
    const all = [];
    for (const name of (await store.queues()).sort(byCodePoint)) all.push(await store.counts(name, statsPlan(name, now)));
    return all;
  }

  close() {
    this.#ctx.store.close();
  }
}

/** One queue of an open database. */
class QueueHandle {
  #ctx;
  #rules;
  /**
   * The queue's name, read from the rules once (issue 20: each read of the getter decoded it
   * from the module's memory again, three times a cycle).
   */
  #name;
  /** Whether this handle warned that its policy overrode a different stored one (once). */
  #warned = false;

  constructor(ctx, rules) {
    this.#ctx = ctx;
    this.#rules = rules;
    this.#name = rules.name;
  }

  /**
   * `{ value, dead }` of a plan's outcome (the outcome itself: `overridden` is left on it); its
   * `overridden` (the handle's own backoff was applied instead of a different one stored with
   * the queue, by Python's `set_settings` or another process, say) goes to `console.warn`, the
   * first time on this handle only.
   */
  #killing(outcome) {
    const overridden = outcome.overridden;
    if (overridden !== undefined && !this.#warned) {
      this.#warned = true;
      console.warn(
        `deadletter: queue ${JSON.stringify(this.#name)}: this handle's backoff ${describe(this.#rules.policy)} is applied ` +
          `instead of the one stored with the queue, ${describe(overridden)} (a handle's own backoff wins; give the handle none, ` +
          "or store the same with setSettings, to agree with the other processes)",
      );
    }
    return outcome;
  }

  // The calls of the cycle (enqueue, claim, ack) add no promise of their own to the store's
  // (issue 20: each layer was a promise and a microtask on every call's way back): they throw
  // what they refuse at once (api.js's `#run` makes that a rejection), and the plan's `finish`
  // answers what the call resolves to.

  /**
   * Runs the EnqueuePlan `make()` makes (once the database is known open): the store makes and
   * finishes it inside its transaction (a refused call aborts it and writes nothing).
   */
  #insert(make) {
    this.#ctx.open();
    return this.#ctx.store.insert(this.#name, make, this.#ctx.clock);
  }

  /** Runs the ClaimPlan `make()` makes, as `#insert`; `{ value, dead }`. */
  #claim(make) {
    this.#ctx.open();
    return this.#ctx.store.claim(this.#name, make, this.#ctx.clock, (outcome) => this.#killing(outcome));
  }

  /**
   * Runs the UpdatePlan `make()` makes; `{ value, dead }`, or (`valueOnly`) the value alone.
   * `id`: the id a call whose step never reads the queue's row (the core's `reads_queue`: succeed,
   * retryNow) was given; when it is a number, the store reads that message before the plan is
   * made (see `IdbStore.update`).
   */
  #update(make, valueOnly = true, id = undefined) {
    this.#ctx.open();
    const answer = valueOnly ? value : (outcome) => this.#killing(outcome);
    return this.#ctx.store.update(this.#name, make, this.#ctx.clock, answer, typeof id === "number" ? id : undefined);
  }

  async #row(make) {
    this.#ctx.open();
    const plan = make();
    await this.#ctx.store.writeRow(this.#name, plan);
    return plan.finish();
  }

  /** The batches of a BulkPlan, `write(ids)` resolving to how many it applied; resolves to the total. */
  async #bulk(plan, write) {
    try {
      for (let next = plan.next(); next !== undefined; ) {
        const ids = await this.#ctx.store.select(plan, ...next);
        next = plan.record(ids, ids.length === 0 ? 0 : await write(ids));
      }
      return plan.done;
    } finally {
      plan.free();
    }
  }

  /**
   * `replayAll` (0), `deleteAll` (1), `retryNowAll` (2), `moveAll` (3, to `toQueue`): a
   * BulkPlan whose batches write its steps or delete; a dry run's batches read the same in
   * read-only transactions and count what the write would have touched.
   */
  #action(action, filters, limit, dryRun, toQueue) {
    const { store, clock } = this.#ctx;
    const plan = this.#rules.bulk(action, this.#ctx.now(), filters, limit, dryRun, toQueue);
    const [queue, dry] = [this.#name, plan.dry];
    if (plan.writes) return this.#bulk(plan, (ids) => store.stepMany(queue, plan, ids, clock, dry));
    return this.#bulk(plan, async (ids) => (await store.deleteMany(ids, (records) => plan.deletable(records), dry)).length);
  }

  enqueue(payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs) {
    const rows = [[payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs]];
    // Not a batch: the plan's finish answers the message itself.
    return this.#insert(() => this.#rules.enqueue(rows, false));
  }

  enqueueMany(rows) {
    return this.#insert(() => this.#rules.enqueue(rows, true));
  }

  claim(leaseMs) {
    // Single: the plan's outcome holds the message, or null, not an array.
    return this.#claim(() => this.#rules.claim(this.#ctx.random(), 1, leaseMs, true));
  }

  claimMany(n, leaseMs) {
    return this.#claim(() => this.#rules.claim(this.#ctx.random(), n, leaseMs, false));
  }

  reap() {
    return this.#claim(() => this.#rules.reap(this.#ctx.random()));
  }

  succeed(id, leaseToken) {
    return this.#update(() => this.#rules.update(0, id, leaseToken), true, id);
  }

  fail(id, error, leaseToken, retryable, retryInMs) {
    return this.#update(() => this.#rules.fail(this.#ctx.random(), id, error, leaseToken, retryable, retryInMs), false);
  }

  extend(id, leaseToken, leaseMs) {
    return this.#update(() => this.#rules.update(1, id, leaseToken, leaseMs));
  }

  replay(id, expiresInMs) {
    return this.#update(() => this.#rules.update(2, id, expiresInMs));
  }

  retryNow(id) {
    return this.#update(() => this.#rules.update(3, id), true, id);
  }

  move(id, toQueue) {
    return this.#update(() => this.#rules.update(4, id, toQueue));
  }

  moveAll(toQueue, filters, limit, dryRun) {
    return this.#action(3, filters, limit, dryRun, toQueue);
  }

  replayAll(filters, limit, dryRun) {
    return this.#action(0, filters, limit, dryRun);
  }

  deleteAll(filters, limit, dryRun) {
    return this.#action(1, filters, limit, dryRun);
  }

  retryNowAll(filters, limit, dryRun) {
    return this.#action(2, filters, limit, dryRun);
  }

  purge(status, olderThanMs) {
    const plan = this.#rules.purge(this.#ctx.now(), status, olderThanMs);
    return this.#bulk(plan, async (ids) => (await this.#ctx.store.deleteMany(ids, (records) => plan.deletable(records))).length);
  }

  async delete(id) {
    this.#ctx.open();
    const plan = this.#rules.message(id);
    try {
      const deleted = await this.#ctx.store.deleteMany([plan.id], (records) => plan.deletable(records));
      return plan.found(deleted[0]);
    } finally {
      plan.free();
    }
  }

  async get(id) {
    this.#ctx.open();
    const plan = this.#rules.message(id);
    try {
      return plan.found(await this.#ctx.store.get(plan.id));
    } finally {
      plan.free();
    }
  }

  stats() {
    return this.#ctx.store.counts(this.#name, this.#rules.stats(this.#ctx.now()));
  }

  async nextDueAt() {
    const range = this.#rules.nextDueAt(this.#ctx.now());
    return dueAt(await this.#ctx.store.firstKey("delayed", range));
  }

  async list(filters, limit, afterId) {
    this.#ctx.open();
    const plan = this.#rules.list(filters, limit, afterId, this.#ctx.clock);
    try {
      await this.#ctx.store.scan(plan);
      const [messages, nextAfterId] = plan.finish();
      return { messages, nextAfterId };
    } catch (err) {
      plan.free();
      throw err;
    }
  }

  async settings() {
    this.#ctx.open();
    const name = this.#name;
    return settingsOf(name, await this.#ctx.store.row(name));
  }

  setSettings(backoff, maxRetries, leaseMs, expiresInMs, onExpiry) {
    const [initialMs, multiplier, capMs, jitter] = backoff ?? [];
    return this.#row(() =>
      this.#rules.setSettings(backoff != null, initialMs, multiplier, capMs, jitter, maxRetries, leaseMs, expiresInMs, onExpiry),
    );
  }

  pause() {
    return this.#row(() => this.#rules.pause(true));
  }

  resume() {
    return this.#row(() => this.#rules.pause(false));
  }

  workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs) {
    const ctx = this.#ctx;
    const plan = new WorkerPlan(ctx.rules.defaultLeaseMs, concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs);
    return {
      concurrency: plan.concurrency,
      leaseMs: plan.leaseMs,
      shutdownTimeoutMs: plan.shutdownTimeoutMs,
      idleWaitMs: (nextDueAt) => plan.idleWaitMs(ctx.now(), nextDueAt),
      free: () => plan.free(),
    };
  }
}
