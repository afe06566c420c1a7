//! A [`Message`] to and from a row of `messages` (columns in [`crate::sql::COLUMNS`] order).

use deadletter::storage::{self, StoredMessage, StoredQueue, corrupt};
use deadletter::{Error, FailedAttempt, Message, Millis, QueueRow, Result};
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Json, ToSql};

use crate::cache::Cached;
use crate::pool::{Conn, db_error};
use crate::sql::{Sql, VERSION};

fn col<'a, T: FromSql<'a>>(row: &'a Row, index: usize) -> Result<T> {
    row.try_get(index).map_err(db_error)
}

/// Reads one row selected with [`crate::sql::COLUMNS`]. The columns' types are the database's
/// to enforce; the values are the core's to check ([`StoredMessage::check`]: a known status,
/// counts within `u32`, instants within the range deadletter writes), with the same store error,
/// naming the message and the column, as every store.
pub fn read(row: &Row) -> Result<Message> {
    let id: i64 = col(row, 0)?;
    let payload: Vec<u8> = col(row, 2)?;
    let Json(errors): Json<Vec<FailedAttempt>> = col(row, 15)?;
    StoredMessage {
        id,
        queue: col(row, 1)?,
        payload: String::from_utf8(payload)
            .map_err(|_| corrupt(id, "payload", "holds bytes that are not UTF-8"))?,
        status: col(row, 3)?,
        retry_count: col::<i32>(row, 4)?.into(),
        max_retries: col::<i32>(row, 5)?.into(),
        retry_after: col(row, 6)?,
        last_error: col(row, 7)?,
        created_at: col(row, 8)?,
        updated_at: col(row, 9)?,
        lease_token: col(row, 10)?,
        lease_expires_at: col(row, 11)?,
        idempotency_key: col(row, 12)?,
        first_failed_at: col(row, 13)?,
        dead_at: col(row, 14)?,
        errors,
        errors_dropped: col(row, 16)?,
        replay_count: col(row, 17)?,
        replayed_at: col(row, 18)?,
        group: col(row, 19)?,
        expires_at: col(row, 20)?,
        moved_from: col(row, 21)?,
    }
    .check()
}

/// Reads one row selected with [`crate::sql::COLUMNS`], with its storage-only `blocked` flag.
pub fn read_stored(row: &Row) -> Result<(Message, bool)> {
    Ok((read(row)?, col(row, 22)?))
}

/// How many columns [`crate::sql::COLUMNS`] has: a queue's columns follow them in
/// `get_for_update_with_queue`.
pub const MESSAGE_COLUMNS: usize = 23;

/// How many columns [`queue`] reads.
pub const QUEUE_COLUMNS: usize = 11;

/// The row of queue `name` from the columns of `row` that start at `from` (in
/// [`StoredQueue`]'s order, all null when the queue has none), checked by the core.
pub fn queue(row: &Row, from: usize, name: &str) -> Result<QueueRow> {
    let on_expiry: Option<&str> = col(row, from + 7)?;
    let Some(on_expiry) = on_expiry else {
        return Ok(QueueRow::default());
    };
    StoredQueue {
        name,
        backoff_initial_ms: col(row, from)?,
        backoff_multiplier: col(row, from + 1)?,
        backoff_cap_ms: col(row, from + 2)?,
        backoff_jitter: col(row, from + 3)?,
        max_retries: col::<Option<i32>>(row, from + 4)?.map(i64::from),
        lease_ms: col(row, from + 5)?,
        expires_in_ms: col(row, from + 6)?,
        on_expiry,
        paused: col(row, from + 8)?,
        expired_dead: col(row, from + 9)?,
        expired_discarded: col(row, from + 10)?,
    }
    .check()
}

/// Writes `row` as the settings and pause of queue `name` (its counters only when it is new:
/// claims of other sessions add to them).
pub fn put_queue(conn: &mut Conn, sql: &str, name: &str, row: &QueueRow) -> Result<()> {
    let settings = Settings::new(name, row)?;
    let s = &settings.stored;
    let mut params = settings.params().to_vec();
    params.extend([&s.expired_dead as &(dyn ToSql + Sync), &s.expired_discarded]);
    conn.execute(sql, &params)?;
    Ok(())
}

