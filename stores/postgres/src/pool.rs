//! Connections: a pool of sessions ([`Client`]), each with its prepared statements, the write
//! transactions run on them, and the one place where driver and pool errors become
//! [`Error::Store`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use deadletter::{Error, Result};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::client::{Client, LoginError};
use crate::fork::Owner;

/// Settings of every session: a row lock is waited for at most `lock_timeout` (then the call
/// fails with a store error and writes nothing); a session that sits in an open transaction for a
/// minute (its process froze mid-call) is ended by the server, so its row locks do not outlive it;
/// its prepared statements run their generic plans (see [`crate::CLAIM_BEGIN`]).
fn session_setup(lock_timeout: Duration) -> String {
    format!(
        "SET lock_timeout = {}; SET idle_in_transaction_session_timeout = '60s'; \
         SET plan_cache_mode = force_generic_plan",
        lock_timeout.as_millis().max(1)
    )
}

/// A driver error as a store error: the server's message and SQLSTATE when it sent one.
#[allow(clippy::needless_pass_by_value)] // so that it fits `map_err(db_error)`
pub fn db_error(err: tokio_postgres::Error) -> Error {
    match err.as_db_error() {
        Some(db) => Error::Store(format!(
            "PostgreSQL: {} (SQLSTATE {})",
            db.message(),
            db.code().code()
        )),
        None => Error::Store(format!("PostgreSQL: {err}")),
    }
}

/// The end of a store error whose statement could not get a lock without waiting (`NOWAIT`), or
/// within `lock_timeout`: SQLSTATE 55P03, `lock_not_available`.
pub const LOCK_NOT_AVAILABLE: &str = "(SQLSTATE 55P03)";

/// The error of [`Sessions::write_first`] when it may send only statements prepared already and
/// the session has not prepared them all: nothing was sent.
pub const NOT_PREPARED: &str = "PostgreSQL: the statements are not prepared on this session yet";

/// How many times a transaction that PostgreSQL ended as a deadlock's victim, or that failed
/// with [`RELOCK`], is run again ([`retry_deadlocks`]).
pub const DEADLOCK_RETRIES: usize = 3;

/// The error of a bulk write or a move that locked a message after it had changed lanes since it
/// was read (`PostgresStore::lock_in_order`): it is run again from the start
/// ([`retry_deadlocks`]), and reaches the caller only when that keeps happening.
pub const RELOCK: &str = "PostgreSQL: a message changed its place in its ordering group while \
    it was being locked, again and again";

/// Runs `attempt` (one whole transaction) again, up to [`DEADLOCK_RETRIES`] times, while it fails
/// as a deadlock's victim (SQLSTATE 40P01): PostgreSQL rolled the whole transaction back, so
/// running it again is safe, as its manual advises ("Deadlocks", in "Explicit Locking"). For the
/// writes whose steps may run again (pure steps over what the transaction reads: the bulk actions
/// and moves). The cycle of row and group locks that moves and acks of one ordering group closed
/// under load (`tests/groups.rs`) is gone since they take their locks in one order
/// (`PostgresStore::lock_in_order`, issue 24; `tests/lock_order.rs`): what is run again now is
/// a transaction that found a message changed lanes while it was locking it ([`RELOCK`]). No
/// known cycle is left (moves, bulk actions and deletes lock in one order, claims and single
/// updates lock one head's row before its group); deadlocks stay covered, at no cost while
/// there are none, for an order no test has shown wrong yet.
pub fn retry_deadlocks<T>(mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let mut left = DEADLOCK_RETRIES;
    loop {
        match attempt() {
            Err(Error::Store(text))
                if left > 0 && (text.ends_with("(SQLSTATE 40P01)") || text == RELOCK) =>
            {
                left -= 1;
            }
            other => return other,
        }
    }
}

/// One pooled session: the client, the statements prepared on it (by SQL text), and where its
/// write transaction stands.
///
/// Its methods take SQL text and prepare it on first use. A transaction costs one round trip per
/// statement, except that `BEGIN` travels with the first one ([`Sessions::write_first`]) and
/// `COMMIT` with the last ([`Conn::commit_with_next`]).
pub struct Conn {
    /// The session.
    pub client: Client,
    statements: HashMap<String, Statement>,
    /// Set by [`Conn::commit_with_next`]: the next statement sent ends the transaction.
    commit_next: bool,
    /// Whether the transaction ended with its last statement (committed, or rolled back by the
    /// server when that statement failed).
    ended: bool,
}

