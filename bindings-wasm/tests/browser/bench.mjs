// Benchmark (not a test): in one headless Chromium page, N enqueue+claim+succeed cycles through
// the package against N times three plain IndexedDB readwrite transactions (put; get+put;
// get+put) on a separate database, the least any IndexedDB store needs for the same three steps;
// then the time of one claim with 200 delayed 10 kB messages ahead of the due one (min(N, 100)
// claims): it must stay close to a plain claim, since claim skips delayed messages by key alone.
//
// Usage: node bindings-wasm/tests/browser/bench.mjs [N] [--pkg DIR]   (`make bench-js`, N=300)

import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { DEFAULT_PKG_DIR, startServer } from "../../../examples/browser/server.mjs";
import { launchChromium, newPage } from "./chromium.mjs";

const args = process.argv.slice(2);
const pkgAt = args.indexOf("--pkg");
const pkgDir = resolve(pkgAt >= 0 ? args[pkgAt + 1] : process.env.DEADLETTER_PKG ?? DEFAULT_PKG_DIR);
const n = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--pkg") ?? 300);

try {
  await stat(join(pkgDir, "package.json"));
} catch {
  console.error(`bench-js: no built package in ${pkgDir}; build it with \`make js\``);
  process.exit(2);
}
const server = await startServer({ pkgDir });
const browser = await launchChromium();
try {
  const page = await newPage(browser, "bench");
  await page.goto(`${server.url}/bindings-wasm/tests/browser/page.html`);
  await page.waitForFunction(() => window.suites !== undefined);
  const r = await page.evaluate((count) => window.suites.bench(count), n);
  const dl = r.deadletterMs / r.n;
  const raw = r.rawMs / r.n;
  console.log(`Chromium ${browser.version()}, ${r.n} cycles each after ${r.warmup} warm-up cycles`);
  console.log(`deadletter enqueue+claim+succeed:          ${dl.toFixed(3)} ms/cycle (${r.deadletterMs.toFixed(0)} ms total)`);
  console.log(`plain IndexedDB put; get+put; get+put:     ${raw.toFixed(3)} ms/cycle (${r.rawMs.toFixed(0)} ms total)`);
  console.log(`ratio deadletter / plain IndexedDB:        ${(dl / raw).toFixed(2)}x`);
  for (const delayed of [0, 200]) {
    const d = await page.evaluate(([count, ahead]) => window.suites.benchDelayed(count, ahead), [Math.min(n, 100), delayed]);
    const label = `claim, ${d.delayed} delayed ${d.payloadBytes / 1000} kB messages ahead:`;
    console.log(`${label.padEnd(43)}${(d.claimMs / d.n).toFixed(3)} ms/claim (${d.n} claims)`);
  }
} finally {
  await browser.close();
  await server.close();
}
