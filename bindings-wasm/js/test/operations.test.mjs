// The dead-letter, producer and worker operations of the JavaScript API with real values, on
// fake-indexeddb: history, idempotency keys, batches, delays, claimMany, extend, reap, replayAll,
// purge, delete, stats, queues, onDead, backoff policies, the random source, the clock range and
// integers beyond 2^53.
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import { DeadLetterError, backoffMs, open } from "../../../build/pkg/index.js";

const BASE = Date.UTC(2026, 0, 1);
let n = 0;
const fresh = () => `ops-${process.pid}-${++n}`;

async function rejects(promise, code) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof DeadLetterError, `not a DeadLetterError: ${err}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected a ${code} rejection`);
}

const fields = (err) => err.errors.map((e) => (e.index === undefined ? `${e.field}:${e.code}` : `${e.field}:${e.code}@${e.index}`)).sort();

/** A database on a clock the test moves: `clock.now` in ms. */
async function timed(options = {}) {
  const clock = { now: BASE };
  const db = await open(fresh(), { clock: () => clock.now, ...options });
  return { db, clock };
}

test("list filters take Dates or ms, and a page is an Array with a nextAfterId that equality ignores", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  for (const payload of ["a-1", "b-2", "a-3"]) {
    await q.enqueue(payload);
    clock.now += 1000;
  }
  const page = await q.list({ payloadContains: "a-", limit: 1 });
  assert.ok(Array.isArray(page));
  assert.deepEqual(page.map((m) => m.id), [1]);
  assert.equal(page.nextAfterId, 1);
  assert.deepEqual(Object.keys(page), ["0"], "nextAfterId is not enumerable");
  const rest = await q.list({ payloadContains: "a-", afterId: page.nextAfterId });
  assert.deepEqual([rest.map((m) => m.id), rest.nextAfterId], [[3], null]);
  assert.deepEqual(await q.list({ createdBefore: BASE }), [], "deepEqual sees a plain array");
  const since = await q.list({ createdAfter: new Date(BASE + 1000), createdBefore: BASE + 2000 });
  assert.deepEqual(since.map((m) => m.id), [2]);
  for (const field of ["createdAfter", "createdBefore", "updatedAfter", "updatedBefore", "deadAfter", "deadBefore"]) {
    const err = await rejects(q.list({ [field]: "2026-01-01" }), "validation_failed");
    assert.deepEqual(err.errors, [
      { field, code: "type", message: "must be a Date or an integer number of milliseconds since the epoch, got a string" },
    ]);
  }
  const invalid = await rejects(q.list({ updatedAfter: new Date(NaN), delayed: 1, payloadContains: "" }), "validation_failed");
  assert.deepEqual(fields(invalid), ["delayed:type", "payloadContains:empty", "updatedAfter:type"]);
  db.close();
});

test("list reads the clock only for delayed; what the clock throws then rejects the list unchanged", async () => {
  let reads = 0;
  let broken = null;
  const db = await open(fresh(), {
    clock: () => {
      reads += 1;
      if (broken) throw broken;
      return BASE;
    },
  });
  const q = db.queue("q");
  await q.enqueue("later", { delayMs: 1000 });
  reads = 0;
  assert.equal((await q.list({ payloadContains: "late", createdAfter: new Date(BASE) })).length, 1);
  assert.equal(reads, 0, "no filter needs the instant");
  assert.equal((await q.list({ delayed: true })).length, 1);
  assert.equal(reads, 1);
  broken = new Error("clock broke");
  await assert.rejects(q.list({ delayed: false }), (err) => err === broken);
  db.close();
});

