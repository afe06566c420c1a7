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
//!
//! A thread that has several calls to run at once (the Node binding's batch of the calls made in
//! one JavaScript tick, issue 19) runs them one after the other in [`Group::batch`]: each write
//! leaves the transaction open for the next, as if that one were queued, and the batch commits
//! once at its end (or a call of another thread that joined commits for it), then answers each
//! call with the outcome of the commit its writes were in. A call whose outcome needs no commit
//! is answered as soon as it ran, not after the batch's commit (which may wait up to
//! [`crate::BUSY_TIMEOUT`] for another process's lock; issue 19): one that wrote nothing and saw
//! only committed state (a read, which never sees the batch's open transaction; a call refused
//! before it touched the store, or in a transaction it began itself and rolled back). A call
//! refused inside the transaction left open by earlier calls saw their writes, not committed
//! yet: its refusal may rest on them, so it waits for that commit and fails with its error when
//! it is lost. The batch holds the fork gate from its first call to that commit, so the rule
//! above holds: a fork still finds no transaction open.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use deadletter::{Error, Result};
use rusqlite::Connection;

use crate::checkpoint::Checkpoints;
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
    /// The writer connection's checkpoints (`None`: a reader's, or SQLite's own).
    checkpoints: Option<Arc<Checkpoints>>,
}

/// The session, with the fork gate held: fields drop in order, the mutex before the gate, so that
/// a fork never finds the mutex locked. (`None`: the thread's batch holds the gate.)
struct Held<'a> {
    session: MutexGuard<'a, Session>,
    _gate: Option<Gate>,
}

/// The batch a thread is running ([`Group::batch`]).
struct Deferred {
    /// The group whose writes it defers (its session's address).
    group: usize,
    /// The transactions the current call's outcome rests on, not committed yet: those its writes
    /// were left open in, or the one it was refused in.
    awaits: Vec<Arc<Batch>>,
}

thread_local! {
    /// This thread's batch, while it runs one.
    static DEFERRED: RefCell<Option<Deferred>> = const { RefCell::new(None) };
}

/// Whether this thread is running a batch (it holds the fork gate).
fn in_batch() -> bool {
    DEFERRED.with(|deferred| deferred.borrow().is_some())
}

fn closed() -> Error {
    Error::Store("the database is closed".into())
}

impl Group {
    /// Shares `conn`; the process's list of open connections tracks it (closed in forked children).
    pub fn new(conn: Connection, checkpoints: Option<Checkpoints>) -> Self {
        let session = Arc::new(Mutex::new(Session {
            conn: Some(conn),
            waiting: None,
        }));
        fork::track(&session);
        Self {
            session,
            queued: AtomicUsize::new(0),
            commits: AtomicU64::new(0),
            checkpoints: checkpoints.map(Arc::new),
        }
    }

    /// How many write transactions were committed: fewer than the write calls when calls shared
    /// commits.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// The writer connection's checkpoints (for the fork hooks).
    pub fn checkpoints(&self) -> Option<&Arc<Checkpoints>> {
        self.checkpoints.as_ref()
    }

