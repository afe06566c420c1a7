// The JavaScript API with real values, on fake-indexeddb.
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { CODES, Database, DeadLetterError, Queue, backoffMs, open } from "../../../build/pkg/index.js";

const BASE = Date.UTC(2026, 0, 1);
let n = 0;
const fresh = () => `api-${process.pid}-${++n}`;

async function rejects(promise, code) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof DeadLetterError, `not a DeadLetterError: ${err}`);
    assert.ok(err instanceof Error);
    assert.equal(err.name, "DeadLetterError");
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected a ${code} rejection`);
}

test("messages are plain objects with Date timestamps and number ids", async () => {
  let now = BASE;
  const db = await open(fresh(), { clock: () => new Date(now) });
  assert.ok(db instanceof Database);
  const q = db.queue("emails");
  assert.ok(q instanceof Queue);
  assert.equal(q.name, "emails");
  const m = await q.enqueue('{"to":"alice"}', { maxRetries: 5 });
  assert.deepEqual(Object.keys(m).sort(), [
    "createdAt", "deadAt", "deduplicated", "errors", "errorsDropped", "expiresAt", "firstFailedAt",
    "group", "id", "idempotencyKey", "lastError", "leaseExpiresAt", "leaseToken", "maxRetries",
    "movedFrom", "payload", "queue", "replayCount", "replayedAt", "retryAfter", "retryCount", "status",
    "updatedAt",
  ]);
  assert.equal(m.group, null);
  assert.equal(m.movedFrom, null);
  assert.equal(m.expiresAt, null);
  assert.equal(m.id, 1);
  assert.ok(m.createdAt instanceof Date);
  assert.equal(m.createdAt.getTime(), BASE);
  assert.equal(m.retryAfter, null);
  now += 1500;
  const c = await q.claim({ leaseMs: 10000 });
  assert.match(c.leaseToken, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(c.leaseExpiresAt.getTime(), BASE + 1500 + 10000);
  const f = await q.fail(c.id, "SMTP timeout", { leaseToken: c.leaseToken, retryable: true });
  assert.equal(f.status, "pending");
  assert.equal(f.retryAfter.getTime(), BASE + 1500 + backoffMs(f.retryCount));
  assert.equal(await q.claim(), null);
  now = f.retryAfter.getTime();
  const again = await q.claim();
  const done = await q.succeed(again.id, { leaseToken: again.leaseToken });
  assert.equal(done.status, "succeeded");
  assert.deepEqual((await q.list({ status: "succeeded" })).map((x) => x.id), [1]);
  assert.equal((await q.get(1)).status, "succeeded");
  db.close();
});

test("DeadLetterError carries code and errors with JS field names", async () => {
  const db = await open(fresh());
  const q = db.queue("q");
  const err = await rejects(q.enqueue("a", { maxRetries: 11 }), "validation_failed");
  assert.deepEqual(err.errors, [{ field: "maxRetries", code: "out_of_range", message: err.errors[0].message }]);
  assert.match(err.message, /maxRetries/);
  const list = await rejects(q.list({ afterId: -1, limit: 0, status: "nope" }), "validation_failed");
  assert.deepEqual(list.errors.map((e) => `${e.field}:${e.code}`).sort(), ["afterId:out_of_range", "limit:out_of_range", "status:invalid"]);
  const claim = await rejects(q.claim({ leaseMs: 1.5 }), "validation_failed");
  assert.deepEqual(claim.errors.map((e) => e.field), ["leaseMs"]);
  const token = await rejects(q.succeed(1, { leaseToken: 7 }), "validation_failed");
  assert.deepEqual(token.errors.map((e) => e.field), ["leaseToken"]);
  await rejects(q.get(99), "not_found");
  const m = await q.enqueue("x");
  await rejects(q.succeed(m.id), "conflict");
  await rejects(q.enqueue("x", 5), "validation_failed");
  assert.deepEqual(CODES, ["validation_failed", "not_found", "conflict", "store"]);
  assert.throws(() => db.queue(""), (e) => e instanceof DeadLetterError && e.code === "validation_failed" && e.errors[0].field === "queue" && e.errors[0].code === "empty");
  assert.throws(() => db.queue("x".repeat(256)), (e) => e.errors[0].code === "too_long");
  assert.throws(() => db.queue(3), (e) => e.errors[0].code === "type");
  assert.throws(() => backoffMs(-1), (e) => e instanceof DeadLetterError && e.errors[0].field === "retryCount");
  assert.equal(backoffMs(100), 3_600_000);
  db.close();
});

test("payloads are never converted: Date, object, number, bigint are type errors", async () => {
  const db = await open(fresh());
  const q = db.queue("q");
  for (const [payload, kind] of [[new Date(), "a Date"], [{ a: 1 }, "an object"], [42, "an integer"], [4.5, "a float"], [10n, "a bigint"], [["a"], "an array"], [null, "null"]]) {
    const err = await rejects(q.enqueue(payload), "validation_failed");
    assert.deepEqual(err.errors.map((e) => `${e.field}:${e.code}`), ["payload:type"]);
    assert.ok(err.errors[0].message.endsWith(kind), err.errors[0].message);
  }
  await rejects(q.enqueue("a", { maxRetries: "3" }), "validation_failed");
  await rejects(q.enqueue("a", { maxRetries: true }), "validation_failed");
  assert.deepEqual(await q.list(), []);
  db.close();
});

test("open validates its options", async () => {
  const err = await rejects(open(fresh(), { leaseMs: 0, maxPayloadBytes: "big", clock: 5 }), "validation_failed");
  assert.deepEqual(err.errors.map((e) => `${e.field}:${e.code}`).sort(), ["clock:type", "leaseMs:out_of_range", "maxPayloadBytes:type"]);
  await rejects(open(7), "validation_failed");
  const empty = await rejects(open("", { leaseMs: 0 }), "validation_failed");
  assert.deepEqual(empty.errors.map((e) => `${e.field}:${e.code}`).sort(), ["leaseMs:out_of_range", "name:empty"]);
  await rejects(open(fresh(), "options"), "validation_failed");
  const bad = await open(fresh(), { clock: () => "noon" });
  await rejects(bad.queue("q").enqueue("a"), "validation_failed");
  bad.close();
});

test("a clock or random source that throws rejects the call with what it threw, unchanged; nothing is written", async () => {
  let clockFails = false;
  let randomFails = false;
  const clockError = new RangeError("clock unplugged");
  const randomError = { reason: "not even an Error" };
  const db = await open(fresh(), {
    clock: () => {
      if (clockFails) throw clockError;
      return BASE;
    },
    random: () => {
      if (randomFails) throw randomError;
      return 0.5;
    },
  });
  const q = db.queue("q");
  await q.enqueue("kept");
  clockFails = true;
  for (const call of [() => q.enqueue("lost"), () => q.claim(), () => q.stats(), () => db.queues()]) {
    await assert.rejects(call(), (err) => err === clockError);
  }
  clockFails = false;
  randomFails = true;
  await assert.rejects(q.claim(), (err) => err === randomError);
  randomFails = false;
  // Nothing was written, and the next calls are not haunted by the earlier throws.
  assert.deepEqual((await q.list()).map((m) => [m.payload, m.status]), [["kept", "pending"]]);
  const claimed = await q.claim({ leaseMs: 1000 });
  assert.equal(claimed.payload, "kept");
  assert.equal(claimed.leaseExpiresAt.getTime(), BASE + 1000);
  await rejects(q.succeed(claimed.id, { leaseToken: "wrong" }), "conflict");
  db.close();
});

test("close: later calls reject with a store error", async () => {
  const db = await open(fresh());
  const q = db.queue("q");
  await q.enqueue("a");
  db.close();
  for (const call of [() => q.enqueue("b"), () => q.claim(), () => q.get(1), () => q.list(), () => q.replay(1), () => q.succeed(1), () => q.fail(1, "x")]) {
    await rejects(call(), "store");
  }
  await rejects(db.queue("other").enqueue(42), "store");
});

test("close: the calls made before it settle first, the message of a fire-and-forget enqueue is kept", async () => {
  const name = fresh();
  const db = await open(name);
  const q = db.queue("q");
  const enqueued = q.enqueue("kept");
  const counted = db.queues();
  db.close();
  const later = rejects(q.enqueue("refused"), "store");
  assert.equal((await enqueued).payload, "kept");
  const names = (await counted).map((s) => s.queue);
  // Read before or after the enqueue commits (the two calls run at once): either way, it settles.
  assert.ok(names.length === 0 || (names.length === 1 && names[0] === "q"), String(names));
  await later;
  const again = await open(name);
  assert.deepEqual((await again.queue("q").list()).map((m) => [m.id, m.payload]), [[1, "kept"]]);
  again.close();
});

test("an explicit indexedDB factory is used, not the global one", async () => {
  // A second factory of the implementation installed globally (fake-indexeddb/auto): a factory
  // of another implementation (or another copy of fake-indexeddb) would not match the global
  // IDBCursor, IDBKeyRange... classes that the store's cursors and key ranges come from.
  const factory = new globalThis.IDBFactory();
  const name = fresh();
  const mine = await open(name, { indexedDB: factory });
  await mine.queue("q").enqueue("only here");
  const global = await open(name);
  assert.deepEqual(await global.queue("q").list(), []);
  assert.deepEqual((await mine.queue("q").list()).map((m) => m.payload), ["only here"]);
  mine.close();
  global.close();
  for (const factory of ["nope", {}, { open: 5 }]) {
    const err = await rejects(open(fresh(), { indexedDB: factory }), "validation_failed");
    assert.deepEqual(err.errors.map((e) => [e.field, e.code]), [["indexedDB", "type"]]);
  }
});

test("messages persist across a reopen of the same name; ids keep increasing", async () => {
  const name = fresh();
  const first = await open(name);
  await first.queue("q").enqueue("a");
  await first.queue("q").enqueue("b");
  first.close();
  const second = await open(name);
  const q = second.queue("q");
  assert.deepEqual((await q.list()).map((m) => [m.id, m.payload]), [[1, "a"], [2, "b"]]);
  assert.equal((await q.enqueue("c")).id, 3);
  second.close();
});

test("two connections never claim the same message", async () => {
  const name = fresh();
  const [a, b] = [await open(name), await open(name)];
  for (let i = 0; i < 20; i++) await a.queue("q").enqueue(`m${i}`);
  const claims = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).queue("q").claim()));
  const ids = claims.filter((m) => m !== null).map((m) => m.id);
  assert.equal(ids.length, 20);
  assert.equal(new Set(ids).size, 20);
  a.close();
  b.close();
});

test("a versionchange from elsewhere closes the connection instead of blocking it", async () => {
  const name = fresh();
  const db = await open(name);
  await db.queue("q").enqueue("a");
  await new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = resolve;
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("delete blocked by our connection"));
  });
  const err = await rejects(db.queue("q").get(1), "store");
  assert.equal(err.message, `store error: the database is closed: another page deleted IndexedDB database "${name}"; reload the page to open it again`);
});

test("an upgrade by a newer deadletter in another tab goes ahead; this tab's calls say so, and to reload", async () => {
  const name = fresh();
  const db = await open(name);
  const q = db.queue("q");
  await q.enqueue("a");
  // The new tab's open at a higher version (10: what a later schema would be) is not blocked.
  const newer = await new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 10);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("upgrade blocked by our connection"));
  });
  assert.equal(newer.version, 10);
  const said = `store error: the database is closed: another page (a newer version of deadletter, in another tab?) upgraded IndexedDB database "${name}" to version 10 (this page's deadletter uses version 9); reload the page to use the new version`;
  // A write (refused by the store) and a read (refused before its clock is read) say the same.
  assert.equal((await rejects(q.enqueue("b"), "store")).message, said);
  assert.equal((await rejects(q.stats(), "store")).message, said);
  assert.equal((await rejects(db.queues(), "store")).message, said);
  newer.close();
  // After the page's own close(), the plain text.
  db.close();
  assert.equal((await rejects(q.enqueue("c"), "store")).message, "store error: the database is closed");
});

