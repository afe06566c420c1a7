// Benchmark, not a test (`make bench-node`): the npm package in Node on a SQLite file, end to end
// (enqueue + claim + succeed of each message), in messages/s:
// - one at a time (one loop: enqueue, claim, succeed, each awaited), and through the worker loop
//   q.process({ concurrency: 8 }) fed by 8 producers, at durability "full" and "normal";
// - the raw reference: a hand-written queue on better-sqlite3 (synchronous, on the JavaScript
//   thread: one table, one index, one statement per step, each its own transaction) at the same
//   durability (WAL, synchronous FULL or NORMAL; raw_queue.mjs); and, no goal, the same queue on a
//   worker thread, each step a message there and back: the reference kept off the JavaScript
//   thread, as the issue requires of deadletter;
// - BullMQ on a local redis-server with an append-only file, `appendfsync always` (every write
//   synced: equal to "full") and `everysec` (its default once the AOF is on: equal to "normal",
//   safe against a crash of the process, not of the machine); one at a time through a Worker's
//   manual API (add, getNextJob, moveToCompleted), and a Worker with concurrency 8 fed by 8
//   producers.
// - for the decomposition (no goal): the same loop from Python (the repository's .venv, `make
//   python`) on the same store, a call on the calling thread rather than the database's threads:
//   what is the store's cost and what the hop there and back adds.
// Rounds interleave every scenario, so that a slower moment of the machine slows all of them;
// each line prints min / median / max of the rounds, and each ratio is taken per round.
// With BEFORE_PKG=DIR (another build of the package, e.g. of the commit before a change), the
// deadletter scenarios also run on it, interleaved in the same rounds, with the per-round ratios
// of this build to it.
// Usage: [BEFORE_PKG=DIR] node bindings-node/benches/throughput.mjs [ROUNDS]   (after make node
// and scripts/setup.sh bench-node)
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { rawQueue } from "./raw_queue.mjs";

const ROUNDS = Number(process.argv[2] ?? 5);
/** Messages per scenario and round: fewer where every commit waits for the disk. */
const SIZE = { full: 400, normal: 4000 };
const CONCURRENCY = 8;

const require = createRequire(import.meta.url);
const bullmq = require("bullmq");
const { open } = await import(process.env.DEADLETTER_PKG ? `${process.env.DEADLETTER_PKG}/node/index.js` : new URL("../../build/pkg/node/index.js", import.meta.url));
/** The build compared with (BEFORE_PKG), or null. */
const before = process.env.BEFORE_PKG ? await import(`${process.env.BEFORE_PKG}/node/index.js`) : null;

const folder = mkdtempSync(join(tmpdir(), "deadletter-bench-node-"));
let serial = 0;
const fresh = () => join(folder, `b${++serial}.db`);

/** Messages/s of `run(n)`, which handles `n` messages end to end. */
async function rate(n, run) {
  const started = performance.now();
  await run(n);
  return n / ((performance.now() - started) / 1000);
}

// deadletter ------------------------------------------------------------------------------------

async function deadletterOneByOne(durability, n, opening = open) {
  const db = await opening(fresh(), { durability });
  const q = db.queue("bench");
  const r = await rate(n, async () => {
    for (let i = 0; i < n; i += 1) {
      await q.enqueue("x");
      const m = await q.claim();
      await q.succeed(m.id, { leaseToken: m.leaseToken });
    }
  });
  db.close();
  return r;
}

async function deadletterProcess(durability, n, opening = open) {
  const db = await opening(fresh(), { durability });
  const q = db.queue("bench");
  const controller = new AbortController();
  const r = await rate(n, async () => {
    let handled = 0;
    let allHandled;
    const done = new Promise((resolve) => {
      allHandled = resolve;
    });
    const loop = q.process(
      async () => {
        if (++handled === n) allHandled();
      },
      { concurrency: CONCURRENCY, pollIntervalMs: 1, signal: controller.signal },
    );
    let made = 0;
    const producer = async () => {
      while (made < n) {
        made += 1;
        await q.enqueue("x");
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, producer));
    await done;
    controller.abort();
    await loop; // the last acks
  });
  db.close();
  return r;
}

// better-sqlite3: the raw reference --------------------------------------------------------------

async function rawOneByOne(durability, n) {
  const q = rawQueue(fresh(), durability);
  const r = await rate(n, () => {
    for (let i = 0; i < n; i += 1) {
      q.enqueue();
      const m = q.claim();
      q.succeed(m.id, m.lease_token);
    }
  });
  q.close();
  return r;
}

