// A dedicated module worker of the dead-letter test: opens the database named by the page, makes
// one message dead (enqueue with maxRetries 1, claim, fail) and posts the message as `fail`
// returned it, Dates as ISO strings. Workers have no import maps, so the page passes the package URL.

self.onmessage = async ({ data: { pkgUrl, dbName, queueName, error } }) => {
  try {
    const { open } = await import(pkgUrl);
    const db = await open(dbName);
    const queue = db.queue(queueName);
    const m = await queue.enqueue("poison from a worker", { maxRetries: 1 });
    const claimed = await queue.claim();
    if (claimed?.id !== m.id) throw new Error(`claimed ${claimed?.id}, expected ${m.id}`);
    const dead = await queue.fail(m.id, error, { leaseToken: claimed.leaseToken });
    db.close();
    self.postMessage({ dead: { ...dead, deadAt: dead.deadAt.toISOString() } });
  } catch (err) {
    self.postMessage({ error: `${err.name} ${err.code ?? ""}: ${err.message}` });
  }
};
