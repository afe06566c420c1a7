// The worker loop's shared cases (bindings-wasm/js/test/worker-cases.mjs) on the native module, on
// SQLite files; the WebAssembly backend runs them on fake-indexeddb and in Chromium.
// Run: node --test bindings-node/tests/
import { test } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CASES } from "../../bindings-wasm/js/test/worker-cases.mjs";
import { deadletter } from "./package.mjs";

const folder = mkdtempSync(join(tmpdir(), "deadletter-node-worker-cases-"));
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(folder, `q${++n}.db`);

for (const [name, run] of Object.entries(CASES)) {
  test(name, { timeout: 30_000 }, () => run(deadletter, fresh));
}
