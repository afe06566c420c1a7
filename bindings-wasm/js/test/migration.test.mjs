// Databases of older schemas open with this package: tests/fixtures/v0.1.0-indexeddb.json (schema
// version 2, made by tests/fixtures/make_v1_indexeddb.mjs), tests/fixtures/schema3-indexeddb.json
// (schema version 3, made by tests/fixtures/make_schema_indexeddb.mjs) and
// tests/fixtures/schema4-indexeddb.json (schema version 4, made by
// tests/fixtures/make_schema_indexeddb.mjs) are loaded into fresh fake-indexeddb databases exactly as
// they were left (version, object store, indexes, records), then opened: every message must read
// back with exact values, and the queue must work. A schema 5 database (issue 21) is written here
// record by record (schema5Records): 6 only adds movedFrom; a schema 6 database likewise (7 drops
// two indexes and keeps 6's records); a schema 7 database likewise, with queue rows (8 marks the
// rows of the queues that hold messages with an expiry); a schema 8 database likewise (9 puts the
// ready lane in id order).
// Run: node --require fake-indexeddb/auto --test bindings-wasm/js/test/  (after build.sh)
import { test } from "node:test";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { open } from "../../../build/pkg/index.js";

const BASE = Date.UTC(2026, 0, 1);
const fixture = (name) => JSON.parse(readFileSync(new URL(`../../../tests/fixtures/${name}`, import.meta.url), "utf8"));
const dump = fixture("v0.1.0-indexeddb.json");
const dump3 = fixture("schema3-indexeddb.json");
const dump4 = fixture("schema4-indexeddb.json");

/** The indexes of schema versions 7 to 9, as `raw` lists them. */
const INDEXES = [
  ["claim", ["queue", "lane", "at", "id"], false],
  ["dead", ["queue", "status", "deadAt"], false],
  ["delayed", ["queue", "status", "retryAfter", "lane"], false],
  ["expiring", ["queue", "status", "expiresAt"], false],
  ["group", ["queue", "group", "groupAt", "id"], false],
  ["idempotency", ["queue", "idempotencyKey"], true],
  ["list", ["queue", "status", "id", "updatedAt"], false],
];

/** The indexes of schema versions 5 and 6: 7's and `expiry` and `queue`. */
const INDEXES6 = [...INDEXES, ["expiry", ["queue", "status", "leaseExpiresAt"], false], ["queue", "queue", false]]
  .sort(([a], [b]) => (a < b ? -1 : 1));

/**
 * Each record's place in the claim index, `[id, lane, at - BASE]` (`at` itself in the ready lane,
 * where it is 0 from schema 9 on; null: none); and that `dueAt`
 * is gone and the fields of schemas 5 and 6 are null (no group, no expiry, not moved), so left out
 * of the record as the upgrade writes it (issue 20), as is no lane.
 */
function lanes(records) {
  for (const r of records) {
    assert.equal("dueAt" in r, false, `record ${r.id} still has dueAt`);
    const nulls = ["group", "expiresAt", "groupAt", "movedFrom", "lane", "at"].filter((k) => k in r && r[k] === null);
    assert.deepEqual(nulls, [], `record ${r.id} holds null fields`);
    assert.deepEqual([r.group, r.expiresAt, r.groupAt, r.movedFrom], [undefined, undefined, undefined, undefined], `record ${r.id}`);
  }
  return records.map((r) => [r.id, r.lane ?? null, r.at === undefined ? null : r.lane === 1 ? r.at : r.at - BASE]);
}

/**
 * `record` as this version writes it: without its null fields (issue 20), `at` 0 in the ready
 * lane (schema 9: the lane in id order).
 */
