//! Group commit for the SQLite store: the calls of one process that arrive while another call
//! holds the connection (its commit, with `durability="full"`, waits for a sync of the WAL) share
//! the next transaction, each in its own savepoint, and are acknowledged together after its one
//! commit, the way databases commit groups.
//!
//! Each call runs its own step on the connection, in its own thread (the steps the engine hands a
//! store need not be `Send`); only the transaction is shared:
//! - a call that finds no transaction open begins one (`BEGIN IMMEDIATE`, waiting for other
//!   processes' locks as before); one that finds a transaction left open joins it inside a
//!   savepoint, rolled back alone when the call fails: one call's failure (a step's error, a
//!   conflict) changes nothing of the others;
//! - after its step, a call commits when no other call is queued for the connection; otherwise
//!   it leaves the transaction open for them and waits, without the connection and outside the
//!   fork gate, for the commit that the last of them makes. It returns only then: its work is
//!   committed, or that commit failed and it fails with the same store error, nothing of it
//!   written;
//! - a call that only reads, and `close`, first commit a transaction left open, so that no read
//!   sees work that is not committed.
//!
//! A call leaves the transaction open only for a call that is already queued, inside the fork
//! gate: the last call to hold the connection always commits. So no transaction is open while no
//! call is inside the store, which is what a fork waits for (see [`crate::fork`]).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use deadletter::{Error, Result};
use rusqlite::Connection;

use crate::fork::{self, Gate, Inherited};

/// A store's connection and the transaction that calls left open for others, behind one mutex
/// (the list of open connections in [`crate::fork`] holds it too).
#[derive(Debug)]
pub struct Session {
    /// `None` once closed.
    conn: Option<Connection>,
    /// The transaction left open by calls that wait for its commit, with their outcome.
    waiting: Option<Arc<Batch>>,
}

impl Inherited for Mutex<Session> {
    fn take_connection(&self) -> Option<Connection> {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .conn
            .take()
    }
}

/// The outcome of one shared transaction, for the calls waiting for it.
#[derive(Debug, Default)]
struct Batch {
    /// `None` until committed (`Ok`) or lost (`Err`, the store error's text).
    outcome: Mutex<Option<std::result::Result<(), String>>>,
    done: Condvar,
}

impl Batch {
    fn finish(&self, outcome: std::result::Result<(), String>) {
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.done.notify_all();
    }

    fn wait(&self) -> Result<()> {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(done) = outcome.as_ref() {
                return done.clone().map_err(Error::Store);
            }
            outcome = self
                .done
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The connection, shared by the threads of one process with group commit.
#[derive(Debug)]
pub struct Group {
    session: Arc<Mutex<Session>>,
    /// Calls inside the fork gate that wait for the session's mutex.
    queued: AtomicUsize,
    /// Write transactions committed.
    commits: AtomicU64,
}

/// The session, with the fork gate held: fields drop in order, the mutex before the gate, so that
/// a fork never finds the mutex locked.
struct Held<'a> {
    session: MutexGuard<'a, Session>,
    _gate: Gate,
}

fn closed() -> Error {
    Error::Store("the database is closed".into())
}

impl Group {
    /// Shares `conn`; the process's list of open connections tracks it (closed in forked children).
    pub fn new(conn: Connection) -> Self {
        let session = Arc::new(Mutex::new(Session {
            conn: Some(conn),
            waiting: None,
        }));
        fork::track(&session);
        Self {
            session,
            queued: AtomicUsize::new(0),
            commits: AtomicU64::new(0),
        }
    }

    /// How many write transactions were committed: fewer than the write calls when calls shared
    /// commits.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// The session (for the fork hooks).
    pub fn session(&self) -> &Arc<Mutex<Session>> {
        &self.session
    }

    /// Whether the connection was closed (`true` when the mutex was poisoned).
    pub fn is_closed(&self) -> bool {
        self.session.lock().map_or(true, |s| s.conn.is_none())
    }

    fn enter(&self) -> Result<Held<'_>> {
        let gate = fork::enter();
        self.queued.fetch_add(1, Ordering::SeqCst);
        let session = self.session.lock();
        self.queued.fetch_sub(1, Ordering::SeqCst);
        let session =
            session.map_err(|_| Error::Store("the connection was poisoned by a panic".into()))?;
        Ok(Held {
            session,
            _gate: gate,
        })
    }

