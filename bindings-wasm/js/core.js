// The WebAssembly core of the package (the Rust crate deadletter-wasm), loaded once by `load()`:
// from Node's disk, or with fetch (streaming) in browsers and workers. index.js awaits it when the
// package is imported, so that every export is usable synchronously; service-worker.js cannot
// (service workers allow no top-level await), so `open()` awaits it there. It decides everything
// about messages; the IndexedDB store (store/) and the backend (backend.js) drive IndexedDB with
// its answers.
import init, { setErrorClass } from "./deadletter_wasm.js";
import { DeadLetterError } from "./errors.js";

export * from "./deadletter_wasm.js";

/**
 * The .wasm next to this file. Bundlers that follow `new URL(..., import.meta.url)` (Vite,
 * webpack 5, Parcel) emit it as an asset; esbuild keeps the expression, so the .wasm must sit next
 * to an ES module bundle (the npm README: "Loading the WebAssembly"); a bundle without
 * `import.meta` (a classic service worker) passes its URL to `load`.
 */
function besideThis() {
  return new URL("./deadletter_wasm_bg.wasm", import.meta.url);
}

/** Whether this is Node (where every IndexedDB is an implementation private to its thread). */
export const NODE = typeof process !== "undefined" && process.versions != null && process.versions.node != null;

async function initialize(wasm) {
  const WASM = wasm === undefined ? besideThis() : new URL(wasm, globalThis.location?.href);
  if (NODE && WASM.protocol === "file:") {
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

let loading = null;

/**
 * Loads the WebAssembly module (once; later calls return the same promise): from `wasm` (a URL or
 * a string, relative to the page or worker) when given, else from the file next to this module.
 */
export function load(wasm) {
  loading ??= initialize(wasm);
  return loading;
}