function written(record) {
  const fields = Object.entries(record).filter(([, v]) => v !== null);
  return Object.fromEntries(record.lane === 1 ? fields.map(([k, v]) => [k, k === "at" ? 0 : v]) : fields);
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Writes `dump` into a new database `name` at its version, as the package that wrote it made it. */
async function load(name, dump) {
  const req = indexedDB.open(name, dump.version);
  req.onupgradeneeded = () => {
    const { name: storeName, keyPath, autoIncrement } = dump.objectStore;
    const store = req.result.createObjectStore(storeName, { keyPath, autoIncrement });
    for (const index of dump.indexes) {
      store.createIndex(index.name, index.keyPath, { unique: index.unique, multiEntry: index.multiEntry });
    }
    // The dump writes -Infinity (not JSON) as a string.
    for (const record of dump.records) {
      store.put({ ...record, dueAt: record.dueAt === "-Infinity" ? -Infinity : record.dueAt });
    }
  };
  (await request(req)).close();
}

/** Every record and the schema, read with plain IndexedDB; `queues`: the key path of the queues store. */
async function raw(name) {
  const db = await request(indexedDB.open(name));
  const store = db.transaction("messages").objectStore("messages");
  const records = await request(store.getAll());
  const indexes = [...store.indexNames].sort().map((n) => [n, store.index(n).keyPath, store.index(n).unique]);
  const version = db.version;
  const queues = db.objectStoreNames.contains("queues") ? db.transaction("queues").objectStore("queues").keyPath : null;
  db.close();
  return { version, indexes, records, queues };
}

/** The statistics of a queue without settings nor expired messages, with `fields`. */
function stats(fields) {
  return { ...fields, paused: false, expiredDead: 0, expiredDiscarded: 0 };
}

/** A message as the API returns it: every field, with the defaults of a 0.1.0 message. */
function message(fields) {
  const at = (ms) => (ms === null ? null : new Date(BASE + ms));
  return {
    id: fields.id,
    queue: fields.queue ?? "emails",
    payload: fields.payload,
    status: fields.status,
    retryCount: fields.retryCount ?? 0,
    maxRetries: fields.maxRetries,
    retryAfter: at(fields.retryAfter ?? null),
    lastError: fields.lastError ?? null,
    createdAt: at(0),
    updatedAt: at(fields.updatedAt ?? 0),
    leaseToken: fields.leaseToken ?? null,
    leaseExpiresAt: at(fields.leaseExpiresAt ?? null),
    idempotencyKey: null,
    firstFailedAt: at(fields.firstFailedAt ?? null),
    deadAt: at(fields.deadAt ?? null),
    errors: fields.errors ?? [],
    errorsDropped: fields.errorsDropped ?? 0,
    replayCount: fields.replayCount ?? 0,
    replayedAt: at(fields.replayedAt ?? null),
    group: null,
    expiresAt: null,
    deduplicated: false,
    movedFrom: null,
  };
}

test("the fixture is what 0.1.0 wrote: schema version 2, seven records", () => {
  assert.equal(dump.version, 2);
  assert.deepEqual(dump.indexes.map((i) => i.name), ["claim", "expiry", "list", "queue"]);
  assert.equal(dump.records.length, 7);
});

test("a 0.1.0 database is upgraded to schema 9 on open and reads back exactly", async () => {
  const name = `migration-${process.pid}`;
  await load(name, dump);
  let now = BASE + 20_000;
  const db = await open(name, { clock: () => now, random: () => 0 });
  const emails = db.queue("emails");
  const other = db.queue("other queue/ü");

  const expected = [
    // Failed once, then claimed again: 0.1.0 left retryAfter on it; now it is cleared.
    message({
      id: 1, payload: '{"to": "a@example.com"}', status: "processing", retryCount: 1, maxRetries: 3,
      lastError: "boom", updatedAt: 10_000, leaseToken: "fd5f59b7-b451-4c88-916d-b177c08a8c3a",
      leaseExpiresAt: 70_000, errorsDropped: 1,
    }),
    message({
      id: 2, payload: "claimed", status: "processing", maxRetries: 5,
      leaseToken: "9c03fde8-9c01-48f6-834e-27688bf45f26", leaseExpiresAt: 60_000,
    }),
    message({ id: 3, payload: "acked", status: "succeeded", maxRetries: 3, updatedAt: 10_000 }),
    message({
      id: 4, payload: "retried", status: "pending", retryCount: 1, maxRetries: 4, retryAfter: 12_000,
      lastError: "HTTP 503", updatedAt: 10_000, errorsDropped: 1,
    }),
    // Dead: deadAt is when it last changed.
    message({
      id: 5, payload: "poison", status: "dead", retryCount: 1, maxRetries: 1, lastError: "malformed",
      updatedAt: 10_000, deadAt: 10_000, errorsDropped: 1,
    }),
    // Replayed by 0.1.0: its failure and replay left no trace that 0.1.0 kept.
    message({ id: 6, payload: "replayed", status: "pending", maxRetries: 1, updatedAt: 15_000 }),
  ];
  assert.deepEqual(await emails.list(), expected);
  for (const m of expected) assert.deepEqual(await emails.get(m.id), m);
  assert.deepEqual(await other.list(), [
    message({ id: 7, queue: "other queue/ü", payload: "x".repeat(1000), status: "pending", maxRetries: 3 }),
  ]);
  assert.deepEqual((await emails.list({ status: "dead" })).map((m) => m.id), [5]);

  // The stored records: version 3 fields, and lane and at (leases and delays timed, due messages
  // ready at 0, in id order; finished ones out of the claim index); the new indexes.
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  assert.equal(stored.queues, "name");
  assert.deepEqual(lanes(stored.records),
    [[1, 0, 70_000], [2, 0, 60_000], [3, null, null], [4, 0, 12_000], [5, null, null], [6, 1, 0], [7, 1, 0]]);

  // Statistics come from the new indexes.
  const again = await open(name, { clock: () => now, random: () => 0 });
  const q = again.queue("emails");
  assert.deepEqual(await q.stats(), stats({
    queue: "emails", pending: 2, processing: 2, succeeded: 1, dead: 1, expired: 0, delayed: 0,
    nextDueAt: null, oldestDueAgeMs: 20_000, oldestDeadAgeMs: 10_000,
  }));
  assert.deepEqual((await again.queues()).map((s) => [s.queue, s.pending]), [["emails", 2], ["other queue/ü", 1]]);

  // claim, fail, replay on the migrated messages.
  const claimed = await q.claim();
  assert.deepEqual([claimed.id, claimed.retryAfter], [4, null]);
  const failed = await q.fail(4, "HTTP 503 again", { leaseToken: claimed.leaseToken });
  assert.deepEqual(
    [failed.status, failed.retryCount, failed.retryAfter.getTime() - BASE, failed.errorsDropped, failed.firstFailedAt.getTime() - BASE],
    ["pending", 2, 24_000, 1, 20_000],
  );
  assert.deepEqual(failed.errors, [{ attempt: 2, error: "HTTP 503 again", at: new Date(now) }]);
  const replayed = await q.replay(5);
  assert.deepEqual(
    [replayed.status, replayed.retryCount, replayed.deadAt, replayed.replayCount, replayed.replayedAt.getTime() - BASE, replayed.errorsDropped],
    ["pending", 0, null, 1, 20_000, 1],
  );
  // The old leases run out: 2 (at +60 s) then 1 (at +70 s) count as failed attempts.
  now = BASE + 70_000;
  const died = [];
  again.onDead((m) => died.push(m.id));
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [4, 5, 6]);
  const [one, two] = [await q.get(1), await q.get(2)];
  assert.deepEqual([one.status, one.retryCount, one.retryAfter.getTime() - BASE, one.errors], ["pending", 2, 74_000, [{ attempt: 2, error: "lease expired", at: new Date(now) }]]);
  assert.deepEqual([two.status, two.retryCount, two.retryAfter.getTime() - BASE, two.errors.length], ["pending", 1, 72_000, 1]);
  assert.deepEqual(died, []);
  // New messages continue the ids, and idempotency keys work on the migrated store.
  const added = await q.enqueue("new", { idempotencyKey: "k" });
  assert.deepEqual([added.id, (await q.enqueue("dup", { idempotencyKey: "k" })).deduplicated], [8, true]);
  again.close();
});

