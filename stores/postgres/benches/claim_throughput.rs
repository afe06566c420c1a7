//! Benchmark, not a test: messages per second on PostgreSQL with 1, 4 and 16 workers, against
//! hand-written reference queues on the same server in the same run (issue 24), and beside SQLite.
//!
//! Two measurements, each in rounds that interleave the contenders (one warm-up round first, not
//! counted; a fresh schema or file per round):
//! - **enqueue**: `MESSAGES` single enqueues, shared by the workers (each enqueues its part, one
//!   message per transaction);
//! - **claim+ack**: `MESSAGES` messages enqueued (not timed), then the workers claim and ack one
//!   message at a time until none is left.
//!
//! A round's figure is messages / wall time. Workers are threads, each with its own connection
//! (a store with one session for PostgreSQL, a `SqliteStore` on the file for SQLite): to the
//! database that is what processes are, one server process per connection. The same stores
//! through the Python package with worker processes: `bindings-python/benches/postgres_throughput.py`.
//!
//! The references (`reference/mod.rs`) share a table of `id` (identity primary key), `payload`,
//! `status`, `lease_until` with one index besides its key (the ready messages by id):
//! - **reference**, the least a PostgreSQL queue with leases does: `INSERT` to enqueue, claim by
//!   `UPDATE ... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING`, ack by
//!   `UPDATE`, each statement its own transaction: 1 round trip each;
//! - **decided in client** (claim+ack only): the least a queue whose rules run in the client
//!   (read the row, decide, write) does, as deadletter's do in its core: `BEGIN` with `SELECT ...
//!   FOR UPDATE SKIP LOCKED LIMIT 1`, then the `UPDATE` with `COMMIT`; the ack the same (its row
//!   read `FOR UPDATE`, then updated): 2 round trips each, sent as deadletter's store sends them.
//!
//! So deadletter / reference = (deadletter / decided in client) x (decided in client /
//! reference): the second factor is what the design costs (the round trips), the first
//! deadletter's own work per message (its statements, its table's indexes, its client). The
//! goal is at least 0.8x the reference at every worker count. The ratios printed are each
//! round's (the contenders of a round run one after the other, so they share its load), min /
//! median / max.
//!
//! Before the timed rounds: the round trips per call (counted by the store); then for each
//! PostgreSQL contender, per claim+ack with one worker, the statements and the server's time
//! executing them (`pg_stat_statements`, statement by statement), the CPU time of the server's
//! processes and of this one, the times the draining thread blocked waiting for an answer
//! (its wake-ups: what most of the client's CPU follows, and unlike CPU times a count that does
//! not depend on the machine's load), and the wall time. After them: the WAL bytes per message and the
//! plans of deadletter's statements and of the reference's claim (index scans only).
//!
//! Both stores make each commit durable: SQLite with WAL and `synchronous = FULL`
//! (`Durability::Full`), on a file in the temp dir; PostgreSQL with `fsync` and
//! `synchronous_commit` on (`make bench-postgres` starts its cluster with
//! `scripts/pg.sh run --durable`, which loads `pg_stat_statements` with tracking off: this turns
//! it on for its counted part only).
//!
//! Run: `make bench-postgres` (or `scripts/pg.sh run --durable cargo bench -p deadletter-postgres
//! --bench claim_throughput`; `-- counted` for what is counted only, nothing timed; `-- enqueue`
//! or `-- claim+ack` for that measurement only).

use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use deadletter::{Arg, Call, Engine, Item, Limits, Millis, Result, Store};
use deadletter_postgres::{CLAIM_BEGIN, Options, PostgresStore, quote_identifier};
use deadletter_sqlite::{Durability, SqliteStore};

const MESSAGES: usize = 2_000;
const ROUNDS: usize = 5;
const WORKERS: [usize; 3] = [1, 4, 16];
const PAYLOAD: &str = "{\"to\": \"alice@example.com\"}";

/// The system clock, UTC ms: the engine's clock.
#[allow(clippy::unnecessary_wraps)] // the engine's clock may fail
fn now() -> Result<Millis> {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    Ok(Millis::try_from(since.as_millis()).expect("fits"))
}

