// A worker thread of operations.test.mjs: opens database `workerData` in this thread's own
// fake-indexeddb and makes one message dead there.
import "fake-indexeddb/auto";
import { workerData } from "node:worker_threads";
import { open } from "../../../build/pkg/index.js";

const db = await open(workerData);
const q = db.queue("q");
await q.enqueue("theirs");
const c = await q.claim();
await q.fail(c.id, "in another thread", { leaseToken: c.leaseToken, retryable: false });
db.close();
