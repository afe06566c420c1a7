//! A [`Message`] to and from a row of `messages` (columns in the order of the `select!` of
//! `sql.rs`).

use std::fmt::Display;

use deadletter::storage::{self, StoredMessage, StoredQueue, corrupt};
use deadletter::{Error, Id, Message, Millis, NewMessage, QueueRow, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Params, Row, params};

use crate::sql::{
    BY_KEY_SQL, DELETE_QUEUE_SQL, GET_SQL, INSERT_SQL, PUT_QUEUE_SQL, QUEUE_SQL, WRITE_SQL,
};

/// The cells of one row, read with SQLite's own checks: SQLite keeps any value in any column (of
/// a table that is not `STRICT`, or one changed behind deadletter's back), so a value of the
/// wrong type, NULL where a value is required or text that is not UTF-8 is a store error naming
/// the message and the column ([`corrupt`]).
struct Cells<'r, 's> {
    row: &'r Row<'s>,
    id: Id,
}

impl<'r> Cells<'r, '_> {
    fn fault(&self, index: usize, why: impl Display) -> Error {
        let column = self.row.as_ref().column_name(index).unwrap_or("?");
        corrupt(self.id, column, why)
    }

    fn value(&self, index: usize) -> Result<ValueRef<'r>> {
        self.row
            .get_ref(index)
            .map_err(|err| self.fault(index, err))
    }

    fn text(&self, index: usize) -> Result<Option<&'r str>> {
        match self.value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|_| self.fault(index, "holds text that is not UTF-8")),
            other => Err(self.fault(index, format_args!("holds {}, not text", kind(other)))),
        }
    }

    fn int(&self, index: usize) -> Result<Option<i64>> {
        match self.value(index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(n) => Ok(Some(n)),
            other => Err(self.fault(index, format_args!("holds {}, not an integer", kind(other)))),
        }
    }

    fn required<T>(&self, index: usize, found: Option<T>) -> Result<T> {
        found.ok_or_else(|| self.fault(index, "is NULL"))
    }

    fn owned(&self, index: usize) -> Result<Option<String>> {
        Ok(self.text(index)?.map(str::to_owned))
    }
}

/// Reads one row selected with the columns of `select!`: SQLite's checks ([`Cells`]), then the
/// core's ([`StoredMessage::check`]: a timestamp outside the range deadletter writes, a count
/// that is not a `u32`, an unknown status). A value deadletter never writes means the row was
/// changed by something else: a store error naming the message and the column, rather than a
/// wrong message or an untyped error later when a binding converts it.
pub fn read(row: &Row<'_>) -> Result<Message> {
    let id: Id = row.get(0).map_err(Error::store)?;
    let cells = Cells { row, id };
    let text = |index| cells.required(index, cells.text(index)?);
    let int = |index| cells.required(index, cells.int(index)?);
    let errors = serde_json::from_str(text(15)?)
        .map_err(|err| cells.fault(15, format_args!("holds no failure history: {err}")))?;
    StoredMessage {
        id,
        queue: text(1)?.to_owned(),
        payload: text(2)?.to_owned(),
        status: text(3)?,
        retry_count: int(4)?,
        max_retries: int(5)?,
        retry_after: cells.int(6)?,
        last_error: cells.owned(7)?,
        created_at: int(8)?,
        updated_at: int(9)?,
        lease_token: cells.owned(10)?,
        lease_expires_at: cells.int(11)?,
        idempotency_key: cells.owned(12)?,
        first_failed_at: cells.int(13)?,
        dead_at: cells.int(14)?,
        errors,
        errors_dropped: int(16)?,
        replay_count: int(17)?,
        replayed_at: cells.int(18)?,
        group: cells.owned(19)?,
        expires_at: cells.int(20)?,
        moved_from: cells.owned(21)?,
    }
    .check()
}

