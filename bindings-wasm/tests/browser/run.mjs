// The browser tests of the npm package `deadletter`, in headless Chromium with its real IndexedDB:
//
// 1. conformance: every case of tests/conformance/*.json, each on a fresh database, through
//    bindings-wasm/js/conformance.mjs (the same runner as the Node tests, served from the built
//    package, which holds a copy of it);
// 2. store: the IndexedDB store's own cases (bindings-wasm/js/test/store-cases.mjs, which Node runs
//    on fake-indexeddb too): its transaction discipline (a foreign await inside a transaction is a
//    store error that writes nothing; a failing step or request rolls back), its unique index,
//    the claim's walk of a long timed lane, the refusal of another application's database;
//    errors: what the package's errors say (bindings-wasm/js/test/error-texts.mjs, which Node
//    runs on fake-indexeddb and on SQLite files too), and what a user's getter throws;
//    worker: the worker loop's shared cases (bindings-wasm/js/test/worker-cases.mjs, which Node
//    runs on fake-indexeddb and on SQLite files too): the lease each claim and heartbeat takes;
// 3. two workers: two dedicated module workers claim from one database of 500 messages until it
//    is empty; every message must be claimed exactly once, and both workers must claim some;
// 4. race: two dedicated workers race 1000 enqueues each over 100 idempotency keys and leave
//    exactly 100 messages; then their worker loops (`queue.process`) handle each exactly once;
// 5. offline: the worker loop claims nothing while Playwright keeps the browser offline (no timer
//    runs meanwhile) and resumes on the `online` event;
// 6. dead letters across tabs: two tabs of one browser context watch one database with onDead; a
//    message dies in a dedicated worker of the first tab, then one in the second tab; every
//    callback of the other tab (and of the tab itself) must fire with that message, Dates intact;
// 7. sync: offline sync through a service worker (sync.html, sync-sw.js): posts kept offline by
//    the outbox, delivered exactly once each on a Background Sync event dispatched through the
//    DevTools protocol; a 410 ends dead with its history, heard by onDead, replayed from a
//    reopened page; a send slower than its lease is not sent again by a second sync (finding M1);
//    in a page without a service worker, listen() sends at once what a closed page kept (M13);
// 8. demo: examples/browser/ relays the webhook examples on `queue.process`, drains, shows the error
//    history of dead messages, pauses and resumes, is fixed, replays the dead messages and ends
//    with every message succeeded; screenshots go to
//    build/browser-demo-drained.png (after the first drain) and build/browser-demo.png (the end).
//
// Usage: node bindings-wasm/tests/browser/run.mjs [--pkg DIR] [--only conformance,store,errors,worker,workers,race,offline,dead,sync,demo]
// (`make test-browser` builds the package first). Prints "N passed, M failed" last and exits
// non-zero on any failure.

import { mkdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { DEFAULT_PKG_DIR, ROOT, startServer } from "../../../examples/browser/server.mjs";
import { launchChromium, newPage, pageIn } from "./chromium.mjs";

/**
 * Conformance cases that cannot pass in Chromium, "file::case name" -> reason. A listed case that
 * fails counts as passed (an expected failure, printed with its reason); a listed case that passes
 * fails the run, so the list stays true. None so far.
 */
const EXPECTED_FAILURES = new Map([]);

const WORKER_MESSAGES = 500;
const RACE_ENQUEUES = 1000;
const RACE_KEYS = 100;
const CASE_TIMEOUT_MS = 30_000;
const WORKERS_TIMEOUT_MS = 120_000;
const DEAD_TIMEOUT_MS = 10_000;
const DEMO_DRAIN_TIMEOUT_MS = 90_000;
const SCREENSHOT = join(ROOT, "build", "browser-demo.png");
const SCREENSHOT_DRAINED = join(ROOT, "build", "browser-demo-drained.png");
const SCREENSHOT_OFFLINE = join(ROOT, "build", "browser-demo-offline.png");

const args = process.argv.slice(2);
const arg = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const pkgDir = resolve(arg("--pkg") ?? process.env.DEADLETTER_PKG ?? DEFAULT_PKG_DIR);
const only = new Set((arg("--only") ?? "conformance,store,errors,worker,workers,race,offline,dead,sync,demo").split(","));

/** `promise`, or a rejection naming `what` after `ms`: a hung page must not hang the run. */
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

let passed = 0;
let failed = 0;
function report(ok, name, detail = "") {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ` — ${detail}` : ""}`);
}

async function openSuitesPage(browser, url, label) {
  const page = await newPage(browser, label);
  await page.goto(`${url}/bindings-wasm/tests/browser/page.html`);
  await page.waitForFunction(() => window.suites !== undefined, null, { timeout: 30_000 });
  return page;
}

async function conformance(browser, url) {
  const page = await openSuitesPage(browser, url, "conformance");
  const cases = await page.evaluate(() => window.suites.listCases());
  let ok = 0;
  let bad = 0;
  let skipped = 0;
  for (const { file, name, skip } of cases) {
    const key = `${file}::${name}`;
    if (skip !== undefined) {
      console.log(`skip conformance ${key}: ${skip}`);
      skipped += 1;
      continue;
    }
    const result = await within(CASE_TIMEOUT_MS, key, page.evaluate(([f, n]) => window.suites.runCase(f, n), [file, name]))
      .catch((err) => ({ ok: false, error: err.message }));
    const reason = EXPECTED_FAILURES.get(key);
    let good = result.ok;
    let detail = result.error ?? "";
    if (reason !== undefined) {
      good = !result.ok;
      detail = result.ok ? `listed as failing in Chromium (${reason}) but passed: update the list` : `expected failure: ${reason}`;
    }
    report(good, `conformance ${key}`, detail);
    if (good) ok += 1;
    else bad += 1;
  }
  const unknown = [...EXPECTED_FAILURES.keys()].filter((k) => !cases.some((c) => `${c.file}::${c.name}` === k));
  for (const key of unknown) {
    report(false, `conformance ${key}`, "listed in EXPECTED_FAILURES but no such case");
    bad += 1;
  }
  console.log(`conformance: ${ok} passed, ${bad} failed, ${skipped} skipped (Chromium IndexedDB, ${cases.length} cases)`);
  await page.context().close();
}

/** The IndexedDB store's own cases (js/test/store-cases.mjs): its transaction discipline on the real IndexedDB. */
async function storeCases(browser, url) {
  const page = await openSuitesPage(browser, url, "store");
  for (const name of await page.evaluate(() => window.suites.listStoreCases())) {
    const result = await within(CASE_TIMEOUT_MS, name, page.evaluate((n) => window.suites.runStoreCase(n), name))
      .catch((err) => ({ ok: false, error: err.message }));
    report(result.ok, `store: ${name}`, result.error ?? "");
  }
  await page.context().close();
}

/** What the package's errors say (js/test/error-texts.mjs), in the page's package on the real IndexedDB. */
async function errorTexts(browser, url) {
  const page = await openSuitesPage(browser, url, "errors");
  for (const name of await page.evaluate(() => window.suites.listErrorTextCases())) {
    const result = await within(CASE_TIMEOUT_MS, name, page.evaluate((n) => window.suites.runErrorTextCase(n), name))
      .catch((err) => ({ ok: false, error: err.message }));
    report(result.ok, `errors: ${name}`, result.error ?? "");
  }
  await page.context().close();
}

/** The worker loop's shared cases (js/test/worker-cases.mjs), in the page's package on the real IndexedDB. */
async function workerCases(browser, url) {
  const page = await openSuitesPage(browser, url, "worker");
  for (const name of await page.evaluate(() => window.suites.listWorkerCases())) {
    const result = await within(CASE_TIMEOUT_MS, name, page.evaluate((n) => window.suites.runWorkerCase(n), name))
      .catch((err) => ({ ok: false, error: err.message }));
    report(result.ok, `worker: ${name}`, result.error ?? "");
  }
  await page.context().close();
}

async function twoWorkers(browser, url) {
  const page = await openSuitesPage(browser, url, "workers");
  const r = await within(WORKERS_TIMEOUT_MS, "two workers", page.evaluate((n) => window.suites.twoWorkers(n), WORKER_MESSAGES));
  await page.context().close();
  const problems = [];
  for (const w of r.workers) if (w.error) problems.push(`${w.name}: ${w.error}`);
  const all = r.workers.flatMap((w) => w.ids);
  const counts = new Map();
  for (const id of all) counts.set(id, (counts.get(id) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  const never = r.enqueued.filter((id) => !counts.has(id));
  if (r.enqueued.length !== WORKER_MESSAGES) problems.push(`enqueued ${r.enqueued.length}`);
  if (twice.length) problems.push(`claimed more than once: ${twice.slice(0, 10).join(", ")}`);
  if (never.length) problems.push(`never claimed: ${never.slice(0, 10).join(", ")}`);
  for (const w of r.workers) if (w.ids.length === 0) problems.push(`${w.name} claimed nothing`);
  if (r.statuses.succeeded !== WORKER_MESSAGES) problems.push(`statuses afterwards: ${JSON.stringify(r.statuses)}`);
  const split = r.workers.map((w) => `${w.name} ${w.ids.length}`).join(", ");
  report(
    problems.length === 0,
    `two workers claim ${WORKER_MESSAGES} messages exactly once`,
    problems.length ? problems.join("; ") : `${split} (${all.length} claims in ${(r.ms / 1000).toFixed(2)} s)`,
  );
}

/**
 * Two dedicated workers race RACE_ENQUEUES enqueues each over RACE_KEYS idempotency keys: exactly
 * one message per key must be stored, every enqueue of a key must return that message, and
 * exactly RACE_KEYS of them must have inserted (`deduplicated` false). Then both run the worker loop
 * until every message succeeded: each handled exactly once, the counts they resolve to summing up.
 */
async function race(browser, url) {
  const page = await openSuitesPage(browser, url, "race");
  const r = await within(WORKERS_TIMEOUT_MS, "race", page.evaluate(([n, k, c]) => window.suites.race(n, k, c), [RACE_ENQUEUES, RACE_KEYS, 4]));
  await page.context().close();
  const problems = [];
  const idsByKey = new Map();
  let inserted = 0;
  for (const [w, results] of r.enqueued.entries()) {
    if (results.length !== RACE_ENQUEUES) problems.push(`worker ${w} enqueued ${results.length}`);
    for (const [key, id, deduplicated] of results) {
      idsByKey.set(key, (idsByKey.get(key) ?? new Set()).add(id));
      if (!deduplicated) inserted += 1;
    }
  }
  const split = [...idsByKey].filter(([, ids]) => ids.size !== 1).map(([key]) => key);
  const ids = new Set([...idsByKey.values()].flatMap((set) => [...set]));
  if (idsByKey.size !== RACE_KEYS) problems.push(`${idsByKey.size} keys`);
  if (split.length) problems.push(`keys with more than one message: ${split.slice(0, 5).join(", ")}`);
  if (inserted !== RACE_KEYS) problems.push(`${inserted} enqueues inserted (deduplicated false), expected ${RACE_KEYS}`);
  const { pending, processing, succeeded, dead } = r.stored;
  if (pending !== RACE_KEYS || processing + succeeded + dead !== 0) problems.push(`stored: ${JSON.stringify(r.stored)}`);
  const handled = r.processed.map((p) => p.handled);
  const seen = r.processed.flatMap((p) => p.ids);
  const twice = seen.filter((id, i) => seen.indexOf(id) !== i);
  if (handled[0] + handled[1] !== RACE_KEYS) problems.push(`the loops resolved to ${handled.join(" + ")}`);
  if (twice.length) problems.push(`handled more than once: ${twice.slice(0, 5).join(", ")}`);
  if (seen.length !== RACE_KEYS || !seen.every((id) => ids.has(id))) problems.push(`handled ${seen.length} ids`);
  if (r.after.succeeded !== RACE_KEYS) problems.push(`at the end: ${JSON.stringify(r.after)}`);
  report(
    problems.length === 0,
    `two workers race ${RACE_ENQUEUES} enqueues each over ${RACE_KEYS} keys: ${RACE_KEYS} messages, each handled once by their loops`,
    problems.join("; ") || `${ids.size} messages; the loops handled ${handled.join(" and ")}`,
  );
}

/**
 * The worker loop pauses while the browser is offline: Playwright's `setOffline` switches
 * `navigator.onLine` and fires `offline` / `online`. Offline, the loop claims nothing and reads
 * nothing (no timer runs); online, it handles what waits.
 */
async function offlinePause(browser, url) {
  const context = await browser.newContext();
  const problems = [];
  try {
    const page = await pageIn(context, "offline");
    await page.goto(`${url}/bindings-wasm/tests/browser/page.html`);
    await page.waitForFunction(() => window.suites !== undefined, null, { timeout: 30_000 });
    const state = () => page.evaluate(() => window.suites.offlineState());
    const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const waitFor = async (what, condition) => {
      const started = Date.now();
      for (let s = await state(); ; s = await state()) {
        if (condition(s)) return s;
        if (Date.now() - started > 10_000) throw new Error(`${what}: still ${JSON.stringify(s)}`);
        await settle(20);
      }
    };
    await page.evaluate(() => window.suites.offlinePrepare(3));
    await context.setOffline(true);
    await waitFor("offline", (s) => !s.onLine);
    await page.evaluate(() => window.suites.offlineStart());
    await settle(100);
    const paused = await state();
    await settle(400); // eight poll intervals
    const still = await state();
    if (paused.claims !== 0 || paused.handled.length !== 0) problems.push(`started offline: ${JSON.stringify(paused)}`);
    if (still.claims !== 0 || still.reads !== paused.reads) problems.push(`while offline: ${JSON.stringify(paused)} then ${JSON.stringify(still)}`);
    await context.setOffline(false);
    const back = await waitFor("the 3 messages after going online", (s) => s.handled.length === 3);
    // Offline again while idle: the poll timer fires once more, finds the browser offline, stops.
    await context.setOffline(true);
    await waitFor("offline again", (s) => !s.onLine);
    await settle(150);
    const pausedAgain = await state();
    await page.evaluate(() => window.suites.offlineEnqueue(2));
    await settle(400);
    const stillAgain = await state();
    if (stillAgain.claims !== pausedAgain.claims || stillAgain.reads !== pausedAgain.reads || stillAgain.handled.length !== 3) {
      problems.push(`offline again: ${JSON.stringify(pausedAgain)} then ${JSON.stringify(stillAgain)}`);
    }
    await context.setOffline(false);
    const end = await waitFor("the 2 later messages", (s) => s.handled.length === 5);
    const stopped = await page.evaluate(() => window.suites.offlineStop());
    if (stopped.handled !== 5 || stopped.stats.succeeded !== 5) problems.push(`stopped: ${JSON.stringify(stopped)}`);
    if (end.events.join() !== "offline,online,offline,online") problems.push(`events: ${end.events}`);
    report(
      problems.length === 0,
      "the worker loop claims nothing while offline, without timers, and resumes on the online event",
      problems.join("; ") || `no claim and no onLine read in 400 ms offline, twice; ${back.claims} claims to handle 3 once online, 5 in all`,
    );
  } finally {
    await context.close();
  }
}

/** Polls `page`'s `deadSeen()` until it holds `n` messages (or `DEAD_TIMEOUT_MS` passed). */
async function seenBy(page, n) {
  const started = Date.now();
  for (;;) {
    const seen = await page.evaluate(() => window.suites.deadSeen());
    if (seen.length >= n || Date.now() - started > DEAD_TIMEOUT_MS) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function deadAcrossTabs(browser, url) {
  const context = await browser.newContext();
  const problems = [];
  try {
    const open = async (label) => {
      const page = await pageIn(context, label);
      await page.goto(`${url}/bindings-wasm/tests/browser/page.html`);
      await page.waitForFunction(() => window.suites !== undefined, null, { timeout: 30_000 });
      return page;
    };
    const [tabA, tabB] = [await open("dead-tab-a"), await open("dead-tab-b")];
    const dbName = `dead-across-tabs-${Date.now()}`;
    for (const tab of [tabA, tabB]) await tab.evaluate((name) => window.suites.watchDead(name), dbName);
    const expect = (label, seen, want) => {
      const got = seen.map((m) => `${m.id}/${m.status}/${m.lastError}/${m.deadAt}/${m.errorAtIsDate}`);
      const wanted = want.map((m) => `${m.id}/dead/${m.lastError}/${m.deadAt}/true`);
      if (got.join() !== wanted.join()) problems.push(`${label}: got [${got}], expected [${wanted}]`);
    };
    // 1. A dedicated worker of tab A kills a message: both tabs' callbacks fire.
    const fromWorker = await tabA.evaluate(([name, error]) => window.suites.killInWorker(name, "jobs", error), [dbName, "boom in a worker"]);
    const first = { id: fromWorker.id, lastError: "boom in a worker", deadAt: fromWorker.deadAt };
    expect("tab A after the worker's death", await seenBy(tabA, 1), [first]);
    expect("tab B after the worker's death", await seenBy(tabB, 1), [first]);
    // 2. Tab B kills one itself: its own callback fires at once, tab A's through the channel.
    const fromTab = await tabB.evaluate((error) => window.suites.killHere("jobs", error), "boom in tab B");
    const second = { id: fromTab.id, lastError: "boom in tab B", deadAt: fromTab.deadAt };
    expect("tab B after its own death", await seenBy(tabB, 2), [first, second]);
    expect("tab A after tab B's death", await seenBy(tabA, 2), [first, second]);
    report(
      problems.length === 0,
      "onDead: a message dies in a worker and in another tab, the callbacks of every tab fire",
      problems.join("; ") || `messages ${first.id} (worker) and ${second.id} (tab B) seen by both tabs`,
    );
  } finally {
    await context.close();
  }
}

/** Polls `probe()` until `done(value)` or `ms` passed; resolves to the last value. */
async function until(ms, probe, done) {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() - started > ms) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Offline sync through the service worker (sync.html, sync-sw.js): offline (DevTools network
 * emulation, Playwright's setOffline), the page posts three requests and one to an endpoint that
 * answers 410; the service worker's outbox keeps them (202 each). The page is closed, the network
 * comes back, the Background Sync event is dispatched through the DevTools protocol: the server
 * receives each of the three exactly once, the fourth once, answered 410, and it ends dead with
 * its error history, which a watching page hears through onDead. A reopened page lists it and
 * replays it once the endpoint is fixed: it is delivered.
 */
async function offlineSync(browser, url, server) {
  const context = await browser.newContext();
  const problems = [];
  const tag = "deadletter:posts";
  try {
    server.inbox.reset();
    const open = async (label, path) => {
      const page = await pageIn(context, label);
      await page.goto(`${url}/bindings-wasm/tests/browser/${path}`);
      return page;
    };
    // A page of the origin that hears deaths (any tab hears them through the BroadcastChannel).
    const watcher = await open("sync-watcher", "page.html");
    await watcher.waitForFunction(() => window.suites !== undefined, null, { timeout: 30_000 });
    await watcher.evaluate((name) => window.suites.watchDead(name), "sync-test");
    const first = await open("sync-offline", "sync.html");
    await first.waitForFunction(() => window.sync !== undefined, null, { timeout: 30_000 });
    const backgroundSync = await first.evaluate(() => window.sync.hasBackgroundSync);
    await context.setOffline(true);
    const posts = [["/inbox/a", "one"], ["/inbox/a", "two"], ["/inbox/a", "three"], ["/inbox/gone", "four"]];
    const posted = await first.evaluate((p) => window.sync.post(p), posts);
    if (!posted.every((r) => r.status === 202 && /^\d+$/.test(r.queued ?? ""))) problems.push(`offline posts answered ${JSON.stringify(posted)}`);
    if (server.inbox.received.length !== 0) problems.push(`the server received ${server.inbox.received.length} requests while offline`);
    await first.close();
    await context.setOffline(false);

    const cdp = await context.newCDPSession(watcher);
    const registrations = [];
    cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations: r }) => registrations.push(...r));
    await cdp.send("ServiceWorker.enable");
    const registration = await until(5000, () => registrations.find((r) => r.scopeURL.includes("/bindings-wasm/tests/browser/") && !r.isDeleted), Boolean);
    if (!registration) throw new Error("no service worker registration seen through the DevTools protocol");
    const dispatch = () => cdp.send("ServiceWorker.dispatchSyncEvent", { origin: url, registrationId: registration.registrationId, tag, lastChance: false });
    await dispatch();
    const settled = (r) => r.filter((x) => x.status === 200).length >= 3 && r.some((x) => x.path === "/inbox/gone");
    const received = await until(60_000, () => server.inbox.received.slice(), settled);
    const count = (path, body, status) => received.filter((r) => r.path === path && r.body === body && r.status === status).length;
    for (const [path, body] of posts.slice(0, 3)) {
      if (count(path, body, 200) !== 1) problems.push(`${body} delivered ${count(path, body, 200)} times`);
    }
    if (count("/inbox/gone", "four", 410) !== 1 || received.length !== 4) problems.push(`the server received ${JSON.stringify(received)}`);
    const heard = await until(5000, () => watcher.evaluate(() => window.suites.deadSeen()), (d) => d.length >= 1);
    if (heard.length !== 1 || heard[0].lastError !== "HTTP 410 Gone") problems.push(`onDead heard ${JSON.stringify(heard)}`);

    // A reopened page lists the dead request with its history and replays it, once fixed.
    const again = await open("sync-again", "sync.html");
    await again.waitForFunction(() => window.sync !== undefined, null, { timeout: 30_000 });
    const dead = await again.evaluate(() => window.sync.dead());
    const history = dead[0]?.errors ?? [];
    if (dead.length !== 1 || dead[0].request.method !== "POST" || dead[0].request.url !== "/inbox/gone" || dead[0].body !== "four"
      || history.at(-1) !== "HTTP 410 Gone") {
      problems.push(`dead requests: ${JSON.stringify(dead)}`);
    }
    server.inbox.fixed = true;
    await again.evaluate((id) => window.sync.replay(id), dead[0]?.id);
    const delivered = (r) => r.some((x) => x.path === "/inbox/gone" && x.status === 200);
    let after = await until(10_000, () => server.inbox.received.slice(), delivered);
    const byItself = delivered(after);
    if (!byItself) {
      await dispatch();
      after = await until(30_000, () => server.inbox.received.slice(), delivered);
    }
    if (after.filter((x) => x.path === "/inbox/gone" && x.status === 200).length !== 1) problems.push(`after the replay the server received ${JSON.stringify(after)}`);
    const stats = await until(10_000, () => again.evaluate(() => window.sync.stats()), (s) => s.succeeded === 4);
    if (stats.succeeded !== 4 || stats.dead !== 0 || stats.pending !== 0) problems.push(`at the end: ${JSON.stringify(stats)}`);

    // A send slower than its lease (finding M1): the stored lease is 2 s, the server answers after
    // 5 s; a second sync at 3 s must not send it again (the send's lease is extended meanwhile).
    const leaseMs = await again.evaluate(() => window.sync.storeLease(2000));
    server.inbox.slowMs = 5000;
    await context.setOffline(true);
    const slowPost = await again.evaluate(() => window.sync.post([["/inbox/slow", "slow"]]));
    await context.setOffline(false);
    await dispatch();
    await until(10_000, () => server.inbox.received.filter((r) => r.path === "/inbox/slow").length, (k) => k >= 1);
    await new Promise((r) => setTimeout(r, 3000));
    await dispatch();
    const slow = await until(15_000, () => again.evaluate(() => window.sync.errorsOf("/inbox/slow")), (m) => m[0]?.status === "succeeded");
    await new Promise((r) => setTimeout(r, 1000));
    const slowSent = server.inbox.received.filter((r) => r.path === "/inbox/slow").length;
    const held = leaseMs === 2000 && slowPost[0]?.status === 202 && slowSent === 1 && slow.length === 1 && slow[0].status === "succeeded"
      && slow[0].errors.length === 0;
    report(held, "offline sync: a send slower than its lease is extended while in flight, not sent again by a second sync",
      `lease ${leaseMs} ms, posted ${JSON.stringify(slowPost)}; the 5 s send sent ${slowSent} time(s); the message: ${JSON.stringify(slow)}`);
    report(
      problems.length === 0,
      "offline sync: posts kept by the service worker's outbox while offline, delivered once each on the sync event; a 410 ends dead, is heard, listed and replayed",
      problems.join("; ") || `Background Sync ${backgroundSync ? "present" : "missing"}; 4 posts queued offline (202), delivered on the dispatched sync event; `
        + `the 410's history: ${JSON.stringify(history)}; replayed from a reopened page, delivered ${byItself ? "on the sync it registered" : "on a dispatched sync"}`,
    );
  } finally {
    await context.close();
  }
}

