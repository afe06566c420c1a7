// What the package's errors say, in JavaScript's words (issue 19: what a new user, given only the
// README, found misleading), environment-neutral: run on the WebAssembly backend in Node on
// fake-indexeddb (error-texts.test.mjs) and on the native module over SQLite files
// (bindings-node/tests/error-texts.test.mjs). The codes are the conformance cases'; these cases
// hold the texts, and what a user's getter throws.
//
// Each case is `run(deadletter, fresh)`: `deadletter` the package's exports, `fresh()` the name
// of a new database (an IndexedDB name, or a file path).

const BASE = Date.UTC(2026, 0, 1);

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

function same(got, want, what) {
  const [g, w] = [JSON.stringify(got), JSON.stringify(want)];
  check(g === w, `${what}: got ${g}, want ${w}`);
}

/** What `fn()` throws or its promise rejects with (fails when it returns or resolves). */
async function failure(fn) {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error("check failed: expected a failure");
}

/** The `field: message` texts of a validation error (`items[i].field` for an item's). */
function texts(err, DeadLetterError) {
  check(err instanceof DeadLetterError && err.code === "validation_failed", `a validation error, not ${err}`);
  return err.errors.map((e) => `${e.index === undefined ? "" : `items[${e.index}].`}${e.field}: ${e.message}`);
}