impl Conn {
    fn new(client: Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
            commit_next: false,
            ended: false,
        }
    }

    /// `sql` prepared on this session (once; later calls reuse it).
    pub fn prepare(&mut self, sql: &str) -> Result<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).map_err(db_error)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// The next statement is the transaction's last: `COMMIT` is sent with it, in the same round
    /// trip. Should it fail, the server answers that `COMMIT` with a rollback: nothing of the
    /// transaction is written and the call gets the statement's error. Call it only where
    /// nothing after that statement can fail the call.
    pub fn commit_with_next(&mut self) {
        self.commit_next = true;
    }

    /// The rows of `sql` run with `params` (with `COMMIT` after it, see
    /// [`Conn::commit_with_next`]).
    pub fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let statement = self.prepare(sql)?;
        if !std::mem::take(&mut self.commit_next) {
            return self.client.query(&statement, params).map_err(db_error);
        }
        self.ended = true;
        let (rows, commit) = self.client.query_then_batch(&statement, params, "COMMIT");
        let rows = rows.map_err(db_error)?;
        commit.map_err(db_error)?;
        Ok(rows)
    }

    /// The row of `sql` run with `params`, if any.
    pub fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let mut rows = self.query(sql, params)?;
        if rows.len() > 1 {
            return Err(Error::Store(format!(
                "PostgreSQL: {} rows where at most one was expected",
                rows.len()
            )));
        }
        Ok(rows.pop())
    }

    /// The one row of `sql` run with `params`.
    pub fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| Error::Store("PostgreSQL: no row where one was expected".into()))
    }

    /// The rows of each statement run with its parameters, in order, all sent in one round trip;
    /// the first error when one failed.
    pub fn query_many(
        &mut self,
        statements: &[(&str, &[&(dyn ToSql + Sync)])],
    ) -> Result<Vec<Vec<Row>>> {
        debug_assert!(!self.commit_next, "query_many does not end a transaction");
        let prepared = statements
            .iter()
            .map(|(sql, _)| self.prepare(sql))
            .collect::<Result<Vec<_>>>()?;
        let list: Vec<(&Statement, &[&(dyn ToSql + Sync)])> = prepared
            .iter()
            .zip(statements)
            .map(|(statement, (_, params))| (statement, *params))
            .collect();
        self.client
            .query_all(&list)
            .into_iter()
            .map(|rows| rows.map_err(db_error))
            .collect()
    }

    /// A whole transaction in one round trip (issue 24): `begin` (which must not wait for a
    /// lock: `NOWAIT`), `sql` with `params` (which must not wait for a row lock either) and
    /// `COMMIT`, sent together, outside any transaction open on this session. `Some(rows)`:
    /// committed, `sql` returned `rows`. `None`: nothing was committed and the call takes its
    /// usual path, because
    /// - `sql` was not prepared on this session yet: it is prepared now (outside any
    ///   transaction: preparing takes its tables' locks and may wait for them), nothing run;
    /// - a lock was not available at once (SQLSTATE 55P03): `COMMIT` ended the aborted
    ///   transaction;
    /// - the session was closed and `begin` got no answer: the server answers `begin` (and
    ///   flushes its answer) before it reads `sql`, so it never ran `sql` (after a restart, every
    ///   idle session of the pool is closed this way).
    ///
    /// Any other failure is the call's store error, as in any transaction: a session that closed
    /// after `begin` was answered may have committed, and the call does not know (an enqueue is
    /// not sent twice).
    pub fn whole(
        &mut self,
        begin: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Vec<Row>>> {
        debug_assert!(!self.commit_next, "whole is a transaction of its own");
        let Some(statement) = self.statements.get(sql).cloned() else {
            // Whether it failed or not, nothing ran: the usual path says what is wrong, if
            // anything (a session found closed is replaced there).
            let _ = self.prepare(sql);
            return Ok(None);
        };
        let (opened, rows, ended) = self
            .client
            .batch_query_batch(begin, &statement, params, "COMMIT");
        let busy = |err: &tokio_postgres::Error| {
            err.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE)
        };
        match (opened, rows, ended) {
            (Ok(()), Ok(rows), Ok(())) => Ok(Some(rows)),
            (Err(err), _, _) if busy(&err) || self.client.is_closed() => Ok(None),
            (Ok(()), Err(err), Ok(())) if busy(&err) => Ok(None),
            (Err(err), _, _) | (Ok(()), Err(err), _) | (Ok(()), Ok(_), Err(err)) => {
                Err(db_error(err))
            }
        }
    }

    /// Runs `sql` with `params`: how many rows it changed (not with
    /// [`Conn::commit_with_next`]: use [`Conn::query`]).
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        debug_assert!(!self.commit_next, "execute does not end a transaction");
        let statement = self.prepare(sql)?;
        self.client.execute(&statement, params).map_err(db_error)
    }
}

