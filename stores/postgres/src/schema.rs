//! The tables and indexes of one deadletter schema, and the migration that creates them.

use crate::client::Client;
use deadletter::storage::{Found, Migration, Place};
use deadletter::{Error, FieldError, Result};

use crate::pool::db_error;

/// The schema version this build creates and reads (the row of `deadletter_schema`).
pub const SCHEMA_VERSION: i32 = 6;

/// Longest schema name PostgreSQL keeps (`NAMEDATALEN - 1` bytes); a longer one would be cut
/// silently, so it is refused.
pub const MAX_SCHEMA_BYTES: usize = 63;

/// `schema` as a quoted SQL identifier (`"name"`, inner quotes doubled): any non-empty name of
/// at most [`MAX_SCHEMA_BYTES`] bytes without NUL is safe to splice into a statement.
pub fn quote_identifier(schema: &str) -> Result<String> {
    let problem = if schema.is_empty() {
        Some(("empty", "must not be empty".to_owned()))
    } else if schema.len() > MAX_SCHEMA_BYTES {
        Some((
            "too_long",
            format!("must be at most {MAX_SCHEMA_BYTES} bytes (PostgreSQL would cut it)"),
        ))
    } else if schema.contains('\0') {
        Some(("invalid", "must not contain NUL".to_owned()))
    } else if schema.starts_with("pg_") || schema == "information_schema" {
        Some((
            "invalid",
            "names a PostgreSQL system schema (pg_* and information_schema are reserved)"
                .to_owned(),
        ))
    } else {
        None
    };
    match problem {
        Some((code, message)) => Err(Error::Validation(vec![FieldError::new(
            "schema", code, message,
        )])),
        None => Ok(format!("\"{}\"", schema.replace('"', "\"\""))),
    }
}