    /// Runs `f` on the connection outside any transaction (it may open its own, a read), after
    /// committing the one that waiting calls left open.
    pub fn read<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut held = self.enter()?;
        let session = &mut *held.session;
        let conn = session.conn.as_mut().ok_or_else(closed)?;
        if let Some(batch) = session.waiting.take() {
            batch.finish(commit(conn).map_err(|err| text(&err)));
            self.commits.fetch_add(1, Ordering::Relaxed);
        }
        f(conn)
    }

    /// Commits the transaction that waiting calls left open and closes the connection; later
    /// calls fail with a store error. Closing twice is fine.
    pub fn close(&self) -> Result<()> {
        let mut held = self.enter()?;
        let session = &mut *held.session;
        let Some(conn) = session.conn.take() else {
            return Ok(());
        };
        if let Some(batch) = session.waiting.take() {
            batch.finish(commit(&conn).map_err(|err| text(&err)));
        }
        conn.close().map_err(|(_, err)| Error::store(err))
    }

    /// Runs `f` in a write transaction shared with the calls queued meanwhile (see the module's
    /// documentation) and returns once its work is committed; on `Err` nothing of it is written.
    pub fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let mut held = self.enter()?;
        let session = &mut *held.session;
        let conn = session.conn.as_mut().ok_or_else(closed)?;
        let joined = session.waiting.is_some();
        if !joined {
            run(conn, "BEGIN IMMEDIATE")?;
        }
        let ran = catch_unwind(AssertUnwindSafe(|| {
            if joined {
                let savepoint = conn.savepoint().map_err(Error::store)?;
                let value = f(&savepoint)?;
                // On `Err` (above), dropping the savepoint rolls back to it.
                savepoint.commit().map_err(Error::store)?;
                Ok(value)
            } else {
                f(conn)
            }
        }));
        let (result, panicked) = match ran {
            Ok(result) => (result, None),
            Err(panic) => (Err(Error::Store("a step panicked".into())), Some(panic)),
        };
        if result.is_err() && !joined {
            // Alone in this transaction (the mutex was held since BEGIN): roll it all back.
            if !conn.is_autocommit() {
                let _ = run(conn, "ROLLBACK");
            }
        } else if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (an I/O error, a full disk): every call
            // that shared it failed.
            let lost = "the transaction was rolled back by SQLite after an error; nothing of \
                        this call was written";
            if let Some(batch) = session.waiting.take() {
                batch.finish(Err(lost.into()));
            }
            if result.is_ok() {
                return Err(Error::Store(lost.into()));
            }
        } else if self.queued.load(Ordering::SeqCst) > 0 && panicked.is_none() {
            // Others are queued: the last of them commits for everyone.
            // On `Err`, rolled back to its savepoint: the transaction goes on without it.
            let value = result?;
            let batch = Arc::clone(session.waiting.get_or_insert_with(Arc::default));
            drop(held);
            batch.wait()?;
            return Ok(value);
        } else {
            let committed = commit(conn);
            self.commits.fetch_add(1, Ordering::Relaxed);
            if let Some(batch) = session.waiting.take() {
                batch.finish(committed.as_ref().map_err(text).copied());
            }
            if let Err(err) = committed {
                return Err(result.err().unwrap_or(err));
            }
        }
        if let Some(panic) = panicked {
            drop(held); // not poisoned: the calls queued behind it go on
            resume_unwind(panic);
        }
        result
    }
}

/// What a store error says, to fail the calls of a lost transaction with the same error.
fn text(err: &Error) -> String {
    match err {
        Error::Store(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Runs one statement without parameters, prepared once per connection.
fn run(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql)
        .and_then(|mut statement| statement.execute([]))
        .map(drop)
        .map_err(Error::store)
}

/// Commits the open transaction; when that fails, rolls it back (nothing of it is written).
fn commit(conn: &Connection) -> Result<()> {
    run(conn, "COMMIT").inspect_err(|_| {
        if !conn.is_autocommit() {
            let _ = run(conn, "ROLLBACK");
        }
    })
}
