// The webhook relay of examples/webhook_relay.py, in a browser tab: deliveries are queued in
// IndexedDB through the `deadletter` package and relayed by its worker loop (`queue.process`,
// four handlers at once) to the simulated subscribers of the local server
// (examples/browser/server.mjs). "Pause relay" aborts the loop's AbortController.
//
// Retry policy (the same as the Python demo): a subscriber that read the delivery and refused its
// content (400, 413, 415, 422) will refuse the same bytes again, so those failures are permanent
// (the handler throws a `PermanentError`: dead at once). Everything else is retried, 410 and 5xx
// included; with `maxRetries: 3` a message waits 2 s, then 4 s, and its third failure is dead.
// The dead letters table shows the error history of the dead message picked (click a row).

import { PermanentError, open } from "deadletter";

const DB_NAME = "deadletter-browser-demo";
const QUEUE_NAME = "webhooks";
const EXAMPLES_URL = "/node_modules/@octokit/webhooks-examples/api.github.com/index.json";
const ENDPOINTS = ["/ok", "/flaky", "/gone", "/strict"];
const BEHAVIOUR = {
  "/ok": "200",
  "/flaky": "503, 503, then 200",
  "/gone": "410 until fixed",
  "/strict": "422 to unknown events",
};
const STATUSES = ["pending", "processing", "succeeded", "dead"];
const PERMANENT_STATUSES = new Set([400, 413, 415, 422]);
const MAX_RETRIES = 3;
const WORKERS = 4;
const POLL_INTERVAL_MS = 200;
const PAGE_SIZE = 1000;
const REFRESH_MS = 400;
const DEAD_ROWS = 24;

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let db;
let queue;
let total = 0;
let running = false;
let controller = null; // the AbortController of the running worker loop
let relay = null; // the promise of the running worker loop
let drainStarted = 0;
let drainsDone = 0;
let replayedTotal = 0;
let picked = null; // the id of the message whose error history is shown (a click on a dead row)
const attempts = Object.fromEntries(ENDPOINTS.map((e) => [e, 0])); // HTTP deliveries per endpoint
let drainGen = 0; // bumped when a drain starts, so a refresh begun before it cannot end it

function log(text, bad = false) {
  const li = document.createElement("li");
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  if (bad) li.className = "bad";
  $("log").prepend(li);
}

function setPhase(phase, text) {
  document.body.dataset.phase = phase;
  $("phase").textContent = text;
}

/** A fresh database on every page load, so the demo always starts from an empty queue. */
async function freshDatabase() {
  await new Promise((resolve) => {
    const request = indexedDB.deleteDatabase(DB_NAME); // the queue database is the IndexedDB one
    request.onsuccess = request.onerror = request.onblocked = () => resolve();
  });
  return open(DB_NAME);
}

/** Every message with `status` (undefined: any), page by page (keyset pagination on the id). */
async function* messages(status) {
  let afterId;
  for (;;) {
    const page = await queue.list({ status, limit: PAGE_SIZE, afterId });
    yield* page;
    if (page.length < PAGE_SIZE) return;
    afterId = page[page.length - 1].id;
  }
}

async function loadDeliveries() {
  const definitions = await (await fetch(EXAMPLES_URL)).json();
  const examples = definitions.flatMap((d) => d.examples.map((body) => [d.name, body]));
  // Routed round-robin by their index in the examples file, as in the Python demo.
  return examples.map(([event, body], index) => ({
    event,
    action: body.action ?? null,
    endpoint: ENDPOINTS[index % ENDPOINTS.length],
    body,
  }));
}

/**
 * The worker loop's handler: POSTs one delivery. Returning acks the message; a refusal of the
 * content throws a PermanentError (dead at once); any other failure throws an Error (retried after
 * its backoff), as does `fetch` itself on a network error (`TypeError: Failed to fetch`).
 */
async function deliver(message) {
  const delivery = JSON.parse(message.payload);
  attempts[delivery.endpoint] += 1;
  const response = await fetch(delivery.endpoint, {
    method: "POST",
    body: JSON.stringify(delivery.body),
    headers: {
      "Content-Type": "application/json",
      "X-GitHub-Event": delivery.event,
      "X-Deadletter-Message-Id": String(message.id),
      "X-Deadletter-Attempt": String(message.retryCount + 1),
    },
  });
  await response.text();
  if (response.ok) return;
  const error = `HTTP ${response.status} ${response.statusText}`.trim();
  throw PERMANENT_STATUSES.has(response.status) ? new PermanentError(error) : new Error(error);
}