/** A stored record as the API returns it: timestamps as Dates, no storage-only fields; no group, no expiry. */
function asMessage(record) {
  const { dueAt, lane, at, groupAt, ...fields } = record;
  const date = (ms) => (ms === null ? null : new Date(ms));
  const out = { ...fields, group: null, expiresAt: null, deduplicated: false, movedFrom: null };
  for (const k of ["retryAfter", "createdAt", "updatedAt", "leaseExpiresAt", "firstFailedAt", "deadAt", "replayedAt"]) out[k] = date(fields[k]);
  out.errors = fields.errors.map((e) => ({ ...e, at: date(e.at) }));
  return out;
}

/**
 * Loads `dump` (a schema `version` fixture of 3 or 4: the eight messages of make_schema_indexeddb.mjs)
 * into a fresh database, opens it at BASE + 1 s (which upgrades it), checks that every message
 * reads back as stored (list order and statuses, then each by id), closes it and resolves to its
 * name and its raw dump, whose version and indexes are checked to be schema 9's.
 */
async function upgradeV3OrV4(dump, version) {
  assert.equal(dump.version, version);
  assert.equal(dump.records.length, 8);
  const name = `migration${version}-${process.pid}`;
  await load(name, dump);
  const db = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const emails = db.queue("emails");
  const byId = new Map(dump.records.map((r) => [r.id, asMessage(r)]));
  assert.deepEqual((await emails.list()).map((m) => [m.id, m.status]),
    [[1, "succeeded"], [2, "pending"], [3, "dead"], [4, "pending"], [5, "processing"], [6, "processing"], [7, "pending"]]);
  for (const id of byId.keys()) {
    const queue = id === 8 ? db.queue("other queue/ü") : emails;
    assert.deepEqual(await queue.get(id), byId.get(id), `message ${id}`);
  }
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  return { name, stored };
}