test("a dry run counts exactly and changes nothing; retryNow makes one message due", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  await q.enqueue("later", { delayMs: 60_000 });
  await q.enqueue("now");
  const dead = await q.enqueue("dead", { maxRetries: 1 });
  await q.claim();
  await q.claim();
  await q.fail(dead.id, "boom");
  const before = await q.list();
  assert.equal(await q.retryNowAll({ dryRun: true }), 1);
  assert.equal(await q.replayAll({ dryRun: true, errorContains: "boom" }), 1);
  assert.equal(await q.deleteAll({ dryRun: true }), 1);
  assert.deepEqual(await q.list(), before, "the dry runs wrote nothing");
  clock.now += 10;
  const due = await q.retryNow(1);
  assert.deepEqual([due.retryAfter, due.updatedAt.getTime()], [null, BASE + 10]);
  assert.equal(await q.retryNowAll(), 0, "nothing waits any more");
  assert.equal(await q.deleteAll({ status: "dead", limit: 5 }), 1);
  await rejects(q.retryNow(2), "conflict");
  const bad = await rejects(q.deleteAll({ dryRun: "yes", limit: 0, status: "pending" }), "validation_failed");
  assert.deepEqual(fields(bad), ["dryRun:type", "limit:out_of_range", "status:invalid"]);
  db.close();
});

test("move and moveAll on IndexedDB: movedFrom, groups in both queues, key_taken, an exact dry run", async () => {
  const { db, clock } = await timed();
  const [q, r] = [db.queue("q"), db.queue("r")];
  const [head, behind] = await q.enqueueMany([{ payload: "g1", group: "g" }, { payload: "g2", group: "g" }]);
  await r.enqueue("r1", { group: "g" });
  const keyed = await q.enqueue("k", { idempotencyKey: "k" });
  await r.enqueue("held", { idempotencyKey: "k" });
  clock.now += 10;
  const moved = await q.move(head.id, "r");
  assert.deepEqual([moved.queue, moved.movedFrom, moved.updatedAt.getTime(), moved.group], ["r", "q", BASE + 10, "g"]);
  // The next member heads g in q; in r the moved one waits behind r1, g's head there.
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [behind.id, keyed.id]);
  assert.deepEqual((await r.claimMany(10)).map((m) => m.payload), ["r1", "held"]);
  const taken = await rejects(q.move(keyed.id, "r"), "conflict");
  assert.deepEqual([taken.reason, taken.id], ["wrong_status", keyed.id], "a processing message stays");
  await q.fail(keyed.id, "boom", { retryable: false, leaseToken: (await q.get(keyed.id)).leaseToken });
  const held = await rejects(q.move(keyed.id, "r"), "conflict");
  assert.deepEqual([held.reason, held.id, (await q.get(keyed.id)).queue], ["key_taken", keyed.id, "q"]);
  await q.enqueue("loose");
  assert.equal(await q.moveAll("r", { dryRun: true }), 1, "the dead message whose key r holds is not counted");
  assert.equal(await q.moveAll("r", { status: "dead" }), 0);
  assert.equal(await q.moveAll("r"), 1);
  assert.deepEqual(fields(await rejects(q.moveAll("q", { status: "succeeded" }), "validation_failed")), ["status:invalid", "toQueue:invalid"]);
  assert.deepEqual(fields(await rejects(q.move("1", 5), "validation_failed")), ["id:type", "toQueue:type"]);
  db.close();
});

test("a failure history, first failure, death time and replays are recorded", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  const m = await q.enqueue("job", { maxRetries: 2 });
  let c = await q.claim();
  const failed = await q.fail(m.id, "timeout", { leaseToken: c.leaseToken });
  assert.deepEqual(failed.errors, [{ attempt: 1, error: "timeout", at: new Date(BASE) }]);
  assert.deepEqual([failed.firstFailedAt, failed.deadAt, failed.errorsDropped], [new Date(BASE), null, 0]);
  clock.now = BASE + 2000;
  c = await q.claim();
  assert.equal(c.retryAfter, null, "claim clears retryAfter");
  const dead = await q.fail(m.id, "HTTP 500", { leaseToken: c.leaseToken });
  assert.equal(dead.status, "dead");
  assert.deepEqual(dead.deadAt, new Date(BASE + 2000));
  assert.deepEqual(dead.errors.map((e) => [e.attempt, e.error, e.at.getTime() - BASE]), [[1, "timeout", 0], [2, "HTTP 500", 2000]]);
  clock.now = BASE + 5000;
  const back = await q.replay(m.id);
  assert.deepEqual(
    [back.status, back.retryCount, back.lastError, back.deadAt, back.replayCount, back.replayedAt, back.firstFailedAt, back.errors.length],
    ["pending", 0, null, null, 1, new Date(BASE + 5000), new Date(BASE), 2],
  );
  db.close();
});

