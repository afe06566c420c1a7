// The npm package `deadletter`: a reliable message queue (retries, exponential backoff, a
// dead-letter queue) persisted in IndexedDB, for pages, dedicated and shared workers, and Node.
// The rules live in the Rust core compiled to WebAssembly, loaded here, when the package is
// imported (top-level await), so that every export is usable synchronously. Service workers,
// which allow no top-level await, import `deadletter/service-worker` instead. Types: index.d.ts.
import { errorCodes } from "./backend.js";
import { load } from "./core.js";
// Every module of the package named here, though the others import them too: a browser then
// fetches them all at once instead of discovering them level by level (six levels deep), and the
// WebAssembly's fetch, which waits for the whole graph, starts sooner (bench-js: cold start).
import "./api.js";
import "./deadletter_wasm.js";
import "./errors.js";
import "./outbox.js";
import "./platform.js";
import "./store/requests.js";
import "./store/schema.js";
import "./store/store.js";
import "./worker.js";

await load();

export * from "./api.js";

/** The stable error codes, straight from the Rust core (`deadletter::CODES`). */
export const CODES = Object.freeze(errorCodes());
