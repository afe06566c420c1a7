// The backend of `Database` and `Queue` (../api.js) in Node: SQLite files through the native
// module (the Rust crate deadletter-node: the core over stores/sqlite, the Python package's file
// format), with the same handle interface as the IndexedDB backend (../backend.js). Each call
// maps its arguments in the native module, which runs it on one of the database's threads and
// returns its id; its reply comes back with that id, in a batch with the others finished meanwhile
// (`Calls`): one JSON text (`{ ok, dead }` or `{ error }`), which this file turns into the API's
// objects (Dates for instants) or a DeadLetterError. Nothing here decides anything about a message.
//
// The clock: the native store reads it once it holds its write lock (the system clock, or the
// user's `clock` through a thread-safe function); what the user's clock throws rejects the call
// unchanged. The random source is read here, at the start of a call, as in the browser.

import { createRequire } from "node:module";
import { backoffMs as wasmBackoffMs, failureText as wasmFailureText, load } from "../core.js";
import { DeadLetterError, Thrown } from "../errors.js";

/** The only platform with a prebuilt module in the package. */
const PREBUILT = "linux-x64-gnu";

/** The native module, or what loading it threw. */
const loaded = (() => {
  if (`${process.platform}-${process.arch}` !== "linux-x64") return { error: null };
  try {
    return { native: createRequire(import.meta.url)(`./deadletter.${PREBUILT}.node`) };
  } catch (error) {
    return { error }; // musl, an old glibc, a module missing from a hand-made copy
  }
})();
const native = loaded.native ?? null;

/** Whether this platform has the native module (else node/index.js loads the WebAssembly core). */
export const available = native !== null;

/** This platform as the prebuilt modules are named (`linux-x64-gnu`, `darwin-arm64`, ...). */
function platform() {
  const name = `${process.platform}-${process.arch}`;
  if (process.platform !== "linux") return name;
  const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
  return `${name}-${glibc ? "gnu" : "musl"}`;
}

/** The error of `open(path)` where there is no native module. */
function unavailable() {
  const why = loaded.error ? ` (${loaded.error.message})` : "";
  return new DeadLetterError(
    `store error: deadletter has no native module for ${platform()} (the package ships one for ${PREBUILT})${why}; ` +
      "SQLite files need it. On this platform, pass an IndexedDB implementation instead: " +
      'open(name, { indexedDB }) (e.g. import { indexedDB } from "fake-indexeddb", kept in memory only)',
    { code: "store" },
  );
}

/** The error a reply's `error` describes (its field errors' keys in the IndexedDB backend's order). */
function failure({ message, errors, ...details }) {
  const fields = errors.map(({ field, code, message, index }) => (index === undefined ? { field, code, message } : { field, code, message, index }));
  return new DeadLetterError(message, { ...details, errors: fields });
}

/** The value of a synchronous native answer: a JSON text is an error (thrown), anything else the value. */
function unwrap(answer) {
  if (typeof answer === "string") throw failure(JSON.parse(answer).error);
  return answer;
}

/** What a reply says: `{ ok, dead }`, or the error thrown. */
function reply(text) {
  const r = JSON.parse(text);
  if (r.error !== undefined) throw failure(r.error);
  return r;
}

/**
 * The calls of one database whose replies have not come yet, by id. While there are any, the
 * database holds the process alive (as pending I/O does).
 */
class Calls {
  /** id -> [resolve, reject, map] */
  #waiting = new Map();
  #db = null;

  /** The native database, once open. */
  set db(db) {
    this.#db = db;
  }

  /**
   * Settles the calls of a batch (called by the native module): `replies[i]` is the JSON text of
   * call `ids[i]`, or what the user's clock threw during it (boxed: see ../errors.js).
   */
  deliver = (ids, replies) => {
    for (let i = 0; i < ids.length; i += 1) {
      const [resolve, reject, map] = this.#waiting.get(ids[i]);
      this.#waiting.delete(ids[i]);
      const text = replies[i];
      if (typeof text !== "string") {
        reject(new Thrown(text));
        continue;
      }
      try {
        resolve(map(reply(text)));
      } catch (err) {
        reject(err);
      }
    }
    // The database lets the process go at the next setImmediate if no call is out by then: a
    // caller that awaits each call in turn makes its next one before, and the database stays
    // held rather than let go and held again, two N-API calls per call (issue 19).
    if (this.#waiting.size === 0 && this.#held) this.#schedule();
  };

  /** Whether a flush of the calls made in this tick is scheduled. */
  #flushing = false;
  /** Whether calls were made since the last flush. */
  #made = false;
  /** Whether the database holds the process alive (`hold(true)`). */
  #held = false;

  #schedule() {
    if (!this.#flushing) {
      this.#flushing = true;
      setImmediate(this.#flush);
    }
  }

  /**
   * Starts the calls made in this tick (the native module runs them as one batch); lets the
   * process go if no call is out.
   */
  #flush = () => {
    this.#flushing = false;
    if (this.#made) {
      this.#made = false;
      this.#db.flush();
    }
    if (this.#waiting.size === 0 && this.#held) {
      this.#held = false;
      this.#db.hold(false);
    }
  };

