//! [`Client`]: one PostgreSQL session with a blocking interface, over `tokio-postgres`.
//!
//! Written on `tokio-postgres` rather than taken from the synchronous `postgres` crate (which
//! wraps the same client in the same way: a current-thread runtime per session that polls the
//! connection while it waits for an answer) for one thing that crate cannot do: send a request
//! before the previous one is answered. [`Client::pipeline`] sends two requests in one round
//! trip, so a transaction's `BEGIN` travels with its first statement and its `COMMIT` with its
//! last write (`pool.rs`). No thread is started: the runtime runs on the caller's thread inside
//! each call, so a forked child holds nothing of it but memory.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use futures_util::future::{join, join_all};
use tokio::runtime::Runtime;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, Error, NoTls, Row, Statement, ToStatement};

/// The rows of one statement, or its error.
type Rows = Result<Vec<Row>, Error>;

/// The connection half of a session: the socket's reader and writer, polled whenever the
/// session waits for an answer.
type Connection = Pin<Box<dyn Future<Output = std::result::Result<(), Error>> + Send>>;

/// The runtime and connection of a session, apart from its client so that a request (which
/// borrows the client) can be driven while the connection is polled.
struct Driver {
    runtime: Runtime,
    /// Dropped as soon as it ends: that drops the answers it still owed, so the requests
    /// waiting for them fail (closed) instead of waiting forever.
    connection: Option<Connection>,
    /// Why the connection ended, when it failed (the server's `FATAL` on a restart or a kill):
    /// reported instead of the "connection closed" of the requests that it cut short.
    failure: Option<Error>,
    /// Requests answered so far, each pipeline counting once: the round trips.
    round_trips: u64,
    /// Statements sent so far: each statement run with parameters, and each of a simple query's
    /// (`BEGIN; LOCK TABLE ...` counts two).
    statements: u64,
}

impl Driver {
    /// Runs `future` to its end on this thread, polling the connection first each time.
    fn block_on<T>(&mut self, future: impl Future<Output = T>) -> T {
        self.round_trips += 1;
        let mut future = pin!(future);
        let Self {
            runtime,
            connection,
            failure,
            ..
        } = self;
        runtime.block_on(poll_fn(|cx| {
            if let Some(open) = connection
                && let Poll::Ready(result) = open.as_mut().poll(cx)
            {
                *connection = None;
                *failure = result.err();
            }
            future.as_mut().poll(cx)
        }))
    }
}

impl Drop for Driver {
    /// Says goodbye (`Terminate`) and closes the socket, waiting a second at most. It runs
    /// after the client is dropped (the field before it in [`Client`]): without a client the
    /// connection sends `Terminate` and ends (prepared statements hold only weak references).
    fn drop(&mut self) {
        let Self {
            runtime,
            connection,
            ..
        } = self;
        if let Some(open) = connection {
            runtime.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(1), open.as_mut()).await;
            });
        }
    }
}

/// A PostgreSQL session whose calls block, with the method names and error type of the
/// `postgres` crate's `Client` (what [`crate::PostgresStore::with_client`] lends).
pub struct Client {
    /// Declared first, so dropped before the driver closes the connection.
    client: tokio_postgres::Client,
    driver: Driver,
}

