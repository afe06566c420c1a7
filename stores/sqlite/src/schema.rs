//! The tables and indexes of a deadletter SQLite database, and the migration that creates them
//! or upgrades an older version (`PRAGMA user_version`), in the transaction that read it.

use deadletter::storage::{Found, Migration, Place, upgrade_v1};
use deadletter::{Error, Result};
use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::row;
use crate::sql::{COLUMNS_SQL, PAGE_SQL};

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 8;

/// The schema of version 1, exactly as deadletter 0.1.0 created it. A new database is created at
/// version 1 and upgraded by [`UPGRADE_V2`] to [`UPGRADE_V8`], so new and upgraded files have the
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
/// Existing rows get the new columns' defaults here; once the table has the current shape,
/// the migration gives them what 0.1.0 knew ([`deadletter::storage::upgrade_v1`]).
pub const UPGRADE_V2: &str = "
ALTER TABLE messages ADD COLUMN idempotency_key TEXT;
ALTER TABLE messages ADD COLUMN first_failed_at INTEGER;
ALTER TABLE messages ADD COLUMN dead_at INTEGER;
-- the failure history: a JSON array of {attempt, error, at}, oldest first
ALTER TABLE messages ADD COLUMN errors TEXT NOT NULL DEFAULT '[]';
ALTER TABLE messages ADD COLUMN errors_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN replay_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN replayed_at INTEGER;
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
/// `ready` is storage only (not a field of [`deadletter::Message`]): 1 when a `pending` message is in the
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
/// above every stored one (see [`crate::INSERT_SQL`] and [`crate::RETIRE_SQL`]).
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

/// Version 4 -> 5: ordering groups, expiry, and the settings stored with each queue (issue 21).
/// Every statement is cheap on a large file (no table is rebuilt): the new columns are added
/// with their defaults, and only the indexes of pending and live grouped messages are built.
///
/// - `group_name`, `group_at`: a message's ordering group and its place in it (storage only,
///   the core's [`deadletter::storage::Position`]); `blocked` (storage only): 1 while a pending
///   member waits behind its group's head, in no claim index (`ready` is 0 then): the third lane
///   of the core's [`deadletter::storage::Lane`]. `messages_group` holds the live grouped
///   messages in group order: a group's tail (enqueue, replay) and next member (when the head
///   leaves) are one seek each. `messages_delayed` is rebuilt with `blocked` as a key before
///   `ready`: its queries read the range `blocked = 0` only, since the blocked members wait for
///   their group, not for their `retry_after`: claim never moves them, and they are neither due
///   nor delayed in the statistics.
/// - `expires_at`: when a pending message expires; `messages_expiring` holds the pending messages
///   that expire, in expiry order, for claim and reap to take out those whose time came.
/// - `queues`: one row per queue that has settings, was paused, or had a message expire: the
///   backoff policy (all four columns set, or none), `max_retries`, `lease_ms`, `expires_in_ms`
///   (NULL: unset), `on_expiry`, `paused`, and the expiry counters. `WITHOUT ROWID`: it is
///   looked up by name in every write transaction.
pub const UPGRADE_V5: &str = "
ALTER TABLE messages ADD COLUMN group_name TEXT;
ALTER TABLE messages ADD COLUMN group_at INTEGER;
ALTER TABLE messages ADD COLUMN expires_at INTEGER;
ALTER TABLE messages ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0 CHECK (blocked IN (0, 1));
DROP INDEX messages_delayed;
-- claim, first: waiting messages whose retry_after has come; stats and next_due_at: the range
-- blocked = 0 (the members blocked behind their group's head are in the range blocked = 1,
-- which no query reads: a key column rather than a term of the WHERE, so that the queries of
-- the range blocked = 0 read the index alone)
CREATE INDEX messages_delayed ON messages (queue, blocked, ready, retry_after, created_at)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
-- the live members of each group in group order: its tail and its next member
CREATE INDEX messages_group ON messages (queue, group_name, group_at, id)
    WHERE group_name IS NOT NULL AND status IN ('pending', 'processing');
