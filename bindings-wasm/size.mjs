// The size budget of the package's WebAssembly and the one way it is measured: the bytes of the
// file, and of its gzip at level 9 (node:zlib). build.sh prints it, js/test/size.test.mjs fails
// beyond the budget, the benchmark prints it in its header.
//
// The budget is issue 20's: at most 60 kB gzipped, what a page can afford to load before its first
// message is queued. The module holds the core's rules and no asynchronous code (JavaScript drives
// IndexedDB: js/store/); it was 98.3 kB while the IndexedDB store and its futures were Rust.
//
// Usage: node bindings-wasm/size.mjs FILE.wasm   (prints "FILE: N bytes, M gzipped (budget B)")

import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

/** The most the gzipped `.wasm` may weigh, in bytes. */
export const GZIP_BUDGET_BYTES = 60_000;

/** `{ raw, gzipped }`: the size of the file at `path`, in bytes, and of its gzip at level 9. */
export function wasmSize(path) {
  const bytes = readFileSync(path);
  return { raw: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const path = process.argv[2];
  const { raw, gzipped } = wasmSize(path);
  console.log(`${path}: ${raw} bytes, ${gzipped} gzipped (budget ${GZIP_BUDGET_BYTES})`);
}