test("a schema 3 database is upgraded to schema 9 on open: same messages, claim index lanes", async () => {
  let now = BASE + 1_000;
  const { name, stored } = await upgradeV3OrV4(dump3, 3);
  assert.deepEqual(lanes(stored.records),
    [[1, null, null], [2, 0, 2_000], [3, null, null], [4, 1, 0], [5, 0, 70_000], [6, 0, 3_600_000], [7, 0, 600_000], [8, 1, 0]]);

  const again = await open(name, { clock: () => now, random: () => 0 });
  const q = again.queue("emails");
  assert.deepEqual(await q.stats(), stats({
    queue: "emails", pending: 3, processing: 2, succeeded: 1, dead: 1, expired: 0, delayed: 2,
    nextDueAt: new Date(BASE + 2_000), oldestDueAgeMs: 1_000, oldestDeadAgeMs: 1_000,
  }));
  // 4 is the only due message (2 waits until +2 s, 7 until +10 min).
  assert.equal((await q.claim()).id, 4);
  // At +70 s the leases of 4 (+31 s: its last retry, so it dies) and 5 (+70 s) run out, in that
  // order; 2 became due at +2 s and is taken; 5 waits for its backoff (2 s).
  now = BASE + 70_000;
  const died = [];
  again.onDead((m) => died.push(m.id));
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [2]);
  assert.deepEqual(died, [4]);
  const five = await q.get(5);
  assert.deepEqual([five.status, five.retryCount, five.retryAfter.getTime() - BASE, five.errors],
    ["pending", 1, 72_000, [{ attempt: 1, error: "lease expired", at: new Date(now) }]]);
  assert.equal(await q.claim(), null);
  now = BASE + 72_000;
  assert.equal((await q.claim()).id, 5);
  // The idempotency key of 4 still holds; new ids continue after 8.
  assert.deepEqual([(await q.enqueue("dup", { idempotencyKey: "k-4" })).id, (await q.enqueue("new")).id], [4, 9]);
  again.close();
});

