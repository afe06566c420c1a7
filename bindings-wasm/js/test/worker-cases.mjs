// The worker loop's (`Queue.process`) cases that every JavaScript place runs, environment-neutral:
// the WebAssembly backend in Node on fake-indexeddb (worker.test.mjs), the native module on SQLite
// files (bindings-node/tests/worker-cases.test.mjs) and Chromium's real IndexedDB
// (tests/browser/run.mjs, suite "worker"). worker.test.mjs holds the loop's other cases.
//
// Each case is `run(deadletter, fresh)`: `deadletter` the package's exports, `fresh()` the name
// of a new database (an IndexedDB name, or a file path).

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function same(got, want, what) {
  const [g, w] = [JSON.stringify(got), JSON.stringify(want)];
  if (g !== w) throw new Error(`check failed: ${what}: got ${g}, want ${w}`);
}

/**
 * One message of `queue` handled by `process(opts)`: the lease its claim granted, and the leases
 * its heartbeats asked for while the handler ran `runMs`.
 */
async function leasesOf(Queue, queue, opts, runMs) {
  await queue.enqueue("lease");
  const asked = [];
  queue.extend = (id, o) => {
    asked.push(o.leaseMs);
    return Queue.prototype.extend.call(queue, id, o);
  };
  const controller = new AbortController();
  let granted = null;
  try {
    await queue.process(async (m) => {
      granted = m.leaseExpiresAt.getTime() - m.updatedAt.getTime();
      await sleep(runMs);
      controller.abort();
    }, { ...opts, pollIntervalMs: 10, signal: controller.signal });
  } finally {
    delete queue.extend;
  }
  return { granted, heartbeats: [...new Set(asked)], beat: asked.length > 0 };
}

export const CASES = {
  async "process() leases by the call's leaseMs, else the queue's stored lease, else the database's, at each claim and heartbeat (finding N2)"({ open, Queue }, fresh) {
    const db = await open(fresh(), { leaseMs: 5000 });
    try {
      const stored = db.queue("stored");
      await stored.setSettings({ leaseMs: 400 });
      // Stored 400 ms: claimed for 400 ms, extended by 400 ms every 200 ms (the old loop: 5000).
      same(await leasesOf(Queue, stored, {}, 700), { granted: 400, heartbeats: [400], beat: true }, "the stored lease");
      // The call's own wins over the stored one.
      same(await leasesOf(Queue, stored, { leaseMs: 600 }, 700), { granted: 600, heartbeats: [600], beat: true }, "the call's lease");
      // No stored lease: the database's (5 s: no heartbeat within 300 ms).
      same(await leasesOf(Queue, db.queue("plain"), {}, 300), { granted: 5000, heartbeats: [], beat: false }, "the database's lease");
    } finally {
      db.close();
    }
  },
};

/** `queue.claimMany` rejecting with a `store` error the first `n` times, then the real one; `claims` gets each call's time. */
function failingClaims(Queue, DeadLetterError, queue, n, claims) {
  queue.claimMany = (...args) => {
    claims.push(Date.now());
    if (claims.length <= n) return Promise.reject(new DeadLetterError("store error: database is locked", { code: "store" }));
    return Queue.prototype.claimMany.apply(queue, args);
  };
}

Object.assign(CASES, {
  async "process() claims again after store errors while the database is open: 500 ms, then 1 s (tester T6, session 13)"({ open, Queue, DeadLetterError }, fresh) {
    // The Python loops' rule: a loop that ended on its claim's first store error (a file locked
    // past the busy timeout, an IndexedDB transaction aborted as the browser closed the
    // connection) left a service without a worker.
    const db = await open(fresh());
    const warned = [];
    const warn = console.warn;
    console.warn = (text) => warned.push(String(text));
    try {
      const queue = db.queue("outage");
      await queue.enqueue("after");
      const claims = [];
      failingClaims(Queue, DeadLetterError, queue, 2, claims);
      const controller = new AbortController();
      const handled = await queue.process(async () => controller.abort(), { pollIntervalMs: 10, signal: controller.signal });
      same(handled, 1, "handled");
      same(claims.length, 3, "claims");
      if (claims[1] - claims[0] < 490 || claims[2] - claims[1] < 990) throw new Error(`check failed: the waits, claims at ${claims}`);
      same(warned, [
        "deadletter: claiming failed (1 in a row), trying again in 500 ms: store error: database is locked",
        "deadletter: claiming failed (2 in a row), trying again in 1000 ms: store error: database is locked",
        "deadletter: claiming works again after 2 failures",
      ], "the warnings");
      same((await queue.get(1)).status, "succeeded", "the message");
    } finally {
      console.warn = warn;
      db.close();
    }
  },

  async "process() keeps the announced wait after a store error while jobs end meanwhile (tester T9, session 13)"({ open, Queue, DeadLetterError }, fresh) {
    // Each job that ended as the store failed ended the wait: the next claim came at once and
    // doubled the wait within milliseconds.
    const db = await open(fresh());
    const warn = console.warn;
    console.warn = () => {};
    try {
      const queue = db.queue("outage");
      for (let i = 0; i < 4; i += 1) await queue.enqueue(`m${i}`);
      const claims = [];
      // The first claim takes all four; the next two fail while the four jobs end one by one.
      queue.claimMany = (...args) => {
        claims.push(Date.now());
        if (claims.length === 2 || claims.length === 3) return Promise.reject(new DeadLetterError("store error: database is locked", { code: "store" }));
        return Queue.prototype.claimMany.apply(queue, args);
      };
      const controller = new AbortController();
      let started = 0;
      const processing = queue.process(
        async () => {
          started += 1;
          await sleep(100 * started); // ending at 100, 200, 300 and 400 ms: after the failures
        },
        { concurrency: 4, pollIntervalMs: 10, signal: controller.signal },
      );
      while (claims.length < 4) await sleep(10);
      controller.abort();
      same(await processing, 4, "handled");
      if (claims[2] - claims[1] < 490 || claims[3] - claims[2] < 990) throw new Error(`check failed: the waits, claims at ${claims.map((t) => t - claims[0])}`);
    } finally {
      console.warn = warn;
      db.close();
    }
  },

  async "process() rejects with the store error of a closed database, and with any other error, without waiting"({ open, Queue, DeadLetterError }, fresh) {
    const db = await open(fresh());
    const queue = db.queue("closing");
    await queue.enqueue("a");
    await queue.enqueue("b");
    let err = null;
    const started = Date.now();
    await queue.process(async () => db.close(), { pollIntervalMs: 10 }).catch((e) => (err = e));
    same([err?.code, /the database is closed/.test(err?.message)], ["store", true], "the error");
    if (Date.now() - started > 5000) throw new Error("check failed: waited for a closed database");
    const db2 = await open(fresh());
    try {
      const other = db2.queue("other");
      await other.enqueue("x");
      other.claimMany = () => Promise.reject(new DeadLetterError("validation failed: clock", { code: "validation_failed" }));
      let err2 = null;
      await other.process(async () => {}, { pollIntervalMs: 10 }).catch((e) => (err2 = e));
      same(err2?.code, "validation_failed", "another error");
    } finally {
      db2.close();
    }
  },
});