test("idempotency keys: one message per key and queue; the stored one comes back deduplicated", async () => {
  const { db } = await timed();
  const q = db.queue("orders");
  const first = await q.enqueue("order 7", { idempotencyKey: "order-7" });
  assert.deepEqual([first.id, first.idempotencyKey, first.deduplicated], [1, "order-7", false]);
  const again = await q.enqueue("order 7, resent", { idempotencyKey: "order-7", maxRetries: 9 });
  assert.deepEqual([again.id, again.payload, again.maxRetries, again.deduplicated], [1, "order 7", 3, true]);
  const elsewhere = await db.queue("other").enqueue("x", { idempotencyKey: "order-7" });
  assert.deepEqual([elsewhere.id, elsewhere.deduplicated], [2, false]);
  assert.equal((await q.get(1)).deduplicated, false, "only an enqueue result is deduplicated");
  const empty = await rejects(q.enqueue("x", { idempotencyKey: "" }), "validation_failed");
  assert.deepEqual(fields(empty), ["idempotencyKey:empty"]);
  const long = await rejects(q.enqueue("x", { idempotencyKey: "k".repeat(256) }), "validation_failed");
  assert.deepEqual(fields(long), ["idempotencyKey:too_long"]);
  assert.deepEqual((await q.list()).map((m) => m.id), [1]);
  db.close();
});

test("enqueueMany: in order, all or nothing, field errors carry the item index", async () => {
  const { db } = await timed();
  const q = db.queue("q");
  const bad = await rejects(q.enqueueMany(["a", { payload: "b", maxRetries: 0 }, new Date(), { payload: 5, delayMs: -1 }]), "validation_failed");
  assert.deepEqual(fields(bad), ["delayMs:out_of_range@3", "maxRetries:out_of_range@1", "payload:type@2", "payload:type@3"]);
  assert.match(bad.message, /items\[1\]\.maxRetries: must be between 1 and 10/);
  const unknown = await rejects(q.enqueueMany([{ payload: "a" }, { payload: "b", retries: 2 }]), "validation_failed");
  assert.deepEqual(unknown.errors, [{ field: "retries", code: "unknown", message: "unknown option; expected one of payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs", index: 1 }]);
  const notList = await rejects(q.enqueueMany("a"), "validation_failed");
  assert.deepEqual(fields(notList), ["items:type"]);
  const tooMany = await rejects(q.enqueueMany(Array(1001).fill("x")), "validation_failed");
  assert.deepEqual(fields(tooMany), ["items:too_large"]);
  assert.deepEqual(await q.list(), [], "nothing was written");
  const added = await q.enqueueMany(["a", { payload: "b", idempotencyKey: "k", delayMs: 1000 }, { payload: "c", idempotencyKey: "k" }]);
  assert.deepEqual(added.map((m) => [m.id, m.payload, m.deduplicated, m.retryAfter?.getTime() - BASE]), [[1, "a", false, NaN], [2, "b", false, 1000], [2, "b", true, 1000]]);
  assert.deepEqual(await q.enqueueMany([]), []);
  db.close();
});

test("delayMs: a message is not claimable before its delay is over", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  const m = await q.enqueue("later", { delayMs: 500 });
  assert.equal(m.retryAfter.getTime(), BASE + 500);
  clock.now = BASE + 499;
  assert.equal(await q.claim(), null);
  assert.equal((await q.nextDueAt()).getTime(), BASE + 500);
  clock.now = BASE + 500;
  assert.equal((await q.claim()).id, m.id);
  assert.equal(await q.nextDueAt(), null);
  const err = await rejects(q.enqueue("x", { delayMs: 30 * 86_400_000 + 1 }), "validation_failed");
  assert.deepEqual(fields(err), ["delayMs:out_of_range"]);
  db.close();
});

