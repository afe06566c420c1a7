// Runs the README's JavaScript blocks against the built package, so the documented example stays
// true. `console.assert` is made to throw, and `"deadletter"` resolves to build/pkg.
import { test } from "node:test";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
const pkg = new URL("../../../build/pkg/index.js", import.meta.url).href;

test("the README has JavaScript examples", () => {
  assert.ok(blocks.length >= 1);
});

for (const [i, block] of blocks.entries()) {
  test(`README JavaScript block ${i + 1} runs`, async () => {
    const source = block.replaceAll('from "deadletter"', `from ${JSON.stringify(pkg)}`);
    const assertions = console.assert;
    console.assert = (condition, ...message) => assert.ok(condition, message.join(" ") || "console.assert failed");
    try {
      await import(`data:text/javascript,${encodeURIComponent(source)}`);
    } finally {
      console.assert = assertions;
    }
  });
}
