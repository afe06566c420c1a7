// The public shape of the package `deadletter`: `open`, `Database`, `Queue` over the backend's
// handles (backend.js: the IndexedDB store of store/ driven with the WebAssembly core's answers;
// in Node, node/backend.js: SQLite files through the native module, see platform.js), and the
// outbox of failed requests (outbox.js). index.js (pages, workers), node/index.js (Node) and
// service-worker.js export it. Types: index.d.ts.
import { backoffMs as coreBackoffMs, failureText as coreFailureText, openDatabase } from "./backend.js";
import { NODE, load } from "./core.js";
import { DeadLetterError, PermanentError, Thrown } from "./errors.js";
import { fileBackend } from "./platform.js";
import { work } from "./worker.js";

export { DeadLetterError, PermanentError };

/**
 * Any failure as a DeadLetterError (the WebAssembly side already rejects with one); what a
 * user's clock or random source threw, boxed by the backend that read it during the call
 * (errors.js's Thrown), unchanged.
 */
function asDeadLetterError(err) {
  if (err instanceof DeadLetterError) return err;
  if (err instanceof Thrown) return err.err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new DeadLetterError(`store error: ${message}`, { code: "store" });
}

/** What `fn` (a call into the WebAssembly) returns; a throw of the user's clock or random source unchanged, any other failure as a DeadLetterError. */
function direct(fn) {
  try {
    return fn();
  } catch (err) {
    throw asDeadLetterError(err);
  }
}

/** Like `direct` for a call that returns a promise. */
async function call(fn) {
  try {
    return await fn();
  } catch (err) {
    throw asDeadLetterError(err);
  }
}

