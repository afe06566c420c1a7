// The browser side of the browser tests and of the benchmark, loaded by page.html. It exposes
// `window.suites`; bindings-wasm/tests/browser/run.mjs and bench.mjs call its functions through
// headless Chromium and judge the results. Everything here runs on Chromium's real IndexedDB.

import * as deadletter from "deadletter";

const PKG_URL = new URL("/pkg/index.js", location.href).href;
const CASES_URL = "/tests/conformance/";
// bindings-wasm/js/conformance.mjs as bindings-wasm/build.sh copies it into the package (it imports
// "./index.js", so it runs from there). Loaded on first use: the other suites do not need it.
const CONFORMANCE_URL = "/pkg/conformance.mjs";

let dbSerial = 0;
/** A database name never used before in this page's profile. */
const freshName = (prefix) => `${prefix}-${Date.now()}-${(dbSerial += 1)}`;

function describe(err) {
  if (err instanceof Error) return `${err.name}${err.code ? ` (${err.code})` : ""}: ${err.message}`;
  return String(err);
}

// ---------------------------------------------------------------------------------------------
// Conformance: every case of tests/conformance/*.json through bindings-wasm/js/conformance.mjs

const files = new Map(); // file name -> parsed file

async function loadFiles() {
  if (files.size === 0) {
    const names = await (await fetch(`${CASES_URL}index.json`)).json();
    for (const name of names) files.set(name, await (await fetch(CASES_URL + name)).json());
  }
  return files;
}

/** [{file, name, skip}] for every case of every file (`skip`: why the runner skips it). */
async function listCases() {
  const { skipReason } = await import(CONFORMANCE_URL);
  const out = [];
  for (const [file, data] of await loadFiles()) {
    for (const kase of data.cases) out.push({ file, name: kase.name, skip: skipReason(file) });
  }
  return out;
}

