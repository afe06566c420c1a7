// Profiler (not a test): where the cycle of the benchmark (enqueue+claim+succeed) spends its time
// in Chromium, for deadletter and for the same IndexedDB requests made from plain JavaScript
// (suites.js's sameRequestsCycle, the floor of issue 20), in one page. For each kind, after a
// warm-up, N cycles under the DevTools protocol's sampling profiler (`Profiler.start`, one sample
// every INTERVAL us), then the samples' self time grouped by function and by where the function
// comes from (the WebAssembly module, its glue, the package's JavaScript, the page, the browser's
// own functions, idle), per cycle. The kinds are profiled in turn, ROUNDS times, and the figures
// are the sums over the rounds divided by the cycles.
//
// First, in a page of its own (the wrappers cost time), it counts what one cycle of deadletter
// asks of the WebAssembly module: calls into it (its exports) and out of it (its imports: the
// glue's and record.js's functions), and TextDecoder calls. Last, in the profiled page, the bytes
// each kind allocates per cycle, by function (the sampling heap profiler, `HeapProfiler.
// startSampling` with the objects the garbage collector took counted: what the collector's time
// follows; issue 20's session 7 cut the binding's from 23.6 to 18.0 kB against the floor's 7.8).
//
// Usage: node bindings-wasm/tests/browser/profile.mjs [N] [--pkg DIR] [--rounds R] [--interval US] [--top K]

import { resolve } from "node:path";
import { DEFAULT_PKG_DIR, startServer } from "../../../examples/browser/server.mjs";
import { launchChromium, newPage } from "./chromium.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const N = Number(args.find((a, i) => /^\d+$/.test(a) && !args[i - 1]?.startsWith("--")) ?? 500);
const pkgDir = resolve(option("--pkg", DEFAULT_PKG_DIR));
const ROUNDS = Number(option("--rounds", 3));
const INTERVAL = Number(option("--interval", 50));
const TOP = Number(option("--top", 25));
const KINDS = ["deadletter", "sameRequests"];

/** Where a profile node's function comes from. */
function origin(frame) {
  const { url, functionName } = frame;
  if (url.startsWith("wasm://") || /^\$?func\d+$|^\$/.test(functionName)) return "wasm";
  if (url.endsWith("/deadletter_wasm.js")) return "glue";
  if (url.includes("/snippets/")) return "record.js";
  if (url.includes("/pkg/store/")) return `store/${url.split("/").pop()}`;
  if (url.includes("/pkg/")) return url.split("/").pop();
  if (url.includes("suites.js")) return "suites.js";
  if (url === "") return functionName.startsWith("(") ? functionName : "browser";
  return url.split("/").pop();
}

/** A function's name in the tables: its origin, name and line. */
function label(frame) {
  const where = origin(frame);
  return `${where} ${frame.functionName || "(anonymous)"}${frame.url && !where.endsWith("wasm") ? `:${frame.lineNumber + 1}` : ""}`;
}

/**
 * Self time (us) by function and by origin, and total time by function (each sample counted once
 * for every function on its stack), of one profile.
 */
function attribute(profile, byFunction, byOrigin, total) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  for (let i = 0; i < profile.samples.length; i += 1) {
    // timeDeltas[i] is the time before sample i; the sample's own time is the next delta.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const frame = nodes.get(profile.samples[i]).callFrame;
    const key = label(frame);
    byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
    byOrigin.set(origin(frame), (byOrigin.get(origin(frame)) ?? 0) + dt);
    const seen = new Set();
    for (let id = profile.samples[i]; id !== undefined; id = parent.get(id)) seen.add(label(nodes.get(id).callFrame));
    for (const k of seen) total.set(k, (total.get(k) ?? 0) + dt);
  }
}

/**
 * Wraps, before the package loads, every import and export of the module and TextDecoder's
 * decode, counting their calls while `window.counts.on`.
 */
function countCalls() {
  const c = (window.counts = { on: false, exports: {}, imports: {}, decode: 0 });
  const bump = (o, k) => {
    if (c.on) o[k] = (o[k] ?? 0) + 1;
  };
  const decode = TextDecoder.prototype.decode;
  TextDecoder.prototype.decode = function (...a) {
    if (c.on) c.decode += 1;
    return decode.apply(this, a);
  };
  const instantiate = WebAssembly.instantiateStreaming;
  WebAssembly.instantiateStreaming = async (source, imports) => {
    for (const fns of Object.values(imports)) {
      for (const [name, f] of Object.entries(fns)) {
        if (typeof f === "function") fns[name] = function (...a) {
          bump(c.imports, name.replace(/_[0-9a-f]{16}$/, ""));
          return f.apply(this, a);
        };
      }
    }
    const { instance, module } = await instantiate(source, imports);
    const exports = {};
    for (const [name, v] of Object.entries(instance.exports)) {
      exports[name] = typeof v !== "function" ? v : function (...a) {
        bump(c.exports, name);
        return v.apply(this, a);
      };
    }
    return { instance: { exports }, module };
  };
}