/// Runs `work(worker)` in `workers` threads started together; their wall time.
fn timed(workers: usize, work: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(workers + 1);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (barrier, work) = (&barrier, &work);
            scope.spawn(move || {
                barrier.wait();
                let from = waits();
                work(worker);
                WORKERS_WAITED.fetch_add(waits().saturating_sub(from), Ordering::Relaxed);
            });
        }
        barrier.wait();
        // The scope joins every worker before it returns.
        Instant::now()
    })
    .elapsed()
}

/// The times the workers of [`timed`] that ended so far blocked ([`waits`]).
static WORKERS_WAITED: AtomicU64 = AtomicU64::new(0);

/// The times the calling thread blocked so far (its voluntary context switches, from
/// `/proc/thread-self/status`; 0 where there is none): a worker blocks when it waits for an
/// answer that has not arrived, so each wake-up the server's answers cause counts once.
/// Unlike CPU times, it does not depend on the machine's load.
fn waits() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// How many of `MESSAGES` worker `worker` of `workers` enqueues.
fn share(worker: usize, workers: usize) -> usize {
    MESSAGES / workers + usize::from(worker < MESSAGES % workers)
}

/// A PostgreSQL schema for one round, dropped when the round is over.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn new(url: &str, label: &str, workers: usize, round: usize) -> Self {
        let name = format!("bench_{}_{label}_{workers}_{round}", std::process::id());
        Self {
            url: url.to_owned(),
            name,
        }
    }

    fn quoted(&self) -> String {
        quote_identifier(&self.name).expect("a valid schema name")
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect")
    }

    /// deadletter's store on this schema, with one session.
    fn store(&self) -> PostgresStore {
        let options = Options {
            schema: self.name.clone(),
            max_connections: 1,
            ..Options::default()
        };
        PostgresStore::open(&self.url, &options).expect("open")
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.quoted());
        self.client().batch_execute(&drop).expect("drop schema");
    }
}

/// The bytes of WAL the server wrote since `from` (an LSN read with [`wal_position`]).
fn wal_since(client: &mut postgres::Client, from: &str) -> f64 {
    let bytes: f64 = client
        .query_one(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)::float8",
            &[&from],
        )
        .expect("wal")
        .get(0);
    bytes
}

fn wal_position(client: &mut postgres::Client) -> String {
    client
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .expect("wal")
        .get(0)
}

/// The hand-written reference queue (see the module's documentation).
mod reference;

fn item() -> Item<'static> {
    Item {
        payload: Arg::Str(PAYLOAD),
        ..Item::default()
    }
}

/// `MESSAGES` single enqueues shared by the workers, each on its own store from `open`.
fn enqueue<S: Store + Sync>(workers: usize, open: impl Fn() -> S) -> Duration {
    let engines: Vec<_> = (0..workers)
        .map(|_| Engine::new(open(), Limits::default()))
        .collect();
    let item = item();
    timed(workers, |worker| {
        for _ in 0..share(worker, workers) {
            pollster::block_on(engines[worker].enqueue("bench".into(), &item, &now))
                .expect("enqueue");
        }
    })
}

/// Fills the queue with `MESSAGES` messages, in batches (not timed).
fn fill<S: Store>(producer: &Engine<S>) {
    let items = vec![item(); 1000];
    for _ in 0..MESSAGES / 1000 {
        pollster::block_on(producer.enqueue_many("bench".into(), &items, &now)).expect("enqueue");
    }
}

/// Claims and acks one message at a time until none is left.
fn drain<S: Store>(engine: &Engine<S>) {
    let at = Call {
        clock: &now,
        backoff: None,
        sample: 0.0,
    };
    loop {
        let token = || uuid::Uuid::new_v4().to_string();
        let claimed =
            pollster::block_on(engine.claim("bench".into(), Arg::Null, token, &at)).expect("claim");
        let Some(m) = claimed.value else { break };
        let token = m.lease_token.as_deref().unwrap_or_default();
        pollster::block_on(engine.succeed("bench".into(), m.id.into(), token.into(), &now))
            .expect("succeed");
    }
}

