// Timeline (not a test): where a cycle enqueue+claim+succeed of the benchmark spends its time in
// Chromium, request by request, for deadletter and for plain IndexedDB making its requests
// (suites.js's sameRequestsCycle, the floor of issue 20), in one page. Every IndexedDB call of a
// cycle is wrapped (before the page loads): the moment it is called and returns (`tx`, `get`,
// `get returned`, `commit`, ...), and the moment its `success` or `complete` event fires (`get
// answered`, `complete`). For each kind, the cycles whose sequence of moments is the most common
// one (the same requests in the same order) give the mean time between each moment and the one
// before: the JavaScript and WebAssembly of the binding between an answer and the next request,
// the time of each IndexedDB call on the main thread, and the waits for the browser's answers.
// The kinds run in blocks of 10 cycles, interleaved, after a warm-up. performance.now() is
// coarse (100 us, with jitter) in a page that is not cross-origin isolated: the means over many
// cycles are not. Last, per transaction, the sums of the gaps before the moments the page makes
// (a transaction, a request, a commit: the JavaScript and WebAssembly before each) and of all.
// With `--before DIR`, the other kind is that build of the package (served as /pkg-before/) in
// the same page instead of plain IndexedDB: a change's effect request by request, paired.
//
// Usage: node bindings-wasm/tests/browser/timeline.mjs [ROUNDS] [--pkg DIR] [--before DIR]   (10 cycles of each kind per round)

import { resolve } from "node:path";
import { DEFAULT_PKG_DIR, startServer } from "../../../examples/browser/server.mjs";
import { launchChromium, newPage } from "./chromium.mjs";

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? resolve(args[args.indexOf(name) + 1]) : undefined);
const pkgDir = option("--pkg") ?? resolve(DEFAULT_PKG_DIR);
const beforeDir = option("--before");
const rounds = Number(args.find((a, i) => /^\d+$/.test(a) && !args[i - 1]?.startsWith("--")) ?? 200);
const KINDS = ["deadletter", beforeDir === undefined ? "sameRequests" : "before"];

/** Runs in the page before its scripts: wraps the IndexedDB calls, logging into `window.timeline.log` while it is an array. */
function wrapIndexedDB() {
  const t = (window.timeline = { log: null });
  const mark = (what) => t.log?.push([what, performance.now()]);
  const requests = (proto, names) => {
    for (const name of names) {
      const original = proto[name];
      proto[name] = function (...a) {
        mark(name);
        const req = original.apply(this, a);
        mark(`${name} returned`);
        req.addEventListener("success", () => mark(`${name} answered`));
        return req;
      };
    }
  };
  requests(IDBObjectStore.prototype, ["get", "getAll", "getKey", "add", "put", "delete", "openCursor", "openKeyCursor", "count"]);
  requests(IDBIndex.prototype, ["get", "getAll", "getKey", "openCursor", "openKeyCursor", "count"]);
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (...a) {
    mark("tx");
    const tx = transaction.apply(this, a);
    mark("tx returned");
    tx.addEventListener("complete", () => mark("complete"));
    return tx;
  };
  const commit = IDBTransaction.prototype.commit;
  IDBTransaction.prototype.commit = function () {
    mark("commit");
    commit.call(this);
    mark("commit returned");
  };
}

