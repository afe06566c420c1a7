// Types of the npm package `deadletter` (hand-written; checked by `tsc --noEmit` on
// examples/example.ts in `make test-js`). Units: milliseconds; timestamps are UTC `Date`s. The
// same types in browsers and workers (IndexedDB) and in Node (SQLite files, through the native
// module; IndexedDB with the `indexedDB` option).
// One file (about 930 lines): the package's single type entry (`types` in package.json).

/** The stable error codes; part of the public API. */
export type ErrorCode = "validation_failed" | "not_found" | "conflict" | "store";

/** Every error code, as in the Rust core. */
export declare const CODES: readonly ErrorCode[];

/** Where a message is in its lifecycle. */
export type Status = "pending" | "processing" | "succeeded" | "dead";

/** One rejected argument of a `validation_failed` error. */
export interface FieldError {
  /**
   * The argument's JavaScript name: `queue`, `payload`, `maxRetries`, `idempotencyKey`,
   * `delayMs`, `group`, `expiresInMs`, `items`, `n`, `leaseMs`, `leaseToken`, `id`, `error`,
   * `retryable`, `retryInMs`, `status`, `limit`, `afterId`, `dryRun`, `toQueue`, a filter (`delayed`,
   * `payloadContains`, `errorContains`, `group`, `idempotencyKey`, `createdAfter`,
   * `createdBefore`, `updatedAfter`, `updatedBefore`, `deadAfter`, `deadBefore`), `olderThanMs`,
   * `retryCount`, `onExpiry` (`setSettings`);
   * a backoff option (`backoff` when it is not an object, `initialMs`, `multiplier`, `capMs`,
   * `jitter`); an `open` option (`name`, `indexedDB`, `clock`, `random`, `leaseMs`,
   * `maxPayloadBytes`, `durability`): `clock` when the clock's time, or an instant derived from it (a lease, a
   * backoff, a delay), is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z (code
   * `out_of_range`), `random` when the random source returns anything but a number in [0, 1);
   * `callback` for `onDead`; for `process`, `handler`, `signal`, `concurrency`,
   * `pollIntervalMs`, `shutdownTimeoutMs` and `leaseMs`; `options` when an options argument is
   * not an object; for code `unknown`, the unknown option key.
   */
  readonly field: string;
  /**
   * `type`, `empty`, `too_long`, `too_large`, `out_of_range` or `invalid` (the core's codes, the
   * same as Python's), or `unknown`: an options object has a key that the method does not take
   * (such as `leaseMS` for `leaseMs`). `unknown` is JavaScript-only: Python raises `TypeError`
   * for an unknown keyword argument. Unknown keys are reported before any other check, and alone;
   * then, alone too, an id, `afterId` or bulk `limit` above `Number.MAX_SAFE_INTEGER` (code
   * `out_of_range`: from 2 ** 53 on a number may stand for another integer, 2 ** 53 + 1 is 2 ** 53).
   *
   * `type` also covers a string with an unpaired UTF-16 surrogate (`"\ud800"`): it cannot be
   * stored verbatim, so it is rejected (as Python rejects a `str` with a lone surrogate), never
   * replaced with U+FFFD.
   */
  readonly code: "type" | "empty" | "too_long" | "too_large" | "out_of_range" | "invalid" | "unknown";
  /** What was wrong, for humans; not stable. */
  readonly message: string;
  /** Only for a field of an `enqueueMany` item (absent otherwise): the item's position, 0-based. */
  readonly index?: number;
}

/**
 * The only error the package throws or rejects with. A call that fails has changed nothing, but
 * for the bulk operations `replayAll`, `deleteAll`, `retryNowAll`, `moveAll` and `purge`, which commit in
 * batches (see each).
 * - `validation_failed`: an argument was rejected; `errors` lists every rejected field (or every
 *   unknown option key, see `FieldError.code`).
 * - `not_found`: no message with this id in this queue (ids of other queues are invisible);
 *   `queue` and `id` say which.
 * - `conflict`: the transition is not allowed now (wrong status, or the lease token is not the
 *   current one while the message is `processing`: another worker holds it, or, for `move`, a
 *   message of the target queue already carries its idempotency key: `key_taken`); `reason`,
 *   `id` and, for `wrong_status`, `status` say which.
 * - `store`: IndexedDB failed (quota, abort, blocked open, closed database, I/O), the database is
 *   another application's, or a stored record holds a value deadletter never writes (the message
 *   names the message id and the field). In Node on a SQLite file: the file cannot be opened (a
 *   directory, no permission), it is another application's or a newer deadletter's (left as it
 *   was), another process held its write lock for more than 30 s, the disk failed, or the
 *   database is closed; and `open(path)` on a platform without the prebuilt native module.
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
   * Only for a `conflict` with reason `wrong_status` (absent otherwise, including `lease_lost`
   * and `key_taken`, where Python's `ConflictError.status` is None): the message's current status.
   */
  readonly status?: Status;
  /**
   * Only for `not_found` (absent otherwise): the queue searched (`NotFoundError.queue` in Python).
   */
  readonly queue?: string;
}

/**
 * Throw it (or a subclass) from a `Queue.process` handler when the message can never succeed
 * (a malformed payload, a refused request): the message is failed with `retryable: false`, so it
 * is dead at once, whatever retries it has left. Any other exception fails it retryably. Either
 * way the recorded error is `"<name>: <message>"` (`PermanentError: malformed payload`; a
 * subclass that sets its own `name` is recorded under that name).
 */
export declare class PermanentError extends Error {
  constructor(message?: string, options?: { cause?: unknown });
}

/**
 * Why a `conflict` happened: `wrong_status`, the operation is not allowed from the message's
 * current status (`status` says which); `lease_lost`, the message is `processing` but the lease
 * token shown is not the one of its current lease (that lease expired, was reaped, and another
 * worker claimed the message, or the token was never this message's). A worker that outlived its
 * lease gets `lease_lost` while another worker holds the message, and `wrong_status` once the
 * expired lease was reaped and the message is no longer processing (`pending` in backoff, `dead`,
 * or `succeeded` by another worker); `key_taken`, a `move` whose target queue already holds a
 * message with the same idempotency key.
 */
export type ConflictReason = "wrong_status" | "lease_lost" | "key_taken";

/** One failed attempt in a message's history (`Message.errors`). */
export interface FailedAttempt {
  /** Which failed attempt this was, counting every failure since enqueue, across replays: 1 for the first. */
  readonly attempt: number;
  /** The error reported (truncated past 64 KiB), or `"lease expired"` when the lease ran out. */
  readonly error: string;
  /** When the failure was recorded. */
  readonly at: Date;
}

/**
 * A message, as every method returns it: a plain object (structured-cloneable: `onDead` callbacks
 * in other tabs and workers receive the same fields, Dates included).
 */
