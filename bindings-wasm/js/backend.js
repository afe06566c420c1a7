// The backend of `Database` and `Queue` (index.js) in browsers and workers: the IndexedDB store
// (store/) driven with the WebAssembly core's answers (core.js). Each call reads the clock (and
// the random source), has the core check its arguments into a plan, runs the plan through the
// store in one transaction (or, for `replayAll` and `purge`, one per batch), and resolves to what
// the plan says once committed. Nothing here decides anything about a message.
//
// The interface index.js uses, which another backend implements the same way (a Node backend
// over the SQLite store, issue 19), all errors being DeadLetterErrors:
//   openDatabase(name, indexedDB, leaseMs, maxPayloadBytes, clock, random) -> Promise<handle>
//   handle.name; handle.queue(name, initialMs, multiplier, capMs, jitter) -> queue handle (throws);
//   handle.queues() -> Promise<stats[]>; handle.close()
//   queue handle: enqueue(payload, maxRetries, idempotencyKey, delayMs), enqueueMany(rows),
//     claim(leaseMs), claimMany(n, leaseMs), reap() (these three: { value, dead }),
//     succeed(id, leaseToken), fail(id, error, leaseToken, retryable) ({ value, dead }),
//     extend(id, leaseToken, leaseMs), replay(id), replayAll(errorContains, deadBefore,
//     deadAfter, limit), purge(status, olderThanMs), delete(id), stats(), nextDueAt(), get(id),
//     list(status, limit, afterId), workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs,
//     leaseMs) -> { concurrency, leaseMs, heartbeatMs, shutdownTimeoutMs, idleWaitMs(nextDueAt),
//     free() }
//   backoffMs(retryCount), errorCodes(), failureText(kind, message)
// A user's `clock` or `random` is called synchronously, at the start of a call, before any
// transaction opens.

import { WorkerPlan, dueAt, messagesOf, openRules, statsPlan } from "./core.js";
import { DeadLetterError } from "./errors.js";
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

function closed() {
  return new DeadLetterError("store error: the database is closed", { code: "store" });
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

/** What a database's queue handles share: its store, rules, clock and random source. */
class Context {
  constructor(rules, store, clock, random) {
    this.rules = rules;
    this.store = store;
    this.clock = typeof clock === "function" ? () => clock() : Date.now;
    this.random = typeof random === "function" ? () => random() : Math.random;
  }

  /** Throws the `store` error of a closed database. */
  open() {
    if (this.store.closed) throw closed();
  }

  /** What the clock says (judged by the core), once the database is known open. */
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

  queue(name, initialMs, multiplier, capMs, jitter) {
    return new QueueHandle(this.#ctx, this.#ctx.rules.queue(name, initialMs, multiplier, capMs, jitter));
  }

  async queues() {
    const { store, rules } = this.#ctx;
    const now = rules.queues(this.#ctx.now());
    const all = [];
    for (const name of (await store.queues()).sort(byCodePoint)) all.push(await store.counts(statsPlan(name, now)));
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

  constructor(ctx, rules) {
    this.#ctx = ctx;
    this.#rules = rules;
  }

  async #insert(plan) {
    const results = await this.#ctx.store.insert(plan.records(), plan.keys());
    return plan.finish(results);
  }

  async #claim(plan) {
    await this.#ctx.store.claim(plan);
    return plan.finish();
  }

  async #update(plan) {
    await this.#ctx.store.update(plan.id, (record) => plan.step(record));
    return plan.finish();
  }

  /** The batches of a BulkPlan, `write(ids)` resolving to how many it applied; resolves to the total. */
  async #bulk(plan, write) {
    try {
      for (let next = plan.next(); next !== undefined; next = plan.next()) {
        const [range, room] = next;
        const ids = await this.#ctx.store.select(plan, range, room);
        plan.record(ids, ids.length === 0 ? 0 : await write(ids));
      }
      return plan.done;
    } finally {
      plan.free();
    }
  }

  enqueue(payload, maxRetries, idempotencyKey, delayMs) {
    const plan = this.#rules.enqueue(this.#ctx.now(), [[payload, maxRetries, idempotencyKey, delayMs]], false);
    return this.#insert(plan).then((messages) => messages[0]);
  }

  enqueueMany(rows) {
    return this.#insert(this.#rules.enqueue(this.#ctx.now(), rows, true));
  }

  claim(leaseMs) {
    const plan = this.#rules.claim(this.#ctx.now(), this.#ctx.random(), 1, leaseMs);
    return this.#claim(plan).then(({ value, dead }) => ({ value: value[0] ?? null, dead }));
  }

  claimMany(n, leaseMs) {
    return this.#claim(this.#rules.claim(this.#ctx.now(), this.#ctx.random(), n, leaseMs));
  }

  reap() {
    return this.#claim(this.#rules.reap(this.#ctx.now(), this.#ctx.random()));
  }

  succeed(id, leaseToken) {
    return this.#update(this.#rules.succeed(this.#ctx.now(), id, leaseToken)).then((o) => o.value);
  }

  fail(id, error, leaseToken, retryable) {
    return this.#update(this.#rules.fail(this.#ctx.now(), this.#ctx.random(), id, error, leaseToken, retryable));
  }

  extend(id, leaseToken, leaseMs) {
    return this.#update(this.#rules.extend(this.#ctx.now(), id, leaseToken, leaseMs)).then((o) => o.value);
  }

  replay(id) {
    return this.#update(this.#rules.replay(this.#ctx.now(), id)).then((o) => o.value);
  }

  replayAll(errorContains, deadBefore, deadAfter, limit) {
    const plan = this.#rules.replayAll(this.#ctx.now(), errorContains, deadBefore, deadAfter, limit);
    return this.#bulk(plan, (ids) => this.#ctx.store.updateMany(ids, (records) => plan.step(records)));
  }

  purge(status, olderThanMs) {
    const plan = this.#rules.purge(this.#ctx.now(), status, olderThanMs);
    return this.#bulk(plan, async (ids) => (await this.#ctx.store.deleteMany(ids, (records) => plan.step(records))).length);
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
    return this.#ctx.store.counts(this.#rules.stats(this.#ctx.now()));
  }

  async nextDueAt() {
    const range = this.#rules.nextDueAt(this.#ctx.now());
    return dueAt(await this.#ctx.store.firstKey("delayed", range));
  }

  async list(status, limit, afterId) {
    this.#ctx.open();
    const plan = this.#rules.list(status, limit, afterId);
    return messagesOf(await this.#ctx.store.list(plan.queue, plan.range, plan.limit, plan.afterId));
  }

  workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs) {
    const ctx = this.#ctx;
    const plan = new WorkerPlan(ctx.rules.defaultLeaseMs, concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs);
    return {
      concurrency: plan.concurrency,
      leaseMs: plan.leaseMs,
      heartbeatMs: plan.heartbeatMs,
      shutdownTimeoutMs: plan.shutdownTimeoutMs,
      idleWaitMs: (nextDueAt) => plan.idleWaitMs(ctx.now(), nextDueAt),
      free: () => plan.free(),
    };
  }
}