/** Starts the worker loop; it runs until "Pause relay" aborts it. */
function startRelay() {
  controller = new AbortController();
  running = true;
  relay = queue.process(deliver, { concurrency: WORKERS, pollIntervalMs: POLL_INTERVAL_MS, signal: controller.signal });
  relay.catch((err) => {
    running = false;
    setPhase("error", `error: the relay stopped: ${err.message}`);
    log(`relay stopped: ${err.code ?? ""} ${err.message}`, true);
  });
  $("start").textContent = "Pause relay";
  $("start").disabled = false;
}

/** Aborts the worker loop; it resolves once its running deliveries are settled. */
async function pauseRelay() {
  $("start").disabled = true;
  controller.abort();
  const handled = await relay;
  running = false;
  controller = null;
  log(`relay paused: ${handled} deliveries handled since it started`);
  setPhase("paused", "paused");
  $("start").textContent = "Resume relay";
  $("start").disabled = false;
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function kind(delivery) {
  return delivery.action ? `${delivery.event}.${delivery.action}` : delivery.event;
}

/** The failure history of `message` (each attempt's number, error and time), or a placeholder. */
function showHistory(message) {
  const title = $("history-title");
  if (!message) {
    title.textContent = "";
    const tr = document.createElement("tr");
    tr.className = "empty";
    const td = cell("no dead letter to show");
    td.colSpan = 3;
    tr.append(td);
    $("history").tBodies[0].replaceChildren(tr);
    return;
  }
  const delivery = JSON.parse(message.payload);
  const dropped = message.errorsDropped ? `, ${message.errorsDropped} older attempts dropped` : "";
  const replays = message.replayCount ? `, replayed ${message.replayCount}×` : "";
  title.textContent = `of #${message.id} (${delivery.endpoint}, ${kind(delivery)}): ${message.status}${replays}${dropped}`;
  const first = message.errors[0]?.at.getTime() ?? 0;
  $("history").tBodies[0].replaceChildren(
    ...message.errors.map((e) => {
      const tr = document.createElement("tr");
      const after = e.at.getTime() - first;
      const at = `${e.at.toISOString().slice(11, 23)} UTC${after ? ` (+${(after / 1000).toFixed(1)} s)` : ""}`;
      tr.append(cell(String(e.attempt)), cell(e.error), cell(at));
      return tr;
    }),
  );
}

let refreshing = false;
/** Reads the whole queue and redraws; the loop below spaces the reads by 3x their duration. */
async function refresh() {
  if (refreshing || !queue) return;
  refreshing = true;
  const gen = drainGen;
  try {
    const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]));
    const perEndpoint = Object.fromEntries(ENDPOINTS.map((e) => [e, { ...counts }]));
    const dead = [];
    // All statuses at once: up to PAGE_SIZE messages come from one transaction, a consistent
    // snapshot (one list per status could see a message move from one list to the next).
    for await (const message of messages(undefined)) {
      const delivery = JSON.parse(message.payload);
      counts[message.status] += 1;
      perEndpoint[delivery.endpoint][message.status] += 1;
      if (message.status === "dead" && dead.length < DEAD_ROWS) dead.push([message, delivery]);
    }
    for (const status of STATUSES) $(`count-${status}`).textContent = counts[status];

    $("endpoints").tBodies[0].replaceChildren(
      ...ENDPOINTS.map((endpoint) => {
        const tr = document.createElement("tr");
        tr.append(cell(endpoint), cell(BEHAVIOUR[endpoint]), ...STATUSES.map((s) => cell(perEndpoint[endpoint][s])), cell(attempts[endpoint]));
        return tr;
      }),
    );

    const shown = picked === null ? dead[0]?.[0] : await queue.get(picked);
    const rows = dead.map(([m, d]) => {
      const tr = document.createElement("tr");
      tr.dataset.id = m.id;
      tr.dataset.endpoint = d.endpoint;
      if (m.id === shown?.id) tr.className = "picked";
      tr.append(cell(`#${m.id}`), cell(d.endpoint), cell(kind(d)), cell(`${m.retryCount}/${m.maxRetries}`), cell(m.lastError ?? ""));
      return tr;
    });
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      const td = cell(replayedTotal
        ? `none left: ${replayedTotal} replayed and delivered again`
        : "no dead letters");
      td.colSpan = 5;
      tr.append(td);
      rows.push(tr);
    }
    $("dead").tBodies[0].replaceChildren(...rows);
    $("dead-note").textContent = counts.dead > DEAD_ROWS ? `(first ${DEAD_ROWS} of ${counts.dead})` : "";
    showHistory(shown);
    $("replay").disabled = counts.dead === 0 || !running;

    const settled = counts.succeeded + counts.dead;
    if (running && total > 0 && settled === total && drainStarted && gen === drainGen) {
      drainsDone += 1;
      const seconds = ((performance.now() - drainStarted) / 1000).toFixed(1);
      drainStarted = 0;
      const state = await (await fetch("/subscribers/state")).json();
      log(`drain ${drainsDone} done in ${seconds} s: ${counts.succeeded} succeeded, ${counts.dead} dead; `
        + `server saw ${state.total} requests, ${state.overlaps.length} overlapping deliveries`,
        state.overlaps.length > 0);
      if (counts.dead > 0) setPhase("drained", `drained: ${counts.dead} dead letters to look at`);
      else setPhase("all-succeeded", `all ${total} deliveries succeeded`);
    }
  } finally {
    refreshing = false;
  }
}

