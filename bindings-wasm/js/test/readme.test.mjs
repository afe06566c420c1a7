// Runs the JavaScript blocks of both READMEs (the repository's and the npm package's,
// bindings-wasm/README.md) against the built package, so the documented examples stay true.
// `console.assert` is made to throw, and `"deadletter"` resolves to build/pkg (here on
// fake-indexeddb, where a path is a database name; bindings-node/tests/readme.test.mjs runs the
// same blocks on SQLite files).
import { test } from "node:test";
import assert from "node:assert/strict";
import { jsBlocks, runBlock } from "./readme-blocks.mjs";

const READMES = { repository: "../../../README.md", npm: "../../README.md" };
const pkg = new URL("../../../build/pkg/index.js", import.meta.url).href;

for (const [which, path] of Object.entries(READMES)) {
  const blocks = jsBlocks(new URL(path, import.meta.url));

  test(`the ${which} README has JavaScript examples`, () => {
    assert.ok(blocks.length >= 1);
  });

  for (const [i, block] of blocks.entries()) {
    test(`${which} README JavaScript block ${i + 1} runs`, () => runBlock(block, pkg));
  }
}
