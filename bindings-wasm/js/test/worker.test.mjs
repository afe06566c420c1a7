// The worker loop `Queue.process` with real values, on fake-indexeddb: handled counts, the failure
// text of what handlers throw, PermanentError, heartbeats that keep a lease and a lost lease, abort
// and the shutdown timeout, the idle wait until nextDueAt, a paused queue, concurrency, options, and
// a Node process that exits by itself once the loop has resolved.
// The cases every JavaScript place runs (worker-cases.mjs) run here on fake-indexeddb too.
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import assert from "node:assert/strict";
import * as deadletter from "../../../build/pkg/index.js";
import { CASES } from "./worker-cases.mjs";

const { DeadLetterError, PermanentError, Queue, open } = deadletter;

const PKG = new URL("../../../build/pkg/index.js", import.meta.url).href;
const BASE = Date.UTC(2026, 0, 1);
let n = 0;
const fresh = () => `worker-${process.pid}-${++n}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A loop that never stops fails its test instead of hanging the run.
const LIMIT = { timeout: 30_000 };

/** A database on a clock the test moves (`clock.now`, in ms), or on the real clock when `real`. */
async function database({ real = false, name = fresh(), ...options } = {}) {
  const clock = { now: BASE };
  const db = await open(name, real ? options : { clock: () => clock.now, ...options });
  return { db, clock, name };
}

/** Resolves once `condition()` holds; polls every 5 ms, fails after 10 s. */
async function until(condition, what) {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > 10_000) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Counts the calls of `queue[method]` (an own property shadowing Queue.prototype's), with their arguments. */
function spy(queue, method) {
  const calls = [];
  queue[method] = (...args) => {
    calls.push(args);
    return Queue.prototype[method].apply(queue, args);
  };
  return calls;
}

/** Runs `body(logged)` with console.error recorded in `logged` instead of printed; returns `logged`. */
async function capturingErrors(body) {
  const logged = [];
  const original = console.error;
  console.error = (...args) => logged.push(args);
  try {
    await body(logged);
  } finally {
    console.error = original;
  }
  return logged;
}

for (const [name, run] of Object.entries(CASES)) test(name, LIMIT, () => run(deadletter, fresh));

const fieldCodes = (err) => err.errors.map((e) => `${e.field}:${e.code}`);

test("a returning handler acks, a throwing one fails with the error's kind and text; resolves to the count handled", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const thrown = {
    ok: null,
    type: new TypeError("bad input"),
    empty: new RangeError(),
    nul: new Error("a\0b"),
    string: "oops",
    number: 42,
    undefined,
    object: { code: 5 },
  };
  const payloads = Object.keys(thrown);
  await q.enqueueMany(payloads);
  const controller = new AbortController();
  const seen = [];
  const handled = await q.process(
    async (message) => {
      seen.push([message.payload, message.status, typeof message.leaseToken]);
      if (seen.length === payloads.length) controller.abort();
      if (message.payload !== "ok") throw thrown[message.payload];
    },
    { signal: controller.signal },
  );
  assert.equal(handled, payloads.length);
  assert.deepEqual(seen, payloads.map((p) => [p, "processing", "string"]));
  const after = await q.list();
  assert.deepEqual(
    after.map((m) => [m.payload, m.status, m.retryCount, m.lastError, m.retryAfter?.getTime() ?? null]),
    [
      ["ok", "succeeded", 0, null, null],
      ["type", "pending", 1, "TypeError: bad input", BASE + 2000],
      ["empty", "pending", 1, "RangeError", BASE + 2000],
      ["nul", "pending", 1, "Error: a\uFFFDb", BASE + 2000],
      ["string", "pending", 1, "string: oops", BASE + 2000],
      ["number", "pending", 1, "number: 42", BASE + 2000],
      ["undefined", "pending", 1, "undefined", BASE + 2000],
      ["object", "pending", 1, 'object: {"code":5}', BASE + 2000],
    ],
  );
  assert.deepEqual(after[1].errors, [{ attempt: 1, error: "TypeError: bad input", at: new Date(BASE) }]);
  db.close();
});

test("a PermanentError (or a subclass) dead-letters the message on its first failure", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const dead = [];
  db.onDead((m) => dead.push(m.id));
  class Gone extends PermanentError {
    constructor(message) {
      super(message);
      this.name = "Gone";
    }
  }
  const cause = new SyntaxError("Unexpected token");
  const permanent = new PermanentError("malformed payload", { cause });
  assert.ok(permanent instanceof Error && permanent instanceof PermanentError);
  assert.deepEqual([permanent.name, permanent.message, permanent.cause], ["PermanentError", "malformed payload", cause]);
  const [a, b] = await q.enqueueMany([
    { payload: "malformed", maxRetries: 3 },
    { payload: "gone", maxRetries: 3 },
  ]);
  const controller = new AbortController();
  let calls = 0;
  const receivers = [];
  const handled = await q.process(
    function handler(message) {
      receivers.push(this);
      calls += 1;
      if (calls === 2) controller.abort();
      throw message.payload === "gone" ? new Gone("HTTP 410") : permanent;
    },
    { signal: controller.signal },
  );
  assert.equal(handled, 2);
  for (const [m, error] of [[a, "PermanentError: malformed payload"], [b, "Gone: HTTP 410"]]) {
    const now = await q.get(m.id);
    assert.deepEqual(
      [now.status, now.retryCount, now.lastError, now.deadAt, now.errors],
      ["dead", 1, error, new Date(BASE), [{ attempt: 1, error, at: new Date(BASE) }]],
    );
  }
  assert.deepEqual(dead, [a.id, b.id], "the loop's deaths reach onDead");
  assert.deepEqual(receivers, [undefined, undefined], "the handler is called as a plain function");
  db.close();
});

test("a handler that outlives its lease keeps it through heartbeats and runs exactly once", LIMIT, async () => {
  // Real time: a 600 ms lease, extended every 300 ms, and a handler that takes 1 s. A second loop
  // on another connection polls every 10 ms: it would reap the message once its lease ran out.
  // (A 300 ms lease left 150 ms between a heartbeat due and the lease's end: a stall of the
  // process that long on a loaded machine let the rival reap it.)
  const { db, name } = await database({ real: true });
  const other = await open(name);
  const q = db.queue("slow");
  const rival = other.queue("slow");
  const extends_ = spy(q, "extend");
  const message = await q.enqueue("slow job");
  const runs = [];
  const controller = new AbortController();
  const options = { leaseMs: 600, pollIntervalMs: 10, signal: controller.signal };
  const mine = q.process(async (m) => {
    runs.push(["mine", m.id]);
    await sleep(1000);
  }, options);
  const theirs = rival.process((m) => runs.push(["rival", m.id]), options);
  await until(async () => (await q.get(message.id)).status === "succeeded", "the slow job to succeed");
  await sleep(50); // the rival loop polls a few more times
  controller.abort();
  assert.deepEqual(await Promise.all([mine, theirs]), [1, 0]);
  assert.deepEqual(runs, [["mine", message.id]]);
  const done = await q.get(message.id);
  assert.deepEqual([done.status, done.retryCount, done.errors, done.lastError], ["succeeded", 0, [], null]);
  assert.ok(extends_.length >= 1, "heartbeats extended the lease");
  assert.ok(extends_.every(([id, o]) => id === message.id && o.leaseMs === 600));
  db.close();
  other.close();
});

test("a lost lease stops the heartbeats; the later ack fails with conflict, reported, never retried", LIMIT, async () => {
  const { db, clock } = await database();
  const q = db.queue("jobs");
  const beats = [];
  // While `held` is set, a heartbeat waits for it before it is sent: the clock moves and the reap
  // runs with no heartbeat in flight (one sent after the clock moved would extend the lease from
  // the new instant, and the reap would find nothing to take).
  let held = null;
  q.extend = (...args) => {
    const beat = (held ?? Promise.resolve()).then(() => Queue.prototype.extend.apply(q, args));
    beats.push(beat.then(() => "extended", (err) => err.code));
    return beat;
  };
  const message = await q.enqueue("job");
  let release;
  const released = new Promise((resolve) => {
    release = resolve;
  });
  const runs = [];
  const controller = new AbortController();
  let resume;
  const logged = await capturingErrors(async (logged) => {
    const loop = q.process(async (m) => {
      runs.push(m.id);
      await released;
    }, { leaseMs: 200, signal: controller.signal });
    try {
      await lostLease(loop, logged);
    } finally {
      // Whatever failed, the loop ends: a loop left running keeps Node's test process alive.
      release();
      controller.abort();
    }
  });
  async function lostLease(loop, logged) {
    try {
      await until(() => runs.length === 1, "the handler to start");
      await until(() => beats.length >= 1, "a first heartbeat");
      held = new Promise((resolve) => {
        resume = resolve;
      });
      await Promise.all(beats); // the heartbeats sent before the hold are done
      clock.now = BASE + 1000; // the lease (at most BASE + 200) has run out ...
      assert.equal(await q.reap(), 1); // ... and is counted as a failed attempt
    } finally {
      held = null;
      resume?.();
    }
    await until(async () => (await Promise.all(beats)).includes("conflict"), "a heartbeat to find the lease lost");
    const count = beats.length;
    await sleep(300); // three heartbeat periods
    assert.equal(beats.length, count, "no heartbeat after the lease was lost");
    release();
    await until(() => logged.length === 1, "the failed ack to be reported");
    controller.abort();
    assert.equal(await loop, 1);
  }
  assert.match(logged[0][0], new RegExp(`could not succeed message ${message.id} of queue "jobs"`));
  assert.ok(logged[0][1] instanceof DeadLetterError && logged[0][1].code === "conflict");
  assert.deepEqual(runs, [message.id], "run once by this loop");
  const now = await q.get(message.id);
  assert.deepEqual(
    [now.status, now.retryCount, now.errors, now.retryAfter],
    ["pending", 1, [{ attempt: 1, error: "lease expired", at: new Date(BASE + 1000) }], new Date(BASE + 3000)],
  );
  db.close();
});

test("a message claimed again while its first run still runs (its lease ran out) is a job of its own", LIMIT, async () => {
  // A process paused past its lease (issue 23): the loop's own next claim, or another worker's,
  // takes the message again while the first handler runs. Each claim is its own job: the second
  // runs beside the first (concurrency 2 used up: a third message waits), keeps its heartbeats
  // after the first ended (whose ack is refused), and is the one recorded.
  const { db, clock } = await database();
  const q = db.queue("jobs", { backoff: { initialMs: 0, capMs: 0 } });
  const extends_ = spy(q, "extend");
  const message = await q.enqueue("paused");
  let secondStarted;
  const second = new Promise((resolve) => {
    secondStarted = resolve;
  });
  const tokens = [];
  const others = [];
  const controller = new AbortController();
  const logged = await capturingErrors(async (logged) => {
    const loop = q.process(async (m) => {
      if (m.id !== message.id) return others.push(m.id);
      tokens.push(m.leaseToken);
      if (tokens.length === 1) {
        clock.now += 2000; // the 1 s lease ran out while "paused" ...
        assert.equal(await q.reap(), 1); // ... and was reaped
        await second; // the loop claims the message again (no backoff)
        await q.enqueue("another"); // both slots are taken: it waits
        await sleep(100); // ten polls
        assert.deepEqual(others, [], "a third handler ran with concurrency 2");
        return;
      }
      secondStarted();
      await until(() => logged.length === 1, "the first run's ack to be refused");
      clock.now += 100; // so that a heartbeat moves the expiry
      const before = extends_.length;
      await until(() => extends_.slice(before).some(([, o]) => o.leaseToken === m.leaseToken), "a heartbeat of the second claim");
    }, { concurrency: 2, leaseMs: 1000, pollIntervalMs: 10, signal: controller.signal });
    await until(() => others.length === 1, "the other message");
    controller.abort();
    assert.equal(await loop, 3);
  });
  assert.equal(tokens.length, 2);
  assert.notEqual(tokens[0], tokens[1]);
  assert.match(logged[0][0], new RegExp(`could not succeed message ${message.id} of queue "jobs"`));
  const done = await q.get(message.id);
  assert.deepEqual([done.status, done.retryCount, done.errors.map((e) => e.error)], ["succeeded", 1, ["lease expired"]]);
  db.close();
});

test("an abort stops the loop: at once when idle, after the running handlers otherwise", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const claims = spy(q, "claimMany");

  // Already aborted: resolves at once without claiming.
  await q.enqueue("job");
  assert.equal(await q.process(() => assert.fail("no handler runs"), { signal: AbortSignal.abort() }), 0);
  assert.equal(claims.length, 0);
  assert.equal((await q.get(1)).status, "pending");

  // Aborted while a handler runs: the handler finishes and its message is acked.
  const controller = new AbortController();
  let release;
  const loop = q.process(async () => {
    controller.abort();
    await new Promise((resolve) => {
      release = resolve;
    });
  }, { signal: controller.signal, pollIntervalMs: 3_600_000 });
  await until(() => release !== undefined, "the handler to start");
  release();
  assert.equal(await loop, 1);
  assert.equal((await q.get(1)).status, "succeeded");

  // Aborted while idle (sleeping for an hour): resolves at once.
  const idle = new AbortController();
  const before = claims.length;
  const idleLoop = q.process(() => assert.fail("nothing to handle"), { signal: idle.signal, pollIntervalMs: 3_600_000 });
  await until(() => claims.length === before + 1, "the idle loop's first claim");
  idle.abort();
  assert.equal(await idleLoop, 0);
  db.close();
});

test("an abort while the loop reads nextDueAt claims nothing more", LIMIT, async () => {
  // An idle round reads nextDueAt, then claims. An abort that came during the reading still let
  // the claim go on, and its message ran after the loop was told to stop.
  const { db } = await database();
  const q = db.queue("jobs");
  const claims = spy(q, "claimMany");
  await q.enqueue("job");
  const controller = new AbortController();
  q.nextDueAt = () => {
    controller.abort();
    return Queue.prototype.nextDueAt.call(q);
  };
  const ran = [];
  assert.equal(await q.process((m) => ran.push(m.id), { signal: controller.signal }), 0);
  assert.deepEqual([ran, claims.length], [[], 0]);
  const m = await q.get(1);
  assert.deepEqual([m.status, m.leaseToken, m.retryCount], ["pending", null, 0]);
  db.close();
});

test("after the shutdown timeout a running handler is abandoned: no more heartbeats, its message left to its lease", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const beats = spy(q, "extend");
  const message = await q.enqueue("stuck");
  const controller = new AbortController();
  let started = false;
  let release;
  const loop = q.process(async () => {
    started = true;
    await new Promise((resolve) => {
      release = resolve;
    });
  }, { signal: controller.signal, shutdownTimeoutMs: 50, leaseMs: 40 });
  await until(() => started && beats.length >= 1, "the handler to run under heartbeats");
  controller.abort();
  assert.equal(await loop, 0, "an abandoned handler is not counted");
  const count = beats.length;
  await sleep(100); // five heartbeat periods
  assert.equal(beats.length, count, "no heartbeat after the loop resolved");
  release(); // settles after the loop: its outcome is not recorded
  await sleep(20);
  const now = await q.get(message.id);
  assert.deepEqual([now.status, now.retryCount], ["processing", 0]);
  db.close();
});

test("an idle loop sleeps until nextDueAt, never spins, and wakes when a handler ends", LIMIT, async () => {
  // Real time: a message delayed 150 ms and a poll interval of an hour.
  const { db } = await database({ real: true });
  const q = db.queue("later");
  const claims = spy(q, "claimMany");
  const claimedAt = [];
  const counted = q.claimMany;
  q.claimMany = (...args) => {
    claimedAt.push(Date.now());
    return counted(...args);
  };
  const delayed = await q.enqueue("later", { delayMs: 150 });
  const controller = new AbortController();
  let claimsBefore;
  let handledAt;
  const loop = q.process(() => {
    claimsBefore = claims.length;
    handledAt = Date.now();
  }, { pollIntervalMs: 3_600_000, signal: controller.signal });
  await until(() => handledAt !== undefined, "the delayed message");
  const due = delayed.retryAfter.getTime();
  assert.ok(handledAt >= due - 1, "not before it was due");
  // One claim finds nothing due and the loop sleeps until nextDueAt; a Node timer may fire a
  // millisecond early by Date.now(), and then one more claim sleeps that millisecond. (On a
  // loaded machine the loop may begin only once the message is due: its first claim takes it.)
  const early = claimedAt[0] < due - 1;
  const expected = early ? [2, 3] : [1];
  assert.ok(expected.includes(claimsBefore), `${claimsBefore} claims before the message was due`);
  await until(async () => (await q.get(delayed.id)).status === "succeeded", "the ack");
  // After the handler: a claim finds nothing; one more after reading nextDueAt (null: nothing is
  // delayed), then the loop sleeps the poll interval: no third claim comes.
  await until(() => claims.length >= claimsBefore + 2, "the two claims after the handler");
  await sleep(200);
  assert.equal(claims.length, claimsBefore + 2);
  controller.abort();
  assert.equal(await loop, 1);
  db.close();
});

test("a handler's failure wakes an idle loop, which then sleeps until the retry is due", LIMIT, async () => {
  // Real time; the backoff policy retries after 100 ms. The first attempt fails while the loop,
  // with a free slot and nothing due, sleeps for an hour: the failure wakes it, it sleeps until the
  // retry is due and succeeds it.
  const { db } = await database({ real: true });
  const q = db.queue("retry", { backoff: { initialMs: 100 } });
  const claims = spy(q, "claimMany");
  const m = await q.enqueue("flaky");
  const controller = new AbortController();
  const attempts = [];
  const loop = q.process(async (message) => {
    attempts.push(message.retryCount);
    if (attempts.length > 1) return controller.abort();
    // Claims 1 (this message), 2 (none, the round before was busy), 3 (none, after reading
    // nextDueAt): the loop is going to sleep for an hour. Let it, then fail.
    await until(() => claims.length === 3, "the loop to go idle");
    await sleep(20);
    throw new Error("HTTP 503");
  }, { pollIntervalMs: 3_600_000, concurrency: 2, signal: controller.signal });
  assert.equal(await loop, 2);
  assert.deepEqual(attempts, [0, 1]);
  assert.ok(claims.length <= 6, `${claims.length} claims`);
  const done = await q.get(m.id);
  assert.deepEqual([done.status, done.retryCount, done.lastError], ["succeeded", 1, "Error: HTTP 503"]);
  db.close();
});

test("on a paused queue the loop claims nothing, idles without spinning, and takes the messages at its first claim after the resume", LIMIT, async () => {
  // Real time, a poll interval of 100 ms. The queue is paused by another handle (another tab or
  // process would be the same: the state is stored with the queue). Asserted in claims, and in
  // time only where a loaded machine cannot break it (a lower bound): the test once asserted at
  // least 2 claims in 350 ms and the messages taken within 150 ms of the resume (40 ms of margin).
  const { db, name } = await database({ real: true });
  const q = db.queue("paused");
  await q.enqueueMany(["a", "b"]);
  const other = await open(name);
  await other.queue("paused").pause();
  const claims = spy(q, "claimMany");
  const handled = [];
  const controller = new AbortController();
  const started = Date.now();
  const loop = q.process((m) => {
    handled.push([m.payload, claims.length]);
  }, { pollIntervalMs: 100, signal: controller.signal });
  await until(() => claims.length >= 3, "three claims while paused");
  // An empty claim, then nextDueAt and a sleep of the poll interval: three claims take two
  // intervals (a timer may fire a millisecond early); a spinning loop makes them at once, one
  // that oversleeps takes ten times as long.
  const took = Date.now() - started;
  assert.ok(took >= 2 * 100 - 2 && took < 2000, `3 claims in ${took} ms`);
  assert.deepEqual(handled, [], "nothing claimed while paused");
  assert.equal((await q.stats()).pending, 2);
  assert.equal((await other.queue("paused").resume()).paused, false);
  const claimsAtResume = claims.length; // every later claim began after the resume
  await until(() => handled.length === 2, "the messages after the resume");
  assert.deepEqual(handled.map(([payload]) => payload), ["a", "b"]);
  // Taken by the claim under way at the resume or by the next one, a poll interval later at most.
  const after = handled[0][1] - claimsAtResume;
  assert.ok(after <= 1, `taken by the claim ${after} after the resume`);
  controller.abort();
  assert.equal(await loop, 2);
  other.close();
  db.close();
});

test("concurrency: that many handlers run at once, never more, claimed in batches of the free slots", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const claims = spy(q, "claimMany");
  await q.enqueueMany(Array.from({ length: 7 }, (_, i) => `job ${i}`));
  const controller = new AbortController();
  let active = 0;
  let most = 0;
  const ran = [];
  let allThree;
  const threeActive = new Promise((resolve) => {
    allThree = resolve;
  });
  const loop = q.process(async (m) => {
    active += 1;
    most = Math.max(most, active);
    ran.push(m.id);
    if (active === 3) allThree();
    await threeActive; // the first handlers wait until three run at once: no timing involved
    active -= 1;
    if (ran.length === 7 && active === 0) controller.abort();
  }, { concurrency: 3, signal: controller.signal });
  assert.equal(await loop, 7);
  assert.equal(most, 3);
  assert.deepEqual([...ran].sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(claims[0], [3, { leaseMs: undefined }], "the first claim fills every slot (the lease: the core's choice)");
  assert.ok(claims.every(([wanted]) => wanted >= 1 && wanted <= 3));
  assert.deepEqual((await q.stats()).succeeded, 7);

  // More slots than claimMany takes: batches of at most 100.
  const wide = new AbortController();
  const before = claims.length;
  const idle = q.process(() => {}, { concurrency: 1000, signal: wide.signal, pollIntervalMs: 3_600_000 });
  await until(() => claims.length > before, "a claim");
  wide.abort();
  assert.equal(await idle, 0);
  assert.deepEqual(claims[before], [100, { leaseMs: undefined }]);
  db.close();
});

test("options: checked by the core, all rejected fields at once, unknown keys, handler and signal types", LIMIT, async () => {
  const { db, clock } = await database({ leaseMs: 5000 });
  const q = db.queue("jobs");
  const claims = spy(q, "claimMany");
  await q.enqueue("job");
  const rejects = async (promise, expected) => {
    const err = await promise.then(() => assert.fail("expected a rejection"), (e) => e);
    assert.ok(err instanceof DeadLetterError, String(err));
    assert.equal(err.code, "validation_failed");
    assert.deepEqual(fieldCodes(err), expected);
    return err;
  };
  const err = await rejects(
    q.process("not a function", { concurrency: 0, pollIntervalMs: 0.5, shutdownTimeoutMs: -1, leaseMs: 43_200_001, signal: {} }),
    ["handler:type", "concurrency:out_of_range", "pollIntervalMs:type", "shutdownTimeoutMs:out_of_range", "leaseMs:out_of_range", "signal:type"],
  );
  assert.match(err.message, /handler: must be a function, got a string/);
  assert.match(err.message, /signal: must be an AbortSignal, got an object/);
  await rejects(q.process(() => {}, { pollIntervalMS: 100 }), ["pollIntervalMS:unknown"]);
  await rejects(q.process(() => {}, { concurrency: 1001, pollIntervalMs: 3_600_001 }), ["concurrency:out_of_range", "pollIntervalMs:out_of_range"]);
  await rejects(q.process(() => {}, { concurrency: "2" }), ["concurrency:type"]);
  await rejects(q.process(() => {}, 5), ["options:type"]);
  await rejects(q.process(undefined), ["handler:type"]);
  assert.equal(claims.length, 0, "nothing claimed");
  assert.equal((await q.get(1)).status, "pending");

  // The lease: the database's by default, else leaseMs; null means the default, as elsewhere.
  const leases = [];
  for (const leaseMs of [undefined, null, 700]) {
    const controller = new AbortController();
    await q.enqueue(`lease ${leaseMs}`);
    await q.process((m) => {
      leases.push(m.leaseExpiresAt.getTime() - clock.now);
      controller.abort();
    }, { leaseMs, signal: controller.signal });
  }
  assert.deepEqual(leases, [5000, 5000, 700]);
  db.close();
});

test("a failing claim rejects the loop with its DeadLetterError", LIMIT, async () => {
  const { db } = await database();
  const q = db.queue("jobs");
  const claims = spy(q, "claimMany");
  const loop = q.process(() => {}, { pollIntervalMs: 5 });
  await until(() => claims.length >= 1, "the first claim");
  db.close();
  const err = await loop.then(() => assert.fail("expected a rejection"), (e) => e);
  assert.ok(err instanceof DeadLetterError);
  assert.equal(err.code, "store");
  assert.match(err.message, /closed/);
});

test("a clock that throws rejects the loop with what it threw, once the running handler settled", LIMIT, async () => {
  const broken = new Error("clock unplugged");
  let clockFails = false;
  let throws = 0;
  const db = await open(fresh(), {
    clock: () => {
      if (!clockFails) return BASE;
      throws += 1;
      throw broken;
    },
  });
  const q = db.queue("jobs");
  await q.enqueue("one");
  let finish;
  const handled = [];
  const loop = q.process((m) => new Promise((resolve) => { finish = () => { handled.push(m.payload); resolve(); }; }), { pollIntervalMs: 5, concurrency: 2 });
  await until(() => finish !== undefined, "the handler");
  clockFails = true; // the loop, with a free slot, reads it for its next claim
  await until(() => throws > 0, "a call on the broken clock");
  clockFails = false; // the handler's ack reads it too
  finish();
  const err = await loop.then(() => assert.fail("expected a rejection"), (e) => e);
  assert.equal(err, broken);
  assert.equal(throws, 1);
  assert.deepEqual(handled, ["one"]);
  assert.equal((await q.get(1)).status, "succeeded");
  db.close();
});

test("once the loop resolves, Node exits by itself: no timer is left behind", LIMIT, () => {
  // A child process: an idle loop (poll interval one hour) and a stuck handler under heartbeats,
  // aborted; then the event loop must be empty of timers and the process must end on its own.
  const script = `
    import { open } from ${JSON.stringify(PKG)};
    const db = await open("exit-test");
    const q = db.queue("jobs");
    await q.enqueue("stuck");
    const controller = new AbortController();
    let started;
    const running = new Promise((resolve) => { started = resolve; });
    const loop = q.process(() => { started(); return new Promise(() => {}); },
      { signal: controller.signal, pollIntervalMs: 3_600_000, leaseMs: 60_000, shutdownTimeoutMs: 10, concurrency: 2 });
    await running;
    controller.abort();
    console.log(JSON.stringify({ handled: await loop, timers: process.getActiveResourcesInfo().filter((r) => r === "Timeout").length }));
    db.close();
  `;
  const child = spawnSync(process.execPath, ["--require", "fake-indexeddb/auto", "--input-type=module", "-e", script], {
    encoding: "utf8",
    timeout: 20_000,
  });
  assert.equal(child.signal, null, `killed after 20 s: a timer kept it alive\n${child.stderr}`);
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout), { handled: 0, timers: 0 });
});
