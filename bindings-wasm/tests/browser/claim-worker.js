// A dedicated module worker of the two-worker test: opens the database named by the page and
// says "ready"; on "go" (sent once both workers are ready, so neither gets a head start) claims
// from one queue until nothing is left, succeeds every message, and posts the ids it claimed.
// Workers have no import maps, so the page passes the package URL.

let queue;
let db;
let name;

async function init({ pkgUrl, dbName, queueName }) {
  const { open } = await import(pkgUrl);
  db = await open(dbName);
  queue = db.queue(queueName);
  self.postMessage({ name, ready: true });
}

async function drain() {
  const ids = [];
  try {
    for (;;) {
      const message = await queue.claim();
      if (message === null) break;
      ids.push(message.id);
      const done = await queue.succeed(message.id, { leaseToken: message.leaseToken });
      if (done.status !== "succeeded") throw new Error(`#${message.id} is ${done.status} after succeed`);
    }
    db.close();
    self.postMessage({ name, ids });
  } catch (err) {
    self.postMessage({ name, ids, error: `${err.name} ${err.code ?? ""}: ${err.message}` });
  }
}

self.onmessage = ({ data }) => {
  if (data.go) {
    drain();
  } else {
    name = data.name;
    init(data).catch((err) => self.postMessage({ name, ids: [], error: `open: ${err.name}: ${err.message}` }));
  }
};