test("a retried message keeps its FIFO place once due, also when a claim leaves it ready and the clock then goes back", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  const [old, a] = await q.enqueueMany(["old", "a"]);
  let c = await q.claim();
  await q.fail(old.id, "no", { leaseToken: c.leaseToken, retryable: false });
  c = await q.claim();
  await q.fail(a.id, "later", { leaseToken: c.leaseToken }); // due at +2 s
  await q.replay(old.id);
  // At +3 s both are due: "old" first (same createdAt, lower id); "a" waits, ready.
  clock.now = BASE + 3_000;
  assert.equal((await q.claim()).id, old.id);
  // The clock goes back to +1 s: "a" is not due then, whatever the claim index says.
  clock.now = BASE + 1_000;
  const stats = await q.stats();
  assert.deepEqual([stats.pending, stats.delayed, stats.nextDueAt, stats.oldestDueAgeMs], [1, 1, new Date(BASE + 2_000), null]);
  assert.equal(await q.claim(), null);
  assert.deepEqual((await q.claimMany(5)).map((m) => m.id), []);
  clock.now = BASE + 2_000;
  const again = await q.claim();
  assert.deepEqual([again.id, again.retryCount, again.retryAfter], [a.id, 1, null]);
});

test("claimMany takes up to n in FIFO order with one token each; extend moves a lease", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  await q.enqueueMany(["a", "b", "c"]);
  const taken = await q.claimMany(2, { leaseMs: 1000 });
  assert.deepEqual(taken.map((m) => [m.id, m.status, m.leaseExpiresAt.getTime() - BASE]), [[1, "processing", 1000], [2, "processing", 1000]]);
  assert.notEqual(taken[0].leaseToken, taken[1].leaseToken);
  assert.deepEqual((await q.claimMany(5)).map((m) => m.id), [3]);
  assert.deepEqual(await q.claimMany(5), []);
  for (const bad of [0, 101, 1.5, "2"]) {
    const err = await rejects(q.claimMany(bad), "validation_failed");
    assert.deepEqual(fields(err), [typeof bad === "number" && Number.isInteger(bad) ? "n:out_of_range" : "n:type"]);
  }
  clock.now = BASE + 900;
  const extended = await q.extend(1, { leaseToken: taken[0].leaseToken, leaseMs: 5000 });
  assert.equal(extended.leaseExpiresAt.getTime(), BASE + 5900);
  const lost = await rejects(q.extend(1, { leaseToken: taken[1].leaseToken }), "conflict");
  assert.equal(lost.reason, "lease_lost");
  const noToken = await rejects(q.extend(1), "validation_failed");
  assert.deepEqual(fields(noToken), ["leaseToken:type"]);
  // At +1000 the lease of 2 ran out (not 1's, extended): reaped by the next claim.
  clock.now = BASE + 1000;
  assert.deepEqual(await q.claimMany(5), []);
  assert.deepEqual([(await q.get(1)).status, (await q.get(2)).status], ["processing", "pending"]);
  db.close();
});

test("reap counts expired leases as failures now and reports the messages it killed", async () => {
  const { db, clock } = await timed();
  const died = [];
  db.onDead((m) => died.push(m));
  const q = db.queue("q");
  await q.enqueue("poison", { maxRetries: 1 });
  await q.enqueue("retry", { maxRetries: 2 });
  await q.claimMany(2, { leaseMs: 1000 });
  assert.equal(await q.reap(), 0);
  clock.now = BASE + 1000;
  assert.equal(await q.reap(), 2);
  assert.deepEqual(died.map((m) => [m.id, m.status, m.lastError, m.deadAt.getTime() - BASE]), [[1, "dead", "lease expired", 1000]]);
  const retried = await q.get(2);
  assert.deepEqual([retried.status, retried.retryCount, retried.retryAfter.getTime() - BASE], ["pending", 1, 3000]);
  db.close();
});