/** The counts of `countCalls` for `n` cycles of deadletter, per cycle. */
async function counts(browser, url, n) {
  const page = await newPage(browser, "counts");
  try {
    await page.addInitScript(countCalls);
    await page.goto(`${url}/bindings-wasm/tests/browser/page.html`);
    await page.waitForFunction(() => window.suites !== undefined);
    await page.evaluate(() => window.suites.cycleKinds());
    await page.evaluate(() => window.runKind("deadletter", 20));
    const c = await page.evaluate(async (n) => {
      window.counts.on = true;
      await window.runKind("deadletter", n);
      window.counts.on = false;
      return window.counts;
    }, n);
    const per = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${+(v / n).toFixed(2)}`);
    const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0) / n;
    console.log(`per cycle (counted over ${n}): calls into the module ${sum(c.exports)}, out of it ${sum(c.imports)}, TextDecoder.decode ${c.decode / n}`);
    console.log(`  into: ${per(c.exports).join(", ")}`);
    console.log(`  out:  ${per(c.imports).join(", ")}\n`);
  } finally {
    await page.context().close();
  }
}

const server = await startServer({ pkgDir });
const browser = await launchChromium();
try {
  await counts(browser, server.url, 100);
  const page = await newPage(browser, "profile");
  await page.goto(`${server.url}/bindings-wasm/tests/browser/page.html`);
  await page.waitForFunction(() => window.suites !== undefined);
  await page.evaluate(() => window.suites.cycleKinds());
  for (const kind of KINDS) await page.evaluate(([k, n]) => window.runKind(k, n), [kind, 200]);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: INTERVAL });
  const out = Object.fromEntries(KINDS.map((k) => [k, { wall: 0, byFunction: new Map(), byOrigin: new Map(), total: new Map() }]));
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const kind of r % 2 === 0 ? KINDS : [...KINDS].reverse()) {
      await cdp.send("Profiler.start");
      out[kind].wall += await page.evaluate(([k, n]) => window.runKind(k, n), [kind, N]);
      const { profile } = await cdp.send("Profiler.stop");
      attribute(profile, out[kind].byFunction, out[kind].byOrigin, out[kind].total);
    }
  }
  const cycles = N * ROUNDS;
  const us = (x) => (x / cycles).toFixed(1).padStart(8);
  console.log(`Chromium ${browser.version()}; ${ROUNDS} rounds of ${N} cycles of each kind, sampled every ${INTERVAL} us; us per cycle`);
  for (const kind of KINDS) console.log(`${kind.padEnd(16)} wall ${us(out[kind].wall * 1000)}`);
  console.log("\nself time by origin           " + KINDS.map((k) => k.padStart(14)).join(""));
  const origins = [...new Set(KINDS.flatMap((k) => [...out[k].byOrigin.keys()]))];
  origins.sort((a, b) => (out.deadletter.byOrigin.get(b) ?? 0) - (out.deadletter.byOrigin.get(a) ?? 0));
  for (const o of origins) console.log(o.padEnd(30) + KINDS.map((k) => us(out[k].byOrigin.get(o) ?? 0).padStart(14)).join(""));
  for (const kind of KINDS) {
    console.log(`\n${kind}: the ${TOP} functions of most self time`);
    const top = [...out[kind].byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP);
    for (const [key, t] of top) console.log(`${us(t)}  ${key}`);
    console.log(`\n${kind}: the ${TOP} functions of most total time`);
    const totals = [...out[kind].total].sort((a, b) => b[1] - a[1]).slice(0, TOP);
    for (const [key, t] of totals) console.log(`${us(t)}  ${key}`);
  }
  await cdp.send("Profiler.disable");
  await cdp.send("HeapProfiler.enable");
  for (const kind of KINDS) {
    await cdp.send("HeapProfiler.startSampling", {
      samplingInterval: 128,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await page.evaluate(([k, n]) => window.runKind(k, n), [kind, N]);
    const { profile } = await cdp.send("HeapProfiler.stopSampling");
    const bytes = new Map();
    const visit = (node) => {
      const key = label(node.callFrame);
      bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    const total = [...bytes.values()].reduce((a, b) => a + b, 0);
    console.log(`\n${kind}: ${Math.round(total / N)} B allocated per cycle (sampled over ${N}); the ${TOP} functions of most`);
    const top = [...bytes].sort((a, b) => b[1] - a[1]).slice(0, TOP);
    for (const [key, b] of top) console.log(`${String(Math.round(b / N)).padStart(8)}  ${key}`);
  }
} finally {
  await browser.close();
  await server.close();
}
