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
