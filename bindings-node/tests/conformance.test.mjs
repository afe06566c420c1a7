// Every shared conformance case through the npm package in Node on SQLite files (the native
// module, node/backend.js), each as its own subtest on a new file of its own: the eighth place
// (tests/README.md), beside the package's runs on fake-indexeddb (make test-js) and Chromium.
// Run: node --test bindings-node/tests/  (after make node)
import { test } from "node:test";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PKG, deadletter } from "./package.mjs";

const { open } = deadletter;
const { runCase, skipReason } = await import(new URL("conformance.mjs", PKG));

const dir = new URL("../../tests/conformance/", import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
const folder = mkdtempSync(join(tmpdir(), "deadletter-node-conformance-"));
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));

/** `open` of the package with the runner's unique database name as a file in the folder. */
const openFile = (name, options) => open(join(folder, `${name}.db`), options);

let total = 0;
for (const file of files) {
  const { cases } = JSON.parse(readFileSync(new URL(file, dir), "utf8"));
  // The files the package does not run yet, as its other runs skip them (conformance.mjs), but
  // the queue-name rule: the core checks it, so it holds on SQLite files already.
  const skip = file === "queue_names.json" ? undefined : skipReason(file);
  for (const testCase of cases) {
    total += 1;
    test(`${file}: ${testCase.name}`, { skip }, async () => {
      await runCase(openFile, testCase, undefined);
    });
  }
}

test("the shared cases are all there", (t) => {
  t.diagnostic(`${total} cases on SQLite files`);
  if (total < 60) throw new Error(`only ${total} conformance cases found in ${dir}`);
});
