// The Outbox (js/outbox.js) in Node on fake-indexeddb, with real values: how many sends a failed
// request gets and when (findings N4: the first attempt counts, the resend waits for the backoff or
// Retry-After), a send held under its lease (M1: never sent twice at once; aborted when the lease
// may have run out), options checked like every options object (N8, M4), a body too large to keep
// (M2), a request its caller aborted (N13), an opaque answer (M12), the drain at listen() in a page
// (M13). The service worker's side runs in Chromium (tests/browser/run.mjs, suite "sync").
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import assert from "node:assert/strict";
import { DeadLetterError, Outbox, Queue, open } from "../../../build/pkg/index.js";

let n = 0;
const fresh = () => `outbox-${process.pid}-${++n}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const LIMIT = { timeout: 30_000 };
const post = (body = "a") => new Request("http://example.invalid/api", { method: "POST", body });

/** Resolves once `condition()` holds; polls every 5 ms, fails after 10 s. */
async function until(condition, what) {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > 10_000) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A `fetch` option answering `answer(request, i)`; `sends` records when (ms since t0) and with what body. */
function server(answer) {
  const t0 = Date.now();
  const sends = [];
  const fetch = async (request) => {
    sends.push({ at: Date.now() - t0, body: await request.clone().text(), signal: request.signal });
    return answer(request, sends.length - 1);
  };
  return { fetch, sends };
}

const only = async (outbox) => {
  const messages = await (await outbox.queue()).list();
  assert.equal(messages.length, 1);
  return messages[0];
};

async function rejection(promiseOrFn) {
  try {
    await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn);
  } catch (err) {
    return err;
  }
  return assert.fail("expected a rejection");
}

const fieldCodes = (err) => {
  assert.ok(err instanceof DeadLetterError, String(err));
  assert.equal(err.code, "validation_failed");
  return err.errors.map((e) => `${e.field}:${e.code}`);
};

test("a failed fetch counts as the first attempt and the resend waits for the backoff: maxRetries 2 is 2 sends (finding N4)", LIMIT, async () => {
  const db = await open(fresh());
  const { fetch, sends } = server(() => new Response("x", { status: 503 }));
  const outbox = new Outbox(db, { queue: "p", maxRetries: 2, backoff: { initialMs: 300 }, online: () => true, fetch });
  const response = await outbox.fetch(post("once"));
  assert.equal(response.status, 202);
  const id = Number(response.headers.get("x-deadletter-queued"));
  await until(async () => (await (await outbox.queue()).get(id)).status === "dead", "the request's death");
  const dead = await only(outbox);
  assert.equal(sends.length, 2, `sends at ${sends.map((s) => s.at)}`);
  assert.ok(sends[1].at - sends[0].at >= 290, `the resend ${sends[1].at - sends[0].at} ms after the first, not after the 300 ms backoff`);
  assert.deepEqual(sends.map((s) => s.body), ["once", "once"]);
  assert.deepEqual([dead.retryCount, dead.errors.map((e) => e.error)], [2, ["HTTP 503", "HTTP 503"]]);
  db.close();
});

test("a network failure in fetch is the first failure too; the drain that records it sends nothing", LIMIT, async () => {
  const db = await open(fresh());
  let up = false;
  const { fetch, sends } = server(() => {
    if (!up) throw new TypeError("fetch failed");
    return new Response("ok");
  });
  const outbox = new Outbox(db, { queue: "p", maxRetries: 3, backoff: { initialMs: 1000 }, online: () => true, fetch });
  assert.equal((await outbox.fetch(post())).status, 202);
  await until(async () => (await only(outbox)).retryCount === 1, "the first failure recorded");
  const waiting = await only(outbox);
  assert.deepEqual([waiting.status, waiting.errors.map((e) => e.error), sends.length], ["pending", ["TypeError: fetch failed"], 1]);
  up = true;
  await until(async () => (await only(outbox)).status === "succeeded", "the resend");
  assert.equal(sends.length, 2);
  db.close();
});

test("a network failure while offline is no attempt: the first drain online sends it, maxRetries 1 included", LIMIT, async () => {
  const db = await open(fresh());
  let online = false;
  const { fetch, sends } = server(() => {
    if (!online) throw new TypeError("Failed to fetch");
    return new Response("ok");
  });
  const outbox = new Outbox(db, { queue: "p", maxRetries: 1, online: () => online, fetch });
  assert.equal((await outbox.fetch(post("offline"))).status, 202);
  const kept = await only(outbox);
  assert.deepEqual([kept.status, kept.retryCount, sends.length], ["pending", 0, 1]);
  online = true;
  assert.deepEqual(await outbox.drain({ waitMs: 0 }), { sent: 1, pending: 0 });
  const done = await only(outbox);
  assert.deepEqual([done.status, done.retryCount, sends.map((s) => s.body)], ["succeeded", 0, ["offline", "offline"]]);
  db.close();
});

test("a 429 or 503 answer's Retry-After sets the wait before the resend (seconds or an HTTP date)", LIMIT, async () => {
  const db = await open(fresh());
  const { fetch, sends } = server((request, i) => (i < 2 ? new Response("", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok")));
  const outbox = new Outbox(db, { queue: "p", backoff: { initialMs: 10 }, online: () => true, fetch });
  assert.equal((await outbox.fetch(post())).status, 202);
  await until(async () => (await only(outbox)).status === "succeeded", "the delivery");
  const delivered = await only(outbox);
  assert.deepEqual([sends.length, delivered.errors.map((e) => e.error)], [3, ["HTTP 429", "HTTP 429"]], `sends at ${sends.map((s) => s.at)}`);
  const gaps = [sends[1].at - sends[0].at, sends[2].at - sends[1].at];
  assert.ok(gaps.every((gap) => gap >= 950), `gaps ${gaps} ms, not the 1 s of Retry-After (the backoff: 10 ms)`);
  db.close();
});

test("a Retry-After that is no wait (0, negative, a fraction, a date past) leaves the backoff: retries are not spent at once", LIMIT, async () => {
  // Found by a new user (session 7): "-5", "1.5" and "0" resent at once, 3 sends in 5 ms, dead.
  for (const header of ["-5", "1.5", "0", "Thu, 01 Jan 1970 00:00:00 GMT"]) {
    const db = await open(fresh());
    const { fetch, sends } = server((request, i) => (i < 1 ? new Response("", { status: 429, headers: { "retry-after": header } }) : new Response("ok")));
    const outbox = new Outbox(db, { queue: "p", backoff: { initialMs: 300 }, online: () => true, fetch });
    assert.equal((await outbox.fetch(post())).status, 202);
    await until(async () => (await only(outbox)).status === "succeeded", "the delivery");
    assert.equal(sends.length, 2, header);
    const gap = sends[1].at - sends[0].at;
    assert.ok(gap >= 290, `Retry-After ${JSON.stringify(header)}: resent after ${gap} ms, not the 300 ms backoff`);
    db.close();
  }
});

test("a retry that falls due while a claim finds nothing is waited for: the drain does not stop with it pending", LIMIT, async () => {
  // The Retry-After test's flake on a busy machine: the drain read nextDueAt after an empty
  // claim, when the retry was due already (so none was "next"), and stopped.
  const db = await open(fresh());
  const { fetch, sends } = server(() => new Response("ok"));
  let online = false;
  const outbox = new Outbox(db, { queue: "p", online: () => online, fetch });
  await outbox.add(post("due soon")); // kept; its drain sends nothing (offline)
  const queue = await outbox.queue();
  const [claimed] = await queue.claimMany(1);
  await queue.fail(claimed.id, "HTTP 503", { leaseToken: claimed.leaseToken, retryInMs: 100 });
  // A claim that finds nothing, then is slow to return (a busy machine) until the retry is due.
  queue.claimMany = async (...args) => {
    const batch = await Queue.prototype.claimMany.apply(queue, args);
    if (batch.length === 0) await sleep(150);
    return batch;
  };
  online = true;
  assert.deepEqual(await outbox.drain({ waitMs: 1000 }), { sent: 1, pending: 0 });
  assert.deepEqual(sends.map((s) => s.body), ["due soon"]);
  db.close();
});

test("a send is held under its lease: a second drain while it is in flight does not send it again (finding M1)", LIMIT, async () => {
  const db = await open(fresh(), { leaseMs: 400 }); // 200 ms from a heartbeat due to the end
  let release;
  const slow = new Promise((resolve) => {
    release = resolve;
  });
  const { fetch, sends } = server(async () => {
    await slow;
    return new Response("ok");
  });
  const outbox = new Outbox(db, { queue: "p", online: () => true, fetch });
  await outbox.add(post("ONCE")); // its drain claims and sends it (lease 400 ms)
  await until(() => sends.length === 1, "the first send");
  const queue = await outbox.queue();
  const extends_ = [];
  queue.extend = (id, o) => {
    extends_.push(o.leaseMs);
    return Queue.prototype.extend.call(queue, id, o);
  };
  await sleep(1200); // three leases
  assert.deepEqual(await outbox.drain({ waitMs: 0 }), { sent: 0, pending: 0 });
  release();
  await until(async () => (await only(outbox)).status === "succeeded", "the ack");
  const done = await only(outbox);
  assert.deepEqual([sends.length, done.retryCount, done.errors], [1, 0, []]);
  assert.ok(extends_.length >= 2 && extends_.every((ms) => ms === 400), `extends ${extends_}`);
  db.close();
});

test("a drain leaves no timer behind: a heartbeat under way as the send ends sets no new deadline", LIMIT, async () => {
  // The send ends while an extend is under way: the drain stops the heartbeats and waits for it;
  // its success then armed the lease's deadline again, a timer that kept Node running for up to
  // a lease after the drain resolved.
  const db = await open(fresh(), { leaseMs: 1000 });
  let answer;
  const answered = new Promise((resolve) => {
    answer = resolve;
  });
  const { fetch } = server(async () => {
    await answered;
    return new Response("ok");
  });
  let online = false;
  const outbox = new Outbox(db, { queue: "p", online: () => online, fetch });
  await outbox.add(post()); // kept; its drain sends nothing (offline)
  const queue = await outbox.queue();
  let extended;
  let extending = false;
  queue.extend = (id, o) => {
    extending = true;
    return new Promise((resolve) => {
      extended = resolve;
    }).then(() => Queue.prototype.extend.call(queue, id, o));
  };
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
  const before = timers();
  online = true;
  const drained = outbox.drain({ waitMs: 0 });
  await until(() => extending, "a heartbeat under way"); // half a lease
  answer();
  await sleep(0); // the answer's microtasks ran: the drain waits for the heartbeat under way
  extended();
  assert.deepEqual(await drained, { sent: 1, pending: 0 });
  assert.equal(timers(), before, "a timer outlived the drain");
  db.close();
});

test("a send whose lease could not be extended is aborted at the lease's end and fails retryably", LIMIT, async () => {
  const db = await open(fresh(), { leaseMs: 200 });
  const { fetch, sends } = server((request) => new Promise((resolve, reject) => {
    request.signal.addEventListener("abort", () => reject(request.signal.reason));
  }));
  let online = false;
  const outbox = new Outbox(db, { queue: "p", online: () => online, fetch });
  await outbox.add(post()); // kept; its drain sends nothing (offline)
  const queue = await outbox.queue();
  queue.extend = () => Promise.reject(new DeadLetterError("store error: disk gone", { code: "store" }));
  const logged = [];
  const original = console.error;
  console.error = (...args) => logged.push(args);
  try {
    online = true;
    const started = Date.now();
    assert.deepEqual(await outbox.drain({ waitMs: 0 }), { sent: 0, pending: 1 });
    const took = Date.now() - started;
    assert.ok(took >= 150 && took < 2000, `aborted after ${took} ms (lease 200 ms)`);
  } finally {
    console.error = original;
  }
  assert.equal(sends.length, 1);
  assert.equal(sends[0].signal.aborted, true);
  const failed = await only(outbox);
  assert.deepEqual([failed.status, failed.retryCount, failed.errors.map((e) => e.error)],
    ["pending", 1, ["TimeoutError: the lease ran out while the request was sent"]]);
  assert.ok(logged.length >= 1, "the failed extend was logged");
  db.close();
});

test("a request its caller aborted rejects with the abort and is not kept, sent or not (finding N13)", LIMIT, async () => {
  const db = await open(fresh());
  const { fetch, sends } = server(
    (request) =>
      new Promise((resolve, reject) => {
        request.signal.throwIfAborted();
        request.signal.addEventListener("abort", () => reject(request.signal.reason));
      }),
  );
  const outbox = new Outbox(db, { queue: "p", online: () => true, fetch });
  const caller = new AbortController();
  const pending = outbox.fetch(new Request("http://example.invalid/api", { method: "POST", body: "a", signal: caller.signal }));
  await until(() => sends.length === 1, "the send");
  caller.abort();
  assert.equal((await rejection(pending)).name, "AbortError");
  const before = new Request("http://example.invalid/api", { method: "POST", body: "b", signal: AbortSignal.abort() });
  assert.equal((await rejection(outbox.fetch(before))).name, "AbortError");
  assert.deepEqual(await (await outbox.queue()).list(), []);
  assert.deepEqual(await outbox.drain({ waitMs: 0 }), { sent: 0, pending: 0 });
  assert.equal(sends.length, 2);
  db.close();
});

test("an opaque answer (a no-cors request's, status 0) counts as delivered, not dead with HTTP 0 (finding M12)", LIMIT, async () => {
  const db = await open(fresh());
  let online = false;
  // What a browser's fetch answers a no-cors request: nothing readable, not even the status.
  const opaque = () => ({ type: "opaque", status: 0, ok: false, statusText: "", headers: new Headers() });
  const { fetch, sends } = server(() => {
    if (!online) throw new TypeError("Failed to fetch");
    return opaque();
  });
  const outbox = new Outbox(db, { queue: "p", online: () => online, fetch });
  assert.equal((await outbox.fetch(post("kept"))).status, 202);
  online = true;
  assert.deepEqual(await outbox.drain({ waitMs: 0 }), { sent: 1, pending: 0 });
  const done = await only(outbox);
  assert.deepEqual([done.status, done.errors, sends.length], ["succeeded", [], 2]);
  // Sent at once, the opaque answer is the caller's, and nothing is kept.
  assert.equal((await outbox.fetch(post("direct"))).type, "opaque");
  assert.equal((await (await outbox.queue()).list()).length, 1);
  db.close();
});

test("a drain after one that died mid-send waits for the request its own claim took back (tester T5)", LIMIT, async () => {
  // The claim takes back the expired lease, which delays the request by its backoff after the
  // round's reading found nothing delayed: the drain stopped with it pending.
  const db = await open(fresh(), { leaseMs: 100 });
  const { fetch, sends } = server(() => new Response("ok"));
  const outbox = new Outbox(db, { queue: "crashed", online: () => true, fetch, backoff: { initialMs: 50, capMs: 50, jitter: null } });
  await outbox.add(post("sending"));
  const [claimed] = await (await outbox.queue()).claimMany(1); // a drain that died mid-send
  await sleep(150); // its lease ran out
  assert.deepEqual(await outbox.drain({ waitMs: 5_000 }), { sent: 1, pending: 0 });
  const done = await only(outbox);
  assert.deepEqual([claimed.id, done.status, done.retryCount, sends.length], [done.id, "succeeded", 1, 1]);
  db.close();
});

test("listen() in a page drains at once: what a closed or reloaded page left is sent without an online event (finding M13)", LIMIT, async () => {
  const db = await open(fresh(), { leaseMs: 100 });
  const { fetch, sends } = server(() => new Response("ok"));
  const closed = new Outbox(db, { queue: "p", online: () => false, fetch });
  await closed.add(post("sending")); // kept offline by a page since closed...
  const queue = await closed.queue();
  const [claimed] = await queue.claimMany(1); // ...whose drain began to send it (lease 100 ms)
  await closed.add(post("kept"));
  // A page's global scope, as far as listen() uses it (Node has no addEventListener).
  const listened = [];
  const saved = Object.getOwnPropertyDescriptors(globalThis);
  globalThis.addEventListener = (type) => listened.push(type);
  globalThis.removeEventListener = (type) => listened.push(`-${type}`);
  try {
    await sleep(150); // the claimed one's lease ran out
    const stop = new Outbox(db, { queue: "p", online: () => true, fetch }).listen();
    await until(async () => (await queue.stats()).succeeded === 2, "both sent");
    stop();
  } finally {
    for (const name of ["addEventListener", "removeEventListener"]) {
      if (saved[name]) Object.defineProperty(globalThis, name, saved[name]);
      else delete globalThis[name];
    }
  }
  assert.deepEqual([claimed.status, sends.map((s) => s.body).sort(), listened], ["processing", ["kept", "sending"], ["online", "-online"]]);
  db.close();
});

test("Outbox and drain options are checked like every options object: unknown keys, ranges by their own field (finding N8)", LIMIT, async () => {
  const db = await open(fresh());
  const calls = async (outbox) => [
    fieldCodes(await rejection(outbox.queue())),
    fieldCodes(await rejection(outbox.add(post()))),
    fieldCodes(await rejection(outbox.drain())),
  ];
  const unknown = await calls(new Outbox(db, { queue: "typo", maxretries: 1 }));
  assert.deepEqual(unknown, [["maxretries:unknown"], ["maxretries:unknown"], ["maxretries:unknown"]]);
  const err = await rejection(new Outbox(db, { bogus: 1 }).queue());
  assert.match(err.message, /bogus: unknown option; expected one of queue, tag, maxRetries, concurrency, backoff, fetch, online/);
  assert.deepEqual(fieldCodes(await rejection(new Outbox(db, { concurrency: 0, maxRetries: 11, fetch: 5, online: "yes", tag: "" }).queue())),
    ["maxRetries:out_of_range", "concurrency:out_of_range", "fetch:type", "online:type", "tag:type"]);
  assert.deepEqual(fieldCodes(await rejection(new Outbox(db, { concurrency: 1.5 }).queue())), ["concurrency:type"]);
  assert.deepEqual(fieldCodes(await rejection(new Outbox(db, 5).queue())), ["options:type"]);
  assert.equal((await rejection(new Outbox(db, { queue: "" }).queue())).errors[0].field, "queue");
  assert.deepEqual(await (await db.queue("typo").list()), [], "nothing kept");

  const ok = new Outbox(db, { queue: "fine", online: () => true, concurrency: 100, maxRetries: 10, tag: "t", fetch: async () => new Response("") });
  assert.equal(ok.tag, "t");
  assert.deepEqual(fieldCodes(await rejection(ok.drain({ waitMS: 0 }))), ["waitMS:unknown"]);
  assert.deepEqual(fieldCodes(await rejection(ok.drain({ waitMs: -1 }))), ["waitMs:out_of_range"]);
  assert.deepEqual(fieldCodes(await rejection(ok.drain({ waitMs: 3_600_001 }))), ["waitMs:out_of_range"]);
  assert.deepEqual(fieldCodes(await rejection(ok.drain("soon"))), ["options:type"]);
  assert.deepEqual(await ok.drain({ waitMs: null }), { sent: 0, pending: 0 });
  assert.deepEqual(await new Outbox(db, { queue: "nulls", maxRetries: null, concurrency: null }).drain({ waitMs: 0 }), { sent: 0, pending: 0 });
  db.close();
});

test("fetch of a request whose body was read and requestOf of what is no kept request are validation_failed (findings N8, M4)", LIMIT, async () => {
  const db = await open(fresh());
  const { fetch, sends } = server(() => new Response("ok"));
  const outbox = new Outbox(db, { queue: "p", online: () => true, fetch });
  const used = post("read");
  await used.text();
  const err = await rejection(outbox.fetch(used));
  assert.deepEqual(fieldCodes(err), ["request:invalid"]);
  assert.match(err.message, /pass request.clone\(\)/);
  assert.deepEqual(fieldCodes(await rejection(outbox.add(used))), ["request:invalid"]);
  assert.equal(sends.length, 0, "nothing sent");
  const other = await db.queue("other").enqueue("plain text");
  for (const message of [other, { payload: "{}" }, { payload: "[1]" }, null, undefined]) {
    assert.deepEqual(fieldCodes(await rejection(() => Outbox.requestOf(message))), ["message:invalid"]);
  }
  const kept = await outbox.add(post("b"));
  assert.equal(await Outbox.requestOf(kept).text(), "b");
  db.close();
});

test("a body too large to keep: the server's own answer when there is one, else a 413 saying so; nothing kept (finding M2)", LIMIT, async () => {
  const db = await open(fresh(), { maxPayloadBytes: 1000 });
  let down = false;
  const { fetch, sends } = server(() => {
    if (down) throw new TypeError("fetch failed");
    return new Response("busy", { status: 503, statusText: "Service Unavailable" });
  });
  const outbox = new Outbox(db, { queue: "p", online: () => true, fetch });
  const big = "x".repeat(2000);
  const answered = await outbox.fetch(post(big));
  assert.deepEqual([answered.status, await answered.text()], [503, "busy"]);
  down = true;
  const unkept = await outbox.fetch(post(big));
  assert.deepEqual([unkept.status, unkept.headers.get("x-deadletter-not-kept")], [413, "too_large"]);
  const body = await unkept.json();
  assert.deepEqual([body.code, body.errors.map((e) => `${e.field}:${e.code}`)], ["validation_failed", ["payload:too_large"]]);
  assert.equal(sends.length, 2);
  assert.deepEqual(await (await outbox.queue()).list(), []);
  // A small one is kept.
  assert.equal((await outbox.fetch(post("small"))).status, 202);
  db.close();
});

test("after the browser closed the database (the site's data cleared), the Outbox keeps requests again (tester T7, session 13)", LIMIT, async () => {
  const name = fresh();
  // fake-indexeddb's factory, its connections recorded to close them as the browser does.
  const connections = [];
  const factory = {
    open(...args) {
      const req = indexedDB.open(...args);
      req.addEventListener("success", () => connections.push(req.result));
      return req;
    },
    deleteDatabase: (n) => indexedDB.deleteDatabase(n),
    cmp: (a, b) => indexedDB.cmp(a, b),
  };
  const db = await open(name, { indexedDB: factory });
  const { fetch } = server(() => Promise.reject(new TypeError("Failed to fetch")));
  const outbox = new Outbox(db, { queue: "p", online: () => false, fetch });
  assert.equal((await outbox.fetch(post("before"))).status, 202);
  // "Clear site data": the browser closes every connection (firing `close`), then deletes.
  for (const connection of connections) {
    connection.close();
    connection.onclose(new Event("close"));
  }
  await new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = resolve;
    req.onerror = () => reject(req.error);
  });
  const response = await outbox.fetch(post("after"));
  assert.equal(response.status, 202, "kept after the clear");
  const kept = await only(outbox);
  assert.equal(kept.id, Number(response.headers.get("x-deadletter-queued")));
  assert.equal(await Outbox.requestOf(kept).text(), "after", "the request kept after the clear; the one before is gone with the site's data");
  db.close();
});
