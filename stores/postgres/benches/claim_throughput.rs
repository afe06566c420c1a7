//! Benchmark, not a test: claim+succeed messages per second with 1, 4 and 16 workers on
//! PostgreSQL, beside SQLite on the same machine in the same run.
//!
//! Workers are threads, each with its own store and connection (a store with one session for
//! PostgreSQL, a `deadletter_sqlite::SqliteStore` on the file for SQLite): to the database that
//! is what processes are. Each round enqueues `MESSAGES` messages (not timed), then the workers
//! claim and ack through the engine until none is left; a round's figure is messages / wall
//! time. Fresh schema or file per round; one warm-up round per row is not counted.
//!
//! Both stores make each commit durable: SQLite with WAL and `synchronous = FULL`
//! (`Durability::Full`), on a file in the temp dir; PostgreSQL with `fsync` and
//! `synchronous_commit` on (`make bench-postgres` starts its cluster with
//! `scripts/pg.sh run --durable`). The same stores through the Python package with worker
//! processes: `bindings-python/benches/postgres_throughput.py`.
//!
//! Run: `make bench-postgres` (or `scripts/pg.sh run --durable cargo bench -p deadletter-postgres`).

use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use deadletter::{Arg, Call, Engine, Item, Limits, Millis, Result, Store};
use deadletter_postgres::{Options, PostgresStore};
use deadletter_sqlite::{Durability, SqliteStore};

const MESSAGES: usize = 2_000;
const ROUNDS: usize = 5;
const WORKERS: [usize; 3] = [1, 4, 16];

/// The system clock, UTC ms: the engine's clock.
#[allow(clippy::unnecessary_wraps)] // the engine's clock may fail
fn now() -> Result<Millis> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    Ok(Millis::try_from(since.as_millis()).expect("fits"))
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

/// One round: `MESSAGES` messages enqueued by `producer`, then claimed and acked by the workers,
/// each on its own store from `open`, until none is left; the workers' wall time.
fn claim_and_ack<S: Store + Sync>(
    producer: &Engine<S>,
    workers: usize,
    open: impl Fn() -> S,
) -> Duration {
    let items = vec![
        Item {
            payload: Arg::Str("{\"to\": \"alice@example.com\"}"),
            ..Item::default()
        };
        1000
    ];
    for _ in 0..MESSAGES / 1000 {
        pollster::block_on(producer.enqueue_many("bench".into(), &items, &now)).expect("enqueue");
    }
    let engines: Vec<_> = (0..workers)
        .map(|_| Engine::new(open(), Limits::default()))
        .collect();
    let barrier = Barrier::new(workers + 1);
    let elapsed = std::thread::scope(|scope| {
        for engine in &engines {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                let at = Call {
                    clock: &now,
                    backoff: None,
                    sample: 0.0,
                };
                loop {
                    let token = || uuid::Uuid::new_v4().to_string();
                    let claimed =
                        pollster::block_on(engine.claim("bench".into(), Arg::Null, token, &at))
                            .expect("claim");
                    let Some(m) = claimed.value else { break };
                    let token = m.lease_token.as_deref().unwrap_or_default();
                    pollster::block_on(engine.succeed(
                        "bench".into(),
                        m.id.into(),
                        token.into(),
                        &now,
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
    let stats = pollster::block_on(producer.stats("bench".into(), &now)).expect("stats");
    assert_eq!(stats.succeeded, MESSAGES as u64, "every message acked once");
    elapsed
}

/// One PostgreSQL round on a fresh schema, dropped afterwards.
fn postgres_round(url: &str, workers: usize, round_number: usize) -> Duration {
    let schema = format!("bench_{}_{workers}_{round_number}", std::process::id());
    let open = || {
        let options = Options {
            schema: schema.clone(),
            max_connections: 1,
            ..Options::default()
        };
        PostgresStore::open(url, &options).expect("open")
    };
    let producer = Engine::new(open(), Limits::default());
    let elapsed = claim_and_ack(&producer, workers, open);
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

/// One SQLite round on a fresh file, removed afterwards.
fn sqlite_round(workers: usize, round_number: usize) -> Duration {
    let path: PathBuf = std::env::temp_dir().join(format!(
        "deadletter-bench-{}-{workers}-{round_number}.db",
        std::process::id()
    ));
    let open = || SqliteStore::open(&path, Durability::Full).expect("open");
    let producer = Engine::new(open(), Limits::default());
    let elapsed = claim_and_ack(&producer, workers, open);
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
        "PostgreSQL {server} ({durable}) vs SQLite {} (deadletter-sqlite, WAL, synchronous=FULL)",
        deadletter_sqlite::rusqlite::version()
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
