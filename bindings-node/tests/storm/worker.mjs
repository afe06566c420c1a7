// One Node worker of the crash storm (../storm.test.mjs): claims batches from the file, works on
// each message for up to 20 ms, fails a random share of them, acks the rest, and logs every claim and every settled ack or failure to
// its own log (one JSON line each, written synchronously: a line written before a SIGKILL is
// kept). Usage: node worker.mjs ENTRY FILE LOG FAIL_RATE
import { appendFileSync } from "node:fs";

const [entry, file, log, failRate] = process.argv.slice(2);
const { open } = await import(entry);
const db = await open(file, { durability: "normal", leaseMs: 1000 });
const q = db.queue("storm");
const tag = `node-${process.pid}`;
let n = 0;
const write = (event) => appendFileSync(log, `${JSON.stringify(event)}\n`);

for (;;) {
  const batch = await q.claimMany(10);
  if (batch.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    continue;
  }
  for (const m of batch) write({ e: "claim", id: m.id, token: m.leaseToken, at: m.updatedAt.getTime(), until: m.leaseExpiresAt.getTime() });
  // Settled at once, as a web server's handlers would: the acks share commits.
  await Promise.all(
    batch.map(async (m) => {
      const lease = { leaseToken: m.leaseToken };
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20)); // the work
      try {
        if (Math.random() < Number(failRate)) {
          const error = `fail ${tag} ${++n}`;
          await q.fail(m.id, error, lease);
          write({ e: "fail", id: m.id, token: m.leaseToken, error });
        } else {
          await q.succeed(m.id, lease);
          write({ e: "ok", id: m.id, token: m.leaseToken });
        }
      } catch (err) {
        if (err.code !== "conflict") throw err;
        write({ e: "conflict", id: m.id, token: m.leaseToken, reason: err.reason });
      }
    }),
  );
}