function describe(value) {
  if (Array.isArray(value)) return "an array";
  if (value === null || value === undefined) return String(value);
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * `err` with its "got null" said "got undefined" where the argument so named was undefined (or
 * left out): the core has one null, JavaScript two (issue 19: `q.get(undefined)` read "got
 * null"). `given`: the call's required arguments by field name, with `options` (what `options`
 * read, for a required option such as `extend`'s `leaseToken`; one it does not hold was left
 * out) and `items` (the rows of
 * `enqueueMany`, whose errors have an index); undefined when the call has none.
 */
function undefinedNamed(err, given) {
  if (given === undefined || err.code !== "validation_failed") return err;
  const { items, options } = given;
  const wasUndefined = (e) => {
    if (!e.message.endsWith(", got null")) return false;
    if (e.index !== undefined) return items !== undefined && e.field === "payload" && items[e.index][0] === undefined;
    if (Object.hasOwn(given, e.field)) return given[e.field] === undefined;
    return options !== undefined && options[e.field] === undefined;
  };
  if (!err.errors.some(wasUndefined)) return err;
  return validationError(err.errors.map((e) => (wasUndefined(e) ? { ...e, message: `${e.message.slice(0, -"null".length)}undefined` } : e)));
}

function validationError(errors) {
  const where = (e) => (e.index === undefined ? e.field : `items[${e.index}].${e.field}`);
  const text = errors.map((e) => `${where(e)}: ${e.message}`).join("; ");
  return new DeadLetterError(`validation failed: ${text}`, { code: "validation_failed", errors });
}

/**
 * `value`, an id or a count (argument or option `field`); a number above
 * `Number.MAX_SAFE_INTEGER` is refused as `out_of_range`: from 2 ** 53 on, numbers skip integers
 * (2 ** 53 + 1 is 2 ** 53), so `get(2 ** 53 + 1)` asked for another message than written (tester
 * T7). The core judges the rest (its range goes on to 2 ** 63 - 1, for Python's exact integers).
 */
function safe(field, value) {
  if (typeof value === "number" && value > Number.MAX_SAFE_INTEGER && value !== Infinity) {
    const message = "must be at most 9007199254740991 (Number.MAX_SAFE_INTEGER)";
    throw validationError([{ field, code: "out_of_range", message }]);
  }
  return value;
}

/** Whether `value` is an object with fields (not an array, a Date, a Map...). */
function isRecord(value) {
  return Object.prototype.toString.call(value) === "[object Object]";
}

/**
 * The keys among `keys` (an object's own enumerable ones) that are not in `known`, as `unknown`
 * field errors (the message is made only for them: `options` reads every options object, issue 19).
 */
function unknownKeys(keys, known, index) {
  keys = keys.filter((key) => !known.includes(key));
  if (keys.length === 0) return keys;
  const message = `unknown option; expected one of ${known.join(", ")}`;
  return keys.map((field) => (index === undefined ? { field, code: "unknown", message } : { field, code: "unknown", message, index }));
}

/**
 * What `read` returns, `read` being a read of the user's own objects (options, items): what a
 * getter or a Proxy throws there is the user's, boxed (errors.js's Thrown) so that the call
 * rejects with it unchanged, as with a throwing clock (issue 19: it read as a `store` error).
 */
function users(read) {
  try {
    return read();
  } catch (err) {
    throw new Thrown(err);
  }
}

/**
 * The values of the `known` keys of `value` that are among `keys`, its own enumerable keys, each
 * read once; undefined for the others: an options object is what `JSON.stringify`,
 * `structuredClone` and `{ ...value }` see, so a key inherited from a prototype is neither read
 * nor refused (left by session 6: `Object.create({ durability: "normal" })` set the durability,
 * while an inherited unknown key was not refused).
 */
function ownValues(value, keys, known) {
  const read = {};
  for (const key of known) read[key] = keys.includes(key) ? value[key] : undefined;
  return read;
}

/**
 * The options argument, as a plain object of the `known` keys (`ownValues`), each read once (a
 * getter runs once; what it throws rejects the call unchanged: `users`): undefined/null mean
 * none; anything but an object is rejected (as field `name`), and so is an object with an own
 * enumerable key that is not one of `known` (a typo such as `leaseMS` would otherwise be ignored
 * silently), before anything else is read, checked or done.
 */
function options(value, known, name = "options") {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw validationError([{ field: name, code: "type", message: `must be an object, got ${describe(value)}` }]);
  }
  let read, unknown;
  try {
    const keys = Object.keys(value);
    unknown = unknownKeys(keys, known);
    if (unknown.length === 0) read = ownValues(value, keys, known);
  } catch (err) {
    throw new Thrown(err); // see `users`
  }
  if (unknown.length > 0) throw validationError(unknown);
  return read;
}

// The keys each options object may have.
const OPEN = ["indexedDB", "clock", "leaseMs", "maxPayloadBytes", "random", "durability"];
const QUEUE = ["backoff"];
const BACKOFF = ["initialMs", "multiplier", "capMs", "jitter"];
const ENQUEUE = ["maxRetries", "idempotencyKey", "delayMs", "group", "expiresInMs"];
const ITEM = ["payload", ...ENQUEUE];
const CLAIM = ["leaseMs"];
const SUCCEED = ["leaseToken"];
const FAIL = ["leaseToken", "retryable", "retryInMs"];
const REPLAY = ["expiresInMs"];
const SETTINGS = ["backoff", "maxRetries", "leaseMs", "expiresInMs", "onExpiry"];
const EXTEND = ["leaseToken", "leaseMs"];
/**
 * The filters of `list` and of the bulk actions: the core's names (`FilterArgs::NAMES`, the HTTP
 * API's and Python's keywords) camelCased, in the core's order, which is how they cross to the
 * backends (an array); the last six are instants.
 */
const FILTERS = ["status", "delayed", "payloadContains", "errorContains", "group", "idempotencyKey",
  "createdAfter", "createdBefore", "updatedAfter", "updatedBefore", "deadAfter", "deadBefore"];
const FIRST_INSTANT = FILTERS.indexOf("createdAfter");
const LIST = [...FILTERS, "limit", "afterId"];
const BULK = [...FILTERS, "limit", "dryRun"];
const PURGE = ["status", "olderThanMs"];
const PROCESS = ["concurrency", "pollIntervalMs", "shutdownTimeoutMs", "leaseMs", "signal"];

