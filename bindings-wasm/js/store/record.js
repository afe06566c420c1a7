// The IndexedDB records (and the API's objects and errors) as object literals of one shape each. The
// WebAssembly core decides every field (src/record.rs: a message as a record with its place in the
// claim lanes and its group; src/queue.rs: a queue's row; both read back through the core's
// checks) and makes the object with these functions (wasm-bindgen copies this file into the
// package's snippets/, beside its glue): V8 makes such objects from a template, where properties
// added one at a time from WebAssembly (Reflect.set with a computed key) cost a generic store
// each, on the path of every record a transaction writes. The API's objects get Dates for instants.
export function shape(kind, id, texts, retryCount, maxRetries, retryAfter, createdAt, updatedAt,
  leaseExpiresAt, firstFailedAt, deadAt, errors, errorsDropped, replayCount, replayedAt, expiresAt, groupAt, lane, at,
  deduplicated) {
  // The core passes NaN for a number that is null, and `undefined` for an empty failure history;
  // the texts come as their UTF-8 bytes, one after the other, with their lengths (see `text`;
  // undefined for a text that is null).
  bytes = texts;
  offset = 0;
  const queue = text(0);
  const payload = text(1);
  const status = text(2);
  const lastError = text(3);
  const leaseToken = text(4);
  const idempotencyKey = text(5);
  const group = text(6);
  const movedFrom = text(7);
  bytes = undefined;
  errors ??= [];
  if (kind !== 2) {
    // A record leaves out the fields that are null (issue 20: a smaller structured clone and stored
    // value, 0.95-0.98x of the cycle's requests in plain IndexedDB); `view` reads one missing as
    // null, as older versions wrote it. The indexes see no difference: a key path whose value, or a
    // compound one's component, is missing yields no key, as one that is null yields no valid key,
    // and either way the record has no entry in that index (IndexedDB 3, 7.1 "evaluate a key path
    // on a value", 5.4 "store a record into an object store" step 5.2).
    const r = kind === 0 ? { queue, payload, status, retryCount, maxRetries, createdAt, updatedAt, errors, errorsDropped,
      replayCount } : { id, queue, payload, status, retryCount, maxRetries, createdAt, updatedAt, errors, errorsDropped,
      replayCount };
    if (retryAfter === retryAfter) r.retryAfter = retryAfter;
    if (lastError !== undefined) r.lastError = lastError;
    if (leaseToken !== undefined) r.leaseToken = leaseToken;
    if (leaseExpiresAt === leaseExpiresAt) r.leaseExpiresAt = leaseExpiresAt;
    if (idempotencyKey !== undefined) r.idempotencyKey = idempotencyKey;
    if (firstFailedAt === firstFailedAt) r.firstFailedAt = firstFailedAt;
    if (deadAt === deadAt) r.deadAt = deadAt;
    if (replayedAt === replayedAt) r.replayedAt = replayedAt;
    if (group !== undefined) r.group = group;
    if (expiresAt === expiresAt) r.expiresAt = expiresAt;
    if (groupAt === groupAt) r.groupAt = groupAt;
    if (lane === lane) r.lane = lane;
    if (at === at) r.at = at;
    if (movedFrom !== undefined) r.movedFrom = movedFrom;
    return r;
  }
  return { id, queue, payload, status, retryCount, maxRetries, retryAfter: date(retryAfter), lastError: lastError ?? null,
    createdAt: date(createdAt), updatedAt: date(updatedAt), leaseToken: leaseToken ?? null,
    leaseExpiresAt: date(leaseExpiresAt), idempotencyKey: idempotencyKey ?? null, firstFailedAt: date(firstFailedAt),
    deadAt: date(deadAt), errors, errorsDropped, replayCount, replayedAt: date(replayedAt), group: group ?? null,
    expiresAt: date(expiresAt), deduplicated, movedFrom: movedFrom ?? null };
}
/**
 * The texts of a record as src/record.rs's `texts` hands them over (issue 20: one view of the
 * module's memory instead of a TextDecoder call and a typed array per text): `bytes` holds, for
 * each text in turn, its length as 4 bytes (little-endian; 0xFFFFFFFF: null) then its UTF-8
 * bytes; `offset` is where the next one starts. Read by `text` while `shape` runs.
 */