/** Runs one case on a fresh database (the runner makes and deletes it) of the real IndexedDB. */
async function runCase(file, name) {
  const kase = (await loadFiles()).get(file).cases.find((c) => c.name === name);
  try {
    const conformance = await import(CONFORMANCE_URL);
    await conformance.runCase(deadletter.open, kase, globalThis.indexedDB);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

// ---------------------------------------------------------------------------------------------
// The IndexedDB store's own cases (bindings-wasm/js/test/store-cases.mjs), on the real IndexedDB

const STORE_CASES_URL = "/bindings-wasm/js/test/store-cases.mjs";

async function storeModules() {
  const [index, requests, schema, store] = await Promise.all(
    ["index.js", "store/requests.js", "store/schema.js", "store/store.js"].map((f) => import(`/pkg/${f}`)),
  );
  return { index, requests, schema, store };
}

/** The names of the store's cases. */
async function listStoreCases() {
  return Object.keys((await import(STORE_CASES_URL)).CASES);
}

/** Runs one of the store's cases. */
async function runStoreCase(name) {
  try {
    await (await import(STORE_CASES_URL)).CASES[name](await storeModules(), indexedDB);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

// ---------------------------------------------------------------------------------------------
// What the package's errors say (bindings-wasm/js/test/error-texts.mjs), on the real IndexedDB

const ERROR_TEXTS_URL = "/bindings-wasm/js/test/error-texts.mjs";

/** The names of the error texts' cases. */
async function listErrorTextCases() {
  return Object.keys((await import(ERROR_TEXTS_URL)).CASES);
}

/** Runs one of the error texts' cases. */
async function runErrorTextCase(name) {
  try {
    await (await import(ERROR_TEXTS_URL)).CASES[name](deadletter, () => freshName("error-texts"));
    return { ok: true };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

// ---------------------------------------------------------------------------------------------
// The worker loop's shared cases (bindings-wasm/js/test/worker-cases.mjs), on the real IndexedDB

const WORKER_CASES_URL = "/bindings-wasm/js/test/worker-cases.mjs";

/** The names of the worker loop's shared cases. */
async function listWorkerCases() {
  return Object.keys((await import(WORKER_CASES_URL)).CASES);
}

/** Runs one of the worker loop's shared cases. */
async function runWorkerCase(name) {
  try {
    await (await import(WORKER_CASES_URL)).CASES[name](deadletter, () => freshName("worker-cases"));
    return { ok: true };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

// ---------------------------------------------------------------------------------------------
// Two dedicated module workers claiming from one database

/** Starts a claim worker; resolves to the worker once it has opened the database. */
function startWorker(name, init) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("claim-worker.js", import.meta.url), { type: "module", name });
    worker.onmessage = ({ data }) => {
      if (data.ready) resolve(worker);
      else reject(new Error(`${name}: ${data.error}`));
    };
    worker.onerror = (event) => reject(new Error(`${name}: worker error: ${event.message}`));
    worker.postMessage({ ...init, name });
  });
}

/** Tells a ready worker to go; resolves to what it claimed ({ name, ids, error? }). */
function drainWorker(name, worker) {
  return new Promise((resolve) => {
    worker.onmessage = ({ data }) => {
      worker.terminate();
      resolve(data);
    };
    worker.onerror = (event) => {
      worker.terminate();
      resolve({ name, ids: [], error: `worker error: ${event.message}` });
    };
    worker.postMessage({ go: true });
  });
}

/**
 * Enqueues `count` messages, lets two workers claim and succeed them until the queue is empty,
 * and returns what each worker claimed and what the database holds afterwards.
 */
async function twoWorkers(count) {
  const dbName = freshName("two-workers");
  const queueName = "jobs";
  const db = await deadletter.open(dbName);
  const queue = db.queue(queueName);
  const enqueued = [];
  for (let i = 0; i < count; i += 1) enqueued.push((await queue.enqueue(`job ${i}`)).id);
  const names = ["worker-a", "worker-b"];
  const workers = await Promise.all(names.map((name) => startWorker(name, { pkgUrl: PKG_URL, dbName, queueName })));
  const started = performance.now(); // both are ready: neither gets a head start
  const results = await Promise.all(names.map((name, i) => drainWorker(name, workers[i])));
  const ms = performance.now() - started;
  const remaining = {};
  for (const status of ["pending", "processing", "succeeded", "dead"]) {
    let n = 0;
    let afterId;
    for (;;) {
      const page = await queue.list({ status, limit: 1000, afterId });
      n += page.length;
      if (page.length < 1000) break;
      afterId = page[page.length - 1].id;
    }
    remaining[status] = n;
  }
  db.close();
  return { enqueued, workers: results, ms, statuses: remaining };
}

// ---------------------------------------------------------------------------------------------
// Two dedicated module workers racing enqueues with idempotency keys, then worker loops

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Posts `message` to `worker`; resolves to its one answer (race-worker.js answers each step once). */
function ask(worker, message) {
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data.error ? reject(new Error(`${data.name}: ${data.error}`)) : resolve(data));
    worker.onerror = (event) => reject(new Error(`worker error: ${event.message}`));
    worker.postMessage(message);
  });
}

/**
 * Two workers (race-worker.js) enqueue `count` messages each at the same time, their idempotency
 * keys cycling over `keys` distinct ones; then both run `queue.process` (`concurrency` each) until
 * every stored message succeeded. Returns what each enqueue returned, the queue's statistics after
 * the enqueues and at the end, and what each loop handled.
 */
async function race(count, keys, concurrency) {
  const dbName = freshName("race");
  const queueName = "hooks";
  const db = await deadletter.open(dbName); // created here, so the workers only open it
  const queue = db.queue(queueName);
  const names = ["race-a", "race-b"];
  const workers = names.map((name) => new Worker(new URL("race-worker.js", import.meta.url), { type: "module", name }));
  try {
    await Promise.all(workers.map((w, i) => ask(w, { step: "init", name: names[i], pkgUrl: PKG_URL, dbName, queueName })));
    const enqueued = await Promise.all(workers.map((w) => ask(w, { step: "enqueue", count, keys })));
    const stored = await queue.stats();
    await Promise.all(workers.map((w) => ask(w, { step: "process", concurrency })));
    const total = stored.pending + stored.processing + stored.succeeded + stored.dead;
    const started = performance.now();
    while ((await queue.stats()).succeeded < total && performance.now() - started < 60_000) await sleep(20);
    const processed = await Promise.all(workers.map((w) => ask(w, { step: "stop" })));
    return { enqueued: enqueued.map((e) => e.enqueued), stored, processed, after: await queue.stats() };
  } finally {
    for (const worker of workers) worker.terminate();
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The worker loop pauses while the browser is offline (run.mjs toggles it with setOffline)

let offline = null; // { db, queue, claims, reads, handled, events, ... } of this page

/**
 * Opens a fresh database with `count` messages and counts, from now on, the loop's claims and its
 * reads of `navigator.onLine` (an own getter shadowing Navigator.prototype's).
 */
async function offlinePrepare(count) {
  const db = await deadletter.open(freshName("offline"));
  const queue = db.queue("outbox");
  for (let i = 0; i < count; i += 1) await queue.enqueue(`message ${i}`);
  const real = Object.getOwnPropertyDescriptor(Navigator.prototype, "onLine").get;
  const state = { db, queue, claims: 0, reads: 0, handled: [], events: [], onLine: () => real.call(navigator) };
  queue.claimMany = (...args) => {
    state.claims += 1;
    return deadletter.Queue.prototype.claimMany.apply(queue, args);
  };
  Object.defineProperty(navigator, "onLine", {
    configurable: true,
    get() {
      state.reads += 1;
      return real.call(navigator);
    },
  });
  for (const type of ["offline", "online"]) addEventListener(type, () => state.events.push(type));
  offline = state;
  return true;
}

/** Starts the worker loop (one handler at a time, polling every 50 ms when idle). */
function offlineStart() {
  offline.controller = new AbortController();
  offline.loop = offline.queue.process((m) => {
    offline.handled.push(m.id);
  }, { pollIntervalMs: 50, signal: offline.controller.signal });
  return true;
}

function offlineState() {
  const { claims, reads, handled, events } = offline;
  return { claims, reads, handled: [...handled], events: [...events], onLine: offline.onLine() };
}

async function offlineEnqueue(count) {
  for (let i = 0; i < count; i += 1) await offline.queue.enqueue(`later ${i}`);
  return true;
}

/** Aborts the loop; returns what it resolved to and the queue's statistics. */
async function offlineStop() {
  offline.controller.abort();
  const handled = await offline.loop;
  const stats = await offline.queue.stats();
  delete navigator.onLine;
  offline.db.close();
  return { handled, stats };
}

// ---------------------------------------------------------------------------------------------
// Dead letters across tabs and workers: onDead callbacks hear of deaths made elsewhere

let watched = null; // { db, seen: [messages] } of this page

/** Opens `dbName` and records every message its onDead callback receives. */
async function watchDead(dbName) {
  const db = await deadletter.open(dbName);
  watched = { db, seen: [] };
  db.onDead((message) => watched.seen.push(message));
  return true;
}

/** What this page's callback received, for Node: Dates as ISO strings, and whether they were Dates. */
function deadSeen() {
  return watched.seen.map((m) => ({
    id: m.id,
    status: m.status,
    lastError: m.lastError,
    deadAt: m.deadAt instanceof Date ? m.deadAt.toISOString() : `not a Date: ${m.deadAt}`,
    errorAtIsDate: m.errors.every((e) => e.at instanceof Date),
    payload: m.payload,
  }));
}

/** A dedicated worker kills one message of `dbName`; resolves to it as the worker saw it. */
function killInWorker(dbName, queueName, error) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("dead-worker.js", import.meta.url), { type: "module", name: "dead-worker" });
    worker.onmessage = ({ data }) => {
      worker.terminate();
      if (data.error) reject(new Error(`dead-worker: ${data.error}`));
      else resolve(data.dead);
    };
    worker.onerror = (event) => {
      worker.terminate();
      reject(new Error(`dead-worker: worker error: ${event.message}`));
    };
    worker.postMessage({ pkgUrl: PKG_URL, dbName, queueName, error });
  });
}

