//! Every statement of the store, built once per store for its quoted schema. Queue names,
//! payloads and every other value are bound parameters; only the quoted schema is spliced in.

/// The columns of a message, in the order the store reads them, then the storage-only `blocked`.
pub const COLUMNS: &str = "id, queue, payload, status, retry_count, max_retries, retry_after, \
    last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, \
    first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, group_name, \
    expires_at, moved_from, blocked";

/// The columns an insert writes: all but the id.
const INSERTED: &str = "queue, payload, status, retry_count, max_retries, retry_after, \
    last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, \
    first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, ready, \
    group_name, group_at, expires_at, blocked";

/// The columns of a queue's row after its name, in [`deadletter::storage::StoredQueue`]'s order.
const QUEUE_COLUMNS: &str = "backoff_initial_ms, backoff_multiplier, backoff_cap_ms, \
    backoff_jitter, max_retries, lease_ms, expires_in_ms, on_expiry, paused, expired_dead, \
    expired_discarded";

/// A row's version, as a write returns it and a guarded write compares it (issue 24): the
/// transaction that wrote it (`xmin`) and where it put it (`ctid`). Every `UPDATE` makes a new
/// version at a new place; two versions one transaction writes share their `xmin` but not their
/// place, and a place is reused only once the version there is gone (so with another `xmin`).
/// A row that `VACUUM FULL` moved only takes the usual path once more.
pub const VERSION: &str = "xmin::text || ctid::text";

/// The types of the columns of [`INSERTED`], in order (for parameters that nothing else types).
const INSERTED_TYPES: [&str; 23] = [
    "text", "bytea", "text", "int", "int", "bigint", "text", "bigint", "bigint", "text", "bigint",
    "text", "bigint", "bigint", "jsonb", "bigint", "bigint", "bigint", "boolean", "text", "bigint",
    "bigint", "boolean",
];

/// The condition that the stored settings of queue `$n` (in table `q`) are `$n+1`..`$n+9`, in
/// [`deadletter::storage::StoredQueue`]'s order from `backoff_initial_ms` to `paused` (what
/// `row::Settings` binds): a queue without a row has the defaults (`on_expiry` `dead`, not
/// paused, the rest null), as `row::queue` reads it. Its counters are not compared: no step
/// reads them.
fn settings_are(q: &str, n: usize) -> String {
    let types = [
        "bigint", "float8", "bigint", "text", "int", "bigint", "bigint", "text", "boolean",
    ];
    let params: Vec<String> = (1..)
        .zip(types)
        .map(|(i, t)| format!("${}::{t}", n + i))
        .collect();
    format!(
        "EXISTS (SELECT FROM (VALUES (1)) AS one (x) LEFT JOIN {q} q ON q.name = ${n} \
         WHERE (q.backoff_initial_ms, q.backoff_multiplier, q.backoff_cap_ms, q.backoff_jitter, \
         q.max_retries, q.lease_ms, q.expires_in_ms, coalesce(q.on_expiry, 'dead'), \
         coalesce(q.paused, false)) IS NOT DISTINCT FROM ({}))",
        params.join(", ")
    )
}

/// The live members of a group (`$1` queue, `$2` group): pending or processing.
const MEMBERS: &str = "queue = $1 AND group_name = $2 AND status IN ('pending', 'processing')";

/// When a ready message became due, as the `messages_ready` index stores it: its `retry_after`,
/// or the smallest bigint when it has none (due from the start). The same text as in the index,
/// so that the planner matches them.
const DUE_SINCE: &str = "coalesce(retry_after, '-9223372036854775808'::bigint)";

/// The waiting messages: pending, in backoff, not yet moved to the ready index (the range
/// `ready = false` of the index `messages_delayed`), not blocked behind their group's head.
const WAITING: &str =
    "status = 'pending' AND retry_after IS NOT NULL AND NOT blocked AND NOT ready";

/// The pending messages in backoff already moved to the ready index (the range `ready = true` of
/// `messages_delayed`): their `retry_after` had come when they were moved.
const MOVED: &str = "status = 'pending' AND retry_after IS NOT NULL AND NOT blocked AND ready";