export interface Message {
  /** Assigned on enqueue: 1, 2, 3... strictly increasing within a database, never reused. */
  readonly id: number;
  /** The queue it belongs to. */
  readonly queue: string;
  /** The payload, exactly as enqueued. */
  readonly payload: string;
  readonly status: Status;
  /** Failed attempts since enqueue or the last replay (an expired lease counts as one). */
  readonly retryCount: number;
  /** How many failed attempts make the message dead (1..10): with 3, the third failure does (3 attempts in all). */
  readonly maxRetries: number;
  /**
   * Set exactly while the message is `pending` and waits for its backoff (after a failure) or
   * its enqueue delay: not claimable before this instant. Else null (claim and replay clear it).
   */
  readonly retryAfter: Date | null;
  /** The error of the last failed attempt (truncated past 64 KiB); null before any failure and after a replay. */
  readonly lastError: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** While `processing`: the token to pass to `succeed`, `fail` and `extend`; else null. */
  readonly leaseToken: string | null;
  /** While `processing`: when the lease runs out; else null. */
  readonly leaseExpiresAt: Date | null;
  /** The producer's idempotency key (at most one message of a queue carries it), or null. */
  readonly idempotencyKey: string | null;
  /** When the first failed attempt was recorded; never changed afterwards (replay keeps it). */
  readonly firstFailedAt: Date | null;
  /** When it last became dead; null unless `dead`. */
  readonly deadAt: Date | null;
  /** The failure history, oldest first: at most the last 20 failed attempts (replay keeps it). */
  readonly errors: readonly FailedAttempt[];
  /** How many older entries were dropped from `errors`. */
  readonly errorsDropped: number;
  /** How many times it was replayed from the dead-letter queue. */
  readonly replayCount: number;
  /** When it was last replayed, or null. */
  readonly replayedAt: Date | null;
  /** Its ordering group (see `EnqueueOptions.group`), or null. */
  readonly group: string | null;
  /**
   * When it expires (`EnqueueOptions.expiresInMs`): still `pending` then, it is never delivered.
   * Null when it never expires.
   */
  readonly expiresAt: Date | null;
  /**
   * On the result of `enqueue` / `enqueueMany`: true when a message with that idempotency key
   * already existed and was returned instead of adding one. False everywhere else.
   */
  readonly deduplicated: boolean;
  /**
   * The queue the message was last moved from (`Queue.move` / `moveAll`); null until it is
   * moved. Always null on IndexedDB, which does not move messages yet.
   */
  readonly movedFrom: string | null;
}

/** A message as `claim`, `claimMany` and `process` hand it out: leased, so its token is there. */
export interface ClaimedMessage extends Message {
  readonly status: "processing";
  /** The token to pass to `succeed`, `fail` and `extend`. */
  readonly leaseToken: string;
  /** When the lease runs out, unless `extend` pushes it on. */
  readonly leaseExpiresAt: Date;
}

/** The statistics of one queue at the clock's now (`Queue.stats`, `Database.queues`): a plain object. */
export interface QueueStats {
  readonly queue: string;
  /**
   * Messages waiting to be claimed (due, delayed by a backoff or an enqueue delay, or waiting
   * behind the head of their ordering group).
   */
  readonly pending: number;
  /** Messages held by a worker (expired leases included until reaped). */
  readonly processing: number;
  readonly succeeded: number;
  /** Messages in the dead-letter queue. */
  readonly dead: number;
  /** `processing` messages whose lease has already run out (reaped by the next claim or `reap`). */
  readonly expired: number;
  /**
   * `pending` messages whose `retryAfter` is still in the future (not counting the members of an
   * ordering group waiting behind its head: their turn comes when the head leaves).
   */
  readonly delayed: number;
  /** When the next delayed message becomes due (the earliest future `retryAfter`), or null. */
  readonly nextDueAt: Date | null;
  /**
   * How long the first due `pending` message in claim order (the one the next claim takes: the
   * lowest id) has been in the queue (since its `createdAt`), in milliseconds, or null.
   */
  readonly oldestDueAgeMs: number | null;
  /** How long the oldest dead message has been dead, in milliseconds, or null. */
  readonly oldestDeadAgeMs: number | null;
  /** Whether the queue is paused (`Queue.pause`): it claims nothing. */
  readonly paused: boolean;
  /**
   * Messages that expired while `pending` and became dead (`onExpiry: "dead"`), since the queue's
   * settings were first stored; purging does not lower it.
   */
  readonly expiredDead: number;
  /** Messages that expired while `pending` and were deleted (`onExpiry: "discard"`), likewise. */
  readonly expiredDiscarded: number;
}

/**
 * The settings stored with a queue (`Queue.settings`, `setSettings`, `pause`, `resume`): the
 * defaults its operations apply when a call gives none, the same in every tab, worker and
 * process on the database (the Python package and the HTTP API on a SQLite file too). Null:
 * unset, the fallback applies. Precedence, for every operation: the call's own argument, else the
 * stored setting, else the database's `leaseMs` (the lease), else the built-in default; except
 * the backoff given to a queue handle in code (`db.queue(name, { backoff })`), which wins over the
 * stored one for that handle's calls.
 */
export interface QueueSettings {
  /** The backoff policy of failures and expired leases; null: the handle's, else `min(2^n, 3600)` s. */
  readonly backoff: Readonly<Required<BackoffOptions>> | null;
  /** The `maxRetries` of an enqueue that gives none (1..10); null: 3. */
  readonly maxRetries: number | null;
  /** The lease of a claim or extend that gives none, in milliseconds; null: the database's `leaseMs`. */
  readonly leaseMs: number | null;
  /** The expiry of an enqueue (or replay) that gives none, in milliseconds from then; null: never. */
  readonly expiresInMs: number | null;
  /**
   * What expiry does to a message still `pending` at its `expiresAt`: `"dead"` (default: kept in
   * the dead-letter queue with the error `"expired"`, replayable, told to `onDead`) or
   * `"discard"` (deleted; its idempotency key is free again).
   */
  readonly onExpiry: "dead" | "discard";
  /** Whether the queue is paused. */
  readonly paused: boolean;
}

/**
 * The settings `setSettings` stores. They replace the stored ones: an option left out (or null)
 * is unset again. Each is checked like its per-call twin; every rejected one is reported together.
 */
export interface SettingsOptions {
  /** The policy (fields left out take their defaults); null or left out: none stored. */
  backoff?: BackoffOptions | null;
  /** Integer 1..10. */
  maxRetries?: number | null;
  /** In milliseconds: integer 1..43200000 (12 h). */
  leaseMs?: number | null;
  /** In milliseconds: integer 1..31536000000 (365 days). */
  expiresInMs?: number | null;
  /** `"dead"` (default) or `"discard"`. */
  onExpiry?: "dead" | "discard" | null;
}