/// `MESSAGES` messages enqueued by `producer` (not timed), then claimed and acked by the
/// workers, each on its own store from `open`, until none is left; the workers' wall time.
fn claim_and_ack<S: Store + Sync>(
    producer: &Engine<S>,
    workers: usize,
    open: impl Fn() -> S,
) -> Duration {
    fill(producer);
    let engines: Vec<_> = (0..workers)
        .map(|_| Engine::new(open(), Limits::default()))
        .collect();
    let elapsed = timed(workers, |worker| drain(&engines[worker]));
    let stats = pollster::block_on(producer.stats("bench".into(), &now)).expect("stats");
    assert_eq!(stats.succeeded, MESSAGES as u64, "every message acked once");
    elapsed
}

/// A SQLite file for one round, removed when the round is over.
struct SqliteFile(PathBuf);

impl SqliteFile {
    fn new(label: &str, workers: usize, round: usize) -> Self {
        Self(std::env::temp_dir().join(format!(
            "deadletter-bench-{}-{label}-{workers}-{round}.db",
            std::process::id()
        )))
    }

    fn open(&self) -> SqliteStore {
        SqliteStore::open(&self.0, Durability::Full).expect("open")
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut file = self.0.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }
}

/// A contender of one measurement: its name and one round (`workers`, round number) -> time.
type Contender<'a> = (&'static str, Box<dyn Fn(usize, usize) -> Duration + 'a>);

/// The contenders of `kind` ("enqueue" or "claim+ack"): deadletter on PostgreSQL, the
/// reference, the reference decided in the client (claim+ack only) and deadletter on SQLite.
fn contenders<'a>(url: &'a str, kind: &'static str) -> Vec<Contender<'a>> {
    let enqueueing = kind == "enqueue";
    let mut contenders: Vec<Contender<'a>> = vec![
        (
            DEADLETTER,
            Box::new(move |workers, round| {
                let schema = Schema::new(url, "dl", workers, round);
                if enqueueing {
                    drop(schema.store()); // the schema exists before the clock starts
                    enqueue(workers, || schema.store())
                } else {
                    let producer = Engine::new(schema.store(), Limits::default());
                    claim_and_ack(&producer, workers, || schema.store())
                }
            }),
        ),
        (
            REFERENCE,
            Box::new(move |workers, round| {
                let schema = Schema::new(url, "ref", workers, round);
                if enqueueing {
                    reference::enqueue(&schema, workers)
                } else {
                    reference::claim_and_ack(&schema, workers)
                }
            }),
        ),
    ];
    if !enqueueing {
        contenders.push((
            IN_CLIENT,
            Box::new(move |workers, round| {
                let schema = Schema::new(url, "cli", workers, round);
                reference::claim_and_ack_in_client(&schema, workers)
            }),
        ));
    }
    contenders.push((
        SQLITE,
        Box::new(move |workers, round| {
            let file = SqliteFile::new(kind, workers, round);
            drop(file.open());
            if enqueueing {
                enqueue(workers, || file.open())
            } else {
                let producer = Engine::new(file.open(), Limits::default());
                claim_and_ack(&producer, workers, || file.open())
            }
        }),
    ));
    contenders
}

const DEADLETTER: &str = "deadletter postgres";
const REFERENCE: &str = "reference";
const IN_CLIENT: &str = "decided in client";
const SQLITE: &str = "deadletter sqlite";

/// The ratios printed, numerator and denominator: each round's, paired (the contenders of a
/// round run one after the other, so they share the machine's load of that moment).
const RATIOS: [(&str, &str); 4] = [
    (DEADLETTER, REFERENCE),
    (DEADLETTER, IN_CLIENT),
    (IN_CLIENT, REFERENCE),
    (DEADLETTER, SQLITE),
];

/// (min, median, max) of `rates`.
fn spread(rates: &mut [f64]) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    (rates[0], rates[rates.len() / 2], rates[rates.len() - 1])
}

