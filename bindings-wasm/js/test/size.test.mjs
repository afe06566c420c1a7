// The package's .wasm stays within its size budget (bindings-wasm/size.mjs: the budget and how
// it is measured). Run: node --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { GZIP_BUDGET_BYTES, wasmSize } from "../../size.mjs";

const WASM = fileURLToPath(new URL("../../../build/pkg/deadletter_wasm_bg.wasm", import.meta.url));

test(`the .wasm is at most ${GZIP_BUDGET_BYTES} bytes gzipped`, () => {
  const { raw, gzipped } = wasmSize(WASM);
  assert.ok(gzipped <= GZIP_BUDGET_BYTES, `deadletter_wasm_bg.wasm is ${gzipped} bytes gzipped (${raw} raw): over the budget of ${GZIP_BUDGET_BYTES}`);
});
