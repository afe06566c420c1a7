// Types of the npm package `deadletter` (hand-written; checked by `tsc --noEmit` on
// examples/example.ts in `make test-js`). Units: milliseconds; timestamps are UTC `Date`s.

/** The stable error codes; part of the public API. */
export type ErrorCode = "validation_failed" | "not_found" | "conflict" | "store";

/** Every error code, as in the Rust core. */
export declare const CODES: readonly ErrorCode[];

/** Where a message is in its lifecycle. */
export type Status = "pending" | "processing" | "succeeded" | "dead";

/** One rejected argument of a `validation_failed` error. */
export interface FieldError {
  /**
   * The argument's JavaScript name: `queue`, `payload`, `maxRetries`, `leaseMs`, `leaseToken`,
   * `id`, `error`, `retryable`, `status`, `limit`, `afterId`, `retryCount`, or an `open` option
   * (`name`, `indexedDB`, `clock`, `leaseMs`, `maxPayloadBytes`), or `options`
   * when an options argument is not an object; for code `unknown`, the unknown option key.
   */
  readonly field: string;
  /**
   * `type`, `empty`, `too_long`, `too_large`, `out_of_range` or `invalid` (the core's codes, the
   * same as Python's), or `unknown`: an options object has a key that the method does not take
   * (such as `leaseMS` for `leaseMs`). `unknown` is JavaScript-only: Python raises `TypeError`
   * for an unknown keyword argument. Unknown keys are reported before any other check, and alone.
   *
   * `type` also covers a string with an unpaired UTF-16 surrogate (`"\ud800"`): it cannot be
   * stored verbatim, so it is rejected (as Python rejects a `str` with a lone surrogate), never
   * replaced with U+FFFD.
   */
  readonly code: "type" | "empty" | "too_long" | "too_large" | "out_of_range" | "invalid" | "unknown";
  /** What was wrong, for humans; not stable. */
  readonly message: string;
}

/**
 * The only error the package throws or rejects with. A call that fails has changed nothing.
 * - `validation_failed`: an argument was rejected; `errors` lists every rejected field (or every
 *   unknown option key, see `FieldError.code`).
 * - `not_found`: no message with this id in this queue (ids of other queues are invisible);
 *   `queue` and `id` say which.
 * - `conflict`: the transition is not allowed now (wrong status, or the lease token is not the
 *   current one: the lease expired and the message may be with another worker); `reason`, `id`
 *   and, for `wrong_status`, `status` say which.
 * - `store`: IndexedDB failed (quota, abort, blocked open, closed database, I/O), the database is
 *   another application's, or a stored record holds a value deadletter never writes (the message
 *   names the message id and the field).
 */
export declare class DeadLetterError extends Error {
  /** `reason`, `id`, `status` and `queue` become properties only when given (not undefined). */
  constructor(
    message: string,
    details: {
      code: ErrorCode;
      errors?: FieldError[];
      reason?: ConflictReason;
      id?: number;
      status?: Status;
      queue?: string;
    },
  );
  readonly name: "DeadLetterError";
  readonly code: ErrorCode;
  /** The rejected fields of a `validation_failed` error; empty for the other codes. */
  readonly errors: readonly FieldError[];
  /**
   * Only for `conflict` (absent otherwise): why the transition was refused, as Python's
   * `ConflictError.reason`.
   */
  readonly reason?: ConflictReason;
  /**
   * Only for `not_found` and `conflict` (absent otherwise): the id of the message asked for
   * (`NotFoundError.id` / `ConflictError.id` in Python).
   */
  readonly id?: number;
  /**
   * Only for a `conflict` with reason `wrong_status` (absent otherwise, including `lease_lost`,
   * where Python's `ConflictError.status` is None): the message's current status.
   */
  readonly status?: Status;
  /**
   * Only for `not_found` (absent otherwise): the queue searched (`NotFoundError.queue` in Python).
   */
  readonly queue?: string;
}

/**
 * Why a `conflict` happened: `wrong_status`, the operation is not allowed from the message's
 * current status (`status` says which); `lease_lost`, the lease token shown is not the current
 * one (the lease expired and the message may now be with another worker).
 */
export type ConflictReason = "wrong_status" | "lease_lost";

/** A message, as every method returns it: a plain object. */
export interface Message {
  /** Assigned on enqueue: 1, 2, 3... strictly increasing within a database. */
  readonly id: number;
  /** The queue it belongs to. */
  readonly queue: string;
  /** The payload, exactly as enqueued. */
  readonly payload: string;
  readonly status: Status;
  /** Failed attempts since enqueue or the last replay (an expired lease counts as one). */
  readonly retryCount: number;
  /** Failed attempts allowed before the message is dead (1..10). */
  readonly maxRetries: number;
  /** For a `pending` message after a failure: not claimable before this instant; else null. */
  readonly retryAfter: Date | null;
  /** The error of the last failed attempt (truncated past 64 KiB); null before any failure. */
  readonly lastError: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** While `processing`: the token to pass to `succeed` / `fail`; else null. */
  readonly leaseToken: string | null;
  /** While `processing`: when the lease runs out; else null. */
  readonly leaseExpiresAt: Date | null;
}

/**
 * Options objects (of `open`, `enqueue`, `claim`, `succeed`, `fail`, `list`) take only the keys of
 * their interface: any other own enumerable key is rejected with a `validation_failed`
 * `DeadLetterError` whose `errors` has `{ field: <the key>, code: "unknown" }`, before anything is
 * done. `undefined` or `null` as a value means the default.
 */
