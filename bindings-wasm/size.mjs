// The size budget of the package's WebAssembly (issue 10: at most 60 kB gzipped) and the one way it
// is measured: the bytes of the file, and of its gzip at level 9 (node:zlib). build.sh prints it,
// js/test/size.test.mjs fails beyond the budget, the benchmark prints it in its header.
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
