// The npm tarball in dist/ (`make dist`), installed as users install it: `npm install
// ./deadletter-X.Y.Z.tgz` into a fresh project outside the repository (no workspace, no Rust, no
// wasm-bindgen). There: the JavaScript blocks of both READMEs (the repository's, the package's)
// in Node (on SQLite files, through the prebuilt native module), a file kept across processes
// (and IndexedDB on request), `tsc --noEmit` on a TypeScript file that imports the package, a
// page that imports it from node_modules in headless Chromium through a static server (no
// bundler), and an esbuild bundle of the same page code in Chromium, with the .wasm next to the
// bundle as the README says; an esbuild bundle (iife) of the service-worker entry as a classic
// service worker in Chromium.
// The tools (tsc, esbuild, fake-indexeddb, playwright-core) are the repository's pinned ones.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { jsBlocks } from "../../bindings-wasm/js/test/readme-blocks.mjs";
import { launchChromium, newPage } from "../../bindings-wasm/tests/browser/chromium.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const VERSION = /\[workspace\.package\][^[]*?^version = "([^"]+)"/ms.exec(
  readFileSync(join(ROOT, "Cargo.toml"), "utf8"),
)[1];
const TARBALL = `deadletter-${VERSION}.tgz`;
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
const FAKE_INDEXEDDB = join(ROOT, "node_modules", "fake-indexeddb", "auto", "index.js");
const PAGE_TIMEOUT_MS = 30_000;

/** The browser code of both pages: one enqueue + claim + succeed, reported on `window.result`. */
const PAGE_CODE = `import { open } from "deadletter";
try {
  const db = await open("install-check");
  const q = db.queue("jobs");
  const m = await q.enqueue("hello", { maxRetries: 2 });
  const c = await q.claim({ leaseMs: 5000 });
  const done = await q.succeed(c.id, { leaseToken: c.leaseToken });
  window.result = {
    enqueued: [m.id, m.status],
    claimed: [c.id, c.status, c.payload, typeof c.leaseToken],
    succeeded: [done.id, done.status, done.leaseToken],
    next: await q.claim(),
  };
  db.close();
} catch (err) {
  window.result = { error: String(err?.stack ?? err) };
}
`;
const EXPECTED_PAGE_RESULT = {
  enqueued: [1, "pending"],
  claimed: [1, "processing", "hello", "string"],
  succeeded: [1, "succeeded", null],
  next: null,
};

let project;

before(() => {
  project = mkdtempSync(join(tmpdir(), "deadletter-npm-"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  copyFileSync(join(ROOT, "dist", TARBALL), join(project, TARBALL));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", `./${TARBALL}`], { cwd: project });
});

after(() => rmSync(project, { recursive: true, force: true }));

test("the tarball holds only what users need, at the workspace version", () => {
  const listed = execFileSync("tar", ["tzf", join(ROOT, "dist", TARBALL)], { encoding: "utf8" }).split("\n").filter(Boolean);
  // js/store/record.js, which wasm-bindgen copies into a folder named with a hash of the crate.
  const snippets = listed.filter((f) => f.startsWith("package/snippets/"));
  assert.equal(snippets.length, 1, listed.join(" "));
  assert.match(snippets[0], /^package\/snippets\/deadletter-wasm-[0-9a-f]+\/js\/store\/record\.js$/);
  const files = listed.filter((f) => !snippets.includes(f));
  assert.deepEqual(files.sort(), [
    "package/LICENSE",
    "package/README.md",
    "package/api.js",
    "package/backend.js",
    "package/core.js",
    "package/deadletter_wasm.js",
    "package/deadletter_wasm_bg.wasm",
    "package/errors.js",
    "package/index.d.ts",
    "package/index.js",
    "package/node/backend.js",
    "package/node/deadletter.linux-x64-gnu.node",
    "package/node/index.js",
    "package/outbox.js",
    "package/package.json",
    "package/platform.js",
    "package/service-worker.d.ts",
    "package/service-worker.js",
    "package/store/requests.js",
    "package/store/schema.js",
    "package/store/store.js",
    "package/worker.js",
  ]);
  const installed = join(project, "node_modules", "deadletter");
  const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
  assert.equal(pkg.name, "deadletter");
  assert.equal(pkg.version, VERSION);
  assert.deepEqual(readdirSync(join(project, "node_modules")).filter((n) => !n.startsWith(".")), ["deadletter"]);
});

// The JavaScript blocks of both READMEs: the repository's and the npm package's (the one installed
// in node_modules/deadletter, bindings-wasm/README.md), each block a file of the project run by
// its own Node process, in a folder per README.
for (const which of ["repository", "npm"]) {
  test(`the ${which} README's JavaScript blocks run in Node against the installed package`, () => {
    const readme = which === "repository" ? join(ROOT, "README.md") : join(project, "node_modules", "deadletter", "README.md");
    const blocks = jsBlocks(readme);
    assert.ok(blocks.length >= 1);
    const folder = join(project, `readme-${which}`);
    mkdirSync(folder);
    for (const [i, block] of blocks.entries()) {
      const file = join(folder, `block-${i + 1}.mjs`);
      const strict = 'import assert from "node:assert"; console.assert = (ok, ...m) => assert.ok(ok, m.join(" ") || "console.assert");\n';
      writeFileSync(file, strict + block);
      execFileSync(process.execPath, ["--require", FAKE_INDEXEDDB, file], { cwd: folder, stdio: "inherit" });
    }
  });
}

test("in Node the package opens a SQLite file, which a second process finds as the first left it", () => {
  const run = (code) => execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: project, encoding: "utf8" });
  // A first process enqueues, claims and acks, and exits without close().
  run(`import { open } from "deadletter";
    const db = await open("./install.db", { durability: "full" });
    const q = db.queue("jobs");
    await q.enqueueMany(["a", "b", "c"]);
    const m = await q.claim();
    await q.succeed(m.id, { leaseToken: m.leaseToken });`);
  const stats = JSON.parse(
    run(`import { open } from "deadletter";
      const db = await open("./install.db");
      console.log(JSON.stringify(await db.queue("jobs").stats()));
      db.close();`),
  );
  assert.deepEqual([stats.pending, stats.succeeded], [2, 1]);
  // The import resolved to the Node entry and its native module; IndexedDB is there on request.
  const kinds = execFileSync(
    process.execPath,
    ["--require", FAKE_INDEXEDDB, "--input-type=module", "-e", `import { open } from "deadletter";
      const resolved = import.meta.resolve("deadletter");
      const idb = await open("idb", { indexedDB: globalThis.indexedDB });
      const m = await idb.queue("q").enqueue("in IndexedDB");
      console.log(resolved.endsWith("/node_modules/deadletter/node/index.js"), m.id);`],
    { cwd: project, encoding: "utf8" },
  );
  assert.equal(kinds.trim(), "true 1");
  assert.ok(!existsSync(join(project, "idb")), "the IndexedDB database made no file");
});

test("tsc --noEmit accepts a TypeScript file that imports the package, and catches a misuse", () => {
  writeFileSync(
    join(project, "check.ts"),
    `import { CODES, DeadLetterError, open, type ErrorCode, type Message } from "deadletter";
const db = await open("typed", { leaseMs: 1000 });
const q = db.queue("jobs");
const m: Message = await q.enqueue("x", { maxRetries: 2 });
const claimed: Message | null = await q.claim({ leaseMs: 500 });
if (claimed !== null) await q.succeed(claimed.id, { leaseToken: claimed.leaseToken });
const codes: readonly ErrorCode[] = CODES;
// @ts-expect-error: an unknown option key is a type error (and rejected at run time)
await q.claim({ leaseMS: 500 });
try {
  await q.get(m.id);
} catch (err) {
  if (err instanceof DeadLetterError) console.log(err.code satisfies ErrorCode, codes.length);
}
db.close();
`,
  );
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        lib: ["es2022", "dom"],
        types: [],
        skipLibCheck: false,
      },
      files: ["check.ts"],
    }),
  );
  execFileSync(TSC, ["-p", project], { cwd: project, stdio: "inherit" });
});

