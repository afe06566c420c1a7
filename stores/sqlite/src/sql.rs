//! Every statement of the store. Queue names, payloads and every other value are bound
//! parameters; the statements of one status ([`list_status_sql`]) are one constant each.
//!
//! Every query finds its rows through an index, without a full scan (`tests/plans.rs` asserts
//! the plans, with and without `ANALYZE`). The indexes are those of the queries that exist, one
//! per status (schema version 8) and none of every message: a transition writes as few pages as it
//! can (an enqueue: the table and `messages_pending`), and the queries across statuses pay
//! instead: a page of every status merges the status indexes' pages by id, a page of pending
//! messages the two ranges of `messages_pending`, and a page of `processing` messages is sorted
//! by id (they are as many as the leases held).

use deadletter::Status;

/// `SELECT` every column of [`deadletter::Message`] (in the order `row::read` reads them), then
/// the storage-only `blocked` flag, `FROM messages`, followed by `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, queue, payload, status, retry_count, max_retries, retry_after, ",
            "last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, ",
            "first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, ",
            "group_name, expires_at, moved_from, blocked FROM messages ",
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
/// into the ready lane (`ready = 1`: the range of `messages_pending` that claim reads), through
/// the index `messages_delayed`: only the messages that became due since the last claim are
/// read.
pub const PROMOTE_SQL: &str = "UPDATE messages SET ready = 1 \
    WHERE queue = ?1 AND status = 'pending' AND retry_after IS NOT NULL AND blocked = 0 \
    AND ready = 0 AND retry_after <= ?2";

/// Claim, step 2: the first `?3` ready messages of queue `?1` due at `?2`, in claim order (by
/// id, [`deadletter::storage::claim_order`]), from the head of the range `ready = 1` of the index
/// `messages_pending` (named: the plan must not depend on statistics): no sort, no table scan, no
/// message in backoff nor behind its group's head (the `retry_after` term, which the index
/// carries, only skips a message moved there before the clock went back; the `expires_at` term,
/// one whose expiry came, which the claim took out just before).
pub const CLAIM_SQL: &str = select!(
    "INDEXED BY messages_pending WHERE queue = ?1 AND status = 'pending' AND ready = 1 \
     AND (retry_after IS NULL OR retry_after <= ?2) AND (expires_at IS NULL OR expires_at > ?2) \
     ORDER BY id LIMIT ?3"
);

/// Claim and reap, after the expired leases: the pending messages of queue `?1` whose expiry
/// came at `?2` (ready, waiting or blocked), in expiry order (then id), through the index
/// `messages_expiring`: only their rows are read.
pub const EXPIRING_SQL: &str = select!(
    "WHERE queue = ?1 AND status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?2 \
     ORDER BY expires_at, id"
);

/// The last live member of group `?2` of queue `?1` in group order, its `group_at` and id (the
/// group's tail: a message entering the group goes behind it), through `messages_group`.
pub const TAIL_SQL: &str = "SELECT group_at, id FROM messages \
    WHERE queue = ?1 AND group_name = ?2 AND status IN ('pending', 'processing') \
    ORDER BY group_at DESC, id DESC LIMIT 1";

/// The first live member of group `?2` of queue `?1` in group order (its head, or the member to
/// unblock once the head left), through `messages_group`.
pub const HEAD_SQL: &str = select!(
    "WHERE queue = ?1 AND group_name = ?2 AND status IN ('pending', 'processing') \
     ORDER BY group_at, id LIMIT 1"
);

/// Unblocks message `?1`, its group's head now, into the lane `?2` (`ready`: 1, or 0 while its
/// `retry_after` is set, like any waiting message).
pub const UNBLOCK_SQL: &str = "UPDATE messages SET blocked = 0, ready = ?2 WHERE id = ?1";

/// The row of queue `?1` (by primary key), in [`deadletter::storage::StoredQueue`]'s order.
pub const QUEUE_SQL: &str = "SELECT backoff_initial_ms, backoff_multiplier, backoff_cap_ms, \
    backoff_jitter, max_retries, lease_ms, expires_in_ms, on_expiry, paused, expired_dead, \
    expired_discarded FROM queues WHERE name = ?1";

