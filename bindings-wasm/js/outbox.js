// The outbox: HTTP requests that could not be sent (offline, a 5xx) kept as messages of a
// deadletter queue and sent again with its retries, backoff and dead letters. Made for service
// workers (a fetch handler hands requests to `outbox.fetch`; the Background Sync `sync` event and
// the worker's start drain it within `event.waitUntil`), and usable in pages and workers (the
// page lists and replays dead requests, hears `onDead`, and drains on `online` where there is no
// Background Sync). Like Workbox's background sync, with a backoff, dead letters and their history.
//
// Each message's payload is the request as JSON: `{ method, url, headers, body, mode,
// credentials, failed }`, the body base64 (or null); `failed` (or absent) is the attempt
// `outbox.fetch` made before it kept the request, which the first drain to claim it records as
// that message's first failure (finding N4). The rules are the queue's; this file holds only the
// mechanics of HTTP and of the service worker's events.
//
// Delivery is at least once: a send is held under its message's lease (extended every half lease,
// as the worker loop does; aborted when the lease may have run out: finding M1), but a server
// that received a request whose answer was lost gets it again.

import { DeadLetterError } from "./errors.js";
import { holdLease } from "./worker.js";

const DRAIN = "deadletter:drain";
const OPTIONS = ["queue", "tag", "maxRetries", "concurrency", "backoff", "fetch", "online"];
const DRAIN_OPTIONS = ["waitMs"];
/** The longest wait a `Retry-After` sets, in milliseconds: a failure's own `retryInMs` limit (30 days). */
const MAX_RETRY_IN_MS = 30 * 86_400_000;

function rejected(errors) {
  const text = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
  return new DeadLetterError(`validation failed: ${text}`, { code: "validation_failed", errors });
}

function invalid(message, field = "request") {
  return rejected([{ field, code: "invalid", message }]);
}

function kind(value) {
  if (Array.isArray(value)) return "an array";
  if (value === null || value === undefined) return String(value);
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * The options object `value` of an Outbox or a drain, read as the package's other options are
 * (api.js `options`, finding N8): its own enumerable keys, each one of `known` (else `unknown`),
 * each integer within its range of `ranges` (`type`, `out_of_range`, named by its own field), each
 * function of `functions` a function. Throws the `validation_failed` DeadLetterError of every
 * rejected field; returns the read values.
 */
function checked(value, known, ranges, functions = []) {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw rejected([{ field: "options", code: "type", message: `must be an object, got ${kind(value)}` }]);
  }
  const keys = Object.keys(value);
  const unknown = keys.filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    const message = `unknown option; expected one of ${known.join(", ")}`;
    throw rejected(unknown.map((field) => ({ field, code: "unknown", message })));
  }
  const read = {};
  for (const key of keys) read[key] = value[key] ?? undefined;
  const errors = [];
  for (const [field, [min, max]] of Object.entries(ranges)) {
    const given = read[field];
    if (given === undefined) continue;
    if (!Number.isInteger(given)) errors.push({ field, code: "type", message: `must be an integer, got ${kind(given)}` });
    else if (given < min || given > max) errors.push({ field, code: "out_of_range", message: `must be between ${min} and ${max}` });
  }
  for (const field of functions) {
    if (read[field] !== undefined && typeof read[field] !== "function") {
      errors.push({ field, code: "type", message: `must be a function, got ${kind(read[field])}` });
    }
  }
  if (read.tag !== undefined && (typeof read.tag !== "string" || read.tag === "")) {
    errors.push({ field: "tag", code: "type", message: `must be a non-empty string, got ${kind(read.tag)}` });
  }
  if (errors.length > 0) throw rejected(errors);
  return read;
}

/**
 * The wait a `429` or `503` answer asks for with its `Retry-After` header, in milliseconds (up to
 * 30 days): whole seconds, or an HTTP date (RFC 9110 10.2.3: `delay-seconds` is digits only, a
 * date names its day and month). Undefined, so that the queue's backoff applies, for any other
 * answer, a header that is neither (`-5`, `1.5`: `Date.parse` would read them as years), and a
 * wait of nothing (`0`, a date past): retries are not spent at once (found by a new user,
 * session 7).
 */
