// The WebAssembly component in dist/ (`make dist`), loaded as a JavaScript user loads it: in a
// fresh npm project outside the repository, with only the host package installed (npm
// `@bytecodealliance/jco`, the version bindings-component/package.json pins), `jco transpile`
// turns deadletter-X.Y.Z.component.wasm into JavaScript + core wasm, and the README's JavaScript
// host (the block fenced ```js component) runs in Node against it. (Its Python twin, through
// wasmtime, is test_component.py.)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const VERSION = /\[workspace\.package\][^[]*?^version = "([^"]+)"/ms.exec(readFileSync(join(ROOT, "Cargo.toml"), "utf8"))[1];
const COMPONENT = `deadletter-${VERSION}.component.wasm`;
const JCO = JSON.parse(readFileSync(join(ROOT, "bindings-component", "package.json"), "utf8")).devDependencies["@bytecodealliance/jco"];

let project;

before(() => {
  project = mkdtempSync(join(tmpdir(), "deadletter-component-"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "host", private: true, type: "module" }));
  copyFileSync(join(ROOT, "dist", COMPONENT), join(project, COMPONENT));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline", `@bytecodealliance/jco@${JCO}`], { cwd: project });
});

after(() => rmSync(project, { recursive: true, force: true }));

test("jco transpiles the shipped component, which imports nothing", () => {
  execFileSync("npx", ["--no-install", "jco", "transpile", COMPONENT, "--name", "deadletter", "-o", "deadletter", "--quiet"], { cwd: project });
  assert.deepEqual(readdirSync(join(project, "deadletter")).sort(), ["deadletter.core.wasm", "deadletter.d.ts", "deadletter.js", "interfaces"]);
  const wit = execFileSync("npx", ["--no-install", "jco", "wit", COMPONENT], { cwd: project, encoding: "utf8" });
  assert.deepEqual(
    wit.split("\n").filter((line) => /^\s*(import|export) /.test(line)).map((line) => line.trim()),
    ["types", "validate", "apply", "plan"].map((name) => `export deadletter:queue/${name}@${VERSION};`),
  );
  const dependencies = JSON.parse(readFileSync(join(project, "package.json"), "utf8")).dependencies;
  assert.deepEqual(Object.keys(dependencies), ["@bytecodealliance/jco"]);
});

test("the README's JavaScript host runs in Node against the transpiled component", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```js component\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1);
  writeFileSync(join(project, "host.mjs"), blocks[0]);
  execFileSync("node", ["host.mjs"], { cwd: project, stdio: "pipe" });
});
