// The error texts' cases (error-texts.mjs) on the WebAssembly backend, in Node on fake-indexeddb;
// bindings-node/tests/error-texts.test.mjs runs them on SQLite files.
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import * as deadletter from "../../../build/pkg/index.js";
import { CASES } from "./error-texts.mjs";

let n = 0;
const fresh = () => `error-texts-${process.pid}-${++n}`;

for (const [name, run] of Object.entries(CASES)) {
  test(name, () => run(deadletter, fresh));
}