test("replayAll filters by error text and death time (Dates or ms), with a limit", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  const kill = async (error, at) => {
    clock.now = at;
    const m = await q.enqueue(error, { maxRetries: 1 });
    const c = await q.claim();
    await q.fail(m.id, error, { leaseToken: c.leaseToken });
  };
  await kill("HTTP 503", BASE + 1000);
  await kill("HTTP 410 Gone", BASE + 2000);
  await kill("HTTP 503", BASE + 3000);
  await kill("timeout", BASE + 4000);
  clock.now = BASE + 10_000;
  assert.equal(await q.replayAll({ errorContains: "503", deadAfter: new Date(BASE + 2000) }), 1);
  assert.equal((await q.get(3)).status, "pending");
  assert.equal(await q.replayAll({ deadBefore: BASE + 2000 }), 1);
  assert.equal((await q.get(1)).status, "pending");
  assert.equal(await q.replayAll({ errorContains: "http" }), 0, "case-sensitive");
  assert.equal(await q.replayAll({ limit: 1 }), 1);
  assert.deepEqual((await q.list({ status: "dead" })).map((m) => m.id), [4]);
  const bad = await rejects(q.replayAll({ deadBefore: new Date(NaN), deadAfter: 1.5, limit: 0, errorContains: 3 }), "validation_failed");
  assert.deepEqual(fields(bad), ["deadAfter:type", "deadBefore:type", "errorContains:type", "limit:out_of_range"]);
  for (const field of ["deadAfter", "deadBefore"]) {
    const text = await rejects(q.replayAll({ [field]: "2024-01-01" }), "validation_failed");
    assert.deepEqual(text.errors, [
      { field, code: "type", message: "must be a Date or an integer number of milliseconds since the epoch, got a string" },
    ]);
    assert.equal(text.message, `validation failed: ${field}: ${text.errors[0].message}`);
  }
  assert.equal(await q.replayAll(), 1);
  assert.deepEqual(await q.list({ status: "dead" }), []);
  db.close();
});

test("purge deletes finished messages by age; delete removes one finished message", async () => {
  const { db, clock } = await timed();
  const q = db.queue("q");
  await q.enqueueMany(["a", "b", "c"]);
  for (const m of await q.claimMany(2)) await q.succeed(m.id, { leaseToken: m.leaseToken });
  clock.now = BASE + 500;
  assert.equal(await q.purge({ status: "succeeded", olderThanMs: 1000 }), 0);
  clock.now = BASE + 1000;
  assert.equal(await q.purge({ status: "succeeded", olderThanMs: 1000 }), 2);
  assert.deepEqual((await q.list()).map((m) => m.id), [3]);
  const pending = await rejects(q.purge({ status: "pending", olderThanMs: 0 }), "validation_failed");
  assert.deepEqual(fields(pending), ["status:invalid"]);
  const missing = await rejects(q.purge(), "validation_failed");
  assert.deepEqual(fields(missing), ["olderThanMs:type", "status:type"]);
  const live = await rejects(q.delete(3), "conflict");
  assert.deepEqual([live.reason, live.status], ["wrong_status", "pending"]);
  const c = await q.claim();
  await q.fail(c.id, "bad", { leaseToken: c.leaseToken, retryable: false });
  const deleted = await q.delete(3);
  assert.deepEqual([deleted.id, deleted.status, deleted.lastError], [3, "dead", "bad"]);
  await rejects(q.get(3), "not_found");
  await rejects(q.delete(3), "not_found");
  assert.equal((await q.enqueue("d")).id, 4, "ids are never reused");
  db.close();
});

