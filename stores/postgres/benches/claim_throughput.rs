//! Benchmark, not a test: claim+succeed messages per second with 1, 4 and 16 workers on
//! PostgreSQL, beside SQLite on the same machine in the same run.
//!
//! Workers are threads, each with its own connection (a store with one session for PostgreSQL,
//! its own `rusqlite::Connection` for SQLite): to the database that is what processes are. Each
//! round enqueues `MESSAGES` messages (not timed), then the workers claim and ack until none is
//! left; a round's figure is messages / wall time. Fresh schema or file per round; one warm-up
//! round per row is not counted.
//!
//! SQLite is measured with the raw rusqlite loop below (the SQLite store lives in the Python
//! binding, which depends on this crate): the same transactions the store runs (claim: reap
//! expired leases, take the first due message in FIFO order, write it; ack: read, write), WAL,
//! `synchronous = FULL`, on a file in the temp dir. The stores themselves, through the Python
//! package with worker processes: `bindings-python/benches/postgres_throughput.py`.
//! PostgreSQL runs with `fsync` and `synchronous_commit` on (`make bench-postgres` starts its
//! cluster with `scripts/pg.sh run --durable`), so both make each commit durable.
//!
//! Run: `make bench-postgres` (or `scripts/pg.sh run --durable cargo bench -p deadletter-postgres`).

use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use deadletter::{Arg, Backoff, Engine, Item, Limits, Millis, Moment};
use deadletter_postgres::{Options, PostgresStore};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

const MESSAGES: usize = 2_000;
const ROUNDS: usize = 5;
const WORKERS: [usize; 3] = [1, 4, 16];

fn now() -> Millis {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    Millis::try_from(since.as_millis()).expect("fits")
}

/// Runs `round` once to warm up (a new cluster creates its WAL files as it first fills them),
/// then `ROUNDS` times; (min, median, max) of its messages per second.
fn measure(mut round: impl FnMut() -> Duration) -> (f64, f64, f64) {
    round();
    #[allow(clippy::cast_precision_loss)] // a few thousand messages
    let mut rates: Vec<f64> = (0..ROUNDS)
        .map(|_| MESSAGES as f64 / round().as_secs_f64())
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[0], rates[ROUNDS / 2], rates[ROUNDS - 1])
}

/// One PostgreSQL round on a fresh schema: the workers' wall time.
fn postgres_round(url: &str, workers: usize, round: usize) -> Duration {
    let schema = format!("bench_{}_{workers}_{round}", std::process::id());
    let open = |max_connections| {
        let options = Options {
            schema: schema.clone(),
            max_connections,
            ..Options::default()
        };
        PostgresStore::open(url, &options).expect("open")
    };
    let producer = Engine::new(open(1), Limits::default());
    let items = vec![
        Item {
            payload: Arg::Str("{\"to\": \"alice@example.com\"}"),
            ..Item::default()
        };
        1000
    ];
    for _ in 0..MESSAGES / 1000 {
        pollster::block_on(producer.enqueue_many("bench".into(), &items, now())).expect("enqueue");
    }
    let engines: Vec<_> = (0..workers)
        .map(|_| Engine::new(open(1), Limits::default()))
        .collect();
    let barrier = Barrier::new(workers + 1);
    let elapsed = std::thread::scope(|scope| {
        for engine in &engines {
            let barrier = &barrier;
            scope.spawn(move || {
                let policy = Backoff::default();
                barrier.wait();
                loop {
                    let at = Moment {
                        policy: &policy,
                        sample: 0.0,
                        now: now(),
                    };
                    let token = || uuid::Uuid::new_v4().to_string();
                    let claimed =
                        pollster::block_on(engine.claim("bench".into(), Arg::Null, token, at))
                            .expect("claim");
                    let Some(m) = claimed.value else { break };
                    let token = m.lease_token.as_deref().unwrap_or_default();
                    pollster::block_on(engine.succeed(
                        "bench".into(),
                        m.id.into(),
                        token.into(),
                        now(),
                    ))
                    .expect("succeed");
                }
            });
        }
        barrier.wait();
        let started = Instant::now();
        // The scope joins every worker before it returns.
        started
    })
    .elapsed();
    let stats = pollster::block_on(producer.stats("bench".into(), now())).expect("stats");
    assert_eq!(stats.succeeded, MESSAGES as u64, "every message acked once");
    producer
        .store()
        .with_client(|client| {
            client
                .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
                .map_err(deadletter::Error::store)
        })
        .expect("drop schema");
    elapsed
}

/// The SQLite reference: the claim and ack transactions of the SQLite store, written directly.
const SQLITE_SCHEMA: &str = "
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, payload TEXT NOT NULL,
    status TEXT NOT NULL, retry_count INTEGER NOT NULL, max_retries INTEGER NOT NULL,
    retry_after INTEGER, last_error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    lease_token TEXT, lease_expires_at INTEGER
) STRICT;
CREATE INDEX messages_by_queue_status_created ON messages (queue, status, created_at, id, retry_after);
CREATE INDEX messages_by_queue_status_lease ON messages (queue, status, lease_expires_at);
CREATE INDEX messages_by_queue_status_id ON messages (queue, status, id);
CREATE INDEX messages_by_queue_id ON messages (queue, id);
";

