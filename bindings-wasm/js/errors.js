// The error classes of the package. Every promise of the API rejects with a DeadLetterError; the
// WebAssembly side builds them (src/errors.rs) through the class registered in index.js.
// PermanentError is the other way round: users throw it from a `Queue.process` handler.

export class DeadLetterError extends Error {
  /**
   * @param {string} message what went wrong, for humans (not stable)
   * @param {{ code: string, errors?: Array<{ field: string, code: string, message: string }>,
   *   reason?: "wrong_status" | "lease_lost" | "key_taken", id?: number, status?: string, queue?: string }} details
   *   `reason`, `id`, `status` and `queue` become properties only when given (see index.d.ts)
   */
  constructor(message, { code, errors = [], reason, id, status, queue }) {
    super(message);
    this.name = "DeadLetterError";
    this.code = code;
    this.errors = errors;
    if (reason !== undefined) this.reason = reason;
    if (id !== undefined) this.id = id;
    if (status !== undefined) this.status = status;
    if (queue !== undefined) this.queue = queue;
  }
}

/**
 * Thrown by a `Queue.process` handler (or a subclass of it): the message fails with
 * `retryable: false`, so it is dead at once, whatever retries it has left. Any other exception
 * fails it retryably. The recorded error is `"<name>: <message>"`, like any handler's failure.
 */
export class PermanentError extends Error {
  /**
   * @param {string} [message] why the message can never succeed
   * @param {{ cause?: unknown }} [options] as for `Error`
   */
  constructor(message, options) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/**
 * Internal (not exported by the package): what a user's `clock` or `random` option threw while a
 * backend read it during a call (Node's backend reads the clock on a pool thread, under the
 * store's write lock), boxed so that the call rejects with that very value, unchanged.
 */
export class Thrown {
  constructor(err) {
    this.err = err;
  }
}