/**
 * Options objects (of `open`, `queue`, `backoff`, `enqueue`, the `enqueueMany` items, `claim`,
 * `claimMany`, `extend`, `succeed`, `fail`, `replay`, `replayAll`, `purge`, `list`,
 * `setSettings`, `process`) take only the keys of
 * their interface, read from its own enumerable keys only (those `JSON.stringify` and
 * `structuredClone` see: a key inherited from a prototype is neither read nor refused); any
 * other own enumerable key is rejected with a `validation_failed`
 * `DeadLetterError` whose `errors` has `{ field: <the key>, code: "unknown" }` (with `index` for
 * an item), before anything is done. `undefined` or `null` as a value means the default. Each
 * key is read once; what a getter (or a `Proxy`) throws rejects the call with that very value,
 * unchanged, and nothing is written. An error's `message` says `undefined` or `null`, as given;
 * an invalid `Date` (`new Date(NaN)`) is named so.
 */
export interface OpenOptions {
  /**
   * The IndexedDB factory to use; default `globalThis.indexedDB`. It must be of the IndexedDB
   * implementation whose classes are the globals (`IDBKeyRange`, `IDBCursor`, ...), e.g. another
   * `new IDBFactory()`. In Node, `open` opens a SQLite file unless this option is given: with it,
   * the IndexedDB backend runs as in browsers (install the implementation's globals too, e.g.
   * `fake-indexeddb/auto`). A value without an `open` method is rejected (`validation_failed`,
   * field `indexedDB`, code `type`).
   */
  indexedDB?: IDBFactory;
  /**
   * The current time as a `Date` or in milliseconds since the epoch (floored); default
   * `Date.now`. Called once per call: by a write (enqueue, claim, ack, fail, extend, replay, each
   * batch of `replayAll`, `reap`) inside its transaction, once the transaction's first request
   * (the read of the queue's settings; an ack's, which reads none, the read of its message) has
   * completed, when IndexedDB runs it (after the
   * transactions of other tabs and workers before it on the same stores) so that a call that
   * waited for another decides with the time it got its turn (in Node on a SQLite file: once the
   * store holds the file's write lock); by a read (`stats`, `nextDueAt`, `queues`), `purge` and
   * the worker loop's idle wait when they start. It must not await anything. A time that is no time
   * (NaN, an invalid Date, a string) rejects the call with a `type` error on `clock`; a time
   * outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z, or one from which a lease, backoff or
   * delay would pass its end, with `out_of_range` on `clock`; nothing is written then. If it
   * throws, the call rejects with what it threw, unchanged, and nothing is read or written.
   */
  clock?: () => Date | number;
  /**
   * The jitter source: returns a number in [0, 1), called once per `claim`, `claimMany`, `reap`
   * and `fail` (the messages one call reschedules get samples spread from it); default
   * `Math.random`. Anything else rejects that call (`validation_failed`, field `random`); if it
   * throws, the call rejects with what it threw, unchanged, and nothing is written. For tests.
   */
  random?: () => number;
  /** Default lease (visibility timeout) of `claim`, in milliseconds: 1..43200000 (12 h); default 30000. */
  leaseMs?: number;
  /** Largest payload, in bytes of UTF-8: 1..67108864 (64 MiB); default 1048576 (1 MiB). */
  maxPayloadBytes?: number;
  /**
   * SQLite files (Node) only: `"full"` (default) syncs the file's write-ahead log to disk before
   * each call resolves, so nothing acknowledged is lost even on power loss; `"normal"` syncs it
   * at checkpoints only: safe against the process's crash, but the last commits may be lost on
   * power loss or an OS crash, and many times faster one call at a time. Another string is
   * `invalid`, another value `type`. With IndexedDB (which commits as the browser decides) only
   * `"full"` is taken; `"normal"` is `invalid` there.
   */
  durability?: "full" | "normal" | null;
}

/**
 * A backoff policy: the delay after the n-th failure is `min(initialMs * multiplier^(n-1),
 * capMs)` milliseconds (rounded), then spread by `jitter`. The default is `min(2^n, 3600)` s.
 */
export interface BackoffOptions {
  /** Delay after the first failure, in milliseconds: integer 0..2592000000 (30 days); default 2000. */
  initialMs?: number | null;
  /** Growth factor per further failure: a number in 1..100; default 2. */
  multiplier?: number | null;
  /** Longest delay, in milliseconds: integer 0..2592000000 (30 days); default 3600000 (1 h). */
  capMs?: number | null;
  /**
   * `"full"`: uniform in [0, delay); `"equal"`: uniform in [delay/2, delay) (AWS's definitions);
   * null: none (default). Anything else is `invalid`.
   */
  jitter?: "full" | "equal" | null;
}

export interface QueueOptions {
  /**
   * How failed messages wait before their next attempt, for this handle's calls: the handle's own
   * policy, an explicit choice in code, so it wins over the one stored with the queue
   * (`setSettings`). Without it, the stored policy applies, else `min(2^n, 3600)` s. A handle
   * whose own policy is applied while a different one is stored warns once (`console.warn`):
   * give the handle none, or store the same, to agree with the other processes.
   */
  backoff?: BackoffOptions | null;
}

export interface EnqueueOptions {
  /**
   * How many failed attempts make the message dead: integer 1..10; default the queue's stored
   * `maxRetries`, else 3 (the third failure makes it dead).
   */
  maxRetries?: number | null;
  /**
   * A non-empty string of at most 255 characters: when a message of this queue already carries
   * it (whatever its status), that message is returned with `deduplicated: true` and nothing is
   * added. Enforced by a unique index, also across tabs and workers.
   */
  idempotencyKey?: string | null;
  /** Not claimable before now + `delayMs` milliseconds: integer 0..2592000000 (30 days); default 0. */
  delayMs?: number | null;
  /**
   * Its ordering group: a non-empty string of at most 255 characters without NUL. A queue's
   * messages of one group are delivered one at a time, in the order they entered the group: a
   * grouped message is claimable only while it is its group's head, the first of the group's
   * messages that are `pending` (due, delayed or in backoff) or `processing`. When the head
   * succeeds, dies (retries used up, a permanent failure, its lease running out on its last
   * attempt) or expires, the next one becomes the head: the dead-letter queue unblocks the group.
   * Other groups and messages without a group never wait for a blocked group.
   */
  group?: string | null;
  /**
   * The message expires `expiresInMs` milliseconds from now: integer 1..31536000000 (365 days);
   * default the queue's stored `expiresInMs`, else never. Still `pending` at its `expiresAt`
   * (due, delayed, or waiting in its group), it is never delivered: the next `claim`,
   * `claimMany` or `reap` of the queue takes it out first, dead with the error `"expired"` (not
   * an attempt: `retryCount` and `errors` stay) or deleted, as the queue's `onExpiry` says,
   * counted in `QueueStats`. A message `processing` at its expiry finishes its attempt: a success
   * stands; a failure (or its lease running out) does not retry, it is dead with its own error.
   * It must be more than `delayMs` (else `validation_failed` on `delayMs`), as must the queue's
   * stored `expiresInMs` when this is not given: a message that expires before it is due is
   * never delivered.
   */
  expiresInMs?: number | null;
}

