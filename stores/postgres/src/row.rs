//! A [`Message`] to and from a row of `messages` (columns in [`crate::sql::COLUMNS`] order).

use deadletter::storage::{self, StoredMessage, StoredQueue, corrupt};
use deadletter::{Error, FailedAttempt, Message, Millis, QueueRow, Result};
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Json, ToSql};

use crate::pool::{Conn, db_error};

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
    let s = StoredQueue::new(name, row);
    let max_retries = s
        .max_retries
        .map(i32::try_from)
        .transpose()
        .map_err(Error::store)?;
    conn.execute(
        sql,
        &[
            &s.name,
            &s.backoff_initial_ms,
            &s.backoff_multiplier,
            &s.backoff_cap_ms,
            &s.backoff_jitter,
            &max_retries,
            &s.lease_ms,
            &s.expires_in_ms,
            &s.on_expiry,
            &s.paused,
            &s.expired_dead,
            &s.expired_discarded,
        ],
    )?;
    Ok(())
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
    let row = conn.query_opt(sql, &params)?;
    row.map(|row| col(&row, 0)).transpose()
}

/// Inserts `messages` (none with an idempotency key; their ids are ignored), each at its place,
/// in one statement; their new ids, in order.
pub fn insert_many(
    conn: &mut Conn,
    sql: &str,
    messages: &[Message],
    places: &[Place],
) -> Result<Vec<i64>> {
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
    let rows = conn.query(sql, &params)?;
    let mut ids = rows
        .iter()
        .map(|row| col(row, 0))
        .collect::<Result<Vec<i64>>>()?;
    if ids.len() != messages.len() {
        return Err(Error::Store(format!(
            "inserted {} of {} messages",
            ids.len(),
            messages.len()
        )));
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Persists `after` (a step's result) over the row of `before` (what was read), in the lane the
/// core gives it ([`storage::ready`], [`storage::blocked`]) at `place` (`group_at` only when it
/// entered its group again), sending the payload and the failure history only when the step
/// changed them.
pub fn write(
    conn: &mut Conn,
    sql: &str,
    before: &Message,
    after: &Message,
    place: Place,
) -> Result<()> {
    storable(after)?;
    let payload = (after.payload != before.payload).then_some(after.payload.as_bytes());
    let errors = (after.errors != before.errors).then_some(Json(&after.errors));
    let params: [&(dyn ToSql + Sync); 24] = [
        &before.id,
        &after.queue,
        &payload,
        &after.status.as_str(),
        &int(after.retry_count, "retry_count")?,
        &int(after.max_retries, "max_retries")?,
        &after.retry_after,
        &after.last_error,
        &after.created_at,
        &after.updated_at,
        &after.lease_token,
        &after.lease_expires_at,
        &after.idempotency_key,
        &after.first_failed_at,
        &after.dead_at,
        &errors,
        &i64::from(after.errors_dropped),
        &i64::from(after.replay_count),
        &after.replayed_at,
        &storage::ready(after, place.head),
        &after.expires_at,
        &storage::blocked(after, place.head),
        &place.group_at,
        &after.moved_from,
    ];
    // `query`, not `execute`: it may be the transaction's last statement, sent with `COMMIT`.
    conn.query(sql, &params)?;
    Ok(())
}