/// Writes the row of queue `?1` (`?2`..`?12` in [`QUEUE_SQL`]'s order).
pub const PUT_QUEUE_SQL: &str = "INSERT INTO queues (name, backoff_initial_ms, \
    backoff_multiplier, backoff_cap_ms, backoff_jitter, max_retries, lease_ms, expires_in_ms, \
    on_expiry, paused, expired_dead, expired_discarded) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
    ON CONFLICT (name) DO UPDATE SET backoff_initial_ms = excluded.backoff_initial_ms, \
    backoff_multiplier = excluded.backoff_multiplier, backoff_cap_ms = excluded.backoff_cap_ms, \
    backoff_jitter = excluded.backoff_jitter, max_retries = excluded.max_retries, \
    lease_ms = excluded.lease_ms, expires_in_ms = excluded.expires_in_ms, \
    on_expiry = excluded.on_expiry, paused = excluded.paused, \
    expired_dead = excluded.expired_dead, expired_discarded = excluded.expired_discarded";

/// Deletes the row of queue `?1`: a write of its settings brought it back to the defaults
/// ([`deadletter::QueueRow::worth_storing`]; new-user finding F5, session 6).
pub const DELETE_QUEUE_SQL: &str = "DELETE FROM queues WHERE name = ?1";

/// Counts `?2` more expired messages made dead and `?3` more discarded in the row of queue `?1`
/// (created with the defaults when it has none).
pub const COUNT_EXPIRY_SQL: &str = "INSERT INTO queues (name, expired_dead, expired_discarded) \
    VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET \
    expired_dead = expired_dead + excluded.expired_dead, \
    expired_discarded = expired_discarded + excluded.expired_discarded";

/// Message `?1` of queue `?2` (by primary key).
pub const GET_SQL: &str = select!("WHERE id = ?1 AND queue = ?2");

/// The message of queue `?1` that carries idempotency key `?2`.
pub const BY_KEY_SQL: &str = select!("WHERE queue = ?1 AND idempotency_key = ?2");

/// A page of queue `?1` in every status: ids above `?2`, at most `?3`. The ids are the merge by
/// id (SQLite's `MERGE (UNION ALL)` of a compound `ORDER BY`, which pulls each part only as far as
/// the page needs) of the ranges of every status's index, named (the plan must not depend on
/// statistics): both ranges of `messages_pending` (ready, then waiting or blocked), the
/// `processing` messages of `messages_leased` (sorted by id first: they are as many as the leases
/// held), `messages_succeeded` and `messages_dead`; then the page's rows are read by id.
pub const LIST_SQL: &str = select!(
    "WHERE id IN ( \
        SELECT id FROM messages INDEXED BY messages_pending \
            WHERE queue = ?1 AND status = 'pending' AND ready = 0 AND id > ?2 \
        UNION ALL SELECT id FROM messages INDEXED BY messages_pending \
            WHERE queue = ?1 AND status = 'pending' AND ready = 1 AND id > ?2 \
        UNION ALL SELECT id FROM messages INDEXED BY messages_leased \
            WHERE queue = ?1 AND status = 'processing' AND id > ?2 \
        UNION ALL SELECT id FROM messages INDEXED BY messages_succeeded \
            WHERE queue = ?1 AND status = 'succeeded' AND id > ?2 \
        UNION ALL SELECT id FROM messages INDEXED BY messages_dead \
            WHERE queue = ?1 AND status = 'dead' AND id > ?2 \
        ORDER BY id LIMIT ?3) \
     ORDER BY id"
);