/** An item of `enqueueMany`: a payload string, or an object with the payload and the `enqueue` options. */
export type EnqueueItem = string | ({ payload: string } & EnqueueOptions);

export interface ClaimOptions {
  /** The lease, in milliseconds: integer 1..43200000; default the queue's stored `leaseMs`, else the database's. */
  leaseMs?: number | null;
}

export interface ExtendOptions {
  /** The token `claim` returned: required, and it must be the current one (else `conflict`, `lease_lost`). */
  leaseToken: string;
  /** The new lease from now, in milliseconds: integer 1..43200000; default the queue's stored `leaseMs`, else the database's. */
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
  /**
   * This failure's own delay before the next attempt, in milliseconds, instead of the backoff
   * (a `Retry-After` from downstream): integer 0..2592000000 (30 days). The attempt still counts:
   * a failure that uses up `maxRetries` is dead whatever it says.
   */
  retryInMs?: number | null;
}

export interface ReplayOptions {
  /**
   * The replayed message expires this many milliseconds from now: integer 1..31536000000;
   * default the queue's stored `expiresInMs`, else never (a replay clears the old expiry).
   */
  expiresInMs?: number | null;
}

/**
 * The filters of `list` and of the bulk actions (`replayAll`, `deleteAll`, `retryNowAll`): every
 * one optional, combined with AND (the core's `FilterArgs`, snake_case in Python and the HTTP
 * API). Instants are `Date`s or integer milliseconds since the epoch (UTC); each time range is
 * half-open: `after <= t < before`. Every rejected filter is reported in one `validation_failed`
 * error (with the other rejected arguments), and nothing is read or changed.
 */
export interface Filters {
  /** Only messages in this status (which ones a bulk action allows: see each). */
  status?: Status | null;
  /**
   * true: only `pending` messages waiting for a backoff or a delay (`retryAfter` later than now);
   * false: only the other `pending` ones (due, or blocked behind their group's head). With a
   * `status` other than `"pending"` (or on `replayAll`, `deleteAll`): `invalid`.
   */
  delayed?: boolean | null;
  /** Only messages whose payload contains this text: case-sensitive, not empty, without NUL. */
  payloadContains?: string | null;
  /** Only messages whose `lastError` contains this text: case-sensitive, not empty, without NUL. */
  errorContains?: string | null;
  /** Only messages of this ordering group (exactly; the rules of `EnqueueOptions.group`). */
  group?: string | null;
  /** Only the message with this idempotency key (exactly; the rules of `EnqueueOptions.idempotencyKey`). */
  idempotencyKey?: string | null;
  /** Only messages created at or after this instant. */
  createdAfter?: Date | number | null;
  /** Only messages created before this instant. */
  createdBefore?: Date | number | null;
  /** Only messages last updated at or after this instant. */
  updatedAfter?: Date | number | null;
  /** Only messages last updated before this instant. */
  updatedBefore?: Date | number | null;
  /** Only messages that died at or after this instant (so only dead ones). */
  deadAfter?: Date | number | null;
  /** Only messages that died before this instant (so only dead ones). */
  deadBefore?: Date | number | null;
}

export interface ListOptions extends Filters {
  /** Page size: integer 1..1000; default 100. */
  limit?: number | null;
  /**
   * Only ids greater than this, integer 0..`Number.MAX_SAFE_INTEGER` (keyset pagination: pass
   * the previous page's `nextAfterId`).
   */
  afterId?: number | null;
}

/**
 * One page of `list`: the messages in id order (a plain `Array`), with where to go on.
 * `nextAfterId` is not enumerable, so the page still equals (`deepEqual`) and spreads as the
 * array of its messages.
 */
export interface MessagePage extends Array<Message> {
  /**
   * The `afterId` that continues the listing, or null when the read reached the end of the queue
   * before the page filled: the last id of a full page, or, when the scan budget (10 000 messages
   * examined per call: every filter but `status` is checked on the messages themselves, in id
   * order, `idempotencyKey`, `group` and the time ranges too) ran out first, the last id
   * examined: the page may then be short, even empty, while more may match beyond.
   */
  readonly nextAfterId: number | null;
}

/** The options of the bulk actions: the filters, how many at most, and whether to only count. */
export interface BulkOptions extends Filters {
  /** At most this many (integer 1..`Number.MAX_SAFE_INTEGER`); default all. */
  limit?: number | null;
  /**
   * true: select and run the same steps without writing anything, and resolve to the exact count
   * the action would touch now (what a confirmation shows). Default false.
   */
  dryRun?: boolean | null;
}

/** The options of `replayAll` (its filters, `errorContains`, `deadBefore`, `deadAfter`, `limit`, are those of every bulk action). */
export type ReplayAllOptions = BulkOptions;

export interface PurgeOptions {
  /** Which finished messages: `"succeeded"` or `"dead"` (any other status is `invalid`). */
  status: "succeeded" | "dead";
  /** Only those last updated at least this many milliseconds ago: integer >= 0 (0: all). */
  olderThanMs: number;
}

/** The options of `Queue.process`, the worker loop. Durations in milliseconds. */
export interface ProcessOptions {
  /**
   * Handlers run at once: integer 1..1000; default 1. Each claim (`claimMany`) asks for the free
   * slots, at most 100.
   */
  concurrency?: number | null;
  /**
   * The longest idle sleep, in milliseconds: integer 1..3600000; default 1000. An idle loop sleeps
   * until the next delayed message of the queue is due (`nextDueAt`) or this long, whichever is
   * sooner (at least 1 ms), and wakes early when a handler ends or the signal aborts.
   */
  pollIntervalMs?: number | null;
  /**
   * Once the signal aborted, how long to wait for the running handlers, in milliseconds: integer
   * 0..3600000; default 30000. Handlers still running then are abandoned: no more heartbeats,
   * their outcome is not recorded, and their messages are left to their leases.
   */
  shutdownTimeoutMs?: number | null;
  /**
   * The lease of each claimed message, in milliseconds: integer 1..43200000; default the
   * queue's stored `leaseMs` (`setSettings`) at each claim, else the database's `leaseMs`.
   * Extended by the lease its claim granted, every half of it, while its handler runs.
   */
  leaseMs?: number | null;
  /** Stops the loop when it aborts. Without one the loop runs until a claim fails. */
  signal?: AbortSignal | null;
}

