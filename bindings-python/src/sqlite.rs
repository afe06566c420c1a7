//! [`SqliteStore`]: the [`deadletter::Store`] of the Python binding, on one SQLite connection.
//!
//! It selects and persists; it never decides a next state. Every write is the result of a step
//! function the engine hands in, run inside one `BEGIN IMMEDIATE` transaction, so a step that
//! fails (or a driver error) leaves nothing written. Reads that only select (`get`, `list`,
//! `select`, `counts`, `queues`) take no write lock. Its futures are ready at once: the binding
//! drives them with `pollster::block_on`.
//!
//! Every query finds its rows through an index, without a full scan (the Rust tests assert the
//! plans). The indexes are those of the queries that exist, and a message leaves the indexes of
//! the hot path when it finishes (schema version 4): a transition writes as few pages as it can.
//! So the queries of the finished statuses pay instead: a page of `processing` messages is
//! sorted by id (they are as many as the leases held), and succeeded messages are found by
//! reading the rows of their queue in id order (`list`, `purge`; they are usually most of it).
//!
//! Concurrency: the connection sits behind a mutex (one `Database` may be shared by threads); other
//! processes on the same file are serialized by SQLite's write lock, waited for up to
//! [`BUSY_TIMEOUT`] so that no "database is locked" reaches a caller under normal contention. A
//! file store reads through a second connection: a write that waits for another process's lock
//! holds the first one, and reads (a health check, the statistics) go on meanwhile, as WAL
//! allows.

use std::cell::Cell;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deadletter::validate::{MAX_TIME, MIN_TIME};
use deadletter::{
    Claimed, Counts, Error, Filter, Id, ListQuery, Message, Millis, NewMessage, Result, Status,
    Store, apply_step,
};
use rusqlite::types::ValueRef;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Params, Row, Transaction, TransactionBehavior, params,
};

use crate::fork;
use crate::group_commit::Group;

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 4;

/// How long a call waits for another connection's write lock before failing with a store error.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema of version 1, exactly as deadletter 0.1.0 created it. A new database is created at
/// version 1 and upgraded by [`UPGRADE_V2`] to [`UPGRADE_V4`], so new and upgraded files have the
/// same schema. Timestamps are UTC milliseconds since the Unix epoch.
pub const SCHEMA_V1: &str = "
CREATE TABLE messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    queue            TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    max_retries      INTEGER NOT NULL,
    retry_after      INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    lease_token      TEXT,
    lease_expires_at INTEGER
) STRICT;
CREATE INDEX messages_by_queue_status_created ON messages (queue, status, created_at, id, retry_after);
CREATE INDEX messages_by_queue_status_lease ON messages (queue, status, lease_expires_at);
CREATE INDEX messages_by_queue_status_id ON messages (queue, status, id);
CREATE INDEX messages_by_queue_id ON messages (queue, id);
";

/// Version 1 -> 2: the failure history, dead letters' age, replays and idempotency keys, and the
/// indexes of the new operations.
///
/// Existing rows get what 0.1.0 knew: `dead_at` is `updated_at` for dead messages (exact: in
/// 0.1.0 a dead message changed only by replay, which made it pending); the history is empty with
/// every failure counted as dropped (`errors_dropped = retry_count`: their number is known, their
/// entries are not); `retry_after` is kept only while pending (0.1.0 left it on claimed messages;
/// the invariant is now: set exactly while pending in backoff).
pub const UPGRADE_V2: &str = "
ALTER TABLE messages ADD COLUMN idempotency_key TEXT;
ALTER TABLE messages ADD COLUMN first_failed_at INTEGER;
ALTER TABLE messages ADD COLUMN dead_at INTEGER;
-- the failure history: a JSON array of {attempt, error, at}, oldest first
ALTER TABLE messages ADD COLUMN errors TEXT NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN errors_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN replay_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN replayed_at INTEGER;
UPDATE messages SET
    errors_dropped = retry_count,
    dead_at = CASE WHEN status = 'dead' THEN updated_at END,
    retry_after = CASE WHEN status = 'pending' THEN retry_after END;