-- claim and reap: the pending messages whose expiry has come, in expiry order
CREATE INDEX messages_expiring ON messages (queue, expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE TABLE queues (
    name               TEXT    NOT NULL PRIMARY KEY,
    backoff_initial_ms INTEGER,
    backoff_multiplier REAL,
    backoff_cap_ms     INTEGER,
    backoff_jitter     TEXT,
    max_retries        INTEGER,
    lease_ms           INTEGER,
    expires_in_ms      INTEGER,
    on_expiry          TEXT    NOT NULL DEFAULT 'dead',
    paused             INTEGER NOT NULL DEFAULT 0,
    expired_dead       INTEGER NOT NULL DEFAULT 0,
    expired_discarded  INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
";

/// Version 5 -> 6: `move` and `move_all` (issue 22). `moved_from`: the queue a message was last
/// moved from (null until it is moved). A column added with its default: no table is rebuilt,
/// no index changes (a move rewrites the message's `queue`, which the indexes already key on).
pub const UPGRADE_V6: &str = "
ALTER TABLE messages ADD COLUMN moved_from TEXT;
";

/// Version 6 -> 7: the index of dead messages holds their ids only (issue 24). Since issue 22
/// every reader of `messages_dead` (a page of dead messages; the selections of `replay_all`,
/// `delete_all` and `move_all`, which are such pages) reads whole rows in id order, so its copies
/// of `dead_at`, `updated_at` and `last_error` were written and never read: an entry carried the
/// message's last error, which can be kilobytes (past about 1 000 bytes an index entry spills to
/// overflow pages), at every death, and was deleted again at every replay. The dead count reads
/// either dead index, and `messages_dead_at` keeps the oldest death one seek away. Cheap on a
/// large file: one index dropped and built again from the dead messages, no table rewritten.
pub const UPGRADE_V7: &str = "
DROP INDEX messages_dead;
-- list, replay_all, delete_all and move_all of dead messages, by id (the rows are read)
CREATE INDEX messages_dead ON messages (queue, id) WHERE status = 'dead';
";

/// Version 7 -> 8: an enqueue writes 2 B-trees instead of 4 (issue 24). Claim order is the id
/// (enqueue order, [`deadletter::storage::claim_order`]; it was `created_at`, then id), so the
/// ready lane needs no index of its own: it is a range of the index of pending messages.
///
/// - `messages_pending` holds every pending message, keyed `(queue, ready, id)`: the range
///   `ready = 1` is the ready lane in claim order (claim takes its head; stats' oldest due
///   message is its first due entry), the range `ready = 0` the messages waiting for their
///   `retry_after` and the members blocked behind their group's head. A pending count is one
///   range (`queue`), a page of pending messages by id the merge of the two ranges. It carries
///   `created_at` and `retry_after`, so that the oldest-due read and claim's skip of a message
///   moved there before the clock went back read the index alone.
/// - `messages_succeeded` holds the succeeded messages by id: a page of them, the count, and
///   `queues`' names no longer read a queue's rows in id order.
/// - `messages_by_queue_id` (every message by id), which every enqueue wrote, and
///   `messages_ready` are dropped: a page of all statuses merges the pages of the four status
///   indexes by id, the total count is their sum, and `queues` skip-scans the four of them.
///
/// So an enqueue writes the table and `messages_pending` (was 4 B-trees: 4.1 WAL frames, now
/// 2.1); a claim the table, `messages_pending` and `messages_leased` (was 4); a succeed the
/// table, `messages_leased` and `messages_succeeded` (was 2): a message's enqueue + claim +
/// succeed writes about 8 pages instead of 10. Cheap on a large file: no table is rebuilt, three
/// indexes are dropped and two built.
pub const UPGRADE_V8: &str = "
DROP INDEX messages_by_queue_id;
DROP INDEX messages_pending;
DROP INDEX messages_ready;
-- claim: the ready lane (ready = 1) in claim order, by id; list and stats: every pending message,
-- ready, waiting or blocked (ready = 0); stats: the oldest due message, from the index alone
CREATE INDEX messages_pending ON messages (queue, ready, id, created_at, retry_after)
    WHERE status = 'pending';
-- list, stats, queues and purge of succeeded messages, by id
CREATE INDEX messages_succeeded ON messages (queue, id) WHERE status = 'succeeded';
";

/// The statements that bring version N to N + 1, from 0 (an empty database) on: a new database
/// is created at version 1 and upgraded, so new and upgraded files have the same schema.
const STEPS: [&str; 8] = [
    SCHEMA_V1, UPGRADE_V2, UPGRADE_V3, UPGRADE_V4, UPGRADE_V5, UPGRADE_V6, UPGRADE_V7, UPGRADE_V8,
];

/// Where the store keeps its schema, as the core's refusals name it.
const PLACE: Place<'static> = Place {
    name: "the database",
    kind: "database",
};

/// Creates the schema in a new, empty database or upgrades a database of an older version, in
/// the transaction that read the version, as the core decides ([`Place::migration`]); refuses
/// another application's database (other tables at version 0, or at a version of ours without
/// that version's tables and columns) and newer or negative versions. A refused database is only
/// read: the transaction is rolled back before any write.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(Error::store)?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(Error::store)?;
    let found = match version {
        0 => {
            let tables: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
                .map_err(Error::store)?;
            if tables > 0 {
                Found::Foreign("other tables")
            } else {
                Found::Empty
            }
        }
        version => Found::Version(version),
    };
    match PLACE.migration(found, SCHEMA_VERSION, true)? {
        Migration::Create => upgrade(&tx, 0)?,
        Migration::Upgrade { from } => {
            ours(&tx, from)?;
            upgrade(&tx, from)?;
        }
        Migration::Current => ours(&tx, SCHEMA_VERSION)?,
    }
    tx.commit().map_err(Error::store)
}