impl Client {
    /// Logs in to `config` and runs `setup` (the session's settings), all within `limit`: past
    /// it the login is given up and its socket closed (the driver's `connect_timeout` bounds only
    /// the TCP connection, and a server or proxy that accepts and never answers would hold a
    /// login forever). `Err` is the reason: the login's error, or that the limit passed.
    pub(crate) fn connect(
        config: &Config,
        setup: &str,
        limit: Duration,
    ) -> std::result::Result<Self, LoginError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| LoginError::Start(err.to_string()))?;
        let login = runtime.block_on(async {
            let deadline = tokio::time::Instant::now() + limit;
            let (client, connection) = tokio::time::timeout_at(deadline, config.connect(NoTls))
                .await
                .map_err(|_| LoginError::Timeout)?
                .map_err(LoginError::Server)?;
            Ok::<_, LoginError>((client, connection, deadline))
        });
        let (client, connection, deadline) = login?;
        let mut session = Self {
            client,
            driver: Driver {
                runtime,
                connection: Some(Box::pin(connection)),
                failure: None,
                round_trips: 0,
                statements: 0,
            },
        };
        let settings = session.client.batch_execute(setup);
        let set = session
            .driver
            .block_on(async { tokio::time::timeout_at(deadline, settings).await });
        match set {
            Ok(Ok(())) => Ok(session),
            Ok(Err(err)) => Err(LoginError::Server(session.failure(err))),
            Err(_) => Err(LoginError::Timeout),
        }
    }

    /// `err`, or the reason the connection ended when `err` is only that it did.
    fn failure(&mut self, err: Error) -> Error {
        if err.is_closed() {
            self.driver.failure.take().unwrap_or(err)
        } else {
            err
        }
    }

    /// Whether the session ended (server gone, killed, restarted): it cannot be used again.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed() || self.driver.connection.is_none()
    }

    /// The requests answered on this session so far, a pipeline counting once.
    pub(crate) fn round_trips(&self) -> u64 {
        self.driver.round_trips
    }

    /// The statements sent on this session so far (see [`Driver`]'s count).
    pub(crate) fn statements(&self) -> u64 {
        self.driver.statements
    }

    /// Counts `n` statements run with parameters and those of the simple query `batch`.
    fn sent(&mut self, n: usize, batch: &str) {
        let simple = batch.split(';').filter(|s| !s.trim().is_empty()).count();
        self.driver.statements += u64::try_from(n + simple).unwrap_or(u64::MAX);
    }

    /// Runs `query`, one or more statements separated by semicolons, without parameters.
    ///
    /// # Errors
    /// The server's, or the connection's.
    pub fn batch_execute(&mut self, query: &str) -> Result<(), Error> {
        self.sent(0, query);
        let out = self.driver.block_on(self.client.batch_execute(query));
        out.map_err(|err| self.failure(err))
    }

    /// Prepares `query` on this session.
    ///
    /// # Errors
    /// The server's, or the connection's.
    pub fn prepare(&mut self, query: &str) -> Result<Statement, Error> {
        let out = self.driver.block_on(self.client.prepare(query));
        out.map_err(|err| self.failure(err))
    }

    /// The rows of `statement` run with `params`.
    ///
    /// # Errors
    /// The server's, or the connection's.
    pub fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        self.sent(1, "");
        let out = self.driver.block_on(self.client.query(statement, params));
        out.map_err(|err| self.failure(err))
    }

    /// The one row of `statement` run with `params` (an error when it returns none or more).
    ///
    /// # Errors
    /// The server's, or the connection's, or a count of rows other than one.
    pub fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        self.sent(1, "");
        let out = self
            .driver
            .block_on(self.client.query_one(statement, params));
        out.map_err(|err| self.failure(err))
    }

    /// The row of `statement` run with `params`, if any (an error when more than one).
    ///
    /// # Errors
    /// The server's, or the connection's, or more than one row.
    pub fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        self.sent(1, "");
        let out = self
            .driver
            .block_on(self.client.query_opt(statement, params));
        out.map_err(|err| self.failure(err))
    }

    /// Runs `statement` with `params`; the number of rows it changed.
    ///
    /// # Errors
    /// The server's, or the connection's.
    pub fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        self.sent(1, "");
        let out = self.driver.block_on(self.client.execute(statement, params));
        out.map_err(|err| self.failure(err))
    }

    /// Runs the simple query `batch` and then each statement with its parameters, in order, all
    /// sent together in one round trip (each is sent before the previous one is answered): every
    /// outcome. The server runs them in order, each to its end; a failed `batch` does not stop
    /// the statements (inside a transaction that the failure aborted, they fail too).
    pub(crate) fn batch_then_query_all(
        &mut self,
        batch: &str,
        statements: &[(&Statement, &[&(dyn ToSql + Sync)])],
    ) -> (Result<(), Error>, Vec<Rows>) {
        self.sent(statements.len(), batch);
        let client = &self.client;
        let queries = join_all(
            statements
                .iter()
                .map(|(statement, params)| client.query(*statement, params)),
        );
        let (a, b) = self
            .driver
            .block_on(join(client.batch_execute(batch), queries));
        (
            a.map_err(|e| self.failure(e)),
            b.into_iter()
                .map(|result| result.map_err(|e| self.failure(e)))
                .collect(),
        )
    }

    /// Runs each statement with its parameters, in order, all sent in one round trip: their
    /// rows, or errors (a statement runs whether or not the previous one failed; inside a
    /// transaction that a failure aborted, the later ones fail too).
    pub(crate) fn query_all(
        &mut self,
        statements: &[(&Statement, &[&(dyn ToSql + Sync)])],
    ) -> Vec<Result<Vec<Row>, Error>> {
        self.sent(statements.len(), "");
        let client = &self.client;
        let pipeline = join_all(
            statements
                .iter()
                .map(|(statement, params)| client.query(*statement, params)),
        );
        let out = self.driver.block_on(pipeline);
        out.into_iter()
            .map(|result| result.map_err(|e| self.failure(e)))
            .collect()
    }

    /// Runs the simple query `begin`, then `statement` with `params`, then the simple query
    /// `end`, all sent together in one round trip (a whole transaction: see
    /// [`Client::batch_then_query_all`] for how a failure goes on): the three outcomes.
    pub(crate) fn batch_query_batch(
        &mut self,
        begin: &str,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        end: &str,
    ) -> (Result<(), Error>, Rows, Result<(), Error>) {
        self.sent(1, begin);
        self.sent(0, end);
        let client = &self.client;
        let pipeline = join(
            client.batch_execute(begin),
            join(client.query(statement, params), client.batch_execute(end)),
        );
        let (a, (b, c)) = self.driver.block_on(pipeline);
        (
            a.map_err(|e| self.failure(e)),
            b.map_err(|e| self.failure(e)),
            c.map_err(|e| self.failure(e)),
        )
    }

    /// Runs `statement` with `params` and then the simple query `batch`, in one round trip: both
    /// outcomes (see [`Client::batch_then_query_all`]).
    pub(crate) fn query_then_batch(
        &mut self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        batch: &str,
    ) -> (Result<Vec<Row>, Error>, Result<(), Error>) {
        self.sent(1, batch);
        let pipeline = join(
            self.client.query(statement, params),
            self.client.batch_execute(batch),
        );
        let (a, b) = self.driver.block_on(pipeline);
        (
            a.map_err(|e| self.failure(e)),
            b.map_err(|e| self.failure(e)),
        )
    }
}

/// Why a login failed.
#[derive(Debug)]
pub enum LoginError {
    /// No runtime could be started (the text says why).
    Start(String),
    /// The server refused or the connection failed.
    Server(Error),
    /// The limit passed first.
    Timeout,
}