-- replaced by the partial indexes below, which hold only the messages their queries look for
DROP INDEX messages_by_queue_status_created;
DROP INDEX messages_by_queue_status_lease;
DROP INDEX messages_by_queue_status_id;
-- claim, step 2: due pending messages in FIFO order; retry_after is carried in the index so that
-- messages in backoff are skipped without reading their rows (also stats' oldest due message)
CREATE INDEX messages_due ON messages (queue, created_at, id, retry_after)
    WHERE status = 'pending';
-- claim step 1 and reap: processing messages in the order their leases run out (then id: SQLite
-- ends every index entry with the rowid); stats: expired
CREATE INDEX messages_leased ON messages (queue, lease_expires_at) WHERE status = 'processing';
-- stats and next_due_at: delayed messages, the next due instant
CREATE INDEX messages_delayed ON messages (queue, retry_after)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
-- list by status; stats: counts by status; purge of succeeded messages (updated_at)
CREATE INDEX messages_by_queue_status_id ON messages (queue, status, id, updated_at);
-- replay_all and purge of dead messages, by id, with every column their filters read
CREATE INDEX messages_dead ON messages (queue, id, dead_at, updated_at, last_error)
    WHERE status = 'dead';
-- stats: the oldest dead message
CREATE INDEX messages_dead_at ON messages (queue, dead_at) WHERE status = 'dead';
-- enqueue: at most one message per idempotency key and queue, enforced by SQLite itself
CREATE UNIQUE INDEX messages_idempotency ON messages (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
";

/// Version 2 -> 3: claim no longer walks the messages in backoff (issue 10).
///
/// `ready` is storage only (not a field of [`Message`]): 1 when a `pending` message is in the
/// ready index `messages_ready`, which holds the due messages in FIFO order; 0 while it waits in
/// `messages_delayed` for its `retry_after`. Claim first moves the messages whose `retry_after`
/// has come from the second to the first (`ready = 1`, nothing observable changes), then takes
/// the head of the first: each message is moved once, and claim never walks delayed messages.
/// A pending message is written with `ready = 0` exactly when it has a `retry_after`, so
/// `ready = 0` never hides a message from claim. A promoted message keeps its `retry_after` until
/// claimed: after a clock that went back it may be later than `now` again, so the ready index
/// carries `retry_after` for claim to skip it, and `messages_delayed` keeps promoted messages for
/// the statistics. The default 1 is what a row inserted by hand gets: correct (claim checks
/// `retry_after`), only not skipped as cheaply.
pub const UPGRADE_V3: &str = "
ALTER TABLE messages ADD COLUMN ready INTEGER NOT NULL DEFAULT 1 CHECK (ready IN (0, 1));
UPDATE messages SET ready = 0 WHERE status = 'pending' AND retry_after IS NOT NULL;
DROP INDEX messages_due;
DROP INDEX messages_delayed;
-- claim, step 2: the ready messages in FIFO order (stats: the oldest due one)
CREATE INDEX messages_ready ON messages (queue, created_at, id, retry_after)
    WHERE status = 'pending' AND ready = 1;
-- claim, first: the waiting messages (ready = 0) whose retry_after has come; stats and
-- next_due_at: every message in backoff, waiting or already moved to messages_ready
CREATE INDEX messages_delayed ON messages (queue, ready, retry_after, created_at)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
";

/// Version 3 -> 4: fewer pages per transition (issue 10). One message's enqueue + claim + succeed
/// wrote 13 pages of WAL: every B-tree a transaction touches costs at least one page, and
/// `AUTOINCREMENT` (its `sqlite_sequence` row) and the index of every status
/// (`messages_by_queue_status_id`, two pages when a status changes) were in every transaction.
/// Now 10: enqueue writes the table, `messages_by_queue_id`, `messages_pending` and
/// `messages_ready`; claim the table, `messages_pending`, `messages_ready` and `messages_leased`;
/// succeed the table and `messages_leased`.
///
/// The table is rebuilt without `AUTOINCREMENT` (same columns, same rows). Ids stay strictly
/// increasing and are never reused: `retired_ids.up_to` is at least every id a deleted message
/// had (here: the highest id `AUTOINCREMENT` gave), and a new message gets an id above it and
/// above every stored one (see [`INSERT_SQL`] and [`RETIRE_SQL`]).
pub const UPGRADE_V4: &str = "
CREATE TABLE messages_v4 (
    id               INTEGER PRIMARY KEY,
    queue            TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    retry_count      INTEGER NOT NULL,
    max_retries      INTEGER NOT NULL,
    retry_after      INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    lease_token      TEXT,
    lease_expires_at INTEGER,
    idempotency_key  TEXT,
    first_failed_at  INTEGER,
    dead_at          INTEGER,
    -- the failure history: a JSON array of {attempt, error, at}, oldest first
    errors           TEXT    NOT NULL DEFAULT '[]',
    errors_dropped   INTEGER NOT NULL DEFAULT 0,
    replay_count     INTEGER NOT NULL DEFAULT 0,
    replayed_at      INTEGER,
    -- storage only: see UPGRADE_V3
    ready            INTEGER NOT NULL DEFAULT 1 CHECK (ready IN (0, 1))
) STRICT;
INSERT INTO messages_v4 (id, queue, payload, status, retry_count, max_retries, retry_after,
    last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key,
    first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, ready)
SELECT id, queue, payload, status, retry_count, max_retries, retry_after, last_error, created_at,
    updated_at, lease_token, lease_expires_at, idempotency_key, first_failed_at, dead_at, errors,
    errors_dropped, replay_count, replayed_at, ready FROM messages;
-- one row: an id at or above every id a deleted message had
CREATE TABLE retired_ids (up_to INTEGER NOT NULL) STRICT;
INSERT INTO retired_ids (up_to)
    SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0);
DROP TABLE messages;
ALTER TABLE messages_v4 RENAME TO messages;
-- list: a queue's messages by id; queues; stats: the total; succeeded messages (list, purge) by
-- reading these rows
CREATE INDEX messages_by_queue_id ON messages (queue, id);
-- list and stats: pending messages by id
CREATE INDEX messages_pending ON messages (queue, id) WHERE status = 'pending';
-- claim, step 1, and reap: processing messages in the order their leases run out (then id);
-- stats: processing and expired; list: processing messages, sorted by id
CREATE INDEX messages_leased ON messages (queue, lease_expires_at) WHERE status = 'processing';
-- replay_all, purge, list and stats of dead messages, by id, with every column their filters read
CREATE INDEX messages_dead ON messages (queue, id, dead_at, updated_at, last_error)
    WHERE status = 'dead';
-- stats: the oldest dead message
CREATE INDEX messages_dead_at ON messages (queue, dead_at) WHERE status = 'dead';
-- enqueue: at most one message per idempotency key and queue, enforced by SQLite itself
CREATE UNIQUE INDEX messages_idempotency ON messages (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- claim, step 2: the ready messages in FIFO order (see UPGRADE_V3)
CREATE INDEX messages_ready ON messages (queue, created_at, id, retry_after)
    WHERE status = 'pending' AND ready = 1;
-- claim, first: waiting messages whose retry_after has come; stats and next_due_at
CREATE INDEX messages_delayed ON messages (queue, ready, retry_after, created_at)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
";

/// `SELECT` every column of [`Message`] (in the order [`read_message`] reads them)
/// `FROM messages`, followed by `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, queue, payload, status, retry_count, max_retries, retry_after, ",
            "last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, ",
            "first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at ",
            "FROM messages ",
            $rest
        )
    };
}