test("a schema 4 database is upgraded to schema 9 on open: same messages and lanes, the queues store, groups and expiry work", async () => {
  let now = BASE + 1_000;
  const { name, stored } = await upgradeV3OrV4(dump4, 4);
  assert.equal(stored.queues, "name");
  // The same places in the claim index as schema 4 gave them.
  assert.deepEqual(lanes(stored.records), dump4.records.map((r) => [r.id, r.lane, r.at === null ? null : r.at - BASE]));

  const again = await open(name, { clock: () => now, random: () => 0 });
  const q = again.queue("emails");
  assert.deepEqual(await q.stats(), stats({
    queue: "emails", pending: 3, processing: 2, succeeded: 1, dead: 1, expired: 0, delayed: 2,
    nextDueAt: new Date(BASE + 2_000), oldestDueAgeMs: 1_000, oldestDeadAgeMs: 1_000,
  }));
  // The migrated messages claim as before (4 is due), beside new ones in a group and with an expiry.
  await q.enqueueMany([{ payload: "g1", group: "g" }, { payload: "g2", group: "g" }, { payload: "soon", expiresInMs: 500, delayMs: 400 }]);
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [4, 9]);
  now = BASE + 2_000;
  const died = [];
  again.onDead((m) => died.push([m.id, m.lastError]));
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [2]);
  assert.deepEqual(died, [[11, "expired"]]);
  assert.deepEqual(await q.settings(), { backoff: null, maxRetries: null, leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: false });
  assert.equal((await q.stats()).expiredDead, 1);
  // The idempotency key of 4 still holds; new ids continue after 11.
  assert.deepEqual([(await q.enqueue("dup", { idempotencyKey: "k-4" })).id, (await q.enqueue("new")).id], [4, 12]);
  again.close();
});

/**
 * Writes `records` (and `rows` into `queues`) into a new database `name` at `version` 5 to 8,
 * with the object stores and indexes those versions had (the same at 5 and 6: 6 only added the
 * records' `movedFrom`; 7 dropped two indexes, which 8 kept).
 */
async function loadV5OrV6(name, version, records, rows = []) {
  const req = indexedDB.open(name, version);
  req.onupgradeneeded = () => {
    const store = req.result.createObjectStore("messages", { keyPath: "id", autoIncrement: true });
    for (const [index, keyPath, unique] of version >= 7 ? INDEXES : INDEXES6) store.createIndex(index, keyPath, { unique });
    const queues = req.result.createObjectStore("queues", { keyPath: "name" });
    for (const record of records) store.put(record);
    for (const row of rows) queues.put(row);
  };
  (await request(req)).close();
}

/**
 * Records as schema 5 wrote them (issue 21's fields, no `movedFrom`), at BASE: a group's head
 * (1) and the member blocked behind it (2), a dead message with an idempotency key (3), and a
 * message whose backoff ended that a claim put in the ready lane with its `retryAfter` kept (4).
 */
function schema5Records() {
  const base = {
    queue: "emails", retryCount: 0, maxRetries: 3, retryAfter: null, lastError: null, createdAt: BASE,
    updatedAt: BASE, leaseToken: null, leaseExpiresAt: null, idempotencyKey: null, firstFailedAt: null,
    deadAt: null, errors: [], errorsDropped: 0, replayCount: 0, replayedAt: null, group: null, expiresAt: null,
    groupAt: null, lane: null, at: null,
  };
  return [
    { ...base, id: 1, payload: "head", status: "pending", group: "g", groupAt: BASE, lane: 1, at: BASE },
    { ...base, id: 2, payload: "behind", status: "pending", group: "g", groupAt: BASE },
    { ...base, id: 3, payload: "poison", status: "dead", retryCount: 1, maxRetries: 0, lastError: "bad", idempotencyKey: "k",
      firstFailedAt: BASE, deadAt: BASE, errors: [{ attempt: 1, error: "bad", at: BASE }] },
    { ...base, id: 4, payload: "retried", status: "pending", retryCount: 1, retryAfter: BASE + 500, lastError: "503",
      firstFailedAt: BASE, errors: [{ attempt: 1, error: "503", at: BASE }], lane: 1, at: BASE },
  ];
}

test("a schema 5 database is upgraded to schema 9 on open: movedFrom null, every place kept, moves work", async () => {
  const name = `migration5-${process.pid}`;
  const records = schema5Records();
  await loadV5OrV6(name, 5, records);

  const db = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const emails = db.queue("emails");
  assert.deepEqual((await emails.list()).map((m) => [m.id, m.movedFrom]), [[1, null], [2, null], [3, null], [4, null]]);
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  assert.equal(stored.queues, "name");
  // Rewritten with movedFrom, each in its place (the ready lane of 4, the blocked 2) as before.
  assert.deepEqual(stored.records, records.map(written));

  const again = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const [q, other] = [again.queue("emails"), again.queue("other")];
  const moved = await q.move(1, "other");
  assert.deepEqual([moved.queue, moved.movedFrom, moved.group], ["other", "emails", "g"]);
  // 2 heads g in emails now; 4 keeps its place in the ready lane (claim order: by id).
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [2, 4]);
  assert.equal((await other.claim()).id, 1);
  assert.equal(await q.moveAll("other", { dryRun: true }), 1);
  assert.equal(await q.moveAll("other"), 1);
  assert.deepEqual([(await other.get(3)).movedFrom, (await other.enqueue("dup", { idempotencyKey: "k" })).id], ["emails", 3]);
  again.close();
});