/// The DDL of version 1, for the quoted schema `{s}`, exactly as the first PostgreSQL store
/// created it. A new schema is created at version 1 and upgraded by [`upgrade_v2`] to
/// [`upgrade_v6`], so new and upgraded schemas are the same. Timestamps are the core's UTC milliseconds (`bigint`); the
/// payload is `bytea` so that it round-trips byte for byte whatever the database encoding (and
/// may hold U+0000, which `text` cannot); names compare by bytes (`COLLATE "C"`), so `queues()`
/// is in byte order as in every store.
pub fn ddl_v1(s: &str) -> String {
    format!(
        r#"
CREATE TABLE {s}.messages (
    id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text    COLLATE "C" NOT NULL,
    payload          bytea   NOT NULL,
    status           text    NOT NULL
                     CHECK (status IN ('pending', 'processing', 'succeeded', 'dead')),
    retry_count      integer NOT NULL CHECK (retry_count >= 0),
    max_retries      integer NOT NULL CHECK (max_retries >= 0),
    retry_after      bigint,
    last_error       text,
    created_at       bigint  NOT NULL,
    updated_at       bigint  NOT NULL,
    lease_token      text,
    lease_expires_at bigint,
    idempotency_key  text    COLLATE "C",
    first_failed_at  bigint,
    dead_at          bigint,
    errors           jsonb   NOT NULL,
    errors_dropped   bigint  NOT NULL CHECK (errors_dropped >= 0),
    replay_count     bigint  NOT NULL CHECK (replay_count >= 0),
    replayed_at      bigint
);
-- claim, step 2: pending messages in FIFO order. The last key is when the message became due
-- (the smallest bigint when it always was), so the scan skips messages still in backoff inside
-- the index, without reading their rows.
CREATE INDEX messages_due ON {s}.messages
    (queue, created_at, id, (coalesce(retry_after, '-9223372036854775808'::bigint)))
    WHERE status = 'pending';
-- claim, step 1 (reap) and Counts::expired: leases in expiry order
CREATE INDEX messages_leases ON {s}.messages (queue, lease_expires_at, id)
    WHERE status = 'processing';
-- next_due_at, Counts::delayed and Counts::next_due_at
CREATE INDEX messages_delayed ON {s}.messages (queue, retry_after)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
-- Counts::oldest_dead_at
CREATE INDEX messages_dead ON {s}.messages (queue, dead_at) WHERE status = 'dead';
-- list with a status, select (replay_all, purge), Counts::by_status
CREATE INDEX messages_by_status ON {s}.messages (queue, status, id);
-- list without a status, queues
CREATE INDEX messages_by_queue ON {s}.messages (queue, id);
-- at most one stored message per key and queue, also between racing connections
CREATE UNIQUE INDEX messages_idempotency ON {s}.messages (queue, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE TABLE {s}.deadletter_schema (version integer NOT NULL);
INSERT INTO {s}.deadletter_schema (version) VALUES (1);
"#
    )
}

/// Version 1 -> 2, for the quoted schema `{s}`: claim no longer walks the messages in backoff
/// (issue 10).
///
/// `ready` is storage only (not a field of [`deadletter::Message`]): true when a `pending`
/// message is in the ready index `messages_ready`, which holds the due messages in FIFO order;
/// false while it waits in `messages_delayed` for its `retry_after`. Claim first marks ready the
/// waiting messages whose `retry_after` has come (nothing observable changes), then takes the
/// head of `messages_ready`: each message is moved once, and claim never walks delayed messages.
/// Every write sets `ready` to `retry_after IS NULL`, and the check constraint makes the
/// database refuse a row that has neither (whoever writes it), so a message without
/// `retry_after` is always ready and `ready = false` never hides a due message from claim. A
/// moved message keeps its `retry_after` until claimed: after a clock that went back it may be
/// later than `now` again, so `messages_ready` keeps the instant it became due as its last key
/// (claim skips it inside the index), and `messages_delayed` keeps moved messages for
/// `next_due_at` and the counts. Existing rows get `ready` from their state: false for the
/// pending messages in backoff (the first claim moves those whose backoff is over).
///
/// The upgrade holds the table's exclusive lock while it builds the two indexes: calls of other
/// processes wait for it (up to their `lock_timeout`).
pub fn upgrade_v2(s: &str) -> String {
    format!(
        r"
ALTER TABLE {s}.messages ADD COLUMN ready boolean NOT NULL DEFAULT true;
UPDATE {s}.messages SET ready = false WHERE status = 'pending' AND retry_after IS NOT NULL;
ALTER TABLE {s}.messages ADD CONSTRAINT messages_ready_or_delayed
    CHECK (ready OR retry_after IS NOT NULL);
DROP INDEX {s}.messages_due;
DROP INDEX {s}.messages_delayed;
-- claim, step 2 (and Counts::oldest_due_created_at): the ready messages in FIFO order. The last
-- key is when the message became due (the smallest bigint when it always was): a message moved
-- here before the clock went back is skipped inside the index.
CREATE INDEX messages_ready ON {s}.messages
    (queue, created_at, id, (coalesce(retry_after, '-9223372036854775808'::bigint)))
    WHERE status = 'pending' AND ready;
-- claim, first: the waiting messages (ready = false) whose retry_after has come, by retry_after;
-- next_due_at and the counts: every message in backoff, waiting or already moved (ready = true)
CREATE INDEX messages_delayed ON {s}.messages (queue, ready, retry_after, created_at)
    WHERE status = 'pending' AND retry_after IS NOT NULL;
UPDATE {s}.deadletter_schema SET version = 2;
"
    )
}

/// Version 2 -> 3, for the quoted schema `{s}`: ordering groups, expiry, and the settings stored
/// with each queue (issue 21). Cheap on a large table: the new columns are added with their
/// defaults (no rewrite), the new check constraint is `NOT VALID` (the old rows meet it: they met
/// the one it replaces, and none is blocked), and only the indexes of pending and live grouped
/// messages are built.
///
/// - `group_name`, `group_at`: a message's ordering group and its place in it (storage only, the
///   core's [`deadletter::storage::Position`]); `blocked` (storage only): true while a pending
///   member waits behind its group's head, in no claim index (`ready` is false then, hence the
///   new constraint, which also refuses a blocked message without a group: nothing would ever
///   unblock it): the third lane of the core's [`deadletter::storage::Lane`].
///   `messages_group` holds the live grouped messages in group order: a group's tail (enqueue,
///   replay) and next member (when the head leaves) are one probe each. `messages_delayed` is
///   rebuilt without the blocked members, which wait for their group, not for their
///   `retry_after`: claim never moves them, and they are neither due nor delayed in the
///   statistics.
/// - `expires_at`: when a pending message expires; `messages_expiring` holds the pending messages
///   that expire, in expiry order, for claim and reap to take out those whose time came.
/// - `queues`: one row per queue that has settings, was paused, or had a message expire: the
///   backoff policy (all four columns set, or none), `max_retries`, `lease_ms`, `expires_in_ms`
///   (null: unset), `on_expiry`, `paused`, and the expiry counters.
///
/// Like [`upgrade_v2`], it holds the table's exclusive lock while it builds the indexes.
pub fn upgrade_v3(s: &str) -> String {
    format!(
        r#"
ALTER TABLE {s}.messages ADD COLUMN group_name text COLLATE "C";
ALTER TABLE {s}.messages ADD COLUMN group_at bigint;
ALTER TABLE {s}.messages ADD COLUMN expires_at bigint;
ALTER TABLE {s}.messages ADD COLUMN blocked boolean NOT NULL DEFAULT false;
ALTER TABLE {s}.messages DROP CONSTRAINT messages_ready_or_delayed;
ALTER TABLE {s}.messages ADD CONSTRAINT messages_ready_waiting_or_blocked
    CHECK ((ready OR retry_after IS NOT NULL OR blocked) AND (NOT blocked OR group_name IS NOT NULL))
    NOT VALID;
DROP INDEX {s}.messages_delayed;
-- claim, first: the waiting messages whose retry_after has come (ready = false); next_due_at
-- and the counts: every message in backoff, waiting or moved (not the blocked members)
CREATE INDEX messages_delayed ON {s}.messages (queue, ready, retry_after, created_at)
    WHERE status = 'pending' AND retry_after IS NOT NULL AND NOT blocked;
-- the live members of each group in group order: its tail and its next member
CREATE INDEX messages_group ON {s}.messages (queue, group_name, group_at, id)
    WHERE group_name IS NOT NULL AND status IN ('pending', 'processing');
-- claim and reap: the pending messages whose expiry has come, in expiry order
CREATE INDEX messages_expiring ON {s}.messages (queue, expires_at, id)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
CREATE TABLE {s}.queues (
    name               text    COLLATE "C" PRIMARY KEY,
    backoff_initial_ms bigint,
    backoff_multiplier double precision,
    backoff_cap_ms     bigint,
    backoff_jitter     text,
    max_retries        integer,
    lease_ms           bigint,
    expires_in_ms      bigint,
    on_expiry          text    NOT NULL DEFAULT 'dead',
    paused             boolean NOT NULL DEFAULT false,
    expired_dead       bigint  NOT NULL DEFAULT 0,
    expired_discarded  bigint  NOT NULL DEFAULT 0
);
UPDATE {s}.deadletter_schema SET version = 3;
"#
    )
}

/// Version 3 -> 4, for the quoted schema `{s}`: `move` and `move_all` (issue 22). `moved_from`:
/// the queue a message was last moved from (null until it is moved). A column added without a
/// default: no rewrite of the table, no index changes (a move rewrites the message's `queue`,
/// which the indexes already key on).
pub fn upgrade_v4(s: &str) -> String {
    format!(
        r#"
ALTER TABLE {s}.messages ADD COLUMN moved_from text COLLATE "C";
UPDATE {s}.deadletter_schema SET version = 4;
"#
    )
}

/// Version 4 -> 5, for the quoted schema `{s}`: claim order is enqueue order, the id (the core's
/// [`deadletter::storage::claim_order`]; it was `created_at`, then id, which put a message
/// enqueued later first when the clock went back between two enqueues, or when producers' clocks
/// disagree). The ready index `messages_ready` is keyed by `(queue, id)` instead of `(queue,
/// created_at, id)`, with the instant the message became due still its last key (claim skips a
/// message moved before the clock went back inside the index). Cheap on a large table: no
/// column changes, no rewrite; the index is dropped and built again (it holds the ready messages
/// only), in the upgrade's transaction, which holds the table's lock while it builds it.
pub fn upgrade_v5(s: &str) -> String {
    format!(
        r"
DROP INDEX {s}.messages_ready;
-- claim, step 3 (and Counts::oldest_due_created_at): the ready messages in claim order (id). The
-- last key is when the message became due (the smallest bigint when it always was).
CREATE INDEX messages_ready ON {s}.messages
    (queue, id, (coalesce(retry_after, '-9223372036854775808'::bigint)))
    WHERE status = 'pending' AND ready;
UPDATE {s}.deadletter_schema SET version = 5;
"
    )
}

/// Version 5 -> 6, for the quoted schema `{s}`: an index per status, which a message leaves when
/// its status changes, instead of indexes keyed by status (issue 24). A transition wrote every
/// index holding the message: `messages_by_status` `(queue, status, id)` and `messages_by_queue`
/// `(queue, id)` held every message, so an enqueue wrote the table and four B-trees and each
/// claim and ack four or five (none of these updates is HOT: `status`, which every transition
/// changes, is in the indexes' predicates). Now each message is in one index of its status, by
/// id: `messages_ready` (the pending messages a claim may take, as before),
/// `messages_waiting` (new: the pending messages waiting for their `retry_after` or behind their
/// group's head), `messages_leases` (processing, by lease expiry as before),
/// `messages_succeeded` (new) and `messages_dead` (now by id, `dead_at` included for
/// `Counts::oldest_dead_at`). An enqueue writes the table, its primary key and
/// `messages_ready`; a claim the table, the key and `messages_leases`; an ack the table, the key
/// and `messages_succeeded`. `list` merges the indexes by id; `queues` skips through each. (The
/// ready lane is an index of its own rather than a range of one index of pending messages keyed
/// by `(queue, ready, id)`: PostgreSQL reads the condition `ready` as no equality, so such an
/// index is not in id order for it, and the planner took the head by the primary key instead.)
/// The check constraints on `status` and the four counters go too: each write statement
/// evaluated them (an insert cost the server 76 us of CPU with them, 55 without), and the core
/// checks every row read back for the same values ([`deadletter::storage::StoredMessage`]: a row
/// some other writer broke is a store error naming the field, as in the SQLite store, which never
/// had them). `messages_ready_waiting_or_blocked` stays: a message neither ready, waiting nor
/// blocked would be in no claim index, lost without a read ever seeing it.
/// Cheap on a large table: no column changes, no rewrite; indexes dropped and built in the
/// upgrade's transaction, which holds the table's lock meanwhile (building `messages_succeeded`
/// reads the whole table).
pub fn upgrade_v6(s: &str) -> String {
    format!(
        r"
ALTER TABLE {s}.messages DROP CONSTRAINT messages_status_check,
    DROP CONSTRAINT messages_retry_count_check, DROP CONSTRAINT messages_max_retries_check,
    DROP CONSTRAINT messages_errors_dropped_check, DROP CONSTRAINT messages_replay_count_check;
DROP INDEX {s}.messages_by_status;
DROP INDEX {s}.messages_by_queue;
DROP INDEX {s}.messages_dead;
-- list, the counts, queues: the pending messages not in messages_ready
CREATE INDEX messages_waiting ON {s}.messages (queue, id) WHERE status = 'pending' AND NOT ready;
-- list, the counts, queues
CREATE INDEX messages_succeeded ON {s}.messages (queue, id) WHERE status = 'succeeded';
-- list, the counts and Counts::oldest_dead_at (index-only scans), queues
CREATE INDEX messages_dead ON {s}.messages (queue, id) INCLUDE (dead_at) WHERE status = 'dead';
UPDATE {s}.deadletter_schema SET version = 6;
"
    )
}

/// The DDL of the current version ([`SCHEMA_VERSION`]) for the quoted schema `s`: what a new
/// schema gets.
pub fn ddl(s: &str) -> String {
    STEPS.iter().map(|step| step(s)).collect()
}

/// The DDL that brings version N to N + 1, for the quoted schema `s`, from 0 (an empty schema)
/// on: a new schema is created at version 1 and upgraded, so new and upgraded schemas are the
/// same.
const STEPS: [fn(&str) -> String; 6] = [
    ddl_v1, upgrade_v2, upgrade_v3, upgrade_v4, upgrade_v5, upgrade_v6,
];

/// Creates the schema `name` (quoted: `quoted`) and its tables when it is missing or empty;
/// accepts it at [`SCHEMA_VERSION`] and upgrades it from an older version, in the transaction
/// that read the version, as the core decides ([`Place::migration`]); refuses a schema that holds
/// other tables and no `deadletter_schema`, a newer or unknown version (a refused schema is only
/// read), and, unless `create`, a schema without deadletter's tables. Serialized between
/// processes by an advisory lock, so that workers starting together create or upgrade it once.
pub fn migrate(client: &mut Client, name: &str, quoted: &str, create: bool) -> Result<()> {
    client.batch_execute("BEGIN").map_err(db_error)?;
    let migrated = migrate_in(client, name, quoted, create);
    let end = if migrated.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = client.batch_execute(end).map_err(db_error);
    migrated.and(ended)
}

/// [`migrate`] inside its transaction.
fn migrate_in(tx: &mut Client, name: &str, quoted: &str, create: bool) -> Result<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('deadletter schema ' || $1, 0))",
        &[&name],
    )
    .map_err(db_error)?;
    let tables: Vec<String> = tx
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1",
            &[&name],
        )
        .map_err(db_error)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let place_name = format!("schema {name:?}");
    let place = Place {
        name: &place_name,
        kind: "schema",
    };
    let others;
    let found = if tables.iter().any(|t| t == "deadletter_schema") {
        let version: Option<i32> = tx
            .query_opt(
                &format!("SELECT max(version) FROM {quoted}.deadletter_schema"),
                &[],
            )
            .map_err(db_error)?
            .and_then(|row| row.get(0));
        let version =
            version.ok_or_else(|| place.not_ours("its deadletter_schema table has no version"))?;
        Found::Version(version.into())
    } else if tables.is_empty() {
        Found::Empty
    } else {
        let mut shown = tables[..tables.len().min(5)].join(", ");
        if tables.len() > 5 {
            shown = format!("{shown} and {} more", tables.len() - 5);
        }
        others = format!("other tables ({shown})");
        Found::Foreign(&others)
    };
    let from = match place.migration(found, SCHEMA_VERSION.into(), create)? {
        Migration::Current => return Ok(()),
        Migration::Upgrade { from } => from,
        Migration::Create => {
            // Not `CREATE SCHEMA IF NOT EXISTS`: it needs the right to create schemas in the
            // database even when the schema exists, and a role given only an empty schema made
            // for it has not.
            let exists = tx
                .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&name])
                .map_err(db_error)?
                .is_some();
            if !exists {
                tx.batch_execute(&format!("CREATE SCHEMA {quoted}"))
                    .map_err(db_error)?;
            }
            0
        }
    };
    let first = usize::try_from(from).map_err(Error::store)?;
    for step in STEPS.get(first..).unwrap_or_default() {
        tx.batch_execute(&step(quoted)).map_err(db_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_and_bad_names_refused() {
        assert_eq!(quote_identifier("deadletter").unwrap(), "\"deadletter\"");
        assert_eq!(
            quote_identifier("a\"; DROP TABLE x; --").unwrap(),
            "\"a\"\"; DROP TABLE x; --\""
        );
        let codes = |name: &str| {
            quote_identifier(name)
                .unwrap_err()
                .field_errors()
                .iter()
                .map(|f| (f.field, f.code))
                .collect::<Vec<_>>()
        };
        assert_eq!(codes(""), [("schema", "empty")]);
        assert_eq!(codes(&"x".repeat(64)), [("schema", "too_long")]);
        assert_eq!(codes("a\0b"), [("schema", "invalid")]);
        // PostgreSQL's own schemas (CREATE SCHEMA pg_x is refused by the server, 42939).
        for system in ["pg_catalog", "pg_temp", "pg_x", "information_schema"] {
            assert_eq!(codes(system), [("schema", "invalid")], "{system}");
        }
        assert!(quote_identifier("Pg_x").is_ok());
        assert!(quote_identifier(&"é".repeat(31)).is_ok());
    }
}
