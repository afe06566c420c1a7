//! The hand-written PostgreSQL queue that `claim_throughput` measures deadletter against: a table
//! of `id` (identity primary key), `payload`, `status`, `lease_until` and one index besides its
//! key (the ready messages by id); `INSERT` to enqueue, claim by
//! `UPDATE ... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING`, ack by
//! `UPDATE`, each statement its own transaction; and the same table decided in the client
//! ([`claim_and_ack_in_client`]). (A folder with `mod.rs`, so that Cargo does not take it for a
//! bench target of its own.)

use super::{MESSAGES, PAYLOAD, Schema, now, share, timed};
use futures_util::future::join;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

pub fn create(schema: &Schema) -> postgres::Client {
    let mut client = schema.client();
    let s = schema.quoted();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {s}; \
             CREATE TABLE {s}.jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
               payload text NOT NULL, status smallint NOT NULL, lease_until bigint); \
             CREATE INDEX jobs_ready ON {s}.jobs (id) WHERE status = 0"
        ))
        .expect("create the reference's table");
    client
}

pub fn insert_sql(schema: &Schema) -> String {
    format!(
        "INSERT INTO {}.jobs (payload, status) VALUES ($1, 0)",
        schema.quoted()
    )
}

pub fn claim_sql(schema: &Schema) -> String {
    let s = schema.quoted();
    format!(
        "UPDATE {s}.jobs SET status = 1, lease_until = $1 WHERE id = \
         (SELECT id FROM {s}.jobs WHERE status = 0 ORDER BY id \
          FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, payload"
    )
}

pub fn ack_sql(schema: &Schema) -> String {
    format!(
        "UPDATE {}.jobs SET status = 2 WHERE id = $1",
        schema.quoted()
    )
}

/// The generic plan of the claim, with 10 pending messages added to the table.
pub fn plan(schema: &Schema, client: &mut postgres::Client) -> Vec<String> {
    let s = schema.quoted();
    client
        .batch_execute(&format!(
            "INSERT INTO {s}.jobs (payload, status) SELECT 'x', 0 FROM generate_series(1, 10); \
             ANALYZE {s}.jobs; SET plan_cache_mode = force_generic_plan; \
             PREPARE reference_claim(bigint) AS {}",
            claim_sql(schema)
        ))
        .expect("prepare");
    let rows = client
        .query("EXPLAIN (COSTS OFF) EXECUTE reference_claim(0)", &[])
        .expect("explain");
    rows.iter().map(|row| row.get(0)).collect()
}

pub fn enqueue(schema: &Schema, workers: usize) -> Duration {
    drop(create(schema));
    let clients: Vec<_> = (0..workers)
        .map(|_| std::sync::Mutex::new(schema.client()))
        .collect();
    let sql = insert_sql(schema);
    timed(workers, |worker| {
        let mut client = clients[worker].lock().expect("one thread per client");
        let insert = client.prepare(&sql).expect("prepare");
        for _ in 0..share(worker, workers) {
            client.execute(&insert, &[&PAYLOAD]).expect("insert");
        }
    })
}

/// Fills the queue with `MESSAGES` messages in one statement (not timed).
pub fn fill(schema: &Schema) -> postgres::Client {
    let mut client = create(schema);
    client
        .execute(
            &format!(
                "INSERT INTO {}.jobs (payload, status) \
                 SELECT $1, 0 FROM generate_series(1, {MESSAGES})",
                schema.quoted()
            ),
            &[&PAYLOAD],
        )
        .expect("fill");
    client
}

/// Claim+ack decided in the client, on the reference's table and index: what any queue whose
/// rules run in the client (read the row, decide, write) does at least. A claim is two round
/// trips, `BEGIN` with `SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1`, then the `UPDATE` with
/// `COMMIT`; an ack the same, its row read `FOR UPDATE` (the client checks that it is still
/// leased) then updated. Sent as deadletter's store sends them: prepared statements on
/// `tokio-postgres`, two requests written before the first is answered.
pub fn claim_and_ack_in_client(schema: &Schema, workers: usize) -> Duration {
    drop(fill(schema));
    drain_in_client(schema, workers)
}