test("stats and queues: plain objects read from indexes", async () => {
  const { db, clock } = await timed();
  const q = db.queue("b-queue");
  const empty = await q.stats();
  assert.deepEqual(empty, {
    queue: "b-queue", pending: 0, processing: 0, succeeded: 0, dead: 0, expired: 0, delayed: 0,
    nextDueAt: null, oldestDueAgeMs: null, oldestDeadAgeMs: null, paused: false, expiredDead: 0,
    expiredDiscarded: 0,
  });
  await q.enqueueMany(["due", { payload: "later", delayMs: 3000 }, "work", "poison"]);
  await db.queue("a-queue").enqueue("x");
  clock.now = BASE + 100;
  const [work] = await q.claimMany(1, { leaseMs: 100 });
  const poison = await q.claim({ leaseMs: 10_000 });
  await q.fail(poison.id, "bad", { leaseToken: poison.leaseToken, retryable: false });
  clock.now = BASE + 250;
  assert.equal(work.payload, "due");
  assert.deepEqual(await q.stats(), {
    queue: "b-queue", pending: 2, processing: 1, succeeded: 0, dead: 1, expired: 1, delayed: 1,
    nextDueAt: new Date(BASE + 3000), oldestDueAgeMs: 250, oldestDeadAgeMs: 150, paused: false,
    expiredDead: 0, expiredDiscarded: 0,
  });
  const all = await db.queues();
  assert.deepEqual(all.map((s) => [s.queue, s.pending]), [["a-queue", 1], ["b-queue", 2]]);
  db.close();
});

test("onDead: this Database's callbacks in order, a throwing one only reported; other Databases on this database", async () => {
  const name = fresh();
  let now = BASE;
  const a = await open(name, { clock: () => now });
  const b = await open(name, { clock: () => now });
  const seen = [];
  const reported = [];
  const consoleError = console.error;
  console.error = (...args) => reported.push(args);
  try {
    a.onDead(() => {
      throw new Error("callback bug");
    });
    const off = a.onDead((m) => seen.push(["second", m.id]));
    const fromB = new Promise((resolve) => b.onDead(resolve));
    const q = a.queue("q");
    const m = await q.enqueue("poison", { maxRetries: 1 });
    const c = await q.claim();
    now += 10;
    const dead = await q.fail(m.id, "malformed", { leaseToken: c.leaseToken });
    assert.deepEqual(seen, [["second", m.id]], "called before the call resolved");
    assert.equal(reported.length, 1);
    assert.match(String(reported[0][1]), /callback bug/);
    const received = await fromB;
    assert.deepEqual(received, dead, "the same message, Dates included");
    assert.ok(received.deadAt instanceof Date && received.errors[0].at instanceof Date);
    off();
    off();
    const m2 = await q.enqueue("again", { maxRetries: 1 });
    const c2 = await q.claim();
    await q.fail(m2.id, "x", { leaseToken: c2.leaseToken });
    assert.deepEqual(seen, [["second", m.id]], "unsubscribed");
    assert.equal(reported.length, 2, "the throwing callback is still there");
  } finally {
    console.error = consoleError;
    a.close();
    b.close();
  }
  assert.throws(() => a.onDead("nope"), (e) => e instanceof DeadLetterError && e.errors[0].field === "callback");
});

test("onDead: a closed Database hears no more deaths, whenever its callbacks were added", async () => {
  const name = fresh();
  const a = await open(name);
  const b = await open(name);
  const heard = [];
  a.onDead((m) => heard.push(["before", m.id]));
  a.close();
  a.onDead((m) => heard.push(["after", m.id]));
  const bHeard = new Promise((resolve) => b.onDead(resolve));
  const q = b.queue("q");
  const m = await q.enqueue("poison", { maxRetries: 1 });
  const c = await q.claim();
  await q.fail(m.id, "malformed", { leaseToken: c.leaseToken });
  assert.equal((await bHeard).id, m.id);
  assert.deepEqual(heard, []);
  b.close();
});

test("onDead: a database of another factory or thread with the same name is another database", async () => {
  const name = fresh();
  const heard = [];
  const mine = await open(name);
  mine.onDead((m) => heard.push(m.lastError));
  // Another factory of the same implementation: another database, whatever its name.
  const other = await open(name, { indexedDB: new globalThis.IDBFactory() });
  const q = other.queue("q");
  await q.enqueue("theirs");
  const c = await q.claim();
  await q.fail(c.id, "in another factory", { leaseToken: c.leaseToken, retryable: false });
  other.close();
  // Another thread: its own fake-indexeddb.
  const worker = new Worker(new URL("../../tests/threads/dead-in-thread.mjs", import.meta.url), { workerData: name });
  const exited = await new Promise((resolve, reject) => {
    worker.on("error", reject);
    worker.on("exit", resolve);
  });
  assert.equal(exited, 0);
  await new Promise((resolve) => setTimeout(resolve, 200)); // what a channel would deliver by now
  assert.deepEqual(heard, []);
  mine.close();
});

