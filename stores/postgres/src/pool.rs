//! Connections: a pool of `postgres` clients, each with its prepared statements, and the one
//! place where driver and pool errors become [`Error::Store`].

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use deadletter::{Error, Result};
use postgres::{Client, NoTls, Statement};

use crate::fork::Owner;

/// Settings of every session: a row lock is waited for at most `lock_timeout` (then the call
/// fails with a store error and writes nothing); a session that sits in an open transaction for a
/// minute (its process froze mid-call) is ended by the server, so its row locks do not outlive it.
fn session_setup(lock_timeout: Duration) -> String {
    format!(
        "SET lock_timeout = {}; SET idle_in_transaction_session_timeout = '60s'",
        lock_timeout.as_millis().max(1)
    )
}

/// A driver error as a store error: the server's message and SQLSTATE when it sent one.
#[allow(clippy::needless_pass_by_value)] // so that it fits `map_err(db_error)`
pub fn db_error(err: postgres::Error) -> Error {
    match err.as_db_error() {
        Some(db) => Error::Store(format!(
            "PostgreSQL: {} (SQLSTATE {})",
            db.message(),
            db.code().code()
        )),
        None => Error::Store(format!("PostgreSQL: {err}")),
    }
}

/// One pooled session: the client and the statements prepared on it, by SQL text.
pub struct Conn {
    /// The session.
    pub client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// `sql` prepared on this session (once; later calls reuse it).
    pub fn prepare(&mut self, sql: &str) -> Result<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).map_err(db_error)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// A driver error that displays its cause (the driver's own text stops at "db error").
#[derive(Debug)]
pub struct ConnectError(pub postgres::Error);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => write!(f, "{} (SQLSTATE {})", db.message(), db.code().code()),
            None => match std::error::Error::source(&self.0) {
                Some(cause) => write!(f, "{}: {cause}", self.0),
                None => write!(f, "{}", self.0),
            },
        }
    }
}

/// `duration` in whole milliseconds (for messages: `364ms`, not `364.299959ms`).
fn whole_ms(duration: Duration) -> Duration {
    Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// Opens sessions on one database, each set up with the session settings.
#[derive(Debug)]
pub struct Connector {
    config: tokio_postgres::Config,
    setup: String,
    timeout: Duration,
}

impl Connector {
    /// Sessions on `config`, set up with `lock_timeout` (see [`session_setup`]); a login that
    /// takes longer than `timeout` fails.
    pub fn new(config: tokio_postgres::Config, lock_timeout: Duration, timeout: Duration) -> Self {
        Self {
            config,
            setup: session_setup(lock_timeout),
            timeout,
        }
    }

    /// A new session, or the reason there is none (text fit for a store error).
    ///
    /// The driver's `connect_timeout` bounds only the TCP connection: a server, or a proxy,
    /// that accepts and never answers would hold a login forever. So a first login, made with
    /// the async client, is given up at the timeout (its socket closed, nothing left behind);
    /// only once it succeeded is the session itself opened, on a thread of its own waited for
    /// what is left of the timeout (should the server fall silent in between, that thread ends
    /// when its connection does, and drops its session: it holds nothing of the pool).
    pub fn connect(&self) -> std::result::Result<Conn, String> {
        self.connect_within(self.timeout)
    }

    /// [`Connector::connect`], waiting at most `limit` (at most the login timeout).
    fn connect_within(&self, limit: Duration) -> std::result::Result<Conn, String> {
        let limit = limit.min(self.timeout);
        let started = Instant::now();
        self.probe(limit)?;
        let limit = limit
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1));
        let (sender, receiver) = mpsc::channel();
        let config = postgres::Config::from(self.config.clone());
        let setup = self.setup.clone();
        thread::Builder::new()
            .name("deadletter-postgres-login".into())
            .spawn(move || {
                let session = config.connect(NoTls).and_then(|mut client| {
                    client.batch_execute(&setup)?;
                    Ok(client)
                });
                // Nobody listens after a timeout: the session is dropped (closed) here.
                let _ = sender.send(session);
            })
            .map_err(|err| format!("cannot start the login: {err}"))?;
        match receiver.recv_timeout(limit) {
            Ok(Ok(client)) => Ok(Conn {
                client,
                statements: HashMap::new(),
            }),
            Ok(Err(err)) => Err(ConnectError(err).to_string()),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "the server did not complete the login within {:?}",
                whole_ms(limit)
            )),
            Err(RecvTimeoutError::Disconnected) => Err("the login failed".into()),
        }
    }

    /// Logs in and out once, giving up at `limit`: the future is then dropped, which closes its
    /// socket. `Err` is the reason, as [`Connector::connect`] gives it.
    fn probe(&self, limit: Duration) -> std::result::Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| format!("cannot start the login: {err}"))?;
        runtime.block_on(async {
            match tokio::time::timeout(limit, self.config.connect(NoTls)).await {
                Err(_) => Err(format!(
                    "the server did not complete the login within {:?}",
                    whole_ms(limit)
                )),
                Ok(Err(err)) => Err(ConnectError(err).to_string()),
                Ok(Ok((client, connection))) => {
                    // Without its client the connection says goodbye (Terminate) and ends.
                    drop(client);
                    let _ = tokio::time::timeout(limit, connection).await;
                    Ok(())
                }
            }
        })
    }
}