/** Opens database `name` at `version` with plain IndexedDB, running `upgrade(db, tx)` if needed. */
function rawOpen(name, version, upgrade = () => {}) {
  return new Promise((resolve, reject) => {
    const req = version === undefined ? indexedDB.open(name) : indexedDB.open(name, version);
    req.onupgradeneeded = () => upgrade(req.result, req.transaction);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Everything an application could see of database `name`: version, stores, indexes, records. */
async function snapshot(name) {
  const db = await rawOpen(name);
  const stores = {};
  for (const store of db.objectStoreNames) {
    const tx = db.transaction(store);
    const os = tx.objectStore(store);
    const indexes = [...os.indexNames].map((i) => [i, os.index(i).keyPath]);
    const records = await new Promise((resolve) => (os.getAll().onsuccess = (e) => resolve(e.target.result)));
    stores[store] = { keyPath: os.keyPath, autoIncrement: os.autoIncrement, indexes, records };
  }
  const version = db.version;
  db.close();
  return { version, stores };
}

test("another application's database of the same name is refused and left as it was", async () => {
  const cases = {
    "version 1, other store": [1, (db) => db.createObjectStore("todos", { keyPath: "id" }).put({ id: 1, text: "milk" })],
    "version 1, messages without indexes": [1, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true })],
    "version 2 (0.1.0's), other store": [2, (db) => db.createObjectStore("todos", { keyPath: "id" }).put({ id: 1, text: "milk" })],
    "version 2, messages without our indexes": [2, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true }).createIndex("queue", "queue")],
    "version 3, messages without our indexes": [3, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true }).createIndex("queue", "queue")],
    "version 4 (ours), other store": [4, (db) => db.createObjectStore("todos", { keyPath: "id" }).put({ id: 1, text: "milk" })],
    "version 4, messages without our indexes": [4, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true }).createIndex("queue", "queue")],
    "version 4, messages with another key": [4, (db) => db.createObjectStore("messages", { keyPath: "key" })],
    "version 5 (ours), messages without the queues store": [5, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true }).createIndex("queue", "queue")],
    "version 6 (ours), messages without the expiry index": [6, (db) => {
      db.createObjectStore("messages", { keyPath: "id", autoIncrement: true }).createIndex("queue", "queue");
      db.createObjectStore("queues", { keyPath: "name" });
    }],
    "version 10": [10, (db) => db.createObjectStore("todos")],
    "version 10 with a messages store (a newer deadletter's?)": [10, (db) => db.createObjectStore("messages", { keyPath: "id", autoIncrement: true })],
  };
  for (const [label, [version, upgrade]] of Object.entries(cases)) {
    const name = fresh();
    (await rawOpen(name, version, upgrade)).close();
    const before = await snapshot(name);
    const err = await rejects(open(name), "store");
    const why = label.startsWith("version 10 with") ? /has schema version 10; this deadletter reads version 9 \(upgrade deadletter to open it\)/
      : label === "version 10" ? /is not a deadletter database: it holds other object stores \(todos\) and none of deadletter's/
      : /is not a deadletter database/;
    assert.match(err.message, why, label);
    assert.match(err.message, /nothing was changed/, label);
    assert.deepEqual(await snapshot(name), before, `${label}: changed`);
  }
});

