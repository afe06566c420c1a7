// Benchmark (not a test): in one headless Chromium page, of one run,
// 1. enqueue+claim+succeed through the package against three plain IndexedDB readwrite
//    transactions (put; get+put; get+put) on a separate database, the least any IndexedDB store
//    needs for the same three steps (issue 10: within 1.3x); and, to tell the store's design from
//    the binding's cost, plain IndexedDB making deadletter's own requests on a database of its
//    schema, and on one with only its claim index;
// 2. one claim on a queue with 1 000 delayed messages ahead of the due one against one on a queue
//    with none (issue 10: within 1.2x): claim must not walk the delayed messages.
// Both interleave their two kinds block by block, and print min / median / max of the time of one
// operation per block and the ratio of the medians. The header gives the package's .wasm size.
//
// Usage: node bindings-wasm/tests/browser/bench.mjs [ROUNDS] [--pkg DIR]   (`make bench-js`: 60)

import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { DEFAULT_PKG_DIR, startServer } from "../../../examples/browser/server.mjs";
import { launchChromium, newPage } from "./chromium.mjs";
import { wasmSize } from "../../size.mjs";

const args = process.argv.slice(2);
const pkgAt = args.indexOf("--pkg");
const pkgDir = resolve(pkgAt >= 0 ? args[pkgAt + 1] : process.env.DEADLETTER_PKG ?? DEFAULT_PKG_DIR);
const rounds = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--pkg") ?? 60);
const PER_ROUND = 10;
const DELAYED = 1000;

try {
  await stat(join(pkgDir, "package.json"));
} catch {
  console.error(`bench-js: no built package in ${pkgDir}; build it with \`make js\``);
  process.exit(2);
}

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { min: sorted[0], median, max: sorted[sorted.length - 1] };
}

const ms = (x) => x.toFixed(3).padStart(7);
function line(label, values) {
  const s = summary(values);
  console.log(`${label.padEnd(46)}${ms(s.min)} ${ms(s.median)} ${ms(s.max)}`);
  return s;
}

const wasm = wasmSize(join(pkgDir, "deadletter_wasm_bg.wasm"));
const server = await startServer({ pkgDir });
const browser = await launchChromium();
try {
  const page = await newPage(browser, "bench");
  await page.goto(`${server.url}/bindings-wasm/tests/browser/page.html`);
  await page.waitForFunction(() => window.suites !== undefined);
  console.log(`Chromium ${browser.version()}; deadletter_wasm_bg.wasm ${wasm.raw} bytes, ${wasm.gzipped} gzipped`);

  const c = await page.evaluate(([r, per]) => window.suites.bench(r, per), [rounds, PER_ROUND]);
  console.log(`\n${c.rounds} rounds of ${c.perRound} cycles of each kind, interleaved, after ${c.warmup} warm-up cycles`);
  console.log(`${"ms per cycle".padEnd(46)}${"min".padStart(7)} ${"median".padStart(7)} ${"max".padStart(7)}`);
  const dl = line("deadletter enqueue+claim+succeed", c.deadletter);
  const raw = line("plain IndexedDB put; get+put; get+put", c.raw);
  const same = line("plain IndexedDB, deadletter's requests", c.sameRequests);
  const claimOnly = line("  the same, only the claim index", c.claimIndexOnly);
  console.log(`ratio deadletter / plain IndexedDB (medians):  ${(dl.median / raw.median).toFixed(2)}x (target 1.3x)`);
  console.log(`  of which the store's requests and schema:    ${(same.median / raw.median).toFixed(2)}x (deadletter's requests in plain IndexedDB)`);
  console.log(`    (only the claim index:                     ${(claimOnly.median / raw.median).toFixed(2)}x: requests and records without the other indexes)`);
  console.log(`  and the WebAssembly binding:                 ${(dl.median / same.median).toFixed(2)}x (deadletter / deadletter's requests)`);

  const d = await page.evaluate(([r, n, per]) => window.suites.benchDelayed(r, n, 1000, per), [rounds, DELAYED, PER_ROUND]);
  console.log(`\n${d.rounds} rounds of ${d.perRound} claims on each queue, interleaved; ${d.payloadBytes} B payloads`);
  console.log(`${"ms per claim".padEnd(46)}${"min".padStart(7)} ${"median".padStart(7)} ${"max".padStart(7)}`);
  const ahead = line(`claim, ${d.delayed} delayed messages ahead`, d.ahead);
  const none = line("claim, no delayed message", d.none);
  console.log(`ratio ${d.delayed} delayed ahead / none (medians):  ${(ahead.median / none.median).toFixed(2)}x (target 1.2x)`);
} finally {
  await browser.close();
  await server.close();
}
