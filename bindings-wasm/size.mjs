// The size budget of the package's WebAssembly and the one way it is measured: the bytes of the
// file, and of its gzip at level 9 (node:zlib). build.sh prints it, js/test/size.test.mjs fails
// beyond the budget, the benchmark prints it in its header.
//
// The budget guards against regressions at today's size (about 97 kB gzipped). Issue 10 asks for
// 60 kB, which this design does not reach: most of the bytes are the async state machines of the
// operations over the IndexedDB store (see the notes); reaching it needs a WebAssembly
// without async code (JavaScript driving IndexedDB, the core's steps called synchronously).
//
// Usage: node bindings-wasm/size.mjs FILE.wasm   (prints "FILE: N bytes, M gzipped (budget B)")

import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

/** The most the gzipped `.wasm` may weigh, in bytes. */
export const GZIP_BUDGET_BYTES = 100_000;

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
