//! [`SqliteStore`]: the [`Store`] on one SQLite connection (a file, or `:memory:`).
//!
//! It selects and persists; it never decides a next state. Every write is the result of a step
//! function the engine hands in, run inside one `BEGIN IMMEDIATE` transaction, so a step that
//! fails (or a driver error) leaves nothing written. Reads that only select (`get`, `list`,
//! `select`, `counts`, `queues`) take no write lock. Its futures are ready at once.
//!
//! Concurrency: the connection sits behind a mutex (one store may be shared by threads, with
//! group commit: see `group_commit.rs`); other processes on the same file are serialized by
//! SQLite's write lock, waited for up to [`BUSY_TIMEOUT`] so that no "database is locked" reaches
//! a caller under normal contention. A file store reads through a second connection: a write
//! that waits for another process's lock holds the first one, and reads (a health check, the
//! statistics) go on meanwhile, as WAL allows.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deadletter::{
    Claimed, Counts, Error, Filter, Id, ListQuery, Message, Millis, NewMessage, Result, Store,
    apply_step,
};
use rusqlite::{Connection, OpenFlags, Params, Row, params};

use crate::fork;
use crate::group_commit::Group;
use crate::row;
use crate::schema::migrate;
use crate::sql::{
    CLAIM_SQL, COUNT_BY_STATUS_SQL, COUNT_DELAYED_SQL, COUNT_EXPIRED_SQL, DELETE_SQL, EXPIRED_SQL,
    LIST_SQL, NEXT_DUE_SQL, OLDEST_DEAD_SQL, OLDEST_DUE_SQL, PROMOTE_SQL, QUEUES_SQL, RETIRE_SQL,
    list_status_sql, select_sql,
};

/// How long a call waits for another connection's write lock before failing with a store error.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

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
/// (see `group_commit.rs`).
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
    /// database. File databases use WAL journaling, with `durability`. A file of an older schema
    /// version (1: deadletter 0.1.0; 2 and 3) is upgraded in place, in one transaction; a file
    /// whose schema version is newer than [`crate::SCHEMA_VERSION`], or another application's,
    /// is refused with a store error and left as it was.
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
                .map(|message| row::insert(tx, message))
                .collect()
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.read(|conn| row::get(conn, queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        self.write(|tx| {
            let next = apply_step(row::get(tx, queue, id)?, queue, id, step)?;
            row::write(tx, &next)?;
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
            let expired = row::read_all(tx, EXPIRED_SQL, params![queue, now])?;
            let due = if limit == 0 {
                Vec::new()
            } else {
                tx.prepare_cached(PROMOTE_SQL)
                    .and_then(|mut promote| promote.execute(params![queue, now]))
                    .map_err(Error::store)?;
                row::read_all(tx, CLAIM_SQL, params![queue, now, sql_int(limit)?])?
            };
            let claimed = Claimed {
                expired: expired.into_iter().map(expire).collect::<Result<_>>()?,
                taken: due.into_iter().map(take).collect::<Result<_>>()?,
            };
            for message in claimed.expired.iter().chain(&claimed.taken) {
                row::write(tx, message)?;
            }
            Ok(claimed)
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let after = query.after_id.unwrap_or(0);
        let limit = sql_int(query.limit)?;
        self.read(|conn| match query.status {
            None => row::read_all(conn, LIST_SQL, params![query.queue, after, limit]),
            Some(status) => row::read_all(
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
                if let Some(current) = row::get(tx, queue, *id)?
                    && let Some(next) = step(current)?
                {
                    row::write(tx, &next)?;
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
                if let Some(current) = row::get(tx, queue, *id)?
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