/// Measures `kind` for every worker count, rounds interleaved; prints each contender's
/// min / median / max, then the ratios of [`RATIOS`] (min / median / max of the rounds' ratios).
fn measure(url: &str, kind: &'static str) {
    println!(
        "{kind}: messages/s, {ROUNDS} rounds of {MESSAGES} messages (after one warm-up), min / median / max"
    );
    println!(
        "  {:<20} {:>7} {:>9} {:>9} {:>9}",
        "", "workers", "min", "median", "max"
    );
    let contenders = contenders(url, kind);
    let rounds = AtomicUsize::new(0);
    let mut ratios = Vec::new();
    for workers in WORKERS {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        for round in 0..=ROUNDS {
            for ((_, run), rates) in contenders.iter().zip(&mut rates) {
                let elapsed = run(workers, rounds.fetch_add(1, Ordering::Relaxed));
                if round > 0 {
                    #[allow(clippy::cast_precision_loss)] // a few thousand messages
                    rates.push(MESSAGES as f64 / elapsed.as_secs_f64());
                }
            }
        }
        let of = |name: &str| contenders.iter().position(|(n, _)| *n == name);
        for (a, b) in RATIOS {
            if let (Some(a), Some(b)) = (of(a), of(b)) {
                let mut each: Vec<f64> =
                    rates[a].iter().zip(&rates[b]).map(|(a, b)| a / b).collect();
                ratios.push((workers, contenders[a].0, contenders[b].0, spread(&mut each)));
            }
        }
        for ((name, _), rates) in contenders.iter().zip(&mut rates) {
            let (min, median, max) = spread(rates);
            println!("  {name:<20} {workers:>7} {min:>9.0} {median:>9.0} {max:>9.0}");
        }
    }
    println!(
        "  ratios, each round's (min / median / max); the goal is deadletter postgres / reference >= 0.8:"
    );
    for (workers, a, b, (min, median, max)) in ratios {
        println!(
            "  {workers:>2} workers: {:<40} {min:>5.2} {median:>5.2} {max:>5.2}",
            format!("{a} / {b}")
        );
    }
}

/// WAL bytes per message that each PostgreSQL contender writes, one worker: enqueue, then
/// claim+ack.
fn wal_per_message(url: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    #[allow(clippy::cast_precision_loss)]
    let per = |bytes: f64| bytes / MESSAGES as f64;
    println!("PostgreSQL WAL bytes per message (one worker; other sessions may add a little):");
    println!("  {:<20} {:>10} {:>10}", "", "enqueue", "claim+ack");
    let schema = Schema::new(url, "walr", 1, 0);
    let from = wal_position(&mut client);
    reference::enqueue(&schema, 1);
    let enqueued = per(wal_since(&mut client, &from));
    let reference_plan;
    let claim = {
        let schema = Schema::new(url, "walr", 1, 1);
        drop(reference::fill(&schema));
        let from = wal_position(&mut client);
        let mut worker = schema.client();
        let (claim, ack) = (
            worker
                .prepare(&reference::claim_sql(&schema))
                .expect("prepare"),
            worker
                .prepare(&reference::ack_sql(&schema))
                .expect("prepare"),
        );
        while let Some(row) = worker.query_opt(&claim, &[&0i64]).expect("claim") {
            let id: i64 = row.get(0);
            worker.execute(&ack, &[&id]).expect("ack");
        }
        let bytes = wal_since(&mut client, &from);
        reference_plan = reference::plan(&schema, &mut worker);
        per(bytes)
    };
    drop(schema);
    println!(
        "  {:<20} {enqueued:>10.0} {claim:>10.0}",
        "reference postgres"
    );
    let schema = Schema::new(url, "wald", 1, 0);
    drop(schema.store());
    let from = wal_position(&mut client);
    enqueue(1, || schema.store());
    let enqueued = per(wal_since(&mut client, &from));
    let schema = Schema::new(url, "wald", 1, 1);
    let producer = Engine::new(schema.store(), Limits::default());
    fill(&producer);
    let from = wal_position(&mut client);
    drain(&producer);
    let claim = per(wal_since(&mut client, &from));
    println!(
        "  {:<20} {enqueued:>10.0} {claim:>10.0}",
        "deadletter postgres"
    );
    plans(&schema, &producer);
    println!("  the reference's claim (the same messages: 2 000 acked and 10 pending):");
    for line in reference_plan {
        println!("    {line}");
    }
}

