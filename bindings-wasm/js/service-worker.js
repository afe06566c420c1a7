// The npm package `deadletter` for service workers: the same API as the main entry (index.js)
// without top-level await, which service workers do not allow (nor `import()`). The WebAssembly
// core loads on the first `open()`; a bundle that has no `import.meta` (a classic service worker
// built by a bundler) first calls `load(url)` with the URL it serves deadletter_wasm_bg.wasm from.
// `CODES` is the main entry's only; `backoffMs` works once the core is loaded. Types: index.d.ts.
export * from "./api.js";
export { load } from "./core.js";