/// A page of queue `?1` in `status`: ids above `?2`, at most `?3`, through the status's partial
/// index, named (the plan must not depend on statistics): for `pending`, the merge by id of the
/// two ranges of `messages_pending` (as in [`LIST_SQL`]), then the page's rows; `messages_leased`
/// (then sorted by id: processing messages are as many as the leases held),
/// `messages_succeeded`, `messages_dead`.
pub fn list_status_sql(status: Status) -> &'static str {
    match status {
        Status::Pending => select!(
            "WHERE id IN ( \
                SELECT id FROM messages INDEXED BY messages_pending \
                    WHERE queue = ?1 AND status = 'pending' AND ready = 0 AND id > ?2 \
                UNION ALL SELECT id FROM messages INDEXED BY messages_pending \
                    WHERE queue = ?1 AND status = 'pending' AND ready = 1 AND id > ?2 \
                ORDER BY id LIMIT ?3) \
             ORDER BY id"
        ),
        Status::Processing => select!(
            "INDEXED BY messages_leased \
             WHERE queue = ?1 AND status = 'processing' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
        Status::Succeeded => select!(
            "INDEXED BY messages_succeeded \
             WHERE queue = ?1 AND status = 'succeeded' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
        Status::Dead => select!(
            "INDEXED BY messages_dead \
             WHERE queue = ?1 AND status = 'dead' AND id > ?2 ORDER BY id LIMIT ?3"
        ),
    }
}

/// Inserts one new message (`?1`..`?18`: every column but the id; `?19` its `ready` and `?22`
/// its `blocked` flag, the core's [`deadletter::storage::ready`] and
/// [`deadletter::storage::blocked`]; `?20` `group_name`, `?21` `expires_at`, `?23` `group_at`)
/// unless its queue already holds one with its idempotency key: the unique index
/// `messages_idempotency` is what guarantees one message per key (`ON CONFLICT ... DO NOTHING`:
/// no row is written, and the store reads the stored one). Its id is one above every stored id
/// and above `retired_ids.up_to` (the ids of deleted messages), so ids are never reused; reading
/// both is a seek each, and writes no page.
///
/// One row of `VALUES`, not `INSERT ... SELECT`: a `SELECT` that reads the table it inserts into
/// makes SQLite copy its rows into a temporary table first (`OpenEphemeral`), a B-tree opened and
/// freed at every enqueue (about a third of the statement's instructions).
pub const INSERT_SQL: &str = "INSERT INTO messages (id, queue, payload, status, retry_count, \
    max_retries, retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
    idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, \
    ready, group_name, expires_at, blocked, group_at) \
    VALUES ((SELECT max(coalesce((SELECT max(id) FROM messages), 0), \
        (SELECT up_to FROM retired_ids)) + 1), \
    ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
    ?19, ?20, ?21, ?22, ?23) \
    ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING";

/// Writes the columns a step may change. `queue`, `payload`, `max_retries`, `created_at`,
/// `idempotency_key` and `group_name` are fixed at insert (no step of the core changes them), so
/// the indexes that hold only those are never rewritten by an update.
/// `?15` is `ready` and `?17` `blocked`, the core's [`deadletter::storage::ready`] and
/// [`deadletter::storage::blocked`]: `ready` is 0 exactly while the message waits for its
/// `retry_after` (claim moves it when that comes, with [`PROMOTE_SQL`]) or behind its group's
/// head. `?16` is `expires_at` (a replay sets it anew); `?18`, when not null, the message's new
/// `group_at` (a replay puts it at its group's end).
pub const WRITE_SQL: &str = "UPDATE messages SET status = ?2, retry_count = ?3, retry_after = ?4, \
    last_error = ?5, updated_at = ?6, lease_token = ?7, lease_expires_at = ?8, \
    first_failed_at = ?9, dead_at = ?10, errors = ?11, errors_dropped = ?12, replay_count = ?13, \
    replayed_at = ?14, ready = ?15, expires_at = ?16, blocked = ?17, \
    group_at = coalesce(?18, group_at) WHERE id = ?1";

/// Moves message `?1` to queue `?2`, noting `?3` as the queue it came from (`moved_from`), after
/// [`WRITE_SQL`] wrote the rest of it (`move`, `move_all`). The unique index
/// `messages_idempotency` refuses it when queue `?2` holds its idempotency key.
pub const MOVE_SQL: &str = "UPDATE messages SET queue = ?2, moved_from = ?3 WHERE id = ?1";

/// Whether a message of queue `?1` carries idempotency key `?2` (index `messages_idempotency`).
pub const KEY_TAKEN_SQL: &str =
    "SELECT EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND idempotency_key = ?2)";

/// Removes message `?1` (by primary key).
pub const DELETE_SQL: &str = "DELETE FROM messages WHERE id = ?1";

/// Records that ids up to `?1` were given (after a delete), so that none is given again.
pub const RETIRE_SQL: &str = "UPDATE retired_ids SET up_to = max(up_to, ?1)";

/// The messages of queue `?1` in each status, in [`Status::ALL`]'s order (pending, processing,
/// succeeded, dead), each a range of its status's index (`messages_pending`, `messages_leased`,
/// `messages_succeeded`, `messages_dead`); the total is their sum.
pub const COUNT_BY_STATUS_SQL: &str = "SELECT \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'pending'), \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'processing'), \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'succeeded'), \
    (SELECT count(*) FROM messages WHERE queue = ?1 AND status = 'dead')";

/// Processing messages of queue `?1` whose lease ran out at `?2` (index `messages_leased`).
pub const COUNT_EXPIRED_SQL: &str = "SELECT count(*) FROM messages \
    WHERE queue = ?1 AND status = 'processing' AND lease_expires_at <= ?2";