test("a schema 6 database is upgraded to schema 9 on open: indexes expiry and queue dropped, records rewritten in their places", async () => {
  const name = `migration6-${process.pid}`;
  const records = schema5Records().map((r) => ({ ...r, movedFrom: null }));
  const plain = { ...records[0], group: null, groupAt: null };
  records.push(
    // A lease that ran out at BASE + 500 (counted as expired once the `expiry` index is gone) and
    // a message of another queue.
    { ...plain, id: 5, payload: "leased", status: "processing", leaseToken: "t", leaseExpiresAt: BASE + 500, lane: 0, at: BASE + 500 },
    { ...plain, id: 6, queue: "other", payload: "elsewhere" },
  );
  await loadV5OrV6(name, 6, records);

  const db = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const emails = db.queue("emails");
  // Without a status: every status merged in id order, in pages.
  assert.deepEqual((await emails.list()).map((m) => [m.id, m.status]),
    [[1, "pending"], [2, "pending"], [3, "dead"], [4, "pending"], [5, "processing"]]);
  const first = await emails.list({ limit: 2 });
  assert.deepEqual([first.map((m) => m.id), first.nextAfterId], [[1, 2], 2]);
  assert.deepEqual((await emails.list({ limit: 2, afterId: 2 })).map((m) => m.id), [3, 4]);
  const all = await db.queues();
  assert.deepEqual(all.map((s) => [s.queue, s.pending, s.processing, s.dead, s.expired]), [["emails", 3, 1, 1, 1], ["other", 1, 0, 0, 0]]);
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  assert.deepEqual(stored.records, records.map(written));

  // The lease runs out for a claim as before.
  const again = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const q = again.queue("emails");
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [1, 4]);
  assert.deepEqual([(await q.get(5)).status, (await q.stats()).expired], ["pending", 0]);
  again.close();
});

test("a schema 7 database is upgraded to schema 9 on open: the rows of the queues holding messages with an expiry are marked, and their claims take them out", async () => {
  const name = `migration7-${process.pid}`;
  const plain = { ...schema5Records()[0], group: null, groupAt: null, movedFrom: null };
  const records = [
    // Pending in "emails", expiring at BASE + 500; a queue with a row of settings.
    { ...plain, id: 1, payload: "soon", expiresAt: BASE + 500 },
    { ...plain, id: 2, payload: "later" },
    // Dead in "third", which has no row, with an expiry (kept on a replay's message until then).
    { ...plain, id: 3, queue: "third", payload: "gone", status: "dead", lastError: "x", deadAt: BASE, expiresAt: BASE + 500,
      retryCount: 1, firstFailedAt: BASE, errors: [{ attempt: 1, error: "x", at: BASE }], lane: null, at: null },
    // "other": no expiry anywhere, a row.
    { ...plain, id: 4, queue: "other", payload: "elsewhere" },
  ];
  const row = (queue, fields) => ({
    name: queue, backoffInitialMs: null, backoffMultiplier: null, backoffCapMs: null, backoffJitter: null, maxRetries: null,
    leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: false, expiredDead: 0, expiredDiscarded: 0, ...fields,
  });
  const rows = [row("emails", { maxRetries: 5, expiredDead: 2 }), row("other", { leaseMs: 9_000 })];
  await loadV5OrV6(name, 7, records, rows);

  const db = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  assert.deepEqual(stored.records, records.map(written));
  const upgraded = await request(indexedDB.open(name));
  const after = await request(upgraded.transaction("queues").objectStore("queues").getAll());
  upgraded.close();
  assert.deepEqual(after, [
    { ...rows[0], expires: true },
    { ...rows[1] },
    { ...row("third", {}), expires: true },
  ]);

  // A claim of "emails" takes 1 out at its expiry (its row says it may hold such messages).
  const again = await open(name, { clock: () => BASE + 1_000, random: () => 0 });
  const died = [];
  again.onDead((m) => died.push([m.id, m.lastError]));
  assert.deepEqual((await again.queue("emails").claimMany(10)).map((m) => m.id), [2]);
  assert.deepEqual([died, (await again.queue("emails").stats()).expiredDead], [[[1, "expired"]], 3]);
  assert.deepEqual((await again.queue("emails").settings()).maxRetries, 5);
  assert.deepEqual((await again.queue("other").claimMany(10)).map((m) => m.id), [4]);
  again.close();
});

