// Runs one shared conformance case (tests/conformance/*.json, format in tests/README.md) through
// the JavaScript API. Environment-neutral: no Node imports; the caller loads the cases and passes
// the `open` of the package and an IDBFactory, so it runs in Node (fake-indexeddb) and in browsers.
//
//   import { open } from "./index.js";
//   import { runCase } from "./conformance.mjs";
//   await runCase(open, caseObject, indexedDB);   // throws an Error saying what differed
//
// One rule of the JS API shapes how validation cases are checked: `db.queue(name, { backoff })`
// validates the queue name and the backoff policy when the Queue is made, before an operation's
// other arguments exist. So when a step's queue name or policy is invalid, the error comes from
// `db.queue()` and only those fields can be reported; such a step is checked against the expected
// fields restricted to them (and the error code must still match). `queueFirstSteps` in the result
// counts the steps where this restriction left out an expected field.
import { backoffMs } from "./index.js";

/** The clock's origin for every case: 2026-01-01T00:00:00Z in milliseconds. */
export const BASE = 1767225600000;

/**
 * Case files this package does not run, file name -> reason: the runners skip their cases,
 * saying why (in Node on fake-indexeddb and on SQLite, and in Chromium). None now.
 */
export const SKIPPED_FILES = new Map();

/** Why the cases of `file` are skipped, or `undefined` when they run. */
export function skipReason(file) {
  return SKIPPED_FILES.get(file);
}

/** The JavaScript name of a core field or argument name: its camelCase (`max_retries` -> `maxRetries`). */
export function jsName(name) {
  return name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}

/** Message fields that are instants, written relative to BASE in the cases. */
const INSTANTS = new Set(["retry_after", "created_at", "updated_at", "lease_expires_at", "first_failed_at", "dead_at", "replayed_at", "expires_at"]);
/** The fields `db.queue(name, { backoff })` checks (core names). */
const QUEUE_FIELDS = new Set(["queue", "initial_ms", "multiplier", "cap_ms", "jitter"]);
/** The largest |ms| a Date holds. */
const DATE_LIMIT = 8.64e15;

let counter = 0;

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `{"$token": k}`, `{"$repeat": [s, n]}` and `{"$list": [v, n]}` replaced by what they stand for. */
function resolve(value, tokens) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, tokens));
  if (!isObject(value)) return value;
  if ("$token" in value) {
    const k = value.$token;
    if (!(k < tokens.length)) throw new Error(`no claim #${k} yet`);
    return tokens[k];
  }
  if ("$repeat" in value) {
    const [s, n] = value.$repeat;
    return s.repeat(n);
  }
  if ("$list" in value) {
    const [v, n] = value.$list;
    return Array.from({ length: n }, () => resolve(v, tokens));
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, tokens)]));
}

/** An options object with only the arguments the step passes (absent stays absent), in JS names. */
function pick(args, names) {
  const out = {};
  for (const name of names) if (name in args) out[jsName(name)] = args[name];
  return out;
}

/** An object with every key in JS names. */
function camel(object) {
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [jsName(k), v]));
}

/**
 * An instant argument written relative to BASE: an integer becomes BASE + it, as a Date (or as a
 * number of milliseconds when past the range of Date, so that the core judges it); anything else
 * is passed unchanged.
 */
function instant(value) {
  if (!Number.isInteger(value)) return value;
  const ms = BASE + value;
  return Math.abs(ms) <= DATE_LIMIT ? new Date(ms) : ms;
}

function show(value) {
  return JSON.stringify(value, (_k, v) => (v instanceof Date ? `Date(${v.toISOString()})` : v));
}

/** Whether `actual` is the instant `want` (relative to BASE, or null). */
function sameInstant(want, actual) {
  return want === null ? actual === null : actual instanceof Date && actual.getTime() - BASE === want;
}

function showInstant(actual) {
  return actual instanceof Date ? `BASE+${actual.getTime() - BASE}` : show(actual);
}

function sameHistory(want, actual) {
  return Array.isArray(want) && Array.isArray(actual) && want.length === actual.length
    && want.every((w, i) => isObject(actual[i]) && Object.keys(w).every((k) => (k === "at" ? sameInstant(w.at, actual[i].at) : w[k] === actual[i][k])));
}

/** Compares a message (or stats) object with an expected field subset (core names, instants relative to BASE). */
function matchFields(want, got, instants, what = "message") {
  if (!isObject(got)) throw new Error(`expected a ${what}, got ${show(got)} (want ${show(want)})`);
  for (const [field, value] of Object.entries(want)) {
    const name = jsName(field);
    if (!(name in got)) throw new Error(`${what} has no field ${name}: ${show(got)}`);
    const actual = got[name];
    if (instants.has(field)) {
      if (!sameInstant(value, actual)) {
        throw new Error(`${name}: expected ${value === null ? "null" : `BASE+${value}`}, got ${showInstant(actual)} (${what} ${show(got)})`);
      }
    } else if (field === "errors") {
      if (!sameHistory(value, actual)) {
        throw new Error(`errors: expected ${show(value.map((e) => ({ ...e, at: `BASE+${e.at}` })))}, got ${show(actual)}`);
      }
    } else if (actual !== value) {
      throw new Error(`${name}: expected ${show(value)}, got ${show(actual)} (${what} ${show(got)})`);
    }
  }
}