/**
 * The filters of the options `o` (read by `options`) as the backends take them: an array in
 * `FILTERS` order, an instant given as a valid `Date` as its milliseconds since the epoch; every
 * value else as it is, for the core to judge (an invalid `Date` is "an invalid Date" to the
 * backends, not the NaN of its time, issue 19).
 */
function filters(o) {
  return FILTERS.map((key, i) => {
    const value = o[key];
    const ms = i >= FIRST_INSTANT && value instanceof Date ? value.getTime() : NaN;
    return Number.isNaN(ms) ? value : ms;
  });
}

/** One named queue of a Database, with its backoff policy. Get it with `db.queue(name, options)`. */
export class Queue {
  #handle;
  #name;
  #announce;
  #run;
  #closed;

  /** @internal */
  constructor(handle, name, announce, run, closed) {
    this.#handle = handle;
    this.#name = name;
    this.#announce = announce;
    this.#run = run;
    this.#closed = closed;
  }

  /** The queue name. */
  get name() {
    return this.#name;
  }

  /**
   * Runs a call that resolves to `{ value, dead }`: reports `dead` (while the call still counts
   * as running, so that a `close()` meanwhile keeps the channel open for it), resolves to `value`.
   */
  #killing(run, given) {
    return this.#run(
      () =>
        run().then(({ value, dead }) => {
          this.#announce(dead);
          return value;
        }),
      given,
    );
  }

  enqueue(payload, opts) {
    return this.#run(() => {
      const o = options(opts, ENQUEUE);
      return this.#handle.enqueue(payload, o.maxRetries, o.idempotencyKey, o.delayMs, o.group, o.expiresInMs);
    }, { payload });
  }

  enqueueMany(items) {
    const given = { items: undefined };
    return this.#run(() => {
      if (!Array.isArray(items)) {
        throw validationError([{ field: "items", code: "type", message: `must be an array, got ${describe(items)}` }]);
      }
      const unknown = [];
      const rows = users(() =>
        items.map((item, index) => {
          if (!isRecord(item)) return [item];
          const keys = Object.keys(item);
          unknown.push(...unknownKeys(keys, ITEM, index));
          const o = ownValues(item, keys, ITEM);
          return [o.payload, o.maxRetries, o.idempotencyKey, o.delayMs, o.group, o.expiresInMs];
        }),
      );
      if (unknown.length > 0) throw validationError(unknown);
      given.items = rows;
      return this.#handle.enqueueMany(rows);
    }, given);
  }

  claim(opts) {
    return this.#killing(() => this.#handle.claim(options(opts, CLAIM).leaseMs));
  }

  claimMany(n, opts) {
    return this.#killing(() => this.#handle.claimMany(n, options(opts, CLAIM).leaseMs), { n });
  }

  extend(id, opts) {
    const given = { id, options: undefined };
    return this.#run(() => {
      const o = (given.options = options(opts, EXTEND));
      return this.#handle.extend(safe("id", id), o.leaseToken, o.leaseMs);
    }, given);
  }

  succeed(id, opts) {
    return this.#run(() => this.#handle.succeed(safe("id", id), options(opts, SUCCEED).leaseToken), { id });
  }

  fail(id, error, opts) {
    return this.#killing(() => {
      const o = options(opts, FAIL);
      return this.#handle.fail(safe("id", id), error, o.leaseToken, o.retryable, o.retryInMs);
    }, { id, error });
  }

  reap() {
    return this.#killing(() => this.#handle.reap());
  }

  replay(id, opts) {
    return this.#run(() => this.#handle.replay(safe("id", id), options(opts, REPLAY).expiresInMs), { id });
  }

  replayAll(opts) {
    return this.#bulk("replayAll", opts);
  }

  deleteAll(opts) {
    return this.#bulk("deleteAll", opts);
  }

  retryNowAll(opts) {
    return this.#bulk("retryNowAll", opts);
  }

  /** A bulk action (`replayAll`, `deleteAll`, `retryNowAll`) of the backend, with its options. */
  #bulk(action, opts) {
    return this.#run(() => {
      const o = options(opts, BULK);
      return this.#handle[action](filters(o), safe("limit", o.limit), o.dryRun);
    });
  }

  move(id, toQueue) {
    return this.#run(() => this.#handle.move(safe("id", id), toQueue), { id, toQueue });
  }

  moveAll(toQueue, opts) {
    return this.#run(() => {
      const o = options(opts, BULK);
      return this.#handle.moveAll(toQueue, filters(o), safe("limit", o.limit), o.dryRun);
    }, { toQueue });
  }

  retryNow(id) {
    return this.#run(() => this.#handle.retryNow(safe("id", id)), { id });
  }

  purge(opts) {
    const given = { options: undefined };
    return this.#run(() => {
      const o = (given.options = options(opts, PURGE));
      return this.#handle.purge(o.status, o.olderThanMs);
    }, given);
  }

  delete(id) {
    return this.#run(() => this.#handle.delete(safe("id", id)), { id });
  }

  stats() {
    return this.#run(() => this.#handle.stats());
  }

  nextDueAt() {
    return this.#run(() => this.#handle.nextDueAt());
  }

  get(id) {
    return this.#run(() => this.#handle.get(safe("id", id)), { id });
  }

  settings() {
    return this.#run(() => this.#handle.settings());
  }

  setSettings(opts) {
    return this.#run(() => {
      const o = options(opts, SETTINGS);
      const b = o.backoff == null ? null : options(o.backoff, BACKOFF, "backoff");
      const backoff = b === null ? null : [b.initialMs, b.multiplier, b.capMs, b.jitter];
      return this.#handle.setSettings(backoff, o.maxRetries, o.leaseMs, o.expiresInMs, o.onExpiry);
    });
  }

  pause() {
    return this.#run(() => this.#handle.pause());
  }

  resume() {
    return this.#run(() => this.#handle.resume());
  }

  list(opts) {
    return this.#run(async () => {
      const o = options(opts, LIST);
      const page = await this.#handle.list(filters(o), o.limit, safe("afterId", o.afterId));
      // Not enumerable: the page still equals (deepEqual) and spreads as the plain array it is.
      return Object.defineProperty(page.messages, "nextAfterId", { value: page.nextAfterId });
    });
  }

  /** The worker loop (js/worker.js): runs `handler` on every message until `options.signal` aborts. */
  process(handler, opts) {
    return call(async () => {
      const o = options(opts, PROCESS);
      const rejected = [];
      if (typeof handler !== "function") {
        rejected.push({ field: "handler", code: "type", message: `must be a function, got ${describe(handler)}` });
      }
      let plan = null;
      try {
        plan = this.#handle.workerPlan(o.concurrency, o.pollIntervalMs, o.shutdownTimeoutMs, o.leaseMs);
      } catch (err) {
        if (!(err instanceof DeadLetterError && err.code === "validation_failed")) throw err;
        rejected.push(...err.errors);
      }
      const signal = o.signal ?? undefined;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        rejected.push({ field: "signal", code: "type", message: `must be an AbortSignal, got ${describe(signal)}` });
      }
      if (rejected.length > 0) {
        plan?.free();
        throw validationError(rejected);
      }
      // The call's own lease, else none: each claim then takes the stored one (finding N2).
      return { plan, signal, leaseMs: o.leaseMs ?? undefined };
    }).then(async ({ plan, signal, leaseMs }) => {
      // Not inside `call`: the loop rejects with what its calls rejected with, unchanged.
      try {
        const idleWaitMs = (nextDueAt) => direct(() => plan.idleWaitMs(nextDueAt));
        const closed = this.#closed;
        return await work({ queue: this, handler, plan, leaseMs, idleWaitMs, failureText: helpers().failureText, signal, closed });
      } finally {
        plan.free();
      }
    });
  }
}