/**
 * The outbox in a page without a service worker (finding M13): a request that a page kept offline
 * and was then closed is sent by the next page's `listen()` at once, with no `online` event (a
 * page drained only on `online`, so it waited for the next one).
 */
async function pageOutbox(browser, url, server) {
  const context = await browser.newContext();
  try {
    server.inbox.reset();
    const open = async (label) => {
      const page = await pageIn(context, label);
      await page.goto(`${url}/bindings-wasm/tests/browser/page.html`);
      await page.waitForFunction(() => window.suites !== undefined, null, { timeout: 30_000 });
      return page;
    };
    const first = await open("page-outbox-offline");
    await context.setOffline(true);
    const kept = await first.evaluate(async () => {
      const { Outbox, open } = await import("/pkg/index.js");
      const outbox = new Outbox(await open("page-outbox"), { queue: "posts" });
      const response = await outbox.fetch(new Request("/inbox/a", { method: "POST", body: "page-kept" }));
      return { status: response.status, controlled: navigator.serviceWorker.controller !== null };
    });
    await first.close();
    await context.setOffline(false);
    const again = await open("page-outbox-again");
    await again.evaluate(async () => {
      const { Outbox, open } = await import("/pkg/index.js");
      window.pageOutbox = new Outbox(await open("page-outbox"), { queue: "posts" });
      window.pageOutbox.listen();
    });
    const received = await until(10_000, () => server.inbox.received.slice(), (r) => r.length >= 1);
    const status = await until(5000, () => again.evaluate(async () => (await (await window.pageOutbox.queue()).list()).map((m) => m.status)),
      (s) => s[0] === "succeeded");
    const ok = kept.status === 202 && !kept.controlled && received.length === 1 && received[0].body === "page-kept"
      && received[0].status === 200 && status.length === 1 && status[0] === "succeeded";
    report(ok, "offline sync in a page without a service worker: listen() sends at once what a closed page kept (finding M13)",
      `kept offline ${JSON.stringify(kept)}; the server received ${JSON.stringify(received)}; the messages ${JSON.stringify(status)}`);
  } finally {
    await context.close();
  }
}