/// The settings of a queue's row as parameters of the condition that they are still stored
/// (`Sql::insert_one_if_settings`, `Sql::unchanged`): the queue's name, then its settings in
/// [`StoredQueue`]'s order from `backoff_initial_ms` to `paused`.
pub struct Settings<'a> {
    stored: StoredQueue<'a>,
    max_retries: Option<i32>,
}

impl<'a> Settings<'a> {
    /// The settings of `row`, the row of queue `name`.
    pub fn new(name: &'a str, row: &QueueRow) -> Result<Self> {
        let stored = StoredQueue::new(name, row);
        let max_retries = stored
            .max_retries
            .map(i32::try_from)
            .transpose()
            .map_err(Error::store)?;
        Ok(Self {
            stored,
            max_retries,
        })
    }

    /// The parameters, in order.
    pub fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        let s = &self.stored;
        [
            &s.name,
            &s.backoff_initial_ms,
            &s.backoff_multiplier,
            &s.backoff_cap_ms,
            &s.backoff_jitter,
            &self.max_retries,
            &s.lease_ms,
            &s.expires_in_ms,
            &s.on_expiry,
            &s.paused,
        ]
    }
}

/// Reads every row.
pub fn read_all(rows: &[Row]) -> Result<Vec<Message>> {
    rows.iter().map(read).collect()
}

fn int(value: u32, field: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::Store(format!("{field} {value} is too large to store")))
}

/// PostgreSQL `text` (and `jsonb`) cannot hold U+0000. The core refuses it in names, keys and
/// error texts; should one reach the store anyway, it is a clear store error before anything is
/// sent rather than the driver's. (The payload is `bytea` and takes anything.)
fn storable(message: &Message) -> Result<()> {
    let texts = [
        ("queue", Some(message.queue.as_str())),
        ("idempotency_key", message.idempotency_key.as_deref()),
        ("group", message.group.as_deref()),
        ("moved_from", message.moved_from.as_deref()),
        ("lease_token", message.lease_token.as_deref()),
        ("last_error", message.last_error.as_deref()),
    ];
    let errors = message
        .errors
        .iter()
        .map(|e| ("errors", Some(e.error.as_str())));
    for (field, text) in texts.into_iter().chain(errors) {
        if text.is_some_and(|t| t.contains('\0')) {
            return Err(Error::Store(format!(
                "PostgreSQL text cannot hold the character U+0000 ({field} of message {})",
                message.id
            )));
        }
    }
    Ok(())
}

/// Where a new message goes: whether it is its group's head, and its place in its group.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    /// Whether it is its group's head (true for a message without a group).
    pub head: bool,
    /// Its `group_at`, for a grouped message.
    pub group_at: Option<Millis>,
}

/// Inserts `message` (its id is ignored) at `place`; the new id, or `None` when a message of its
/// queue already carries its idempotency key.
pub fn insert(conn: &mut Conn, sql: &str, message: &Message, place: Place) -> Result<Option<i64>> {
    let row = inserted(message, place, |params| conn.query_opt(sql, params))?;
    row.map(|row| col(&row, 0)).transpose()
}

/// Calls `f` with the parameters of an insert of `message` (its id is ignored) at `place`, in
/// [`crate::sql::Sql::insert`]'s order.
pub fn inserted<T>(
    message: &Message,
    place: Place,
    f: impl FnOnce(&[&(dyn ToSql + Sync)]) -> Result<T>,
) -> Result<T> {
    storable(message)?;
    let errors = Json(&message.errors);
    let params: [&(dyn ToSql + Sync); 23] = [
        &message.queue,
        &message.payload.as_bytes(),
        &message.status.as_str(),
        &int(message.retry_count, "retry_count")?,
        &int(message.max_retries, "max_retries")?,
        &message.retry_after,
        &message.last_error,
        &message.created_at,
        &message.updated_at,
        &message.lease_token,
        &message.lease_expires_at,
        &message.idempotency_key,
        &message.first_failed_at,
        &message.dead_at,
        &errors,
        &i64::from(message.errors_dropped),
        &i64::from(message.replay_count),
        &message.replayed_at,
        &storage::ready(message, place.head),
        &message.group,
        &place.group_at,
        &message.expires_at,
        &storage::blocked(message, place.head),
    ];
    f(&params)
}