/// The plans every statement of the store runs, in a transaction (for `EXPLAIN` in tests and
/// reports; the sessions set it once, in their setup). They are generic plans, made once per
/// session (which `tests/plans.rs` checks, beside the plans made for given values), never a
/// plan made for one call's values: while messages wait in backoff, the generic plan of
/// [`Sql::expired`] is estimated to move a third of them (the planner's guess for
/// `retry_after <= $2`), so PostgreSQL would choose to plan it again at every claim, for more
/// than the statement itself costs. (It was a `SET LOCAL` sent with each claim's `BEGIN` until
/// issue 24: a statement per claim.)
pub const CLAIM_BEGIN: &str = "SET LOCAL plan_cache_mode = force_generic_plan";

/// The statements of one schema.
#[derive(Debug, Clone)]
pub struct Sql {
    /// Starts a write transaction: `BEGIN`, then the table's `ROW EXCLUSIVE` lock (what any write
    /// takes at its first row, taken first): a call that waits for a table lock another session
    /// holds (an upgrade of the schema, a `LOCK TABLE`) waits here, before it reads the clock.
    pub begin: String,
    /// [`Sql::begin`] that does not wait for the table's lock (`NOWAIT`): it fails at once
    /// (SQLSTATE 55P03) when another session holds a lock that excludes writes, and the claim
    /// then waits with [`Sql::begin`] (`PostgresStore::claim`). The one-round-trip enqueue and
    /// ack (issue 24) begin with it too, and take their usual path then.
    pub claim_begin_nowait: String,
    /// The row of queue `$1`, in [`deadletter::storage::StoredQueue`]'s order.
    pub queue: String,
    /// Writes the settings and `paused` of queue `$1` (`$2`..`$10`, in [`Sql::queue`]'s order);
    /// a new row starts with the counters `$11`, `$12`; an existing one keeps its counters, which
    /// claims of other sessions may be adding to.
    pub put_queue: String,
    /// Deletes the row of queue `$1` unless a claim of another session has counted an expired
    /// message in it: run after [`Sql::put_queue`] wrote the defaults (new-user finding F5,
    /// session 6).
    pub delete_queue: String,
    /// Counts `$2` more expired messages made dead and `$3` more discarded in the row of queue
    /// `$1` (created with the defaults when it has none).
    pub count_expiry: String,
    /// The names of the queues that have a row, in byte order.
    pub queue_names: String,
    /// Message `$1` of queue `$2` locked, with the queue's row (null columns when it has none),
    /// in one round trip: what `update` reads.
    pub get_for_update_with_queue: String,
    /// The last live member of group `$2` of queue `$1` in group order: `group_at`, id.
    pub tail: String,
    /// The first live member of group `$2` of queue `$1` in group order.
    pub head: String,
    /// Unblocks message `$1` into the lane `$2` (`ready`) if it is still a blocked pending
    /// message (the update locks it and checks again).
    pub unblock: String,
    /// Claim's first read, one row: the row of queue `$1` in [`Sql::queue`]'s order (nulls when
    /// it has none), then the ids and the groups of its pending messages whose expiry came at
    /// `$2`, in expiry order (two arrays, null when there are none; unlocked: their groups are
    /// locked before they are). One statement rather than two: each statement costs the server
    /// its own start, end and reply (issue 24).
    pub queue_and_expiring: String,
    /// The messages `$1` that are still pending with their expiry come at `$2`, locked, skipping
    /// those another transaction holds, in expiry order.
    pub expiring_locked: String,
    /// `$1` id, `$2` queue.
    pub get: String,
    /// [`Sql::get`] locking the row until the transaction ends.
    pub get_for_update: String,
    /// The message of queue `$1` with idempotency key `$2`.
    pub find_key: String,
    /// Inserts one message (`$1`..`$18`: every column but the id; `$19` `ready` and `$23`
    /// `blocked`, the core's [`deadletter::storage::ready`] and [`deadletter::storage::blocked`];
    /// `$20` `group_name`, `$21` `group_at`, `$22` `expires_at`) unless a message of its queue
    /// already carries its idempotency key; returns the new id, or no row on such a conflict.
    pub insert: String,
    /// [`Sql::insert`] for a message without an idempotency key: no `ON CONFLICT` (whose
    /// speculative insertion writes one more WAL record per row); returns the new id.
    pub insert_one: String,
    /// Inserts messages without idempotency keys given column by column as arrays (`$1`..`$23`,
    /// in [`Sql::insert`]'s order), in array order; returns their ids (ascending in that order:
    /// the identity is drawn row by row as they are inserted).
    pub insert_many: String,
    /// [`Sql::insert_one`] as one statement of its own transaction, sent with the transaction's
    /// `BEGIN` and `COMMIT` (issue 24): inserts only while the settings of queue `$24` are still
    /// `$25`..`$33` (those the core built the message with, remembered from an earlier call:
    /// `cache.rs`); no row when they are not, and then no identity value is drawn.
    pub insert_one_if_settings: String,
    /// [`Sql::insert_many`] with [`Sql::insert_one_if_settings`]'s condition.
    pub insert_many_if_settings: String,
    /// The condition of a guarded write (`row::write_if_unchanged`) of message `$1`: its row is
    /// still of version `$2` (`xmin::text || ctid::text`) and the settings of queue `$3` are still
    /// `$4`..`$12`.
    pub unchanged: String,
    /// The table of messages, quoted (`"schema".messages`). A write's `UPDATE` (`row::write`)
    /// sets the columns its step changed only, so its text is built per write (and prepared once
    /// per session and set of columns). It always sets `updated_at`, `ready` and `blocked`, the
    /// core's [`deadletter::storage::ready`] and [`deadletter::storage::blocked`]: `ready` is
    /// false exactly while the message waits for its `retry_after` (claim moves it when that
    /// comes) or behind its group's head; inserts set them the same way.
    pub messages: String,
    /// Claim, step 2: the processing messages of queue `$1` whose lease ran out at `$2`, in
    /// expiry order, locked. First, in a data-modifying `WITH` (so that it costs no round trip
    /// of its own), it marks ready the waiting messages of queue `$1` whose `retry_after` has
    /// come at `$2` (index `messages_delayed`, range `ready = false`): each moves once into the
    /// ready index that [`Sql::due`] takes the head of, and no field changes. Both skip the rows
    /// another transaction holds (it is acking, reaping or moving them) instead of waiting.
    pub expired: String,
    /// The move that [`Sql::expired`] starts with, alone (for `EXPLAIN`: PostgreSQL counts the
    /// pages a data-modifying `WITH` reads apart from the statement's).
    pub move_due: String,
    /// Claim, step 3: at most `$3` ready messages of queue `$1` due at `$2`, in claim order (by
    /// id: the head of the index `messages_ready`), locked; rows other workers are claiming are skipped instead
    /// of waited for; one whose expiry came (that another claim skipped while taking it out)
    /// is left alone.
    pub due: String,
    /// Queue `$1`, ids above `$2`, at most `$3`, by id: the indexes of each status merged (see
    /// `list`).
    pub list: String,
    /// Queue `$1`, status `$2`, ids above `$3`, at most `$4`, by id: the index of that status.
    pub list_status: String,
    /// Messages of queue `$1` among ids `$2`, locked in id order.
    pub many_for_update: String,
    /// Messages of queue `$1` among ids `$2`, unlocked (`update_many` and `move_many` read their
    /// groups, keys and lanes to take their locks in order).
    pub many: String,
    /// [`Sql::many_for_update`] skipping the rows another transaction holds.
    pub many_for_update_skip: String,
    /// The keys among `$2` that a message of queue `$1` carries (index `messages_idempotency`).
    pub keys_taken: String,
    /// Deletes the messages with ids `$1`.
    pub delete: String,
    /// The counters of queue `$1` at `$2`: by status (4), expired, delayed, next due, the
    /// `created_at` of the first due message in claim order (the lower id of the ready index's
    /// head and of the first waiting message whose `retry_after` has come and that no claim has
    /// moved yet), oldest `dead_at`; then the queue row's
    /// `paused`, `expired_dead`, `expired_discarded`.
    pub counts: String,
    /// The distinct queue names holding messages, in byte order: one probe per queue in the
    /// index of each status (loose index scans), merged.
    pub queues: String,
    /// The earliest `retry_after` after `$2` among the pending messages of queue `$1` (waiting,
    /// or moved before the clock went back): one seek in each range of `messages_delayed`.
    pub next_due_at: String,
}

