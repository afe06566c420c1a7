// IndexedDB requests and transactions as promises: the store's I/O, and its one discipline.
//
// An IndexedDB transaction commits by itself as soon as control returns to the event loop with
// none of its requests pending. Awaiting anything else inside it (a timer, `fetch`, the user's
// clock, a promise of another transaction) lets it commit half-way: the next request then throws
// `TransactionInactiveError`, or, with a careless store, the write lands in a second transaction
// and the read-decide-write is no longer atomic. So inside `transaction(...)` the store awaits only
// that transaction's own requests (a request's promise resolves in a microtask of its `success`
// event, while the transaction is still active), and the decisions between them are the core's
// synchronous plans (the WebAssembly module); the arguments are checked (for enqueue, claim and an ack,
// once the transaction's first request is sent: issue 20) and the lease tokens drawn without
// awaiting anything, and the clock, a synchronous function, is read inside it (see store.js). A request made after the transaction went inactive throws, and `transaction` reports
// it as a `store` error with nothing written (the store tests show it, in Node and in Chromium's
// IndexedDB).

import { DeadLetterError, Thrown } from "../errors.js";

/** The `store` DeadLetterError of a thrown IndexedDB error (a DOMException) or of `why`. */
export function storeError(context, why) {
  // Read name and message structurally: a DOMException of fake-indexeddb or of another realm is
  // not `instanceof` this realm's class.
  const text = why !== null && typeof why === "object" && typeof why.name === "string" && typeof why.message === "string"
    ? `${why.name}: ${why.message}`
    : String(why);
  return new DeadLetterError(`store error: IndexedDB ${context}: ${text}`, { code: "store" });
}

/** `request`'s result, or its error as a `store` DeadLetterError. */
export function settle(request, what) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(storeError(what, request.error));
  });
}

/**
 * Calls `make()` (an IndexedDB method that makes a request) and settles it; a method that throws
 * (`DataError`, `TransactionInactiveError`...) is a `store` error. The promise counts as handled:
 * a request issued ahead of the one the transaction awaits first fails with the transaction when
 * that one throws, and its rejection is not news then (awaiting it still throws).
 */
export function request(what, make) {
  let req;
  try {
    req = make();
  } catch (err) {
    return Promise.reject(storeError(what, err));
  }
  const settled = settle(req, what);
  settled.catch(ignore);
  return settled;
}

/** A rejection's handler that does nothing (one function for every request: issue 20). */
function ignore() {}

/** The `IDBKeyRange` of a range the WebAssembly module named: `[lower, upper, lowerOpen, upperOpen]`. */
export function keyRange([lower, upper, lowerOpen, upperOpen]) {
  return IDBKeyRange.bound(lower, upper, lowerOpen, upperOpen);
}

/**
 * Walks the cursor that `open()` makes (`index.openCursor(...)`, `openKeyCursor(...)`), calling
 * `visit(cursor)` for each position, synchronously; `visit` returns false to stop there. The
 * walk awaits only the cursor's own request.
 */
export async function walk(what, open, visit) {
  let req;
  try {
    req = open();
  } catch (err) {
    throw storeError(what, err);
  }
  for (;;) {
    const cursor = await settle(req, what);
    if (cursor === null || visit(cursor) === false) return;
    try {
      cursor.continue();
    } catch (err) {
      throw storeError(what, err);
    }
  }
}

/**
 * Walks the records of `ranges` (plans' ranges) of `index` in primary-key (id) order, each range
 * being in id order itself (one status of index `list`): one cursor per range, opened at once,
 * merged; `visit(record)` for each, synchronously, until it returns false. One record at a time
 * in memory per range; the walk awaits only its cursors' requests.
 */
export async function walkMerged(index, ranges, visit) {
  const what = "openCursor";
  let reqs;
  try {
    reqs = ranges.map((range) => index.openCursor(keyRange(range)));
  } catch (err) {
    throw storeError(what, err);
  }
  const cursors = await Promise.all(reqs.map((req) => settle(req, what)));
  for (;;) {
    let k = -1;
    for (const [i, cursor] of cursors.entries()) {
      if (cursor !== null && (k < 0 || cursor.primaryKey < cursors[k].primaryKey)) k = i;
    }
    if (k < 0 || visit(cursors[k].value) === false) return;
    try {
      cursors[k].continue();
    } catch (err) {
      throw storeError(what, err);
    }
    cursors[k] = await settle(reqs[k], what);
  }
}

/**
 * The first key of `range` in `index` (the last with `direction` "prev"), or undefined: the
 * cursor's first position, one request (issue 20: not a walk, whose async steps cost the claim
 * a few promises more).
 */
