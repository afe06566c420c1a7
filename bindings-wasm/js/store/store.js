// The IndexedDB store: the object stores `messages` and `queues` (schema.js) read and written in
// transactions that await only their own requests (requests.js). It selects and persists; it never
// decides: every range it reads is one a plan named, every record it writes is one a plan returned
// (the plans of the WebAssembly module, src/plans.rs, claim.rs, bulk.rs, queue.rs: the core's
// steps). In particular `claim` expires the queue's overdue leases, takes out its expired
// messages, moves its ordering groups on and takes the first due messages in one transaction, so
// two tabs or workers can never take the same message; it reads the timed lane up to now
// (usually empty) and the head of the ready lane at once, so messages waiting for their backoff
// are never read, nor are the members of a group behind its head. No operation scans the whole
// store or loads it into memory.
//
// The clock of a write is read inside its transaction, once the transaction's first request (the
// queue's row in `queues`; for a step that reads no row, an ack say, the message: issue 20) has
// completed: the transaction holds its lock then (IndexedDB runs a
// readwrite transaction once the one before it on the same stores has finished), so a call that
// waited behind another tab's transaction decides with the instant it got its turn, and with the
// settings in force then, as the core's Context asks (issue 23, item 2). The clock is a
// synchronous function (`options.clock`, else `Date.now`), so reading it awaits nothing.

import { QUEUES, STORE, VERSION, open } from "./schema.js";
import { listsQueue, markExpiring } from "../core.js";
import { DeadLetterError } from "../errors.js";
import { ahead, commit, firstKey, firstRecords, keyRange, lastKeys, putAll, request, settle, storeError, transaction, walk, walkMerged } from "./requests.js";

/**
 * `n` fresh lease tokens: random version-4 UUIDs (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`): one
 * from `crypto.randomUUID` where there is one (secure contexts); else from one call of
 * `crypto.getRandomValues` (which pages served over plain HTTP have too). Synchronous, so a
 * transaction may draw them.
 */
