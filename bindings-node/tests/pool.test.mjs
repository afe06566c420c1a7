// The database's threads (src/pool.rs), issue 19: a call is answered as soon as its outcome is
// final, not with the batch of its JavaScript tick; close() ends the threads it started. In a file
// of its own: the test of threads counts this process's.
// Run: node --test bindings-node/tests/  (after make node)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { deadletter } from "./package.mjs";

const { open } = deadletter;

const folder = mkdtempSync(join(tmpdir(), "deadletter-node-pool-"));
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));
let files = 0;
/** A new file path in the test folder. */
const fresh = () => join(folder, `q${++files}.db`);

/**
 * Another process holding the file's write lock (`BEGIN IMMEDIATE` in Python's sqlite3) until
 * `release()`, or until `fallbackMs` have passed (so that a build where a call waits for the lock
 * ends the test in its assertions, not in the 30 s busy timeout).
 */
async function holdWriteLock(path, fallbackMs) {
  const script =
    "import sqlite3, sys\n" +
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n" +
    "c.execute('BEGIN IMMEDIATE')\n" +
    "print('held', flush=True)\n" +
    "sys.stdin.readline()\n" +
    "c.execute('COMMIT')\n";
  const child = spawn("python3", ["-c", script, path], { stdio: ["pipe", "pipe", "inherit"] });
  const [line] = await once(child.stdout, "data");
  assert.equal(String(line).trim(), "held");
  let released = false;
  const release = () => {
    if (!released) {
      released = true;
      child.stdin.end("\n");
    }
  };
  const fallback = setTimeout(release, fallbackMs);
  const exited = once(child, "exit");
  return {
    release: async () => {
      clearTimeout(fallback);
      const first = !released;
      release();
      await exited;
      return first;
    },
    get released() {
      return released;
    },
  };
}

/** A database with one message committed on queue "q", and another process holding its write lock. */
async function queueBehindLock() {
  const path = fresh();
  const db = await open(path);
  const q = db.queue("q");
  await q.enqueue("before");
  return { db, q, lock: await holdWriteLock(path, 10_000) };
}

test("a read and a refused call made in the same tick as a write are answered while another process holds the write lock; the write after its commit", async () => {
  const { db, q, lock } = await queueBehindLock();
  const events = [];
  const seen = (name) => (value) => {
    events.push(name);
    return value;
  };
  // One tick: the three calls run as one batch on one thread.
  const read = q.stats().then(seen("read"));
  const refused = q.enqueue("x", { maxRetries: -1 }).then(seen("refused answered"), (err) => {
    events.push("refused");
    return err;
  });
  const write = q.enqueue("w").then(seen("write"));
  const stats = await read;
  const err = await refused;
  events.push(lock.released ? "released by the fallback" : "released");
  assert.equal(await lock.release(), true, "the lock was still held when the read was answered");
  const written = await write;
  assert.deepEqual(events, ["read", "refused", "released", "write"]);
  assert.equal(stats.pending, 1, "the read saw the committed state");
  assert.equal(err.code, "validation_failed");
  assert.equal(written.payload, "w");
  assert.equal((await q.stats()).pending, 2);
  db.close();
});

test("a read made after a write in the same tick does not wait behind it for another process's write lock", async () => {
  const { db, q, lock } = await queueBehindLock();
  const events = [];
  const write = q.enqueue("w").then((m) => {
    events.push("write");
    return m;
  });
  const stats = await q.stats().then((s) => {
    events.push("read");
    return s;
  });
  events.push(lock.released ? "released by the fallback" : "released");
  assert.equal(await lock.release(), true, "the lock was still held when the read was answered");
  assert.equal((await write).payload, "w");
  assert.deepEqual(events, ["read", "released", "write"]);
  assert.equal(stats.pending, 1, "the read saw the committed state, without the write of its tick");
  assert.equal((await q.stats()).pending, 2);
  db.close();
});

/** This process's threads named `deadletter` or `deadletter-…` (the pool's, the checkpoints'). */
function deadletterThreads() {
  return readdirSync("/proc/self/task").filter((task) => {
    try {
      return readFileSync(`/proc/self/task/${task}/comm`, "utf8").startsWith("deadletter");
    } catch {
      return false; // ended meanwhile
    }
  }).length;
}

/** The count of `count()` once it is `expected`, or what it was at `deadlineMs`. */
async function settlesAt(count, expected, deadlineMs) {
  const until = Date.now() + deadlineMs;
  let now = count();
  while (now !== expected && Date.now() < until) {
    await sleep(20);
    now = count();
  }
  return now;
}

test("close() ends the threads the database started, once its calls are settled", async () => {
  // The test above closed its database: none of its threads is left (none other in this file).
  assert.equal(await settlesAt(deadletterThreads, 0, 5_000), 0);
  for (let i = 0; i < 40; i += 1) {
    const db = await open(fresh(), { durability: "normal" });
    const q = db.queue("q");
    // Calls at once and in turn: the pool starts a thread or more.
    await Promise.all([q.enqueue("a"), q.enqueue("b"), q.stats()]);
    await q.claim();
    db.close();
  }
  // Within the threads' idle timeout (10 s), which ended them before.
  assert.equal(await settlesAt(deadletterThreads, 0, 5_000), 0);
  // A database closed with calls out lets them settle first, then ends its threads.
  const db = await open(fresh());
  const q = db.queue("q");
  const calls = Array.from({ length: 20 }, (_, i) => q.enqueue(`m${i}`));
  db.close();
  assert.equal((await Promise.all(calls)).length, 20);
  assert.equal(await settlesAt(deadletterThreads, 0, 5_000), 0);
});