test("a record with a value deadletter never writes is a store error naming the message and the field", async () => {
  const name = fresh();
  const db = await open(name, { clock: () => new Date(BASE) });
  await db.queue("q").enqueue("x");
  db.close();
  const raw = await rawOpen(name);
  await new Promise((resolve) => {
    const tx = raw.transaction("messages", "readwrite");
    const store = tx.objectStore("messages");
    store.get(1).onsuccess = (e) => store.put({ ...e.target.result, createdAt: 8.64e15 });
    tx.oncomplete = resolve;
  });
  raw.close();
  const again = await open(name);
  const q = again.queue("q");
  for (const read of [() => q.get(1), () => q.list(), () => q.list({ status: "pending" }), () => q.claim()]) {
    const err = await rejects(read(), "store");
    assert.match(err.message, /message 1 is corrupt: column created_at: holds 8640000000000000, outside the time range/);
  }
  again.close();
});

test("a record's texts read back exactly, each its own; unpaired surrogates that would pair across two texts are a store error", async () => {
  // The texts of a record cross into the core as one string cut by their lengths (issue 20).
  const name = fresh();
  const db = await open(name, { clock: () => new Date(BASE) });
  const q = db.queue("q");
  await q.enqueue("ü😀\0x", { idempotencyKey: "k😀", group: "😀" });
  const claimed = await q.claim();
  await q.fail(claimed.id, "bad ü 😀", { leaseToken: claimed.leaseToken });
  const stored = await q.get(1);
  assert.deepEqual([stored.payload, stored.idempotencyKey, stored.group, stored.lastError, stored.errors.map((e) => e.error), stored.status],
    ["ü😀\0x", "k😀", "😀", "bad ü 😀", ["bad ü 😀"], "pending"]);
  db.close();
  const raw = await rawOpen(name);
  await new Promise((resolve) => {
    const tx = raw.transaction("messages", "readwrite");
    const store = tx.objectStore("messages");
    // A queue ending in a high surrogate before a payload starting with a low one.
    store.get(1).onsuccess = (e) => store.put({ ...e.target.result, queue: "q\ud83d", payload: "\ude00" });
    tx.oncomplete = resolve;
  });
  raw.close();
  const again = await open(name);
  const err = await rejects(again.queue("q").get(1), "store");
  assert.match(err.message, /message 1 is corrupt: column queue: holds an unpaired surrogate/);
  again.close();
});