/** A static file server for `dir` on 127.0.0.1; records the paths it was asked for. */
async function serve(dir) {
  const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
    requests.push(path);
    const file = normalize(join(dir, path));
    try {
      if (!file.startsWith(dir + sep)) throw new Error("outside");
      const body = await readFile(file);
      res.writeHead(200, { "Content-Type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((ok) => { server.close(ok); server.closeAllConnections(); }),
  };
}

/** Opens `path` of the server in a fresh Chromium context and returns its `window.result`. */
async function runPage(path, label) {
  const server = await serve(project);
  const browser = await launchChromium();
  try {
    const page = await newPage(browser, label);
    await page.goto(`${server.url}${path}`);
    await page.waitForFunction(() => window.result !== undefined, null, { timeout: PAGE_TIMEOUT_MS });
    return { result: await page.evaluate(() => window.result), requests: server.requests };
  } finally {
    await browser.close();
    await server.close();
  }
}

test("a page imports the package from node_modules in Chromium, without a bundler", async () => {
  mkdirSync(join(project, "plain"));
  writeFileSync(join(project, "plain", "main.js"), PAGE_CODE);
  writeFileSync(
    join(project, "plain", "index.html"),
    `<!doctype html><meta charset="utf-8"><title>no bundler</title>
<script type="importmap">{ "imports": { "deadletter": "/node_modules/deadletter/index.js" } }</script>
<script type="module" src="./main.js"></script>
`,
  );
  const { result, requests } = await runPage("/plain/index.html", "no bundler");
  assert.deepEqual(result, EXPECTED_PAGE_RESULT);
  assert.ok(requests.includes("/node_modules/deadletter/deadletter_wasm_bg.wasm"), requests.join(" "));
});

test("an esbuild bundle of the page finds the .wasm next to it in Chromium", async () => {
  mkdirSync(join(project, "src"));
  writeFileSync(join(project, "src", "main.js"), PAGE_CODE);
  const out = join(project, "public");
  const built = await build({
    entryPoints: [join(project, "src", "main.js")],
    bundle: true,
    format: "esm",
    platform: "browser",
    outfile: join(out, "app.js"),
    logLevel: "silent",
    absWorkingDir: project,
  });
  assert.deepEqual(built.errors, []);
  assert.deepEqual(built.warnings, []);
  assert.deepEqual(readdirSync(out), ["app.js"]); // one file: the package's JS is inside
  // The README's step for esbuild: the .wasm goes next to the bundle.
  copyFileSync(join(project, "node_modules", "deadletter", "deadletter_wasm_bg.wasm"), join(out, "deadletter_wasm_bg.wasm"));
  writeFileSync(join(out, "index.html"), '<!doctype html><meta charset="utf-8"><script type="module" src="./app.js"></script>\n');
  const { result, requests } = await runPage("/public/index.html", "esbuild");
  assert.deepEqual(result, EXPECTED_PAGE_RESULT);
  assert.deepEqual(requests.filter((p) => p !== "/favicon.ico"), [
    "/public/index.html",
    "/public/app.js",
    "/public/deadletter_wasm_bg.wasm",
  ]);
});

/** The service worker of the classic-worker check: a bundle (iife) of the package's service-worker entry. */
const SW_CODE = `import { Outbox, load, open } from "deadletter/service-worker";
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => event.waitUntil((async () => {
  try {
    // A classic worker's bundle has no import.meta: it says where it serves the .wasm.
    await load("/public-sw/deadletter_wasm_bg.wasm");
    const db = await open("sw-install-check");
    const q = db.queue("jobs");
    const m = await q.enqueue("hello", { maxRetries: 2 });
    const c = await q.claim({ leaseMs: 5000 });
    const done = await q.succeed(c.id, { leaseToken: c.leaseToken });
    const next = await q.claim();
    const outbox = new Outbox(db, { queue: "posts" });
    const kept = await outbox.add(new Request("/nowhere", { method: "POST", body: "x" }));
    event.source.postMessage({
      enqueued: [m.id, m.status],
      claimed: [c.id, c.status, c.payload, typeof c.leaseToken],
      succeeded: [done.id, done.status, done.leaseToken],
      next,
      kept: [kept.status, Outbox.requestOf(kept).method],
    });
    db.close();
  } catch (err) {
    event.source.postMessage({ error: String(err?.stack ?? err) });
  }
})()));
`;

test("an esbuild bundle of the service-worker entry runs as a classic service worker in Chromium", async () => {
  mkdirSync(join(project, "sw-src"));
  writeFileSync(join(project, "sw-src", "sw.js"), SW_CODE);
  const out = join(project, "public-sw");
  const built = await build({
    entryPoints: [join(project, "sw-src", "sw.js")],
    bundle: true,
    format: "iife",
    platform: "browser",
    outfile: join(out, "sw.js"),
    logLevel: "silent",
    absWorkingDir: project,
  });
  assert.deepEqual(built.errors, []);
  // The one expected warning: the bundle has no import.meta (hence load(url) above).
  assert.deepEqual(built.warnings.map((w) => w.text).filter((t) => !t.includes("import.meta")), []);
  copyFileSync(join(project, "node_modules", "deadletter", "deadletter_wasm_bg.wasm"), join(out, "deadletter_wasm_bg.wasm"));
  writeFileSync(join(out, "index.html"), `<!doctype html><meta charset="utf-8"><script type="module">
try {
  await navigator.serviceWorker.register("/public-sw/sw.js");
  const registration = await navigator.serviceWorker.ready;
  window.result = await new Promise((resolve) => {
    navigator.serviceWorker.onmessage = (event) => resolve(event.data);
    registration.active.postMessage("run");
  });
} catch (err) {
  window.result = { error: String(err?.stack ?? err) };
}
</script>
`);
  const { result } = await runPage("/public-sw/index.html", "classic service worker");
  assert.deepEqual(result, { ...EXPECTED_PAGE_RESULT, kept: ["pending", "POST"] });
});
