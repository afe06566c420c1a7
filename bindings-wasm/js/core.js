// The WebAssembly core of the package (the Rust crate deadletter-wasm): loaded once, when the
// package is imported, so that its exports are usable synchronously everywhere: from Node's disk,
// or with fetch (streaming) in browsers and workers. It decides everything about messages; the
// IndexedDB store (store/) and the backend (backend.js) drive IndexedDB with its answers.
import init, { setErrorClass } from "./deadletter_wasm.js";
import { DeadLetterError } from "./errors.js";

export * from "./deadletter_wasm.js";

// Next to this file. Bundlers that follow `new URL(..., import.meta.url)` (Vite, webpack 5, Parcel)
// emit the .wasm as an asset; esbuild keeps the expression, so the .wasm must sit next to the
// bundle (README: "With a bundler").
const WASM = new URL("./deadletter_wasm_bg.wasm", import.meta.url);

/** Whether this is Node (where every IndexedDB is an implementation private to its thread). */
export const NODE = typeof process !== "undefined" && process.versions != null && process.versions.node != null;

async function initialize() {
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

await initialize();
