// The README's JavaScript blocks in Node, on SQLite files (the package's Node entry), in a folder
// of their own: the quick start that a Node user runs. `console.assert` is made to throw. (The
// package's own tests run the same blocks on fake-indexeddb; tests/install/ runs them against
// the installed tarball.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PKG } from "./package.mjs";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
const entry = new URL("node/index.js", PKG).href;
const folder = mkdtempSync(join(tmpdir(), "deadletter-node-readme-"));
process.chdir(folder); // the blocks open files by relative paths
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));

test("the README has a Node block", () => {
  assert.ok(blocks.some((block) => block.includes('open("./jobs.db"')));
});

for (const [i, block] of blocks.entries()) {
  test(`README JavaScript block ${i + 1} runs in Node on SQLite`, async () => {
    const source = block.replaceAll('from "deadletter"', `from ${JSON.stringify(entry)}`);
    const assertions = console.assert;
    console.assert = (condition, ...message) => assert.ok(condition, message.join(" ") || "console.assert failed");
    try {
      await import(`data:text/javascript,${encodeURIComponent(source)}`);
    } finally {
      console.assert = assertions;
    }
  });
}