/** In the page: `rounds` rounds of 10 cycles of each kind; per kind, the most common sequence and its mean gaps (us). */
async function run([kinds, rounds]) {
  await window.suites.cycleKinds();
  if (kinds.includes("before")) {
    // The build before, its cycle as suites.js's deadletterCycle.
    const before = await import("/pkg-before/index.js");
    const queue = (await before.open(`timeline-before-${Date.now()}`)).queue("bench");
    const [runKind, serial] = [window.runKind, { n: 0 }];
    window.runKind = async (kind, n) => {
      if (kind !== "before") return runKind(kind, n);
      for (let i = 0; i < n; i += 1) {
        await queue.enqueue(`job ${(serial.n += 1)}`);
        const message = await queue.claim();
        await queue.succeed(message.id, { leaseToken: message.leaseToken });
      }
    };
  }
  const t = window.timeline;
  const seen = Object.fromEntries(kinds.map((k) => [k, new Map()]));
  const cycle = async (kind, keep) => {
    t.log = [["call", performance.now()]];
    await window.runKind(kind, 1);
    t.log.push(["resolved", performance.now()]);
    const log = t.log;
    t.log = null;
    if (!keep) return;
    const key = log.map((m) => m[0]).join("|");
    let entry = seen[kind].get(key);
    if (entry === undefined) seen[kind].set(key, (entry = { n: 0, gaps: new Array(log.length - 1).fill(0) }));
    entry.n += 1;
    for (let i = 1; i < log.length; i += 1) entry.gaps[i - 1] += log[i][1] - log[i - 1][1];
  };
  for (const kind of kinds) for (let i = 0; i < 100; i += 1) await cycle(kind, false);
  for (let r = 0; r < rounds; r += 1) {
    for (const kind of r % 2 === 0 ? kinds : [...kinds].reverse()) for (let i = 0; i < 10; i += 1) await cycle(kind, true);
  }
  return Object.fromEntries(kinds.map((kind) => {
    const [key, e] = [...seen[kind]].sort((a, b) => b[1].n - a[1].n)[0];
    return [kind, { moments: key.split("|"), n: e.n, gaps: e.gaps.map((g) => (g * 1000) / e.n) }];
  }));
}

const server = await startServer({ pkgDir, beforeDir });
const browser = await launchChromium();
try {
  const page = await newPage(browser, "timeline");
  await page.addInitScript(wrapIndexedDB);
  await page.goto(`${server.url}/bindings-wasm/tests/browser/page.html`);
  await page.waitForFunction(() => window.suites !== undefined);
  const out = await page.evaluate(run, [KINDS, rounds]);
  const [a, b] = KINDS.map((k) => out[k]);
  const us = (x) => x.toFixed(0).padStart(8);
  console.log(`Chromium ${browser.version()}; ${rounds} rounds of 10 cycles of each kind; us from the moment before`);
  console.log(`cycles of the most common sequence: ${KINDS.map((k) => `${k} ${out[k].n}`).join(", ")}`);
  const total = (x) => x.gaps.reduce((s, g) => s + g, 0);
  if (a.moments.join() === b.moments.join()) {
    console.log(`${"moment".padEnd(24)}${KINDS.map((k) => k.padStart(14)).join("")}${"difference".padStart(12)}`);
    for (let i = 1; i < a.moments.length; i += 1) {
      const [x, y] = [a.gaps[i - 1], b.gaps[i - 1]];
      console.log(`${a.moments[i].padEnd(24)}${us(x).padStart(14)}${us(y).padStart(14)}${us(x - y).padStart(12)}`);
    }
    console.log(`${"cycle".padEnd(24)}${us(total(a)).padStart(14)}${us(total(b)).padStart(14)}${us(total(a) - total(b)).padStart(12)}`);
  } else {
    for (const kind of KINDS) {
      const k = out[kind];
      console.log(`\n${kind} (cycle ${us(total(k))} us):`);
      for (let i = 1; i < k.moments.length; i += 1) console.log(`${k.moments[i].padEnd(24)}${us(k.gaps[i - 1])}`);
    }
  }
  // Per transaction (from each `tx` on): the gaps before the moments the page makes, and all.
  const phases = (x) => {
    const out = [];
    for (let i = 1; i < x.moments.length; i += 1) {
      if (x.moments[i] === "tx") out.push({ made: 0, all: 0 });
      const phase = out.at(-1);
      if (phase === undefined) continue;
      phase.all += x.gaps[i - 1];
      if (!/returned|answered|complete/.test(x.moments[i])) phase.made += x.gaps[i - 1];
    }
    return out;
  };
  const [pa, pb] = [phases(a), phases(b)];
  console.log(`\nper transaction${"".padEnd(9)}${KINDS.map((k) => k.padStart(14)).join("")}${"difference".padStart(12)}`);
  for (let t = 0; t < Math.min(pa.length, pb.length); t += 1) {
    for (const what of ["made", "all"]) {
      const [x, y] = [pa[t][what], pb[t][what]];
      console.log(`${`${t + 1}: ${what === "made" ? "the page's gaps" : "all"}`.padEnd(24)}${us(x).padStart(14)}${us(y).padStart(14)}${us(x - y).padStart(12)}`);
    }
  }
} finally {
  await browser.close();
  await server.close();
}