/// Claim, step 1: the `processing` messages of queue `?1` whose lease ran out at `?2`, in the
/// order the leases ran out (then id), through the index `messages_leased`: only the expired
/// messages' rows are read.
pub const EXPIRED_SQL: &str = select!(
    "WHERE queue = ?1 AND status = 'processing' AND lease_expires_at <= ?2 \
     ORDER BY lease_expires_at, id"
);

/// Claim, first: moves the waiting messages of queue `?1` whose `retry_after` has come at `?2`
/// into the ready index (`ready = 1`), through the index `messages_delayed`: only the messages
/// that became due since the last claim are read.
pub const PROMOTE_SQL: &str = "UPDATE messages SET ready = 1 \
    WHERE queue = ?1 AND status = 'pending' AND retry_after IS NOT NULL AND ready = 0 \
    AND retry_after <= ?2";

/// Claim, step 2: the first `?3` ready messages of queue `?1` due at `?2`, FIFO by `created_at`
/// then id, through the index `messages_ready`: no sort, no table scan, no message in backoff
/// (the `retry_after` term only skips a message moved there before the clock went back).
pub const CLAIM_SQL: &str = select!(
    "WHERE queue = ?1 AND status = 'pending' AND ready = 1 \
     AND (retry_after IS NULL OR retry_after <= ?2) ORDER BY created_at, id LIMIT ?3"
);

/// Message `?1` of queue `?2` (by primary key).
pub const GET_SQL: &str = select!("WHERE id = ?1 AND queue = ?2");

/// The message of queue `?1` that carries idempotency key `?2`.
pub const BY_KEY_SQL: &str = select!("WHERE queue = ?1 AND idempotency_key = ?2");

/// A page of queue `?1`: ids above `?2`, at most `?3` (index `messages_by_queue_id`).
pub const LIST_SQL: &str = select!("WHERE queue = ?1 AND id > ?2 ORDER BY id LIMIT ?3");

