// The npm package `deadletter`: a reliable message queue (retries, exponential backoff, a
// dead-letter queue) persisted in IndexedDB. The rules live in the Rust core compiled to
// WebAssembly; this module loads it and gives it a JavaScript shape. Types: index.d.ts.
import init, { backoffMs as wasmBackoffMs, errorCodes, openDatabase, setErrorClass } from "./deadletter_wasm.js";
import { DeadLetterError } from "./errors.js";

export { DeadLetterError };

// Next to this file. Bundlers that follow `new URL(..., import.meta.url)` (Vite, webpack 5, Parcel)
// emit the .wasm as an asset; esbuild keeps the expression, so the .wasm must sit next to the
// bundle (README: "With a bundler").
const WASM = new URL("./deadletter_wasm_bg.wasm", import.meta.url);

/** Loads the WebAssembly module: from disk in Node, with fetch (streaming) elsewhere. */
async function initialize() {
  const node = typeof process !== "undefined" && process.versions != null && process.versions.node != null;
  if (node && WASM.protocol === "file:") {
    // A specifier in a variable: a bundler targeting browsers must not try to resolve a Node
    // built-in that only this branch, in Node, imports.
    const fs = "node:fs/promises";
    const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ fs);
    await init({ module_or_path: await readFile(WASM) });
  } else {
    await init({ module_or_path: WASM });
  }
  setErrorClass(DeadLetterError);
}

// Loaded once, when the package is imported, so that every export is usable synchronously.
await initialize();

/** The stable error codes, straight from the Rust core (`deadletter::CODES`). */
export const CODES = Object.freeze(errorCodes());

/** Any failure as a DeadLetterError (the WebAssembly side already rejects with one). */
function asDeadLetterError(err) {
  if (err instanceof DeadLetterError) return err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new DeadLetterError(`store error: ${message}`, { code: "store" });
}

async function call(fn) {
  try {
    return await fn();
  } catch (err) {
    throw asDeadLetterError(err);
  }
}

function describe(value) {
  if (Array.isArray(value)) return "an array";
  return value === null ? "null" : `a ${typeof value}`;
}

function validationError(errors) {
  const text = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return new DeadLetterError(`validation failed: ${text}`, { code: "validation_failed", errors });
}

/**
 * The options argument: undefined/null mean none; anything but an object is rejected, and so is
 * an object with an own enumerable key that is not one of `known` (a typo such as `leaseMS`
 * would otherwise be ignored silently), before anything else is checked or done.
 */
function options(value, known) {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw validationError([{ field: "options", code: "type", message: `must be an object, got ${describe(value)}` }]);
  }
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    const message = `unknown option; expected one of ${known.join(", ")}`;
    throw validationError(unknown.map((field) => ({ field, code: "unknown", message })));
  }
  return value;
}

// The keys each options object may have.
const OPEN = ["indexedDB", "clock", "leaseMs", "maxPayloadBytes"];
const ENQUEUE = ["maxRetries"];
const CLAIM = ["leaseMs"];
const SUCCEED = ["leaseToken"];
const FAIL = ["leaseToken", "retryable"];
const LIST = ["status", "limit", "afterId"];

/** One named queue of a Database. Get it with `db.queue(name)`. */
export class Queue {
  #handle;
  #name;

  /** @internal */
  constructor(handle, name) {
    this.#handle = handle;
    this.#name = name;
  }

  /** The queue name. */
  get name() {
    return this.#name;
  }

  enqueue(payload, opts) {
    return call(() => {
      const o = options(opts, ENQUEUE);
      return this.#handle.enqueue(this.#name, payload, o.maxRetries);
    });
  }

  claim(opts) {
    return call(() => this.#handle.claim(this.#name, options(opts, CLAIM).leaseMs));
  }

  succeed(id, opts) {
    return call(() => this.#handle.succeed(this.#name, id, options(opts, SUCCEED).leaseToken));
  }

  fail(id, error, opts) {
    return call(() => {
      const o = options(opts, FAIL);
      return this.#handle.fail(this.#name, id, error, o.leaseToken, o.retryable);
    });
  }

  replay(id) {
    return call(() => this.#handle.replay(this.#name, id));
  }

  get(id) {
    return call(() => this.#handle.get(this.#name, id));
  }

  list(opts) {
    return call(() => {
      const o = options(opts, LIST);
      return this.#handle.list(this.#name, o.status, o.limit, o.afterId);
    });
  }
}

/** An open queue database. Get it with `open(name, options)`. */
export class Database {
  #handle;

  /** @internal */
  constructor(handle) {
    this.#handle = handle;
  }

  /** The IndexedDB database name. */
  get name() {
    return this.#handle.name;
  }

  /** The queue `name` (1..255 characters); throws a `validation_failed` DeadLetterError. */
  queue(name) {
    try {
      this.#handle.checkQueue(name);
    } catch (err) {
      throw asDeadLetterError(err);
    }
    return new Queue(this.#handle, name);
  }

  /** Closes the connection; every later call rejects with a `store` DeadLetterError. */
  close() {
    this.#handle.close();
  }
}

/** `min(2^retryCount, 3600)` seconds in milliseconds: the delay after the retryCount-th failure. */
export function backoffMs(retryCount) {
  try {
    return wasmBackoffMs(retryCount);
  } catch (err) {
    throw asDeadLetterError(err);
  }
}

/** Opens (creating when new) the queue database stored in IndexedDB database `name`. */
export function open(name, opts) {
  return call(async () => {
    const o = options(opts, OPEN);
    const handle = await openDatabase(name, o.indexedDB, o.leaseMs, o.maxPayloadBytes, o.clock);
    return new Database(handle);
  });
}