/// Runs the steps from version `from` on and sets the schema version, in the transaction that
/// read it. From version 1, the rows of deadletter 0.1.0 then get the fields it did not have.
fn upgrade(tx: &Transaction<'_>, from: i64) -> Result<()> {
    let first = usize::try_from(from).map_err(Error::store)?;
    for step in STEPS.get(first..).unwrap_or_default() {
        tx.execute_batch(step).map_err(Error::store)?;
    }
    if from == 1 {
        upgrade_v1_rows(tx)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(Error::store)
}

/// How many rows the upgrade of version 1 reads at once.
const UPGRADE_PAGE: i64 = 500;

/// Gives every message of deadletter 0.1.0 what 0.1.0 knew, by the core's mapping
/// ([`upgrade_v1`]), page by page through the store's own read (the core's checks: a row 0.1.0
/// could not have written refuses the upgrade, which then writes nothing) and write.
fn upgrade_v1_rows(tx: &Connection) -> Result<()> {
    let mut after = 0;
    loop {
        let page = row::read_all(tx, PAGE_SQL, params![after, UPGRADE_PAGE])?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = last.id;
        for old in page {
            let new = upgrade_v1(old.clone());
            if new != old {
                row::write(tx, &new, true, None)?;
            }
        }
    }
}

/// The storage-only column of schema version 3, for [`ours`].
const READY_COLUMN_SQL: &str = "SELECT ready FROM messages LIMIT 0";

/// The table of schema version 4 that keeps ids from being reused, for [`ours`].
const RETIRED_IDS_SQL: &str = "SELECT up_to FROM retired_ids LIMIT 0";

/// The columns and table of schema version 5, for [`ours`].
const V5_SQL: &str = "SELECT group_name, group_at, expires_at, blocked FROM messages LIMIT 0";

/// The queue table of schema version 5, for [`ours`].
const QUEUES_TABLE_SQL: &str = "SELECT name, paused, expired_dead FROM queues LIMIT 0";

/// Every column of schema versions 2 to 4, for [`ours`].
const V4_COLUMNS_SQL: &str = "SELECT id, queue, payload, status, retry_count, max_retries, \
    retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
    idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at \
    FROM messages LIMIT 0";

/// Every column of schema version 1 (deadletter 0.1.0), for [`ours`].
const V1_COLUMNS_SQL: &str = "SELECT id, queue, payload, status, retry_count, max_retries, \
    retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at FROM messages \
    LIMIT 0";

/// Refuses a database at one of our schema versions that lacks the tables and columns of that
/// version (another application's file that happens to carry that `user_version`). Preparing
/// reads the schema only.
fn ours(tx: &Transaction<'_>, version: i64) -> Result<()> {
    let probes: &[&str] = match version {
        1 => &[V1_COLUMNS_SQL],
        2 => &[V4_COLUMNS_SQL],
        3 => &[V4_COLUMNS_SQL, READY_COLUMN_SQL],
        4 => &[V4_COLUMNS_SQL, READY_COLUMN_SQL, RETIRED_IDS_SQL],
        5 => &[
            V4_COLUMNS_SQL,
            READY_COLUMN_SQL,
            RETIRED_IDS_SQL,
            V5_SQL,
            QUEUES_TABLE_SQL,
        ],
        _ => &[
            COLUMNS_SQL,
            READY_COLUMN_SQL,
            RETIRED_IDS_SQL,
            V5_SQL,
            QUEUES_TABLE_SQL,
        ],
    };
    for sql in probes {
        tx.prepare(sql).map(drop).map_err(|err| {
            PLACE.not_ours(format_args!(
                "it has schema version {version} but not deadletter's messages table ({err})"
            ))
        })?;
    }
    Ok(())
}