/** Calls each callback with each message, in order; a callback that throws is reported only. */
function notify(callbacks, messages) {
  for (const message of messages) {
    for (const callback of [...callbacks]) {
      try {
        callback(message);
      } catch (err) {
        console.error("deadletter: an onDead callback threw", err);
      }
    }
  }
}

/**
 * The Databases of this thread that listen for deaths without a BroadcastChannel, by IndexedDB
 * factory, then database name: a factory and a name are one database.
 */
const LISTENING = new WeakMap();

/** The set of listening Databases of `factory` and `name`. */
function listening(factory, name) {
  let byName = LISTENING.get(factory);
  if (byName === undefined) LISTENING.set(factory, (byName = new Map()));
  let set = byName.get(name);
  if (set === undefined) byName.set(name, (set = new Set()));
  return set;
}

/** An open queue database. Get it with `open(name, options)`. */
export class Database {
  #handle;
  #factory;
  #callbacks = [];
  /** The BroadcastChannel `deadletter:<name>` (made on first use; null where deaths are not shared through one). */
  #channel;
  /** Calls started and not settled: `close()` waits for them. */
  #running = 0;
  #closing = false;

  /** @internal */
  constructor(handle, factory) {
    this.#handle = handle;
    this.#factory = factory;
  }

  /** The IndexedDB database name. */
  get name() {
    return this.#handle.name;
  }

