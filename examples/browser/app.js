// The webhook relay of examples/webhook_relay.py, in a browser tab: deliveries are queued in
// IndexedDB through the `deadletter` package and relayed by a few worker loops to the simulated
// subscribers of the local server (examples/browser/server.mjs).
//
// Retry policy (the same as the Python demo): a subscriber that read the delivery and refused its
// content (400, 413, 415, 422) will refuse the same bytes again, so those failures are permanent
// (`retryable: false`, dead at once). Everything else is retried, 410 and 5xx included; with
// `maxRetries: 3` a message waits 2 s, then 4 s, and its third failure is dead.

import { open } from "deadletter";

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
const IDLE_MS = 200;
const PAGE_SIZE = 1000;
const REFRESH_MS = 400;
const DEAD_ROWS = 24;

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let db;
let queue;
let total = 0;
let running = false;
let drainStarted = 0;
let drainsDone = 0;
let replayedTotal = 0;
const retriesDue = []; // when the messages waiting for a retry are due (ms since the epoch)
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

/** POST one delivery; never throws for HTTP or network failures. */
async function deliver(message, delivery) {
  try {
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
    if (response.ok) return { ok: true };
    const error = `HTTP ${response.status} ${response.statusText}`.trim();
    return { ok: false, error, retryable: !PERMANENT_STATUSES.has(response.status) };
  } catch (err) {
    return { ok: false, error: `network error: ${err.message}`, retryable: true };
  }
}

/** How long a worker that found nothing due sleeps: until the next retry, at most IDLE_MS. */
function idleDelay() {
  const now = Date.now();
  const pending = retriesDue.filter((t) => t > now);
  retriesDue.splice(0, retriesDue.length, ...pending);
  return pending.length ? Math.min(IDLE_MS, Math.max(10, Math.min(...pending) - now)) : IDLE_MS;
}

/** One worker loop: claim a due message, deliver it, settle it; sleep briefly when none is due. */
async function worker(n) {
  while (running) {
    let message;
    try {
      message = await queue.claim();
    } catch (err) {
      log(`worker ${n}: claim failed: ${err.code ?? ""} ${err.message}`, true);
      await sleep(IDLE_MS);
      continue;
    }
    if (!message) {
      await sleep(idleDelay());
      continue;
    }
    const delivery = JSON.parse(message.payload);
    const attempt = await deliver(message, delivery);
    attempts[delivery.endpoint] += 1;
    try {
      if (attempt.ok) {
        await queue.succeed(message.id, { leaseToken: message.leaseToken });
      } else {
        const failed = await queue.fail(message.id, attempt.error, {
          leaseToken: message.leaseToken,
          retryable: attempt.retryable,
        });
        if (failed.retryAfter) retriesDue.push(failed.retryAfter.getTime());
      }
    } catch (err) {
      log(`worker ${n}: settling #${message.id} failed: ${err.code ?? ""} ${err.message}`, true);
    }
  }
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
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

    const rows = dead.map(([m, d]) => {
      const tr = document.createElement("tr");
      const kind = d.action ? `${d.event}.${d.action}` : d.event;
      tr.append(cell(`#${m.id}`), cell(d.endpoint), cell(kind), cell(`${m.retryCount}/${m.maxRetries}`), cell(m.lastError ?? ""));
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
  $("start").disabled = true;
  setPhase("enqueueing", "loading the webhook examples…");
  const deliveries = await loadDeliveries();
  const began = performance.now();
  for (const delivery of deliveries) {
    await queue.enqueue(JSON.stringify(delivery), { maxRetries: MAX_RETRIES });
  }
  total = deliveries.length;
  const events = new Set(deliveries.map((d) => d.event)).size;
  log(`enqueued ${total} deliveries (${events} event types) in ${((performance.now() - began) / 1000).toFixed(2)} s`);
  running = true;
  drainStarted = performance.now();
  drainGen += 1;
  setPhase("draining", `relaying with ${WORKERS} workers…`);
  for (let n = 1; n <= WORKERS; n += 1) worker(n);
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
