// Runs one shared conformance case (tests/conformance/*.json, format in tests/README.md) through
// the JavaScript API. Environment-neutral: no Node imports; the caller loads the cases and passes
// the `open` of the package and an IDBFactory, so it runs in Node (fake-indexeddb) and in browsers.
//
//   import { open } from "./index.js";
//   import { runCase } from "./conformance.mjs";
//   await runCase(open, caseObject, indexedDB);   // throws an Error saying what differed
//
// One rule of the JS API shapes how validation cases are checked: `db.queue(name)` validates the
// queue name when the Queue is made, before an operation's other arguments exist. So when a step's
// queue name is invalid, the error comes from `db.queue()` and only its `queue` field can be
// reported; such a step is checked against the expected fields restricted to `queue` (and the
// error code must still match). `queueFirstSteps` in the result counts these steps.
import { backoffMs } from "./index.js";

/** The clock's origin for every case: 2026-01-01T00:00:00Z in milliseconds. */
export const BASE = 1767225600000;

const JS_NAMES = {
  max_retries: "maxRetries",
  lease_ms: "leaseMs",
  lease_token: "leaseToken",
  after_id: "afterId",
  max_payload_bytes: "maxPayloadBytes",
  retry_count: "retryCount",
  retry_after: "retryAfter",
  last_error: "lastError",
  created_at: "createdAt",
  updated_at: "updatedAt",
  lease_expires_at: "leaseExpiresAt",
};
const TIMESTAMPS = new Set(["retry_after", "created_at", "updated_at", "lease_expires_at"]);

/** The JavaScript name of a core field or argument name. */
export function jsName(name) {
  return JS_NAMES[name] ?? name;
}

let counter = 0;

/** `{"$token": k}` and `{"$repeat": [s, n]}` replaced by the strings they stand for. */
function resolve(value, tokens) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, tokens));
  if (value === null || typeof value !== "object") return value;
  if ("$token" in value) {
    const k = value.$token;
    if (!(k < tokens.length)) throw new Error(`no claim #${k} yet`);
    return tokens[k];
  }
  if ("$repeat" in value) {
    const [s, n] = value.$repeat;
    return s.repeat(n);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, tokens)]));
}

/** An options object with only the arguments the step passes (absent stays absent). */
function pick(args, names) {
  const out = {};
  for (const name of names) if (name in args) out[jsName(name)] = args[name];
  return out;
}

function show(value) {
  return JSON.stringify(value, (_k, v) => (v instanceof Date ? `Date(${v.toISOString()})` : v));
}

/** Compares one message with an expected field subset (core names, timestamps relative to BASE). */
function matchMessage(want, got) {
  if (got === null || typeof got !== "object") {
    throw new Error(`expected a message, got ${show(got)} (want ${show(want)})`);
  }
  for (const [field, value] of Object.entries(want)) {
    const name = jsName(field);
    if (!(name in got)) throw new Error(`message has no field ${name}: ${show(got)}`);
    const actual = got[name];
    if (TIMESTAMPS.has(field)) {
      if (value === null ? actual !== null : !(actual instanceof Date && actual.getTime() - BASE === value)) {
        const shown = actual instanceof Date ? `BASE+${actual.getTime() - BASE}` : show(actual);
        throw new Error(`${name}: expected ${value === null ? "null" : `BASE+${value}`}, got ${shown} (message ${show(got)})`);
      }
    } else if (actual !== value) {
      throw new Error(`${name}: expected ${show(value)}, got ${show(actual)} (message ${show(got)})`);
    }
  }
}

function pairs(fields) {
  return fields.map((f) => `${f.field}:${f.code}`).sort();
}

