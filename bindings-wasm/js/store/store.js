// The IndexedDB store: one object store `messages` (schema.js) read and written in transactions
// that await only their own requests (requests.js). It selects and persists; it never decides:
// every range it reads is one a plan named, every record it writes is one a plan returned (the
// plans of the WebAssembly module, src/plans.rs: the core's steps). In particular `claim` expires
// the queue's overdue leases and takes the first due messages in one transaction, so two tabs or
// workers can never take the same message; it reads the timed lane up to now (usually empty) and
// the head of the ready lane at once, so messages waiting for their backoff are never read. No
// operation scans the whole store or loads it into memory.

import { STORE, open } from "./schema.js";
import { firstKey, keyRange, putAll, request, settle, storeError, transaction, walk } from "./requests.js";

/** An open IndexedDB database holding messages. */
export class IdbStore {
  #db;
  #closed = false;

  constructor(db) {
    this.#db = db;
    // Another connection asks for a version change (a newer schema in another tab), or the
    // browser closed it: closed from now on, and every later call fails with a `store` error.
    const shut = () => this.close();
    db.onversionchange = shut;
    db.onclose = shut;
  }

  /** Opens (creating or upgrading) database `name` of `factory` (see schema.js). */
  static async open(factory, name) {
    return new IdbStore(await open(factory, name));
  }

  /** Whether the connection was closed, by `close()` or by a version change. */
  get closed() {
    return this.#closed;
  }

  /** Closes the connection (running transactions finish first). */
  close() {
    this.#closed = true;
    this.#db.close();
  }