/** One named queue of a database. Every method rejects only with a `DeadLetterError`. */
export declare class Queue {
  private constructor();
  /** The queue name. */
  readonly name: string;
  /**
   * Adds a `pending` message. `payload`: a string of at most `maxPayloadBytes` bytes of UTF-8,
   * stored verbatim (serialize objects yourself: a Date, an object or a number is rejected, and
   * so is a string with an unpaired surrogate, which has no UTF-8 form). With an
   * `idempotencyKey` that a message of this queue already carries, resolves to that message
   * (`deduplicated: true`) and adds nothing. A grouped message goes to the end of its group.
   * Messages are put only under a queue name without control characters (C0, DEL, C1) nor
   * format characters (Unicode's Cf: bidirectional controls, zero-width spaces, soft hyphens,
   * ...) but the joiners U+200C and U+200D and the tags of the flags of England, Scotland and
   * Wales, not only white space and invisible characters, not starting or ending with white
   * space, with no white space but U+0020 (`a\u{a0}b` reads as `a b`), no joiner or variation
   * selector that joins or varies nothing (at an end, next to ASCII, Latin, Greek or Cyrillic,
   * next to another one: `ema\u{200d}ils` and `jobs\u{fe0f}` read as `emails` and `jobs`;
   * `\u{2764}\u{fe0f}`, keycaps and emoji ZWJ sequences are fine), no accent of
   * U+0300..U+036F after an ASCII letter (write `caf\u{e9}`, not `cafe\u{301}`), and not `.` or
   * `..`, which a URL cannot name (else
   * `validation_failed`, field `queue`, code `invalid`); a handle on such a name still reads,
   * replays, pauses and purges what is stored under it.
   * Rejects with `validation_failed` or `store`.
   */
  enqueue(payload: string, options?: EnqueueOptions): Promise<Message>;
  /**
   * Adds every item (at most 1000) in one transaction, all or nothing, in order; resolves to one
   * message per item. Idempotency keys count against stored messages and earlier items (the
   * first occurrence wins). A rejected field of an item carries its `index`.
   * Rejects with `validation_failed` or `store`.
   */
  enqueueMany(items: readonly EnqueueItem[]): Promise<Message[]>;
  /**
   * Takes the next due message (in enqueue order: lowest id first, whatever the clock said at
   * each enqueue; a grouped message only as its group's head) and leases it for `leaseMs`; resolves to null when nothing is due, and
   * on a paused queue (which it then leaves as it is). Leases of this queue that ran out are first
   * counted as failed attempts (under this handle's backoff, else the stored one; those that die
   * go to `onDead`), then its pending messages whose expiry came are taken out (see
   * `EnqueueOptions.expiresInMs`). Leases are reaped lazily, by this call or `reap`: until then a
   * message whose lease ran out still reads as `processing`.
   * Rejects with `validation_failed` or `store`.
   */
  claim(options?: ClaimOptions): Promise<ClaimedMessage | null>;
  /**
   * Like `claim` for up to `n` (integer 1..100) due messages, in claim order, in one transaction,
   * at most one per ordering group, each with its own lease token; resolves to an empty array
   * when nothing is due. Rejects with `validation_failed` or `store`.
   */
  claimMany(n: number, options?: ClaimOptions): Promise<ClaimedMessage[]>;
  /**
   * The heartbeat: the lease of a `processing` message now runs `leaseMs` from now.
   * Without `leaseMs`, the queue's stored `leaseMs`, else the database's, not the lease of the claim.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not processing: `wrong_status`;
   * processing under another worker's lease: `lease_lost`) or `store`.
   */
  extend(id: number, options: ExtendOptions): Promise<Message>;
  /**
   * Acks a `processing` message: it becomes `succeeded`.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not processing, or lease lost) or `store`.
   */
  succeed(id: number, options?: SucceedOptions): Promise<Message>;
  /**
   * Records a failed attempt of a `processing` message: back to `pending` after `retryInMs` when
   * given, else the backoff (this handle's own, else the queue's stored one, else
   * `min(2^retryCount, 3600)` s), or `dead` when retries are used up, when `retryable` is false,
   * or when its expiry has come (then the `onDead` callbacks get it). `error`: a string, stored
   * truncated past 64 KiB, also in `errors`.
   * Rejects with `validation_failed`, `not_found`, `conflict` or `store`.
   */
  fail(id: number, error: string, options?: FailOptions): Promise<Message>;
  /**
   * Counts the expired leases of this queue as failed attempts now and takes its pending
   * messages whose expiry came out (what `claim` does first; also on a paused queue); resolves to
   * how many. Those that die go to `onDead`. Rejects with `validation_failed` or `store`.
   */
  reap(): Promise<number>;
  /**
   * Sends a `dead` message back (redrive): `pending`, `retryCount` 0, claimable at once (a
   * grouped one once it is its group's head); `replayCount` grows, the history and its own
   * `maxRetries` are kept (the queue's stored one is taken at enqueue only: finding N9). It
   * expires after `expiresInMs` (default the queue's stored expiry, else never). A grouped message
   * goes to the end of its group, behind every member pending or processing at the replay.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not dead) or `store`.
   */
  replay(id: number, options?: ReplayOptions): Promise<Message>;
  /**
   * Replays every dead message of this queue that the filters select (as `replay` does, with the
   * queue's stored expiry), in id order (the oldest message first), at most `limit`, in batches
   * of 200 (each batch one transaction, which checks the filters again on each message);
   * resolves to how many (with `dryRun`, how many it would replay now, writing nothing).
   * `status` may only be `"dead"`; `delayed` is `invalid`. Rejects with `validation_failed` or
   * `store`; when a batch fails, the batches before it stay replayed: calling again finishes the
   * work (only dead messages are touched).
   */
  replayAll(options?: BulkOptions): Promise<number>;
  /**
   * Deletes the finished messages (`succeeded` or `dead`; `status` may narrow to one, another is
   * `invalid`; `delayed` is `invalid`) that the filters select, in id order, at most `limit`, in
   * batches of 200 (each one transaction); their idempotency keys are free again. Resolves to
   * how many (with `dryRun`, how many it would delete now, deleting nothing). Rejects with
   * `validation_failed` or `store`; when a batch fails, the batches before it stay deleted.
   */
  deleteAll(options?: BulkOptions): Promise<number>;
  /**
   * Makes due now (as `retryNow` does) the `pending` messages waiting for a backoff or a delay
   * that the filters select (`status` may only be `"pending"`; `delayed` may only be true: it is
   * always), in id order, at most `limit`, in batches of 200; a grouped one still waits behind
   * its group's head. Resolves to how many (with `dryRun`, how many it would make due now,
   * changing nothing). Rejects with `validation_failed` or `store`.
   */
  retryNowAll(options?: BulkOptions): Promise<number>;
  /**
   * Makes a `pending` message waiting for its backoff or delay due now: `retryAfter` null,
   * `updatedAt` now; `retryCount` and the history stay (a grouped one still waits behind its
   * group's head). A pending message already due is returned unchanged. Rejects with
   * `validation_failed`, `not_found`, `conflict` (not pending) or `store`.
   */
  retryNow(id: number): Promise<Message>;
  /**
   * Moves a `pending` or `dead` message to the queue `toQueue`: its id, payload, history,
   * counters, `retryAfter`, expiry and idempotency key stay; `movedFrom` is this queue,
   * `updatedAt` now. A grouped pending message leaves its group here (the next member heads it)
   * and goes to the end of the group of the same name in `toQueue`. Resolves to the moved
   * message (read it from `toQueue`'s handle afterwards). Rejects with `validation_failed`
   * (`toQueue`: an enqueue's queue-name rules; this queue itself is `invalid`), `not_found`,
   * `conflict` (`wrong_status`: `processing` or `succeeded`; `key_taken`: a message of `toQueue`
   * carries its idempotency key; nothing changes) or `store` (always on IndexedDB, which does
   * not move messages yet: SQLite files in Node do).
   */
  move(id: number, toQueue: string): Promise<Message>;
  /**
   * Moves to `toQueue` (as `move` does each) the `pending` and `dead` messages that the filters
   * select (`status` may narrow to one of them; another is `invalid`), in id order, at most
   * `limit`, in batches of 200 (each one transaction); a message whose idempotency key `toQueue`
   * already holds is skipped and not counted. Resolves to how many (with `dryRun`, exactly how
   * many it would move now, moving nothing). `toQueue` is positional, as `move`'s is: the one
   * argument it needs, the options being the same `BulkOptions` as the other bulk actions.
   * Rejects with `validation_failed` (every rejected argument together) or `store` (always on
   * IndexedDB, not yet; when a batch fails, the batches before it stay moved).
   */
  moveAll(toQueue: string, options?: BulkOptions): Promise<number>;
  /**
   * Deletes the `succeeded` or `dead` messages last updated at least `olderThanMs` ago, in
   * batches of 200 (each one transaction); resolves to how many. Rejects with `validation_failed`
   * or `store`; when a batch fails, the batches before it stay deleted: calling again finishes.
   */
  purge(options: PurgeOptions): Promise<number>;
  /**
   * Deletes one finished (`succeeded` or `dead`) message and resolves to it.
   * Rejects with `validation_failed`, `not_found`, `conflict` (not finished) or `store`.
   */
  delete(id: number): Promise<Message>;
  /** The statistics of this queue, read from indexes. Rejects with `validation_failed` (clock) or `store`. */
  stats(): Promise<QueueStats>;
  /**
   * When the next delayed message of this queue becomes due (the earliest `retryAfter` after
   * now), or null when none waits: what an idle worker may sleep until.
   * Rejects with `validation_failed` (clock) or `store`.
   */
  nextDueAt(): Promise<Date | null>;
  /** One message. Rejects with `validation_failed`, `not_found` or `store`. */
  get(id: number): Promise<Message>;
  /**
   * One page of the messages the filters select, in id order, ids above `afterId`, at most
   * `limit`, with `nextAfterId` to go on. Without a filter beyond `status` this is one read of
   * an index; with one (a payload search scans) it examines at most 10 000 messages per call, so
   * the page may be short while more match beyond (see `MessagePage.nextAfterId`). Reads the
   * clock only for `delayed`. Rejects with `validation_failed` or `store`.
   */
  list(options?: ListOptions): Promise<MessagePage>;
  /**
   * The settings stored with this queue (all defaults, null where unset, when it has none:
   * reading stores nothing). Takes any name a handle takes, also one stored by 0.1.0. Rejects
   * with `validation_failed` or `store`.
   */
  settings(): Promise<QueueSettings>;
  /**
   * Stores the five settings for every tab, worker and process, replacing them (an option left
   * out is unset again); `paused` and the expiry counters are left alone. Resolves to the
   * settings. Rejects with `validation_failed` listing every rejected option (the backoff's
   * fields `initialMs`, `multiplier`, `capMs`, `jitter` included), having stored nothing, or
   * `store`. Storing settings on a queue that does not exist (no message, no stored settings)
   * makes it, so its name then follows `enqueue`'s rules (`invalid` on `queue`); a queue stored
   * under a name they refuse (by 0.1.0) takes settings, and storing none always succeeds.
   */
  setSettings(options?: SettingsOptions): Promise<QueueSettings>;
  /**
   * Pauses the queue for every tab, worker and process: it accepts enqueues and every other call,
   * but claims nothing until resumed (`claim` resolves to null, `process` loops idle); leases
   * already held keep running, and `reap` still reaps. Idempotent. Resolves to the settings.
   * Pausing a queue that does not exist (no message, no stored settings) makes it, so its name
   * then follows `enqueue`'s rules (`validation_failed`, `invalid` on `queue`); a queue stored
   * under a name they refuse (by 0.1.0) is paused.
   */
  pause(): Promise<QueueSettings>;
  /**
   * Resumes the queue (idempotent); a `process` loop claims again within its `pollIntervalMs`.
   * Takes any name a handle takes, also one stored by 0.1.0 that `enqueue` refuses.
   */
  resume(): Promise<QueueSettings>;
  /**
   * The worker loop: claims due messages (`claimMany`, as many as `concurrency` leaves free
   * slots) and calls `handler(message)` on each, awaiting what it returns.
   * - The handler returns (or its promise resolves): the message is acked (`succeed`).
   * - It throws (or rejects): the message is failed (`fail`) with the error
   *   `"<name>: <message>"` (`TypeError: x is undefined`; a thrown non-Error is recorded as its
   *   type and text: `string: oops`), retryably; a `PermanentError` (or a subclass) fails it with
   *   `retryable: false`: dead at once.
   * - While it runs, the lease is extended (`extend`) every half lease. A lost lease (`extend`
   *   rejects with `conflict`: it ran out and was reaped, or the message is with another worker)
   *   stops the heartbeats; the ack or fail that follows then rejects with `conflict`. Such a
   *   rejection is reported with `console.error` and the loop goes on; this loop never runs or
   *   acks a message twice. Delivery is at least once: make handlers idempotent, and do not ack
   *   the message in the handler.
   * - Idle (nothing due, or the queue paused), it sleeps until the next delayed message is due
   *   or `pollIntervalMs`, whichever is sooner; a handler that ends or the abort wakes it early.
   *   It never spins. On a paused queue it claims nothing and wakes within `pollIntervalMs` of the
   *   resume.
   * - In a browser page or worker (where `navigator.onLine` exists) it claims nothing while
   *   offline and resumes on the `online` event, without any timer meanwhile; running handlers
   *   and their heartbeats go on.
   *
   * Resolves, once `signal` aborted and the running handlers settled (at most
   * `shutdownTimeoutMs`; see `ProcessOptions`), to the number of handler runs that completed
   * (returned or threw; a message that failed twice, then succeeded, counts 3); every timer is cleared by then. An aborted signal resolves to 0 at once,
   * without claiming. Messages claimed while the abort happened are still handled.
   * Rejects with `validation_failed` before doing anything (an option, `handler` not a function,
   * `signal` not an `AbortSignal`, an unknown option key), or, after the running handlers
   * settled, with the `DeadLetterError` of a `claimMany` or `nextDueAt` that failed (`store`:
   * the database was closed; `validation_failed`: the clock), or with what the `clock` option
   * threw. A `store` error of theirs while the database is open (a SQLite file locked past its
   * busy timeout, an IndexedDB transaction aborted as the browser closed the connection) does
   * not end the loop: it is reported with `console.warn` and the claim tried again after 500 ms,
   * doubling up to 30 s, until one works (as in the Python loops).
   */
  process(handler: (message: ClaimedMessage) => unknown, options?: ProcessOptions): Promise<number>;
}