let bytes;
let offset = 0;

/**
 * The last text made for each place (queue, payload, status, lastError, leaseToken,
 * idempotencyKey, group, movedFrom): a cycle makes the same texts again and again (a record, then
 * the API's object of the same message; the claim's record, then the ack's), and a text whose
 * bytes are ASCII and those of the last one is that string again, with no typed array nor string
 * made (issue 20: 17 texts of 6 objects a cycle enqueue+claim+succeed, 2 of them new).
 */
const made = ["", "", "", "", "", "", "", ""];

/** The next text of `bytes`, or undefined (null): `made[place]` again, else decoded. */
function text(place) {
  let at = offset;
  const len = (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
  at += 4;
  if (len === 0xffffffff) {
    offset = at;
    return undefined;
  }
  const end = at + len;
  offset = end;
  const last = made[place];
  if (last.length === len) {
    let i = 0;
    // A byte of 0x80 or more is part of a longer UTF-8 sequence: never the same code unit.
    while (i < len && bytes[at + i] < 0x80 && bytes[at + i] === last.charCodeAt(i)) i += 1;
    if (i === len) return last;
  }
  let fresh;
  if (len > 64) {
    fresh = decoder.decode(bytes.subarray(at, end));
  } else {
    let ascii = true;
    for (let i = at; i < end; i += 1) if (bytes[i] > 0x7f) ascii = false;
    fresh = ascii ? String.fromCharCode.apply(null, bytes.subarray(at, end)) : decoder.decode(bytes.subarray(at, end));
  }
  made[place] = fresh;
  return fresh;
}

// As wasm-bindgen's glue decodes: UTF-8 the core made, so never invalid.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true, fatal: true });

/** `{ value, dead, overridden }`: what a call that can make messages dead resolves to (src/plans.rs's `outcome`). */
export function outcome(value, dead, overridden) {
  return { value, dead, overridden };
}

export function attempt(kind, attempt, error, at) {
  return { attempt, error, at: kind === 2 ? date(at) : at };
}

/**
 * A queue's row as a record of the object store `queues` (keyed by `name`); `expires`: whether
 * the queue may hold messages with an expiry (src/queue.rs).
 */
export function queueRecord(name, backoffInitialMs, backoffMultiplier, backoffCapMs, backoffJitter, maxRetries,
  leaseMs, expiresInMs, onExpiry, paused, expiredDead, expiredDiscarded, expires) {
  return { name, backoffInitialMs, backoffMultiplier, backoffCapMs, backoffJitter, maxRetries, leaseMs,
    expiresInMs, onExpiry, paused, expiredDead, expiredDiscarded, expires };
}

/** A backoff policy as the API gives it (the options of `db.queue(name, { backoff })`). */
export function policy(initialMs, multiplier, capMs, jitter) {
  return { initialMs, multiplier, capMs, jitter };
}

/** `QueueSettings`. */
export function settings(backoff, maxRetries, leaseMs, expiresInMs, onExpiry, paused) {
  return { backoff, maxRetries, leaseMs, expiresInMs, onExpiry, paused };
}

/** `QueueStats`. */
export function stats(queue, pending, processing, succeeded, dead, expired, delayed, nextDueAt, oldestDueAgeMs,
  oldestDeadAgeMs, paused, expiredDead, expiredDiscarded) {
  return { queue, pending, processing, succeeded, dead, expired, delayed, nextDueAt: date(nextDueAt), oldestDueAgeMs,
    oldestDeadAgeMs, paused, expiredDead, expiredDiscarded };
}

/** The API's instants are Dates (a record's are numbers of milliseconds); null (or NaN) stays null. */
function date(ms) {
  return ms === null || Number.isNaN(ms) ? null : new Date(ms);
}

/**
 * One rejected field of a `validation_failed` DeadLetterError (`index` only for an item of
 * `enqueueMany`), from the core's field name and message: the JavaScript name is its camelCase
 * (`max_retries` -> `maxRetries`), and an instant is a Date or milliseconds. The same as the
 * native module's `src/names.rs` (Node on SQLite), whose table the conformance runs of both check.
 */
export function fieldError(core, code, text, index) {
  const field = core.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  // The instants of the filters (`created_after`, ..., `dead_before`).
  const message = /_(after|before)$/.test(core)
    ? text.replace("an integer", "a Date or an integer number of milliseconds since the epoch") : text;
  return index === undefined ? { field, code, message } : { field, code, message, index };
}

/**
 * A DeadLetterError (`Class`, registered by the package; before that a plain Error with the same
 * name and properties). A validation error's message lists its fields, `validation failed:
 * items[1].payload: must be a string, got an integer; ...`, as the package's own checks do.
 */
export function deadLetterError(Class, message, code, errors, reason, id, status, queue) {
  if (message === null) {
    const where = (e) => (e.index === undefined ? e.field : `items[${e.index}].${e.field}`);
    message = `validation failed: ${errors.map((e) => `${where(e)}: ${e.message}`).join("; ")}`;
  }
  const details = { code, errors, reason, id, status, queue };
  if (Class !== undefined) return new Class(message, details);
  const error = new Error(message);
  error.name = "DeadLetterError";
  for (const [key, value] of Object.entries(details)) if (value !== undefined) error[key] = value;
  return error;
}

// A record as the core reads it back (src/record.rs's `stored`): the type of every field checked
// here, each value then checked by the core (deadletter::storage's StoredMessage::check). One
// entry per field: [key, the core's name of it, the schema version before which it may be absent
// (then null, or 0 when counted), what else it may hold: 0 null, or nothing (read as null: records
// leave out their null fields, issue 20), 1 nothing, 2 null or, absent from a record older than
// version 3, the count 0].
const WHOLE = [["retryCount", "retry_count", 3, 1], ["maxRetries", "max_retries", 3, 1],
  ["retryAfter", "retry_after", 3, 0], ["createdAt", "created_at", 3, 1], ["updatedAt", "updated_at", 3, 1],
  ["leaseExpiresAt", "lease_expires_at", 3, 0], ["firstFailedAt", "first_failed_at", 3, 0], ["deadAt", "dead_at", 3, 0],
  ["errorsDropped", "errors_dropped", 3, 2], ["replayCount", "replay_count", 3, 2], ["replayedAt", "replayed_at", 3, 0],
  ["expiresAt", "expires_at", 5, 0], ["groupAt", "group_at", 5, 0]];
const TEXT = [["queue", "queue", 3, 1], ["payload", "payload", 3, 1], ["status", "status", 3, 1],
  ["lastError", "last_error", 3, 0], ["leaseToken", "lease_token", 3, 0], ["idempotencyKey", "idempotency_key", 3, 0],
  ["group", "group", 5, 0], ["movedFrom", "moved_from", 6, 0]];

const whole = (v) => Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER;

/** How a record's value is named in a corrupt-record error. */
function kind(v) {
  if (v === undefined) return "nothing";
  if (typeof v === "number") return whole(v) ? `the number ${v}` : "a number that is not a whole one within 2^53";
  if (typeof v === "string") return "a string";
  if (v === null) return "null";
  if (typeof v === "boolean") return "a bool";
  if (typeof v === "bigint") return "a bigint";
  if (typeof v === "symbol") return "a symbol";
  if (typeof v === "function") return "a function";
  if (v instanceof Date) return "a Date";
  return Array.isArray(v) ? "an array" : "an object";
}

/**
 * What field `f` (an entry of WHOLE or TEXT) of a record written by schema `version` reads as
 * when it holds `v`, which is not `what` (its type): null, 0, or a string saying why the record
 * is corrupt.
 */
function other(f, v, version, what) {
  const since = f[2];
  const holds = f[3];
  // A null field is missing from a record of version 8 on (issue 20), null in older ones.
  if (v === null || (v === undefined && (holds === 0 || version < since))) {
    if (holds === 0) return null;
    if (holds === 2 && version < since) return 0;
    return "is null";
  }
  return `holds ${kind(v)}, not ${what}`;
}

/** Where `view` writes a text's length, the length of the failure history, blockedness and the id. */
const LENGTHS = WHOLE.length;
const HISTORY = LENGTHS + TEXT.length;
const BLOCKED = HISTORY + 1;
const ID = BLOCKED + 1;

/**
 * The fields of `record`, written by schema `version`, by type, for src/record.rs's `read`. Into
 * `numbers` (a Float64Array of ID + 1 numbers, a view of the module's memory: no copy) go, by
 * index: WHOLE's numbers (NaN for null), the length in UTF-16 code units of each text of TEXT
 * (NaN: null), how many entries its failure history has, 1 when it is a pending record without
 * a lane (blocked behind its group's head) else 0, and its `id` when that is a number (else NaN;
 * nothing else is read then). Returns the texts, one after the other in TEXT's order, as one
 * string (issue 20: one string handed over per record, where each text was an array entry and a
 * string of its own to hand over), or `[field, why]`: the core's name of the first field holding
 * a value of the wrong type, and what it holds. The history itself, once checked here, is
 * `history(record)`'s.
 */
export function view(record, version, numbers) {
  const id = record !== null && typeof record === "object" ? record.id : undefined;
  numbers[ID] = typeof id === "number" ? id : NaN;
  if (id === undefined) return "";
  // Loops by index, no closures nor destructuring: this runs for every record a step reads, and
  // the iterators and entries of `for...of` over `entries()` were a tenth of a cycle's
  // allocation (issue 20).
  for (let i = 0; i < WHOLE.length; i += 1) {
    const f = WHOLE[i];
    const v = record[f[0]];
    if (whole(v)) {
      numbers[i] = v;
    } else {
      const x = other(f, v, version, "a whole number");
      if (typeof x === "string") return [f[1], x];
      numbers[i] = x ?? NaN;
    }
  }
  let texts = "";
  for (let i = 0; i < TEXT.length; i += 1) {
    const f = TEXT[i];
    const v = record[f[0]];
    if (typeof v === "string") {
      texts += v;
      numbers[LENGTHS + i] = v.length;
    } else {
      const x = other(f, v, version, "a string");
      if (typeof x === "string") return [f[1], x];
      numbers[LENGTHS + i] = NaN;
    }
  }
  let errors = record.errors;
  if (errors === null || (errors === undefined && version < 3)) {
    if (version >= 3) return ["errors", "is null"];
    errors = [];
  }
  if (!Array.isArray(errors)) return ["errors", `holds ${kind(errors)}, not a list`];
  for (let i = 0; i < errors.length; i += 1) {
    const e = errors[i];
    const ok = e !== null && typeof e === "object" && whole(e.attempt) && e.attempt >= 0 && e.attempt <= 0xffffffff
      && typeof e.error === "string" && whole(e.at);
    if (!ok) return ["errors", "holds a bad entry"];
  }
  numbers[HISTORY] = errors.length;
  const lane = record.lane;
  numbers[BLOCKED] = record.status === "pending" && (lane === null || lane === undefined) ? 1 : 0;
  return texts;
}

/** The failure history of a record `view` checked, flat: `[attempt, error, at, ...]`. */
export function history(record) {
  const errors = record.errors ?? [];
  const flat = [];
  for (let i = 0; i < errors.length; i += 1) flat.push(errors[i].attempt, errors[i].error, errors[i].at);
  return flat;
}