/// The sessions of one store: opened on demand (none before the first call) up to `max_size`,
/// kept idle between calls, closed when found broken. A caller waits `wait` at most for one.
///
/// Written here rather than taken from r2d2: r2d2 parks its worker threads in `parking_lot`'s
/// global table, which a forked child inherits with entries of threads it does not have; the
/// child's own pool then crashed (SIGSEGV) as soon as it started its threads. This pool keeps
/// no thread (a login runs on a short-lived one, see [`Connector::connect`]) and waits with
/// `std::sync` only.
///
/// Its sessions belong to the process that made it (see `fork.rs`): in a child made by `fork()`
/// every call and `close` fail with a store error, and dropping it forgets the idle sessions
/// instead of closing them.
pub struct Sessions {
    connector: Connector,
    owner: Owner,
    state: Mutex<State>,
    /// Signalled when a session is given back or a slot frees up.
    freed: Condvar,
    max_size: u32,
    wait: Duration,
}

struct State {
    idle: Vec<Conn>,
    /// Sessions open or being opened, idle ones included.
    open: u32,
    closed: bool,
}

impl Drop for Sessions {
    /// In a forked child, forgets the idle sessions: closing them would end the parent's. (The
    /// state is reached without its mutex, which a thread of the parent may have held.)
    fn drop(&mut self) {
        if self.owner.forked() {
            let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            std::mem::forget(std::mem::take(&mut state.idle));
        }
    }
}

/// A session lent to one call; given back to the pool (or closed, if broken) when dropped.
pub struct Session<'a> {
    conn: Option<Conn>,
    sessions: &'a Sessions,
}

impl std::ops::Deref for Session<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("a session is lent until dropped")
    }
}

impl std::ops::DerefMut for Session<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a session is lent until dropped")
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut state = self.sessions.lock();
        // A call that panicked may have left a transaction open on it (row locks, uncommitted
        // writes that the next BEGIN would join): close it rather than lend it again.
        if state.closed || conn.client.is_closed() || thread::panicking() {
            state.open -= 1;
            drop(state);
            drop(conn); // closes the session outside the lock
        } else {
            state.idle.push(conn);
        }
        self.sessions.freed.notify_one();
    }
}