  #run(mode, body) {
    if (this.#closed) return Promise.reject(storeError("transaction", "the database is closed"));
    return transaction(this.#db, STORE, mode, body);
  }

  /**
   * Adds the records of an EnqueuePlan in order, in one transaction; a record whose
   * idempotency key (`keys[i]`, or null) a stored message of its queue carries is not added.
   * Resolves to one result per record: the id assigned, or the stored record with its key.
   */
  insert(records, keys) {
    return this.#run("readwrite", async (store) => {
      const unique = store.index("idempotency");
      const results = [];
      for (const [i, record] of records.entries()) {
        if (keys[i] !== null) {
          // Requests run in order: this lookup sees every add before it, also of this batch.
          const found = await request("get", () => unique.get(keys[i]));
          if (found !== undefined) {
            results.push(found);
            continue;
          }
        }
        results.push(request("add", () => store.add(record)));
      }
      return Promise.all(results);
    });
  }

  /** The record of `id`, or undefined. */
  get(id) {
    return this.#run("readonly", (store) => request("get", () => store.get(id)));
  }

  /** Reads the record of `id` (undefined when none) and writes what `step(record)` returns. */
  update(id, step) {
    return this.#run("readwrite", async (store) => {
      const found = await request("get", () => store.get(id));
      store.put(step(found));
    });
  }

  /** Runs a ClaimPlan (src/plans.rs: the lanes of the `claim` index) in one transaction. */
  claim(plan) {
    const [timed, ready] = plan.ranges().map(keyRange); // before the transaction: nothing waits on it
    return this.#run("readwrite", async (store) => {
      const index = store.index("claim");
      const head = () => (plan.wanted > 0 ? request("getAll", () => index.getAll(ready, plan.wanted)) : null);
      // Both reads at once: the timed lane up to now (one page), the head of the ready lane.
      const page = request("getAll", () => index.getAll(timed, plan.pageSize));
      let next = head();
      putAll(store, plan.timed(await page));
      if (plan.walking) {
        // More came due than a page: the rest of the timed lane, one record in memory at a time;
        // then the ready lane again (claim order is theirs now).
        await walk("openCursor", () => index.openCursor(timed), (cursor) => putAll(store, plan.timed([cursor.value])));
        next = head();
      }
      while (next !== null) {
        putAll(store, plan.ready(await next));
        next = head();
      }
    });
  }

  /** One page of records: of index `list` in `range` when given, else of queue `queue` with an id above `afterId`; at most `limit`. */
  list(queue, range, limit, afterId) {
    return this.#run("readonly", async (store) => {
      if (range !== null) return request("getAll", () => store.index("list").getAll(keyRange(range), limit));
      const page = [];
      const req = store.index("queue").openCursor(IDBKeyRange.only(queue));
      for (;;) {
        const cursor = await settle(req, "openCursor");
        if (cursor === null) break;
        if (cursor.primaryKey <= afterId) {
          // Keyset pagination: on to the first id above afterId under this key.
          cursor.continuePrimaryKey(queue, afterId + 1);
          continue;
        }
        page.push(cursor.value);
        if (page.length === limit) break;
        cursor.continue();
      }
      return page;
    });
  }

  /**
   * The ids (ascending) of at most `room` messages in `range` of index `list` that a BulkPlan
   * selects: its `sift(key)` of each key, and its `matches(record)` when it asks for the record.
   */
  select(plan, range, room) {
    return this.#run("readonly", async (store) => {
      const ids = [];
      const req = store.index("list").openKeyCursor(keyRange(range));
      for (;;) {
        const cursor = await settle(req, "openKeyCursor");
        if (cursor === null) break;
        const sift = plan.sift(cursor.key);
        const id = cursor.primaryKey;
        if (sift === 1 || (sift === 2 && plan.matches(await request("get", () => store.get(id))))) {
          ids.push(id);
          if (ids.length === room) break;
        }
        cursor.continue();
      }
      return ids;
    });
  }

  /** Reads the records of `ids` (undefined: gone) and writes what `step(records)` returns; resolves to how many. */
  updateMany(ids, step) {
    return this.#run("readwrite", async (store) => {
      const found = await Promise.all(ids.map((id) => request("get", () => store.get(id))));
      const written = step(found);
      putAll(store, written);
      return written.length;
    });
  }

  /** Reads the records of `ids` (undefined: gone) and deletes the ids `check(records)` returns; resolves to the deleted records. */
  deleteMany(ids, check) {
    return this.#run("readwrite", async (store) => {
      const found = await Promise.all(ids.map((id) => request("get", () => store.get(id))));
      const doomed = check(found);
      for (const id of doomed) store.delete(id);
      return found.filter((record) => record !== undefined && doomed.includes(record.id));
    });
  }

  /**
   * What a StatsPlan asks: the counts of its ranges, the first keys of `delayed` and `dead`, and
   * the walks of the claim lanes for the oldest due message; resolves to the statistics.
   */
  counts(plan) {
    return this.#run("readonly", async (store) => {
      const r = plan.ranges();
      const count = (index, range) => request("count", () => store.index(index).count(keyRange(range)));
      const counts = Promise.all([...r.byStatus.map((range) => count("list", range)), count("expiry", r.expired), count("delayed", r.delayed)]);
      const firsts = Promise.all([firstKey(store.index("delayed"), keyRange(r.delayed)), firstKey(store.index("dead"), keyRange(r.dead))]);
      const claim = store.index("claim");
      // One record at a time (after an outage, many thousands may have come due).
      await walk("openCursor", () => claim.openCursor(keyRange(r.timed)), (cursor) => plan.timed(cursor.value));
      await walk("openCursor", () => claim.openCursor(keyRange(r.ready)), (cursor) => !plan.ready(cursor.value));
      const [delayed, dead] = await firsts;
      return plan.finish(await counts, delayed, dead);
    });
  }

  /** The first key of `range` in index `index` (undefined when it is empty). */
  firstKey(index, range) {
    return this.#run("readonly", (store) => firstKey(store.index(index), keyRange(range)));
  }

  /** The names of the queues that hold messages, in IndexedDB's (UTF-16) order. */
  queues() {
    return this.#run("readonly", async (store) => {
      const names = [];
      await walk("openKeyCursor", () => store.index("queue").openKeyCursor(null, "nextunique"), (cursor) => {
        names.push(cursor.key);
      });
      return names;
    });
  }
}