  /**
   * The promise of the native call `id`: what `map` makes of its reply (`{ ok, dead }`), or its
   * error (mapped here rather than in a promise step of its own: one promise per call, issue 19).
   * The call starts once the calls made in this tick are all queued: at the next setImmediate,
   * after the promise jobs the tick's other calls come from (issue 19).
   */
  settle(id, map) {
    this.#made = true;
    this.#schedule();
    if (!this.#held) {
      this.#held = true;
      this.#db.hold(true);
    }
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, [resolve, reject, map]);
    });
  }
}

function date(ms) {
  return ms === null ? null : new Date(ms);
}

/**
 * A message as the API gives it (the shape of the IndexedDB backend's, ../store/record.js), from
 * the array of its fields a reply carries (src/reply.rs, `Row`: cheaper to parse than an object's
 * keys, issue 19).
 */
function message(m) {
  return {
    id: m[0],
    queue: m[1],
    payload: m[2],
    status: m[3],
    retryCount: m[4],
    maxRetries: m[5],
    retryAfter: date(m[6]),
    lastError: m[7],
    createdAt: new Date(m[8]),
    updatedAt: new Date(m[9]),
    leaseToken: m[10],
    leaseExpiresAt: date(m[11]),
    idempotencyKey: m[12],
    firstFailedAt: date(m[13]),
    deadAt: date(m[14]),
    errors: m[15].map(([attempt, error, at]) => ({ attempt, error, at: new Date(at) })),
    errorsDropped: m[16],
    replayCount: m[17],
    replayedAt: date(m[18]),
    group: m[19],
    expiresAt: date(m[20]),
    deduplicated: m[21],
    movedFrom: m[22],
  };
}

/** Queue statistics as the API gives them. */
function stats(s) {
  return {
    queue: s.queue,
    pending: s.pending,
    processing: s.processing,
    succeeded: s.succeeded,
    dead: s.dead,
    expired: s.expired,
    delayed: s.delayed,
    nextDueAt: date(s.next_due_at),
    oldestDueAgeMs: s.oldest_due_age_ms,
    oldestDeadAgeMs: s.oldest_dead_age_ms,
    paused: s.paused,
    expiredDead: s.expired_dead,
    expiredDiscarded: s.expired_discarded,
  };
}

/** A queue's settings as the API gives them (the IndexedDB backend's shape). */
function settings({ ok: s }) {
  const b = s.backoff;
  return {
    backoff: b === null ? null : { initialMs: b.initial_ms, multiplier: b.multiplier, capMs: b.cap_ms, jitter: b.jitter },
    maxRetries: s.max_retries,
    leaseMs: s.lease_ms,
    expiresInMs: s.expires_in_ms,
    onExpiry: s.on_expiry,
    paused: s.paused,
  };
}

/**
 * `{ value, dead }` of a call that may kill, from its reply; its warning (once per handle: the
 * handle's backoff was applied instead of a different one stored with the queue, by Python's
 * `set_settings`, say) goes to `console.warn`, as Python's goes to `warnings.warn`.
 */
function killing({ dead, warning }, value, queue) {
  if (warning !== undefined) console.warn(`deadletter: queue ${JSON.stringify(queue)}: ${warning}`);
  return { value, dead: dead.map(message) };
}

/** Calls `fn` (the user's clock or random source); what it throws, boxed. */
function read(fn) {
  try {
    return fn();
  } catch (err) {
    throw new Thrown(err);
  }
}

export function backoffMs(retryCount) {
  return native ? unwrap(native.backoffMs(retryCount)) : wasmBackoffMs(retryCount);
}

export function failureText(kind, text) {
  return native ? native.failureText(kind, text) : wasmFailureText(kind, text);
}

export function errorCodes() {
  return native.errorCodes();
}

/** Opens (creating, upgrading or refusing) the SQLite file at `path`. */
export async function openDatabase(path, leaseMs, maxPayloadBytes, durability, clock, random) {
  if (native === null) throw unavailable();
  const calls = new Calls();
  const db = unwrap(await native.open(path, leaseMs, maxPayloadBytes, durability, clock, random, calls.deliver));
  calls.db = db;
  return new Handle(db, calls, path, clock, random);
}

/** One open file. */
class Handle {
  #db;
  #calls;
  #name;
  #random;
  /** The clock, read synchronously (the worker loop's idle wait). */
  #now;

  constructor(db, calls, name, clock, random) {
    this.#db = db;
    this.#calls = calls;
    this.#name = name;
    this.#random = typeof random === "function" ? () => read(random) : () => undefined;
    this.#now = typeof clock === "function" ? () => read(clock) : Date.now;
  }

  get name() {
    return this.#name;
  }

  /** The BroadcastChannel of the file's deaths (null in memory). */
  get channel() {
    return this.#db.channel;
  }