/** This page kills one message with the Database it watches with; resolves to it. */
async function killHere(queueName, error) {
  const queue = watched.db.queue(queueName);
  const m = await queue.enqueue("poison from a tab", { maxRetries: 1 });
  const claimed = await queue.claim();
  const dead = await queue.fail(claimed.id, error, { leaseToken: claimed.leaseToken });
  return { id: m.id, status: dead.status, deadAt: dead.deadAt.toISOString() };
}

// ---------------------------------------------------------------------------------------------
// Benchmark: deadletter cycles against plain IndexedDB transactions

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

/** A plain database with one object store `messages` and the given indexes ({name: keyPath}). */
async function openRaw(name, indexes = {}) {
  const req = indexedDB.open(name, 1);
  req.onupgradeneeded = () => {
    const store = req.result.createObjectStore("messages", { keyPath: "id", autoIncrement: true });
    for (const [index, keyPath] of Object.entries(indexes)) store.createIndex(index, keyPath);
  };
  return request(req);
}

/** One "cycle" of plain IndexedDB: put; get+put; get+put, each its own readwrite transaction. */
async function rawCycle(idb, i) {
  let tx = idb.transaction("messages", "readwrite");
  const id = await request(tx.objectStore("messages").put({ queue: "bench", payload: `job ${i}`, status: "pending" }));
  await done(tx);
  for (const status of ["processing", "succeeded"]) {
    tx = idb.transaction("messages", "readwrite");
    const store = tx.objectStore("messages");
    const message = await request(store.get(id));
    message.status = status;
    store.put(message);
    await done(tx);
  }
}

