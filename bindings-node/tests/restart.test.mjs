// Restarts: a process enqueues or acks and is killed (SIGKILL) or exits without close(); the next
// process on the file finds everything that was acknowledged to the first, at both durabilities.
// And the event loop never waits on the disk: a 10 ms interval keeps firing while 1 000 acks
// commit at durability "full".
// Run: node --test bindings-node/tests/  (after make node)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PKG, deadletter } from "./package.mjs";

const { open } = deadletter;
const folder = mkdtempSync(join(tmpdir(), "deadletter-node-restart-"));
process.on("exit", () => rmSync(folder, { recursive: true, force: true }));
let files = 0;
const fresh = () => join(folder, `q${++files}.db`);
const entry = new URL("node/index.js", PKG).href;

/**
 * Runs `body` (module source, with `open`, `path` and `say(value)` in scope: `say` prints a line)
 * in a child process; `until(lines)` decides when to SIGKILL it (never: it exits by itself).
 * Resolves to the lines it printed and how it ended.
 */
function child(path, body, until = () => false) {
  const source = `const { open } = await import(${JSON.stringify(entry)});
    const path = ${JSON.stringify(path)};
    const say = (value) => process.stdout.write(value + "\\n");
    ${body}`;
  const proc = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = [];
  let rest = "";
  proc.stdout.on("data", (chunk) => {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop();
    lines.push(...parts);
    if (until(lines)) proc.kill("SIGKILL");
  });
  return new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ lines, code, signal })));
}

for (const durability of ["full", "normal"]) {
  test(`SIGKILL while enqueueing (${durability}): every enqueue that resolved is on the file`, async () => {
    const path = fresh();
    const body = `const q = (await open(path, { durability: "${durability}" })).queue("q");
      for (let i = 0; ; i += 1) say((await q.enqueue("m" + i)).id);`;
    const { lines, signal } = await child(path, body, (seen) => seen.length >= 300);
    assert.equal(signal, "SIGKILL");
    const db = await open(path);
    const q = db.queue("q");
    for (const id of lines) assert.equal((await q.get(Number(id))).status, "pending");
    assert.ok((await q.stats()).pending >= lines.length);
    db.close();
  });

  test(`SIGKILL while acking (${durability}): every ack that resolved stays succeeded, the rest come back`, async () => {
    const path = fresh();
    const setup = await open(path);
    await setup.queue("q").enqueueMany(Array.from({ length: 500 }, (_, i) => `m${i}`));
    setup.close();
    const body = `const q = (await open(path, { durability: "${durability}", leaseMs: 200 })).queue("q");
      for (;;) {
        const batch = await q.claimMany(8);
        await Promise.all(batch.map(async (m) => say((await q.succeed(m.id, { leaseToken: m.leaseToken })).id)));
      }`;
    const { lines, signal } = await child(path, body, (seen) => seen.length >= 200);
    assert.equal(signal, "SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 250)); // the killed process's leases run out
    const db = await open(path);
    const q = db.queue("q");
    for (const id of lines) assert.equal((await q.get(Number(id))).status, "succeeded");
    await q.reap();
    const s = await q.stats();
    assert.equal(s.processing, 0);
    assert.equal(s.pending + s.succeeded, 500);
    db.close();
  });
}

test("a process that exits without close() loses nothing acknowledged", async () => {
  const path = fresh();
  const body = `const db = await open(path);
    const q = db.queue("q");
    const ms = await Promise.all(Array.from({ length: 100 }, (_, i) => q.enqueue("m" + i)));
    say(ms.length);
    const m = await q.claim();
    await q.succeed(m.id, { leaseToken: m.leaseToken });
    say("acked " + m.id);
    process.exit(0);`;
  const { lines, code } = await child(path, body);
  assert.equal(code, 0);
  assert.deepEqual(lines, ["100", "acked 1"]);
  const db = await open(path);
  const s = await db.queue("q").stats();
  assert.deepEqual([s.pending, s.succeeded], [99, 1]);
  db.close();
});

test("the event loop keeps turning while 1 000 acks commit at durability full", async (t) => {
  const db = await open(fresh(), { durability: "full" });
  const q = db.queue("q");
  await q.enqueueMany(Array.from({ length: 1000 }, (_, i) => `m${i}`));
  let last = performance.now();
  let worst = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    ticks += 1;
  }, 10);
  const started = performance.now();
  // As a worker acks: a batch claimed, its 100 acks made at once (they share commits).
  for (let batch = 0; batch < 10; batch += 1) {
    const claimed = await q.claimMany(100);
    await Promise.all(claimed.map((m) => q.succeed(m.id, { leaseToken: m.leaseToken })));
  }
  const took = performance.now() - started;
  const during = ticks;
  await new Promise((resolve) => setTimeout(resolve, 30)); // one more tick after the last ack
  clearInterval(timer);
  t.diagnostic(`1000 acks (and 10 claims) in ${took.toFixed(0)} ms: ${during} ticks of 10 ms; the longest gap between two: ${worst.toFixed(1)} ms`);
  assert.equal((await q.stats()).succeeded, 1000);
  // Asserted in ticks, at least a quarter of those the time allows: an event loop that waited
  // on the disk ticks once a batch at most (the interval fires once after a stall), however
  // long the commits. The longest gap (under 50 ms) was asserted before: a loaded machine
  // stalls the process that long with no bug (81 ms in 1 of 4 runs at load 4).
  assert.ok(during >= Math.floor(took / 10 / 4), `${during} ticks of 10 ms in ${took.toFixed(0)} ms`);
  db.close();
});
