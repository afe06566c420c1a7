// The error texts' cases (bindings-wasm/js/test/error-texts.mjs) on the native module, on SQLite
// files; the WebAssembly backend runs them on fake-indexeddb. Run: node --test bindings-node/tests/
import { test } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CASES } from "../../bindings-wasm/js/test/error-texts.mjs";
import { deadletter } from "./package.mjs";

const folder = mkdtempSync(join(tmpdir(), "deadletter-node-error-texts-"));
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(folder, `q${++n}.db`);

for (const [name, run] of Object.entries(CASES)) {
  test(name, () => run(deadletter, fresh));
}