/** The same queue on a worker thread, each step a message there and back: off the JavaScript thread. */
async function rawWorkerOneByOne(durability, n) {
  const worker = new Worker(new URL("./raw_queue.mjs", import.meta.url), { workerData: { rawQueue: true, path: fresh(), durability } });
  const step = (...message) =>
    new Promise((resolve) => {
      worker.once("message", resolve);
      worker.postMessage(message);
    });
  await step("enqueue"); // the worker is up
  await step("succeed", (await step("claim")).id, "");
  const r = await rate(n, async () => {
    for (let i = 0; i < n; i += 1) {
      await step("enqueue");
      const m = await step("claim");
      await step("succeed", m.id, m.lease_token);
    }
  });
  await worker.terminate();
  return r;
}

// The same store from Python --------------------------------------------------------------------

const PYTHON = new URL("../../.venv/bin/python", import.meta.url).pathname;
const PYTHON_LOOP = `import sys, time, deadletter
db = deadletter.open(sys.argv[1], durability=sys.argv[2])
q = db.queue("bench")
n = int(sys.argv[3])
started = time.perf_counter()
for _ in range(n):
    q.enqueue("x")
    m = q.claim()
    q.succeed(m.id, lease_token=m.lease_token)
print(n / (time.perf_counter() - started))
db.close()`;

function pythonOneByOne(durability, n) {
  const run = spawnSync(PYTHON, ["-c", PYTHON_LOOP, fresh(), durability, String(n)], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`python: ${run.stderr}`);
  return Number(run.stdout);
}

// BullMQ on redis-server ------------------------------------------------------------------------

/** A redis-server with an append-only file synced as `appendfsync` says, on a free port. */
async function redis(appendfsync) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const dir = mkdtempSync(join(folder, `redis-${appendfsync}-`));
  const server = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
    "--appendonly", "yes", "--appendfsync", appendfsync], { stdio: "ignore" });
  const connection = { host: "127.0.0.1", port, maxRetriesPerRequest: null };
  const probe = new bullmq.Queue("probe", { connection });
  for (let tries = 0; ; tries += 1) {
    try {
      await probe.client.then((client) => client.ping());
      break;
    } catch (err) {
      if (tries > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  await probe.close();
  return { connection, stop: () => server.kill() };
}

async function bullOneByOne(connection, n) {
  const name = `one-${++serial}`;
  const queue = new bullmq.Queue(name, { connection });
  const worker = new bullmq.Worker(name, null, { connection, autorun: false });
  const token = "bench";
  const r = await rate(n, async () => {
    for (let i = 0; i < n; i += 1) {
      await queue.add("job", "x");
      const job = await worker.getNextJob(token);
      await job.moveToCompleted("ok", token, false);
    }
  });
  await worker.close();
  await queue.close();
  return r;
}

async function bullWorker(connection, n) {
  const name = `many-${++serial}`;
  const queue = new bullmq.Queue(name, { connection });
  let completed = 0;
  let allCompleted;
  const done = new Promise((resolve) => {
    allCompleted = resolve;
  });
  const worker = new bullmq.Worker(name, async () => {}, { connection, concurrency: CONCURRENCY, autorun: false });
  worker.on("completed", () => {
    if (++completed === n) allCompleted();
  });
  const r = await rate(n, async () => {
    worker.run();
    let made = 0;
    const producer = async () => {
      while (made < n) {
        made += 1;
        await queue.add("job", "x");
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, producer));
    await done;
  });
  await worker.close();
  await queue.close();
  return r;
}

// The run -----------------------------------------------------------------------------------------

const servers = { full: await redis("always"), normal: await redis("everysec") };
const pythonWorks = existsSync(PYTHON) && spawnSync(PYTHON, ["-c", "import deadletter; deadletter.open(':memory:')"]).status === 0;
const scenarios = [];
for (const durability of ["full", "normal"]) {
  const n = SIZE[durability];
  const redisName = durability === "full" ? "appendfsync always" : "appendfsync everysec";
  const connection = servers[durability].connection;
  scenarios.push(
    { durability, key: "one", label: "deadletter, one at a time", run: () => deadletterOneByOne(durability, n) },
    { durability, key: "process", label: `deadletter, process({ concurrency: ${CONCURRENCY} })`, run: () => deadletterProcess(durability, n) },
    ...(before
      ? [
          { durability, key: "oneBefore", label: "(BEFORE_PKG, one at a time)", run: () => deadletterOneByOne(durability, n, before.open) },
          { durability, key: "processBefore", label: `(BEFORE_PKG, concurrency ${CONCURRENCY})`, run: () => deadletterProcess(durability, n, before.open) },
        ]
      : []),
    { durability, key: "raw", label: "better-sqlite3 queue, one at a time", run: () => rawOneByOne(durability, n) },
    { durability, key: "rawWorker", label: "(the same on a worker thread, a message a step)", run: () => rawWorkerOneByOne(durability, n) },
    ...(pythonWorks ? [{ durability, key: "python", label: "(Python, same store, one at a time)", run: () => pythonOneByOne(durability, n) }] : []),
    { durability, key: "bullOne", label: `BullMQ (${redisName}), one at a time`, run: () => bullOneByOne(connection, n) },
    { durability, key: "bullMany", label: `BullMQ (${redisName}), Worker concurrency ${CONCURRENCY}`, run: () => bullWorker(connection, n) },
  );
}

const results = new Map(scenarios.map((s) => [s, []]));
try {
  // A warm-up round (JIT, page cache, connections) that is not counted.
  for (const s of scenarios) await s.run();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const s of scenarios) results.get(s).push(await s.run());
  }
} finally {
  for (const server of Object.values(servers)) server.stop();
  rmSync(folder, { recursive: true, force: true });
}