test("an open queued behind a blocked upgrade fails with a store error, not a hang", async () => {
  const name = fresh();
  const holder = await new Promise((resolve) => {
    const req = indexedDB.open(name, 1);
    req.onsuccess = () => resolve(req.result);
  });
  const upgrade = indexedDB.open(name, 2);
  const blocked = new Promise((resolve) => (upgrade.onblocked = resolve));
  await blocked;
  await rejects(open(name), "store");
  holder.close();
  await new Promise((resolve) => (upgrade.onsuccess = () => resolve(upgrade.result.close())));
});

test("the codes of the core, the .d.ts and DeadLetterError agree", () => {
  const dts = readFileSync(new URL("../index.d.ts", import.meta.url), "utf8");
  const union = /export type ErrorCode = ([^;]+);/.exec(dts)[1];
  const declared = [...union.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  assert.deepEqual(declared, [...CODES]);
  assert.deepEqual([...CODES], ["validation_failed", "not_found", "conflict", "store"]);
});

test("strings with an unpaired surrogate are type errors, never replaced with U+FFFD", async () => {
  const MESSAGE = "must be a string, got a string with an unpaired surrogate";
  const typeError = (err, field) => assert.deepEqual(err.errors, [{ field, code: "type", message: MESSAGE }]);
  const db = await open(fresh());
  const q = db.queue("jobs");
  for (const payload of ["\ud800", "a\udfff", "x\ud83d", "\ude00y", "\udfff\ud800"]) {
    typeError(await rejects(q.enqueue(payload), "validation_failed"), "payload");
  }
  // Well-formed strings, a genuine U+FFFD and a surrogate pair included, are stored verbatim.
  for (const payload of ["\ufffd", "a\ufffdb", "\ud83d\ude00", "é\u0000"]) {
    assert.equal((await q.enqueue(payload)).payload, payload);
  }
  assert.deepEqual((await q.list()).map((m) => m.payload), ["\ufffd", "a\ufffdb", "\ud83d\ude00", "é\u0000"]);
  // Queue names: "jobs-\ud800" and "jobs-\udfff" are rejected, not merged into "jobs-\ufffd".
  for (const name of ["jobs-\ud800", "jobs-\udfff"]) {
    assert.throws(() => db.queue(name), (e) => e instanceof DeadLetterError && e.code === "validation_failed"
      && e.errors.length === 1 && e.errors[0].field === "queue" && e.errors[0].code === "type" && e.errors[0].message === MESSAGE);
  }
  assert.equal(db.queue("jobs-\ufffd").name, "jobs-\ufffd");
  const m = await q.claim();
  typeError(await rejects(q.fail(m.id, "timeout \ud800", { leaseToken: m.leaseToken }), "validation_failed"), "error");
  typeError(await rejects(q.succeed(m.id, { leaseToken: `${m.leaseToken}\ud800` }), "validation_failed"), "leaseToken");
  assert.equal((await q.get(m.id)).status, "processing", "nothing changed");
  const failed = await q.fail(m.id, "bad byte \ufffd", { leaseToken: m.leaseToken });
  assert.equal(failed.lastError, "bad byte \ufffd");
  typeError(await rejects(open("db-\ud800"), "validation_failed"), "name");
  const named = await open(`${fresh()}-\ufffd`);
  assert.ok(named.name.endsWith("-\ufffd"));
  named.close();
  db.close();
});

test("unknown option keys are rejected with code unknown, and nothing is done", async () => {
  const db = await open(fresh());
  const q = db.queue("q");
  const unknown = async (promise, fields, expected) => {
    const err = await rejects(promise, "validation_failed");
    const message = `unknown option; expected one of ${expected}`;
    assert.deepEqual(err.errors, fields.map((field) => ({ field, code: "unknown", message })));
    for (const field of fields) assert.match(err.message, new RegExp(`${field}: unknown option`));
  };
  const ENQUEUE = "maxRetries, idempotencyKey, delayMs, group, expiresInMs";
  await unknown(q.enqueue("a", { maxRetry: 5 }), ["maxRetry"], ENQUEUE);
  await unknown(q.enqueue("a", { maxRetries: 2, delay: 5, priority: 1 }), ["delay", "priority"], ENQUEUE);
  assert.deepEqual(await q.list(), [], "nothing was enqueued");
  await q.enqueue("a");
  await unknown(q.claim({ leaseMS: 1000 }), ["leaseMS"], "leaseMs");
  assert.equal((await q.get(1)).status, "pending", "nothing was claimed");
  const m = await q.claim({ leaseMs: 1000 });
  await unknown(q.succeed(m.id, { token: m.leaseToken }), ["token"], "leaseToken");
  await unknown(q.fail(m.id, "x", { leaseToken: m.leaseToken, retriable: false }), ["retriable"], "leaseToken, retryable, retryInMs");
  assert.equal((await q.get(m.id)).status, "processing", "neither acked nor failed");
  const dead = await q.fail(m.id, "x", { leaseToken: m.leaseToken, retryable: false });
  assert.equal(dead.status, "dead");
  const FILTERS = "status, delayed, payloadContains, errorContains, group, idempotencyKey, createdAfter, createdBefore, updatedAfter, updatedBefore, deadAfter, deadBefore";
  await unknown(q.list({ state: "dead" }), ["state"], `${FILTERS}, limit, afterId`);
  await unknown(q.list({ limit: 5, after: 1 }), ["after"], `${FILTERS}, limit, afterId`);
  for (const bulk of ["replayAll", "deleteAll", "retryNowAll"]) {
    await unknown(q[bulk]({ dryrun: true }), ["dryrun"], `${FILTERS}, limit, dryRun`);
  }
  await unknown(q.replay(m.id, { expiresIn: 5 }), ["expiresIn"], "expiresInMs");
  await unknown(q.setSettings({ retries: 5 }), ["retries"], "backoff, maxRetries, leaseMs, expiresInMs, onExpiry");
  await unknown(q.setSettings({ backoff: { initial: 5 } }), ["initial"], "initialMs, multiplier, capMs, jitter");
  assert.deepEqual((await q.settings()).maxRetries, null, "no setting was stored");
  const OPEN = "indexedDB, clock, leaseMs, maxPayloadBytes, random, durability";
  await unknown(open(fresh(), { leaseMS: 5 }), ["leaseMS"], OPEN);
  await unknown(open(fresh(), { now: () => 0, maxPayloadByte: 10 }), ["now", "maxPayloadByte"], OPEN);
  // Unknown keys are reported alone, before the other arguments are checked.
  await unknown(q.enqueue(5, { maxRetries: 99, typo: 1 }), ["typo"], ENQUEUE);
  // Known keys with undefined or null still mean the default; inherited keys are not own keys.
  assert.equal((await q.enqueue("b", { maxRetries: undefined })).maxRetries, 3);
  assert.equal((await q.enqueue("c", Object.create({ inherited: 1 }))).maxRetries, 3);
  assert.deepEqual((await q.list({ status: null, limit: null, afterId: null })).map((x) => x.id), [1, 2, 3]);
  // Nor are they read (left by session 6: an inherited known key counted): an options object is
  // its own enumerable keys, as JSON.stringify and structuredClone see it.
  assert.equal((await q.enqueue("d", Object.create({ maxRetries: 7 }))).maxRetries, 3);
  const [item] = await q.enqueueMany([Object.assign(Object.create({ maxRetries: 7 }), { payload: "e" })]);
  assert.equal(item.maxRetries, 3);
  assert.deepEqual((await rejects(q.enqueueMany([Object.create({ payload: "f" })]), "validation_failed")).errors.map((e) => `${e.field}:${e.code}`), ["payload:type"]);
  const m2 = await q.claim(Object.create({ leaseMs: 5 }));
  assert.equal(m2.leaseExpiresAt - m2.updatedAt, 30_000);
  db.close();
});

test("a message enqueued before 1970 (negative clock) can be claimed", async () => {
  let now = -1000;
  const name = fresh();
  const db = await open(name, { clock: () => now });
  const q = db.queue("q");
  const m = await q.enqueue("old");
  assert.equal(m.createdAt.getTime(), -1000);
  assert.equal(m.retryAfter, null);
  const c = await q.claim({ leaseMs: 100 });
  assert.equal(c?.id, m.id);
  assert.equal(c.leaseExpiresAt.getTime(), -900);
  // A failure backs off into a still negative retryAfter, respected to the millisecond.
  const f = await q.fail(c.id, "x", { leaseToken: c.leaseToken });
  assert.equal(f.retryAfter.getTime(), -1000 + backoffMs(1));
  now = f.retryAfter.getTime() - 1;
  assert.equal(await q.claim(), null);
  now += 1;
  const again = await q.claim();
  assert.equal(again?.id, m.id);
  await q.succeed(again.id, { leaseToken: again.leaseToken });
  // Far before 1970, and across a reopen.
  now = Date.UTC(1960, 0, 1);
  await q.enqueue("older");
  db.close();
  const reopened = await open(name, { clock: () => now });
  const older = await reopened.queue("q").claim();
  assert.equal(older?.payload, "older");
  reopened.close();
});

test("not_found and conflict errors carry queue, id, reason and status", async () => {
  let now = BASE;
  const db = await open(fresh(), { clock: () => now });
  const q = db.queue("jobs");
  const own = (err) => Object.keys(err).filter((k) => ["reason", "id", "status", "queue"].includes(k)).sort();

  const missing = await rejects(q.get(42), "not_found");
  assert.equal(missing.queue, "jobs");
  assert.equal(missing.id, 42);
  assert.deepEqual(own(missing), ["id", "queue"]);
  assert.equal(missing.reason, undefined);
  assert.equal(missing.status, undefined);
  const m = await q.enqueue("a");
  const elsewhere = await rejects(db.queue("other").replay(m.id), "not_found");
  assert.deepEqual([elsewhere.queue, elsewhere.id], ["other", m.id]);

  // succeed on a pending message, then on a succeeded one: wrong_status with the current status.
  const pending = await rejects(q.succeed(m.id), "conflict");
  assert.deepEqual([pending.reason, pending.id, pending.status], ["wrong_status", m.id, "pending"]);
  assert.deepEqual(own(pending), ["id", "reason", "status"]);
  const c = await q.claim({ leaseMs: 1000 });
  await q.succeed(c.id, { leaseToken: c.leaseToken });
  const succeeded = await rejects(q.succeed(c.id, { leaseToken: c.leaseToken }), "conflict");
  assert.deepEqual([succeeded.reason, succeeded.id, succeeded.status], ["wrong_status", c.id, "succeeded"]);
  const replay = await rejects(q.replay(c.id), "conflict");
  assert.deepEqual([replay.reason, replay.status], ["wrong_status", "succeeded"]);

  // A lease that ran out and was taken by another worker: lease_lost, no status.
  const n = await q.enqueue("b");
  const first = await q.claim({ leaseMs: 1000 });
  now += 1000; // the lease runs out: the next claim counts it as a failure, with a backoff
  assert.equal(await q.claim({ leaseMs: 1000 }), null);
  const expired = await q.get(n.id);
  assert.deepEqual([expired.status, expired.retryCount], ["pending", 1]);
  now = expired.retryAfter.getTime();
  const second = await q.claim({ leaseMs: 1000 });
  assert.equal(second?.id, n.id);
  for (const late of [q.succeed(n.id, { leaseToken: first.leaseToken }), q.fail(n.id, "x", { leaseToken: first.leaseToken })]) {
    const lost = await rejects(late, "conflict");
    assert.equal(lost.reason, "lease_lost");
    assert.equal(lost.id, n.id);
    assert.equal(lost.status, undefined);
    assert.equal(lost.queue, undefined);
    assert.deepEqual(own(lost), ["id", "reason"]);
  }

  // Validation and store errors have none of them.
  const invalid = await rejects(q.get("1"), "validation_failed");
  assert.deepEqual(own(invalid), []);
  db.close();
  const closed = await rejects(q.get(1), "store");
  assert.deepEqual(own(closed), []);
  // The class itself sets only the details it is given.
  const made = new DeadLetterError("x", { code: "conflict", reason: "lease_lost", id: 3 });
  assert.deepEqual([made.reason, made.id, "status" in made, "queue" in made], ["lease_lost", 3, false, false]);
});

test("the FieldError codes of the .d.ts include unknown", () => {
  const dts = readFileSync(new URL("../index.d.ts", import.meta.url), "utf8");
  const union = /readonly code: ("type"[^;]+);/.exec(dts)[1];
  assert.deepEqual([...union.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]), ["type", "empty", "too_long", "too_large", "out_of_range", "invalid", "unknown"]);
  assert.match(dts, /readonly reason\?: ConflictReason;/);
  assert.match(dts, /export type ConflictReason = "wrong_status" \| "lease_lost" \| "key_taken";/);
});