export const CASES = {
  async "what a user's getter or Proxy throws rejects the call unchanged, read once, nothing written"(deadletter, fresh) {
    const { open } = deadletter;
    const mine = new RangeError("mine");
    const db = await open(fresh(), { clock: () => BASE });
    const q = db.queue("q");
    let reads = 0;
    const getter = {
      get delayMs() {
        reads += 1;
        throw mine;
      },
    };
    const proxy = new Proxy({}, { ownKeys: () => { throw mine; } });
    const calls = {
      enqueue: () => q.enqueue("a", getter),
      enqueueManyItem: () => q.enqueueMany([{ get payload() { throw mine; } }]),
      claimProxy: () => q.claim(proxy),
      listFilter: () => q.list({ get createdAfter() { throw mine; } }),
      queueBackoff: () => db.queue("r", { backoff: { get capMs() { throw mine; } } }),
      open: () => open(fresh(), { get leaseMs() { throw mine; } }),
    };
    for (const [name, call] of Object.entries(calls)) {
      check((await failure(call)) === mine, `${name} rejects with the user's error itself`);
    }
    same(reads, 1, "the getter's reads");
    // The calls still work, and nothing was written.
    same(await q.list(), [], "the messages");
    same((await q.enqueue("b", { delayMs: 0 })).payload, "b", "the next enqueue");
    db.close();
  },

  async "an invalid Date is said to be one, not a float"(deadletter, fresh) {
    const { open, DeadLetterError } = deadletter;
    const db = await open(fresh(), { clock: () => BASE });
    const q = db.queue("q");
    const bad = new Date(NaN);
    const instant = "must be a Date or an integer number of milliseconds since the epoch, got an invalid Date";
    same(texts(await failure(() => q.list({ createdAfter: bad })), DeadLetterError), [`createdAfter: ${instant}`], "list");
    same(
      texts(await failure(() => q.deleteAll({ deadBefore: bad, updatedAfter: new Date(BASE) })), DeadLetterError),
      [`deadBefore: ${instant}`],
      "deleteAll (a valid Date is fine)",
    );
    db.close();
    const invalid = await open(fresh(), { clock: () => bad });
    same(
      texts(await failure(() => invalid.queue("q").enqueue("a")), DeadLetterError),
      ["clock: must be a function returning a valid Date or a finite number of milliseconds, got an invalid Date"],
      "a clock",
    );
    invalid.close();
  },

  async "undefined is said undefined, null null"(deadletter, fresh) {
    const { open, backoffMs, DeadLetterError } = deadletter;
    const db = await open(fresh(), { clock: () => BASE });
    const q = db.queue("q");
    await q.enqueue("kept");
    const said = async (fn) => texts(await failure(fn), DeadLetterError);
    same(await said(() => q.get(undefined)), ["id: must be an integer, got undefined"], "get(undefined)");
    same(await said(() => q.get(null)), ["id: must be an integer, got null"], "get(null)");
    same(await said(() => q.enqueue(undefined)), ["payload: must be a string, got undefined"], "enqueue");
    same(
      await said(() => q.enqueueMany([{ maxRetries: 1 }, null])),
      ["items[0].payload: must be a string, got undefined", "items[1].payload: must be a string, got null"],
      "enqueueMany",
    );
    same(await said(() => q.fail(1)), ["error: must be a string, got undefined"], "fail");
    same(await said(() => q.move(undefined)), ["id: must be an integer, got undefined", "toQueue: must be a string, got undefined"], "move");
    same(await said(() => q.moveAll()), ["toQueue: must be a string, got undefined"], "moveAll");
    same(await said(() => q.extend(1)), ["leaseToken: must be a string, got undefined"], "extend");
    same(await said(() => q.extend(1, { leaseToken: null })), ["leaseToken: must be a string, got null"], "extend, null");
    same(await said(() => q.claimMany()), ["n: must be an integer, got undefined"], "claimMany()");
    same(await said(() => q.claimMany(null)), ["n: must be an integer, got null"], "claimMany(null)");
    same(await said(() => db.queue(undefined)), ["queue: must be a string, got undefined"], "queue");
    same(await said(() => backoffMs(undefined)), ["retryCount: must be an integer, got undefined"], "backoffMs");
    // claimMany claimed nothing on the way.
    same((await q.list()).map((m) => [m.payload, m.status]), [["kept", "pending"]], "the messages");
    db.close();
  },

  async "NaN and the infinities are said to be no finite number"(deadletter, fresh) {
    const { open, DeadLetterError } = deadletter;
    const db = await open(fresh(), { clock: () => BASE });
    const q = db.queue("q");
    const said = async (fn) => texts(await failure(fn), DeadLetterError);
    same(await said(() => q.enqueue("a", { delayMs: NaN })), ["delayMs: must be an integer, got NaN (not a finite number)"], "NaN");
    same(await said(() => q.claim({ leaseMs: Infinity })), ["leaseMs: must be an integer, got infinity (not a finite number)"], "Infinity");
    same(await said(() => q.get(-Infinity)), ["id: must be an integer, got -infinity (not a finite number)"], "-Infinity");
    same(await said(() => q.enqueue("a", { delayMs: 2.5 })), ["delayMs: must be an integer, got a float"], "2.5");
    db.close();
  },

  async "a clock's time beyond every instant is said as the clock returned it (as String() writes it)"(deadletter, fresh) {
    const { open, DeadLetterError } = deadletter;
    for (const [returned, said] of [[-1e20, "-100000000000000000000"], [1e21, "1e+21"], [-1e17, "-100000000000000000"]]) {
      const db = await open(fresh(), { clock: () => returned });
      const err = await failure(() => db.queue("q").enqueue("a"));
      check(err instanceof DeadLetterError, `${err}`);
      same([err.errors.length, err.errors[0].field, err.errors[0].code], [1, "clock", "out_of_range"], said);
      check(err.errors[0].message.startsWith(`gave ${said} ms since the epoch;`), err.errors[0].message);
      db.close();
    }
  },

  async "messages name JavaScript's methods and fields, never the core's snake_case"(deadletter, fresh) {
    const { open, DeadLetterError } = deadletter;
    const db = await open(fresh(), { clock: () => BASE });
    const q = db.queue("q");
    const dead = await q.enqueue("dead");
    const claimed = await q.claim();
    await q.fail(dead.id, "boom", { leaseToken: claimed.leaseToken, retryable: false });
    const said = [];
    for (const call of [
      () => q.deleteAll({ status: "pending" }),
      () => q.replayAll({ status: "pending" }),
      () => q.retryNowAll({ status: "dead" }),
      () => q.retryNowAll({ delayed: false }),
      () => q.moveAll("q"),
      () => q.move(dead.id, "q"),
      () => q.claimMany(0),
      () => q.enqueueMany("x"),
      () => q.list({ status: "gone" }),
    ]) {
      said.push(...texts(await failure(call), DeadLetterError));
    }
    const conflict = await failure(() => q.retryNow(dead.id));
    check(conflict instanceof DeadLetterError && conflict.code === "conflict", `${conflict}`);
    said.push(conflict.message);
    same(
      said.slice(0, 5),
      [
        "status: must be succeeded or dead (only finished messages are deleted); got pending",
        "status: must be dead (only dead messages are replayed); got pending",
        "status: must be pending (only pending messages wait for a retry); got dead",
        "delayed: must be true here (retrying now makes delayed messages due)",
        "toQueue: is the source queue too: the source and the target are the same queue",
      ],
      "the refusals",
    );
    same(said.at(-1), "cannot retry now message 1: it is dead", "the conflict");
    for (const text of said) check(!/[a-z]_[a-z]/.test(text), `no snake_case name in ${JSON.stringify(text)}`);
    db.close();
  },
};
