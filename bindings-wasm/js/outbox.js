// The outbox: HTTP requests that could not be sent (offline, a 5xx) kept as messages of a
// deadletter queue and sent again with its retries, backoff and dead letters. Made for service
// workers (a fetch handler hands requests to `outbox.fetch`; the Background Sync `sync` event and
// the worker's start drain it within `event.waitUntil`), and usable in pages and workers (the
// page lists and replays dead requests, hears `onDead`, and drains on `online` where there is no
// Background Sync). Like Workbox's background sync, with a backoff, dead letters and their history.
//
// Each message's payload is the request as JSON: `{ method, url, headers, body, mode,
// credentials }`, the body base64 (or null). The rules are the queue's; this file holds only the
// mechanics of HTTP and of the service worker's events.

import { DeadLetterError } from "./errors.js";

const DRAIN = "deadletter:drain";

function invalid(message) {
  return new DeadLetterError(`validation failed: request: ${message}`, {
    code: "validation_failed",
    errors: [{ field: "request", code: "invalid", message }],
  });
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
   *   online?: () => boolean }} [options]
   */
  constructor(db, options = {}) {
    const { queue = "outbox", tag, maxRetries = 5, concurrency = 4, backoff, fetch, online } = options;
    this.#online = online ?? (() => globalThis.navigator?.onLine !== false);
    this.#ready = Promise.resolve(db).then((opened) => opened.queue(queue, backoff === undefined ? undefined : { backoff }));
    this.#ready.catch(() => {}); // reported by the calls that use it
    this.#tag = tag ?? `deadletter:${queue}`;
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
    if (!(request instanceof Request)) throw invalid("must be a Request");
    if (request.mode === "navigate") throw invalid("a navigation cannot be sent again");
    if (request.bodyUsed) throw invalid("its body was already read, so it cannot be sent again: pass request.clone() before reading it");
    const body = ["GET", "HEAD"].includes(request.method) ? null : new Uint8Array(await request.clone().arrayBuffer());
    const payload = JSON.stringify({
      method: request.method,
      url: request.url,
      headers: [...request.headers],
      body: body === null || body.length === 0 ? null : base64(body),
      mode: request.mode === "navigate" ? "same-origin" : request.mode,
      credentials: request.credentials,
    });
    const message = await (await this.#ready).enqueue(payload, { maxRetries: this.#maxRetries });
    await this.#wake();
    return message;
  }

  /**
   * Sends `request`; when the network fails or the server answers a status worth retrying
   * (`retryableStatus`), keeps it (`add`) and resolves to a `202 Accepted` response whose header
   * `x-deadletter-queued` holds the message id. Any other answer is resolved as it came. For a
   * service worker's `fetch` event: `event.respondWith(outbox.fetch(event.request))`.
   */
  async fetch(request) {
    const copy = request.clone();
    let response;
    try {
      response = await this.#send(request);
    } catch {
      response = null;
    }
    if (response !== null && !retryableStatus(response.status)) return response;
    const message = await this.add(copy);
    return new Response(JSON.stringify({ queued: message.id }), {
      status: 202,
      statusText: "Accepted",
      headers: { "content-type": "application/json", "x-deadletter-queued": String(message.id) },
    });
  }

  /** The request a message of the outbox holds. */
  static requestOf(message) {
    const { method, url, headers, body, mode, credentials } = JSON.parse(message.payload);
    return new Request(url, { method, headers, body: body === null ? undefined : unbase64(body), mode, credentials });
  }

  /** Sends one message's request and records the outcome: acked, failed (retried later) or dead. */
  async #deliver(queue, message) {
    const lease = { leaseToken: message.leaseToken };
    let response;
    try {
      response = await this.#send(Outbox.requestOf(message));
    } catch (err) {
      await queue.fail(message.id, `${err?.name ?? "Error"}: ${err?.message ?? err}`, lease);
      return false;
    }
    if (response.ok) {
      await queue.succeed(message.id, lease);
      return true;
    }
    const error = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    await queue.fail(message.id, error, { ...lease, retryable: retryableStatus(response.status) });
    return false;
  }

  /**
   * Sends every request that is due, `concurrency` at a time, in claim order; then, while a
   * failed one waits for a retry due within `waitMs` (default 30 s), waits for it and goes on.
   * Offline (the `online` option, default `navigator.onLine`, says false) it sends nothing. Resolves to `{ sent, pending }`: how many
   * were delivered, and how many still wait (offline, or for a later retry).
   */
  async drain({ waitMs = 30_000 } = {}) {
    const queue = await this.#ready;
    let sent = 0;
    for (;;) {
      if (!this.#online()) break;
      const batch = await queue.claimMany(this.#concurrency);
      if (batch.length > 0) {
        for (const ok of await Promise.all(batch.map((m) => this.#deliver(queue, m)))) sent += ok ? 1 : 0;
        continue;
      }
      const next = await queue.nextDueAt();
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
   * without Background Sync), through the service worker when one controls the page. Returns the
   * function that stops listening.
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
    if (scope) this.drain().catch((err) => console.error("deadletter: the outbox could not drain", err));
    return () => {
      for (const [type, listener] of Object.entries(listeners)) globalThis.removeEventListener(type, listener);
    };
  }
}