/**
 * The same cycle as plain IndexedDB making deadletter's own requests on a database of
 * deadletter's schema (made by `deadletter.open`), as its store (js/store/store.js) makes them:
 * records of the same fields (without the null ones: issue 20), the same indexes; enqueue and claim each a transaction on both
 * object stores (`messages`, `queues`) whose first request reads the queue's row (the clock is
 * read when it completes), succeed one on `messages` alone (its step reads no row: issue 20).
 * Enqueue: the row, then add; claim: the row, the first key of the timed lane and the head of the
 * ready lane, read at once (then, for a queue whose row says it may hold messages with an expiry,
 * the first key of those: not this one's), then put; succeed: the message (then the
 * clock), then put; each transaction committed with `commit()` once its last request is made
 * (the enqueue's before the add's answer, its id, comes). What the store's design costs, without the WebAssembly core and the binding's
 * JavaScript (the rest of deadletter's time is theirs). Run on a database with only the claim
 * index too: what the requests and records cost without the other indexes.
 */
async function sameRequestsCycle(idb, i) {
  const both = idb.objectStoreNames.contains("queues") ? ["messages", "queues"] : ["messages"];
  const row = (tx) => (both.length === 2 ? request(tx.objectStore("queues").get("bench")) : Promise.resolve());
  const firstKey = (index, range) => request(index.openKeyCursor(range)).then((cursor) => cursor?.key);
  let tx = idb.transaction(both, "readwrite");
  await row(tx);
  let now = Date.now();
  const added = request(tx.objectStore("messages").add({
    queue: "bench", payload: `job ${i}`, status: "pending", retryCount: 0, maxRetries: 3, createdAt: now,
    updatedAt: now, errors: [], errorsDropped: 0, replayCount: 0, lane: 1, at: 0,
  }));
  tx.commit();
  await added;
  await done(tx);
  tx = idb.transaction(both, "readwrite");
  let store = tx.objectStore("messages");
  const claim = store.index("claim");
  const started = row(tx);
  const timed = firstKey(claim, IDBKeyRange.bound(["bench", 0, -Infinity], ["bench", 0, Infinity]));
  const ready = request(claim.getAll(IDBKeyRange.bound(["bench", 1, -Infinity], ["bench", 1, Infinity]), 1));
  const queue = await started;
  now = Date.now();
  if (queue?.expires) await firstKey(store.index("expiring"), IDBKeyRange.bound(["bench", "pending", -Infinity], ["bench", "pending", Infinity]));
  await timed;
  let message = (await ready)[0];
  const leaseExpiresAt = now + 30_000;
  Object.assign(message, { status: "processing", updatedAt: now, leaseToken: crypto.randomUUID(), leaseExpiresAt, lane: 0, at: leaseExpiresAt });
  store.put(message);
  tx.commit();
  await done(tx);
  tx = idb.transaction("messages", "readwrite");
  store = tx.objectStore("messages");
  message = await request(store.get(message.id));
  now = Date.now();
  const { leaseToken, leaseExpiresAt: leased, lane, at, ...finished } = message;
  store.put({ ...finished, status: "succeeded", updatedAt: now });
  tx.commit();
  await done(tx);
}