test("a schema 8 database is upgraded to schema 9 on open: the ready lane in id order (enqueue order, whatever the clock said), other places and rows kept", async () => {
  const name = `migration8-${process.pid}`;
  // As schema 8 wrote them: no null fields, the ready lane's `at` the createdAt. The clock went
  // back between the enqueues of 1 and 2, so 8 claimed 2 first.
  const base = {
    queue: "emails", status: "pending", retryCount: 0, maxRetries: 3, updatedAt: BASE, errors: [], errorsDropped: 0,
    replayCount: 0,
  };
  const failed = { retryCount: 1, lastError: "503", firstFailedAt: BASE, errors: [{ attempt: 1, error: "503", at: BASE }] };
  const records = [
    { ...base, id: 1, payload: "first", createdAt: BASE + 2_000, lane: 1, at: BASE + 2_000 },
    { ...base, id: 2, payload: "second", createdAt: BASE, lane: 1, at: BASE },
    { ...base, ...failed, id: 3, payload: "backoff", createdAt: BASE, retryAfter: BASE + 5_000, lane: 0, at: BASE + 5_000 },
    { ...base, id: 4, payload: "leased", status: "processing", createdAt: BASE, leaseToken: "t", leaseExpiresAt: BASE + 60_000,
      lane: 0, at: BASE + 60_000 },
    { ...base, id: 5, payload: "head", createdAt: BASE + 1_000, group: "g", groupAt: BASE + 1_000, lane: 1, at: BASE + 1_000 },
    { ...base, id: 6, payload: "behind", createdAt: BASE + 1_000, group: "g", groupAt: BASE + 1_000 },
    { ...base, id: 7, payload: "done", status: "succeeded", createdAt: BASE },
  ];
  const rows = [{
    name: "emails", backoffInitialMs: null, backoffMultiplier: null, backoffCapMs: null, backoffJitter: null, maxRetries: 5,
    leaseMs: null, expiresInMs: null, onExpiry: "dead", paused: false, expiredDead: 1, expiredDiscarded: 0, expires: true,
  }];
  await loadV5OrV6(name, 8, records, rows);

  const db = await open(name, { clock: () => BASE + 3_000, random: () => 0 });
  // The first due message in claim order is 1, created at +2 s: 1 s old (8 said 3 s: 2's age).
  assert.equal((await db.queue("emails").stats()).oldestDueAgeMs, 1_000);
  db.close();
  const stored = await raw(name);
  assert.equal(stored.version, 9);
  assert.deepEqual(stored.indexes, INDEXES);
  // Every record rewritten: the ready lane's `at` is 0, every other place as it was.
  assert.deepEqual(stored.records, records.map((r) => (r.lane === 1 ? { ...r, at: 0 } : r)));
  const upgraded = await request(indexedDB.open(name));
  const after = await request(upgraded.transaction("queues").objectStore("queues").getAll());
  upgraded.close();
  assert.deepEqual(after, rows);

  // Claims take the ready lane in id order: 1 before 2 (8 took 2, then 5, then 1).
  const again = await open(name, { clock: () => BASE + 3_000, random: () => 0 });
  const q = again.queue("emails");
  assert.deepEqual((await q.claimMany(2)).map((m) => m.id), [1, 2]);
  assert.deepEqual((await q.claimMany(10)).map((m) => m.id), [5]);
  assert.equal((await q.enqueue("new")).id, 8);
  again.close();
});