/// Inserts `messages` (none with an idempotency key; their ids are ignored), each at its place,
/// in one statement; their new ids, in order.
pub fn insert_many(
    conn: &mut Conn,
    sql: &str,
    messages: &[Message],
    places: &[Place],
) -> Result<Vec<i64>> {
    let rows = inserted_many(messages, places, |params| conn.query(sql, params))?;
    ids(&rows, messages.len())
}

/// The ids that an insert of `n` messages returned in `rows`, ascending (in insert order).
pub fn ids(rows: &[Row], n: usize) -> Result<Vec<i64>> {
    let mut ids = rows
        .iter()
        .map(|row| col(row, 0))
        .collect::<Result<Vec<i64>>>()?;
    if ids.len() != n {
        return Err(Error::Store(format!(
            "inserted {} of {n} messages",
            ids.len()
        )));
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Calls `f` with the parameters of an insert of `messages` (none with an idempotency key; their
/// ids are ignored), each at its place, column by column as arrays
/// ([`crate::sql::Sql::insert_many`]).
pub fn inserted_many<T>(
    messages: &[Message],
    places: &[Place],
    f: impl FnOnce(&[&(dyn ToSql + Sync)]) -> Result<T>,
) -> Result<T> {
    for message in messages {
        storable(message)?;
    }
    let queue: Vec<&str> = messages.iter().map(|m| m.queue.as_str()).collect();
    let payload: Vec<&[u8]> = messages.iter().map(|m| m.payload.as_bytes()).collect();
    let status: Vec<&str> = messages.iter().map(|m| m.status.as_str()).collect();
    let retry_count = messages
        .iter()
        .map(|m| int(m.retry_count, "retry_count"))
        .collect::<Result<Vec<i32>>>()?;
    let max_retries = messages
        .iter()
        .map(|m| int(m.max_retries, "max_retries"))
        .collect::<Result<Vec<i32>>>()?;
    let opt = |f: fn(&Message) -> Option<i64>| messages.iter().map(f).collect::<Vec<_>>();
    let text = |f: fn(&Message) -> Option<&str>| messages.iter().map(f).collect::<Vec<_>>();
    let errors: Vec<Json<&Vec<FailedAttempt>>> = messages.iter().map(|m| Json(&m.errors)).collect();
    let dropped: Vec<i64> = messages
        .iter()
        .map(|m| i64::from(m.errors_dropped))
        .collect();
    let replays: Vec<i64> = messages.iter().map(|m| i64::from(m.replay_count)).collect();
    let created: Vec<i64> = messages.iter().map(|m| m.created_at).collect();
    let updated: Vec<i64> = messages.iter().map(|m| m.updated_at).collect();
    let ready: Vec<bool> = messages
        .iter()
        .zip(places)
        .map(|(m, p)| storage::ready(m, p.head))
        .collect();
    let blocked: Vec<bool> = messages
        .iter()
        .zip(places)
        .map(|(m, p)| storage::blocked(m, p.head))
        .collect();
    let groups = text(|m| m.group.as_deref());
    let group_at: Vec<Option<i64>> = places.iter().map(|p| p.group_at).collect();
    let params: [&(dyn ToSql + Sync); 23] = [
        &queue,
        &payload,
        &status,
        &retry_count,
        &max_retries,
        &opt(|m| m.retry_after),
        &text(|m| m.last_error.as_deref()),
        &created,
        &updated,
        &text(|m| m.lease_token.as_deref()),
        &opt(|m| m.lease_expires_at),
        &text(|m| m.idempotency_key.as_deref()),
        &opt(|m| m.first_failed_at),
        &opt(|m| m.dead_at),
        &errors,
        &dropped,
        &replays,
        &opt(|m| m.replayed_at),
        &ready,
        &groups,
        &group_at,
        &opt(|m| m.expires_at),
        &blocked,
    ];
    f(&params)
}

/// Persists `after` (a step's result) over the row of `before` (what was read), in the lane the
/// core gives it ([`storage::ready`], [`storage::blocked`]) at `place` (`group_at` only when it
/// entered its group again), in table `table` (the quoted schema's `messages`): one `UPDATE`
/// setting only the columns the step changed, and the lane. A column set to its own value still
/// costs the server its parameter and its place in the statement's projection, built again at
/// each execution (issue 24: a claim or an ack set all 23 columns; it changes 4 and the lane).
/// Each set of columns is its own statement text, prepared once per session.
///
/// Returns what it left in the row ([`Written`]; `None` when the row is gone).
pub fn write(
    conn: &mut Conn,
    table: &str,
    before: &Message,
    after: &Message,
    place: Place,
) -> Result<Option<Written>> {
    storable(after)?;
    let values = Values::new(after, place)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&before.id];
    let set = values.assignments(before, &mut params);
    let sql = format!("UPDATE {table} SET {set} WHERE id = $1 RETURNING {VERSION}, blocked");
    // `query`, not `execute`: it may be the transaction's last statement, sent with `COMMIT`.
    let rows = conn.query(&sql, &params)?;
    rows.first().map(Written::read).transpose()
}

/// [`write`] of `after` over `cached` (a message as this store last wrote it) as a whole
/// transaction in one round trip ([`Conn::whole`], begun with `begin`), only while its row is
/// still that version and the settings of its queue are still `settings`
/// ([`Sql::unchanged`]), without waiting for its row's lock (`FOR UPDATE NOWAIT`: a call that
/// waited would decide with an instant read before it got it). `None`: nothing was written
/// (the row or the settings changed, a lock was held, the statement was prepared just now), and
/// the call takes its usual path.
pub fn write_if_unchanged(
    conn: &mut Conn,
    sql: &Sql,
    cached: &Cached,
    after: &Message,
    place: Place,
    settings: &Settings<'_>,
) -> Result<Option<Written>> {
    storable(after)?;
    let values = Values::new(after, place)?;
    let before = &cached.message;
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&before.id, &cached.version];
    params.extend(settings.params());
    let set = values.assignments(before, &mut params);
    let table = &sql.messages;
    let text = format!(
        "WITH m AS (SELECT id FROM {table} WHERE {} FOR UPDATE NOWAIT) \
         UPDATE {table} AS t SET {set} FROM m WHERE t.id = m.id \
         RETURNING t.xmin::text || t.ctid::text, t.blocked",
        sql.unchanged
    );
    let rows = conn.whole(&sql.claim_begin_nowait, &text, &params)?;
    rows.as_deref()
        .and_then(<[Row]>::first)
        .map(Written::read)
        .transpose()
}

/// What a write left in a message's row.
#[derive(Debug, Clone)]
pub struct Written {
    /// The row's version ([`VERSION`]).
    pub version: String,
    /// Its `blocked` flag.
    pub blocked: bool,
}

impl Written {
    fn read(row: &Row) -> Result<Self> {
        Ok(Self {
            version: col(row, 0)?,
            blocked: col(row, 1)?,
        })
    }

    /// `message` as written, to remember ([`crate::cache::Cache`]).
    pub fn cached(self, message: &Message) -> Cached {
        Cached {
            message: message.clone(),
            blocked: self.blocked,
            version: self.version,
        }
    }
}

/// The values a write of `after` at `place` stores, as the columns take them.
struct Values<'a> {
    after: &'a Message,
    payload: &'a [u8],
    status: &'a str,
    retry_count: i32,
    max_retries: i32,
    errors: Json<&'a Vec<FailedAttempt>>,
    errors_dropped: i64,
    replay_count: i64,
    ready: bool,
    blocked: bool,
    group_at: Option<Millis>,
}

