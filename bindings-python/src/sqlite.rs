//! [`SqliteStore`]: the [`deadletter::Store`] of the Python binding, on one SQLite connection.
//!
//! It selects and persists; it never decides a next state. Every write is the result of a step
//! function the engine hands in, run inside one `BEGIN IMMEDIATE` transaction, so a step that
//! fails (or a driver error) leaves nothing written. Its futures are ready at once: the binding
//! drives them with `pollster::block_on`.
//!
//! Concurrency: the connection sits behind a mutex (one `Database` may be shared by threads); other
//! processes on the same file are serialized by SQLite's write lock, waited for up to
//! [`BUSY_TIMEOUT`] so that no "database is locked" reaches a caller under normal contention.

use std::ops::RangeInclusive;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use deadletter::{
    Error, Id, ListQuery, Message, Millis, NewMessage, Result, Status, Store, apply_step,
};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use crate::fork::{self, Gate, Slot};

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// How long a call waits for another connection's write lock before failing with a store error.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema of version 1. Timestamps are UTC milliseconds since the Unix epoch.
const SCHEMA: &str = "
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
-- claim, step 2: the first due pending message, in FIFO order; retry_after is carried in the
-- index so that pending messages still in backoff are skipped without reading their rows
CREATE INDEX messages_by_queue_status_created ON messages (queue, status, created_at, id, retry_after);
-- claim, step 1: processing messages whose lease ran out
CREATE INDEX messages_by_queue_status_lease ON messages (queue, status, lease_expires_at);
-- list with a status filter, by id
CREATE INDEX messages_by_queue_status_id ON messages (queue, status, id);
-- list without a status filter, by id
CREATE INDEX messages_by_queue_id ON messages (queue, id);
";

/// `SELECT` every column of [`Message`] (in the order [`read_message`] reads them)
/// `FROM messages`, followed by `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, queue, payload, status, retry_count, max_retries, retry_after, ",
            "last_error, created_at, updated_at, lease_token, lease_expires_at FROM messages ",
            $rest
        )
    };
}

/// Claim, step 1: the `processing` messages of queue `?1` whose lease ran out at `?2`, through the
/// index `(queue, status, lease_expires_at)`.
pub const EXPIRED_SQL: &str =
    select!("WHERE queue = ?1 AND status = 'processing' AND lease_expires_at <= ?2");

/// Claim, step 2: the first `pending` message of queue `?1` due at `?2`, FIFO by `created_at`
/// then id, through the index `(queue, status, created_at, id)`: no sort, no table scan.
pub const CLAIM_SQL: &str = select!(
    "WHERE queue = ?1 AND status = 'pending' AND (retry_after IS NULL OR retry_after <= ?2) \
     ORDER BY created_at, id LIMIT 1"
);

const GET_SQL: &str = select!("WHERE id = ?1 AND queue = ?2");

const LIST_SQL: &str = select!("WHERE queue = ?1 AND id > ?2 ORDER BY id LIMIT ?3");

const LIST_STATUS_SQL: &str =
    select!("WHERE queue = ?1 AND status = ?2 AND id > ?3 ORDER BY id LIMIT ?4");

const INSERT_SQL: &str = "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
    retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

const WRITE_SQL: &str = "UPDATE messages SET queue = ?2, payload = ?3, status = ?4, \
    retry_count = ?5, max_retries = ?6, retry_after = ?7, last_error = ?8, created_at = ?9, \
    updated_at = ?10, lease_token = ?11, lease_expires_at = ?12 WHERE id = ?1";

/// How long [`wait_for_lock`] sleeps between two tries.
const BUSY_SLEEP: Duration = Duration::from_millis(1);

/// The busy handler: tries again every [`BUSY_SLEEP`] for [`BUSY_TIMEOUT`] (`tries` counts the
/// calls so far). SQLite's own handler sleeps up to 100 ms between tries, so under contention a
/// writer kept losing to processes that write back to back, for seconds: longer than a lease, so
/// a worker's ack came after its lease had run out.
fn wait_for_lock(tries: i32) -> bool {
    let waited = BUSY_SLEEP * u32::try_from(tries).unwrap_or(u32::MAX);
    std::thread::sleep(BUSY_SLEEP);
    waited < BUSY_TIMEOUT
}

