// The IndexedDB store's own cases (js/store/), environment-neutral: its transaction discipline,
// the clock read inside a write's transaction, its indexes (the lanes of ordering groups, the
// queues' rows), its schema checks and the claim's walk of the timed lane. Run in Node on
// fake-indexeddb (store.test.mjs) and in Chromium's real IndexedDB (tests/browser/run.mjs, suite
// "store"), each case on a fresh database.
//
// Why the discipline matters: an IndexedDB transaction commits as soon as none of its requests is
// pending when control returns to the event loop. A step that awaited anything foreign (a timer,
// fetch, another transaction) between its read and its write would write outside the transaction
// it read in. The store awaits only its own requests, its plans are synchronous; these cases show
// that if it did otherwise, `transaction` would report a `store` error and write nothing.
//
// `pkg` is the built package's modules: { index, requests, schema, store } (index.js,
// store/requests.js, store/schema.js, store/store.js).

const BASE = Date.UTC(2026, 0, 1);
let serial = 0;
const fresh = (what) => `store-${what}-${Date.now()}-${(serial += 1)}-${Math.random().toString(36).slice(2)}`;

function check(ok, what) {
  if (!ok) throw new Error(what);
}

function equal(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new Error(`${what}: got ${a}, expected ${e}`);
}

async function rejects(promise, pattern, what) {
  try {
    await promise;
  } catch (err) {
    check(err?.name === "DeadLetterError" && err.code === "store", `${what}: not a store DeadLetterError: ${err}`);
    check(pattern.test(err.message), `${what}: ${err.message} does not match ${pattern}`);
    return err;
  }
  throw new Error(`${what}: did not reject`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A record as the store writes it for a pending message `id` (the shape of schema 6; `at` 0 in the ready lane: 9's). */
function record(id, fields = {}) {
  return {
    id, queue: "q", payload: "p", status: "pending", retryCount: 0, maxRetries: 3, retryAfter: null,
    lastError: null, createdAt: BASE, updatedAt: BASE, leaseToken: null, leaseExpiresAt: null,
    idempotencyKey: null, firstFailedAt: null, deadAt: null, errors: [], errorsDropped: 0,
    replayCount: 0, replayedAt: null, group: null, expiresAt: null, groupAt: null, lane: 1, at: 0,
    movedFrom: null, ...fields,
  };
}

/** Every record of `db`'s object store `name`, with plain IndexedDB. */
async function all(pkg, db, name = "messages") {
  return pkg.requests.transaction(db, name, "readonly", (store) => pkg.requests.request("getAll", () => store.getAll()));
}

/** How many records index `index` of `messages` holds in its whole key range for queue `queue`. */
async function indexed(pkg, db, index, queue = "q") {
  const range = IDBKeyRange.bound([queue], [queue, []]);
  return pkg.requests.transaction(db, "messages", "readonly", (store) => pkg.requests.request("count", () => store.index(index).count(range)));
}

/** A database of the store's schema, opened with the store's own `open`. */
/**
 * A store on a new database that another connection then upgrades to `version` (null: deletes),
 * and the error of the store's next call.
 */
async function closedByAnother(pkg, factory, version) {
  const { name, db } = await database(pkg, factory);
  db.close();
  const store = await pkg.store.IdbStore.open(factory, name);
  await new Promise((resolve, reject) => {
    const req = version === null ? factory.deleteDatabase(name) : factory.open(name, version);
    req.onsuccess = () => resolve(req.result?.close());
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`${version ?? "the delete"}: blocked by the store's connection`));
  });
  const err = await rejects(store.get(1), /the database is closed/, `get after ${version ?? "the delete"}`);
  return { name, store, err };
}

async function database(pkg, factory) {
  const name = fresh("db");
  return { name, db: await pkg.schema.open(factory, name) };
}

async function count(pkg, db) {
  return pkg.requests.transaction(db, "messages", "readonly", (store) => pkg.requests.request("count", () => store.count()));
}

/** The cases, by name: each `async (pkg, indexedDB)`. */
/**
 * Opens another connection to database `name` (another tab) whose readwrite transaction on the
 * messages holds them for 100 ms, one request after the other, then calls `done` as it completes.
 * Resolves to that connection (close it at the end).
 */
async function holdMessages(pkg, factory, name, done) {
  const other = await pkg.requests.settle(factory.open(name), "open");
  const tx = other.transaction("messages", "readwrite");
  const until = Date.now() + 100;
  const spin = () => {
    tx.objectStore("messages").get(1).onsuccess = () => (Date.now() < until ? spin() : undefined);
  };
  spin();
  tx.oncomplete = done;
  return other;
}

export const CASES = {
  async "awaiting something foreign inside a transaction is a store error and writes nothing"(pkg, factory) {
    const { db } = await database(pkg, factory);
    const outcome = pkg.requests.transaction(db, "messages", "readwrite", async (store) => {
      await sleep(20); // the transaction commits (empty) while this waits
      await pkg.requests.request("put", () => store.put(record(1)));
    });
    await rejects(outcome, /TransactionInactiveError/, "a put after a timer");
    equal(await count(pkg, db), 0, "records");
    db.close();
  },

  async "a step that throws after a write rolls the write back"(pkg, factory) {
    const { db } = await database(pkg, factory);
    const outcome = pkg.requests.transaction(db, "messages", "readwrite", async (store) => {
      await pkg.requests.request("put", () => store.put(record(1)));
      throw new pkg.index.DeadLetterError("a later step failed", { code: "conflict" });
    });
    try {
      await outcome;
      throw new Error("did not reject");
    } catch (err) {
      equal([err.code, err.message], ["conflict", "a later step failed"], "the step's own error");
    }
    equal(await count(pkg, db), 0, "records");
    db.close();
  },

  async "the same write without a foreign await commits, also with its puts not awaited"(pkg, factory) {
    const { db } = await database(pkg, factory);
    await pkg.requests.transaction(db, "messages", "readwrite", async (store) => {
      await pkg.requests.request("get", () => store.get(1));
      pkg.requests.putAll(store, [record(1), record(2)]);
    });
    equal(await count(pkg, db), 2, "records");
    db.close();
  },

  async "a failing request aborts the transaction: a store error, the earlier write rolled back"(pkg, factory) {
    const { db } = await database(pkg, factory);
    await pkg.requests.transaction(db, "messages", "readwrite", async (store) => store.put(record(1)));
    const outcome = pkg.requests.transaction(db, "messages", "readwrite", async (store) => {
      store.put(record(2));
      await pkg.requests.request("add", () => store.add(record(1))); // id 1 exists
    });
    await rejects(outcome, /ConstraintError/, "add of an existing id");
    equal(await count(pkg, db), 1, "records");
    db.close();
  },

  async "a refused enqueue or claim aborts the transaction it opened: nothing written, the next call not blocked"(pkg, factory) {
    // Issue 20: enqueue and claim send the queue row's request first and have the core check
    // their arguments while the browser reads it; a refusal aborts that transaction.
    const name = fresh("refused");
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => BASE });
    const q = dl.queue("q");
    await q.enqueue("a", { expiresInMs: 60_000 });
    const db = await pkg.schema.open(factory, name);
    const before = [await all(pkg, db), await all(pkg, db, "queues")];
    const refusals = [
      ["enqueue", () => q.enqueue(42)],
      ["enqueueMany", () => q.enqueueMany(["b", { payload: "c", delayMs: -1 }])],
      ["claim", () => q.claim({ leaseMs: -1 })],
      ["claimMany", () => q.claimMany(0)],
    ];
    for (const [what, call] of refusals) {
      try {
        await call();
        throw new Error(`${what}: did not reject`);
      } catch (err) {
        equal([err.name, err.code], ["DeadLetterError", "validation_failed"], `${what}'s error`);
      }
    }
    equal([await all(pkg, db), await all(pkg, db, "queues")], before, "messages and rows unchanged");
    db.close();
    // Nothing left hanging: the next calls run at once.
    const next = Promise.all([q.enqueue("d"), q.claim()]);
    const stuck = sleep(5000).then(() => "stuck");
    const [added, claimed] = await Promise.race([next, stuck]).then((r) => (r === "stuck" ? [null, null] : r));
    check(added !== null, "the next calls did not finish within 5 s");
    equal([added.payload, claimed.payload, claimed.status], ["d", "a", "processing"], "the next enqueue and claim");
    dl.close();
  },

  async "the idempotency index is unique per queue, whatever writes the record"(pkg, factory) {
    const { name } = await database(pkg, factory);
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => BASE });
    const first = await dl.queue("q").enqueue("a", { idempotencyKey: "k" });
    equal((await dl.queue("q").enqueue("b", { idempotencyKey: "k" })).id, first.id, "deduplicated");
    check(!(await dl.queue("other").enqueue("c", { idempotencyKey: "k" })).deduplicated, "another queue");
    dl.close();
    const db = await pkg.schema.open(factory, name);
    const twin = record(undefined, { idempotencyKey: "k" });
    delete twin.id;
    const outcome = pkg.requests.transaction(db, "messages", "readwrite", (store) => pkg.requests.request("add", () => store.add(twin)));
    await rejects(outcome, /ConstraintError/, "a twin of the key");
    db.close();
  },

  async "claim walks a timed lane longer than a page one record at a time: every due message joins the ready lane, every lease expires"(pkg, factory) {
    let now = BASE;
    const dl = await pkg.index.open(fresh("walk"), { indexedDB: factory, clock: () => now, random: () => 0 });
    const q = dl.queue("jobs");
    // 150 delayed by 1 s, then 120 claimed under a 1 s lease: 270 records in the timed lane.
    await q.enqueueMany(Array.from({ length: 150 }, (_, i) => ({ payload: `d${i}`, delayMs: 1000 })));
    await q.enqueueMany(Array.from({ length: 120 }, (_, i) => `l${i}`));
    now += 10;
    const leased = [];
    for (let i = 0; i < 2; i += 1) leased.push(...(await q.claimMany(60, { leaseMs: 1000 })));
    equal(leased.length, 120, "leased");
    now = BASE + 5000;
    const dead = [];
    dl.onDead((m) => dead.push(m.id));
    const taken = await q.claimMany(3);
    // Claim order is creation order: the delayed ones were enqueued first.
    equal(taken.map((m) => m.payload), ["d0", "d1", "d2"], "taken");
    const stats = await q.stats();
    equal([stats.pending, stats.processing, stats.expired, stats.delayed], [147 + 120, 3, 0, 120], "after the walk (the expired leases wait for their backoff)");
    equal(dead, [], "no death: each lease was the first attempt");
    const expired = await q.list({ status: "pending", limit: 1000 });
    equal(expired.filter((m) => m.lastError === "lease expired").length, 120, "leases expired");
    dl.close();
  },

  async "a write reads the clock once its transaction runs: a claim queued behind another tab's transaction leases from its own turn"(pkg, factory) {
    const name = fresh("turn");
    let now = BASE;
    let otherDone = false;
    const reads = [];
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => (reads.push(otherDone), now), random: () => 0 });
    const q = dl.queue("q");
    await q.enqueue("a");
    // Another connection (another tab) holds the messages; when it is done, 5 s have passed.
    const other = await holdMessages(pkg, factory, name, () => {
      otherDone = true;
      now = BASE + 5000;
    });
    reads.length = 0;
    const claimed = await q.claim({ leaseMs: 1000 });
    equal(reads, [true], "the clock was read once, after the other transaction ended");
    equal(claimed.leaseExpiresAt.getTime() - BASE, 6000, "the lease runs its full length from the claim's turn");
    other.close();
    dl.close();
  },

  async "an ack reads no queue row: its transaction is on the messages alone, and reads the clock once its message is read in its turn"(pkg, factory) {
    // Issue 20: succeed's step depends on the instant only (the core's SucceedArgs::reads_queue),
    // so its transaction is on `messages` alone and its first request is the message's read.
    const name = fresh("ack");
    let now = BASE;
    let otherDone = false;
    const reads = [];
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => (reads.push(otherDone), now), random: () => 0 });
    const q = dl.queue("q");
    await q.enqueueMany(["a", "b"]);
    const [a, b] = await q.claimMany(2, { leaseMs: 10_000 });
    // The object stores of each transaction opened meanwhile.
    const scopes = [];
    const { transaction } = IDBDatabase.prototype;
    IDBDatabase.prototype.transaction = function (stores, ...rest) {
      scopes.push([stores].flat());
      return transaction.call(this, stores, ...rest);
    };
    try {
      await q.succeed(a.id, { leaseToken: a.leaseToken });
    } finally {
      IDBDatabase.prototype.transaction = transaction;
    }
    equal(scopes, [["messages"]], "the ack's transaction");
    // Another connection (another tab) holds the messages; when it is done, 5 s have passed.
    const other = await holdMessages(pkg, factory, name, () => {
      otherDone = true;
      now = BASE + 5000;
    });
    reads.length = 0;
    const acked = await q.succeed(b.id, { leaseToken: b.leaseToken });
    equal(reads, [true], "the clock was read once, after the other transaction ended");
    equal(acked.updatedAt.getTime(), BASE + 5000, "acked at the instant of its turn");
    other.close();
    dl.close();
  },

  async "a queue's row says whether it may hold messages with an expiry: set by the write that gives it its first, so that its claims take them out"(pkg, factory) {
    // Issue 20, schema 8: a claim reads the index `expiring` only for a queue whose row says so.
    let now = BASE;
    const name = fresh("expires");
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => now, random: () => 0 });
    const died = [];
    dl.onDead((m) => died.push([m.queue, m.payload, m.lastError]));
    const db = await pkg.requests.settle(factory.open(name), "open");
    const marked = async () => (await all(pkg, db, "queues")).filter((r) => r.expires).map((r) => r.name);
    const [a, b, c, d] = ["a", "b", "c", "d"].map((queue) => dl.queue(queue));
    await a.enqueue("plain");
    equal(await marked(), [], "no expiry, no row");
    // The first enqueue with an expiry; a move of a message with one to a queue without a row.
    const short = await a.enqueue("short", { expiresInMs: 100 });
    await a.enqueue("moved", { expiresInMs: 100 });
    equal(await marked(), ["a"], "enqueue");
    await a.move(short.id + 1, "b");
    equal(await marked(), ["a", "b"], "move");
    // A replay with its own expiry; replayAll with the queue's stored one (its settings kept).
    const dead = async (queue) => {
      const m = await queue.enqueue("dies", { maxRetries: 1 });
      await queue.claim();
      await queue.fail(m.id, "boom", { retryable: false });
      return m;
    };
    await c.replay((await dead(c)).id, { expiresInMs: 100 });
    await d.setSettings({ maxRetries: 2 });
    await dead(d);
    await d.setSettings({ maxRetries: 2, expiresInMs: 100 });
    equal(await d.replayAll(), 1, "replayed");
    equal(await marked(), ["a", "b", "c", "d"], "replays");
    equal((await d.settings()).maxRetries, 2, "settings kept");
    now += 200;
    died.length = 0;
    for (const queue of [a, b, c, d]) await queue.claimMany(10);
    equal(died, [["a", "short", "expired"], ["b", "moved", "expired"], ["c", "dies", "expired"], ["d", "dies", "expired"]], "expired in every queue");
    db.close();
    dl.close();
  },

  async "the members behind their group's head have no lane: in neither the claim nor the delayed index, until the head leaves"(pkg, factory) {
    let now = BASE;
    const name = fresh("groups");
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => now });
    const q = dl.queue("q");
    await q.enqueueMany([{ payload: "a", group: "g" }, { payload: "b", group: "g", delayMs: 1000 }, { payload: "c", group: "g" }, "d"]);
    const { db } = { db: await pkg.requests.settle(factory.open(name), "open") };
    // A record has no lane, at or groupAt when they are null (issue 20).
    // The ready lane's `at` is 0 (schema 9: the lane in id order), the timed lane's an instant.
    const places = async () => (await all(pkg, db)).map((r) => [r.id, r.lane ?? null, r.at == null || r.lane === 1 ? r.at ?? null : r.at - BASE, r.groupAt == null ? null : r.groupAt - BASE]);
    equal(await places(), [[1, 1, 0, 0], [2, null, null, 0], [3, null, null, 0], [4, 1, 0, null]], "heads ready, members blocked");
    equal([await indexed(pkg, db, "claim"), await indexed(pkg, db, "delayed"), await indexed(pkg, db, "group")], [2, 0, 3], "index sizes");
    equal((await q.stats()).delayed, 0, "a blocked member is not delayed");
    const a = await q.claim();
    await q.succeed(a.id, { leaseToken: a.leaseToken });
    // The head left: b is the head now, waiting for its delay (in the timed lane and delayed).
    equal(await places(), [[1, null, null, null], [2, 0, 1000, 0], [3, null, null, 0], [4, 1, 0, null]], "b unblocked");
    equal([await indexed(pkg, db, "claim"), await indexed(pkg, db, "delayed"), await indexed(pkg, db, "group")], [2, 1, 2], "index sizes after");
    equal((await q.nextDueAt())?.getTime(), BASE + 1000, "next due");
    db.close();
    dl.close();
  },

  async "a record leaves out its null fields; one holding them, as older versions wrote, reads, indexes and updates the same"(pkg, factory) {
    // Issue 20: a smaller record to clone and store. A missing field reads as null, and a key path
    // with a missing component makes no index entry, exactly as one with null.
    const name = fresh("nulls");
    let now = BASE;
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => now, random: () => 0 });
    const q = dl.queue("q");
    await q.enqueue("a");
    const a = await q.claim({ leaseMs: 1000 });
    await q.fail(a.id, "boom");
    await q.enqueueMany([{ payload: "b", group: "g", idempotencyKey: "k" }, { payload: "c", group: "g" }]);
    const db = await pkg.requests.settle(factory.open(name), "open");
    const nulls = (r) => Object.keys(r).filter((k) => r[k] === null);
    const written = await all(pkg, db);
    equal(written.map(nulls), [[], [], []], "no record holds null");
    equal(written.map((r) => Object.keys(r).sort()), [
      ["at", "createdAt", "errors", "errorsDropped", "firstFailedAt", "id", "lane", "lastError", "maxRetries", "payload",
        "queue", "replayCount", "retryAfter", "retryCount", "status", "updatedAt"],
      ["at", "createdAt", "errors", "errorsDropped", "group", "groupAt", "id", "idempotencyKey", "lane", "maxRetries",
        "payload", "queue", "replayCount", "retryCount", "status", "updatedAt"],
      ["createdAt", "errors", "errorsDropped", "group", "groupAt", "id", "maxRetries", "payload", "queue", "replayCount",
        "retryCount", "status", "updatedAt"],
    ], "the fields written: a waiting retry, a group's head with a key, a blocked member (no lane)");
    equal((await q.list()).map((m) => [m.id, m.retryAfter === null, m.lastError, m.leaseToken, m.group, m.idempotencyKey, m.movedFrom]),
      [[1, false, "boom", null, null, null, null], [2, true, null, null, "g", "k", null], [3, true, null, null, "g", null, null]],
      "missing fields read as null");
    // The same pending message twice: as this version writes it (queue "new"), and with every
    // optional field null (queue "old", as versions before issue 20 wrote it).
    const fresh1 = await dl.queue("new").enqueue("p");
    await pkg.requests.transaction(db, "messages", "readwrite", (store) => store.put(record(10, { queue: "old" })));
    const old = dl.queue("old");
    const same = (m) => ({ ...m, id: 0, queue: "" });
    equal(same(await old.get(10)), same(fresh1), "the record with nulls reads as the one without");
    const indexes = ["claim", "list", "idempotency", "delayed", "dead", "group", "expiring"];
    const sizes = async (queue) => Promise.all(indexes.map((index) => indexed(pkg, db, index, queue)));
    equal(await sizes("old"), await sizes("new"), "the same index entries");
    equal(await sizes("old"), [1, 1, 0, 0, 0, 0, 0], "in claim and list only");
    // Updated: claimed, failed, claimed, succeeded, each rewritten without its nulls, as the other.
    for (const queue of [old, dl.queue("new")]) {
      const m = await queue.claim({ leaseMs: 1000 });
      await queue.fail(m.id, "x", { leaseToken: m.leaseToken, retryInMs: 0 });
      const again = await queue.claim({ leaseMs: 1000 });
      equal(again?.id, m.id, `${queue.name}: claimed again`);
      await queue.succeed(m.id, { leaseToken: again.leaseToken });
    }
    const [o, n] = [await old.get(10), await dl.queue("new").get(fresh1.id)];
    equal(same(o), same(n), "updated the same");
    const [ro, rn] = (await all(pkg, db)).filter((r) => r.id === 10 || r.id === fresh1.id);
    equal([nulls(rn), nulls(ro), { ...ro, id: 0, queue: "" }], [[], [], { ...rn, id: 0, queue: "" }], "rewritten without nulls");
    equal(await sizes("old"), [0, 1, 0, 0, 0, 0, 0], "finished: in list only");
    db.close();
    dl.close();
  },

  async "a queue's row is a record of the object store queues, written only when it differs from the defaults"(pkg, factory) {
    const name = fresh("rows");
    const dl = await pkg.index.open(name, { indexedDB: factory });
    const q = dl.queue("q");
    await q.settings();
    await q.resume();
    await q.setSettings();
    const db = await pkg.requests.settle(factory.open(name), "open");
    equal(await all(pkg, db, "queues"), [], "reading, resuming or storing the defaults writes nothing");
    await q.setSettings({ backoff: { initialMs: 500, multiplier: 2.5, jitter: "full" }, maxRetries: 4 });
    await q.pause();
    equal(await all(pkg, db, "queues"), [{
      name: "q", backoffInitialMs: 500, backoffMultiplier: 2.5, backoffCapMs: 3_600_000, backoffJitter: "full",
      maxRetries: 4, leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: true, expiredDead: 0, expiredDiscarded: 0,
      expires: false,
    }], "the row");
    equal((await dl.queues()).map((s) => [s.queue, s.paused]), [["q", true]], "a paused queue without messages is listed");
    // A row holding what deadletter never writes: a store error naming the queue and the column.
    await pkg.requests.transaction(db, "queues", "readwrite", (store) => store.put({ ...record(0), name: "q", maxRetries: "4", paused: true, onExpiry: "dead", expiredDead: 0, expiredDiscarded: 0 }));
    await rejects(q.settings(), /queue "q" is corrupt: column max_retries: must be an integer, got a string/, "a corrupt row");
    await rejects(q.claim(), /queue "q" is corrupt/, "a claim reads the row");
    db.close();
    dl.close();
  },

  async "a queue stored under a name an enqueue refuses is paused and configured; a name with no queue is refused (session 10)"(pkg, factory) {
    const name = fresh("old-names");
    const dl = await pkg.index.open(name, { indexedDB: factory, clock: () => BASE });
    const db = await pkg.requests.settle(factory.open(name), "open");
    const invalid = async (promise, what) => {
      try {
        await promise;
      } catch (err) {
        equal([err.code, err.errors.map((f) => [f.field, f.code])], ["validation_failed", [["queue", "invalid"]]], what);
        return;
      }
      throw new Error(`${what}: did not reject`);
    };
    for (const [id, queueName] of [[1, "emails "], [2, "jobs\u200d"], [3, "\u3164"]]) {
      const q = dl.queue(queueName);
      await invalid(q.pause(), `${queueName}: no queue yet, pausing would create it`);
      await invalid(q.setSettings({ maxRetries: 5 }), `${queueName}: no queue yet`);
      equal(await q.resume(), await dl.queue("new").settings(), `${queueName}: resuming stores nothing`);
      // A message stored raw, as 0.1.0 could: the queue exists.
      await pkg.requests.transaction(db, "messages", "readwrite", (store) => store.put(record(id, { queue: queueName })));
      equal((await q.pause()).paused, true, `${queueName}: paused`);
      check((await dl.queues()).some((s) => s.queue === queueName && s.paused), `${queueName}: listed as paused`);
      equal(await q.claim(), null, `${queueName}: a paused queue claims nothing`);
      equal([(await q.setSettings({ maxRetries: 5 })).maxRetries, (await q.settings()).paused], [5, true], `${queueName}: configured`);
      equal((await q.resume()).paused, false, `${queueName}: resumed`);
      const m = await q.claim();
      equal(m?.id, id, `${queueName}: claimed`);
      await q.succeed(m.id, { leaseToken: m.leaseToken });
      await q.delete(m.id);
      // No message left, its row stored: it still exists.
      equal((await q.pause()).paused, true, `${queueName}: a queue with a row is paused`);
      await q.resume();
      await q.setSettings();
      equal((await dl.queues()).map((s) => s.queue), [], `${queueName}: its row cleared, it is gone`);
      await invalid(q.pause(), `${queueName}: gone, pausing would create it again`);
    }
    // A row stored raw, without messages.
    const row = { name: "..", backoffInitialMs: null, backoffMultiplier: null, backoffCapMs: null, backoffJitter: null, maxRetries: 7,
      leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: false, expiredDead: 0, expiredDiscarded: 0, expires: false };
    await pkg.requests.transaction(db, "queues", "readwrite", (store) => store.put(row));
    equal(await dl.queue("..").pause(), { backoff: null, maxRetries: 7, leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: true }, "a row's queue is paused");
    db.close();
    dl.close();
  },

  async "a message without retryAfter is due at every instant, also before 1970"(pkg, factory) {
    for (const at of [-1000, -315619200000]) {
      const dl = await pkg.index.open(fresh("1970"), { indexedDB: factory, clock: () => at });
      const q = dl.queue("q");
      const m = await q.enqueue(`at ${at}`);
      equal((await q.claim())?.id, m.id, `claimable at ${at}`);
      dl.close();
    }
  },

  async "another application's database is refused and left as it was"(pkg, factory) {
    for (const version of [1, 2, 3, 4, 5, 9]) {
      const name = fresh("foreign");
      const req = factory.open(name, version);
      req.onupgradeneeded = () => req.result.createObjectStore("todos").put("milk", 1);
      const made = await pkg.requests.settle(req, "open");
      made.close();
      await rejects(pkg.schema.open(factory, name), /is not a deadletter database: it holds other object stores \(todos\).*nothing was changed/, `version ${version}`);
      const after = await pkg.requests.settle(factory.open(name), "reopen");
      equal([after.version, [...after.objectStoreNames]], [version, ["todos"]], `version ${version} afterwards`);
      after.close();
    }
  },

  async "a closed store refuses every call with a store error"(pkg, factory) {
    const { name } = await database(pkg, factory);
    const store = await pkg.store.IdbStore.open(factory, name);
    store.close();
    await rejects(store.get(1), /the database is closed/, "get after close");
  },

  async "another connection's upgrade or delete goes ahead: the store closes, its calls say which"(pkg, factory) {
    const upgraded = "another page (a newer version of deadletter, in another tab?) upgraded IndexedDB database NAME to version 10 (this page's deadletter uses version 9); reload the page to use the new version";
    const deleted = "another page deleted IndexedDB database NAME; reload the page to open it again";
    for (const [version, why] of [[10, upgraded], [null, deleted]]) {
      const { name, store, err } = await closedByAnother(pkg, factory, version);
      check(store.closed, `closed by ${version ?? "the delete"}`);
      equal(err.message, `store error: the database is closed: ${why.replace("NAME", JSON.stringify(name))}`, "the text");
    }
  },

  async "in a service worker, a closed connection's error says what applies there, not to reload a page"(pkg, factory) {
    // A service worker's global scope, as far as the store tells it (Node and pages have none).
    const saved = Object.getOwnPropertyDescriptor(globalThis, "ServiceWorkerGlobalScope");
    globalThis.ServiceWorkerGlobalScope = class {
      static [Symbol.hasInstance](object) {
        return object === globalThis;
      }
    };
    try {
      const upgraded = "another page or worker (a newer version of deadletter?) upgraded IndexedDB database NAME to version 10 (this service worker's deadletter uses version 9); the new version's service worker takes over once it replaces this one: close the pages this one controls (or the new one calls skipWaiting())";
      const deleted = "another page or worker deleted IndexedDB database NAME; open() it again";
      for (const [version, why] of [[10, upgraded], [null, deleted]]) {
        const { name, err } = await closedByAnother(pkg, factory, version);
        equal(err.message, `store error: the database is closed: ${why.replace("NAME", JSON.stringify(name))}`, "the text");
      }
    } finally {
      if (saved) Object.defineProperty(globalThis, "ServiceWorkerGlobalScope", saved);
      else delete globalThis.ServiceWorkerGlobalScope;
    }
  },

  async "the calls running when the browser closes the connection reject with a store error"(pkg, factory) {
    // Session 13, tester T9: in Chromium their transactions never completed nor aborted, and
    // the calls (a process loop's claim with them) stayed pending for good.
    const { name, db } = await database(pkg, factory);
    const store = new pkg.store.IdbStore(db, factory);
    const running = store.get(1); // its transaction has not completed yet
    db.onclose(new Event("close")); // what the browser fires
    const err = await rejects(running, /while this call ran/, "the running get");
    equal(err.code, "store", "its code");
    equal(err.message, `store error: the browser closed IndexedDB database ${JSON.stringify(name)} while this call ran (the site's data was cleared, or a storage failure): it may not have been written; the next call opens the database again`, "the text");
    equal(await store.get(1), undefined, "the next call, on the database opened again");
    store.close();
  },

  async "a connection the browser closed (the site's data cleared): the next calls open the database again, once"(pkg, factory) {
    // Session 13, tester T7: a service worker's Outbox, which holds its database, kept no request
    // after the site's data was cleared (every call failed: "the database is closed").
    const { name, db } = await database(pkg, factory);
    let opens = 0;
    const counted = { open: (...args) => ((opens += 1), factory.open(...args)), deleteDatabase: (n) => factory.deleteDatabase(n), cmp: (a, b) => factory.cmp(a, b) };
    const store = new pkg.store.IdbStore(db, counted);
    // What the browser does: it closes the connection (and fires `close` on it, an event no
    // script can fire on a real connection), then deletes the database.
    db.close();
    db.onclose(new Event("close"));
    check(!store.closed, "not closed for good");
    await new Promise((resolve, reject) => {
      const req = factory.deleteDatabase(name);
      req.onsuccess = resolve;
      req.onerror = () => reject(req.error);
    });
    // Two calls at once: one open serves both.
    const [a, b] = await Promise.all([store.get(1), store.get(2)]);
    equal(a, undefined, "the first get: no record in the database opened again");
    equal(b, undefined, "the second");
    equal(opens, 1, "opens of the database");
    await store.get(3);
    equal(opens, 1, "opens after a third call on the new connection");
    const reopened = await pkg.schema.open(factory, name);
    equal(reopened.version, pkg.schema.VERSION, "the database exists again, at this version");
    equal(await count(pkg, reopened), 0, "empty: what the browser cleared is gone");
    reopened.close();
    // close() is for good: no call opens it again.
    store.close();
    check(store.closed, "closed by close()");
    await rejects(store.get(1), /the database is closed$/, "get after close()");
    equal(opens, 1, "opens after close()");
  },

};
