// The raw reference of `make bench-node`: a hand-written queue on better-sqlite3 (one table, one
// index, one statement per step, each its own transaction, WAL at the durability asked), run
// synchronously on the calling thread. Loaded as a worker thread (workerData.rawQueue), it serves
// the same steps to the thread that started it, one message per step: the reference run off the
// JavaScript thread, as the issue asks of deadletter (the event loop never waits on the disk).
import { createRequire } from "node:module";
import { isMainThread, parentPort, workerData } from "node:worker_threads";

const Database = createRequire(import.meta.url)("better-sqlite3");

/** The queue in a new file at `path`: `enqueue()`, `claim()` -> { id, lease_token }, `succeed(id, token)`, `close()`. */
export function rawQueue(path, durability) {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${durability === "full" ? "FULL" : "NORMAL"}`);
  db.exec(`create table jobs (id integer primary key, queue text not null, payload text not null,
    status text not null, lease_token text, lease_expires_at integer, created_at integer not null)`);
  db.exec("create index claim on jobs (queue, status, created_at, id)");
  const insert = db.prepare("insert into jobs (queue, payload, status, created_at) values (?, ?, 'pending', ?)");
  const claim = db.prepare(`update jobs set status = 'processing', lease_token = ?, lease_expires_at = ?
    where id = (select id from jobs where queue = ? and status = 'pending' order by created_at, id limit 1)
    returning id, lease_token`);
  const succeed = db.prepare("update jobs set status = 'succeeded', lease_token = null where id = ? and lease_token = ? and status = 'processing'");
  return {
    enqueue: () => insert.run("bench", "x", Date.now()).lastInsertRowid,
    claim: () => claim.get(crypto.randomUUID(), Date.now() + 30_000, "bench"),
    succeed: (id, token) => succeed.run(id, token).changes,
    close: () => db.close(),
  };
}

if (!isMainThread && workerData?.rawQueue) {
  const q = rawQueue(workerData.path, workerData.durability);
  parentPort.on("message", ([step, ...args]) => parentPort.postMessage(q[step](...args)));
}