/// The plans of deadletter's statements for an enqueue, a claim and an ack, on the schema of the
/// last claim+ack round (every message succeeded), as claim runs them (generic plans).
fn plans(schema: &Schema, engine: &Engine<PostgresStore>) {
    let item = item();
    for _ in 0..10 {
        pollster::block_on(engine.enqueue("bench".into(), &item, &now)).expect("enqueue");
    }
    let sql = engine.store().statements();
    let mut client = schema.client();
    client
        .batch_execute(&format!("ANALYZE {}.messages", schema.quoted()))
        .expect("analyze");
    let now = now().expect("clock");
    let statements = [
        (
            "enqueue: the queue's row",
            &sql.queue,
            "text",
            "'bench'".to_owned(),
        ),
        (
            "claim: the queue's row and the expiring messages",
            &sql.queue_and_expiring,
            "text, bigint",
            format!("'bench', {now}"),
        ),
        (
            "claim: expired leases (and the move of due messages)",
            &sql.expired,
            "text, bigint",
            format!("'bench', {now}"),
        ),
        (
            "claim: the head of the ready messages",
            &sql.due,
            "text, bigint, bigint",
            format!("'bench', {now}, 1"),
        ),
        (
            "ack: the message locked, with its queue's row",
            &sql.get_for_update_with_queue,
            "bigint, text",
            "1, 'bench'".to_owned(),
        ),
    ];
    println!(
        "Plans of deadletter's statements (generic plans, as claim runs them; 2 000 succeeded and 10 pending messages):"
    );
    for (what, statement, types, args) in statements {
        let mut tx = client.transaction().expect("begin");
        tx.batch_execute(&format!("{CLAIM_BEGIN}; PREPARE p({types}) AS {statement}"))
            .expect("prepare");
        let rows = tx
            .query(&format!("EXPLAIN (COSTS OFF) EXECUTE p({args})"), &[])
            .expect("explain");
        println!("  {what}:");
        for row in rows {
            println!("    {}", row.get::<_, String>(0));
        }
        tx.rollback().expect("rollback");
        client.batch_execute("DEALLOCATE p").expect("deallocate");
    }
    println!(
        "  enqueue of one message: INSERT ... VALUES (...) RETURNING id (of a batch: INSERT ... \
         SELECT ... FROM unnest($1, ...)); claim's and ack's writes: UPDATE ... WHERE id = $1 \
         (the primary key)"
    );
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
        "PostgreSQL {server} ({durable}) vs SQLite {} (deadletter-sqlite, WAL, synchronous=FULL); \
         workers are threads with their own connection; {cores} cores",
        deadletter_sqlite::rusqlite::version()
    );
    round_trips(&url);
    server_time(&url);
    // `-- counted`: what is counted only (round trips, statements, WAL, plans), nothing timed;
    // `-- enqueue` or `-- claim+ack`: that measurement only.
    let args: Vec<String> = std::env::args().collect();
    for kind in ["enqueue", "claim+ack"] {
        let only = |other: &str| args.iter().any(|arg| arg == other);
        if !only("counted") && (only(kind) || !(only("enqueue") || only("claim+ack"))) {
            measure(&url, kind);
        }
    }
    wal_per_message(&url);
}