  /**
   * Runs one call: rejects at once after `close()`; otherwise the call counts as running until
   * it settles, and the connection closes when the last running call has settled. One promise
   * step over the backend's (not `async` functions awaiting each other: each layer cost the
   * JavaScript thread microseconds per call in Node, issue 19); what `fn` throws or rejects with
   * rejects as a DeadLetterError (`given`: the call's required arguments, see `undefinedNamed`).
   */
  #run(fn, given) {
    if (this.#closing) {
      return Promise.reject(new DeadLetterError("store error: the database is closed", { code: "store" }));
    }
    this.#running += 1;
    let running;
    try {
      running = Promise.resolve(fn());
    } catch (err) {
      running = Promise.reject(err);
    }
    return running.then(
      (value) => {
        this.#done();
        return value;
      },
      (err) => {
        this.#done();
        throw undefinedNamed(asDeadLetterError(err), given);
      },
    );
  }

  /** A call settled: the connection closes after `close()` once none is running. */
  #done() {
    this.#running -= 1;
    if (this.#closing && this.#running === 0) this.#shut();
  }

  /** Closes the connection and the channel (after `close()`, once no call is running). */
  #shut() {
    this.#handle.close();
    this.#channel?.close();
    this.#channel = null;
  }

  /** The queue `name` (1..255 characters) with `options.backoff`; throws a `validation_failed` DeadLetterError. */
  queue(name, opts) {
    try {
      const o = options(opts, QUEUE);
      const b = options(o.backoff, BACKOFF, "backoff");
      // The last argument: whether the handle has its own policy (else the queue's stored one).
      const handle = this.#handle.queue(name, b.initialMs, b.multiplier, b.capMs, b.jitter, o.backoff != null);
      const closed = () => this.#closing || this.#handle.closed === true;
      return new Queue(handle, name, (dead) => this.#announce(dead), (fn, given) => this.#run(fn, given), closed);
    } catch (err) {
      throw undefinedNamed(asDeadLetterError(err), { queue: name });
    }
  }

  /** The statistics of every queue that holds messages or has stored settings, by name. */
  queues() {
    return this.#run(() => this.#handle.queues());
  }

  /** Calls `callback(message)` for each message that dies (here, or in another tab, worker or Database on this database). */
  onDead(callback) {
    if (typeof callback !== "function") {
      throw validationError([{ field: "callback", code: "type", message: `must be a function, got ${describe(callback)}` }]);
    }
    const entry = (message) => callback(message);
    this.#callbacks.push(entry);
    this.#listen();
    return () => {
      const at = this.#callbacks.indexOf(entry);
      if (at >= 0) this.#callbacks.splice(at, 1);
      if (this.#callbacks.length === 0) this.#deaf();
    };
  }

  /**
   * The BroadcastChannel of this database, or null: only a browser's own IndexedDB (the global
   * `indexedDB` of a page or worker) is one database for every tab and worker of the origin. In
   * Node, or with an `indexedDB` option, the database is private to this thread (and factory), so
   * deaths are shared with this thread's Databases only.
   */
  #broadcast() {
    if (this.#channel === undefined) {
      // A SQLite file (Node) names its channel after the file itself: every thread of this
      // process on the file hears the deaths (null in memory: private).
      const own = !NODE && this.#factory === globalThis.indexedDB ? `deadletter:${this.name}` : null;
      const name = this.#handle.channel ?? own;
      this.#channel = name !== null && typeof BroadcastChannel === "function" ? new BroadcastChannel(name) : null;
      this.#channel?.unref?.(); // Node: an open channel does not keep the process alive
    }
    return this.#channel;
  }

  #listen() {
    if (this.#closing) return; // closed: it hears nothing more
    const channel = this.#broadcast();
    if (channel === null) {
      listening(this.#factory, this.name).add(this);
    } else if (channel.onmessage === null) {
      channel.onmessage = ({ data }) => {
        if (isRecord(data) && isRecord(data.dead)) notify(this.#callbacks, [data.dead]);
      };
    }
  }

  #deaf() {
    if (this.#channel) this.#channel.onmessage = null;
    LISTENING.get(this.#factory)?.get(this.name)?.delete(this);
  }

  /** Reports messages this Database's calls made dead: to its callbacks, then to the others. */
  #announce(dead) {
    if (dead.length === 0) return;
    notify(this.#callbacks, dead);
    const channel = this.#broadcast();
    if (channel !== null) {
      for (const message of dead) channel.postMessage({ dead: message });
      return;
    }
    // As a channel would deliver them: structured clones, to every other Database listening.
    for (const other of LISTENING.get(this.#factory)?.get(this.name) ?? []) {
      if (other !== this) notify(other.#callbacks, dead.map((message) => structuredClone(message)));
    }
  }

  /** Closes the connection once the calls already made have settled; every later call rejects with a `store` DeadLetterError. */
  close() {
    this.#closing = true;
    this.#deaf();
    if (this.#running === 0) this.#shut();
  }
}

/** The core's pure functions: the native module's in Node, else the WebAssembly module's. */
function helpers() {
  return fileBackend() ?? { backoffMs: coreBackoffMs, failureText: coreFailureText };
}

/** `min(2^retryCount, 3600)` seconds in milliseconds: the delay after the retryCount-th failure. */
export function backoffMs(retryCount) {
  try {
    return helpers().backoffMs(retryCount);
  } catch (err) {
    throw undefinedNamed(asDeadLetterError(err), { retryCount });
  }
}

/**
 * Opens (creating when new) the queue database stored in IndexedDB database `name`; in Node
 * without an `indexedDB` option, the SQLite file at path `name`.
 */
export function open(name, opts) {
  return call(async () => {
    const o = options(opts, OPEN);
    const files = o.indexedDB == null ? fileBackend() : null;
    if (files !== null) {
      // It reads the clock itself, under the store's write lock (what it throws comes Thrown).
      const handle = await files.openDatabase(name, o.leaseMs, o.maxPayloadBytes, o.durability, o.clock, o.random);
      return new Database(handle, handle);
    }
    if (o.durability != null && o.durability !== "full") {
      throw validationError([{ field: "durability", code: "invalid", message: "applies only to a SQLite file (Node)" }]);
    }
    await load();
    const handle = await openDatabase(name, o.indexedDB, o.leaseMs, o.maxPayloadBytes, o.clock, o.random);
    return new Database(handle, o.indexedDB ?? globalThis.indexedDB);
  }).catch((err) => {
    throw undefinedNamed(err, { name });
  });
}

export { Outbox, retryableStatus } from "./outbox.js";
