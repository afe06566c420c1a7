// The npm package `deadletter` in Node (package.json's "node" condition): the same API as in
// browsers (../api.js), where `open(path)` opens a SQLite file through the native module
// (backend.js); with an `indexedDB` option, the IndexedDB backend over the WebAssembly core, as in
// browsers. A platform without the prebuilt module loads the WebAssembly core instead, and
// `open(path)` rejects saying so. Types: ../index.d.ts.
import * as files from "./backend.js";
import { useFiles } from "../platform.js";

useFiles(files);
if (!files.available) await files.load();

export * from "../api.js";

/** The stable error codes, straight from the Rust core (`deadletter::CODES`). */
export const CODES = Object.freeze(files.available ? files.errorCodes() : (await import("../core.js")).errorCodes());
