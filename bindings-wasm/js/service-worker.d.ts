// Types of `deadletter/service-worker`: the main entry's API (index.d.ts) but `CODES`, and `load`.
export {
  Database, DeadLetterError, Outbox, PermanentError, Queue, backoffMs, open, retryableStatus,
} from "./index.js";
export type * from "./index.js";

/**
 * Loads the WebAssembly core (once): from `wasm` when given (a bundle without `import.meta`, such
 * as a classic service worker, passes the URL it serves `deadletter_wasm_bg.wasm` from), else from
 * the file next to the package's modules. `open()` calls it; `backoffMs` needs it done.
 */
export declare function load(wasm?: string | URL): Promise<void>;
