//! Connections: an r2d2 pool of `postgres` clients, each with its prepared statements, and the
//! one place where driver and pool errors become [`Error::Store`].

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

use deadletter::{Error, Result};
use postgres::{Client, NoTls, Statement};
use r2d2::{ManageConnection, Pool, PooledConnection};
use r2d2_postgres::PostgresConnectionManager;

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

/// A driver error that displays its cause: the pool keeps only the text of the last failed
/// connection attempt, and the driver's own text stops at "db error".
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

impl std::error::Error for ConnectError {}

/// `r2d2_postgres`'s manager, with the session settings and a statement cache per session.
#[derive(Debug)]
pub struct Manager {
    inner: PostgresConnectionManager<NoTls>,
    setup: String,
}

impl Manager {
    /// Sessions on `config`, set up with `lock_timeout` (see [`session_setup`]).
    pub fn new(config: postgres::Config, lock_timeout: Duration) -> Self {
        Self {
            inner: PostgresConnectionManager::new(config, NoTls),
            setup: session_setup(lock_timeout),
        }
    }
}

impl ManageConnection for Manager {
    type Connection = Conn;
    type Error = ConnectError;

    fn connect(&self) -> Result<Conn, ConnectError> {
        let mut client = self.inner.connect().map_err(ConnectError)?;
        client.batch_execute(&self.setup).map_err(ConnectError)?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), ConnectError> {
        self.inner.is_valid(&mut conn.client).map_err(ConnectError)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        self.inner.has_broken(&mut conn.client)
    }
}

/// The pool of one store. Sessions are opened on demand (none is kept open before the first
/// call) up to `max_size`; a caller waits `wait` at most for one.
pub fn build(manager: Manager, max_size: u32, wait: Duration) -> Pool<Manager> {
    Pool::builder()
        .max_size(max_size)
        .min_idle(Some(0))
        .connection_timeout(wait)
        // A dead session is found when it is used (see `Sessions::write`), not by an extra round
        // trip before every call.
        .test_on_check_out(false)
        .build_unchecked(manager)
}

/// How a store reaches the server: the pool, and the retry rule for sessions that died.
pub struct Sessions {
    /// `None` once closed.
    pool: RwLock<Option<Pool<Manager>>>,
    max_size: u32,
}

impl Sessions {
    /// Sessions from `pool`.
    pub fn new(pool: Pool<Manager>) -> Self {
        Self {
            max_size: pool.max_size(),
            pool: RwLock::new(Some(pool)),
        }
    }

    /// Closes every idle session and refuses new calls (store error); calls in flight finish
    /// and their sessions close when they return. Closing twice is fine.
    pub fn close(&self) {
        let pool = self.pool.write().map(|mut pool| pool.take());
        drop(pool);
    }

    /// Whether [`Sessions::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.pool.read().map_or(true, |pool| pool.is_none())
    }

    fn get(&self) -> Result<PooledConnection<Manager>> {
        let pool = self
            .pool
            .read()
            .map_err(|_| Error::Store("the pool was poisoned by a panic".into()))?
            .clone()
            .ok_or_else(|| Error::Store("the database is closed".into()))?;
        pool.get().map_err(|err| {
            Error::Store(format!(
                "PostgreSQL: no connection within {:?}: {err}",
                pool.connection_timeout()
            ))
        })
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
                Err(err) => return Err(db_error(err)),
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