impl Sessions {
    /// Sessions from `connector`, at most `max_size` at once; a call waits `wait` at most.
    pub fn new(connector: Connector, max_size: u32, wait: Duration) -> Self {
        Self {
            connector,
            owner: Owner::this_process(),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
                closed: false,
            }),
            freed: Condvar::new(),
            max_size,
            wait,
        }
    }

    /// The state (a panic while it was held left nothing half-done: every change is one step).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes every idle session and refuses new calls (store error); calls in flight finish
    /// and their sessions close when they return. Closing twice is fine. In a forked child, a
    /// store error that touches nothing.
    pub fn close(&self) -> Result<()> {
        self.owner.check()?;
        let idle = {
            let mut state = self.lock();
            state.closed = true;
            let idle = std::mem::take(&mut state.idle);
            state.open -= u32::try_from(idle.len()).unwrap_or(state.open);
            idle
        };
        drop(idle);
        self.freed.notify_all();
        Ok(())
    }

    /// Whether [`Sessions::close`] was called; always true in a forked child.
    pub fn is_closed(&self) -> bool {
        self.owner.forked() || self.lock().closed
    }

    /// An idle session, else a new one while fewer than `max_size` are open, else the first
    /// one given back within `wait`.
    fn get(&self) -> Result<Session<'_>> {
        self.owner.check()?;
        let deadline = Instant::now() + self.wait;
        let mut state = self.lock();
        loop {
            if state.closed {
                return Err(Error::Store("the database is closed".into()));
            }
            if let Some(conn) = state.idle.pop() {
                return Ok(Session {
                    conn: Some(conn),
                    sessions: self,
                });
            }
            if state.open < self.max_size {
                state.open += 1;
                drop(state);
                // A caller that waited for the slot logs in within what is left of its wait.
                let left = deadline.saturating_duration_since(Instant::now());
                return match self
                    .connector
                    .connect_within(left.max(Duration::from_millis(1)))
                {
                    Ok(conn) => Ok(Session {
                        conn: Some(conn),
                        sessions: self,
                    }),
                    Err(reason) => {
                        self.lock().open -= 1;
                        self.freed.notify_one();
                        Err(Error::Store(format!("PostgreSQL: no connection: {reason}")))
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Store(format!(
                    "PostgreSQL: no connection within {:?}: all {} sessions are in use",
                    self.wait, self.max_size
                )));
            }
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// How many times a call tries another session when the one it got turns out closed before
    /// anything was sent on it (after a server restart every idle session is dead): one more
    /// than the pool can hold.
    fn attempts(&self) -> u32 {
        self.max_size + 1
    }

    /// Runs the read `f` on a session; when the session was closed (server restarted since it
    /// was last used), runs it again on a new one, so that only calls in flight at the restart
    /// fail.
    pub fn read<T>(&self, mut f: impl FnMut(&mut Conn) -> Result<T>) -> Result<T> {
        let mut attempt = 1;
        loop {
            let mut conn = self.get()?;
            match f(&mut conn) {
                Err(_) if conn.client.is_closed() && attempt < self.attempts() => attempt += 1,
                other => return other,
            }
        }
    }

    /// Runs `f` inside one transaction, committed only when `f` succeeds: on any error (from the
    /// server or from a step) nothing is written. A session found closed at `BEGIN` is replaced
    /// (nothing was sent yet); a failure after it is the caller's store error.
    pub fn write<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        self.write_with("BEGIN", f)
    }

    /// [`Sessions::write`], starting the transaction with `begin`: `BEGIN` and settings of that
    /// transaction (`SET LOCAL ...`), sent in one round trip.
    pub fn write_with<T>(&self, begin: &str, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut attempt = 1;
        let mut conn = loop {
            let mut conn = self.get()?;
            match conn.client.batch_execute(begin) {
                Ok(()) => break conn,
                Err(_) if conn.client.is_closed() && attempt < self.attempts() => attempt += 1,
                Err(err) => {
                    // `BEGIN` may have run before a later statement of the batch failed: end
                    // the aborted transaction, or every later call on this session would fail.
                    let _ = conn.client.batch_execute("ROLLBACK");
                    return Err(db_error(err));
                }
            }
        };
        match f(&mut conn) {
            Ok(value) => {
                conn.client.batch_execute("COMMIT").map_err(db_error)?;
                Ok(value)
            }
            Err(err) => {
                // A session that cannot roll back is closed, and the pool drops it.
                let _ = conn.client.batch_execute("ROLLBACK");
                Err(err)
            }
        }
    }
}
