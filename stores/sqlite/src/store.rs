//! [`SqliteStore`]: the [`Store`] on one SQLite connection (a file, or `:memory:`).
//!
//! It is long (about 630 lines) because it is the `Store` trait's one impl with the connection's
//! opening and durability, kept together as PostgreSQL's `store.rs` is.
//!
//! It selects and persists; it never decides a next state. Every write is the result of a step
//! function the engine hands in, run inside one `BEGIN IMMEDIATE` transaction, so a step that
//! fails (or a driver error) leaves nothing written. Reads (`get`, `list`, `counts`, `queues`)
//! take no write lock. Its futures are ready at once.
//!
//! Concurrency: the connection sits behind a mutex (one store may be shared by threads, with
//! group commit: see `group_commit.rs`); other processes on the same file are serialized by
//! SQLite's write lock, waited for up to [`BUSY_TIMEOUT`] so that no "database is locked" reaches
//! a caller under normal contention. A file store reads through a second connection: a write
//! that waits for another process's lock holds the first one, and reads (a health check, the
//! statistics) go on meanwhile, as WAL allows.

use std::borrow::Cow;
use std::cell::Cell;
use std::path::{Path, PathBuf, is_separator};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deadletter::storage::{self, Position};
use deadletter::{
    Claimed, Claiming, Clock, Context, Counts, EnqueueArgs, Error, Id, ListQuery, Message, Millis,
    NewMessage, QueueRow, Result, Store, apply_step,
};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Params, Row, params};

use crate::checkpoint::{self, Checkpoints};
use crate::fork;
use crate::group_commit::Group;
use crate::schema::migrate;
use crate::sql::{
    CLAIM_SQL, COUNT_BY_STATUS_SQL, COUNT_DELAYED_SQL, COUNT_EXPIRED_SQL, COUNT_EXPIRY_SQL,
    DELETE_SQL, EXPIRED_SQL, EXPIRING_SQL, HEAD_SQL, LIST_SQL, NEXT_DUE_SQL, OLDEST_DEAD_SQL,
    OLDEST_DUE_SQL, PROMOTE_SQL, QUEUE_NAMES_SQL, QUEUES_SQL, RETIRE_SQL, TAIL_SQL, UNBLOCK_SQL,
    list_status_sql,
};
use crate::{moves, row};

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

    /// The WAL's length at which the store's thread checkpoints (`checkpoint.rs` says why they
    /// differ).
    fn checkpoint_start(self) -> i64 {
        match self {
            Self::Full => checkpoint::START_FULL,
            Self::Normal => checkpoint::START_NORMAL,
        }
    }
}

/// How much of the WAL is kept after a checkpoint (per connection; without effect on an in-memory
/// database): `journal_size_limit` truncates the WAL file to 32 MiB when it starts over after a
/// long read transaction made it grow beyond that (SQLite keeps it at its largest otherwise). When
/// it is copied into the database file is `checkpoint.rs`'s: at `"normal"` at 4000 pages, not
/// SQLite's default 1000 (at `"full"` 1000: `checkpoint::START_FULL` says why), by a thread of the
/// store rather than the committing call.
///
/// Why 4000 pages at `"normal"`: a checkpoint costs three syncs however little it copies (the WAL
/// before the copy, the database file after it, the WAL's header when the next commit starts it
/// over), 1 to 4 ms each on the disks measured. SQLite's default is a checkpoint every 480
/// enqueues, as an enqueue writes 2 pages (the row and the index of pending messages; 4 before
/// schema version 8, when the default made it one every 240); at 4000 pages it is one every 1 900
/// (950 before version 8): a checkpoint copies about as many distinct pages (the same
/// leaves fill up), the WAL file is at most about 16 MiB in the common case, and a page is still
/// found in the first of the WAL index's hash tables (4062 frames), so reads do not get slower. At
/// `"normal"` the commits since the last checkpoint are the ones a power loss may take (the README
/// says so); at `"full"` every commit is synced and this changes no durability.
const WAL_PRAGMAS: &str = "PRAGMA journal_size_limit = 33554432";

