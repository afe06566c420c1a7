// The JavaScript blocks of both READMEs (the repository's and the npm package's,
// bindings-wasm/README.md) in Node, on SQLite files (the package's Node entry), in a folder of
// their own: the quick starts that a Node user runs. `console.assert` is made to throw. (The
// package's own tests run the same blocks on fake-indexeddb; tests/install/ runs them against
// the installed tarball.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsBlocks, runBlock } from "../../bindings-wasm/js/test/readme-blocks.mjs";
import { PKG } from "./package.mjs";

const READMES = { repository: "../../README.md", npm: "../../bindings-wasm/README.md" };
const entry = new URL("node/index.js", PKG).href;
const folder = mkdtempSync(join(tmpdir(), "deadletter-node-readme-"));
process.chdir(folder); // the blocks open files by relative paths
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));

for (const [which, path] of Object.entries(READMES)) {
  const blocks = jsBlocks(new URL(path, import.meta.url));

  test(`the ${which} README has a Node block`, () => {
    assert.ok(blocks.some((block) => /open\("\.\/[a-z]+\.db"/.test(block)));
  });

  for (const [i, block] of blocks.entries()) {
    test(`${which} README JavaScript block ${i + 1} runs in Node on SQLite`, () => runBlock(block, entry));
  }
}