export function retryAfterMs(response) {
  if (response.status !== 429 && response.status !== 503) return undefined;
  const value = response.headers.get("retry-after")?.trim();
  if (!value) return undefined;
  let ms;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else if (/[A-Za-z]{3}/.test(value)) ms = Date.parse(value) - Date.now();
  else return undefined;
  return Number.isFinite(ms) && ms >= 1 ? Math.min(Math.round(ms), MAX_RETRY_IN_MS) : undefined;
}

/** The error text of a send that threw (a network failure, an abort). */
function thrownText(err) {
  return `${err?.name ?? "Error"}: ${err?.message ?? err}`;
}

/** The error text of an answer that is not a success: `HTTP 503 Service Unavailable`. */
function statusText(response) {
  return `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
}

/** `record()`, a succeed or fail of a sent request; a lost lease (`conflict`) is logged: the message is another drain's now. */
async function recording(record, id) {
  try {
    await record();
  } catch (err) {
    if (err?.code !== "conflict") throw err;
    console.error(`deadletter: the outbox could not record the send of message ${id}: its lease ran out`, err);
  }
}

function base64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function unbase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/**
 * Whether an HTTP status may succeed if sent again later: 408, 425, 429 and the 5xx. Any other
 * answer that is not a success (400, 404, 410, 422...) will be the same next time: the message is
 * dead at once.
 */
export function retryableStatus(status) {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `request`, when it can be kept: a Request whose body was not read yet. */
function usable(request) {
  if (!(request instanceof Request)) throw invalid("must be a Request");
  if (request.bodyUsed) throw invalid("its body was already read, so it cannot be sent again: pass request.clone() before reading it");
  return request;
}

/** The kept request of an outbox `message` (its payload, parsed and checked). */
function kept(message) {
  let request = null;
  try {
    request = JSON.parse(message?.payload);
  } catch {
    // not JSON: not a kept request
  }
  const fields = request !== null && typeof request === "object" ? request : {};
  if (typeof fields.url !== "string" || typeof fields.method !== "string" || !Array.isArray(fields.headers)) {
    throw invalid("is not a request kept by an Outbox (its payload is not one)", "message");
  }
  return fields;
}

/** The Request of a kept one, with `signal` when given. */
function build({ method, url, headers, body, mode, credentials }, signal) {
  return new Request(url, { method, headers, body: body === null ? undefined : unbase64(body), mode, credentials, signal });
}

/** The service worker's global scope, when this runs in one. */
function serviceWorker() {
  return typeof ServiceWorkerGlobalScope === "function" && globalThis instanceof ServiceWorkerGlobalScope ? globalThis : null;
}

/** Failed requests of one queue, sent again with retries, backoff and dead letters. */
export class Outbox {
  #ready;
  #tag;
  #maxRetries;
  #concurrency;
  #send;
  #online;

  /**
   * @param {import("./api.js").Database | Promise<import("./api.js").Database>} db the database,
   *   or the promise `open()` returned (a service worker registers its listeners at once)
   * @param {{ queue?: string, tag?: string, maxRetries?: number, concurrency?: number,
   *   backoff?: object, fetch?: (request: Request) => Promise<Response>,
   *   online?: () => boolean }} [options] checked here; what is wrong (an unknown key, a value
   *   out of range, a bad queue name or backoff) rejects every call with `validation_failed`
   */
  constructor(db, options) {
    let o;
    try {
      o = checked(options, OPTIONS, { maxRetries: [1, 10], concurrency: [1, 100] }, ["fetch", "online"]);
      this.#ready = Promise.resolve(db).then((opened) => opened.queue(o.queue ?? "outbox", o.backoff === undefined ? undefined : { backoff: o.backoff }));
    } catch (err) {
      o = {};
      this.#ready = Promise.reject(err);
    }
    this.#ready.catch(() => {}); // reported by the calls that use it
    const { queue = "outbox", tag, maxRetries = 5, concurrency = 4, fetch, online } = o;
    this.#online = online ?? (() => globalThis.navigator?.onLine !== false);
    this.#tag = typeof tag === "string" && tag !== "" ? tag : `deadletter:${queue}`;
    this.#maxRetries = maxRetries;
    this.#concurrency = concurrency;
    this.#send = fetch ?? ((request) => globalThis.fetch(request));
  }

  /** The queue of the outbox (once the database is open). */
  queue() {
    return this.#ready;
  }

  /** The Background Sync tag it registers and drains on. */
  get tag() {
    return this.#tag;
  }

  /**
   * Keeps `request` (method, URL, headers, body, mode, credentials; the body read now) as a
   * message, then asks for a drain (Background Sync where there is one). Rejects with
   * `validation_failed` (field `request`) for a request that cannot be sent again: its body was
   * already read, a navigation; `payload` `too_large` beyond the database's `maxPayloadBytes`.
   */
  async add(request) {
    return this.#keep(usable(request).clone(), null);
  }

  /** Keeps `request` with `failed`, the attempt `fetch` made (or null), and asks for a drain. */
  async #keep(request, failed) {
    if (request.mode === "navigate") throw invalid("a navigation cannot be sent again");
    const body = ["GET", "HEAD"].includes(request.method) ? null : new Uint8Array(await request.arrayBuffer());
    const kept = {
      method: request.method,
      url: request.url,
      headers: [...request.headers],
      body: body === null || body.length === 0 ? null : base64(body),
      mode: request.mode === "navigate" ? "same-origin" : request.mode,
      credentials: request.credentials,
    };
    if (failed !== null) kept.failed = failed;
    const message = await (await this.#ready).enqueue(JSON.stringify(kept), { maxRetries: this.#maxRetries });
    await this.#wake();
    return message;
  }

  /**
   * Sends `request`; when the network fails or the server answers a status worth retrying
   * (`retryableStatus`), keeps it with that attempt counted as its first failure (a drain records
   * it; the next send waits for the backoff, or for the answer's `Retry-After`; a network failure
   * while `online()` says false is no attempt: the first drain online sends it) and resolves to a
   * `202 Accepted` response whose header `x-deadletter-queued` holds the message id. Any other
   * answer is resolved as it came, and so is a retryable one that cannot be kept (finding M2:
   * too large, a store error). A request its caller aborted (its `signal`) rejects with the abort
   * and is not kept. A request that could be neither sent nor kept because it is too
   * large (`payload` `too_large`) resolves to a `413` whose header `x-deadletter-not-kept` says
   * `too_large` and whose JSON body holds the error; another failure to keep it rejects. For a
   * service worker's `fetch` event: `event.respondWith(outbox.fetch(event.request))`.
   */
  async fetch(request) {
    const copy = usable(request).clone();
    let response = null;
    let failed;
    try {
      response = await this.#send(request);
      if (!retryableStatus(response.status)) return response;
      const retryInMs = retryAfterMs(response);
      failed = { error: statusText(response), retryAt: retryInMs === undefined ? null : Date.now() + retryInMs };
    } catch (err) {
      // Aborted by its caller (its own signal; in a service worker, the page's fetch was): not a
      // failure worth keeping but a request the caller no longer wants sent: it rejects with the
      // abort, as fetch does, and nothing is kept (new-user finding N13, session 7: it was kept,
      // answered 202, and sent again later).
      if (request.signal?.aborted) throw err;
      // Offline (the `online` option says so) the request was not sent: no attempt to count.
      failed = this.#online() ? { error: thrownText(err), retryAt: null } : null;
    }
    let message;
    try {
      message = await this.#keep(copy, failed);
    } catch (err) {
      if (response !== null) return response;
      if (err instanceof DeadLetterError && err.errors.some((e) => e.code === "too_large")) {
        return new Response(JSON.stringify({ notKept: err.message, code: err.code, errors: err.errors }), {
          status: 413,
          statusText: "Payload Too Large",
          headers: { "content-type": "application/json", "x-deadletter-not-kept": "too_large" },
        });
      }
      throw err;
    }
    return new Response(JSON.stringify({ queued: message.id }), {
      status: 202,
      statusText: "Accepted",
      headers: { "content-type": "application/json", "x-deadletter-queued": String(message.id) },
    });
  }

  /**
   * The request a message of the outbox holds. Throws a `validation_failed` DeadLetterError
   * (field `message`) for a message whose payload is not a kept request.
   */
  static requestOf(message) {
    return build(kept(message));
  }

  /**
   * Sends one claimed message's request under its lease and records the outcome: acked, failed
   * (retried later) or dead. `heldSince`: `Date.now()` before the claim was asked.
   */
  async #deliver(queue, message, heldSince) {
    const lease = { leaseToken: message.leaseToken };
    let request;
    try {
      request = kept(message);
    } catch (err) {
      await recording(() => queue.fail(message.id, err.message, { ...lease, retryable: false }), message.id);
      return false;
    }
    const { failed } = request;
    if (failed && message.retryCount === 0 && message.replayCount === 0) {
      // The attempt outbox.fetch made before keeping it: its first failure, recorded now, not sent
      // again at once (finding N4: maxRetries n made n + 1 sends, the first two back to back).
      // Only at the first claim: once an attempt is counted or the message replayed, it is past.
      // The one test of message state outside the core, and why it stays: the core records a
      // failure only on a claimed message (`fail` requires `processing`), a payload is never
      // rewritten, so the marker outlives its use, and no claim takes one message by id to fail
      // it in outbox.fetch. It decides only whether this claim is the first; the core still
      // decides the retry, its time and the death.
      const retryInMs = failed.retryAt === null ? undefined : Math.min(Math.max(0, failed.retryAt - Date.now()), MAX_RETRY_IN_MS);
      await recording(() => queue.fail(message.id, failed.error, { ...lease, retryInMs }), message.id);
      return false;
    }
    // Held while it is sent (finding M1: a send that outlived the lease was claimed and sent
    // again by a second drain): extended every half lease; aborted when the lease may have run out.
    const controller = new AbortController();
    let abandon;
    const abandoned = new Promise((resolve, reject) => {
      abandon = reject;
    });
    abandoned.catch(() => {}); // raced below
    const release = holdLease(queue, message, {
      heldSince,
      lost: () => {
        const reason = new DOMException("the lease ran out while the request was sent", "TimeoutError");
        controller.abort(reason);
        abandon(reason);
      },
    });
    let response = null;
    let error;
    try {
      const sent = Promise.resolve(this.#send(build(request, controller.signal)));
      sent.catch(() => {}); // a send that ignores the abort settles unheard
      response = await Promise.race([sent, abandoned]);
    } catch (err) {
      error = thrownText(err);
    } finally {
      await release();
    }
    // An opaque answer (a `no-cors` request's: status 0, nothing readable) cannot be judged; the
    // server got the request, so it counts as delivered, as Workbox does (new-user finding M12,
    // session 7: it was dead with "HTTP 0", and a replay sent it again).
    if (response?.ok || response?.type === "opaque") {
      await recording(() => queue.succeed(message.id, lease), message.id);
      return true;
    }
    const retryable = response === null || retryableStatus(response.status);
    const retryInMs = response === null ? undefined : retryAfterMs(response);
    await recording(() => queue.fail(message.id, response === null ? error : statusText(response), { ...lease, retryable, retryInMs }), message.id);
    return false;
  }

  /**
   * Sends every request that is due, `concurrency` at a time, in claim order; then, while a
   * failed one waits for a retry due within `waitMs` (default 30 s, 0..3600000), waits for it and
   * goes on. Offline (the `online` option, default `navigator.onLine`, says false) it sends
   * nothing. Resolves to `{ sent, pending }`: how many were delivered, and how many still wait
   * (offline, or for a later retry). Rejects with `validation_failed` for an unknown option or a
   * `waitMs` out of range.
   */
  async drain(options) {
    const { waitMs = 30_000 } = checked(options, DRAIN_OPTIONS, { waitMs: [0, 3_600_000] });
    const queue = await this.#ready;
    let sent = 0;
    let idleOnce = false; // the last round found nothing to send and nothing delayed
    for (;;) {
      if (!this.#online()) break;
      // When the next delayed request is due, read *before* the claim, as the worker loop does
      // (worker.js): read after a claim that found nothing, a retry that fell due in between
      // reads as none (nextDueAt is the earliest *future* one), and the drain stopped with it
      // pending; on a busy machine, the Retry-After test's flake (session 7).
      const next = await queue.nextDueAt();
      const heldSince = Date.now();
      const batch = await queue.claimMany(this.#concurrency);
      if (batch.length > 0) {
        for (const ok of await Promise.all(batch.map((m) => this.#deliver(queue, m, heldSince)))) sent += ok ? 1 : 0;
        idleOnce = false;
        continue;
      }
      // Nothing delayed by the reading; but the claim may have taken back an expired lease (a
      // drain that died mid-send), delaying its request where the reading did not see it: one
      // more round reads that (the drain stopped with it pending; tester T5, session 12).
      if (next === null && !idleOnce) {
        idleOnce = true;
        continue;
      }
      idleOnce = false;
      const wait = next === null ? Infinity : next.getTime() - Date.now();
      if (wait > waitMs) break;
      await sleep(Math.max(wait, 1));
    }
    const stats = await queue.stats();
    return { sent, pending: stats.pending };
  }

  /** Dead requests of the outbox, oldest first (see `Queue.list`): each with its error history. */
  async dead(options = {}) {
    return (await this.#ready).list({ ...options, status: "dead" });
  }

  /** Sends a dead request again (see `Queue.replay`), then asks for a drain. */
  async replay(id) {
    const message = await (await this.#ready).replay(id);
    await this.#wake();
    return message;
  }

  /**
   * Asks for a drain: a Background Sync registration of the tag where there is one (the browser
   * fires `sync` in the service worker once online, also after this page is closed); and, from a
   * page that a service worker controls, a message that has it drain now (a registration that is
   * waiting for the browser's retry fires late); with neither, a drain here.
   */
  async #wake() {
    const scope = serviceWorker();
    const registration = scope ? scope.registration : await globalThis.navigator?.serviceWorker?.getRegistration?.();
    let registered = false;
    if (registration?.sync) {
      try {
        await registration.sync.register(this.#tag);
        registered = true;
      } catch {
        // Background Sync refused (permission): drain otherwise.
      }
    }
    const controller = scope ? null : globalThis.navigator?.serviceWorker?.controller;
    if (controller) controller.postMessage({ [DRAIN]: this.#tag });
    else if (!registered) this.drain().catch((err) => console.error("deadletter: the outbox could not drain", err));
  }

  /**
   * Drains on the events that say the network may be back. In a service worker: the `sync`
   * event of the tag (within `event.waitUntil`; a drain that leaves requests waiting rejects, so
   * that the browser fires it again later), a page's message asking for it, the `activate`
   * event, and now (the worker's start). In a page or worker: the `online` event (for browsers
   * without Background Sync) and now, through the service worker when one controls the page (now:
   * the requests a closed or reloaded page left, finding M13; one whose send that page had begun
   * waits for its lease to run out, then for the backoff of its `lease expired` failure). Returns
   * the function that stops listening.
   */
  listen() {
    const scope = serviceWorker();
    const drained = (lastChance) => this.drain().then(({ pending }) => {
      if (pending > 0 && !lastChance) throw new Error(`${pending} requests of the outbox still wait`);
    });
    const listeners = scope
      ? {
        sync: (event) => event.tag === this.#tag && event.waitUntil(drained(event.lastChance)),
        message: (event) => event.data?.[DRAIN] === this.#tag && event.waitUntil(this.drain()),
        activate: (event) => event.waitUntil(this.drain()),
      }
      : { online: () => this.#wake() };
    for (const [type, listener] of Object.entries(listeners)) globalThis.addEventListener(type, listener);
    // Now, as the worker's start does (new-user finding M13, session 7: a page drained only on
    // `online`, so what a reloaded page had left waited for the next one).
    (scope ? this.drain() : this.#wake()).catch((err) => console.error("deadletter: the outbox could not drain", err));
    return () => {
      for (const [type, listener] of Object.entries(listeners)) globalThis.removeEventListener(type, listener);
    };
  }
}