impl<'a> Values<'a> {
    fn new(after: &'a Message, place: Place) -> Result<Self> {
        Ok(Self {
            after,
            payload: after.payload.as_bytes(),
            status: after.status.as_str(),
            retry_count: int(after.retry_count, "retry_count")?,
            max_retries: int(after.max_retries, "max_retries")?,
            errors: Json(&after.errors),
            errors_dropped: i64::from(after.errors_dropped),
            replay_count: i64::from(after.replay_count),
            ready: storage::ready(after, place.head),
            blocked: storage::blocked(after, place.head),
            group_at: place.group_at,
        })
    }

    /// The assignments of the columns to set over the row of `before` (see [`Values::set`]),
    /// their values pushed to `params` (numbered after those already there).
    fn assignments<'p>(
        &'p self,
        before: &Message,
        params: &mut Vec<&'p (dyn ToSql + Sync)>,
    ) -> String {
        let set = self.set(before);
        let mut assignments = Vec::with_capacity(set.len());
        for (column, value) in set {
            params.push(value);
            assignments.push(format!("{column} = ${}", params.len()));
        }
        assignments.join(", ")
    }

    /// The columns to set over the row of `before`, with their values: those whose value
    /// differs; `updated_at` always (every step sets it: equal only when the clock did not move,
    /// which would make one more statement text to prepare); `ready` and `blocked` always (the
    /// row's lane is not read back: a claim may have moved it); `group_at` when given.
    fn set(&self, before: &Message) -> Vec<(&'static str, &(dyn ToSql + Sync))> {
        let a = self.after;
        // A column and its value, set when the step changed it.
        macro_rules! changed {
            ($column:ident, $value:expr) => {
                (stringify!($column), a.$column != before.$column, $value)
            };
        }
        let columns: [(&'static str, bool, &(dyn ToSql + Sync)); 23] = [
            changed!(queue, &a.queue),
            changed!(payload, &self.payload),
            changed!(status, &self.status),
            changed!(retry_count, &self.retry_count),
            changed!(max_retries, &self.max_retries),
            changed!(retry_after, &a.retry_after),
            changed!(last_error, &a.last_error),
            changed!(created_at, &a.created_at),
            ("updated_at", true, &a.updated_at),
            changed!(lease_token, &a.lease_token),
            changed!(lease_expires_at, &a.lease_expires_at),
            changed!(idempotency_key, &a.idempotency_key),
            changed!(first_failed_at, &a.first_failed_at),
            changed!(dead_at, &a.dead_at),
            changed!(errors, &self.errors),
            changed!(errors_dropped, &self.errors_dropped),
            changed!(replay_count, &self.replay_count),
            changed!(replayed_at, &a.replayed_at),
            changed!(expires_at, &a.expires_at),
            changed!(moved_from, &a.moved_from),
            ("ready", true, &self.ready),
            ("blocked", true, &self.blocked),
            ("group_at", self.group_at.is_some(), &self.group_at),
        ];
        columns
            .into_iter()
            .filter(|(_, changed, _)| *changed)
            .map(|(column, _, value)| (column, value))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deadletter::Status;

    fn pending() -> Message {
        deadletter::NewMessage {
            queue: "q".into(),
            payload: "{\"big\": true}".into(),
            max_retries: 3,
            retry_after: None,
            idempotency_key: Some("k".into()),
            group: None,
            expires_at: None,
            now: 1_000,
        }
        .with_id(7)
    }

    fn set(before: &Message, after: &Message, group_at: Option<Millis>) -> Vec<&'static str> {
        let place = Place {
            head: true,
            group_at,
        };
        let values = Values::new(after, place).unwrap();
        values.set(before).into_iter().map(|(c, _)| c).collect()
    }

    #[test]
    fn a_write_sets_the_columns_its_step_changed_and_the_lane() {
        let before = pending();
        let claimed = Message {
            status: Status::Processing,
            updated_at: 2_000,
            lease_token: Some("t".into()),
            lease_expires_at: Some(32_000),
            ..before.clone()
        };
        let lease = ["status", "updated_at", "lease_token", "lease_expires_at"];
        let lane = ["ready", "blocked"];
        assert_eq!(set(&before, &claimed, None), [&lease[..], &lane].concat());
        let acked = Message {
            status: Status::Succeeded,
            updated_at: 3_000,
            lease_token: None,
            lease_expires_at: None,
            ..claimed.clone()
        };
        assert_eq!(set(&claimed, &acked, None), [&lease[..], &lane].concat());
        // Nothing changed: updated_at and the lane; a place in a group: group_at too.
        assert_eq!(
            set(&acked, &acked, None),
            ["updated_at", "ready", "blocked"]
        );
        assert_eq!(
            set(&acked, &acked, Some(5)),
            ["updated_at", "ready", "blocked", "group_at"]
        );
        // The clock did not move: the same columns as when it did.
        let same_instant = Message {
            updated_at: claimed.updated_at,
            ..acked.clone()
        };
        assert_eq!(
            set(&claimed, &same_instant, None),
            [&lease[..], &lane].concat()
        );
    }
}
