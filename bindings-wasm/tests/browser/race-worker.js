// A dedicated module worker of the race test. On `init` it opens the database named by the page
// and says ready; on `enqueue` (sent to both workers at once) it enqueues `count` messages whose
// idempotency keys cycle over `keys` distinct ones and posts what each enqueue returned; on
// `process` it runs the worker loop `queue.process` over the queue and says so; on `stop` it
// aborts the loop and posts the count it resolved to and the ids its handler saw.
// Workers have no import maps, so the page passes the package URL.

let db;
let queue;
let name;
let controller;
let loop;
const handledIds = [];

async function init({ pkgUrl, dbName, queueName }) {
  const { open } = await import(pkgUrl);
  db = await open(dbName);
  queue = db.queue(queueName);
  return { ready: true };
}

async function enqueue({ count, keys }) {
  const results = [];
  for (let i = 0; i < count; i += 1) {
    const key = `key-${i % keys}`;
    const m = await queue.enqueue(`payload of ${key}`, { idempotencyKey: key });
    results.push([key, m.id, m.deduplicated]);
  }
  return { enqueued: results };
}

function process({ concurrency }) {
  controller = new AbortController();
  loop = queue.process(async (message) => {
    handledIds.push(message.id);
    await new Promise((resolve) => setTimeout(resolve, 1)); // let the other worker's loop in
  }, { concurrency, pollIntervalMs: 20, signal: controller.signal });
  return { processing: true };
}

async function stop() {
  controller.abort();
  const handled = await loop;
  db.close();
  return { handled, ids: handledIds };
}

const steps = { init, enqueue, process, stop };

self.onmessage = async ({ data }) => {
  name ??= data.name;
  try {
    self.postMessage({ name, ...(await steps[data.step](data)) });
  } catch (err) {
    self.postMessage({ name, error: `${data.step}: ${err.name} ${err.code ?? ""}: ${err.message}` });
  }
};