/// A page of queue `?1` in `status`: ids above `?2`, at most `?3`, through the status's partial
/// index, named (SQLite's planner, without statistics, would rather walk `messages_by_queue_id`
/// in id order and read every row): `messages_pending`, `messages_leased` (then sorted by id:
/// processing messages are as many as the leases held), `messages_dead`; succeeded messages,
/// which have none, are read in id order through `messages_by_queue_id`.
pub fn list_status_sql(status: Status) -> &'static str {
    match status {
        Status::Pending => select!(
            "INDEXED BY messages_pending \
             WHERE queue = ?1 AND status = 'pending' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
        Status::Processing => select!(
            "INDEXED BY messages_leased \
             WHERE queue = ?1 AND status = 'processing' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
        Status::Succeeded => select!(
            "INDEXED BY messages_by_queue_id \
             WHERE queue = ?1 AND status = 'succeeded' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
        Status::Dead => select!(
            "INDEXED BY messages_dead \
             WHERE queue = ?1 AND status = 'dead' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
    }
}

/// Inserts one new message unless its queue already holds one with its idempotency key (`ready`
/// unless it has a `retry_after`). Its id is one above every stored id and above
/// `retired_ids.up_to` (the ids of deleted messages), so ids are never reused; reading both is a
/// seek each, and writes no page. The unique index `messages_idempotency` is what guarantees one
/// message per key (`ON CONFLICT`); the `NOT EXISTS` only keeps a duplicate out before anything
/// is computed for it.
pub const INSERT_SQL: &str = "INSERT INTO messages (id, queue, payload, status, retry_count, \
    max_retries, retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
    idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, \
    ready) \
    SELECT max(coalesce((SELECT max(id) FROM messages), 0), (SELECT up_to FROM retired_ids)) + 1, \
    ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
    ?6 IS NULL \
    WHERE ?12 IS NULL \
       OR NOT EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND idempotency_key = ?12) \
    ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING";

/// Writes the columns a step may change. `queue`, `payload`, `max_retries`, `created_at` and
/// `idempotency_key` are fixed at insert (no step of the core changes them), so the indexes that
/// hold only those are never rewritten by an update.
/// `ready` is 0 exactly when the message has a `retry_after` (claim moves it when that comes).
pub const WRITE_SQL: &str = "UPDATE messages SET status = ?2, retry_count = ?3, retry_after = ?4, \
    last_error = ?5, updated_at = ?6, lease_token = ?7, lease_expires_at = ?8, \
    first_failed_at = ?9, dead_at = ?10, errors = ?11, errors_dropped = ?12, replay_count = ?13, \
    replayed_at = ?14, ready = ?4 IS NULL WHERE id = ?1";

/// Removes message `?1` (by primary key).
pub const DELETE_SQL: &str = "DELETE FROM messages WHERE id = ?1";

/// Records that ids up to `?1` were given (after a delete), so that none is given again.
pub const RETIRE_SQL: &str = "UPDATE retired_ids SET up_to = max(up_to, ?1)";

/// The messages of queue `?1`: pending, processing, dead, and all, each from its index
/// (`messages_pending`, `messages_leased`, `messages_dead_at`, `messages_by_queue_id`); the
/// succeeded ones are the rest.
pub const COUNT_BY_STATUS_SQL: &str = "SELECT \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'pending'), \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'processing'), \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'dead'), \
    (SELECT count(*) FROM messages WHERE queue = ?1)";

/// Processing messages of queue `?1` whose lease ran out at `?2` (index `messages_leased`).
pub const COUNT_EXPIRED_SQL: &str = "SELECT count(*) FROM messages \
    WHERE queue = ?1 AND status = 'processing' AND lease_expires_at <= ?2";

/// Delayed messages of queue `?1` at `?2`, and the earliest instant one becomes due (index
/// `messages_delayed`: two ranges, waiting and ready).
pub const COUNT_DELAYED_SQL: &str = "SELECT count(*), min(retry_after) FROM messages \
    WHERE queue = ?1 AND status = 'pending' AND retry_after IS NOT NULL AND ready IN (0, 1) \
    AND retry_after > ?2";

/// When the next delayed message of queue `?1` becomes due after `?2`: one seek in each range
/// of the index `messages_delayed`.
pub const NEXT_DUE_SQL: &str = "SELECT min(at) FROM ( \
    SELECT min(retry_after) AS at FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND retry_after IS NOT NULL AND ready = 0 AND retry_after > ?2 \
    UNION ALL \
    SELECT min(retry_after) FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND retry_after IS NOT NULL AND ready = 1 AND retry_after > ?2)";

/// The enqueue time of the oldest message of queue `?1` due at `?2`: the head of the ready index
/// `messages_ready`, or a waiting message whose `retry_after` has come and that no claim has
/// moved yet (index `messages_delayed`).
pub const OLDEST_DUE_SQL: &str = "SELECT min(created_at) FROM ( \
    SELECT (SELECT created_at FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND ready = 1 AND (retry_after IS NULL OR retry_after <= ?2) \
        ORDER BY created_at, id LIMIT 1) AS created_at \
    UNION ALL \
    SELECT min(created_at) FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND retry_after IS NOT NULL AND ready = 0 AND retry_after <= ?2)";

/// When the oldest dead message of queue `?1` died (index `messages_dead_at`).
pub const OLDEST_DEAD_SQL: &str =
    "SELECT min(dead_at) FROM messages WHERE queue = ?1 AND status = 'dead'";

/// The names of the queues that hold messages, ascending: a skip-scan of the index
/// `messages_by_queue_id` that seeks once per queue instead of reading every message.
pub const QUEUES_SQL: &str = "WITH RECURSIVE names (queue) AS ( \
        SELECT min(queue) FROM messages \
        UNION ALL \
        SELECT (SELECT min(queue) FROM messages WHERE queue > names.queue) \
        FROM names WHERE names.queue IS NOT NULL \
    ) SELECT queue FROM names WHERE queue IS NOT NULL";

/// The query of [`Store::select`] for `filter`: ids ascending above `:after`, at most `:limit`,
/// with a term for each filter that is set (parameters `:queue`, `:error`, `:dead_after`,
/// `:dead_before`, `:until`). The status is written as a literal so that SQLite can use the
/// partial index of dead messages (`messages_dead`, which holds every column these filters read);
/// succeeded messages are read in id order through `messages_by_queue_id`. The unary `+` on `dead_at` keeps SQLite
/// from walking `messages_dead_at` by date instead: that would sort every selected message again
/// for each batch, where walking by id resumes where the last batch stopped.
pub fn select_sql(filter: &Filter<'_>) -> String {
    let mut sql = format!(
        "SELECT id FROM messages WHERE queue = :queue AND status = '{}' AND id > :after",
        filter.status.as_str()
    );
    if filter.error_contains.is_some() {
        sql.push_str(" AND instr(last_error, :error) > 0");
    }
    if filter.dead_after.is_some() {
        sql.push_str(" AND +dead_at >= :dead_after");
    }
    if filter.dead_before.is_some() {
        sql.push_str(" AND +dead_at < :dead_before");
    }
    if filter.updated_until.is_some() {
        sql.push_str(" AND updated_at <= :until");
    }
    sql.push_str(" ORDER BY id LIMIT :limit");
    sql
}

/// How long [`wait_for_lock`] sleeps between two tries.
const BUSY_SLEEP: Duration = Duration::from_millis(1);

thread_local! {
    /// When this thread's current wait for a lock began (the busy handler's first call of it).
    static WAIT_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The busy handler: tries again every [`BUSY_SLEEP`] until [`BUSY_TIMEOUT`] has passed since
/// its first call for this lock (`tries` is 0 then), by the clock: a sleep lasts a little longer
/// than asked, so counting tries made the wait about 32.5 s. SQLite's own handler sleeps up to
/// 100 ms between tries, so under contention a writer kept losing to processes that write back to
/// back, for seconds: longer than a lease, so a worker's ack came after its lease had run out.
fn wait_for_lock(tries: i32) -> bool {
    let now = Instant::now();
    let started = WAIT_STARTED.with(|started| match started.get() {
        Some(at) if tries > 0 => at,
        _ => {
            started.set(Some(now));
            now
        }
    });
    if now.duration_since(started) >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(BUSY_SLEEP);
    true
}

/// How much a commit survives, chosen at open (SQLite's `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous = FULL`: every commit syncs the WAL before it is acknowledged, so nothing
    /// acknowledged is lost, even on power loss.
    #[default]
    Full,
    /// `synchronous = NORMAL`: the WAL is synced at checkpoints only. Safe against the
    /// application's crash; the last commits may be lost on power loss or an OS crash.
    Normal,
}

impl Durability {
    /// Every durability with its name, in the order documented.
    pub const ALL: [(&'static str, Self); 2] = [("full", Self::Full), ("normal", Self::Normal)];

    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "PRAGMA synchronous = FULL",
            Self::Normal => "PRAGMA synchronous = NORMAL",
        }
    }
}

/// How a file is opened: read-write, created when missing, without `SQLITE_OPEN_URI` (rusqlite's
/// default sets it): a path is a file name, never a URI such as `file:x.db?mode=memory`.
const FILE_FLAGS: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE
    .union(OpenFlags::SQLITE_OPEN_CREATE)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// `path` as SQLite must read a file name: a relative path starts with `./`, because a SQLite
/// library built with `SQLITE_USE_URI` (Debian's is) reads a name that starts with `file:` as a
/// URI whatever the flags.
fn file_name(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        Path::new(".").join(path)
    }
}