/// Delayed messages of queue `?1` at `?2`, and the earliest instant one becomes due (index
/// `messages_delayed`: two ranges, waiting and ready; blocked members are not in it).
pub const COUNT_DELAYED_SQL: &str = "SELECT count(*), min(retry_after) FROM messages \
    WHERE queue = ?1 AND status = 'pending' AND retry_after IS NOT NULL AND blocked = 0 \
    AND ready IN (0, 1) AND retry_after > ?2";

/// When the next delayed message of queue `?1` becomes due after `?2`: one seek in each range
/// of the index `messages_delayed`.
pub const NEXT_DUE_SQL: &str = "SELECT min(at) FROM ( \
    SELECT min(retry_after) AS at FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND retry_after IS NOT NULL AND blocked = 0 AND ready = 0 AND retry_after > ?2 \
    UNION ALL \
    SELECT min(retry_after) FROM messages WHERE queue = ?1 AND status = 'pending' \
        AND retry_after IS NOT NULL AND blocked = 0 AND ready = 1 AND retry_after > ?2)";

/// The enqueue time (`created_at`) of the first message of queue `?1` due at `?2` in claim order
/// (the lowest id, not blocked: [`deadletter::Counts::oldest_due_created_at`]): the lower id of
/// the first due entry of the ready lane (range `ready = 1` of `messages_pending`) and of the
/// waiting messages whose `retry_after` has come and that no claim has moved yet (index
/// `messages_delayed`), both read from the indexes alone, named (with statistics, SQLite would
/// rather walk the range `ready = 0` of `messages_pending`, every waiting message's row). (`min(id)` with the bare column
/// `created_at`: SQLite takes it from the row of the minimum.)
pub const OLDEST_DUE_SQL: &str = "SELECT created_at FROM (SELECT min(id), created_at FROM ( \
    SELECT id, created_at FROM (SELECT id, created_at FROM messages \
        INDEXED BY messages_pending WHERE queue = ?1 AND status = 'pending' AND ready = 1 \
        AND (retry_after IS NULL OR retry_after <= ?2) ORDER BY id LIMIT 1) \
    UNION ALL \
    SELECT min(id), created_at FROM messages INDEXED BY messages_delayed \
        WHERE queue = ?1 AND status = 'pending' AND retry_after IS NOT NULL AND blocked = 0 \
        AND ready = 0 AND retry_after <= ?2))";

/// When the oldest dead message of queue `?1` died (index `messages_dead_at`).
pub const OLDEST_DEAD_SQL: &str =
    "SELECT min(dead_at) FROM messages WHERE queue = ?1 AND status = 'dead'";

/// The names of the queues that hold messages, ascending, each once: a skip-scan of the four
/// status indexes together (`messages_pending`, `messages_leased`, `messages_succeeded`,
/// `messages_dead`), the next name being the least of the next one in each: four seeks per queue
/// instead of reading every message.
pub const QUEUES_SQL: &str = "WITH RECURSIVE names (queue) AS ( \
        SELECT min(name) FROM ( \
            SELECT min(queue) AS name FROM messages WHERE status = 'pending' \
            UNION ALL SELECT min(queue) FROM messages WHERE status = 'processing' \
            UNION ALL SELECT min(queue) FROM messages WHERE status = 'succeeded' \
            UNION ALL SELECT min(queue) FROM messages WHERE status = 'dead') \
        UNION ALL \
        SELECT (SELECT min(name) FROM ( \
            SELECT min(queue) AS name FROM messages \
                WHERE status = 'pending' AND queue > names.queue \
            UNION ALL SELECT min(queue) FROM messages \
                WHERE status = 'processing' AND queue > names.queue \
            UNION ALL SELECT min(queue) FROM messages \
                WHERE status = 'succeeded' AND queue > names.queue \
            UNION ALL SELECT min(queue) FROM messages \
                WHERE status = 'dead' AND queue > names.queue)) \
        FROM names WHERE names.queue IS NOT NULL \
    ) SELECT queue FROM names WHERE queue IS NOT NULL";

/// The names of the queues that have a row, ascending (its primary key's order).
pub const QUEUE_NAMES_SQL: &str = "SELECT name FROM queues ORDER BY name";

/// Every column of the current schema's `messages`, reading no row (the schema check at open).
pub const COLUMNS_SQL: &str = select!("LIMIT 0");

/// A page of every queue's messages, ids above `?1`, at most `?2` (by primary key): the upgrade
/// of version 1's rows.
pub const PAGE_SQL: &str = select!("WHERE id > ?1 ORDER BY id LIMIT ?2");
