// The IndexedDB store's own cases (store-cases.mjs) in Node, on fake-indexeddb; tests/browser/run.mjs
// runs them in Chromium's IndexedDB. Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/
import { test } from "node:test";
import * as index from "../../../build/pkg/index.js";
import * as requests from "../../../build/pkg/store/requests.js";
import * as schema from "../../../build/pkg/store/schema.js";
import * as store from "../../../build/pkg/store/store.js";
import { CASES } from "./store-cases.mjs";

const pkg = { index, requests, schema, store };

for (const [name, run] of Object.entries(CASES)) {
  test(name, () => run(pkg, indexedDB));
}