/** An open queue database (one IndexedDB database; in Node, one SQLite file). */
export declare class Database {
  private constructor();
  /** The IndexedDB database name (in Node, the file's path as given to `open`). */
  readonly name: string;
  /**
   * The queue `name` (a non-empty string of at most 255 characters), with its own backoff policy
   * when `options.backoff` is given (see `QueueOptions`). Throws (synchronously) a
   * `validation_failed` `DeadLetterError` listing every rejected field (the name and the backoff
   * options) otherwise.
   */
  queue(name: string, options?: QueueOptions): Queue;
  /**
   * The statistics of every queue that holds messages or has stored settings (a paused empty
   * queue too), by name. Rejects with `validation_failed` (clock) or `store`.
   */
  queues(): Promise<QueueStats[]>;
  /**
   * Calls `callback(message)` with every message that dies: after a call of this Database made
   * it dead (committed), before that call resolves, in order; and when a call of another
   * `Database` on this database made it dead (structured clones: Dates survive). In a browser, on
   * its own IndexedDB (the global `indexedDB`), that is any page, tab or worker of the origin,
   * through a `BroadcastChannel` named `deadletter:<name>`. In Node on a SQLite file, every
   * Database of this process on that file (any thread, whatever path led to it) hears them,
   * through a `BroadcastChannel` named after the file; other processes' deaths are not heard
   * (`:memory:` is private). With the `indexedDB` option, a database is private to its thread and
   * factory: the Databases opened with the same factory and name in this thread hear each other,
   * and nothing else does. A callback that
   * throws is reported with `console.error` and changes nothing. After `close()` the Database
   * hears nothing more (a callback added then is never called). Returns the function that
   * unsubscribes it (calling it again does nothing). Throws a `validation_failed`
   * `DeadLetterError` (field `callback`) unless `callback` is a function.
   */
  onDead(callback: (message: Message) => void): () => void;
  /**
   * Closes the IndexedDB connection (in Node, the SQLite file) and the dead-letter channel once
   * the calls already made (on this Database and its queues) have settled: `q.enqueue(x);
   * db.close()` stores `x`. In Node a process that exits without `close()` loses nothing that
   * was acknowledged (a promise that resolved).
   * Every later call rejects with a `store` `DeadLetterError`. The connection also closes by
   * itself, not to block them, when another page upgrades the database (a newer deadletter in
   * another tab) or deletes it: then every later call rejects with a `store` error whose
   * message says which, and to reload the page (in a service worker: that the new version's
   * service worker takes over once the pages this one controls are closed, or to `open()`
   * again). When the browser closes it (the site's data cleared, a storage failure), the calls
   * running then reject with a `store` error and the next call opens the database again.
   */
  close(): void;
}

