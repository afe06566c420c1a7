// The IndexedDB schema of the store: the object stores `messages` (with its indexes) and
// `queues`, and the version upgrades; opening a database within a time limit, refusing another
// application's database without changing it. What to do with the version found (create, upgrade,
// take, refuse) is the core's decision (`schemaDecision`: deadletter::storage's
// `Place::migration`), and so is the record of an older version as version 7 writes it
// (`upgradeRecord`, with the 0.1.0 mapping).
//
// Version 1 had `claim` on [queue, status, createdAt]; 2 added `id` and `dueAt` to it; 3 added
// the failure history, dead-letter and idempotency fields to every record, the indexes
// `idempotency`, `delayed` and `dead`, and `id` and `updatedAt` to `list`; 4 puts `claim` on
// [queue, lane, at, id] (records get `lane` and `at` in place of `dueAt`); 5 (issue 21) adds the
// object store `queues` (a queue's settings, pause and expiry counters, keyed by name), the
// records' `group`, `expiresAt` and `groupAt`, the indexes `group` and `expiring`, and `lane` to
// `delayed` (the members blocked behind their group's head have no lane, so they are in neither
// `claim` nor `delayed`); 6 (issue 22) adds the records' `movedFrom` (the queue a message was
// moved from, null until moved), with the same indexes; 7 drops the indexes `queue` and `expiry`
// (every write rewrote their entries; the list without a status, the queue names and the count of
// leases that ran out come from `list` and `claim`), with 6's records; 8 (issue 20) gives the
// record in `queues` of every queue that may hold messages with an expiry `expires: true` (set by
// the write that gives a queue its first one, never cleared), so that a claim reads the index
// `expiring` only for those: the upgrade sets it on every queue with a message in `expiring`; 9
// orders the ready lane of `claim` by id (claim order, enqueue order: every record there has the
// same `at`, 0, where it had its `createdAt`). Every upgrade rewrites every record as the current
// version writes it, in the upgrade's transaction: a database is at one version, whole.

import { markExpiring, schemaDecision, upgradeRecord } from "../core.js";
import { DeadLetterError } from "../errors.js";
import { settle, storeError } from "./requests.js";

/** The object store of messages. */
export const STORE = "messages";
/** The object store of queue rows (settings, pause, expiry counters), keyed by `name`. */
export const QUEUES = "queues";
/** Schema version. */
export const VERSION = 9;
/** How long `open` waits (blocked by other connections, queued behind an upgrade), in ms. */
export const OPEN_TIMEOUT_MS = 5_000;

/**
 * The indexes of version 9 (and 7, 8), by name: [keyPath, unique]. Within one index key, entries come in
 * primary-key (= id) order, which gives id-ordered pages. The key ranges the store reads in them
 * come from the WebAssembly module (src/keys.rs), which knows these key paths. A write costs an
 * entry in every index whose key path the record has (a missing or null value, also as one part
 * of a compound key path, is no key: records leave their null fields out, issue 20), so an index
 * is here only for a query no other one serves.
 * - `claim`: two lanes (the record's `lane` and `at`, from the core's lane rule): the messages
 *   whose turn comes at a time (leases, backoffs and delays) by that time; the due pending
 *   messages in claim order (by id: they all have `at` 0). Finished messages are not in it, nor are the members of a group
 *   waiting behind its head (blocked: no lane), so a claim never reads them. Its timed lane up to
 *   now holds the leases that ran out (stats counts them there).
 * - `list`: one status in id order, with `updatedAt`: list and bulk selections (without a status:
 *   one range per status, merged by id), counts, the queue names.
 * - `idempotency` (unique): at most one message of a queue carries a key.
 * - `delayed`: pending messages by `retryAfter` (null otherwise), with their lane (none while
 *   blocked behind their group's head): delayed count, next due.
 * - `dead`: dead messages by `deadAt`: the oldest death.
 * - `group`: the live members of each ordering group in group order (`groupAt`, null once
 *   finished): a group's tail (enqueue, replay) and its next head.
 * - `expiring`: messages by `expiresAt` (null: never), per status: the pending ones a claim or
 *   reap takes out at their expiry.
 */