/// A message and whether it is blocked behind its group's head (the storage-only column after
/// the message's).
pub fn read_stored(row: &Row<'_>) -> Result<(Message, bool)> {
    let message = read(row)?;
    let cells = Cells {
        row,
        id: message.id,
    };
    let blocked = cells.required(22, cells.int(22)?)?;
    Ok((message, blocked != 0))
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
pub fn read_all(conn: &Connection, sql: &str, params: impl Params) -> Result<Vec<Message>> {
    let mut statement = conn.prepare_cached(sql).map_err(Error::store)?;
    let rows = statement
        .query_map(params, |row| Ok(read(row)))
        .map_err(Error::store)?;
    rows.map(|row| row.map_err(Error::store)?).collect()
}

/// The message of the one row `sql` returns with `params`, if any, with its `blocked` flag.
pub fn read_one(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> Result<Option<(Message, bool)>> {
    let mut statement = conn.prepare_cached(sql).map_err(Error::store)?;
    statement
        .query_row(params, |row| Ok(read_stored(row)))
        .optional()
        .map_err(Error::store)?
        .transpose()
}

/// Message `id` of `queue`, if there is one, with its `blocked` flag.
pub fn get(conn: &Connection, queue: &str, id: Id) -> Result<Option<(Message, bool)>> {
    read_one(conn, GET_SQL, params![id, queue])
}

/// Persists `message` (the result of a step) over the row with its id, in the lane the core
/// gives it ([`storage::ready`], [`storage::blocked`]: `head` says whether it is its group's
/// head); `group_at`, when given, is its new place in its group (it entered it again).
pub fn write(
    tx: &Connection,
    message: &Message,
    head: bool,
    group_at: Option<Millis>,
) -> Result<()> {
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
            storage::ready(message, head),
            message.expires_at,
            storage::blocked(message, head),
            group_at,
        ])
        .map_err(Error::store)?;
    Ok(())
}

/// The row of `queue`, the default when it has none, checked by the core.
pub fn queue(conn: &Connection, queue: &str) -> Result<QueueRow> {
    let mut statement = conn.prepare_cached(QUEUE_SQL).map_err(Error::store)?;
    let found = statement
        .query_row(params![queue], |row| {
            let stored = StoredQueue {
                name: queue,
                backoff_initial_ms: row.get(0)?,
                backoff_multiplier: row.get(1)?,
                backoff_cap_ms: row.get(2)?,
                backoff_jitter: row.get_ref(3)?.as_str_or_null()?,
                max_retries: row.get(4)?,
                lease_ms: row.get(5)?,
                expires_in_ms: row.get(6)?,
                on_expiry: row.get_ref(7)?.as_str()?,
                paused: row.get(8)?,
                expired_dead: row.get(9)?,
                expired_discarded: row.get(10)?,
            };
            Ok(stored.check())
        })
        .optional()
        .map_err(|err| Error::Store(format!("queue {queue:?} is corrupt: {err}")))?;
    found.unwrap_or(Ok(QueueRow::default()))
}

/// Writes `row` as the row of `queue`; deletes the row when `row` is not worth storing (the
/// defaults: [`QueueRow::worth_storing`]).
pub fn put_queue(tx: &Connection, queue: &str, row: &QueueRow) -> Result<()> {
    if !row.worth_storing() {
        let mut statement = tx.prepare_cached(DELETE_QUEUE_SQL).map_err(Error::store)?;
        statement.execute(params![queue]).map_err(Error::store)?;
        return Ok(());
    }
    let s = StoredQueue::new(queue, row);
    let mut statement = tx.prepare_cached(PUT_QUEUE_SQL).map_err(Error::store)?;
    statement
        .execute(params![
            s.name,
            s.backoff_initial_ms,
            s.backoff_multiplier,
            s.backoff_cap_ms,
            s.backoff_jitter,
            s.max_retries,
            s.lease_ms,
            s.expires_in_ms,
            s.on_expiry,
            s.paused,
            s.expired_dead,
            s.expired_discarded,
        ])
        .map_err(Error::store)?;
    Ok(())
}

/// Inserts one message, or returns the stored one that carries its idempotency key
/// (`deduplicated`). A grouped message goes to `group_at` in its group, blocked unless `head`.
pub fn insert(
    tx: &Connection,
    message: NewMessage,
    head: bool,
    group_at: Option<Millis>,
) -> Result<Message> {
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
                storage::ready(&template, head),
                template.group,
                template.expires_at,
                storage::blocked(&template, head),
                group_at,
            ])
            .map_err(Error::store)?
    };
    if inserted == 1 {
        return Ok(Message {
            id: tx.last_insert_rowid(),
            ..template
        });
    }
    let key = params![template.queue, template.idempotency_key];
    let (existing, _) = read_one(tx, BY_KEY_SQL, key)?.ok_or_else(|| {
        Error::Store("a message was neither inserted nor found by its idempotency key".into())
    })?;
    Ok(Message {
        deduplicated: true,
        ..existing
    })
}