/**
 * Opens, creating it when new, the queue database stored in IndexedDB database `name` (a
 * non-empty string), upgrading one written by an older version. Rejects with
 * `validation_failed` (an empty or non-string name, bad options) or `store` (no IndexedDB, open
 * blocked by other connections for more than 5 s, quota, ...). An existing database of that name
 * that is not a deadletter one (without deadletter's `messages` store and indexes, or at a version
 * above deadletter's) is refused with `store`, saying it is not a deadletter database, and left
 * exactly as it was.
 *
 * In Node (without the `indexedDB` option), `name` is the path of a SQLite file, created when
 * missing (`":memory:"`: a private database in memory), in the file format of the Python
 * package: processes of both languages may share it. Every call then runs on one of the
 * database's own threads, and calls made at once share commits. A path that is empty or holds a
 * NUL is rejected (`validation_failed`, field `name`), and so is a PostgreSQL URL
 * (`postgresql://...`, `postgres://...`: PostgreSQL is opened by the Python package only; the
 * message does not repeat the URL, nor its password); a directory (a path ending in "/" or
 * "/." names one, existing or not: nothing is created), another application's file or a newer
 * deadletter's is refused with `store` and left as it was (as Python refuses them); on a platform
 * without the prebuilt module (the package ships linux-x64-gnu), `open` rejects with `store`,
 * saying so.
 */
export declare function open(name: string, options?: OpenOptions): Promise<Database>;

/**
 * The delay before the next attempt after the `retryCount`-th failure under the default policy,
 * in milliseconds: `min(2^retryCount, 3600)` seconds. `retryCount`: an integer >= 0 of any size
 * up to 2^63 - 1 (as in Python). Throws a `validation_failed` `DeadLetterError` otherwise
 * (`type` for a fraction or a non-number, `out_of_range` for a negative or larger one).
 */
export declare function backoffMs(retryCount: number): number;

/**
 * The options of an `Outbox`: only these keys (another is `validation_failed`, code `unknown`);
 * null means the default.
 */
export interface OutboxOptions {
  /** The queue that holds the requests; default `"outbox"`. */
  queue?: string | null;
  /** The Background Sync tag it registers and drains on (a non-empty string); default `"deadletter:" + queue`. */
  tag?: string | null;
  /**
   * How many sends a request gets before it is dead, the first (`outbox.fetch`'s) included:
   * integer 1..10 (as `maxRetries`); default 5. With the default backoff (2 s, doubling) 5 sends
   * are over within about 30 s of an unreachable server; see the README for longer settings.
   */
  maxRetries?: number | null;
  /** How many requests a drain sends at once: integer 1..100; default 4. */
  concurrency?: number | null;
  /** The queue's backoff policy (default `min(2^n, 3600)` s after the n-th failure). */
  backoff?: BackoffOptions | null;
  /**
   * Sends one request (the first send of `outbox.fetch` and every later one); default the global
   * `fetch`. A kept request's send carries the outbox's `AbortSignal` (`request.signal`), aborted
   * when its lease may have run out: pass it on. A place to set a fresh `Authorization` on each
   * send (build a `new Request(request, { headers })`: a service worker's request has immutable
   * headers).
   */
  fetch?: ((request: Request) => Promise<Response>) | null;
  /** Whether the network may be reached now; default `navigator.onLine !== false`. A drain sends nothing while it is false. */
  online?: (() => boolean) | null;
}