/// Round trips per message of deadletter's store, as it counts them (deterministic; one worker,
/// each statement's first preparation on the session included), beside the reference's: one per
/// statement, so 1 per enqueue and 2 per claim+ack.
fn round_trips(url: &str) {
    let schema = Schema::new(url, "trips", 1, 0);
    let engine = Engine::new(schema.store(), Limits::default());
    let item = item();
    let trips = || engine.store().round_trips();
    #[allow(clippy::cast_precision_loss)] // a few thousand
    let per = |n: u64| n as f64 / MESSAGES as f64;
    let from = trips();
    for _ in 0..MESSAGES {
        pollster::block_on(engine.enqueue("bench".into(), &item, &now)).expect("enqueue");
    }
    let enqueued = per(trips() - from);
    let from = trips();
    drain(&engine);
    let drained = per(trips() - from);
    println!(
        "Round trips per message (one worker): deadletter postgres {enqueued:.2} per enqueue, \
         {drained:.2} per claim+ack; the reference 1 and 2"
    );
}

/// Fills a schema and drains it with one worker, resetting `pg_stat_statements` in between:
/// when the drain started.
type Drain<'a> = &'a dyn Fn(&Schema) -> Mark;

/// CPU seconds so far of the server's processes (all of them, exited ones included: the
/// postmaster's own and its children's, from `/proc`; `None` when the server is not on this
/// machine) and of this process, and the instant.
struct Mark {
    server: Option<f64>,
    client: Option<f64>,
    /// The times this thread and the ended workers blocked ([`waits`]).
    waits: u64,
    at: Instant,
}

impl Mark {
    fn now(postmaster: Option<u32>) -> Self {
        // A child reaped between the postmaster's reading and the scan of its children is in
        // neither (its time moves to the postmaster's `waited` at its reaping): the drain's
        // backend, closed just before the mark, was lost that way, and the server's CPU
        // printed negative. So the postmaster is read again after the scan, and all of it
        // again when a child was reaped meanwhile.
        let server = postmaster.and_then(|pid| {
            let pid_text = pid.to_string();
            for _ in 0..100 {
                let (_, before, _) = ticks(&pid_text)?;
                let children: u64 = std::fs::read_dir("/proc")
                    .ok()?
                    .filter_map(|entry| ticks(entry.ok()?.file_name().to_str()?))
                    .filter(|(_, _, parent)| *parent == pid)
                    .map(|(own, _, _)| own)
                    .sum();
                let (own, waited, _) = ticks(&pid_text)?;
                if waited == before {
                    return Some(own + waited + children);
                }
            }
            None
        });
        #[allow(clippy::cast_precision_loss)] // clock ticks of a few minutes
        let seconds = |ticks: u64| ticks as f64 / 100.0; // USER_HZ
        Self {
            server: server.map(seconds),
            client: ticks("self").map(|(own, _, _)| seconds(own)),
            waits: waits() + WORKERS_WAITED.load(Ordering::Relaxed),
            at: Instant::now(),
        }
    }
}

/// Process `pid`'s CPU clock ticks (user + system), its waited-for children's, and its parent's
/// pid, from `/proc/PID/stat`.
fn ticks(pid: &str) -> Option<(u64, u64, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name in parentheses: state, ppid, ... utime (14), stime, cutime, cstime.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some((
        field(14)? + field(15)?,
        field(16)? + field(17)?,
        u32::try_from(field(4)?).ok()?,
    ))
}

