//! A [`Message`] to and from a row of `messages` (columns in the order of the `select!` of
//! `sql.rs`).

use std::fmt::Display;

use deadletter::storage::{self, StoredMessage, corrupt};
use deadletter::{Error, Id, Message, NewMessage, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Params, Row, params};

use crate::sql::{BY_KEY_SQL, GET_SQL, INSERT_SQL, WRITE_SQL};

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
    }
    .check()
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

/// The message of the one row `sql` returns with `params`, if any.
fn read_one(conn: &Connection, sql: &str, params: impl Params) -> Result<Option<Message>> {
    let mut statement = conn.prepare_cached(sql).map_err(Error::store)?;
    statement
        .query_row(params, |row| Ok(read(row)))
        .optional()
        .map_err(Error::store)?
        .transpose()
}

/// Message `id` of `queue`, if there is one.
pub fn get(conn: &Connection, queue: &str, id: Id) -> Result<Option<Message>> {
    read_one(conn, GET_SQL, params![id, queue])
}

/// Persists `message` (the result of a step) over the row with its id, in the lane the core
/// gives it ([`storage::ready`]).
pub fn write(tx: &Connection, message: &Message) -> Result<()> {
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
            storage::ready(message),
        ])
        .map_err(Error::store)?;
    Ok(())
}

/// Inserts one message, or returns the stored one that carries its idempotency key
/// (`deduplicated`).
pub fn insert(tx: &Connection, message: NewMessage) -> Result<Message> {
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
                storage::ready(&template),
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
    let existing = read_one(tx, BY_KEY_SQL, key)?.ok_or_else(|| {
        Error::Store("a message was neither inserted nor found by its idempotency key".into())
    })?;
    Ok(Message {
        deduplicated: true,
        ..existing
    })
}
