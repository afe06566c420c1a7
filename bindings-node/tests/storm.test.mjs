// One file, two languages, under crashes: 4 Node processes (storm/worker.mjs, the npm package) and
// 2 Python processes (storm/worker.py, the Python package) drain DEADLETTER_STORM messages
// (default 10 000) from one SQLite file, failing a random quarter of
// their attempts, while this process SIGKILLs a random worker every few hundred milliseconds and
// starts another. Then, from the file and the workers' logs (a line per claim and per settled ack
// or failure):
// - every message ended (succeeded, or dead after its 3 attempts), as its history says: every
//   failure a worker saw settle is in the message's errors, every other entry is a failure of a
//   killed worker or "lease expired"; a message whose ack settled is succeeded;
// - no message was held by two live leases: each claim of a message came after the lease of the
//   claim before it had run out, or after that claim's failure had settled (none after an ack).
// Run: node --test bindings-node/tests/storm.test.mjs  (after make python node)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PKG, deadletter } from "./package.mjs";

const N = Number(process.env.DEADLETTER_STORM ?? 10_000);
const FAIL_RATE = 0.25;
const PYTHON = process.env.DEADLETTER_PYTHON ?? fileURLToPath(new URL("../../.venv/bin/python", import.meta.url));
const here = (name) => fileURLToPath(new URL(`storm/${name}`, import.meta.url));

test(`4 Node and 2 Python processes drain ${N} messages from one file through SIGKILLs`, { timeout: 900_000, skip: !existsSync(PYTHON) && `no Python package at ${PYTHON} (make python)` }, async (t) => {
  const folder = mkdtempSync(join(tmpdir(), "deadletter-storm-"));
  t.after(() => process.env.DEADLETTER_KEEP ? t.diagnostic(folder) : rmSync(folder, { recursive: true, force: true }));
  const file = join(folder, "storm.db");
  const db = await deadletter.open(file, { durability: "normal" });
  const q = db.queue("storm");
  for (let i = 0; i < N; i += 1000) {
    await q.enqueueMany(Array.from({ length: Math.min(1000, N - i) }, (_, j) => ({ payload: String(i + j), maxRetries: 3 })));
  }

  const entry = new URL("node/index.js", PKG).href;
  const kinds = [
    ...Array.from({ length: 4 }, () => ({ kind: "node", command: process.execPath, args: (log) => [here("worker.mjs"), entry, file, log, FAIL_RATE] })),
    ...Array.from({ length: 2 }, () => ({ kind: "python", command: PYTHON, args: (log) => [here("worker.py"), file, log, FAIL_RATE] })),
  ];
  const logs = [];
  const failures = [];
  const start = (slot) => {
    const log = join(folder, `worker-${logs.length}.log`);
    logs.push(log);
    const child = spawn(slot.command, slot.args(log).map(String), { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("exit", (code, signal) => {
      if (signal !== "SIGKILL") failures.push(`${slot.kind} worker exited with ${code ?? signal}: ${stderr}`);
    });
    return child;
  };
  const running = kinds.map((slot) => ({ slot, child: start(slot) }));
  const kills = { node: 0, python: 0 };
  const deadline = Date.now() + 840_000;
  try {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 400));
      assert.deepEqual(failures, []);
      const s = await q.stats();
      if (s.pending === 0 && s.processing === 0) break;
      assert.ok(Date.now() < deadline, `not drained in time: ${JSON.stringify(s)}`);
      const victim = running[Math.floor(Math.random() * running.length)];
      victim.child.kill("SIGKILL");
      kills[victim.slot.kind] += 1;
      victim.child = start(victim.slot);
    }
  } finally {
    for (const { child } of running) child.kill("SIGKILL");
  }
  t.diagnostic(`SIGKILLs: ${kills.node} Node, ${kills.python} Python workers`);
  assert.ok(kills.node > 0 && kills.python > 0, "both kinds were killed");

  // The file's messages, and what the workers saw settle.
  const messages = new Map();
  for (let after = 0; ; ) {
    const page = await q.list({ limit: 1000, afterId: after });
    if (page.length === 0) break;
    for (const m of page) messages.set(m.id, m);
    after = page.at(-1).id;
  }
  db.close();
  assert.equal(messages.size, N);
  const events = new Map();
  for (const log of logs) {
    if (!existsSync(log)) continue;
    for (const line of readFileSync(log, "utf8").split("\n")) {
      if (line === "" || !line.endsWith("}")) continue; // a line cut by a SIGKILL
      const event = JSON.parse(line);
      if (!events.has(event.id)) events.set(event.id, []);
      events.get(event.id).push(event);
    }
  }

  let [succeeded, dead, expiredLeases, overlaps] = [0, 0, 0, 0];
  for (const m of messages.values()) {
    const seen = events.get(m.id) ?? [];
    const texts = m.errors.map((e) => e.error);
    assert.ok(m.status === "succeeded" || m.status === "dead", `#${m.id} ended ${m.status}`);
    if (m.status === "dead") {
      dead += 1;
      assert.equal(m.errors.length, 3, `#${m.id} died after its 3 attempts: ${JSON.stringify(texts)}`);
      assert.equal(m.lastError, texts.at(-1));
    } else {
      succeeded += 1;
      assert.ok(m.errors.length < 3);
    }
    for (const text of texts) {
      assert.match(text, /^(fail (node|python)-\d+ \d+|lease expired)$/, `#${m.id}: ${text}`);
      if (text === "lease expired") expiredLeases += 1;
    }
    const failed = seen.filter((e) => e.e === "fail");
    for (const f of failed) assert.ok(texts.includes(f.error), `#${m.id}: the settled failure "${f.error}" is in its history ${JSON.stringify(texts)}`);
    if (seen.some((e) => e.e === "ok")) assert.equal(m.status, "succeeded", `#${m.id}: its ack settled`);
    // Leases: each claim after the one before it ended (its lease ran out, or its failure settled).
    const claims = seen.filter((e) => e.e === "claim").sort((a, b) => a.at - b.at);
    const settledFail = new Set(failed.map((f) => f.token));
    const acked = new Set(seen.filter((e) => e.e === "ok").map((e) => e.token));
    for (let i = 1; i < claims.length; i += 1) {
      const [before, after] = [claims[i - 1], claims[i]];
      assert.ok(!acked.has(before.token), `#${m.id} was claimed again after its ack`);
      if (!(after.at >= before.until || settledFail.has(before.token))) overlaps += 1;
    }
  }
  t.diagnostic(`${succeeded} succeeded, ${dead} dead, ${expiredLeases} leases expired (killed workers)`);
  assert.equal(overlaps, 0, "a message was claimed while another lease on it was live");
  assert.equal(succeeded + dead, N);
});