/// A [`Store`] on one SQLite connection (a file, or `:memory:`).
///
/// The connection belongs to the process that opened it: in a child made by `fork()` every call
/// fails at once with a store error (see [`crate::fork`]).
#[derive(Debug)]
pub struct SqliteStore {
    /// `None` once closed.
    conn: Arc<Slot>,
    /// The process that opened the connection.
    pid: u32,
}

/// The open connection, with the fork gate held: fields drop in order, the mutex before the gate,
/// so that a fork never finds the mutex locked.
struct Held<'a> {
    conn: MutexGuard<'a, Option<Connection>>,
    _gate: Gate,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`; `":memory:"` is a private in-memory
    /// database. File databases use WAL journaling. A file whose schema version is newer than
    /// [`SCHEMA_VERSION`] is refused with a store error.
    pub fn open(path: &Path) -> Result<Self> {
        let _gate = fork::enter();
        let conn = if path == Path::new(":memory:") {
            Connection::open_in_memory()
        } else {
            Connection::open(path)
        }
        .map_err(Error::store)?;
        Self::from_connection(conn)
    }

    /// Sets the connection up (busy handler, schema, WAL) and wraps it. The schema is checked
    /// first, so that another application's file is refused before anything is written to it.
    pub fn from_connection(mut conn: Connection) -> Result<Self> {
        conn.busy_handler(Some(wait_for_lock))
            .map_err(Error::store)?;
        migrate(&mut conn)?;
        // Returns the mode in force: `wal` for files, `memory` for in-memory databases.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(Error::store)?;
        let conn = Arc::new(Mutex::new(Some(conn)));
        fork::track(&conn);
        Ok(Self {
            conn,
            pid: std::process::id(),
        })
    }

    /// Closes the connection; every later call fails with a store error. Closing twice is fine.
    pub fn close(&self) -> Result<()> {
        let mut held = self.lock()?;
        match held.conn.take() {
            Some(conn) => conn.close().map_err(|(_, err)| Error::store(err)),
            None => Ok(()),
        }
    }

    /// Whether [`SqliteStore::close`] was called; always true in a forked child.
    pub fn is_closed(&self) -> bool {
        self.forked() || self.conn.lock().map_or(true, |conn| conn.is_none())
    }

    /// Whether this process is not the one that opened the connection (a child made by `fork()`).
    fn forked(&self) -> bool {
        std::process::id() != self.pid
    }

    /// Runs `f` on the open connection.
    pub fn with_connection<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut held = self.lock()?;
        let conn = held
            .conn
            .as_mut()
            .ok_or_else(|| Error::Store("the database is closed".into()))?;
        f(conn)
    }

    /// The connection, in the process that opened it only (see [`crate::fork`]).
    fn lock(&self) -> Result<Held<'_>> {
        if self.forked() {
            return Err(Error::Store(
                "this database was opened before a fork, in the parent process, and a SQLite \
                 connection must not cross a fork: open the database again in this process"
                    .into(),
            ));
        }
        let gate = fork::enter();
        let conn = self
            .conn
            .lock()
            .map_err(|_| Error::Store("the connection was poisoned by a panic".into()))?;
        Ok(Held { conn, _gate: gate })
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, committed only when `f` succeeds.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.with_connection(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Error::store)?;
            let value = f(&tx)?;
            tx.commit().map_err(Error::store)?;
            Ok(value)
        })
    }
}

impl Drop for SqliteStore {
    /// In a forked child that did not run the fork hooks (a fork from C), leaks the parent's
    /// connection: closing it could wait forever for a mutex held at the moment of the fork.
    fn drop(&mut self) {
        if self.forked() {
            std::mem::forget(Arc::clone(&self.conn));
        }
    }
}

/// Creates the schema in a new, empty database (version 0 -> 1); refuses another application's
/// database (other tables at version 0, or no `messages` table with our columns at our version)
/// and unknown newer versions. A refused database is only read: the transaction is rolled back
/// before any write.
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
            tx.execute_batch(SCHEMA).map_err(Error::store)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(Error::store)?;
        }
        SCHEMA_VERSION => {
            // Preparing reads the schema only: it fails when a column we read is missing.
            tx.prepare(select!("LIMIT 0")).map_err(|err| {
                Error::Store(format!(
                    "not a deadletter database: it has schema version {SCHEMA_VERSION} but not \
                     deadletter's messages table ({err})"
                ))
            })?;
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

/// The instants a stored timestamp may hold, in UTC milliseconds: 0001-01-01T00:00:00Z to
/// 9999-12-31T23:59:59.999Z, the range every binding can represent (Python's `datetime`).
// TODO: use `deadletter::validate::MIN_TIME..=MAX_TIME` once the core defines them.
const TIME_RANGE: RangeInclusive<Millis> = -62_135_596_800_000..=253_402_300_799_999;

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

/// Persists `message` (the result of a step) over the row with its id.
fn write_message(tx: &Transaction<'_>, message: &Message) -> Result<()> {
    let mut statement = tx.prepare_cached(WRITE_SQL).map_err(Error::store)?;
    statement
        .execute(params![
            message.id,
            message.queue,
            message.payload,
            message.status.as_str(),
            message.retry_count,
            message.max_retries,
            message.retry_after,
            message.last_error,
            message.created_at,
            message.updated_at,
            message.lease_token,
            message.lease_expires_at,
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

impl Store for SqliteStore {
    async fn insert(&self, message: NewMessage) -> Result<Message> {
        self.write(|tx| {
            let mut statement = tx.prepare_cached(INSERT_SQL).map_err(Error::store)?;
            // The store only assigns the id; every other field is the core's `with_id`.
            let template = message.with_id(0);
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
                ])
                .map_err(Error::store)?;
            Ok(Message {
                id: tx.last_insert_rowid(),
                ..template
            })
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.with_connection(|conn| get_in(conn, queue, id))
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
        expire: impl Fn(Message) -> Result<Message>,
        take: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Option<Message>> {
        self.write(|tx| {
            let expired: Vec<Message> = {
                let mut statement = tx.prepare_cached(EXPIRED_SQL).map_err(Error::store)?;
                let rows = statement
                    .query_map(params![queue, now], |row| Ok(read_message(row)))
                    .map_err(Error::store)?;
                rows.map(|row| row.map_err(Error::store)?.and_then(&expire))
                    .collect::<Result<_>>()?
            };
            // The candidate is chosen among the messages as they were before step 1, like the
            // reference store: a message whose lease just expired is not taken in the same call.
            let next = {
                let mut statement = tx.prepare_cached(CLAIM_SQL).map_err(Error::store)?;
                statement
                    .query_row(params![queue, now], |row| Ok(read_message(row)))
                    .optional()
                    .map_err(Error::store)?
                    .transpose()?
            };
            let taken = next.map(take).transpose()?;
            for message in expired.iter().chain(&taken) {
                write_message(tx, message)?;
            }
            Ok(taken)
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let after = query.after_id.unwrap_or(0);
        let limit = i64::try_from(query.limit).map_err(Error::store)?;
        self.with_connection(|conn| {
            let rows = match query.status {
                None => {
                    let mut statement = conn.prepare_cached(LIST_SQL).map_err(Error::store)?;
                    statement
                        .query_map(params![query.queue, after, limit], |row| {
                            Ok(read_message(row))
                        })
                        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                }
                Some(status) => {
                    let mut statement =
                        conn.prepare_cached(LIST_STATUS_SQL).map_err(Error::store)?;
                    statement
                        .query_map(params![query.queue, status.as_str(), after, limit], |row| {
                            Ok(read_message(row))
                        })
                        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                }
            };
            rows.map_err(Error::store)?.into_iter().collect()
        })
    }
}