/// A driver error that displays its cause (the driver's own text stops at "db error").
#[derive(Debug)]
pub struct ConnectError(pub tokio_postgres::Error);

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
    /// The login and the session's settings are given up at the timeout (the socket closed,
    /// nothing left behind): the driver's `connect_timeout` bounds only the TCP connection, and
    /// a server, or a proxy, that accepts and never answers would hold a login forever.
    pub fn connect(&self) -> std::result::Result<Conn, String> {
        self.connect_within(self.timeout)
    }

    /// [`Connector::connect`], waiting at most `limit` (at most the login timeout).
    fn connect_within(&self, limit: Duration) -> std::result::Result<Conn, String> {
        let limit = limit.min(self.timeout);
        match Client::connect(&self.config, &self.setup, limit) {
            Ok(client) => Ok(Conn::new(client)),
            Err(LoginError::Start(reason)) => Err(format!("cannot start the login: {reason}")),
            Err(LoginError::Server(err)) => Err(ConnectError(err).to_string()),
            Err(LoginError::Timeout) => Err(format!(
                "the server did not complete the login within {:?}",
                whole_ms(limit)
            )),
        }
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
    /// Round trips of the sessions given back so far (see [`Sessions::round_trips`]).
    round_trips: AtomicU64,
    /// Statements of the sessions given back so far (see [`Sessions::statements`]).
    statements: AtomicU64,
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
    /// The session's round trips and statements sent when it was lent.
    round_trips: u64,
    sent: u64,
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
        let trips = conn.client.round_trips().saturating_sub(self.round_trips);
        self.sessions
            .round_trips
            .fetch_add(trips, Ordering::Relaxed);
        let sent = conn.client.statements().saturating_sub(self.sent);
        self.sessions.statements.fetch_add(sent, Ordering::Relaxed);
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
            round_trips: AtomicU64::new(0),
            statements: AtomicU64::new(0),
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
    pub(crate) fn get(&self) -> Result<Session<'_>> {
        self.owner.check()?;
        let deadline = Instant::now() + self.wait;
        let mut state = self.lock();
        loop {
            if state.closed {
                return Err(Error::Store("the database is closed".into()));
            }
            if let Some(conn) = state.idle.pop() {
                return Ok(self.lend(conn));
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
                    Ok(conn) => Ok(self.lend(conn)),
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

    fn lend(&self, conn: Conn) -> Session<'_> {
        Session {
            round_trips: conn.client.round_trips(),
            sent: conn.client.statements(),
            conn: Some(conn),
            sessions: self,
        }
    }

    /// The round trips of the calls that returned so far (each request, or pipeline of
    /// requests, waited for: a statement's first preparation on a session counts as one):
    /// what tests count the hot paths' cost in.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// The statements the calls that returned so far sent (each statement with parameters, and
    /// each of a simple query's: `BEGIN`, `LOCK TABLE`, `COMMIT`), their preparations not
    /// counted.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
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
        Self::finish(&mut conn, f)
    }

    /// [`Sessions::write_with`], sending `begin` and the transaction's first statements (each
    /// SQL text with its parameters) in one round trip; `f` gets their rows, in order. A session
    /// found closed then is replaced (nothing was written): the statements must only read, lock,
    /// or change storage-only columns.
    ///
    /// With `prepared_only`, a session that has not prepared every statement yet sends nothing
    /// and the call fails with [`NOT_PREPARED`]: preparing a statement takes the locks it will
    /// take on its tables, so it may wait for another session's, before `begin` is sent.
    pub fn write_first<T>(
        &self,
        begin: &str,
        statements: &[(&str, &[&(dyn ToSql + Sync)])],
        prepared_only: bool,
        f: impl FnOnce(&mut Conn, Vec<Vec<Row>>) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 1;
        let (mut conn, rows) = loop {
            let mut conn = self.get()?;
            if prepared_only
                && statements
                    .iter()
                    .any(|(sql, _)| !conn.statements.contains_key(*sql))
            {
                return Err(Error::Store(NOT_PREPARED.into()));
            }
            let sent = statements
                .iter()
                .map(|(sql, _)| conn.prepare(sql))
                .collect::<Result<Vec<_>>>()
                .map(|prepared| {
                    let list: Vec<(&Statement, &[&(dyn ToSql + Sync)])> = prepared
                        .iter()
                        .zip(statements)
                        .map(|(statement, (_, params))| (statement, *params))
                        .collect();
                    let (opened, rows) = conn.client.batch_then_query_all(begin, &list);
                    opened.and_then(|()| rows.into_iter().collect::<std::result::Result<_, _>>())
                });
            match sent {
                Ok(Ok(rows)) => break (conn, rows),
                Ok(Err(_)) | Err(_) if conn.client.is_closed() && attempt < self.attempts() => {
                    attempt += 1;
                }
                Ok(Err(err)) => {
                    let _ = conn.client.batch_execute("ROLLBACK");
                    return Err(db_error(err));
                }
                Err(err) => return Err(err),
            }
        };
        Self::finish(&mut conn, |conn| f(conn, rows))
    }

    /// Runs `f` in the transaction open on `conn` and ends it: committed when `f` succeeds,
    /// rolled back when it fails, unless its last statement ended it already.
    fn finish<T>(conn: &mut Conn, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        conn.commit_next = false;
        conn.ended = false;
        let result = f(conn);
        conn.commit_next = false;
        if std::mem::take(&mut conn.ended) {
            return result;
        }
        match result {
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