async function start() {
  if (total > 0) {
    if (controller) await pauseRelay();
    else {
      startRelay();
      setPhase("relaying", "relaying…");
    }
    return;
  }
  $("start").disabled = true;
  setPhase("enqueueing", "loading the webhook examples…");
  const deliveries = await loadDeliveries();
  const began = performance.now();
  // One transaction, all or nothing (at most 1000 items).
  await queue.enqueueMany(deliveries.map((d) => ({ payload: JSON.stringify(d), maxRetries: MAX_RETRIES })));
  total = deliveries.length;
  const events = new Set(deliveries.map((d) => d.event)).size;
  log(`enqueued ${total} deliveries (${events} event types) in ${((performance.now() - began) / 1000).toFixed(2)} s`);
  drainStarted = performance.now();
  drainGen += 1;
  startRelay();
  setPhase("draining", `relaying with ${WORKERS} handlers at once…`);
}

async function replayDead() {
  $("replay").disabled = true;
  drainGen += 1;
  // Every dead message of the queue, in batches of 200 (one transaction each).
  const replayed = await queue.replayAll();
  replayedTotal += replayed;
  log(`replayed ${replayed} dead messages${$("fix").checked ? "" : " (endpoints not fixed: expect them back)"}`);
  drainStarted = performance.now();
  drainGen += 1;
  setPhase("draining", `relaying ${replayed} replayed messages…`);
  await refresh();
}

async function fix() {
  const fixed = $("fix").checked;
  await fetch("/subscribers/fix", { method: "POST", body: JSON.stringify({ fixed }) });
  if (fixed) await fetch("/inbox-control/fix", { method: "POST" }); // the outbox's /inbox/gone too
  log(fixed ? "fixed /gone and /strict: they answer 200 now" : "broke /gone and /strict again");
}

async function main() {
  $("worker-count").textContent = WORKERS;
  await fetch("/subscribers/reset", { method: "POST" });
  db = await freshDatabase();
  queue = db.queue(QUEUE_NAME);
  $("start").addEventListener("click", start);
  $("replay").addEventListener("click", replayDead);
  $("fix").addEventListener("change", fix);
  $("dead").tBodies[0].addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-id]");
    if (row) {
      picked = Number(row.dataset.id);
      refresh();
    }
  });
  addEventListener("offline", () => log("offline: the relay claims nothing until the network is back", true));
  addEventListener("online", () => log("online again: the relay resumes"));
  $("start").disabled = false;
  setPhase("ready", "ready");
  for (;;) {
    const began = performance.now();
    await refresh();
    await sleep(Math.max(REFRESH_MS, 3 * (performance.now() - began)));
  }
}

main().catch((err) => {
  setPhase("error", `error: ${err.message}`);
  log(`${err.name} ${err.code ?? ""}: ${err.message}`, true);
  console.error(err);
});