test("settings stored with the queue apply to every Database on it; a handle's own backoff wins, with one warning", async (t) => {
  const name = fresh();
  let now = BASE;
  const db = await open(name, { clock: () => now, random: () => 0 });
  const own = db.queue("q", { backoff: { initialMs: 1000, capMs: 1000 } });
  await own.enqueueMany(["a", "b", "c"]);
  // Another tab, worker or Database on the same IndexedDB database stores the settings.
  const other = await open(name, { clock: () => now });
  const stored = await other.queue("q").setSettings({ backoff: { initialMs: 5000, capMs: 60_000 }, maxRetries: 7 });
  assert.deepEqual(stored, {
    backoff: { initialMs: 5000, multiplier: 2, capMs: 60_000, jitter: null },
    maxRetries: 7, leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: false,
  });
  assert.equal((await other.queue("q").pause()).paused, true);
  const warn = t.mock.method(console, "warn", () => {});
  assert.equal(await own.claim(), null, "a paused queue claims nothing");
  assert.equal((await own.stats()).paused, true);
  await other.queue("q").resume();
  for (const _ of ["a", "b"]) {
    const m = await own.claim();
    const failed = await own.fail(m.id, "x", { leaseToken: m.leaseToken });
    assert.equal(failed.retryAfter - failed.updatedAt, 1000, "the handle's own policy");
  }
  assert.equal(warn.mock.callCount(), 1, "warned once per handle");
  assert.match(warn.mock.calls[0].arguments[0], /^deadletter: queue "q": this handle's backoff \{ initialMs: 1000, multiplier: 2, capMs: 1000, jitter: null \} is applied instead of the one stored with the queue, \{ initialMs: 5000, multiplier: 2, capMs: 60000, jitter: null \}/);
  const plain = db.queue("q"); // no policy of its own: the stored one, no warning
  const m = await plain.claim();
  const failed = await plain.fail(m.id, "x", { leaseToken: m.leaseToken });
  assert.equal(failed.retryAfter - failed.updatedAt, 5000, "the stored policy");
  assert.equal((await plain.enqueue("d")).maxRetries, 7, "the stored maxRetries");
  const same = db.queue("q", { backoff: { initialMs: 5000, capMs: 60_000 } }); // the same as stored: no warning
  const n = await same.claim();
  await same.fail(n.id, "x", { leaseToken: n.leaseToken });
  assert.equal(warn.mock.callCount(), 1);
  // Bad settings: every field at once, nothing stored.
  const err = await rejects(other.queue("q").setSettings({ maxRetries: 0, backoff: { multiplier: 0.5 }, onExpiry: "drop" }), "validation_failed");
  assert.deepEqual(err.errors.map((e) => `${e.field}:${e.code}`).sort(), ["maxRetries:out_of_range", "multiplier:out_of_range", "onExpiry:invalid"]);
  assert.equal((await plain.settings()).maxRetries, 7);
  // setSettings replaces: what is left out is unset; pause and the counters stay.
  assert.deepEqual(await plain.setSettings({ onExpiry: "discard" }), {
    backoff: null, maxRetries: null, leaseMs: null, expiresInMs: null, onExpiry: "discard", paused: false,
  });
  other.close();
  db.close();
});

test("every text of a message comes back whole: ASCII or not, short or long, empty or null (issue 20: texts cross as one view)", async () => {
  const db = await open(fresh());
  const long = "x".repeat(64);
  const texts = ["", "a", "job 1", long, `${long}y`, "é", "😀 ∑ 日本語", `${long}é`, "\u0001\u007f", "\u0080"];
  for (const [i, text] of texts.entries()) {
    // Names, groups and keys hold no control characters; a queue name ends with none of white space.
    const name = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
    const q = db.queue(`q [${name}]`);
    const group = i % 2 === 0 ? undefined : `g ${name}`;
    const idempotencyKey = i % 3 === 0 ? undefined : `k ${name}`;
    const m = await q.enqueue(text, { group, idempotencyKey, maxRetries: 2 });
    const expected = { queue: q.name, payload: text, group: group ?? null, idempotencyKey: idempotencyKey ?? null };
    const pick = (x) => ({ queue: x.queue, payload: x.payload, group: x.group, idempotencyKey: x.idempotencyKey });
    assert.deepEqual(pick(m), expected);
    const claimed = await q.claim();
    assert.deepEqual(pick(claimed), expected);
    assert.match(claimed.leaseToken, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const failed = await q.fail(claimed.id, `error ${text}`, { leaseToken: claimed.leaseToken, retryInMs: 0 });
    assert.deepEqual({ ...pick(failed), lastError: failed.lastError, leaseToken: failed.leaseToken },
      { ...expected, lastError: `error ${text}`, leaseToken: null });
    assert.deepEqual(failed.errors.map((e) => e.error), [`error ${text}`]);
    const again = await q.get(m.id);
    assert.deepEqual({ ...pick(again), lastError: again.lastError }, { ...expected, lastError: `error ${text}` });
  }
  db.close();
});

test("a text made again is the last one only when its bytes are (issue 20: record.js reuses the last text of each place)", async () => {
  const db = await open(fresh());
  const q = db.queue("q");
  // "Ã©" (U+00C3 U+00A9) has the code units of the UTF-8 bytes of "é" (C3 A9), the same length;
  // then texts of the same length that differ in their last character only, and ASCII again.
  const payloads = ["Ã©", "é", "é", "Ã©", "job 1", "job 2", "job 2", "", "a"];
  const made = [];
  for (const payload of payloads) made.push((await q.enqueue(payload)).payload);
  assert.deepEqual(made, payloads);
  for (const payload of payloads) {
    const claimed = await q.claim();
    assert.equal(claimed.payload, payload);
    assert.equal((await q.succeed(claimed.id, { leaseToken: claimed.leaseToken })).payload, payload);
  }
  db.close();
});
