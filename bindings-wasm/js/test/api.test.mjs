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
    "createdAt", "id", "lastError", "leaseExpiresAt", "leaseToken", "maxRetries", "payload",
    "queue", "retryAfter", "retryCount", "status", "updatedAt",
  ]);
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
  await rejects(open(fresh(), "options"), "validation_failed");
  const bad = await open(fresh(), { clock: () => "noon" });
  await rejects(bad.queue("q").enqueue("a"), "validation_failed");
  bad.close();
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
  await rejects(open(fresh(), { indexedDB: "nope" }), "validation_failed");
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
  await rejects(db.queue("q").get(1), "store");
});

test("a database of the same name that is not a deadletter one is a store error", async () => {
  const foreign = (version) => {
    const name = fresh();
    return new Promise((resolve) => {
      const req = indexedDB.open(name, version);
      req.onupgradeneeded = () => req.result.createObjectStore("other");
      req.onsuccess = () => {
        req.result.close();
        resolve(name);
      };
    });
  };
  // Version 1 (below ours): the upgrade finds no `messages` store, aborts, and open rejects.
  const old = await foreign(1);
  await rejects(open(old), "store");
  const still = await new Promise((resolve) => {
    const req = indexedDB.open(old);
    req.onsuccess = () => {
      resolve([req.result.version, [...req.result.objectStoreNames]]);
      req.result.close();
    };
  });
  assert.deepEqual(still, [1, ["other"]], "the aborted upgrade left it as it was");
  // Our version: no upgrade, the first transaction fails.
  const db = await open(await foreign(2));
  await rejects(db.queue("q").enqueue("a"), "store");
  db.close();
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