/** What a drain did: how many requests it delivered, and how many still wait (offline, or for a later retry). */
export interface DrainResult {
  sent: number;
  pending: number;
}

/** The options of `Outbox.drain`: only this key (another is `validation_failed`, code `unknown`). */
export interface DrainOptions {
  /** The longest wait for a retry that is not due yet, in milliseconds: integer 0..3600000; default 30000. */
  waitMs?: number | null;
}

/**
 * The outbox: HTTP requests that could not be sent (offline, or answered with a status worth
 * retrying: 408, 425, 429, 5xx) kept as messages of a queue and sent again with its retries,
 * backoff and dead letters; like Workbox's background sync, with a backoff, dead letters and
 * their error history. Each message's payload is the request as JSON (`method`, `url`,
 * `headers`, `body` in base64, `mode`, `credentials`, and `failed`: the failed first send of
 * `outbox.fetch`, which the first drain to claim it records as its first failure).
 *
 * In a service worker (import `deadletter/service-worker`): its `fetch` handler hands requests to
 * `outbox.fetch`, and `outbox.listen()` drains on the Background Sync `sync` event of the tag, on
 * `activate`, on a page's message and when the worker starts, each within `event.waitUntil`. In a
 * page: `outbox.dead()` lists what died (each with its `errors` history), `outbox.replay(id)` sends
 * one again, `db.onDead` hears deaths (also those of the service worker), and `outbox.listen()`
 * drains at once (what a closed or reloaded page left) and on the `online` event where there is
 * no Background Sync (Firefox, Safari), through the service worker when one controls the page. A
 * send cut short (the worker stopped, the page closed) waits for its lease to run out; the next
 * claim records its failure (`lease expired`) and it is sent again after the backoff. When a sent
 * request is answered, a success acks it; 408, 425, 429 and 5xx, or a network failure, fail it
 * retryably (a 429 or 503's `Retry-After`, whole seconds or an HTTP date, at most 30 days, more
 * than none, sets the wait before the next send); any other status (400, 404, 410, 422...)
 * makes it dead at once, its error `HTTP <status> <text>`.
 *
 * Delivery is at least once. A send is held under its message's lease (the queue's stored
 * `leaseMs`, else the database's), extended every half lease while it is in flight, so another
 * drain does not send it meanwhile; when the lease could not be extended, the send is aborted at
 * the lease's end and fails retryably (`TimeoutError`). A request the server received whose
 * answer was lost is sent again: give each request an `Idempotency-Key` header (kept and sent
 * with it) for the server to drop repeats. Every header is kept, `Authorization` included, in
 * clear; the kept JSON (the body in base64) must fit in the database's `maxPayloadBytes`.
 *
 * @example
 * // sw.js, a module service worker: navigator.serviceWorker.register("/sw.js", { type: "module" })
 * import { Outbox, open } from "/node_modules/deadletter/service-worker.js";
 * const outbox = new Outbox(open("app-outbox"), { queue: "posts" });
 * outbox.listen(); // sync, activate, a page's message, the worker's start
 * self.addEventListener("fetch", (event) => { // your own origin's: see "Offline sync" in the README
 *   const same = new URL(event.request.url).origin === location.origin;
 *   if (event.request.method === "POST" && same) event.respondWith(outbox.fetch(event.request));
 * });
 *
 * // The page: what died, and a replay once the server is fixed.
 * import { Outbox, open } from "deadletter";
 * const db = await open("app-outbox");
 * const outbox = new Outbox(db, { queue: "posts" });
 * outbox.listen(); // now, and the online event where there is no Background Sync
 * db.onDead((m) => console.warn(Outbox.requestOf(m).url, m.lastError));
 * for (const dead of await outbox.dead()) await outbox.replay(dead.id); // one page: see dead()
 */
export declare class Outbox {
  /**
   * An outbox on `db` (or on the promise `open()` returned, so that a service worker can register
   * its listeners when it starts). Bad options (an unknown key, a value out of range or of the
   * wrong type, a bad `queue` name or `backoff`) make its calls reject with a
   * `validation_failed` `DeadLetterError` naming each field.
   */
  constructor(db: Database | Promise<Database>, options?: OutboxOptions | null);
  /** The Background Sync tag. */
  readonly tag: string;
  /** The queue that holds the requests. */
  queue(): Promise<Queue>;
  /**
   * Keeps `request` (its body read now) and asks for a drain (a Background Sync registration of
   * the tag where there is one; from a page, a message to its service worker too). Rejects with
   * `validation_failed`, field `request`, for a request that cannot be sent again (its body was
   * already read: pass `request.clone()`; a navigation), `payload` `too_large` beyond the
   * database's `maxPayloadBytes`, or `store`.
   */
  add(request: Request): Promise<Message>;
  /**
   * Sends `request`; when the network fails or the answer is worth retrying, keeps it, that send
   * counted as its first failure (the next waits for the backoff or the `Retry-After`; a network
   * failure while `online()` says false is no attempt), and resolves to a `202 Accepted` response
   * whose header `x-deadletter-queued` holds the message id. Any other answer resolves as it
   * came, and so does a retryable one that cannot be kept (too large, a store error). Offline and
   * too large to keep: a `413` whose header `x-deadletter-not-kept` is `too_large` and whose JSON
   * body holds the error (`notKept`, `code`, `errors`). Rejects with `validation_failed`, field
   * `request`, for a request whose body was already read, and with the abort, keeping nothing,
   * for a request whose own `signal` aborted it (as `fetch` does). A drain counts an opaque
   * answer (a `no-cors` request's: status 0, unreadable) as delivered.
   */
  fetch(request: Request): Promise<Response>;
  /**
   * Sends every request that is due, in claim order, `concurrency` at a time; while a failed one
   * waits for a retry due within `waitMs` (default 30000), waits and goes on. Offline (see
   * `OutboxOptions.online`) it sends nothing. Rejects with `validation_failed` for bad options.
   */
  drain(options?: DrainOptions | null): Promise<DrainResult>;
  /**
   * Dead requests, oldest first, one page (see `Queue.list`: 100 by default; go on with
   * `afterId: page.nextAfterId` while it is not null); `Outbox.requestOf` rebuilds each request.
   */
  dead(options?: Omit<ListOptions, "status">): Promise<MessagePage>;
  /** Sends a dead request again (see `Queue.replay`) and asks for a drain. */
  replay(id: number): Promise<Message>;
  /**
   * Drains on the events that say the network may be back (see the class); returns the function
   * that stops listening.
   */
  listen(): () => void;
  /**
   * The request a message of the outbox holds. Throws a `validation_failed` `DeadLetterError`,
   * field `message`, for a message whose payload is not a kept request.
   */
  static requestOf(message: Message): Request;
}

/** Whether an HTTP status may succeed when sent again later: 408, 425, 429 and every 5xx. */
export declare function retryableStatus(status: number): boolean;