test("backoff policies per queue, with the random source as the jitter sample", async () => {
  let sample = 0.5;
  const { db, clock } = await timed({ random: () => sample });
  const q = db.queue("q", { backoff: { initialMs: 100, multiplier: 3, capMs: 250, jitter: "equal" } });
  await q.enqueue("a", { maxRetries: 5 });
  let c = await q.claim();
  // 100 ms, equal jitter: 50 + floor(50 * 0.5)
  assert.equal((await q.fail(1, "e", { leaseToken: c.leaseToken })).retryAfter.getTime() - BASE, 75);
  clock.now = BASE + 75;
  c = await q.claim();
  // min(300, 250) = 250: 125 + floor(125 * 0.5)
  assert.equal((await q.fail(1, "e", { leaseToken: c.leaseToken })).retryAfter.getTime() - BASE, 75 + 187);
  clock.now = BASE + 262;
  c = await q.claim();
  sample = 1;
  const bad = await rejects(q.fail(1, "e", { leaseToken: c.leaseToken }), "validation_failed");
  assert.deepEqual(fields(bad), ["random:out_of_range"]);
  sample = "0.5";
  assert.deepEqual(fields(await rejects(q.claim(), "validation_failed")), ["random:type"]);
  assert.equal((await q.get(1)).status, "processing", "nothing changed");
  // The default queue keeps the original schedule.
  sample = 0;
  const plain = db.queue("plain");
  await plain.enqueue("b");
  c = await plain.claim();
  assert.equal((await plain.fail(c.id, "e", { leaseToken: c.leaseToken })).retryAfter.getTime() - clock.now, 2000);
  // Validation: every field, the queue name too; unknown keys alone.
  const both = (() => {
    try {
      db.queue("", { backoff: { multiplier: 0.5, jitter: "half" } });
    } catch (err) {
      return err;
    }
  })();
  assert.ok(both instanceof DeadLetterError);
  assert.deepEqual(fields(both), ["jitter:invalid", "multiplier:out_of_range", "queue:empty"]);
  assert.throws(() => db.queue("q", { backoff: { initial: 5 } }), (e) => e.errors[0].field === "initial" && e.errors[0].code === "unknown");
  assert.throws(() => db.queue("q", { backof: {} }), (e) => e.errors[0].field === "backof" && e.errors[0].code === "unknown");
  assert.throws(() => db.queue("q", { backoff: 5 }), (e) => e.errors[0].field === "backoff" && e.errors[0].code === "type");
  assert.throws(() => db.queue("q", { backoff: { capMs: 2 ** 53 } }), (e) => e.errors[0].field === "capMs" && e.errors[0].code === "out_of_range");
  await rejects(open(fresh(), { random: 0.5 }), "validation_failed");
  db.close();
});

test("integers beyond 2^53 are integers, as in Python (issue 6 item 8)", async () => {
  assert.equal(backoffMs(2 ** 53), 3_600_000);
  assert.equal(backoffMs(2 ** 63 - 1024), 3_600_000);
  const huge = (() => {
    try {
      backoffMs(2 ** 64);
    } catch (err) {
      return err;
    }
  })();
  assert.ok(huge instanceof DeadLetterError);
  assert.equal(huge.code, "validation_failed");
  assert.deepEqual(huge.errors.map((e) => [e.field, e.code]), [["retryCount", "out_of_range"]]);
  assert.throws(() => backoffMs(1.5), (e) => e.errors[0].code === "type");
  assert.throws(() => backoffMs(Infinity), (e) => e.errors[0].code === "type");
  const { db } = await timed();
  const q = db.queue("q");
  assert.deepEqual(fields(await rejects(q.enqueue("x", { maxRetries: 2 ** 64 }), "validation_failed")), ["maxRetries:out_of_range"]);
  db.close();
});