const matchMessage = (want, got) => matchFields(want, got, INSTANTS);
const matchStats = (want, got) => matchFields(want, got, new Set(["next_due_at"]), "stats");

/** Compares settings with an expected field subset (core names; `backoff` null or a policy, compared field by field). */
function matchSettings(want, got) {
  const { backoff, ...rest } = want;
  matchFields(rest, got, new Set(), "settings");
  if (backoff === undefined) return;
  if (backoff === null ? got.backoff !== null : !isObject(got.backoff)) {
    throw new Error(`backoff: expected ${show(backoff)}, got ${show(got.backoff)}`);
  }
  if (backoff !== null) matchFields(backoff, got.backoff, new Set(), "backoff");
}

function matchList(want, got, match, what) {
  if (!Array.isArray(got)) throw new Error(`expected a list, got ${show(got)}`);
  if (got.length !== want.length) throw new Error(`expected ${want.length} ${what}, got ${got.length}: ${show(got)}`);
  want.forEach((w, i) => match(w, got[i]));
}

function pairs(fields) {
  return fields.map((f) => `${f.field}:${f.code}${f.index === undefined ? "" : `@${f.index}`}`).sort();
}

/** Compares an outcome ({ ok, value } or { ok: false, error, queueFirst }) with `expect`. */
function check(expect, outcome) {
  if ("error" in expect) {
    if (outcome.ok) throw new Error(`expected error ${expect.error}, got ${show(outcome.value)}`);
    const err = outcome.error;
    if (err?.name !== "DeadLetterError") throw new Error(`expected a DeadLetterError, got ${err}`);
    if (err.code !== expect.error) throw new Error(`expected error ${expect.error}, got ${err.code}: ${err.message}`);
    if (expect.fields) {
      let want = expect.fields;
      if (outcome.queueFirst) want = want.filter((f) => QUEUE_FIELDS.has(f.field));
      want = want.map((f) => ({ field: jsName(f.field), code: f.code, index: f.index }));
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
    matchList(expect.messages, got, matchMessage, "messages");
  } else if ("page" in expect) {
    matchList(expect.page.messages, got, matchMessage, "messages");
    if (got.nextAfterId !== expect.page.next_after_id) {
      throw new Error(`nextAfterId: expected ${show(expect.page.next_after_id)}, got ${show(got.nextAfterId)}`);
    }
  } else if ("delay_ms" in expect) {
    if (got !== expect.delay_ms) throw new Error(`expected delay ${expect.delay_ms} ms, got ${show(got)}`);
  } else if ("count" in expect) {
    if (got !== expect.count) throw new Error(`expected count ${expect.count}, got ${show(got)}`);
  } else if ("stats" in expect) {
    matchStats(expect.stats, got);
  } else if ("settings" in expect) {
    matchSettings(expect.settings, got);
  } else if ("queues" in expect) {
    matchList(expect.queues, got, matchStats, "queues");
  } else if ("next_due_at" in expect) {
    if (!sameInstant(expect.next_due_at, got)) {
      throw new Error(`expected next due at ${expect.next_due_at === null ? "null" : `BASE+${expect.next_due_at}`}, got ${showInstant(got)}`);
    }
  }
}

/** The filters of `list` and of the bulk actions (core names); the last six are instants. */
const FILTERS = ["status", "delayed", "payload_contains", "error_contains", "group", "idempotency_key",
  "created_after", "created_before", "updated_after", "updated_before", "dead_after", "dead_before"];

/** The options of `list` (`extra` "after_id") or of a bulk action ("dry_run"): the filters (instants as Dates), `limit` and `extra`. */
function filtered(args, extra) {
  const options = pick(args, [...FILTERS, "limit", extra]);
  for (const name of FILTERS.slice(6)) if (name in args) options[jsName(name)] = instant(args[name]);
  return options;
}

/** An item of `enqueue_many`: an object's keys in JS names; any other value as it is. */
function item(value) {
  return isObject(value) ? camel(value) : value;
}

async function perform(db, q, op, args) {
  switch (op) {
    case "queue":
      return null; // the handle was made: that was the whole step
    case "enqueue":
      return q.enqueue(args.payload, pick(args, ["max_retries", "idempotency_key", "delay_ms", "group", "expires_in_ms"]));
    case "enqueue_many":
      return q.enqueueMany(Array.isArray(args.items) ? args.items.map(item) : args.items);
    case "claim":
      return q.claim(pick(args, ["lease_ms"]));
    case "claim_many":
      return q.claimMany(args.n, pick(args, ["lease_ms"]));
    case "succeed":
      return q.succeed(args.id, pick(args, ["lease_token"]));
    case "fail":
      return q.fail(args.id, args.error, pick(args, ["lease_token", "retryable", "retry_in_ms"]));
    case "extend":
      return q.extend(args.id, pick(args, ["lease_token", "lease_ms"]));
    case "replay":
      return q.replay(args.id, pick(args, ["expires_in_ms"]));
    case "replay_all":
      return q.replayAll(filtered(args, "dry_run"));
    case "delete_all":
      return q.deleteAll(filtered(args, "dry_run"));
    case "retry_now_all":
      return q.retryNowAll(filtered(args, "dry_run"));
    case "retry_now":
      return q.retryNow(args.id);
    case "move":
      return q.move(args.id, args.to_queue);
    case "move_all":
      return q.moveAll(args.to_queue, filtered(args, "dry_run"));
    case "purge":
      return q.purge(pick(args, ["status", "older_than_ms"]));
    case "delete":
      return q.delete(args.id);
    case "reap":
      return q.reap();
    case "stats":
      return q.stats();
    case "next_due_at":
      return q.nextDueAt();
    case "queues":
      return db.queues();
    case "get":
      return q.get(args.id);
    case "list":
      return q.list(filtered(args, "after_id"));
    case "backoff":
      return backoffMs(args.retry_count);
    case "settings":
      return q.settings();
    case "set_settings": {
      const options = pick(args, ["backoff", "max_retries", "lease_ms", "expires_in_ms", "on_expiry"]);
      if (isObject(options.backoff)) options.backoff = camel(options.backoff);
      return q.setSettings(options);
    }
    case "pause":
      return q.pause();
    case "resume":
      return q.resume();
    default:
      throw new Error(`unknown op ${JSON.stringify(op)}`);
  }
}

/** Ops that name no queue, so make no queue handle. */
const WITHOUT_QUEUE = new Set(["backoff", "queues"]);

/**
 * Runs `testCase` on a fresh database (a unique IndexedDB name from `indexedDB`, deleted after);
 * `extraOptions` go to `open` too.
 * Throws an Error naming the step and the difference; resolves to `{ steps, queueFirstSteps }`.
 */
export async function runCase(open, testCase, indexedDB, extraOptions = {}) {
  const name = `deadletter-conformance-${Date.now()}-${++counter}-${Math.random().toString(36).slice(2)}`;
  let at = 0;
  const options = testCase.options ?? {};
  const sample = options.jitter_sample ?? 0;
  const db = await open(name, {
    ...extraOptions,
    indexedDB,
    clock: () => BASE + at,
    random: () => sample,
    ...pick(options, ["lease_ms", "max_payload_bytes"]),
  });
  let died = [];
  db.onDead((message) => died.push(message));
  const tokens = [];
  let queueFirstSteps = 0;
  try {
    for (const [index, step] of testCase.steps.entries()) {
      if ("at" in step) at = step.at;
      for (let run = 0; run < (step.times ?? 1); run += 1) {
        const where = `${testCase.name}: step ${index} (${step.op})${step.times ? ` run ${run + 1} of ${step.times}` : ""}`;
        const args = resolve(step.args ?? {}, tokens);
        died = [];
        let outcome;
        let q = null;
        try {
          if (!WITHOUT_QUEUE.has(step.op)) {
            // set_settings' `backoff` is the policy to store; its handle has the case's.
            const backoff = (step.op === "set_settings" ? undefined : args.backoff) ?? options.backoff;
            q = db.queue(args.queue, backoff === undefined ? undefined : { backoff: camel(backoff) });
          }
        } catch (error) {
          outcome = { ok: false, error, queueFirst: true };
        }
        if (!outcome) {
          try {
            const value = await perform(db, q, step.op, args);
            outcome = { ok: true, value };
            if (step.op === "claim" && value !== null) tokens.push(value.leaseToken);
            if (step.op === "claim_many") tokens.push(...value.map((m) => m.leaseToken));
          } catch (error) {
            outcome = { ok: false, error, queueFirst: false };
          }
        }
        const fields = step.expect?.fields ?? [];
        if (outcome.queueFirst && fields.some((f) => !QUEUE_FIELDS.has(f.field))) queueFirstSteps += 1;
        try {
          check(resolve(step.expect ?? {}, tokens), outcome);
          if ("died" in step) {
            const got = died.map((m) => m.id);
            if (show(got) !== show(step.died)) throw new Error(`expected deaths ${show(step.died)}, got ${show(got)}`);
            for (const m of died) {
              if (m.status !== "dead" || !(m.deadAt instanceof Date)) throw new Error(`onDead got a message that is not dead: ${show(m)}`);
            }
          }
        } catch (why) {
          throw new Error(`${where}: ${why.message}`);
        }
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