/** Compares an outcome ({ ok, value } or { ok: false, error, queueFirst }) with `expect`. */
function check(expect, outcome) {
  if ("error" in expect) {
    if (outcome.ok) throw new Error(`expected error ${expect.error}, got ${show(outcome.value)}`);
    const err = outcome.error;
    if (err?.name !== "DeadLetterError") throw new Error(`expected a DeadLetterError, got ${err}`);
    if (err.code !== expect.error) throw new Error(`expected error ${expect.error}, got ${err.code}: ${err.message}`);
    if (expect.fields) {
      let want = expect.fields.map((f) => ({ field: jsName(f.field), code: f.code }));
      if (outcome.queueFirst) want = want.filter((f) => f.field === "queue");
      const [w, g] = [pairs(want), pairs(err.errors)];
      if (w.join() !== g.join()) throw new Error(`expected fields [${w}], got [${g}]: ${err.message}`);
    }
    return;
  }
  if (!outcome.ok) {
    throw new Error(`unexpected error ${outcome.error?.code ?? ""}: ${outcome.error?.message ?? outcome.error}`);
  }
  const got = outcome.value;
  if ("message" in expect) {
    if (expect.message === null) {
      if (got !== null) throw new Error(`expected no message, got ${show(got)}`);
    } else {
      matchMessage(expect.message, got);
    }
  } else if ("messages" in expect) {
    if (!Array.isArray(got)) throw new Error(`expected a list, got ${show(got)}`);
    if (got.length !== expect.messages.length) {
      throw new Error(`expected ${expect.messages.length} messages, got ${got.length}: ${show(got)}`);
    }
    expect.messages.forEach((want, i) => matchMessage(want, got[i]));
  } else if ("delay_ms" in expect) {
    if (got !== expect.delay_ms) throw new Error(`expected delay ${expect.delay_ms} ms, got ${show(got)}`);
  }
}

async function perform(q, op, args) {
  switch (op) {
    case "enqueue":
      return q.enqueue(args.payload, pick(args, ["max_retries"]));
    case "claim":
      return q.claim(pick(args, ["lease_ms"]));
    case "succeed":
      return q.succeed(args.id, pick(args, ["lease_token"]));
    case "fail":
      return q.fail(args.id, args.error, pick(args, ["lease_token", "retryable"]));
    case "replay":
      return q.replay(args.id);
    case "get":
      return q.get(args.id);
    case "list":
      return q.list(pick(args, ["status", "limit", "after_id"]));
    case "backoff":
      return backoffMs(args.retry_count);
    default:
      throw new Error(`unknown op ${JSON.stringify(op)}`);
  }
}

/**
 * Runs `testCase` on a fresh database (a unique IndexedDB name from `indexedDB`, deleted after);
 * `extraOptions` go to `open` too.
 * Throws an Error naming the step and the difference; resolves to `{ steps, queueFirstSteps }`.
 */
export async function runCase(open, testCase, indexedDB, extraOptions = {}) {
  const name = `deadletter-conformance-${Date.now()}-${++counter}-${Math.random().toString(36).slice(2)}`;
  let at = 0;
  const options = testCase.options ?? {};
  const db = await open(name, {
    ...extraOptions,
    indexedDB,
    clock: () => BASE + at,
    ...pick(options, ["lease_ms", "max_payload_bytes"]),
  });
  const tokens = [];
  let queueFirstSteps = 0;
  try {
    for (const [index, step] of testCase.steps.entries()) {
      if ("at" in step) at = step.at;
      const args = resolve(step.args ?? {}, tokens);
      let outcome;
      let q = null;
      try {
        if (step.op !== "backoff") q = db.queue(args.queue);
      } catch (error) {
        outcome = { ok: false, error, queueFirst: true };
      }
      if (!outcome) {
        try {
          const value = await perform(q, step.op, args);
          outcome = { ok: true, value };
          if (step.op === "claim" && value !== null) tokens.push(value.leaseToken);
        } catch (error) {
          outcome = { ok: false, error, queueFirst: false };
        }
      }
      if (outcome.queueFirst && step.expect?.fields?.length > 1) queueFirstSteps += 1;
      try {
        check(resolve(step.expect ?? {}, tokens), outcome);
      } catch (why) {
        throw new Error(`${testCase.name}: step ${index} (${step.op}): ${why.message}`);
      }
    }
  } finally {
    db.close();
    try {
      indexedDB?.deleteDatabase(name);
    } catch {
      // best effort: the database is unique and empty of importance
    }
  }
  return { steps: testCase.steps.length, queueFirstSteps };
}