/// How a file is opened: read-write, created when missing, without `SQLITE_OPEN_URI` (rusqlite's
/// default sets it): a path is a file name, never a URI such as `file:x.db?mode=memory`.
const FILE_FLAGS: OpenFlags = OpenFlags::SQLITE_OPEN_READ_WRITE
    .union(OpenFlags::SQLITE_OPEN_CREATE)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// `path` as SQLite must read a file name: as given, so that SQLite's errors name the file as the
/// caller wrote it (issue 19: `./adir` read `././adir`), except the relative names SQLite would
/// not take for a file, which get `./` before them: one that starts with `file:` (a library built
/// with `SQLITE_USE_URI`, as Debian's is, reads it as a URI whatever the flags) and the empty
/// name (a temporary database).
fn file_name(path: &Path) -> Cow<'_, Path> {
    let name = path.as_os_str().as_encoded_bytes();
    if name.is_empty() || name.starts_with(b"file:") {
        Cow::Owned(Path::new(".").join(path))
    } else {
        Cow::Borrowed(path)
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
    /// version (1: deadletter 0.1.0; 2 to 7) is upgraded in place, in one transaction; a file
    /// whose schema version is newer than [`crate::SCHEMA_VERSION`], or another application's,
    /// is refused with a store error and left as it was, as is a folder (a path ending in a
    /// separator or in `/.` is one, whether it exists or not: nothing is created).
    pub fn open(path: &Path, durability: Durability) -> Result<Self> {
        let _gate = fork::enter();
        // The bytes, not `Path` equality, which ignores a trailing `/` or `/.` (`:memory:/` was
        // the in-memory database: tester T9, session 13).
        if path.as_os_str() == ":memory:" {
            let conn = Connection::open_in_memory().map_err(Error::store)?;
            return Self::from_connection(conn, durability);
        }
        // SQLite drops a trailing separator or `.` (`trail/` and `trail/.` made a file `trail`):
        // such a path names a folder, refused as one is.
        let name = path.as_os_str().as_encoded_bytes();
        let name = name.strip_suffix(b".").unwrap_or(name);
        if name.last().is_some_and(|&b| is_separator(b.into())) {
            let said = format!("unable to open database file: {}", path.display());
            return Err(Error::Store(said));
        }
        let open = || Connection::open_with_flags(file_name(path), FILE_FLAGS);
        let mut store = Self::from_connection(open().map_err(Error::store)?, durability)?;
        let reader = open().map_err(Error::store)?;
        reader
            .busy_handler(Some(wait_for_lock))
            .map_err(Error::store)?;
        stable_plans(&reader)?;
        store.reader = Some(Group::new(reader, None));
        Ok(store)
    }

    /// Sets the connection up (busy handler, schema, WAL, durability) and wraps it. The schema is
    /// checked first, so that another application's file is refused before anything is written
    /// to it.
    pub fn from_connection(mut conn: Connection, durability: Durability) -> Result<Self> {
        conn.busy_handler(Some(wait_for_lock))
            .map_err(Error::store)?;
        stable_plans(&conn)?;
        migrate(&mut conn)?;
        // Returns the mode in force: `wal` for files, `memory` for in-memory databases.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(Error::store)?;
        conn.execute_batch(durability.pragma())
            .map_err(Error::store)?;
        conn.execute_batch(WAL_PRAGMAS).map_err(Error::store)?;
        // Replaces SQLite's automatic checkpoints on this connection (see `checkpoint.rs`).
        conn.wal_hook(Some(checkpoint::note_frames));
        let file = conn
            .path()
            .filter(|path| !path.is_empty())
            .map(PathBuf::from);
        let checkpoints =
            Checkpoints::new(file, durability.pragma(), durability.checkpoint_start());
        Ok(Self {
            group: Group::new(conn, Some(checkpoints)),
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

    /// Whether reads go through a connection of their own (a file; not `:memory:`): they never
    /// wait behind a write, and never see one that is not committed yet.
    pub fn reads_apart(&self) -> bool {
        self.reader.is_some()
    }

    /// How many write transactions this store committed (group commit makes them fewer than the
    /// write calls when threads call at once).
    pub fn commits(&self) -> u64 {
        self.group.commits()
    }

    /// Runs `steps` (calls of this store) one after the other on this thread with their writes
    /// in one transaction as far as they go, committed once before it returns (the Node
    /// binding's calls made in one JavaScript tick, issue 19): the value of a step that needs no
    /// commit (a read; a refusal that saw only committed state) goes to `early` as soon as it
    /// ran; the others come back each with the outcome of the commit it rests on (on `Err`,
    /// nothing of that step was written). Calls of other threads meanwhile share that
    /// transaction as they share any (group commit).
    pub fn batch<T, S: FnOnce() -> T>(
        &self,
        steps: impl IntoIterator<Item = S>,
        early: impl FnMut(T),
    ) -> Vec<(T, Result<()>)> {
        self.group.batch(steps, early)
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
            // Its thread is not in this process: closing would wait for it forever.
            std::mem::forget(self.group.checkpoints().cloned());
            if let Some(reader) = &self.reader {
                std::mem::forget(Arc::clone(reader.session()));
            }
        }
    }
}

/// Keeps each cached statement's plan whatever values are bound to it: SQLite's query planner
/// stability guarantee (`SQLITE_DBCONFIG_ENABLE_QPSG`). A SQLite built with `SQLITE_ENABLE_STAT4`,
/// as rusqlite's `bundled` one is (the Node module's, the release wheel's), otherwise compiles a
/// statement again at its first step after a new value is bound to a range constraint, which
/// claim's clock is at every call: with 3.50.2 bundled, 1 000 claims ran 1 000 reprepares, 18 %
/// of a Node process's instructions one message at a time (callgrind, issue 19). The plans are
/// the ones without that value (`tests/plans.rs` asserts them: every query through an index).
fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map(drop)
        .map_err(Error::store)
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

/// What a write reads once it holds the write lock: the clock, then the queue's row.
fn context(tx: &Connection, queue: &str, clock: Clock<'_>) -> Result<Context> {
    let now = clock()?;
    Context::new(now, row::queue(tx, queue)?)
}

/// The last live member of `group` of `queue`, in group order (the group's tail).
pub(crate) fn tail(tx: &Connection, queue: &str, group: &str) -> Result<Option<Position>> {
    tx.prepare_cached(TAIL_SQL)
        .and_then(|mut tail| {
            tail.query_row(params![queue, group], |row| {
                Ok(Position {
                    at: row.get(0)?,
                    id: row.get(1)?,
                })
            })
            .optional()
        })
        .map_err(Error::store)
}

/// After a member of `group` of `queue` left it: unblocks its first live member when it is
/// blocked (it is the head now), as the core says ([`storage::next_head`]).
pub(crate) fn unblock_next(tx: &Connection, queue: &str, group: &str) -> Result<()> {
    let first = row::read_one(tx, HEAD_SQL, params![queue, group])?;
    let (message, blocked) = match &first {
        Some((message, blocked)) => (Some(message), *blocked),
        None => (None, false),
    };
    if let (Some(message), Some(lane)) = (message, storage::next_head(message, blocked)) {
        let ready = !matches!(lane, storage::Lane::Waiting(_));
        tx.prepare_cached(UNBLOCK_SQL)
            .and_then(|mut unblock| unblock.execute(params![message.id, ready]))
            .map_err(Error::store)?;
    }
    Ok(())
}

/// Writes `after` (a step's result) over `before` (as read, with its `blocked` flag), with its
/// group's bookkeeping: a message entering its group again (a replay) goes to its end, blocked
/// unless the group has no live member; one leaving it unblocks the group's next member.
fn put(tx: &Connection, before: &(Message, bool), after: &Message, now: Millis) -> Result<()> {
    let (before, blocked) = before;
    match after.group.as_deref() {
        Some(group) if storage::enters_group(before, after) => {
            let tail = tail(tx, &after.queue, group)?;
            let at = storage::group_at(now, tail, Some(after.id));
            row::write(tx, after, tail.is_none(), Some(at))
        }
        Some(group) if storage::leaves_group(before, Some(after)) => {
            row::write(tx, after, true, None)?;
            unblock_next(tx, &after.queue, group)
        }
        _ => row::write(tx, after, !blocked, None),
    }
}

/// Takes out the pending messages of `queue` whose expiry came at the claim's instant (ready,
/// waiting or blocked), in expiry order, as `claim` says (dead, or deleted), counts them in the
/// queue's row, and returns them as written (or as they were, when deleted).
fn sweep(tx: &Connection, queue: &str, claim: &Claiming) -> Result<Vec<Message>> {
    let now = claim.now;
    let expiring = {
        let mut statement = tx.prepare_cached(EXPIRING_SQL).map_err(Error::store)?;
        let rows = statement
            .query_map(params![queue, now], |row| Ok(row::read_stored(row)))
            .map_err(Error::store)?;
        rows.map(|row| row.map_err(Error::store)?)
            .collect::<Result<Vec<_>>>()?
    };
    let mut swept = Vec::with_capacity(expiring.len());
    for before in expiring {
        if let Some(dead) = claim.sweep(before.0.clone())? {
            put(tx, &before, &dead, now)?;
            swept.push(dead);
        } else {
            let (message, _) = before;
            delete(tx, &[message.id])?;
            if let Some(group) = &message.group {
                unblock_next(tx, queue, group)?;
            }
            swept.push(message);
        }
    }
    if !swept.is_empty() {
        let n = sql_int(swept.len())?;
        let (dead, discarded) = claim.expiry_counts(n);
        tx.prepare_cached(COUNT_EXPIRY_SQL)
            .and_then(|mut count| count.execute(params![queue, dead, discarded]))
            .map_err(Error::store)?;
    }
    Ok(swept)
}

/// Inserts `message` at `now`: a grouped one goes to its group's end, blocked unless the group
/// has no live member.
fn insert(tx: &Connection, message: NewMessage, now: Millis) -> Result<Message> {
    let Some(group) = message.group.as_deref() else {
        return row::insert(tx, message, true, None);
    };
    let tail = tail(tx, &message.queue, group)?;
    let at = storage::group_at(now, tail, None);
    row::insert(tx, message, tail.is_none(), Some(at))
}

impl Store for SqliteStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        self.write(|tx| {
            let ctx = context(tx, &args.queue, clock)?;
            args.messages(&ctx)?
                .into_iter()
                .map(|message| insert(tx, message, ctx.now))
                .collect()
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.read(|conn| Ok(row::get(conn, queue, id)?.map(|(message, _)| message)))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: impl FnOnce(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        self.write(|tx| {
            let ctx = context(tx, queue, clock)?;
            let before = row::get(tx, queue, id)?;
            let found = before.as_ref().map(|(message, _)| message.clone());
            let next = apply_step(found, queue, id, |m| step(m, &ctx))?;
            if let Some(before) = &before {
                put(tx, before, &next, ctx.now)?;
            }
            Ok(next)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        mut tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        self.write(|tx| {
            let ctx = context(tx, queue, clock)?;
            let Some(claim) = start(&ctx) else {
                return Ok(Claimed::default());
            };
            let now = claim.now;
            let mut claimed = Claimed::default();
            for (index, before) in row::read_all(tx, EXPIRED_SQL, params![queue, now])?
                .into_iter()
                .enumerate()
            {
                let next = claim.expire(before.clone(), index)?;
                put(tx, &(before, false), &next, now)?;
                claimed.expired.push(next);
            }
            claimed.swept = sweep(tx, queue, &claim)?;
            if claim.n == 0 {
                return Ok(claimed);
            }
            // Moving the messages whose backoff is over into the ready index changes no field.
            // A message whose lease just expired is not taken in the same call (it may be due
            // again at once under a backoff of 0), as in the reference store.
            tx.prepare_cached(PROMOTE_SQL)
                .and_then(|mut promote| promote.execute(params![queue, now]))
                .map_err(Error::store)?;
            let room = sql_int(claim.n + claimed.expired.len())?;
            let due = row::read_all(tx, CLAIM_SQL, params![queue, now, room])?;
            for before in due
                .into_iter()
                .filter(|m| !claimed.expired.iter().any(|e| e.id == m.id))
                .take(claim.n)
            {
                let next = claim.take(before.clone(), tokens())?;
                row::write(tx, &next, true, None)?;
                claimed.taken.push(next);
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

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.write(|tx| {
            let ctx = context(tx, queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                if let Some(before) = row::get(tx, queue, *id)?
                    && let Some(next) = step(before.0.clone(), &ctx)?
                {
                    put(tx, &before, &next, ctx.now)?;
                    written.push(next);
                }
            }
            Ok(written)
        })
    }

    async fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.write(|tx| {
            let ctx = context(tx, queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                let Some(before) = row::get(tx, queue, *id)? else {
                    continue;
                };
                let taken = moves::key_taken(tx, to_queue, before.0.idempotency_key.as_deref())?;
                if let Some(after) = step(before.0.clone(), &ctx, taken)? {
                    moves::write(tx, &before.0, &after, ctx.now)?;
                    written.push(after);
                }
            }
            Ok(written)
        })
    }

    async fn keys_taken(&self, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
        self.read(|conn| {
            let mut taken = Vec::new();
            for key in keys {
                if moves::key_taken(conn, queue, Some(key))? {
                    taken.push((*key).to_owned());
                }
            }
            Ok(taken)
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
            for id in ids {
                if let Some((current, _)) = row::get(tx, queue, *id)?
                    && check(&current)?
                {
                    deleted.push(current);
                }
            }
            let doomed: Vec<Id> = deleted.iter().map(|message| message.id).collect();
            delete(tx, &doomed)?;
            Ok(deleted)
        })
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        self.read(|conn| {
            // One read transaction: every number comes from the same snapshot.
            let tx = conn.transaction().map_err(Error::store)?;
            let mut counts = Counts::default().with_row(&row::queue(&tx, queue)?);
            {
                let mut statement = tx
                    .prepare_cached(COUNT_BY_STATUS_SQL)
                    .map_err(Error::store)?;
                counts.by_status = statement
                    .query_row(params![queue], |row| {
                        Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?])
                    })
                    .map_err(Error::store)?;
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
            let tx = conn.transaction().map_err(Error::store)?;
            let mut names = std::collections::BTreeSet::new();
            for sql in [QUEUES_SQL, QUEUE_NAMES_SQL] {
                let mut statement = tx.prepare_cached(sql).map_err(Error::store)?;
                let rows = statement
                    .query_map([], |row| row.get::<_, String>(0))
                    .map_err(Error::store)?;
                for name in rows {
                    names.insert(name.map_err(Error::store)?);
                }
            }
            Ok(names.into_iter().collect())
        })
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        self.read(|conn| row::queue(conn, queue))
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        self.write(|tx| {
            let stored = row::queue(tx, queue)?;
            let next = step(stored)?;
            if next != stored {
                row::put_queue(tx, queue, &next)?;
            }
            Ok(next)
        })
    }
}

/// Deletes the messages `ids` and records that their ids were given, so that none is given
/// again.
fn delete(tx: &Connection, ids: &[Id]) -> Result<()> {
    let mut statement = tx.prepare_cached(DELETE_SQL).map_err(Error::store)?;
    for id in ids {
        statement.execute(params![id]).map_err(Error::store)?;
    }
    if let Some(highest) = ids.iter().max() {
        tx.prepare_cached(RETIRE_SQL)
            .and_then(|mut retire| retire.execute(params![highest]))
            .map_err(Error::store)?;
    }
    Ok(())
}
