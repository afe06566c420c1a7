// The JavaScript blocks of a README (```js fences), run as modules: what the README tests share
// (bindings-wasm/js/test/readme.test.mjs on fake-indexeddb, bindings-node/tests/readme.test.mjs on
// SQLite files; tests/install/npm.test.mjs takes the blocks and runs each in a Node process of
// the project where the tarball is installed).
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

/** The source of every ```js block of the file at `url`, in order. */
export function jsBlocks(url) {
  const readme = readFileSync(url, "utf8");
  return [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/**
 * Runs `block` as a module whose `"deadletter"` is `entry` (a URL), with `console.assert` made to
 * throw; resolves once its top-level code has.
 */
export async function runBlock(block, entry) {
  const source = block.replaceAll('from "deadletter"', `from ${JSON.stringify(entry)}`);
  const assertions = console.assert;
  console.assert = (condition, ...message) => assert.ok(condition, message.join(" ") || "console.assert failed");
  try {
    await import(`data:text/javascript,${encodeURIComponent(source)}`);
  } finally {
    console.assert = assertions;
  }
}