export interface OpenOptions {
  /**
   * The IndexedDB factory to use; default `globalThis.indexedDB`. It must be of the IndexedDB
   * implementation whose classes are the globals (`IDBKeyRange`, `IDBCursor`, ...), e.g. another
   * `new IDBFactory()`: in Node, install fake-indexeddb's globals (`fake-indexeddb/auto`).
   */
  indexedDB?: IDBFactory;
  /** The current time as a `Date` or in milliseconds since the epoch; default `Date.now`. */
  clock?: () => Date | number;
  /** Default lease (visibility timeout) of `claim`, in milliseconds: 1..43200000 (12 h); default 30000. */
  leaseMs?: number;
  /** Largest payload, in bytes of UTF-8: 1..67108864 (64 MiB); default 1048576 (1 MiB). */
  maxPayloadBytes?: number;
}

export interface EnqueueOptions {
  /** Failed attempts allowed before the message is dead: integer 1..10; default 3. */
  maxRetries?: number | null;
}

export interface ClaimOptions {
  /** The lease, in milliseconds: integer 1..43200000; default the database's `leaseMs`. */
  leaseMs?: number | null;
}

export interface SucceedOptions {
  /** The token `claim` returned; when given it must be the current one (else `conflict`). */
  leaseToken?: string | null;
}

export interface FailOptions {
  /** The token `claim` returned; when given it must be the current one (else `conflict`). */
  leaseToken?: string | null;
  /** false: dead at once, whatever retries are left; default true. */
  retryable?: boolean | null;
}

export interface ListOptions {
  /** Only messages in this status; default all. */
  status?: Status | null;
  /** Page size: integer 1..1000; default 100. */
  limit?: number | null;
  /** Only ids greater than this (keyset pagination: pass the last id of the previous page). */
  afterId?: number | null;
}

/** One named queue of a database. Every method rejects only with a `DeadLetterError`. */
export declare class Queue {
  private constructor();
  /** The queue name. */
  readonly name: string;
  /**
   * Adds a `pending` message. `payload`: a string of at most `maxPayloadBytes` bytes of UTF-8,
   * stored verbatim (serialize objects yourself: a Date, an object or a number is rejected, and
   * so is a string with an unpaired surrogate, which has no UTF-8 form).
   * Rejects with `validation_failed` or `store`.
   */
  enqueue(payload: string, options?: EnqueueOptions): Promise<Message>;
  /**
   * Takes the next due message (oldest `createdAt` first, then lowest id) and leases it for
   * `leaseMs`; resolves to null when nothing is due. Leases of this queue that ran out are first
   * counted as failed attempts. Rejects with `validation_failed` or `store`.
   */
  claim(options?: ClaimOptions): Promise<Message | null>;
  /**
   * Acks a `processing` message: it becomes `succeeded`.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not processing, or lease lost) or `store`.
   */
  succeed(id: number, options?: SucceedOptions): Promise<Message>;
  /**
   * Records a failed attempt of a `processing` message: back to `pending` with a backoff of
   * `min(2^retryCount, 3600)` s, or `dead` when retries are used up or `retryable` is false.
   * `error`: a string, stored truncated past 64 KiB.
   * Rejects with `validation_failed`, `not_found`, `conflict` or `store`.
   */
  fail(id: number, error: string, options?: FailOptions): Promise<Message>;
  /**
   * Sends a `dead` message back: `pending`, `retryCount` 0, claimable at once.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not dead) or `store`.
   */
  replay(id: number): Promise<Message>;
  /** One message. Rejects with `validation_failed`, `not_found` or `store`. */
  get(id: number): Promise<Message>;
  /** One page of messages ordered by id. Rejects with `validation_failed` or `store`. */
  list(options?: ListOptions): Promise<Message[]>;
}

/** An open queue database (one IndexedDB database). */
export declare class Database {
  private constructor();
  /** The IndexedDB database name. */
  readonly name: string;
  /**
   * The queue `name`: a non-empty string of at most 255 characters.
   * Throws (synchronously) a `validation_failed` `DeadLetterError` otherwise.
   */
  queue(name: string): Queue;
  /**
   * Closes the IndexedDB connection (running transactions finish first). Every later call
   * rejects with a `store` `DeadLetterError`. The connection also closes by itself when another
   * tab upgrades the database.
   */
  close(): void;
}

/**
 * Opens, creating it when new, the queue database stored in IndexedDB database `name` (a
 * non-empty string). Rejects with `validation_failed` (an empty or non-string name, bad options)
 * or `store` (no IndexedDB, open blocked by other
 * connections for more than 5 s, quota, ...). An existing database of that name that is not a
 * deadletter one (without deadletter's `messages` store and indexes, or at a version above
 * deadletter's) is refused with `store`, saying it is not a deadletter database, and left exactly
 * as it was.
 */
export declare function open(name: string, options?: OpenOptions): Promise<Database>;

/**
 * The delay before the next attempt after the `retryCount`-th failure, in milliseconds:
 * `min(2^retryCount, 3600)` seconds. Throws a `validation_failed` `DeadLetterError` unless
 * `retryCount` is an integer >= 0.
 */
export declare function backoffMs(retryCount: number): number;