export const INDEXES = {
  claim: [["queue", "lane", "at", "id"], false],
  list: [["queue", "status", "id", "updatedAt"], false],
  idempotency: [["queue", "idempotencyKey"], true],
  delayed: [["queue", "status", "retryAfter", "lane"], false],
  dead: [["queue", "status", "deadAt"], false],
  group: [["queue", "group", "groupAt", "id"], false],
  expiring: [["queue", "status", "expiresAt"], false],
};

/** The indexes versions 1 to 6 had and 7 dropped. */
const DROPPED = { expiry: ["queue", "status", "leaseExpiresAt"], queue: "queue" };

/** The key path of every index of schema `version` (1 to 9), by name. */
function shape(version) {
  const indexes = {
    ...(version < 7 ? DROPPED : {}),
    claim: version === 1 ? ["queue", "status", "createdAt"]
      : version < 4 ? ["queue", "status", "createdAt", "id", "dueAt"]
      : INDEXES.claim[0],
  };
  if (version < 3) {
    indexes.list = ["queue", "status"];
  } else {
    for (const name of ["list", "idempotency", "delayed", "dead"]) indexes[name] = INDEXES[name][0];
  }
  if (version < 5) {
    if (version >= 3) indexes.delayed = ["queue", "status", "retryAfter"];
  } else {
    for (const name of ["group", "expiring"]) indexes[name] = INDEXES[name][0];
  }
  return indexes;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What the database holds where our store belongs, for `schemaDecision`: `[others, misshapen]`,
 * `others` describing the database when it has no `messages` store, `misshapen` saying why its
 * `messages` store is not the one of schema `version` (keyed by an auto-incremented `id`, every
 * index of `shape(version)`); both null when it is ours. Reads names only.
 */
function look(db, tx, version) {
  const names = [...db.objectStoreNames];
  if (!names.includes(STORE)) {
    return [names.length === 0 ? "no object store" : `other object stores (${names.join(", ")})`, null];
  }
  const store = (tx ?? db.transaction(STORE)).objectStore(STORE);
  if (!same(store.keyPath, "id") || !store.autoIncrement) {
    return [null, `its "${STORE}" store is not keyed by an auto-incremented id`];
  }
  for (const [name, keyPath] of Object.entries(shape(version))) {
    const found = store.indexNames.contains(name) ? store.index(name).keyPath : null;
    if (!same(found, keyPath)) return [null, `its "${STORE}" store has no index "${name}" on ${JSON.stringify(keyPath)}`];
  }
  if (version >= 5) {
    const queues = names.includes(QUEUES) ? (tx ?? db.transaction(QUEUES)).objectStore(QUEUES) : null;
    if (queues === null || !same(queues.keyPath, "name")) return [null, `it has no "${QUEUES}" store keyed by name`];
  }
  return [null, null];
}

/**
 * The object store `queues` and the indexes a database of version `from` (0: new) lacks, or has
 * with an older key path, for version 9; the indexes 7 dropped, deleted.
 */
function createSchema(db, store, from) {
  if (from > 0 && from < 7) for (const name of Object.keys(DROPPED)) store.deleteIndex(name);
  if (from >= 5) return;
  const create = (name) => store.createIndex(name, INDEXES[name][0], { unique: INDEXES[name][1] });
  if (from < 4) {
    if (from > 0) store.deleteIndex("claim");
    create("claim");
  }
  if (from < 3) {
    if (from > 0) store.deleteIndex("list");
    for (const name of ["list", "idempotency", "dead"]) create(name);
  } else {
    store.deleteIndex("delayed");
  }
  for (const name of ["delayed", "group", "expiring"]) create(name);
  db.createObjectStore(QUEUES, { keyPath: "name" });
}

/** Rewrites every record of version `from` (1 to 8) as version 9 writes it, inside the upgrade transaction. */
async function upgradeRecords(store, from) {
  const req = store.openCursor();
  for (;;) {
    const cursor = await settle(req, "upgrade");
    if (cursor === null) return;
    cursor.update(upgradeRecord(cursor.value, from));
    cursor.continue();
  }
}

/**
 * Marks the record in `queues` of every queue with a message in index `expiring` (version 5 on)
 * as holding messages with an expiry (version 8), inside the upgrade transaction: the names read
 * one key per queue (each skipping to the first key above `[queue, []]`), then each record read
 * and written back with the mark (src/queue.rs's `markExpiring`).
 */
async function markExpiringQueues(store, queues) {
  const names = [];
  const req = store.index("expiring").openKeyCursor();
  for (let cursor = await settle(req, "upgrade"); cursor !== null; cursor = await settle(req, "upgrade")) {
    names.push(cursor.key[0]);
    cursor.continue([cursor.key[0], []]);
  }
  for (const name of names) {
    const marked = markExpiring(name, await settle(queues.get(name), "upgrade"));
    if (marked !== undefined) queues.put(marked);
  }
}

/** Waits `ms`; the returned promise's `cancel()` stops the timer. */
function timeout(ms) {
  let timer;
  const expired = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  expired.cancel = () => clearTimeout(timer);
  return expired;
}

/**
 * Opens database `name` of `factory` (creating it at version 9, or upgrading it from 1 to 8) and
 * resolves to the connection.
 *
 * Another application's database of that name is refused with a `store` error and left as it was:
 * at an older version without deadletter's store and indexes the upgrade is aborted; at version 9
 * it is checked after opening (without writing) and closed; above 9 IndexedDB refuses to open it,
 * and a second, plain open says what it holds. An open that has not completed after
 * `OPEN_TIMEOUT_MS` (blocked by another connection that does not close, or queued behind another
 * tab's upgrade or delete) fails with a `store` error instead of hanging; should it go through
 * later, that connection is closed at once.
 */
export async function open(factory, name) {
  let req;
  try {
    req = factory.open(name, VERSION);
  } catch (err) {
    throw storeError("open", err);
  }
  let refusal = null;
  req.onupgradeneeded = (event) => {
    const tx = req.transaction;
    const from = event.oldVersion;
    try {
      const [others, misshapen] = from === 0 ? [null, null] : look(req.result, tx, from);
      const decision = schemaDecision(name, from, others, misshapen);
      const db = req.result;
      if (decision === 0) {
        createSchema(db, db.createObjectStore(STORE, { keyPath: "id", autoIncrement: true }), 0);
      } else {
        const store = tx.objectStore(STORE);
        createSchema(db, store, from);
        const failed = (err) => {
          refusal = storeError(`open of "${name}"`, `upgrading the records failed: ${err.message}`);
          tx.abort();
        };
        upgradeRecords(store, from).catch(failed);
        // No record had an expiry before 5; 8 marked the queues.
        if (from >= 5 && from < 8) markExpiringQueues(store, tx.objectStore(QUEUES)).catch(failed);
      }
    } catch (err) {
      refusal = err instanceof DeadLetterError ? err : storeError(`open of "${name}"`, `creating or upgrading the schema failed: ${err}`);
      tx.abort();
    }
  };
  const opening = settle(req, `open of "${name}"`);
  const expired = timeout(OPEN_TIMEOUT_MS);
  const outcome = await Promise.race([opening.then((db) => ({ db }), (error) => ({ error })), expired]);
  expired.cancel();
  if (outcome === undefined) {
    // Should the open go through later, close that connection straight away.
    opening.then((db) => db.close(), () => {});
    throw storeError(`open of "${name}"`, `timed out after ${OPEN_TIMEOUT_MS} ms: blocked by another connection (another tab?) that does not close, or queued behind its upgrade or delete`);
  }
  if (outcome.db !== undefined) {
    const db = outcome.db;
    try {
      const [others, misshapen] = look(db, null, db.version);
      schemaDecision(name, db.version, others, misshapen);
    } catch (err) {
      db.close();
      throw err instanceof DeadLetterError ? err : storeError(`open of "${name}"`, err);
    }
    return db;
  }
  if (refusal !== null) throw refusal;
  if (req.error?.name === "VersionError") throw await newer(factory, name);
  throw outcome.error;
}

/**
 * The refusal of database `name`, whose version is above ours: opened at its own version
 * (without an upgrade: one that would create it, had it just been deleted, is aborted), to say
 * what it holds.
 */
async function newer(factory, name) {
  const req = factory.open(name);
  req.onupgradeneeded = () => req.transaction.abort();
  let db;
  try {
    db = await settle(req, `open of "${name}"`);
  } catch (err) {
    return err;
  }
  try {
    const [others] = look(db, null, VERSION);
    schemaDecision(name, db.version, others, null);
    return storeError(`open of "${name}"`, "VersionError");
  } catch (err) {
    return err;
  } finally {
    db.close();
  }
}
