// The worker loop behind `Queue.process` (index.js): claim as many due messages as there are free
// slots, run the handler on each, extend its lease while it runs, then ack or fail it; sleep when
// nothing is due; stop on the AbortSignal. The rules come from the Rust core
// (`deadletter::worker`, through src/worker.rs): `WorkerPlan` checked the options and gives the
// heartbeat period and the idle wait, `failureText` makes the recorded error. This file holds only
// the mechanics: promises, timers, the signal, and the browser's online and offline events. It
// works through the public `Queue` methods, so `onDead` callbacks hear of what it kills.

import { PermanentError } from "./errors.js";

/** The largest batch of `claimMany`. */
const MAX_CLAIM = 100;

/** The wait after a claim's first `store` error in a row (`Loop.#failed`), doubling up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/**
 * Runs a worker loop until `signal` aborts; resolves to the number of messages whose handler
 * completed (returned or threw). A `store` error of `claimMany` or `nextDueAt` while the database
 * is open is logged and the claim tried again later (`Loop.#failed`). Rejects with the
 * `DeadLetterError` of a failed `claimMany` or `nextDueAt` otherwise (a closed database, a clock
 * out of range), or with what the clock threw, after the running handlers settled.
 *
 * @param {object} loop
 * @param {import("./index.js").Queue} loop.queue
 * @param {(message: object) => unknown} loop.handler
 * @param {{ concurrency: number, shutdownTimeoutMs: number }} loop.plan
 * @param {number | undefined} loop.leaseMs the call's own lease; undefined: each claim takes the
 *   queue's stored lease, else the database's (the core resolves it; finding N2: the loop used to
 *   claim with the database's lease as if it were the call's)
 * @param {(nextDueAt: Date | null) => number} loop.idleWaitMs the idle sleep at the queue clock's now
 * @param {(kind: string, message: string) => string} loop.failureText
 * @param {AbortSignal | undefined} loop.signal
 * @param {() => boolean} loop.closed whether the database is closed (no store error is waited out then)
 */
export function work(loop) {
  return new Loop(loop).run();
}

class Loop {
  #queue;
  #handler;
  #plan;
  #leaseMs;
  #idleWaitMs;
  #failureText;
  #signal;
  #closed;
  /** The claims that failed in a row with a `store` error (`#failed`). */
  #failures = 0;
  /** `performance.now()` before which the loop does not claim (the wait after a failed claim). */
  #retryAt = 0;
  /** The jobs whose message this loop holds: handler running, or its outcome being recorded. */
  #jobs = new Set();
  #handled = 0;
  /** Set by every event (abort, online, a job done) since the current round began. */
  #poked = false;
  /** Ends the current wait early; null when the loop is not waiting. */
  #wake = null;

  constructor({ queue, handler, plan, leaseMs, idleWaitMs, failureText, signal, closed }) {
    this.#closed = closed;
    this.#queue = queue;
    this.#handler = handler;
    this.#plan = plan;
    this.#leaseMs = leaseMs;
    this.#idleWaitMs = idleWaitMs;
    this.#failureText = failureText;
    this.#signal = signal;
  }