/// Statements and the server's time per claim+ack of each PostgreSQL contender, one worker
/// draining `MESSAGES` messages, from `pg_stat_statements` when the server loads it
/// (`scripts/pg.sh` does, with tracking off: this turns it on for itself only, so it costs the
/// timed rounds nothing). `COMMIT` is apart: its time is mostly the flush to disk, and the
/// reference's commits (each statement its own transaction) are no statement of their own.
#[allow(clippy::too_many_lines)] // three contenders measured, then printed
fn server_time(url: &str) {
    let mut admin = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let loaded: bool = admin
        .query_one(
            "SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements'",
            &[],
        )
        .expect("setting")
        .get(0);
    if !loaded {
        println!("Server time per claim+ack: not measured (pg_stat_statements is not loaded)");
        return;
    }
    let tracking = admin
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .and_then(|()| track(&mut admin, "all"));
    if let Err(err) = tracking {
        println!("Server time per claim+ack: not measured (pg_stat_statements: {err})");
        return;
    }
    println!(
        "Server time per claim+ack (pg_stat_statements, one worker, {MESSAGES} messages; \
         statements / us, COMMIT apart):"
    );
    #[allow(clippy::cast_precision_loss)]
    let per = |n: f64| n / MESSAGES as f64;
    let backend: i32 = admin
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pid")
        .get(0);
    let postmaster = ticks(&backend.to_string()).map(|(_, _, parent)| parent);
    let reset = || {
        let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
        let reset = client.batch_execute("SELECT pg_stat_statements_reset()");
        reset.expect("reset");
        Mark::now(postmaster)
    };
    let drains: [(&str, Drain); 3] = [
        (DEADLETTER, &|schema| {
            let producer = Engine::new(schema.store(), Limits::default());
            fill(&producer);
            let worker = Engine::new(schema.store(), Limits::default());
            drain(&worker); // prepares its statements
            fill(&producer);
            let mark = reset();
            drain(&worker);
            mark
        }),
        (REFERENCE, &|schema| {
            drop(reference::fill(schema));
            let mark = reset();
            reference::drain(schema, 1);
            mark
        }),
        (IN_CLIENT, &|schema| {
            drop(reference::fill(schema));
            let mark = reset();
            reference::drain_in_client(schema, 1);
            mark
        }),
    ];
    let mut breakdown = Vec::new();
    for (index, (name, run)) in drains.iter().enumerate() {
        let schema = Schema::new(url, "sst", 1, index);
        let (from, to) = (run(&schema), Mark::now(postmaster));
        let rows = admin
            .query(
                "SELECT query, calls::float8, total_exec_time * 1000 FROM pg_stat_statements \
                 WHERE query !~ 'pg_stat_statements|pg_reload_conf' ORDER BY total_exec_time DESC",
                &[],
            )
            .expect("statements");
        let (mut calls, mut us, mut commits, mut commit_us) = (0.0, 0.0, 0.0, 0.0);
        for row in &rows {
            let (query, n, time): (String, f64, f64) = (row.get(0), row.get(1), row.get(2));
            if query.trim().eq_ignore_ascii_case("commit") {
                (commits, commit_us) = (commits + n, commit_us + time);
            } else {
                (calls, us) = (calls + n, us + time);
            }
            let query = query.replace(&format!("{}.", schema.quoted()), "");
            let query = query.split_whitespace().collect::<Vec<_>>().join(" ");
            breakdown.push((*name, per(n), per(time), query));
        }
        let cpu = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:>5.0}", per((b - a) * 1e6)),
            _ => "    -".to_owned(),
        };
        #[allow(clippy::cast_precision_loss)] // some thousands
        let waited = to.waits.saturating_sub(from.waits) as f64;
        println!(
            "  {name:<20} {:>5.1} statements {:>4.0} us, COMMIT {:>3.1} {:>3.0} us; CPU: server {} us, \
             client {} us, waits {:>3.1}; wall {:>5.0} us",
            per(calls),
            per(us),
            per(commits),
            per(commit_us),
            cpu(from.server, to.server),
            cpu(from.client, to.client),
            per(waited),
            per((to.at - from.at).as_secs_f64() * 1e6),
        );
    }
    println!("  each statement (per claim+ack: calls, us):");
    for (name, n, us, query) in breakdown {
        let cut: String = query.chars().take(80).collect();
        println!("    {name:<20} {n:>4.1} {us:>6.1}  {cut}");
    }
    track(&mut admin, "none").expect("tracking off");
}

/// Sets `pg_stat_statements.track` to `how` for the sessions that start from now on (a
/// superuser's right, as on the clusters of `scripts/pg.sh`).
fn track(admin: &mut postgres::Client, how: &str) -> std::result::Result<(), postgres::Error> {
    for sql in [
        &format!("ALTER SYSTEM SET pg_stat_statements.track = '{how}'"),
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(sql)?;
    }
    std::thread::sleep(Duration::from_millis(300)); // the postmaster and its children read it
    Ok(())
}