/// A [`Store`] on one SQLite connection (a file, or `:memory:`).
///
/// The connection belongs to the process that opened it: in a child made by `fork()` every call
/// fails at once with a store error (see [`crate::fork`]). Threads share it with group commit
/// (see [`crate::group_commit`]).
#[derive(Debug)]
pub struct SqliteStore {
    group: Group,
    /// The connection of the calls that only read, for a file (`None` in memory: a second
    /// connection would be another database). It never holds a write transaction, so reads never
    /// wait behind a write that waits for another process's lock; every call that returned has
    /// committed, so they see its work.
    reader: Option<Group>,
    /// The process that opened the connection.
    pid: u32,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`; `":memory:"` is a private in-memory
    /// database. File databases use WAL journaling, with `durability`. A file of schema version 1
    /// (deadletter 0.1.0) or 2 is upgraded; a file whose schema version is newer than
    /// [`SCHEMA_VERSION`] is refused with a store error.
    pub fn open(path: &Path, durability: Durability) -> Result<Self> {
        let _gate = fork::enter();
        if path == Path::new(":memory:") {
            let conn = Connection::open_in_memory().map_err(Error::store)?;
            return Self::from_connection(conn, durability);
        }
        let open = || Connection::open_with_flags(file_name(path), FILE_FLAGS);
        let mut store = Self::from_connection(open().map_err(Error::store)?, durability)?;
        let reader = open().map_err(Error::store)?;
        reader
            .busy_handler(Some(wait_for_lock))
            .map_err(Error::store)?;
        store.reader = Some(Group::new(reader));
        Ok(store)
    }

    /// Sets the connection up (busy handler, schema, WAL, durability) and wraps it. The schema is
    /// checked first, so that another application's file is refused before anything is written
    /// to it.
    pub fn from_connection(mut conn: Connection, durability: Durability) -> Result<Self> {
        conn.busy_handler(Some(wait_for_lock))
            .map_err(Error::store)?;
        migrate(&mut conn)?;
        // Returns the mode in force: `wal` for files, `memory` for in-memory databases.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(Error::store)?;
        conn.execute_batch(durability.pragma())
            .map_err(Error::store)?;
        Ok(Self {
            group: Group::new(conn),
            reader: None,
            pid: std::process::id(),
        })
    }

    /// Closes the connection, after committing the calls that wait for a commit; every later
    /// call fails with a store error. Closing twice is fine.
    pub fn close(&self) -> Result<()> {
        self.check_process()?;
        let read = self.reader.as_ref().map_or(Ok(()), Group::close);
        self.group.close().and(read)
    }

    /// How many write transactions this store committed (group commit makes them fewer than the
    /// write calls when threads call at once).
    pub fn commits(&self) -> u64 {
        self.group.commits()
    }

    /// Whether [`SqliteStore::close`] was called; always true in a forked child.
    pub fn is_closed(&self) -> bool {
        self.forked() || self.group.is_closed()
    }

    /// Whether this process is not the one that opened the connection (a child made by `fork()`).
    fn forked(&self) -> bool {
        std::process::id() != self.pid
    }

    /// Runs `f` on the open connection, outside any transaction.
    pub fn with_connection<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        self.check_process()?;
        self.group.read(f)
    }

    /// Runs `f`, which only reads, on the reader connection (the connection, in memory).
    fn read<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        self.check_process()?;
        self.reader.as_ref().unwrap_or(&self.group).read(f)
    }

    /// Fails in a process that did not open the connection (see [`crate::fork`]).
    fn check_process(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::Store(
                "this database was opened before a fork, in the parent process, and a SQLite \
                 connection must not cross a fork: open the database again in this process"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Runs `f` in a write transaction (`BEGIN IMMEDIATE`, shared with concurrent calls of this
    /// store by group commit), committed before it returns; on `Err` nothing of it is written.
    fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.check_process()?;
        self.group.write(f)
    }
}

impl Drop for SqliteStore {
    /// In a forked child that did not run the fork hooks (a fork from C), leaks the parent's
    /// connections: closing it could wait forever for a mutex held at the moment of the fork.
    fn drop(&mut self) {
        if self.forked() {
            std::mem::forget(Arc::clone(self.group.session()));
            if let Some(reader) = &self.reader {
                std::mem::forget(Arc::clone(reader.session()));
            }
        }
    }
}

/// Creates the schema in a new, empty database (version 0 -> 1 -> 2 -> 3) or upgrades a version
/// 1 or 2 database, in the transaction that read the version; refuses another application's database
/// (other tables at version 0, or no `messages` table with our columns at a version of ours) and
/// unknown newer versions. A refused database is only read: the transaction is rolled back before
/// any write.
fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(Error::store)?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(Error::store)?;
    match version {
        0 => {
            let tables: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
                .map_err(Error::store)?;
            if tables > 0 {
                return Err(Error::Store(
                    "not a deadletter database: it holds other tables and no deadletter schema"
                        .into(),
                ));
            }
            upgrade(&tx, &[SCHEMA_V1, UPGRADE_V2, UPGRADE_V3, UPGRADE_V4])?;
        }
        1 => {
            ours(&tx, 1, V1_COLUMNS_SQL)?;
            upgrade(&tx, &[UPGRADE_V2, UPGRADE_V3, UPGRADE_V4])?;
        }
        2 => {
            ours(&tx, 2, select!("LIMIT 0"))?;
            upgrade(&tx, &[UPGRADE_V3, UPGRADE_V4])?;
        }
        3 => {
            ours(&tx, 3, select!("LIMIT 0"))?;
            ours(&tx, 3, READY_COLUMN_SQL)?;
            upgrade(&tx, &[UPGRADE_V4])?;
        }
        SCHEMA_VERSION => {
            ours(&tx, SCHEMA_VERSION, select!("LIMIT 0"))?;
            ours(&tx, SCHEMA_VERSION, READY_COLUMN_SQL)?;
            ours(&tx, SCHEMA_VERSION, RETIRED_IDS_SQL)?;
        }
        negative @ ..0 => {
            return Err(Error::Store(format!(
                "not a deadletter database: it has schema version {negative}"
            )));
        }
        newer => {
            return Err(Error::Store(format!(
                "the database has schema version {newer}; this deadletter reads version \
                 {SCHEMA_VERSION} (upgrade deadletter to open it)"
            )));
        }
    }
    tx.commit().map_err(Error::store)
}

/// Runs `steps` in order and sets the schema version, in the transaction that read it.
fn upgrade(tx: &Transaction<'_>, steps: &[&str]) -> Result<()> {
    for step in steps {
        tx.execute_batch(step).map_err(Error::store)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(Error::store)
}

/// The storage-only column of schema version 3, for [`ours`].
const READY_COLUMN_SQL: &str = "SELECT ready FROM messages LIMIT 0";

/// The table of schema version 4 that keeps ids from being reused, for [`ours`].
const RETIRED_IDS_SQL: &str = "SELECT up_to FROM retired_ids LIMIT 0";

/// Every column of schema version 1 (deadletter 0.1.0), for [`ours`].
const V1_COLUMNS_SQL: &str = "SELECT id, queue, payload, status, retry_count, max_retries, \
    retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at FROM messages \
    LIMIT 0";

/// Refuses a database at one of our schema versions that lacks the columns `sql` reads (another
/// application's file that happens to carry that `user_version`). Preparing reads the schema only.
fn ours(tx: &Transaction<'_>, version: i64, sql: &str) -> Result<()> {
    tx.prepare(sql).map(drop).map_err(|err| {
        Error::Store(format!(
            "not a deadletter database: it has schema version {version} but not deadletter's \
             messages table ({err})"
        ))
    })
}

/// The instants a stored timestamp may hold, in UTC milliseconds: 0001-01-01T00:00:00Z to
/// 9999-12-31T23:59:59.999Z, the range every binding can represent (Python's `datetime`).
const TIME_RANGE: RangeInclusive<Millis> = MIN_TIME..=MAX_TIME;

/// Reads one row selected by a query built with `select!`. A value deadletter never writes (a
/// timestamp outside [`TIME_RANGE`], a count that is not a `u32`, a value of the wrong type,
/// NULL where a value is required, an unknown status) means the row was changed by something else:
/// a store error naming the message and the column, rather than a wrong message or an untyped
/// error later when a binding converts it.
fn read_message(row: &Row<'_>) -> Result<Message> {
    let id: Id = row.get(0).map_err(Error::store)?;
    let corrupt = |index: usize, why: &dyn std::fmt::Display| {
        let column = row.as_ref().column_name(index).unwrap_or("?");
        Error::Store(format!("message {id} is corrupt: column {column}: {why}"))
    };
    let value = |index: usize| row.get_ref(index).map_err(|err| corrupt(index, &err));
    let text = |index: usize| -> Result<Option<String>> {
        match value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec())
                .map(Some)
                .map_err(|_| corrupt(index, &"holds text that is not UTF-8")),
            other => Err(corrupt(
                index,
                &format_args!("holds {}, not text", kind(other)),
            )),
        }
    };
    let required = |index: usize, found: Result<Option<String>>| {
        found?.ok_or_else(|| corrupt(index, &"is NULL"))
    };
    let int = |index: usize| -> Result<Option<i64>> {
        match value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(n) => Ok(Some(n)),
            other => Err(corrupt(
                index,
                &format_args!("holds {}, not an integer", kind(other)),
            )),
        }
    };
    let count = |index: usize| -> Result<u32> {
        let n = int(index)?.ok_or_else(|| corrupt(index, &"is NULL"))?;
        u32::try_from(n).map_err(|_| corrupt(index, &format_args!("holds {n}, not a count")))
    };
    let time = |index: usize| -> Result<Option<Millis>> {
        match int(index)? {
            Some(ms) if !TIME_RANGE.contains(&ms) => Err(corrupt(
                index,
                &format_args!(
                    "holds {ms}, outside the time range deadletter writes \
                     (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in UTC milliseconds)"
                ),
            )),
            other => Ok(other),
        }
    };
    let status = required(3, text(3))?;
    let status = Status::parse(&status)
        .ok_or_else(|| corrupt(3, &format_args!("holds the unknown status {status:?}")))?;
    Ok(Message {
        id,
        queue: required(1, text(1))?,
        payload: required(2, text(2))?,
        status,
        retry_count: count(4)?,
        max_retries: count(5)?,
        retry_after: time(6)?,
        last_error: text(7)?,
        created_at: time(8)?.ok_or_else(|| corrupt(8, &"is NULL"))?,
        updated_at: time(9)?.ok_or_else(|| corrupt(9, &"is NULL"))?,
        lease_token: text(10)?,
        lease_expires_at: time(11)?,
        idempotency_key: text(12)?,
        first_failed_at: time(13)?,
        dead_at: time(14)?,
        errors: serde_json::from_str(&required(15, text(15))?)
            .map_err(|err| corrupt(15, &format_args!("holds no failure history: {err}")))?,
        errors_dropped: count(16)?,
        replay_count: count(17)?,
        replayed_at: time(18)?,
        deduplicated: false,
    })
}

/// How a stored value is named in a corrupt-row error.
fn kind(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(n) => format!("the integer {n}"),
        ValueRef::Real(x) => format!("the real number {x}"),
        ValueRef::Text(_) => "text".into(),
        ValueRef::Blob(bytes) => format!("a blob of {} bytes", bytes.len()),
    }
}

/// The failure history as stored: a JSON array.
fn errors_json(message: &Message) -> Result<String> {
    serde_json::to_string(&message.errors).map_err(Error::store)
}

/// Every message a query built with `select!` returns.
fn read_all(conn: &Connection, sql: &str, params: impl Params) -> Result<Vec<Message>> {
    let mut statement = conn.prepare_cached(sql).map_err(Error::store)?;
    let rows = statement
        .query_map(params, |row| Ok(read_message(row)))
        .map_err(Error::store)?;
    rows.map(|row| row.map_err(Error::store)?).collect()
}

/// Persists `message` (the result of a step) over the row with its id.
fn write_message(tx: &Connection, message: &Message) -> Result<()> {
    let mut statement = tx.prepare_cached(WRITE_SQL).map_err(Error::store)?;
    statement
        .execute(params![
            message.id,
            message.status.as_str(),
            message.retry_count,
            message.retry_after,
            message.last_error,
            message.updated_at,
            message.lease_token,
            message.lease_expires_at,
            message.first_failed_at,
            message.dead_at,
            errors_json(message)?,
            message.errors_dropped,
            message.replay_count,
            message.replayed_at,
        ])
        .map_err(Error::store)?;
    Ok(())
}

fn get_in(conn: &Connection, queue: &str, id: Id) -> Result<Option<Message>> {
    let mut statement = conn.prepare_cached(GET_SQL).map_err(Error::store)?;
    statement
        .query_row(params![id, queue], |row| Ok(read_message(row)))
        .optional()
        .map_err(Error::store)?
        .transpose()
}

/// Inserts one message, or returns the stored one that carries its idempotency key
/// (`deduplicated`).
fn insert_one(tx: &Connection, message: NewMessage) -> Result<Message> {
    // The store only assigns the id; every other field is the core's `with_id`.
    let template = message.with_id(0);
    let inserted = {
        let mut statement = tx.prepare_cached(INSERT_SQL).map_err(Error::store)?;
        statement
            .execute(params![
                template.queue,
                template.payload,
                template.status.as_str(),
                template.retry_count,
                template.max_retries,
                template.retry_after,
                template.last_error,
                template.created_at,
                template.updated_at,
                template.lease_token,
                template.lease_expires_at,
                template.idempotency_key,
                template.first_failed_at,
                template.dead_at,
                errors_json(&template)?,
                template.errors_dropped,
                template.replay_count,
                template.replayed_at,
            ])
            .map_err(Error::store)?
    };
    if inserted == 1 {
        return Ok(Message {
            id: tx.last_insert_rowid(),
            ..template
        });
    }
    let mut statement = tx.prepare_cached(BY_KEY_SQL).map_err(Error::store)?;
    let existing = statement
        .query_row(params![template.queue, template.idempotency_key], |row| {
            Ok(read_message(row))
        })
        .optional()
        .map_err(Error::store)?
        .transpose()?;
    let existing = existing.ok_or_else(|| {
        Error::Store("a message was neither inserted nor found by its idempotency key".into())
    })?;
    Ok(Message {
        deduplicated: true,
        ..existing
    })
}

/// The one row `sql` returns.
fn one_row<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, read)
}

/// Converts a row count or size for SQLite.
fn sql_int(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(Error::store)
}

impl Store for SqliteStore {
    async fn insert(&self, messages: Vec<NewMessage>) -> Result<Vec<Message>> {
        self.write(|tx| {
            messages
                .into_iter()
                .map(|message| insert_one(tx, message))
                .collect()
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.read(|conn| get_in(conn, queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        self.write(|tx| {
            let next = apply_step(get_in(tx, queue, id)?, queue, id, step)?;
            write_message(tx, &next)?;
            Ok(next)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        limit: usize,
        expire: impl FnMut(Message) -> Result<Message>,
        take: impl FnMut(Message) -> Result<Message>,
    ) -> Result<Claimed> {
        self.write(|tx| {
            // Both sets are read before anything is written, like the reference store: a message
            // whose lease just expired is not taken in the same call. Moving the messages whose
            // backoff is over into the ready index changes no field.
            let expired = read_all(tx, EXPIRED_SQL, params![queue, now])?;
            let due = if limit == 0 {
                Vec::new()
            } else {
                tx.prepare_cached(PROMOTE_SQL)
                    .and_then(|mut promote| promote.execute(params![queue, now]))
                    .map_err(Error::store)?;
                read_all(tx, CLAIM_SQL, params![queue, now, sql_int(limit)?])?
            };
            let claimed = Claimed {
                expired: expired.into_iter().map(expire).collect::<Result<_>>()?,
                taken: due.into_iter().map(take).collect::<Result<_>>()?,
            };
            for message in claimed.expired.iter().chain(&claimed.taken) {
                write_message(tx, message)?;
            }
            Ok(claimed)
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let after = query.after_id.unwrap_or(0);
        let limit = sql_int(query.limit)?;
        self.read(|conn| match query.status {
            None => read_all(conn, LIST_SQL, params![query.queue, after, limit]),
            Some(status) => read_all(
                conn,
                list_status_sql(status),
                params![query.queue, after, limit],
            ),
        })
    }

    async fn select(&self, filter: &Filter<'_>, after_id: Id, limit: usize) -> Result<Vec<Id>> {
        let sql = select_sql(filter);
        let limit = sql_int(limit)?;
        self.read(|conn| {
            let mut statement = conn.prepare_cached(&sql).map_err(Error::store)?;
            let mut bound = vec![
                (":queue", &filter.queue as &dyn rusqlite::ToSql),
                (":after", &after_id),
                (":limit", &limit),
            ];
            let optional: [(&str, Option<&dyn rusqlite::ToSql>); 4] = [
                (":error", filter.error_contains.as_ref().map(|e| e as _)),
                (":dead_after", filter.dead_after.as_ref().map(|t| t as _)),
                (":dead_before", filter.dead_before.as_ref().map(|t| t as _)),
                (":until", filter.updated_until.as_ref().map(|t| t as _)),
            ];
            bound.extend(optional.into_iter().filter_map(|(n, v)| Some((n, v?))));
            let rows = statement
                .query_map(bound.as_slice(), |row| row.get(0))
                .map_err(Error::store)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Error::store)
        })
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut step: impl FnMut(Message) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.write(|tx| {
            let mut written = Vec::new();
            for id in ids {
                if let Some(current) = get_in(tx, queue, *id)?
                    && let Some(next) = step(current)?
                {
                    write_message(tx, &next)?;
                    written.push(next);
                }
            }
            Ok(written)
        })
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.write(|tx| {
            let mut deleted = Vec::new();
            let mut statement = tx.prepare_cached(DELETE_SQL).map_err(Error::store)?;
            for id in ids {
                if let Some(current) = get_in(tx, queue, *id)?
                    && check(&current)?
                {
                    statement.execute(params![id]).map_err(Error::store)?;
                    deleted.push(current);
                }
            }
            if let Some(highest) = deleted.iter().map(|message| message.id).max() {
                tx.prepare_cached(RETIRE_SQL)
                    .and_then(|mut retire| retire.execute(params![highest]))
                    .map_err(Error::store)?;
            }
            Ok(deleted)
        })
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        self.read(|conn| {
            // One read transaction: every number comes from the same snapshot.
            let tx = conn.transaction().map_err(Error::store)?;
            let mut counts = Counts::default();
            {
                let mut statement = tx
                    .prepare_cached(COUNT_BY_STATUS_SQL)
                    .map_err(Error::store)?;
                let [pending, processing, dead, all]: [u64; 4] = statement
                    .query_row(params![queue], |row| {
                        Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?])
                    })
                    .map_err(Error::store)?;
                let succeeded = all
                    .checked_sub(pending + processing + dead)
                    .ok_or_else(|| Error::Store("the indexes of messages disagree".into()))?;
                counts.by_status = [pending, processing, succeeded, dead];
            }
            let now_in = params![queue, now];
            counts.expired =
                one_row(&tx, COUNT_EXPIRED_SQL, now_in, |row| row.get(0)).map_err(Error::store)?;
            (counts.delayed, counts.next_due_at) = one_row(&tx, COUNT_DELAYED_SQL, now_in, |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map_err(Error::store)?;
            counts.oldest_due_created_at =
                one_row(&tx, OLDEST_DUE_SQL, now_in, |row| row.get(0)).map_err(Error::store)?;
            counts.oldest_dead_at = one_row(&tx, OLDEST_DEAD_SQL, params![queue], |row| row.get(0))
                .map_err(Error::store)?;
            Ok(counts)
        })
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        self.read(|conn| {
            one_row(conn, NEXT_DUE_SQL, params![queue, now], |row| row.get(0)).map_err(Error::store)
        })
    }

    async fn queues(&self) -> Result<Vec<String>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(QUEUES_SQL).map_err(Error::store)?;
            let rows = statement
                .query_map([], |row| row.get(0))
                .map_err(Error::store)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Error::store)
        })
    }
}