impl Sql {
    /// The statements for the quoted schema `s`.
    #[allow(clippy::too_many_lines)] // one statement per field, each written once
    pub fn new(s: &str) -> Self {
        let m = format!("{s}.messages");
        let q = format!("{s}.queues");
        let select = |rest: &str| format!("SELECT {COLUMNS} FROM {m} {rest}");
        let count = |cond: &str| format!("(SELECT count(*) FROM {m} WHERE queue = $1 AND {cond})");
        let row = |column: &str, default: &str| {
            format!("coalesce((SELECT {column} FROM {q} WHERE name = $1), {default})")
        };
        let next_due_at = format!(
            "least( \
               (SELECT min(retry_after) FROM {m} WHERE queue = $1 AND {WAITING} \
                AND retry_after > $2), \
               (SELECT min(retry_after) FROM {m} WHERE queue = $1 AND {MOVED} \
                AND retry_after > $2))"
        );
        // The ids are collected into one array (a materialized CTE of one row) and updated by
        // the primary key only when there are some: the planner estimates an array of ten ids,
        // which on a table of a few thousand rows it would rather find by a sequential scan of
        // the table than by ten probes, and it made that scan at every claim, for no id at all
        // (issue 24: 35 pages and 130 to 250 us of a claim's server time on 2 000 messages).
        // The filter on the array's size runs before the join reads the table at all.
        let due_ids = format!(
            "due AS MATERIALIZED (SELECT ARRAY( \
               SELECT id FROM {m} WHERE queue = $1 AND {WAITING} AND retry_after <= $2 \
               ORDER BY retry_after FOR UPDATE SKIP LOCKED) AS ids)"
        );
        let mark_ready = format!(
            "UPDATE {m} SET ready = true FROM due \
             WHERE cardinality(due.ids) > 0 AND {m}.id = ANY(due.ids)"
        );
        let move_due = format!("WITH {due_ids} {mark_ready}");
        // The two indexes of pending messages: `messages_ready`, `messages_waiting`.
        let pending = format!(
            "({} + {})",
            count("status = 'pending' AND ready"),
            count("status = 'pending' AND NOT ready")
        );
        let begin = format!("BEGIN; LOCK TABLE {m} IN ROW EXCLUSIVE MODE");
        let inserted_values = (1..=23)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let typed = |array: &str| -> String {
            (1..)
                .zip(INSERTED_TYPES)
                .map(|(i, t)| format!("${i}::{t}{array}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let insert_many = |condition: &str| {
            format!(
                "INSERT INTO {m} ({INSERTED}) SELECT {INSERTED} FROM unnest({}) \
                 WITH ORDINALITY AS v({INSERTED}, ord) {condition}ORDER BY ord RETURNING id",
                typed("[]")
            )
        };
        Self {
            claim_begin_nowait: format!("{begin} NOWAIT"),
            begin,
            queue: format!("SELECT {QUEUE_COLUMNS} FROM {q} WHERE name = $1"),
            put_queue: format!(
                "INSERT INTO {q} (name, {QUEUE_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                 ON CONFLICT (name) DO UPDATE SET \
                 backoff_initial_ms = excluded.backoff_initial_ms, \
                 backoff_multiplier = excluded.backoff_multiplier, \
                 backoff_cap_ms = excluded.backoff_cap_ms, \
                 backoff_jitter = excluded.backoff_jitter, max_retries = excluded.max_retries, \
                 lease_ms = excluded.lease_ms, expires_in_ms = excluded.expires_in_ms, \
                 on_expiry = excluded.on_expiry, paused = excluded.paused"
            ),
            delete_queue: format!(
                "DELETE FROM {q} WHERE name = $1 AND expired_dead = 0 AND expired_discarded = 0"
            ),
            count_expiry: format!(
                "INSERT INTO {q} (name, expired_dead, expired_discarded) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET \
                 expired_dead = {q}.expired_dead + excluded.expired_dead, \
                 expired_discarded = {q}.expired_discarded + excluded.expired_discarded"
            ),
            queue_names: format!("SELECT name FROM {q} ORDER BY name"),
            get_for_update_with_queue: format!(
                "SELECT {}, {} FROM {m} m LEFT JOIN {q} q ON q.name = m.queue \
                 WHERE m.id = $1 AND m.queue = $2 FOR UPDATE OF m",
                prefixed("m", COLUMNS),
                prefixed("q", QUEUE_COLUMNS)
            ),
            tail: format!(
                "SELECT group_at, id FROM {m} WHERE {MEMBERS} \
                 ORDER BY group_at DESC, id DESC LIMIT 1"
            ),
            head: select(&format!("WHERE {MEMBERS} ORDER BY group_at, id LIMIT 1")),
            unblock: format!(
                "UPDATE {m} SET blocked = false, ready = $2 \
                 WHERE id = $1 AND blocked AND status = 'pending'"
            ),
            queue_and_expiring: format!(
                "SELECT {}, e.ids, e.groups FROM ( \
                   SELECT array_agg(id ORDER BY expires_at, id) AS ids, \
                     array_agg(group_name ORDER BY expires_at, id) AS groups \
                   FROM {m} WHERE queue = $1 AND status = 'pending' AND expires_at <= $2) AS e \
                 LEFT JOIN {q} q ON q.name = $1",
                prefixed("q", QUEUE_COLUMNS)
            ),
            expiring_locked: select(
                "WHERE id = ANY($1) AND status = 'pending' AND expires_at <= $2 \
                 ORDER BY expires_at, id FOR UPDATE SKIP LOCKED",
            ),
            get: select("WHERE id = $1 AND queue = $2"),
            get_for_update: select("WHERE id = $1 AND queue = $2 FOR UPDATE"),
            find_key: select("WHERE queue = $1 AND idempotency_key = $2"),
            insert: format!(
                "INSERT INTO {m} ({INSERTED}) VALUES ({inserted_values}) \
                 ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL \
                 DO NOTHING RETURNING id"
            ),
            insert_one: format!(
                "INSERT INTO {m} ({INSERTED}) VALUES ({inserted_values}) RETURNING id"
            ),
            insert_many: insert_many(""),
            insert_one_if_settings: format!(
                "INSERT INTO {m} ({INSERTED}) SELECT {} WHERE {} RETURNING id",
                typed(""),
                settings_are(&q, 24)
            ),
            insert_many_if_settings: insert_many(&format!("WHERE {} ", settings_are(&q, 24))),
            unchanged: format!("id = $1 AND {VERSION} = $2 AND {}", settings_are(&q, 3)),
            messages: m.clone(),
            expired: format!(
                "WITH {due_ids}, moved AS ({mark_ready}) {}",
                select(
                    "WHERE queue = $1 AND status = 'processing' AND lease_expires_at <= $2 \
                     ORDER BY lease_expires_at, id FOR UPDATE SKIP LOCKED"
                )
            ),
            move_due,
            due: select(&format!(
                "WHERE queue = $1 AND status = 'pending' AND ready AND {DUE_SINCE} <= $2 \
                 AND (expires_at IS NULL OR expires_at > $2) \
                 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED"
            )),
            list: list(&m, "$2", "$3", None),
            list_status: list(&m, "$3", "$4", Some("$2")),
            many_for_update: select("WHERE queue = $1 AND id = ANY($2) ORDER BY id FOR UPDATE"),
            many: select("WHERE queue = $1 AND id = ANY($2) ORDER BY id"),
            many_for_update_skip: select(
                "WHERE queue = $1 AND id = ANY($2) ORDER BY id FOR UPDATE SKIP LOCKED",
            ),
            keys_taken: format!(
                "SELECT idempotency_key FROM {m} WHERE queue = $1 AND idempotency_key = ANY($2)"
            ),
            delete: format!("DELETE FROM {m} WHERE id = ANY($1)"),
            counts: format!(
                "SELECT {}, {}, {}, {}, {}, {}, {next_due_at}, \
                 (SELECT created_at FROM ( \
                   (SELECT id, created_at FROM {m} \
                    WHERE queue = $1 AND status = 'pending' AND ready AND {DUE_SINCE} <= $2 \
                    ORDER BY id LIMIT 1) \
                   UNION ALL \
                   (SELECT id, created_at FROM {m} \
                    WHERE queue = $1 AND {WAITING} AND retry_after <= $2 \
                    ORDER BY id LIMIT 1)) AS first_due ORDER BY id LIMIT 1), \
                 (SELECT min(dead_at) FROM {m} WHERE queue = $1 AND status = 'dead'), \
                 {}, {}, {}",
                pending,
                count("status = 'processing'"),
                count("status = 'succeeded'"),
                count("status = 'dead'"),
                count("status = 'processing' AND lease_expires_at <= $2"),
                count("status = 'pending' AND retry_after > $2 AND NOT blocked"),
                row("paused", "false"),
                row("expired_dead", "0"),
                row("expired_discarded", "0"),
            ),
            queues: queues(&m),
            next_due_at: format!("SELECT {next_due_at}"),
        }
    }
}

/// The lanes of each status, each the predicate of one index (`messages_ready`,
/// `messages_waiting`, `messages_leases`, `messages_succeeded`, `messages_dead`), as conditions:
/// every message is in exactly one.
const BY_STATUS: [(&str, &str); 5] = [
    ("pending", "status = 'pending' AND ready"),
    ("pending", "status = 'pending' AND NOT ready"),
    ("processing", "status = 'processing'"),
    ("succeeded", "status = 'succeeded'"),
    ("dead", "status = 'dead'"),
];

/// A page of the messages of queue `$1` (of table `m`) with ids above `after`, at most `limit`,
/// by id; of status `status` (a parameter) when given. Every status has an index of its own (no
/// index holds every message: a transition would write it), so the page is the first `limit` of
/// each index's range by id, merged, then read by their ids; a branch of another status than
/// `status` is skipped before it reads anything (a one-time filter on the parameter). The ids
/// of the processing messages (in lease order in their index) are sorted: there are as many as
/// messages in flight, read from the index alone (not their rows). Each branch
/// says `(queue, id) > ($1, after) AND queue <= $1` and orders by `(queue, id)` rather than
/// `queue = $1 ... ORDER BY id`: with the equality, the primary key is in id order too, and the
/// planner walked it (filtering every message of every queue and status after `after`) rather
/// than the status's index, which the row comparison alone keeps in order.
fn list(m: &str, after: &str, limit: &str, status: Option<&str>) -> String {
    let branches: Vec<String> = BY_STATUS
        .iter()
        .map(|(name, lane)| {
            let only = status.map_or(String::new(), |p| format!(" AND {p} = '{name}'"));
            format!(
                "(SELECT id FROM {m} \
                 WHERE (queue, id) > ($1, {after}) AND queue <= $1 AND {lane}{only} \
                 ORDER BY queue, id LIMIT {limit})"
            )
        })
        .collect();
    format!(
        "SELECT {COLUMNS} FROM {m} WHERE id = ANY(ARRAY( \
           SELECT id FROM ({}) AS page ORDER BY id LIMIT {limit})) \
         ORDER BY id",
        branches.join(" UNION ALL ")
    )
}

/// The distinct queue names holding messages in table `m`, in byte order: a loose index scan of
/// each status's index (one probe per queue), merged.
fn queues(m: &str) -> String {
    let scans: Vec<String> = BY_STATUS
        .iter()
        .enumerate()
        .map(|(index, (_, lane))| {
            format!(
                "SELECT queue FROM (WITH RECURSIVE q(queue) AS ( \
                   (SELECT queue FROM {m} WHERE {lane} ORDER BY queue LIMIT 1) \
                   UNION ALL \
                   SELECT (SELECT queue FROM {m} WHERE {lane} AND queue > q.queue \
                           ORDER BY queue LIMIT 1) \
                   FROM q WHERE q.queue IS NOT NULL \
                 ) SELECT queue FROM q WHERE queue IS NOT NULL) AS lane_{index}"
            )
        })
        .collect();
    format!("{} ORDER BY 1", scans.join(" UNION "))
}

/// `columns` (a comma-separated list) each prefixed with the table alias `alias`.
fn prefixed(alias: &str, columns: &str) -> String {
    columns
        .split(',')
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}