export function leaseTokens(n) {
  // One token (a claim) in a secure context: the browser's own, the same format.
  if (n === 1 && typeof crypto.randomUUID === "function") return [crypto.randomUUID()];
  const bytes = crypto.getRandomValues(new Uint8Array(16 * n));
  const tokens = [];
  for (let i = 0; i < n; i += 1) {
    const b = bytes.subarray(16 * i, 16 * i + 16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    tokens.push(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
  }
  return tokens;
}

/** Both object stores: the transactions of writes. */
const BOTH = [STORE, QUEUES];
const MESSAGES = [STORE];

/**
 * The request of the queue's row (its record in `queues`, or undefined): a write's first, before
 * any other; the write reads the clock once it completed (`const row = await ...; clock()`, in
 * the continuation of that await: no promise of its own, issue 20).
 */
function rowRequest(queues, name) {
  return request("get", () => queues.get(name));
}

/**
 * Marks the records in `queues` of the queues `names` (a plan's `marks()`) as holding messages
 * with an expiry (schema 8: a claim reads the index `expiring` only for those): each record read,
 * and written back with the mark unless it had it (src/queue.rs's `markExpiring`).
 */
async function mark(queues, names) {
  for (const name of names) {
    const marked = markExpiring(name, await request("get", () => queues.get(name)));
    if (marked !== undefined) queues.put(marked);
  }
}

/**
 * Writes the records of a Book (src/groups.rs: the writes of an update or of a batch of replays)
 * with the bookkeeping of their ordering groups: those of `book.place(tails)`, given the tail
 * (last key of index `group`) of each group `book.tails()` names, read before the writes; then
 * those of `book.promote(heads)`, given the first live member of each group `book.left()` names,
 * read after them; then the marks of `book.marks()` in `queues` (none when the transaction is on
 * the messages alone: see `update`). Resolves to how many writes the book had.
 */
async function place(messages, book, queues) {
  try {
    const tails = book.tails();
    putAll(messages, book.place(tails.length === 0 ? tails : await lastKeys(messages, "group", tails)));
    const left = book.left();
    if (left.length > 0) putAll(messages, book.promote(await firstRecords(messages, "group", left)));
    const marks = book.marks();
    if (marks.length > 0) await mark(queues, marks);
    return book.size;
  } finally {
    book.free();
  }
}

/**
 * The step of an UpdatePlan on `record` (undefined: none) at `now` and `row`, with a move's read of
 * index `idempotency` (whether the target queue holds the message's key), and its write
 * (`queues`: the object store, when the transaction has it).
 */
async function step(messages, plan, now, row, record, queues) {
  const key = plan.key(record);
  const taken = key !== undefined && (await request("getKey", () => messages.index("idempotency").getKey(key))) !== undefined;
  await place(messages, plan.start(now, row, record, taken), queues);
}

/**
 * One page of records, at most `limit`, of `ranges` of index `list` (a plan's: one per status,
 * ids above the page's), in id order: one range is read at once; several, merged (`walkMerged`).
 */
async function page(messages, ranges, limit) {
  const list = messages.index("list");
  if (ranges.length === 1) return request("getAll", () => list.getAll(keyRange(ranges[0]), limit));
  const records = [];
  await walkMerged(list, ranges, (record) => records.push(record) < limit);
  return records;
}

/**
 * The words of a closed connection's `store` error for where the code runs: who else closed it,
 * and what to do. A page (or a worker it started) reloads. A service worker has no page to
 * reload: after an upgrade by a newer version, that version's service worker takes over once it
 * replaces this one (when every page this one controls is closed, or at once if the new one
 * calls `skipWaiting()`); after a delete or the browser's close, `open()` opens the database
 * again (session 10, tester T2).
 */
function here() {
  if (typeof ServiceWorkerGlobalScope === "function" && globalThis instanceof ServiceWorkerGlobalScope) {
    return {
      other: "another page or worker",
      newer: "another page or worker (a newer version of deadletter?)",
      self: "this service worker",
      upgraded: "the new version's service worker takes over once it replaces this one: close the pages this one controls (or the new one calls skipWaiting())",
      reopen: "open() it again",
    };
  }
  return {
    other: "another page",
    newer: "another page (a newer version of deadletter, in another tab?)",
    self: "this page",
    upgraded: "reload the page to use the new version",
    reopen: "reload the page to open it again",
  };
}

/** An open IndexedDB database holding messages. */
export class IdbStore {
  /** The connection; null once the browser closed it, until the next call opens it again. */
  #db;
  #factory;
  #name;
  /** The open that replaces a connection the browser closed, while it runs. */
  #opening = null;
  /** Rejects, with the `store` error of the calls then running, when the browser closes `#db`. */
  #lost;
  /** Null while open; once closed, why (the end of the `store` error of every later call: "" after `close()`). */
  #why = null;
  /** The key ranges of each queue's claim lanes (`ClaimPlan.lanes()`, which depend on the queue alone), by queue. */
  #lanes = new Map();

  /** Over `db`, the open connection to database `db.name` of `factory` (which opens it again). */
  constructor(db, factory) {
    this.#factory = factory;
    this.#name = db.name;
    this.#attach(db);
  }

  #attach(db) {
    this.#db = db;
    const name = JSON.stringify(db.name);
    // Another connection asks for a version change: another page (a newer deadletter in another
    // tab, or worker) upgrading the database, or deleting it (`newVersion` null). Closing lets it
    // go ahead instead of blocking it (its open would wait, and time out, while this page stays
    // open); every later call fails with a `store` error saying which, and what to do where this
    // runs (`here`).
    db.onversionchange = (event) =>
      this.close(
        event.newVersion == null
          ? `${here().other} deleted IndexedDB database ${name}; ${here().reopen}`
          : `${here().newer} upgraded IndexedDB database ${name} to version ${event.newVersion} (${here().self}'s deadletter uses version ${VERSION}); ${here().upgraded}`,
      );
    // Or the browser closed the connection (`close`: the site's data cleared, a storage failure):
    // the next call opens the database again, as the IndexedDB editors advise for a store a page
    // (or a service worker's Outbox, which holds its database) keeps (session 13, tester T7: a
    // service worker kept no request after the site's data was cleared, until it was replaced).
    // The calls running then fail with a `store` error, rather than wait for events Chromium
    // never fires on their transactions (session 13, tester T9: an enqueue, a claim and a stats
    // running at a clear were still pending 12 s later, and a `process` loop with them); what
    // the browser cleared is gone.
    let lose;
    this.#lost = new Promise((_, reject) => (lose = reject));
    this.#lost.catch(() => {}); // rejected whether a call runs or not
    db.onclose = () => {
      if (this.#db === db) this.#db = null;
      lose(
        new DeadLetterError(
          `store error: the browser closed IndexedDB database ${name} while this call ran (the site's data was cleared, or a storage failure): it may not have been written; the next call opens the database again`,
          { code: "store" },
        ),
      );
    };
  }

  /** Opens (creating or upgrading) database `name` of `factory` (see schema.js). */
  static async open(factory, name) {
    return new IdbStore(await open(factory, name), factory);
  }

  /** Whether the connection was closed, by `close()` or a version change (not by the browser: see `#attach`). */
  get closed() {
    return this.#why !== null;
  }

  /** The `store` error of a call on the closed connection: "the database is closed", and why. */
  refusal() {
    return new DeadLetterError(`store error: the database is closed${this.#why ? `: ${this.#why}` : ""}`, { code: "store" });
  }

  /** Closes the connection (running transactions finish first); `why`: for `refusal` (the first one given stays). */
  close(why = "") {
    this.#why ??= why;
    this.#db?.close();
  }

  /**
   * The connection the browser closed, opened again (one open for the calls that wait for it); a
   * failed open rejects the calls that waited, and the next call tries again.
   */
  #reopen() {
    this.#opening ??= open(this.#factory, this.#name).then(
      (db) => {
        this.#opening = null;
        if (this.closed) db.close();
        else this.#attach(db);
      },
      (err) => {
        this.#opening = null;
        throw err;
      },
    );
    return this.#opening;
  }

  #run(stores, mode, body, after) {
    if (this.closed) return Promise.reject(this.refusal());
    if (this.#db === null) return this.#reopen().then(() => this.#run(stores, mode, body, after));
    return Promise.race([transaction(this.#db, stores, mode, body, after), this.#lost]);
  }

  /**
   * Runs the EnqueuePlan `make()` makes in one transaction: the queue's row, the stored message
   * of each idempotency key and the tail of each group, read at once; then adds the records the
   * plan answers, in order, and marks the queue's row when `plan.marks()` says so (the first
   * message with an expiry). Resolves to `plan.finish(ids)` (the id of each record added), made
   * while the browser commits (see `transaction`).
   *
   * `make` (the core's check of the arguments) runs once the row's request is sent, while the
   * browser reads it (issue 20); what it throws aborts the transaction, which wrote nothing.
   */
  insert(queue, make, clock) {
    let plan;
    return this.#run(BOTH, "readwrite", async (messages, queues) => {
      const started = rowRequest(queues, queue);
      plan = make();
      // No keys, no groups (most enqueues): nothing read, nothing awaited for them (issue 20).
      const keys = plan.keys();
      const unique = keys.length > 0 ? messages.index("idempotency") : null;
      const found = unique && ahead(Promise.all(keys.map((key) => request("get", () => unique.get(key)))));
      const groups = plan.tails();
      const tails = groups.length > 0 ? lastKeys(messages, "group", groups) : null;
      const row = await started;
      const records = plan.start(clock(), row, found ? await found : keys, tails ? await tails : groups);
      const ids = ahead(Promise.all(records.map((record) => request("add", () => messages.add(record)))));
      const marks = plan.marks();
      if (marks.length > 0) await mark(queues, marks);
      // The adds are the last requests: commit with them, not after their answers (the ids).
      commit(messages);
      return ids;
    }, (ids) => plan.finish(ids));
  }

  /** The record of `id`, or undefined. */
  get(id) {
    return this.#run(MESSAGES, "readonly", (messages) => request("get", () => messages.get(id)));
  }

  /**
   * Runs the UpdatePlan `make()` makes in one transaction: the queue's row (only when the step
   * reads it, `plan.readsQueue`: an ack, say, does not, and its transaction is on `messages`
   * alone) and the record of `plan.id`, then the step's write. Resolves to
   * `answer(plan.finish())`, made while the browser commits (see `transaction`).
   *
   * `id`, given for a call whose step never reads the row (the backend's `succeed` and
   * `retryNow`), is the id the call was given: the transaction reads that record first and makes
   * the plan (the core's check of the arguments) while the browser reads it, as `insert` does
   * (issue 20: the ack's check was on the path before its transaction); what `make` throws
   * aborts the transaction, which wrote nothing.
   */
  update(queue, make, clock, answer, id) {
    let plan;
    const finish = () => answer(plan.finish());
    if (id !== undefined) {
      return this.#run(MESSAGES, "readwrite", async (messages) => {
        const first = ahead(request("get", () => messages.get(id)));
        plan = make();
        if (plan.readsQueue) throw new DeadLetterError("store error: an update that reads its queue's row", { code: "store" });
        // The same number once checked; read again otherwise (never, as the core checks ids).
        const record = await (plan.id === id ? first : request("get", () => messages.get(plan.id)));
        return step(messages, plan, clock(), undefined, record, undefined);
      }, finish);
    }
    plan = make();
    if (!plan.readsQueue) {
      return this.#run(MESSAGES, "readwrite", async (messages) => {
        const record = await request("get", () => messages.get(plan.id));
        return step(messages, plan, clock(), undefined, record, undefined);
      }, finish);
    }
    return this.#run(BOTH, "readwrite", async (messages, queues) => {
      const started = rowRequest(queues, queue);
      const found = request("get", () => messages.get(plan.id));
      const row = await started;
      return step(messages, plan, clock(), row, await found, queues);
    }, finish);
  }

  /**
   * Runs a ClaimPlan (src/claim.rs: the lanes of the `claim` index, `expiring`, `group`) in one
   * transaction; resolves to `answer(plan.finish())`, made while the browser commits (see
   * `transaction`). `make()` makes the plan once the queue row's request is sent, as for `insert`.
   */
  claim(queue, make, clock, answer) {
    let plan;
    return this.#run(BOTH, "readwrite", async (messages, queues) => {
      const started = rowRequest(queues, queue);
      plan = make();
      // Once per queue (a few hundred at most kept).
      let lanes = this.#lanes.get(queue);
      if (lanes === undefined) {
        if (this.#lanes.size >= 256) this.#lanes.clear();
        lanes = plan.lanes().map(keyRange);
        this.#lanes.set(queue, lanes);
      }
      const [timedLane, expiringAll, ready] = lanes;
      const index = messages.index("claim");
      const head = () => {
        const wanted = plan.wanted;
        return wanted > 0 ? request("getAll", () => index.getAll(ready, wanted)) : null;
      };
      // At once: the row, the first key of the timed lane, which says whether anything there has
      // come (usually not), and the head of the ready lane, last: the browser answers in that
      // order, and the steps that wait for the first key are done by the time the head comes
      // (issue 20: only the head's step and write follow the last answer).
      const timedFirst = ahead(firstKey(index, timedLane));
      let next = head();
      // The lease tokens of that first page (at most `wanted` records), drawn while the browser
      // reads, not between its answers and the writes (issue 20: 5 to 14 us of a claim).
      let tokens = next === null ? null : leaseTokens(plan.wanted);
      const row = await started;
      if (!plan.start(clock(), row)) return; // paused: a claim changes nothing
      // Only for a queue that may hold messages with an expiry (its row says so: schema 8), the
      // first key of those that expire, which says whether any expired.
      const expiring = plan.expires ? messages.index("expiring") : null;
      const expiringFirst = expiring !== null ? await firstKey(expiring, expiringAll) : undefined;
      const [timedRange, expiredRange] = plan.due(await timedFirst, expiringFirst);
      const timed = timedRange && keyRange(timedRange);
      const expired = expiredRange && keyRange(expiredRange);
      const timedPage = timed && request("getAll", () => index.getAll(timed, plan.pageSize));
      const expiredPage = expired && request("getAll", () => expiring.getAll(expired, plan.pageSize));
      if (timed) {
        putAll(messages, plan.timed(await timedPage));
        if (plan.walking) {
          // More came due than a page: the rest of the timed lane, one record in memory at a time.
          await walk("openCursor", () => index.openCursor(timed), (cursor) => putAll(messages, plan.timed([cursor.value])));
        }
      }
      if (expired) {
        putAll(messages, plan.expiring(await expiredPage));
        if (plan.sweeping) {
          await walk("openCursor", () => expiring.openCursor(expired), (cursor) => putAll(messages, plan.expiring([cursor.value])));
        }
        const counted = plan.row();
        if (counted !== undefined) queues.put(counted);
      }
      const left = plan.left();
      if (left.length > 0) putAll(messages, plan.promote(await firstRecords(messages, "group", left)));
      // Something moved into or out of the ready lane: its head is read again (claim order).
      if (plan.stale) next = head();
      while (next !== null) {
        const page = await next;
        putAll(messages, plan.ready(page, tokens ?? leaseTokens(plan.wanted)));
        tokens = null;
        next = head();
      }
    }, () => answer(plan.finish()));
  }

  /**
   * The pages of a ListPlan (src/bulk.rs: the core's Scan), in one read transaction: while
   * `plan.next()`, then `plan.feed(records)`, names a page `[ranges, limit]`, reads it (`page`)
   * and hands its records to `plan.feed`.
   */
  scan(plan) {
    return this.#run(MESSAGES, "readonly", async (messages) => {
      for (let next = plan.next(); next !== undefined; ) next = plan.feed(await page(messages, ...next));
    });
  }

  /**
   * The ids (ascending) of at most `room` messages that a BulkPlan selects (its `matches(record)`
   * of each record) in `ranges` of index `list` (the plan's: one per status), merged in id order.
   */
  select(plan, ranges, room) {
    return this.#run(MESSAGES, "readonly", async (messages) => {
      const ids = [];
      await walkMerged(messages.index("list"), ranges, (record) => !plan.matches(record) || ids.push(record.id) < room);
      return ids;
    });
  }

  /**
   * A batch of a BulkPlan's `replayAll`, `retryNowAll` or `moveAll`: the queue's row and the records of `ids` (undefined: gone), for a move whether
   * index `idempotency` holds the keys `plan.keys(records)` names (in the target queue), then the
   * steps with their groups' bookkeeping (in both queues for a move); resolves to how many.
   * A dry run (`dry`) reads the same in a read-only transaction and writes nothing: it resolves to
   * how many the steps would have written.
   */
  stepMany(queue, plan, ids, clock, dry) {
    return this.#run(BOTH, dry ? "readonly" : "readwrite", async (messages, queues) => {
      const started = rowRequest(queues, queue);
      const found = ahead(Promise.all(ids.map((id) => request("get", () => messages.get(id)))));
      const row = await started;
      const now = clock();
      const records = await found;
      // A moveAll's: whether the target queue holds each record's idempotency key.
      const unique = messages.index("idempotency");
      const taken = await Promise.all(plan.keys(records).map((key) => key && request("getKey", () => unique.getKey(key))));
      const book = plan.step(now, row, records, taken);
      if (!dry) return place(messages, book, queues);
      const { size } = book;
      book.free();
      return size;
    });
  }

  /**
   * Reads the records of `ids` (undefined: gone) and deletes the ids `check(records)` returns
   * (a dry run, `dry`: in a read-only transaction, deletes nothing); resolves to those records.
   */
  deleteMany(ids, check, dry = false) {
    return this.#run(MESSAGES, dry ? "readonly" : "readwrite", async (messages) => {
      const found = await Promise.all(ids.map((id) => request("get", () => messages.get(id))));
      const doomed = check(found);
      if (!dry) for (const id of doomed) messages.delete(id);
      return found.filter((record) => record !== undefined && doomed.includes(record.id));
    });
  }

  /**
   * What a StatsPlan asks: the queue's row, the counts of its ranges, the first keys of `delayed`
   * and `dead`, and the walks of the claim lanes for the oldest due message and the leases that
   * ran out; resolves to the statistics.
   */
  counts(queue, plan) {
    return this.#run(BOTH, "readonly", async (messages, queues) => {
      const row = request("get", () => queues.get(queue));
      const r = plan.ranges();
      const count = (index, range) => request("count", () => messages.index(index).count(keyRange(range)));
      const counts = Promise.all([...r.byStatus.map((range) => count("list", range)), count("delayed", r.delayed)]);
      const firsts = Promise.all([firstKey(messages.index("delayed"), keyRange(r.delayed)), firstKey(messages.index("dead"), keyRange(r.dead))]);
      const claim = messages.index("claim");
      // One record at a time (after an outage, many thousands may have come due).
      await walk("openCursor", () => claim.openCursor(keyRange(r.timed)), (cursor) => plan.timed(cursor.value));
      await walk("openCursor", () => claim.openCursor(keyRange(r.ready)), (cursor) => !plan.ready(cursor.value));
      const [delayed, dead] = await firsts;
      return plan.finish(await counts, delayed, dead, await row);
    });
  }

  /** The first key of `range` in index `index` (undefined when it is empty). */
  firstKey(index, range) {
    return this.#run(MESSAGES, "readonly", (messages) => firstKey(messages.index(index), keyRange(range)));
  }

  /** The record of queue `name` in `queues` (its settings, pause and counters), or undefined. */
  row(name) {
    return this.#run([QUEUES], "readonly", (queues) => request("get", () => queues.get(name)));
  }

  /**
   * Runs a RowPlan (setSettings, pause, resume): reads the queue's record, and the first key of
   * the plan's `messages()` range when it names one (whether the queue holds a message: asked
   * only for a name an enqueue refuses), and writes what the plan answers (null: delete the
   * record, back to the defaults).
   */
  writeRow(queue, plan) {
    const range = plan.messages();
    return this.#run(range === null ? [QUEUES] : BOTH, "readwrite", async (...stores) => {
      const queues = stores.at(-1);
      const record = ahead(request("get", () => queues.get(queue)));
      const message = range === null ? undefined : await firstKey(stores[0].index("list"), keyRange(range));
      const next = plan.step(await record, message);
      if (next === null) queues.delete(queue);
      else if (next !== undefined) queues.put(next);
    });
  }

  /**
   * The names of the queues that hold messages or have a row, each once, in IndexedDB's (UTF-16)
   * order per source: those of index `list` (`[queue, status, id, updatedAt]`) one key per queue,
   * each skipping to the first key above `[queue, []]` (an array sorts above every status), and
   * those whose record is a row (`listsQueue`: not one that only marks expiring messages).
   */
  queues() {
    return this.#run(BOTH, "readonly", async (messages, queues) => {
      const records = request("getAll", () => queues.getAll());
      const names = [];
      const what = "openKeyCursor";
      try {
        const req = messages.index("list").openKeyCursor();
        for (let cursor = await settle(req, what); cursor !== null; cursor = await settle(req, what)) {
          names.push(cursor.key[0]);
          cursor.continue([cursor.key[0], []]);
        }
      } catch (err) {
        throw err instanceof DeadLetterError ? err : storeError(what, err);
      }
      for (const record of await records) if (listsQueue(record.name, record)) names.push(record.name);
      return [...new Set(names)];
    });
  }
}