fn sqlite_open(path: &PathBuf) -> Connection {
    let conn = Connection::open(path).expect("open");
    conn.busy_timeout(Duration::from_secs(30)).expect("busy");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("sync");
    conn
}

fn sqlite_worker(conn: &mut Connection) {
    loop {
        let now = now();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let expired: Vec<i64> = {
            let mut s = tx
                .prepare_cached(
                    "SELECT id FROM messages WHERE queue = ?1 AND status = 'processing' \
                     AND lease_expires_at <= ?2 ORDER BY lease_expires_at, id",
                )
                .expect("prepare");
            s.query_map(params!["bench", now], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        };
        assert!(expired.is_empty(), "no lease runs out in this benchmark");
        let next: Option<(i64, String)> = tx
            .prepare_cached(
                "SELECT id, payload FROM messages WHERE queue = ?1 AND status = 'pending' \
                 AND (retry_after IS NULL OR retry_after <= ?2) ORDER BY created_at, id LIMIT 1",
            )
            .expect("prepare")
            .query_row(params!["bench", now], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .expect("claim");
        let Some((id, _payload)) = next else { break };
        let token = uuid::Uuid::new_v4().to_string();
        tx.prepare_cached(
            "UPDATE messages SET status = 'processing', lease_token = ?2, \
             lease_expires_at = ?3, retry_after = NULL, updated_at = ?4 WHERE id = ?1",
        )
        .expect("prepare")
        .execute(params![id, token, now + 30_000, now])
        .expect("take");
        tx.commit().expect("commit");

        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let held: String = tx
            .prepare_cached("SELECT lease_token FROM messages WHERE id = ?1 AND queue = ?2")
            .expect("prepare")
            .query_row(params![id, "bench"], |r| r.get(0))
            .expect("read");
        assert_eq!(held, token);
        tx.prepare_cached(
            "UPDATE messages SET status = 'succeeded', lease_token = NULL, \
             lease_expires_at = NULL, updated_at = ?2 WHERE id = ?1",
        )
        .expect("prepare")
        .execute(params![id, now])
        .expect("ack");
        tx.commit().expect("commit");
    }
}

/// One SQLite round on a fresh file: the workers' wall time.
fn sqlite_round(workers: usize, round: usize) -> Duration {
    let path = std::env::temp_dir().join(format!(
        "deadletter-bench-{}-{workers}-{round}.db",
        std::process::id()
    ));
    let mut producer = sqlite_open(&path);
    producer.execute_batch(SQLITE_SCHEMA).expect("schema");
    let tx = producer.transaction().expect("begin");
    let t = now();
    for _ in 0..MESSAGES {
        tx.execute(
            "INSERT INTO messages (queue, payload, status, retry_count, max_retries, created_at, \
             updated_at) VALUES ('bench', '{\"to\": \"alice@example.com\"}', 'pending', 0, 3, ?1, ?1)",
            params![t],
        )
        .expect("insert");
    }
    tx.commit().expect("commit");
    let mut conns: Vec<Connection> = (0..workers).map(|_| sqlite_open(&path)).collect();
    let barrier = Barrier::new(workers + 1);
    let elapsed = std::thread::scope(|scope| {
        for conn in &mut conns {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                sqlite_worker(conn);
            });
        }
        barrier.wait();
        Instant::now()
    })
    .elapsed();
    let acked: i64 = producer
        .query_row(
            "SELECT count(*) FROM messages WHERE status = 'succeeded'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(
        usize::try_from(acked),
        Ok(MESSAGES),
        "every message acked once"
    );
    drop(conns);
    drop(producer);
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    elapsed
}

fn main() {
    let url = std::env::var("DEADLETTER_POSTGRES_URL")
        .expect("DEADLETTER_POSTGRES_URL: run `make bench-postgres`");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let mut setting = |name: &str| -> String {
        client
            .query_one(&format!("SHOW {name}"), &[])
            .expect("show")
            .get(0)
    };
    let server = setting("server_version");
    let durable = format!(
        "fsync={}, synchronous_commit={}",
        setting("fsync"),
        setting("synchronous_commit")
    );
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "claim+succeed messages/s: {ROUNDS} rounds of {MESSAGES} messages per row (after one warm-up), min / median / max; \
         workers are threads with their own connection; {cores} cores"
    );
    println!(
        "PostgreSQL {server} ({durable}) vs SQLite {} (raw rusqlite loop, WAL, synchronous=FULL)",
        rusqlite::version()
    );
    println!(
        "{:<12} {:>7} {:>9} {:>9} {:>9}",
        "store", "workers", "min", "median", "max"
    );
    let mut medians = Vec::new();
    for workers in WORKERS {
        let mut round = 0;
        let pg = measure(|| {
            round += 1;
            postgres_round(&url, workers, round)
        });
        let mut round = 0;
        let lite = measure(|| {
            round += 1;
            sqlite_round(workers, round)
        });
        for (name, (min, median, max)) in [("postgres", pg), ("sqlite", lite)] {
            println!("{name:<12} {workers:>7} {min:>9.0} {median:>9.0} {max:>9.0}");
        }
        medians.push((workers, pg.1, lite.1));
    }
    for (workers, pg, lite) in medians {
        println!(
            "{workers:>2} workers: PostgreSQL at {:.2}x SQLite's median",
            pg / lite
        );
    }
}