export function firstKey(index, range, direction = "next") {
  return request("openKeyCursor", () => index.openKeyCursor(range, direction)).then((cursor) => cursor?.key);
}

/**
 * `promise`, counted as handled (see `request`): what a transaction issues ahead of the request it
 * awaits first.
 */
export function ahead(promise) {
  promise.catch(ignore);
  return promise;
}

/** No ranges, nothing to read (most calls: a message without an ordering group). */
const NONE = Promise.resolve([]);

/**
 * The last key of each range a plan named (`[lower, upper, lowerOpen, upperOpen]`) in the index
 * `name` of `store`, read at once (the index is not even looked up for none: issue 20).
 */
export function lastKeys(store, name, ranges) {
  if (ranges.length === 0) return NONE;
  const index = store.index(name);
  return ahead(Promise.all(ranges.map((range) => firstKey(index, keyRange(range), "prev"))));
}

/** The first record of each range a plan named in the index `name` of `store` (undefined: none), read at once. */
export function firstRecords(store, name, ranges) {
  if (ranges.length === 0) return NONE;
  const index = store.index(name);
  return ahead(Promise.all(ranges.map((range) => request("getAll", () => index.getAll(keyRange(range), 1)).then((records) => records[0]))));
}

/**
 * Writes what a plan answered (without awaiting: requests run in order, a failure aborts the
 * transaction): each record is put, each number is the id of a record to delete.
 */
export function putAll(store, writes) {
  for (const write of writes) {
    if (typeof write === "number") store.delete(write);
    else store.put(write);
  }
}

/** The transactions `commit` asked to commit (`transaction` then does not ask again). */
const committing = new WeakSet();

/**
 * Asks the transaction of `store` (an IDBObjectStore) to commit once its requests made so far
 * are done (`IDBTransaction.commit()`, where there is one): for a body whose last requests are
 * made before it awaits their answers (an enqueue awaits its adds' ids), so that the commit goes
 * with them instead of one round trip later. No request may follow.
 */
export function commit(store) {
  const tx = store.transaction;
  committing.add(tx);
  if (typeof tx.commit === "function") {
    try {
      tx.commit();
    } catch {
      // already committing or finished: its requests tell
    }
  }
}

/**
 * Runs `body(...stores)` inside one transaction of `db` on the object stores `stores` (a name or
 * an array of one or two names; each passed to `body`, in order) and waits for it to commit; resolves to
 * what `body` resolved to, or, given `after`, to what `after(that)` returns. `after` (the plan's
 * `finish`: the call's answer, made by the core) runs once the commit is asked for, while the
 * browser commits, not after (issue 20: its CPU was on the path of the next call); it makes no
 * request. What it throws rejects the call once the transaction committed; a failed commit
 * rejects with the `store` error instead.
 *
 * `body` must await only requests of this transaction (see the top of this file). When it
 * throws, the transaction is aborted, so nothing it wrote stays, and the error is rethrown (what
 * the user's clock threw, boxed, unchanged); when the commit itself fails (quota, I/O, a request
 * made after the transaction went inactive) the result is a `store` error. Once `body` has
 * resolved, `commit()` (where there is one) sends the commit with the last requests instead of
 * after their answers.
 */
export async function transaction(db, stores, mode, body, after) {
  const names = typeof stores === "string" ? [stores] : stores;
  let tx;
  try {
    tx = db.transaction(names, mode);
  } catch (err) {
    throw storeError("transaction", err);
  }
  // Watched before the first await (the transaction may finish then), but once `body` has made
  // its first requests, which go out first (issue 20): its events fire in later tasks.
  let done;
  const watch = () =>
    (done ??= new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error ? storeError("transaction aborted", tx.error) : storeError("transaction", "aborted"));
    }));
  let value;
  try {
    // No array of the object stores made per call (issue 20): one or two.
    const first = tx.objectStore(names[0]);
    const running = names.length === 1 ? body(first) : body(first, tx.objectStore(names[1]));
    watch();
    value = await running;
  } catch (err) {
    try {
      tx.abort();
    } catch {
      // already finished (committed by itself, or aborted): fine
    }
    await watch().catch(() => {});
    throw err instanceof DeadLetterError || err instanceof Thrown ? err : storeError("transaction", err);
  }
  // Not twice: a second commit() throws (a DOMException made for nothing).
  if (!committing.has(tx) && typeof tx.commit === "function") {
    try {
      tx.commit();
    } catch {
      // already committing
    }
  }
  if (after === undefined) {
    await done;
    return value;
  }
  let answer;
  let refused = null;
  try {
    answer = after(value);
  } catch (err) {
    refused = { err };
  }
  await done;
  if (refused !== null) throw refused.err;
  return answer;
}
