// Uses every export of the package `deadletter`; `make test-js` type-checks it with
// `tsc --noEmit -p bindings-wasm/examples` (strict) against the hand-written js/index.d.ts.
import {
  CODES,
  type ClaimOptions,
  type ConflictReason,
  Database,
  DeadLetterError,
  type ErrorCode,
  type FieldError,
  type Message,
  type OpenOptions,
  Queue,
  type Status,
  backoffMs,
  open,
} from "deadletter";

async function deliver(message: Message): Promise<void> {
  const { to } = JSON.parse(message.payload) as { to: string };
  if (to === "") throw new Error("no recipient");
}

async function work(q: Queue, options: ClaimOptions): Promise<number> {
  let done = 0;
  for (let m = await q.claim(options); m !== null; m = await q.claim(options)) {
    try {
      await deliver(m);
      await q.succeed(m.id, { leaseToken: m.leaseToken });
      done += 1;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const failed: Message = await q.fail(m.id, why, { leaseToken: m.leaseToken, retryable: true });
      const next: Date | null = failed.retryAfter;
      console.log(`message ${failed.id} is ${failed.status}, next try at ${next?.toISOString() ?? "never"}`);
    }
  }
  return done;
}

export async function main(indexedDB: IDBFactory): Promise<void> {
  let now = Date.UTC(2026, 0, 1);
  const options: OpenOptions = {
    indexedDB,
    clock: () => new Date(now),
    leaseMs: 30_000,
    maxPayloadBytes: 1_048_576,
  };
  const db: Database = await open("app-queue", options);
  const q: Queue = db.queue("emails");
  const queued: Message = await q.enqueue(JSON.stringify({ to: "alice" }), { maxRetries: 5 });
  await q.enqueue(JSON.stringify({ to: "" }), { maxRetries: 1 });
  console.log(`${q.name}: enqueued ${queued.id} at ${queued.createdAt.toISOString()}`);
  console.log(`delivered ${await work(q, { leaseMs: 10_000 })}`);
  now += backoffMs(0);

  const status: Status = "dead";
  const dead: Message[] = await q.list({ status, limit: 100, afterId: 0 });
  for (const m of dead) {
    const replayed = await q.replay(m.id);
    console.log(`replayed ${replayed.id}: ${replayed.status}, ${replayed.lastError ?? "no error"}`);
  }
  const again: Message = await q.get(queued.id);
  console.log(`${again.id} is ${again.status}, lease ${again.leaseExpiresAt?.getTime() ?? "none"}`);

  try {
    await q.enqueue(new Date().toISOString(), { maxRetries: 11 });
  } catch (err) {
    if (err instanceof DeadLetterError) {
      const code: ErrorCode = err.code;
      const fields: readonly FieldError[] = err.errors;
      console.log(code, CODES.includes(code), fields.map((f) => `${f.field}: ${f.code}`).join(", "));
    } else {
      throw err;
    }
  }
  try {
    await q.succeed(queued.id);
  } catch (err) {
    if (err instanceof DeadLetterError && err.code === "conflict") {
      const reason: ConflictReason | undefined = err.reason;
      const current: Status | undefined = err.status;
      console.log(`conflict on ${err.id ?? "?"}: ${reason ?? "?"}, status ${current ?? "n/a"}`);
    } else if (err instanceof DeadLetterError && err.code === "not_found") {
      const where: string | undefined = err.queue;
      console.log(`no message ${err.id ?? "?"} in ${where ?? "?"}`);
    } else {
      throw err;
    }
  }
  console.log(`${db.name} closed`);
  db.close();
}