const sorted = (values) => [...values].sort((a, b) => a - b);
const triple = (values, digits) => {
  const v = sorted(values);
  return [v[0], v[Math.floor(v.length / 2)], v.at(-1)].map((x) => x.toFixed(digits).padStart(digits ? 6 : 7)).join(" / ");
};
const of = (durability, key) => results.get(scenarios.find((s) => s.durability === durability && s.key === key));

console.log(`bench-node: end-to-end enqueue + claim + succeed, messages/s; ${ROUNDS} rounds (min / median / max)`);
console.log(`Node ${process.version}, ${SIZE.full} messages per round at full, ${SIZE.normal} at normal`);
for (const durability of ["full", "normal"]) {
  console.log(`\ndurability ${durability}${durability === "full" ? " (every commit synced)" : " (synced at checkpoints)"}:`);
  for (const s of scenarios.filter((x) => x.durability === durability)) {
    console.log(`  ${s.label.padEnd(46)} ${triple(results.get(s), 0)}`);
  }
}

/** Per-round ratios of two scenarios. */
const ratio = (a, b) => a.map((x, i) => x / b[i]);
const goals = [
  // No goal: this build against BEFORE_PKG's, round by round.
  ...(before
    ? ["full", "normal"].flatMap((d) => [
        [`one at a time / BEFORE_PKG's, ${d}`, ratio(of(d, "one"), of(d, "oneBefore")), "", null],
        [`concurrency 8 / BEFORE_PKG's, ${d}`, ratio(of(d, "process"), of(d, "processBefore")), "", null],
      ])
    : []),
  // No goal: the references that tell the hop's cost from the store's.
  ["one at a time / the same off the JS thread, full", ratio(of("full", "one"), of("full", "rawWorker")), "", null],
  ["one at a time / the same off the JS thread, normal", ratio(of("normal", "one"), of("normal", "rawWorker")), "", null],
  ...(pythonWorks
    ? [
        ["one at a time / Python same store, full", ratio(of("full", "one"), of("full", "python")), "", null],
        ["one at a time / Python same store, normal", ratio(of("normal", "one"), of("normal", "python")), "", null],
      ]
    : []),
  ["one at a time / better-sqlite3, full", ratio(of("full", "one"), of("full", "raw")), ">= 0.8", (x) => x >= 0.8],
  ["one at a time / better-sqlite3, normal", ratio(of("normal", "one"), of("normal", "raw")), ">= 0.8", (x) => x >= 0.8],
  ["concurrency 8 / one at a time, full", ratio(of("full", "process"), of("full", "one")), ">= 3", (x) => x >= 3],
  ["one at a time / BullMQ always, full", ratio(of("full", "one"), of("full", "bullOne")), "> 1", (x) => x > 1],
  ["concurrency 8 / BullMQ always, full", ratio(of("full", "process"), of("full", "bullMany")), "> 1", (x) => x > 1],
  ["one at a time / BullMQ everysec, normal", ratio(of("normal", "one"), of("normal", "bullOne")), "> 1", (x) => x > 1],
  ["concurrency 8 / BullMQ everysec, normal", ratio(of("normal", "process"), of("normal", "bullMany")), "> 1", (x) => x > 1],
];
console.log("\nratios, per round (min / median / max), against the goals (on the median):");
for (const [label, values, goal, met] of goals) {
  const median = sorted(values)[Math.floor(values.length / 2)];
  const verdict = met === null ? "(reference, no goal)" : `goal ${goal.padEnd(6)} ${met(median) ? "met" : "NOT met"}`;
  console.log(`  ${label.padEnd(50)} ${triple(values, 2)}   ${verdict}`);
}