  async run() {
    const signal = this.#signal;
    if (signal?.aborted) return 0;
    const network = browserNetwork();
    signal?.addEventListener("abort", this.#poke);
    network?.onOnline(this.#poke);
    let failure = null;
    let idle = true; // the last claim found nothing (so does the first round)
    try {
      while (!signal?.aborted) {
        this.#poked = false;
        if (network && !network.isOnline()) {
          // Paused: no timer runs until the `online` event (or the abort, or a job that ends).
          await this.#wait(Infinity);
          continue;
        }
        const free = this.#plan.concurrency - this.#jobs.size;
        if (free <= 0) {
          await this.#wait(Infinity); // until a job ends
          continue;
        }
        // After a store error, no event (a job that ends) claims before the wait it announced
        // (tester T9: each job ending as the store failed doubled the wait within milliseconds).
        const outage = this.#retryAt - performance.now();
        if (outage > 0) {
          await this.#wait(outage);
          continue;
        }
        let next, claimed;
        try {
          // An idle loop reads when the next delayed message is due *before* it claims: read
          // after an empty claim, it would miss a message that became due in between, and sleep
          // past it.
          next = idle ? await this.#queue.nextDueAt() : undefined;
          if (signal?.aborted) break; // aborted during the reading: no more claims
          claimed = await this.#queue.claimMany(Math.min(free, MAX_CLAIM), { leaseMs: this.#leaseMs });
        } catch (err) {
          this.#retryAt = performance.now() + this.#failed(err);
          continue;
        }
        if (this.#failures > 0) {
          console.warn(`deadletter: claiming works again after ${this.#failures} failures`);
          this.#failures = 0;
        }
        // Claimed before the abort was seen or not, they are this loop's now: run them.
        for (const message of claimed) this.#start(message);
        idle = claimed.length === 0;
        // Idle without a reading taken before this claim (the round before was busy): go round.
        if (!idle || next === undefined || signal?.aborted) continue;
        await this.#wait(this.#idleWaitMs(next));
      }
    } catch (err) {
      failure = err;
    } finally {
      signal?.removeEventListener("abort", this.#poke);
      network?.offOnline(this.#poke);
    }
    await this.#drain();
    if (failure !== null) throw failure;
    return this.#handled;
  }

  /**
   * The milliseconds to wait before claiming again after `err`, a rejection of `nextDueAt` or
   * `claimMany`: a `store` error while the database is open (a SQLite file locked past its busy
   * timeout, an IndexedDB transaction aborted as the browser closed the connection) is logged with
   * `console.warn` and waited out, 500 ms doubling up to 30 s, as in the Python loops (tester T6,
   * session 13: a loop that ended on the first one left a service without a worker). Throws
   * `err` otherwise: the database closed, or another error (a clock out of range).
   */
  #failed(err) {
    if (err?.code !== "store" || this.#closed()) throw err;
    this.#failures += 1;
    const waitMs = Math.min(FIRST_RETRY_MS * 2 ** Math.min(this.#failures - 1, 16), MAX_RETRY_MS);
    console.warn(`deadletter: claiming failed (${this.#failures} in a row), trying again in ${waitMs} ms: ${err.message}`);
    return waitMs;
  }

  /** Ends the current wait, or the next one when the loop is busy (arrow: an event listener). */
  #poke = () => {
    this.#poked = true;
    this.#wake?.();
  };

  /** Waits `ms` milliseconds (Infinity: no timer at all), or less when poked; not when poked already. */
  #wait(ms) {
    if (this.#poked) return Promise.resolve();
    return new Promise((resolve) => {
      let timer;
      const done = () => {
        clearTimeout(timer);
        this.#wake = null;
        resolve();
      };
      if (Number.isFinite(ms)) timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  #start(message) {
    const job = { message, recording: false, abandoned: false, stopHeartbeats: () => Promise.resolve() };
    this.#jobs.add(job);
    job.done = this.#run(job).finally(() => {
      this.#jobs.delete(job);
      this.#poke();
    });
  }

  /** Runs the handler under heartbeats, then records its outcome with the message's lease token. */
  async #run(job) {
    const { message } = job;
    job.stopHeartbeats = holdLease(this.#queue, message);
    const handler = this.#handler; // called as a plain function: `this` is undefined in it
    let thrown = null;
    let threw = false;
    try {
      await handler(message);
    } catch (err) {
      threw = true;
      thrown = err;
    }
    if (job.abandoned) return; // given up at the shutdown timeout: left to its lease
    job.recording = true;
    await job.stopHeartbeats(); // an extend under way finishes first: never two writes at once
    this.#handled += 1;
    const lease = { leaseToken: message.leaseToken };
    try {
      if (!threw) {
        await this.#queue.succeed(message.id, lease);
      } else {
        const retryable = !(thrown instanceof PermanentError);
        await this.#queue.fail(message.id, this.#failureText(...describe(thrown)), { ...lease, retryable });
      }
    } catch (err) {
      // Mostly `conflict`: the lease ran out (the handler outlived it despite the heartbeats, or
      // they failed) and the message was reaped or is with another worker.
      const what = threw ? "fail" : "succeed";
      console.error(`deadletter: process could not ${what} message ${message.id} of queue "${this.#queue.name}"`, err);
    }
  }

  /**
   * Waits for the running jobs, at most the shutdown timeout; then gives up on the handlers still
   * running (no more heartbeats, their outcome is not recorded: their messages are left to their
   * leases) and waits only for the outcomes being recorded.
   */
  async #drain() {
    if (this.#jobs.size === 0) return;
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, this.#plan.shutdownTimeoutMs);
    });
    await Promise.race([Promise.allSettled([...this.#jobs].map((job) => job.done)), timeout]);
    clearTimeout(timer);
    const recording = [];
    for (const job of this.#jobs) {
      if (job.recording) {
        recording.push(job.done);
      } else {
        job.abandoned = true;
        job.stopHeartbeats();
      }
    }
    await Promise.allSettled(recording);
  }
}

/**
 * The lease `message`'s claim granted, in milliseconds: its `leaseExpiresAt` less its `updatedAt`
 * (a claim sets both at its instant), whichever of the call's, the queue's stored or the
 * database's lease the core chose.
 */
export function grantedLeaseMs(message) {
  return message.leaseExpiresAt.getTime() - message.updatedAt.getTime();
}

/**
 * Holds the lease of a claimed `message` while work on it runs: extends it by the lease its claim
 * granted (`grantedLeaseMs`) every half of it (at least 1 ms, as the core's
 * `worker::Plan::heartbeat_ms`), until stopped or until `extend` rejects with a `conflict` (the
 * lease is lost: extending again cannot win it back). Another failure of `extend` is logged and
 * tried again at the next beat. Returns the function that stops it; that resolves once an
 * `extend` under way has finished.
 *
 * `lost` (the outbox's, finding M1) is called once when the lease may have run out under the
 * work: an `extend` rejected with `conflict`, or the lease's end (by this process's clock, from
 * `heldSince`, `Date.now()` taken before the claim was asked) passed without an `extend` having
 * renewed it.
 */
export function holdLease(queue, message, { heldSince = null, lost = null } = {}) {
  const leaseMs = grantedLeaseMs(message);
  const beatMs = Math.max(1, Math.floor(leaseMs / 2));
  let timer;
  let deadline;
  let stopped = false;
  let pending = Promise.resolve();
  const loseOnce = () => {
    if (stopped || lost === null) return;
    stopped = true;
    clearTimeout(timer);
    lost();
  };
  const renewed = (since) => {
    if (lost === null || since === null || stopped) return; // stopped: an extend that was under way
    clearTimeout(deadline);
    deadline = setTimeout(loseOnce, Math.max(0, since + leaseMs - Date.now()));
  };
  const schedule = () => {
    if (!stopped) timer = setTimeout(beat, beatMs);
  };
  const beat = () => {
    const since = Date.now();
    pending = queue.extend(message.id, { leaseToken: message.leaseToken, leaseMs }).then(() => {
      renewed(since);
      schedule();
    }, (err) => {
      if (err?.code === "conflict") return loseOnce();
      console.error(`deadletter: could not extend the lease of message ${message.id} of queue "${queue.name}"`, err);
      schedule();
    });
  };
  renewed(heldSince);
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearTimeout(deadline);
    return pending;
  };
}

/**
 * `[kind, message]` of a thrown value, for `failureText`: an Error's `name` and `message`
 * (`TypeError`, `PermanentError`, a `DOMException`'s name, ...); for any other value, its type and
 * its text (`string: oops`, `number: 42`, `object: {"code":5}`, `undefined`).
 */
function describe(thrown) {
  try {
    if (thrown instanceof Error || Object.prototype.toString.call(thrown) === "[object Error]") {
      return [String(thrown.name || "Error"), String(thrown.message ?? "")];
    }
    if (thrown === null || thrown === undefined) return [String(thrown), ""];
    switch (typeof thrown) {
      case "object":
        return ["object", JSON.stringify(thrown) ?? String(thrown)];
      case "function":
        return ["function", thrown.name];
      default:
        return [typeof thrown, String(thrown)];
    }
  } catch {
    return [typeof thrown, ""]; // a getter, toJSON or toString that throws
  }
}

/**
 * The browser's network state, where there is one (a page or a worker: `navigator.onLine` and the
 * `online` event); null elsewhere (Node).
 */
function browserNetwork() {
  const scope = globalThis;
  if (typeof navigator === "undefined" || typeof navigator.onLine !== "boolean" || typeof scope.addEventListener !== "function") {
    return null;
  }
  return {
    isOnline: () => navigator.onLine,
    onOnline: (listener) => scope.addEventListener("online", listener),
    offOnline: (listener) => scope.removeEventListener("online", listener),
  };
}