async function deadletterCycle(queue, i) {
  await queue.enqueue(`job ${i}`);
  const message = await queue.claim();
  await queue.succeed(message.id, { leaseToken: message.leaseToken });
}

/** Whether `value` is a valid IndexedDB key (what makes an index entry). */
function validKey(value) {
  if (typeof value === "number") return !Number.isNaN(value);
  if (typeof value === "string" || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return true;
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  return Array.isArray(value) && value.every(validKey);
}

/** The value of `keyPath` (a string or an array of them) in `record`. */
function atPath(record, keyPath) {
  if (Array.isArray(keyPath)) return keyPath.map((p) => atPath(record, p));
  return keyPath.split(".").reduce((v, part) => (v !== null && typeof v === "object" ? v[part] : undefined), record);
}

/**
 * Deterministic counts of `n` runs of `body` (one cycle each): per cycle, the IndexedDB
 * transactions opened, the requests made (every object store, index and cursor call that makes or
 * continues a request), and the index entries written (for each add and put, the indexes of its
 * object store whose key path the record has as a valid key: each costs a write).
 */
async function idbCounts(n, body) {
  const counts = { transactions: 0, requests: 0, indexEntries: 0 };
  const restore = [];
  const wrap = (proto, name, count) => {
    const original = proto[name];
    proto[name] = function (...args) {
      count(this, args);
      return original.apply(this, args);
    };
    restore.push(() => (proto[name] = original));
  };
  wrap(IDBDatabase.prototype, "transaction", () => (counts.transactions += 1));
  const request = () => (counts.requests += 1);
  for (const name of ["get", "getAll", "getKey", "getAllKeys", "openCursor", "openKeyCursor", "count", "delete", "clear"]) {
    wrap(IDBObjectStore.prototype, name, request);
  }
  for (const name of ["get", "getAll", "getKey", "getAllKeys", "openCursor", "openKeyCursor", "count"]) wrap(IDBIndex.prototype, name, request);
  for (const name of ["continue", "continuePrimaryKey", "advance"]) wrap(IDBCursor.prototype, name, request);
  for (const name of ["add", "put"]) {
    wrap(IDBObjectStore.prototype, name, (store, [value]) => {
      counts.requests += 1;
      // A key the store generates is in the record before its index keys are read.
      const record = store.autoIncrement && atPath(value, store.keyPath) === undefined ? { ...value, [store.keyPath]: 1 } : value;
      for (const index of store.indexNames) if (validKey(atPath(record, store.index(index).keyPath))) counts.indexEntries += 1;
    });
  }
  try {
    for (let i = 0; i < n; i += 1) await body(i);
  } finally {
    for (const undo of restore) undo();
  }
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / n]));
}

/** Runs `body` `n` times in a row; the time of one, in ms (the mean of the `n`). */
async function timeEach(n, body) {
  const started = performance.now();
  for (let i = 0; i < n; i += 1) await body(i);
  return (performance.now() - started) / n;
}