  queue(name, initialMs, multiplier, capMs, jitter, custom) {
    const q = unwrap(this.#db.queue(name, custom, initialMs, multiplier, capMs, jitter));
    return new QueueHandle(q, this.#calls, name, this.#random, this.#db, this.#now);
  }

  queues() {
    return this.#calls.settle(this.#db.queues(), (r) => r.ok.map(stats));
  }

  close() {
    const { error } = JSON.parse(this.#db.close());
    if (error !== undefined) console.error(`deadletter: closing ${this.#name} failed: ${error.message}`);
  }
}

/** One queue of an open file. */
class QueueHandle {
  #q;
  #calls;
  #name;
  #random;
  #db;
  #now;

  constructor(q, calls, name, random, db, now) {
    this.#q = q;
    this.#calls = calls;
    this.#name = name;
    this.#random = random;
    this.#db = db;
    this.#now = now;
  }

  enqueue(payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs) {
    return this.#calls.settle(this.#q.enqueue(payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs), (r) => message(r.ok));
  }

  enqueueMany(rows) {
    return this.#calls.settle(this.#q.enqueueMany(rows), (r) => r.ok.map(message));
  }

  claim(leaseMs) {
    return this.#calls.settle(this.#q.claim(this.#random(), 1, leaseMs), (r) => killing(r, r.ok.length === 0 ? null : message(r.ok[0]), this.#name));
  }

  claimMany(n, leaseMs) {
    return this.#calls.settle(this.#q.claim(this.#random(), n, leaseMs), (r) => killing(r, r.ok.map(message), this.#name));
  }

  reap() {
    return this.#calls.settle(this.#q.reap(this.#random()), (r) => killing(r, r.ok, this.#name));
  }

  succeed(id, leaseToken) {
    return this.#calls.settle(this.#q.succeed(id, leaseToken), (r) => message(r.ok));
  }

  fail(id, error, leaseToken, retryable, retryInMs) {
    return this.#calls.settle(this.#q.fail(this.#random(), id, error, leaseToken, retryable, retryInMs), (r) => killing(r, message(r.ok), this.#name));
  }

  extend(id, leaseToken, leaseMs) {
    return this.#calls.settle(this.#q.extend(id, leaseToken, leaseMs), (r) => message(r.ok));
  }

  replay(id, expiresInMs) {
    return this.#calls.settle(this.#q.replay(id, expiresInMs), (r) => message(r.ok));
  }

  retryNow(id) {
    return this.#calls.settle(this.#q.retryNow(id), (r) => message(r.ok));
  }

  move(id, toQueue) {
    return this.#calls.settle(this.#q.move(id, toQueue), (r) => message(r.ok));
  }

  moveAll(toQueue, filters, limit, dryRun) {
    return this.#calls.settle(this.#q.moveAll(toQueue, filters, limit, dryRun), (r) => r.ok);
  }

  replayAll(filters, limit, dryRun) {
    return this.#calls.settle(this.#q.replayAll(filters, limit, dryRun), (r) => r.ok);
  }

  deleteAll(filters, limit, dryRun) {
    return this.#calls.settle(this.#q.deleteAll(filters, limit, dryRun), (r) => r.ok);
  }

  retryNowAll(filters, limit, dryRun) {
    return this.#calls.settle(this.#q.retryNowAll(filters, limit, dryRun), (r) => r.ok);
  }

  purge(status, olderThanMs) {
    return this.#calls.settle(this.#q.purge(status, olderThanMs), (r) => r.ok);
  }

  delete(id) {
    return this.#calls.settle(this.#q.delete(id), (r) => message(r.ok));
  }

  get(id) {
    return this.#calls.settle(this.#q.get(id), (r) => message(r.ok));
  }

  list(filters, limit, afterId) {
    return this.#calls.settle(this.#q.list(filters, limit, afterId), ({ ok: { messages, next_after_id: nextAfterId } }) => ({
      messages: messages.map(message),
      nextAfterId,
    }));
  }

  stats() {
    return this.#calls.settle(this.#q.stats(), (r) => stats(r.ok));
  }

  nextDueAt() {
    return this.#calls.settle(this.#q.nextDueAt(), (r) => date(r.ok));
  }

  settings() {
    return this.#calls.settle(this.#q.settings(), settings);
  }

  /** `backoff`: null (unset), or `[initialMs, multiplier, capMs, jitter]`. */
  setSettings(backoff, maxRetries, leaseMs, expiresInMs, onExpiry) {
    const [initialMs, multiplier, capMs, jitter] = backoff ?? [];
    const stored = this.#q.setSettings(backoff != null, initialMs, multiplier, capMs, jitter, maxRetries, leaseMs, expiresInMs, onExpiry);
    return this.#calls.settle(stored, settings);
  }

  pause() {
    return this.#calls.settle(this.#q.pause(), settings);
  }

  resume() {
    return this.#calls.settle(this.#q.resume(), settings);
  }

  workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs) {
    const plan = unwrap(this.#db.workerPlan(concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs));
    return {
      concurrency: plan.concurrency,
      leaseMs: plan.leaseMs,
      shutdownTimeoutMs: plan.shutdownTimeoutMs,
      idleWaitMs: (nextDueAt) => unwrap(plan.idleWaitMs(this.#now(), nextDueAt)),
      free: () => {},
    };
  }
}

export { load };
