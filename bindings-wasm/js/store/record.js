// The IndexedDB records (and the API's messages) as object literals of one shape each. The
// WebAssembly core decides every field (src/record.rs: a message as a record with its claim lane,
// read back through the core's checks) and makes the object with these functions (wasm-bindgen
// copies this file into the package's snippets/, beside its glue): V8 makes such objects from a
// template, where properties added one at a time from WebAssembly (Reflect.set with a computed
// key) cost a generic store each, on the path of every record a transaction writes. The API's
// object (kind 2) gets Dates for instants.
export function shape(kind, id, queue, payload, status, retryCount, maxRetries, retryAfter, lastError,
  createdAt, updatedAt, leaseToken, leaseExpiresAt, idempotencyKey, firstFailedAt, deadAt, errors,
  errorsDropped, replayCount, replayedAt, lane, at, deduplicated) {
  switch (kind) {
    case 0: return { queue, payload, status, retryCount, maxRetries, retryAfter, lastError, createdAt,
      updatedAt, leaseToken, leaseExpiresAt, idempotencyKey, firstFailedAt, deadAt, errors,
      errorsDropped, replayCount, replayedAt, lane, at };
    case 1: return { id, queue, payload, status, retryCount, maxRetries, retryAfter, lastError,
      createdAt, updatedAt, leaseToken, leaseExpiresAt, idempotencyKey, firstFailedAt, deadAt, errors,
      errorsDropped, replayCount, replayedAt, lane, at };
    default: return { id, queue, payload, status, retryCount, maxRetries, retryAfter: date(retryAfter),
      lastError, createdAt: date(createdAt), updatedAt: date(updatedAt), leaseToken,
      leaseExpiresAt: date(leaseExpiresAt), idempotencyKey, firstFailedAt: date(firstFailedAt),
      deadAt: date(deadAt), errors, errorsDropped, replayCount, replayedAt: date(replayedAt),
      deduplicated };
  }
}
export function attempt(kind, attempt, error, at) {
  return { attempt, error, at: kind === 2 ? date(at) : at };
}

/** The API's instants are Dates (a record's are numbers of milliseconds); null stays null. */
function date(ms) {
  return ms === null ? null : new Date(ms);
}