/// The timed part of [`claim_and_ack_in_client`], on a filled table.
pub fn drain_in_client(schema: &Schema, workers: usize) -> Duration {
    let s = schema.quoted();
    let sql = [
        format!(
            "SELECT id, payload FROM {s}.jobs WHERE status = 0 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1"
        ),
        format!("UPDATE {s}.jobs SET status = 1, lease_until = $2 WHERE id = $1"),
        format!("SELECT status, lease_until FROM {s}.jobs WHERE id = $1 FOR UPDATE"),
        format!("UPDATE {s}.jobs SET status = 2 WHERE id = $1"),
    ];
    let sessions: Vec<_> = (0..workers)
        .map(|_| std::sync::Mutex::new(Pipelined::connect(&schema.url)))
        .collect();
    let elapsed = timed(workers, |worker| {
        let session = sessions[worker].lock().expect("one thread per session");
        let [take, lease, read, ack] = sql.each_ref().map(|sql| session.prepare(sql));
        loop {
            let rows = session.begin_with(&take, &[]);
            let Some(row) = rows.first() else {
                session
                    .run(session.client.batch_execute("COMMIT"))
                    .expect("commit");
                break;
            };
            let id: i64 = row.get(0);
            let lease_until = now().expect("clock") + 30_000;
            session.then_commit(&lease, &[&id, &lease_until]);
            let rows = session.begin_with(&read, &[&id]);
            let (status, until): (i16, Option<i64>) = (rows[0].get(0), rows[0].get(1));
            assert!(
                status == 1 && until >= Some(now().expect("clock")),
                "still leased"
            );
            session.then_commit(&ack, &[&id]);
        }
    });
    assert_eq!(acked(schema), MESSAGES, "every message acked once");
    elapsed
}

/// A `tokio-postgres` session driven on the caller's thread, that sends two requests before the
/// first is answered, its connection polled inline while it waits (as `deadletter_postgres`'s
/// sessions do).
struct Pipelined {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    connection: std::cell::RefCell<Connection>,
}

type Connection = std::pin::Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send>>;

type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

impl Pipelined {
    fn connect(url: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (client, connection) = runtime
            .block_on(tokio_postgres::connect(url, tokio_postgres::NoTls))
            .expect("connect");
        let connection = std::cell::RefCell::new(Box::pin(connection) as Connection);
        Self {
            runtime,
            client,
            connection,
        }
    }

    /// `future`'s output, the connection polled first at each wake.
    fn run<T>(&self, future: impl Future<Output = T>) -> T {
        let mut future = pin!(future);
        let mut connection = self.connection.borrow_mut();
        self.runtime.block_on(poll_fn(|cx| {
            if let Poll::Ready(Err(err)) = connection.as_mut().poll(cx) {
                panic!("connection: {err}");
            }
            future.as_mut().poll(cx)
        }))
    }

    fn prepare(&self, sql: &str) -> tokio_postgres::Statement {
        self.run(self.client.prepare(sql)).expect("prepare")
    }

    /// `BEGIN` and `statement`, in one round trip: its rows.
    fn begin_with(
        &self,
        statement: &tokio_postgres::Statement,
        params: Params,
    ) -> Vec<tokio_postgres::Row> {
        let (begun, rows) = self.run(join(
            self.client.batch_execute("BEGIN"),
            self.client.query(statement, params),
        ));
        begun.expect("begin");
        rows.expect("read")
    }

    /// `statement` and `COMMIT`, in one round trip.
    fn then_commit(&self, statement: &tokio_postgres::Statement, params: Params) {
        let (updated, committed) = self.run(join(
            self.client.execute(statement, params),
            self.client.batch_execute("COMMIT"),
        ));
        assert_eq!(updated.expect("update"), 1, "one row");
        committed.expect("commit");
    }
}

/// How many messages are acked.
fn acked(schema: &Schema) -> usize {
    let acked: i64 = schema
        .client()
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.jobs WHERE status = 2",
                schema.quoted()
            ),
            &[],
        )
        .expect("count")
        .get(0);
    usize::try_from(acked).expect("a count")
}

pub fn claim_and_ack(schema: &Schema, workers: usize) -> Duration {
    drop(fill(schema));
    drain(schema, workers)
}

/// The timed part of [`claim_and_ack`], on a filled table.
pub fn drain(schema: &Schema, workers: usize) -> Duration {
    let clients: Vec<_> = (0..workers)
        .map(|_| std::sync::Mutex::new(schema.client()))
        .collect();
    let (claim, ack) = (claim_sql(schema), ack_sql(schema));
    let elapsed = timed(workers, |worker| {
        let mut client = clients[worker].lock().expect("one thread per client");
        let (claim, ack) = (
            client.prepare(&claim).expect("prepare"),
            client.prepare(&ack).expect("prepare"),
        );
        loop {
            let lease_until = now().expect("clock") + 30_000;
            let Some(row) = client.query_opt(&claim, &[&lease_until]).expect("claim") else {
                break;
            };
            let id: i64 = row.get(0);
            client.execute(&ack, &[&id]).expect("ack");
        }
    });
    assert_eq!(acked(schema), MESSAGES, "every message acked once");
    elapsed
}