/**
 * The cycle benchmark: `rounds` rounds after `warmup` untimed cycles of each kind; a round times
 * a block of `perRound` cycles of each kind (deadletter, the plain IndexedDB reference, and plain
 * IndexedDB making deadletter's requests), one block after the other, in an order that changes
 * every round (so that a slow moment of the machine hits every kind alike). Returns the time of
 * one cycle in each block, in ms: { deadletter, raw, sameRequests, claimIndexOnly } (arrays),
 * and `counts`: per kind, the IndexedDB transactions, requests and index entries of one cycle
 * (`idbCounts`, over 10 cycles after the warm-up).
 * (performance.now() is coarse in a page that is not cross-origin isolated: blocks, not cycles.)
 */
async function bench(rounds, perRound = 10, warmup = 30) {
  const db = await deadletter.open(freshName("bench-deadletter"));
  const queue = db.queue("bench");
  const idb = await openRaw(freshName("bench-raw"));
  const sameName = freshName("bench-same-requests");
  (await deadletter.open(sameName)).close();
  const same = await request(indexedDB.open(sameName));
  const claimOnly = await openRaw(freshName("bench-claim-index"), { claim: ["queue", "lane", "at", "id"] });
  let serial = 0;
  const kinds = {
    deadletter: () => deadletterCycle(queue, (serial += 1)),
    raw: () => rawCycle(idb, (serial += 1)),
    sameRequests: () => sameRequestsCycle(same, (serial += 1)),
    claimIndexOnly: () => sameRequestsCycle(claimOnly, (serial += 1)),
  };
  const names = Object.keys(kinds);
  for (const name of names) await timeEach(warmup, kinds[name]);
  // Counted before timing (the wrappers cost time of their own).
  const counts = {};
  for (const name of names) counts[name] = await idbCounts(10, kinds[name]);
  const out = Object.fromEntries(names.map((name) => [name, []]));
  for (let r = 0; r < rounds; r += 1) {
    // A different order each round.
    const order = names.map((_, k) => names[(k + r) % names.length]);
    for (const name of r % 2 === 0 ? order : order.reverse()) out[name].push(await timeEach(perRound, kinds[name]));
  }
  db.close();
  idb.close();
  same.close();
  claimOnly.close();
  return { rounds, perRound, warmup, counts, ...out };
}

/**
 * Claim cost with delayed messages ahead: one database, queue `ahead` holds `delayed` messages of
 * `payloadBytes` enqueued with a one-hour delay (older than every due message, so first in
 * enqueue order), queue `none` holds none. Each round enqueues `perRound` due messages on both,
 * times their claims block by block (alternating which queue goes first) and succeeds them. The
 * clock stands still, so the delayed messages stay delayed. Returns the time of one claim in each
 * block, in ms: { ahead: [...], none: [...] }.
 */
async function benchDelayed(rounds, delayed = 1000, payloadBytes = 1000, perRound = 10, warmup = 2) {
  const now = Date.UTC(2026, 0, 1);
  const db = await deadletter.open(freshName("bench-delayed"), { clock: () => now });
  const queues = { ahead: db.queue("ahead"), none: db.queue("none") };
  const payload = "x".repeat(payloadBytes);
  const later = Array.from({ length: delayed }, () => ({ payload, delayMs: 3_600_000 }));
  if (delayed > 0) await queues.ahead.enqueueMany(later);
  const out = await claimBlocks(queues, rounds, perRound, warmup);
  const stats = await queues.ahead.stats();
  db.close();
  if (stats.delayed !== delayed) throw new Error(`expected ${delayed} delayed messages, stats say ${stats.delayed}`);
  return { rounds, perRound, delayed, payloadBytes, ...out };
}

/**
 * The claim blocks of `benchDelayed` and `benchGroups`, on the two queues of `queues` (`{ name:
 * Queue }`): each round enqueues `perRound` due messages without a group on each, times their
 * claims (alternating which queue goes first), checks each claimed the message due next and
 * succeeds it. Returns the time of one claim in each block after `warmup`, in ms, by name.
 */