test("an id, afterId or bulk limit above Number.MAX_SAFE_INTEGER is out_of_range and nothing is done (tester T7)", async () => {
  // From 2 ** 53 on, numbers skip integers (2 ** 53 + 1 is 2 ** 53): get(2 ** 53 + 1) asked for
  // another message than written. Not a conformance rule: the cases run with JSON numbers in
  // every binding, and Python's ints are exact. bindings-node/tests/api.test.mjs has its twin.
  const { db } = await timed();
  const q = db.queue("q");
  await q.enqueue("kept");
  const message = "must be at most 9007199254740991 (Number.MAX_SAFE_INTEGER)";
  const calls = (big) => [
    ["id", () => q.get(big)], ["id", () => q.delete(big)], ["id", () => q.retryNow(big)], ["id", () => q.replay(big)],
    ["id", () => q.move(big, "r")], ["id", () => q.succeed(big, { leaseToken: "t" })],
    ["id", () => q.fail(big, "e", { leaseToken: "t" })], ["id", () => q.extend(big, { leaseToken: "t" })],
    ["afterId", () => q.list({ afterId: big })], ["limit", () => q.deleteAll({ limit: big })],
    ["limit", () => q.replayAll({ limit: big })], ["limit", () => q.retryNowAll({ limit: big })],
    ["limit", () => q.moveAll("r", { limit: big })],
  ];
  for (const big of [2 ** 53, 2 ** 53 + 2, 2 ** 64]) {
    for (const [field, call] of calls(big)) {
      const err = await rejects(call(), "validation_failed");
      assert.deepEqual(err.errors, [{ field, code: "out_of_range", message }], `${call} with ${big}`);
    }
  }
  // The core's refusals below the range: the same fields and code.
  for (const [field, call] of calls(-1)) {
    assert.deepEqual(fields(await rejects(call(), "validation_failed")), [`${field}:out_of_range`], `${call}`);
  }
  // The largest safe integer still reaches the core.
  await rejects(q.get(Number.MAX_SAFE_INTEGER), "not_found");
  assert.deepEqual(await q.list({ afterId: Number.MAX_SAFE_INTEGER }), []);
  assert.equal(await q.moveAll("r", { limit: Number.MAX_SAFE_INTEGER, dryRun: true }), 1);
  assert.deepEqual((await q.list()).map((m) => [m.id, m.payload, m.status]), [[1, "kept", "pending"]]);
  db.close();
});

test("a clock past the representable range is a validation error on clock, and nothing is written (issue 6 item 7)", async () => {
  // The input of the issue: a clock near the end of Date's range.
  let t = 8.64e15 - 1000;
  const db = await open(fresh(), { clock: () => t });
  const q = db.queue("q");
  const err = await rejects(q.enqueue("x"), "validation_failed");
  assert.deepEqual(err.errors.map((e) => [e.field, e.code]), [["clock", "out_of_range"]]);
  assert.deepEqual(await q.list(), []);
  // The last instant: a message can be enqueued, but no lease can start.
  t = Date.parse("9999-12-31T23:59:59.999Z");
  const m = await q.enqueue("x");
  assert.equal(m.createdAt.toISOString(), "9999-12-31T23:59:59.999Z");
  const late = await rejects(q.claim(), "validation_failed");
  assert.deepEqual(late.errors.map((e) => [e.field, e.code]), [["clock", "out_of_range"]]);
  assert.deepEqual([(await q.get(m.id)).status, (await q.get(m.id)).leaseToken], ["pending", null]);
  // Before year 1 too; a clock that is no time at all is a type error.
  t = Date.parse("0001-01-01T00:00:00Z") - 1;
  assert.deepEqual(fields(await rejects(q.enqueue("x"), "validation_failed")), ["clock:out_of_range"]);
  for (const value of [NaN, Infinity, new Date(NaN), "now"]) {
    t = value;
    assert.deepEqual(fields(await rejects(q.enqueue("x"), "validation_failed")), ["clock:type"]);
  }
  assert.deepEqual((await q.list()).map((x) => x.id), [m.id]);
  db.close();
});