    /// After a commit on `conn`: the checkpoints it starts or makes.
    fn committed(&self, conn: &Connection) {
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.committed(conn);
        }
    }

    /// The session (for the fork hooks).
    pub fn session(&self) -> &Arc<Mutex<Session>> {
        &self.session
    }

    /// Whether the connection was closed (`true` when the mutex was poisoned).
    pub fn is_closed(&self) -> bool {
        self.session.lock().map_or(true, |s| s.conn.is_none())
    }

    /// This group's address, which names it in [`Deferred`].
    fn id(&self) -> usize {
        Arc::as_ptr(&self.session).addr()
    }

    /// Whether this thread's batch defers this group's commits.
    fn deferring(&self) -> bool {
        DEFERRED.with(|deferred| {
            deferred
                .borrow()
                .as_ref()
                .is_some_and(|d| d.group == self.id())
        })
    }

    fn enter(&self) -> Result<Held<'_>> {
        // A batch holds the gate already: a second read lock could wait for a fork waiting for it.
        let gate = (!in_batch()).then(fork::enter);
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
            self.committed(conn);
        }
        f(conn)
    }

    /// Commits the transaction that waiting calls left open and closes the connection; later
    /// calls fail with a store error. Closing twice is fine.
    pub fn close(&self) -> Result<()> {
        // Before the fork gate: the thread's pass holds it.
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.close();
        }
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

    /// Runs `steps` one after the other on this thread, their writes in one transaction as far as
    /// they go (see the module's documentation), committed before it returns. A step whose
    /// outcome needs no commit goes to `early` as soon as it ran; the others come back, in their
    /// order, each with the outcome of the commit its outcome rests on (on `Err`, nothing of
    /// that step was written). A step's own `Err` rolled back only its writes, as in
    /// [`Group::write`].
    pub fn batch<T, S: FnOnce() -> T>(
        &self,
        steps: impl IntoIterator<Item = S>,
        mut early: impl FnMut(T),
    ) -> Vec<(T, Result<()>)> {
        if in_batch() {
            // Nested: the steps join the batch under way, whose commit they are acknowledged by.
            return steps.into_iter().map(|step| (step(), Ok(()))).collect();
        }
        let gate = fork::enter();
        let mut done = Vec::new();
        for step in steps {
            DEFERRED.with(|deferred| {
                *deferred.borrow_mut() = Some(Deferred {
                    group: self.id(),
                    awaits: Vec::new(),
                });
            });
            let ran = catch_unwind(AssertUnwindSafe(step));
            let awaits = DEFERRED
                .with(|deferred| deferred.borrow_mut().take())
                .map(|d| d.awaits)
                .unwrap_or_default();
            match ran {
                Ok(value) if awaits.is_empty() => early(value),
                Ok(value) => done.push((value, awaits)),
                Err(panic) => {
                    self.settle(gate);
                    resume_unwind(panic);
                }
            }
        }
        self.settle(gate);
        done.into_iter()
            .map(|(value, awaits)| {
                let outcome = awaits.iter().try_for_each(|batch| batch.wait());
                (value, outcome)
            })
            .collect()
    }

    /// Ends a batch as a write ends: leaves the transaction open for the calls queued meanwhile
    /// (the last of them commits), else commits it (when no call of another thread did); then
    /// releases the fork gate.
    fn settle(&self, gate: Gate) {
        // Queued like a call (with the gate it holds): a call that joins meanwhile leaves its
        // commit to this one.
        self.queued.fetch_add(1, Ordering::SeqCst);
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        self.queued.fetch_sub(1, Ordering::SeqCst);
        if self.queued.load(Ordering::SeqCst) > 0 {
            // Their commit is this batch's: `batch` waits for it.
        } else if let Some(batch) = session.waiting.take() {
            match session.conn.as_mut() {
                Some(conn) => {
                    batch.finish(commit(conn).map_err(|err| text(&err)));
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    self.committed(conn);
                }
                None => batch.finish(Err(text(&closed()))),
            }
        }
        drop(session);
        drop(gate);
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
        } else if panicked.is_none() && (self.deferring() || self.queued.load(Ordering::SeqCst) > 0)
        {
            // Others are queued, or the batch of this thread goes on: the last of them commits
            // for everyone. On `Err`, rolled back to its savepoint: the transaction goes on
            // without it; refused in a batch, it saw that transaction's writes, and its answer
            // waits for their commit (issue 19: see the module's documentation).
            if result.is_err() && !self.deferring() {
                return result;
            }
            let batch = Arc::clone(session.waiting.get_or_insert_with(Arc::default));
            drop(held);
            let deferred = DEFERRED.with(|deferred| {
                let mut deferred = deferred.borrow_mut();
                let deferred = deferred.as_mut().filter(|d| d.group == self.id())?;
                deferred.awaits.push(Arc::clone(&batch));
                Some(())
            });
            let value = result?;
            if deferred.is_none() {
                batch.wait()?;
            }
            return Ok(value);
        } else {
            let committed = commit(conn);
            self.commits.fetch_add(1, Ordering::Relaxed);
            if let Some(batch) = session.waiting.take() {
                batch.finish(committed.as_ref().map_err(text).copied());
            }
            self.committed(conn);
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