async function claimBlocks(queues, rounds, perRound, warmup) {
  const names = Object.keys(queues);
  const out = Object.fromEntries(names.map((name) => [name, []]));
  for (let r = 0; r < warmup + rounds; r += 1) {
    for (const name of r % 2 === 0 ? names : [...names].reverse()) {
      const queue = queues[name];
      await queue.enqueueMany(Array.from({ length: perRound }, (_, i) => `due ${r}.${i}`));
      const claimed = [];
      const ms = await timeEach(perRound, async () => claimed.push(await queue.claim()));
      for (const [i, m] of claimed.entries()) {
        if (m === null || m.payload !== `due ${r}.${i}`) throw new Error(`${name}: claim ${r}.${i} returned ${m && m.payload}`);
        await queue.succeed(m.id, { leaseToken: m.leaseToken });
      }
      if (r >= warmup) out[name].push(ms);
    }
  }
  return out;
}

/**
 * Claim cost with ordering groups held up: one database, queue `grouped` holds `groups` groups whose
 * heads are in backoff (claimed and failed with an hour's `retryInMs`) and `members` messages of
 * `payloadBytes` waiting behind them (blocked, in no claim lane), queue `plain` holds none. Each
 * round enqueues `perRound` due messages without a group on both, times their claims block by
 * block (alternating which queue goes first) and succeeds them. The clock stands still, so the
 * heads stay in backoff. Returns the time of one claim in each block, in ms: { grouped, plain }.
 */
async function benchGroups(rounds, groups = 100, members = 1000, payloadBytes = 1000, perRound = 10, warmup = 2) {
  const now = Date.UTC(2026, 0, 1);
  const db = await deadletter.open(freshName("bench-groups"), { clock: () => now });
  const queues = { grouped: db.queue("grouped"), plain: db.queue("plain") };
  const payload = "x".repeat(payloadBytes);
  const g = queues.grouped;
  await g.enqueueMany(Array.from({ length: groups }, (_, i) => ({ payload, group: `g${i}` })));
  for (const head of await g.claimMany(groups)) {
    await g.fail(head.id, "HTTP 503", { leaseToken: head.leaseToken, retryInMs: 3_600_000 });
  }
  for (let i = 0; i < members; i += 100) {
    await g.enqueueMany(Array.from({ length: 100 }, (_, k) => ({ payload, group: `g${(i + k) % groups}` })));
  }
  const out = await claimBlocks(queues, rounds, perRound, warmup);
  const stats = await g.stats();
  db.close();
  if (stats.pending !== groups + members || stats.delayed !== groups) {
    throw new Error(`expected ${groups + members} pending of which ${groups} delayed heads, stats say ${stats.pending} and ${stats.delayed}`);
  }
  return { rounds, perRound, groups, members, payloadBytes, ...out };
}

/**
 * The cycle kinds of `bench` on fresh databases, for a profiler (profile.mjs): resolves to
 * `run(kind, n)`, which runs `n` cycles of `kind` ("deadletter", "sameRequests", "raw") and
 * resolves to their ms.
 */
async function cycleKinds() {
  const db = await deadletter.open(freshName("profile-deadletter"));
  const queue = db.queue("bench");
  const sameName = freshName("profile-same-requests");
  (await deadletter.open(sameName)).close();
  const same = await request(indexedDB.open(sameName));
  const idb = await openRaw(freshName("profile-raw"));
  let serial = 0;
  const kinds = {
    deadletter: () => deadletterCycle(queue, (serial += 1)),
    sameRequests: () => sameRequestsCycle(same, (serial += 1)),
    raw: () => rawCycle(idb, (serial += 1)),
  };
  window.runKind = async (kind, n) => n * (await timeEach(n, kinds[kind]));
  return true;
}

window.suites = {
  listCases,
  runCase,
  listStoreCases,
  runStoreCase,
  listErrorTextCases,
  runErrorTextCase,
  listWorkerCases,
  runWorkerCase,
  twoWorkers,
  race,
  offlinePrepare,
  offlineStart,
  offlineState,
  offlineEnqueue,
  offlineStop,
  watchDead,
  deadSeen,
  killInWorker,
  killHere,
  bench,
  benchDelayed,
  benchGroups,
  cycleKinds,
};
