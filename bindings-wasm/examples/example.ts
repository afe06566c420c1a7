// Uses every export of the package `deadletter`; `make test-js` type-checks it with
// `tsc --noEmit -p bindings-wasm/examples` (strict) against the hand-written js/index.d.ts.
import {
  type BackoffOptions,
  type BulkOptions,
  type ListOptions,
  type MessagePage,
  type DrainResult,
  Outbox,
  type OutboxOptions,
  retryableStatus,
  type ClaimedMessage,
  CODES,
  type ClaimOptions,
  type ConflictReason,
  Database,
  DeadLetterError,
  type EnqueueItem,
  type ErrorCode,
  type FailedAttempt,
  type FieldError,
  type Message,
  type OpenOptions,
  PermanentError,
  type ProcessOptions,
  Queue,
  type QueueSettings,
  type QueueStats,
  type ReplayAllOptions,
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

/** The worker loop: runs `deliver` on every message until `signal` aborts; resolves to the count. */
async function relay(q: Queue, signal: AbortSignal): Promise<number> {
  const options: ProcessOptions = { concurrency: 4, pollIntervalMs: 500, shutdownTimeoutMs: 5_000, leaseMs: 20_000, signal };
  return q.process(async (m: Message) => {
    if (!m.payload.startsWith("{")) throw new PermanentError(`not JSON: ${m.payload.slice(0, 20)}`, { cause: m.id });
    await deliver(m); // a rejection fails the message: retried after its backoff
  }, options);
}

export async function main(indexedDB: IDBFactory): Promise<void> {
  let now = Date.UTC(2026, 0, 1);
  const options: OpenOptions = {
    indexedDB,
    clock: () => new Date(now),
    leaseMs: 30_000,
    maxPayloadBytes: 1_048_576,
  };
  const db: Database = await open("app-queue", { ...options, random: Math.random });
  const unsubscribe: () => void = db.onDead((m: Message) => {
    const last: FailedAttempt | undefined = m.errors[m.errors.length - 1];
    console.log(`dead: ${m.id} at ${m.deadAt?.toISOString() ?? "?"}: ${last?.error ?? "?"} (attempt ${last?.attempt ?? 0})`);
  });
  const backoff: BackoffOptions = { initialMs: 500, multiplier: 3, capMs: 60_000, jitter: "full" };
  const q: Queue = db.queue("emails", { backoff });
  const queued: Message = await q.enqueue(JSON.stringify({ to: "alice" }), { maxRetries: 5, idempotencyKey: "welcome-alice" });
  const again: Message = await q.enqueue(JSON.stringify({ to: "alice" }), { idempotencyKey: "welcome-alice" });
  console.log(`deduplicated: ${again.deduplicated}, first id ${again.id}`);
  const items: EnqueueItem[] = [
    JSON.stringify({ to: "" }),
    { payload: JSON.stringify({ to: "bob" }), delayMs: 1000, maxRetries: 1 },
    { payload: JSON.stringify({ to: "carol" }), group: "customer-42", expiresInMs: 3_600_000 },
  ];
  await q.enqueueMany(items);
  console.log(`${q.name}: enqueued ${queued.id} at ${queued.createdAt.toISOString()}`);
  console.log(`delivered ${await work(q, { leaseMs: 10_000 })}`);
  now += backoffMs(0);

  const status: Status = "dead";
  const dead: Message[] = await q.list({ status, limit: 100, afterId: 0 });
  for (const m of dead) {
    const replayed = await q.replay(m.id, { expiresInMs: 86_400_000 });
    console.log(`replayed ${replayed.id}: ${replayed.status}, ${replayed.lastError ?? "no error"}`);
  }
  const current: Message = await q.get(queued.id);
  console.log(`${current.id} is ${current.status}, lease ${current.leaseExpiresAt?.getTime() ?? "none"}`);

  const batch: ClaimedMessage[] = await q.claimMany(10, { leaseMs: 5_000 });
  for (const m of batch) {
    const held: Message = await q.extend(m.id, { leaseToken: m.leaseToken, leaseMs: 10_000 });
    await q.fail(held.id, "still broken", { leaseToken: m.leaseToken, retryable: false });
  }
  const slow = await q.claim();
  if (slow) await q.fail(slow.id, "429 Retry-After: 120", { leaseToken: slow.leaseToken, retryInMs: 120_000 });
  const stored: QueueSettings = await q.setSettings({ backoff: { initialMs: 10_000 }, maxRetries: 8, leaseMs: 60_000, expiresInMs: null, onExpiry: "discard" });
  console.log(`stored ${stored.backoff?.initialMs ?? "no"} ms backoff, ${stored.maxRetries ?? 3} retries, ${(await q.settings()).onExpiry}`);
  const paused: boolean = (await q.pause()).paused && !(await q.resume()).paused;
  console.log(`paused and resumed: ${paused}; ${queued.group ?? "no group"}, expires ${queued.expiresAt?.toISOString() ?? "never"}`);
  const filter: ReplayAllOptions = { errorContains: "broken", deadBefore: new Date(now + 1), deadAfter: 0, limit: 100 };
  console.log(`replayed ${await q.replayAll(filter)}, reaped ${await q.reap()}`);
  const search: ListOptions = { payloadContains: "customer", createdAfter: new Date(now - 3_600_000), delayed: false, limit: 50 };
  const page: MessagePage = await q.list(search);
  const more: Message[] = page.nextAfterId === null ? [] : await q.list({ ...search, afterId: page.nextAfterId });
  const bulk: BulkOptions = { errorContains: "broken", status: "dead", dryRun: true };
  console.log(`${page.length + more.length} found; would delete ${await q.deleteAll(bulk)}, retried now ${await q.retryNowAll({ limit: 10 })}`);
  if (page[0]?.retryAfter) console.log(`due now: ${(await q.retryNow(page[0].id)).retryAfter === null}`);
  console.log(`purged ${await q.purge({ status: "succeeded", olderThanMs: 86_400_000 })}`);
  const stats: QueueStats = await q.stats();
  const next: Date | null = await q.nextDueAt();
  console.log(`${stats.queue}: ${stats.pending} pending, ${stats.dead} dead, next due ${stats.nextDueAt?.toISOString() ?? next?.toISOString() ?? "never"}, oldest due ${stats.oldestDueAgeMs ?? 0} ms`);
  for (const s of await db.queues()) console.log(s.queue, s.delayed, s.expired, s.oldestDeadAgeMs, s.paused, s.expiredDead, s.expiredDiscarded);
  const finished: Message[] = await q.list({ status: "dead", limit: 1 });
  if (finished[0]) console.log(`deleted ${(await q.delete(finished[0].id)).id}`);
  unsubscribe();

  const controller = new AbortController();
  setTimeout(() => controller.abort(), 1_000);
  const handled: number = await relay(q, controller.signal);
  console.log(`the worker loop handled ${handled}`);

  try {
    await q.enqueue(new Date().toISOString(), { maxRetries: 11 });
  } catch (err) {
    if (err instanceof DeadLetterError) {
      const code: ErrorCode = err.code;
      const fields: readonly FieldError[] = err.errors;
      console.log(code, CODES.includes(code), fields.map((f) => `${f.field}${f.index === undefined ? "" : `[${f.index}]`}: ${f.code}`).join(", "));
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

  // The outbox of failed requests (in a service worker, `deadletter/service-worker`).
  const outboxOptions: OutboxOptions = { queue: "posts", maxRetries: 5, online: () => true };
  const outbox = new Outbox(Promise.resolve(db), outboxOptions);
  const kept: Message = await outbox.add(new Request("https://example.invalid/api", { method: "POST", body: "{}" }));
  const drained: DrainResult = await outbox.drain({ waitMs: 0 });
  const deadRequests: Message[] = await outbox.dead({ limit: 10 });
  const request: Request = Outbox.requestOf(kept);
  console.log(outbox.tag, drained.sent, deadRequests.length, request.url, retryableStatus(503));
  const stop: () => void = outbox.listen();
  stop();
}
