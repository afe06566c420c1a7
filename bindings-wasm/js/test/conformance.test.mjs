// Every shared conformance case, through the JS API on fake-indexeddb (the globals that
// fake-indexeddb/auto installs: one implementation throughout), each as its own subtest.
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import { readFileSync, readdirSync } from "node:fs";
import { open } from "../../../build/pkg/index.js";
import { runCase, skipReason } from "../../../build/pkg/conformance.mjs";

const dir = new URL("../../../tests/conformance/", import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();

let total = 0;
let queueFirst = 0;
for (const file of files) {
  const { cases } = JSON.parse(readFileSync(new URL(file, dir), "utf8"));
  for (const testCase of cases) {
    total += 1;
    test(`${file}: ${testCase.name}`, { skip: skipReason(file) }, async () => {
      queueFirst += (await runCase(open, testCase, globalThis.indexedDB)).queueFirstSteps;
    });
  }
}

test("the shared cases are all there", (t) => {
  t.diagnostic(`${total} cases; ${queueFirst} steps checked under the queue-first rule (see conformance.mjs)`);
  if (total < 60) throw new Error(`only ${total} conformance cases found in ${dir}`);
});