async function demo(browser, url, server) {
  const page = await newPage(browser, "demo", { viewport: { width: 1280, height: 1000 } });
  const count = async (status) => Number(await page.textContent(`#count-${status}`));
  const phase = (name, timeout = DEMO_DRAIN_TIMEOUT_MS) =>
    page.waitForFunction((p) => ["error", p].includes(document.body.dataset.phase), name, { timeout })
      .then(async () => {
        const now = await page.evaluate(() => document.body.dataset.phase);
        if (now !== name) throw new Error(`demo page: ${await page.textContent("#phase")}`);
      });
  const problems = [];
  const outbox = (state, timeout = 30_000) => page.waitForFunction((s) => document.body.dataset.outbox === s, state, { timeout })
    .catch(async () => {
      throw new Error(`the outbox table is ${await page.evaluate(() => document.body.dataset.outbox)}, not ${state}`);
    });
  try {
    server.inbox.reset();
    await page.goto(`${url}/examples/browser/`);
    await phase("ready", 30_000);
    // The offline outbox: offline, three posts are kept (202); online again, two are sent and the
    // one to /inbox/gone (410) is dead.
    await page.waitForFunction(() => document.body.dataset.outboxReady === "yes", null, { timeout: 30_000 });
    await page.check("#offline");
    await page.click("#send");
    await outbox("pending:3,processing:0,succeeded:0,dead:0");
    const keptOffline = await page.textContent("#outbox-log");
    if (server.inbox.received.length !== 0) problems.push(`the inbox received ${server.inbox.received.length} posts while offline`);
    await mkdir(join(ROOT, "build"), { recursive: true });
    await page.screenshot({ path: SCREENSHOT_OFFLINE, fullPage: true });
    await page.uncheck("#offline");
    await outbox("pending:0,processing:0,succeeded:2,dead:1");
    const started = Date.now();
    await page.click("#start");
    await phase("drained");
    const first = { succeeded: await count("succeeded"), dead: await count("dead") };
    const firstSeconds = (Date.now() - started) / 1000;
    if (first.dead === 0) problems.push("the first drain left no dead letters");
    const deadRows = await page.locator("#dead tbody tr").count();
    const sampleError = await page.textContent("#dead tbody tr td:nth-child(5)");
    // A dead message's error history: /strict refused it once (permanent), /gone three times.
    const history = async (endpoint) => {
      const row = page.locator(`#dead tbody tr[data-endpoint="${endpoint}"]`).first();
      const id = await row.getAttribute("data-id");
      await row.click();
      await page.waitForFunction((i) => document.querySelector("#history-title").textContent.startsWith(`of #${i} `), id);
      return page.$$eval("#history tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
    };
    const strict = await history("/strict");
    if (strict.length !== 1 || strict[0][0] !== "1" || strict[0][1] !== "PermanentError: HTTP 422 Unprocessable Entity") {
      problems.push(`history of a dead /strict message: ${JSON.stringify(strict)}`);
    }
    const gone = await history("/gone");
    // Each attempt's time, shown as seconds after the first (rounded to 0.1 s): it waited out
    // its backoff, 2 s, then 4 s.
    const after = gone.map((r) => Number(/\(\+([\d.]+) s\)/.exec(r[2])?.[1] ?? 0));
    if (gone.map((r) => `${r[0]} ${r[1]}`).join() !== ["1", "2", "3"].map((a) => `${a} Error: HTTP 410 Gone`).join()
      || !(after[0] === 0 && after[1] >= 2 && after[2] >= after[1] + 3.9)) {
      problems.push(`history of a dead /gone message: ${JSON.stringify(gone)}`);
    }
    await mkdir(join(ROOT, "build"), { recursive: true });
    await page.screenshot({ path: SCREENSHOT_DRAINED, fullPage: true });
    // Pause: the loop's AbortController aborts; it resolves with one handled delivery per request.
    await page.click("#start");
    await phase("paused", 30_000);
    const paused = await page.textContent("#log li:first-child");
    const handled = Number(/relay paused: (\d+) deliveries handled/.exec(paused)?.[1]);
    const requests = server.subscribers.state().total;
    if (handled !== requests) problems.push(`paused after ${handled} handled deliveries, the server saw ${requests}`);
    await page.click("#start");
    await phase("relaying", 30_000);
    await page.check("#fix");
    await page.waitForFunction(() => document.querySelector("#log").textContent.includes("fixed /gone"));
    await page.click("#outbox tr.dead button");
    await outbox("pending:0,processing:0,succeeded:3,dead:0");
    await page.click("#replay");
    await phase("all-succeeded");
    const total = await count("succeeded");
    for (const status of ["pending", "processing", "dead"]) {
      if ((await count(status)) !== 0) problems.push(`${await count(status)} ${status} at the end`);
    }
    if (total !== first.succeeded + first.dead) problems.push(`succeeded ${total} of ${first.succeeded + first.dead}`);
    const state = server.subscribers.state();
    if (state.overlaps.length) problems.push(`${state.overlaps.length} overlapping deliveries`);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    report(
      problems.length === 0,
      "browser demo relays, drains, replays the dead and ends all succeeded",
      problems.join("; ")
        || `outbox: ${keptOffline}, then 2 sent and 1 dead, replayed; first drain ${firstSeconds.toFixed(1)} s: ${first.succeeded} succeeded, ${first.dead} dead `
          + `(${deadRows} rows, e.g. "${sampleError}"; histories of ${strict.length} and ${gone.length} attempts); `
          + `paused after ${handled} deliveries; after replay ${total} succeeded; `
          + `${state.total} requests; screenshots ${SCREENSHOT_OFFLINE}, ${SCREENSHOT_DRAINED}, ${SCREENSHOT}`,
    );
  } catch (err) {
    await mkdir(join(ROOT, "build"), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => {});
    report(false, "browser demo", `${err.message.split("\n")[0]} (screenshot ${SCREENSHOT})`);
  } finally {
    await page.context().close();
  }
}

async function main() {
  try {
    await stat(join(pkgDir, "package.json"));
  } catch {
    console.error(`test-browser: no built package in ${pkgDir}; build it with \`make js\``);
    process.exit(2);
  }
  const server = await startServer({ pkgDir });
  const browser = await launchChromium();
  console.log(`Chromium ${browser.version()}; pages from ${server.url}; package ${pkgDir}`);
  const sync = async (...args) => {
    await offlineSync(...args);
    await pageOutbox(...args);
  };
  const suites = { conformance, store: storeCases, errors: errorTexts, worker: workerCases, workers: twoWorkers, race, offline: offlinePause, dead: deadAcrossTabs, sync, demo };
  try {
    for (const [name, suite] of Object.entries(suites)) {
      if (!only.has(name)) continue;
      try {
        await suite(browser, server.url, server);
      } catch (err) {
        report(false, `${name} suite`, err.stack ?? String(err));
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

await main();
