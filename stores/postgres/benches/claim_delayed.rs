//! Benchmark, not a test: what one claim costs with 10 000 messages in backoff older than every
//! due message, against a queue with none (issue 10: within 1.2x), and with 1 000 ordering
//! groups whose heads are in backoff and 10 000 messages waiting behind them (issue 21: within
//! 1.2x too), in the same run.
//!
//! Four schemas, each a queue of `DUE` due messages: `none` has nothing else; `ahead` has 10 000
//! messages delayed by an hour enqueued before them, as the store writes them (waiting, outside
//! the ready index); `walked` has the same 10 000 marked ready, which is where schema 1 kept
//! them (in the index claim takes the head of, skipped entry by entry): the reference of what
//! the ready index saves; `groups` has 1 000 groups of 11 messages enqueued before them, each
//! group's head claimed and failed with `retry_in` an hour (in backoff), the 10 000 others
//! blocked behind the heads (outside every claim index). Each round times `CLAIMS` claims (one
//! message each, through the
//! engine: move and reap, take, write, commit) on each schema, one schema after the other claim
//! by claim, so that the three share whatever else the machine does; the figure is
//! microseconds per claim, min / median / max over `ROUNDS` rounds after one warm-up.
//! Sessions run with `synchronous_commit = off`: a commit's flush to disk costs the same on the
//! three schemas and would hide the work claim does. Last, the one claim that moves the 10 000
//! into the ready index when they all become due (the end of an outage), and the 100 after it.
//!
//! Run: `make bench-postgres` (or `scripts/pg.sh run cargo bench -p deadletter-postgres --bench
//! claim_delayed`).

use std::time::{Duration, Instant};

use deadletter::{Arg, Call, Engine, Error, Item, Limits, Millis};
use deadletter_postgres::{Options, PostgresStore};

#[path = "../tests/common/groups.rs"]
mod groups;

const DELAYED: usize = 10_000;
const CLAIMS: usize = 500;
const ROUNDS: usize = 7;
/// Due messages per schema: enough for the warm-up and every round.
const DUE: usize = CLAIMS * (ROUNDS + 1);
/// The benchmark's clock (the core reads none): messages are enqueued before it.
const NOW: Millis = 1_767_225_600_000;

/// A store on the new schema `schema`, with one session that does not wait for the disk.
fn open(url: &str, schema: &str) -> Engine<PostgresStore> {
    let options = Options {
        schema: schema.to_owned(),
        max_connections: 1,
        ..Options::default()
    };
    let store = PostgresStore::open(url, &options).expect("open");
    sql(&store, "SET synchronous_commit = off");
    Engine::new(store, Limits::default())
}

fn sql(store: &PostgresStore, statement: &str) {
    store
        .with_client(|client| client.batch_execute(statement).map_err(Error::store))
        .expect(statement);
}

/// Enqueues `count` messages `delay_ms` late, at `at`, 1000 a transaction.
fn enqueue(engine: &Engine<PostgresStore>, count: usize, delay_ms: i64, at: Millis) {
    let item = Item {
        payload: Arg::Str("{\"to\": \"alice@example.com\"}"),
        delay_ms: Arg::Int(delay_ms),
        ..Item::default()
    };
    for start in (0..count).step_by(1000) {
        let batch = vec![item.clone(); 1000.min(count - start)];
        let clock = move || Ok(at);
        pollster::block_on(engine.enqueue_many("bench".into(), &batch, &clock)).expect("enqueue");
    }
}

/// One claim on `engine` at `now`, timed. Leases last two hours: none runs out during the
/// benchmark, so no claim reaps.
fn claim(engine: &Engine<PostgresStore>, now: Millis) -> Duration {
    let clock = move || Ok(now);
    let at = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let lease = Arg::Int(7_200_000);
    let started = Instant::now();
    let claimed =
        pollster::block_on(engine.claim("bench".into(), lease, || "t".into(), &at)).expect("claim");
    let elapsed = started.elapsed();
    assert!(claimed.value.is_some(), "a due message");
    elapsed
}

/// One round: `CLAIMS` times, one claim on each schema (starting with a different one each
/// time, so that none always runs right after another); microseconds per claim on each.
fn round(engines: &[Engine<PostgresStore>]) -> Vec<f64> {
    let mut spent = vec![Duration::ZERO; engines.len()];
    for i in 0..CLAIMS {
        for k in 0..engines.len() {
            let which = (i + k) % engines.len();
            spent[which] += claim(&engines[which], NOW);
        }
    }
    #[allow(clippy::cast_precision_loss)] // a few hundred claims
    spent
        .iter()
        .map(|d| d.as_secs_f64() * 1e6 / CLAIMS as f64)
        .collect()
}

fn main() {
    let url = std::env::var("DEADLETTER_POSTGRES_URL")
        .expect("DEADLETTER_POSTGRES_URL: run `make bench-postgres`");
    let prefix = format!("bench_delayed_{}", std::process::id());
    let kinds = ["none", "ahead", "walked", "groups"];
    let engines: Vec<Engine<PostgresStore>> = kinds
        .iter()
        .map(|kind| {
            let engine = open(&url, &format!("{prefix}_{kind}"));
            if *kind == "groups" {
                groups::heads_in_backoff(&engine, "bench", 1000, 10, NOW - 20_000);
            } else if *kind != "none" {
                enqueue(&engine, DELAYED, 3_600_000, NOW - 20_000);
            }
            enqueue(&engine, DUE, 0, NOW - 10_000);
            let table = engine.store().qualified("messages");
            if *kind == "walked" {
                sql(
                    engine.store(),
                    &format!("UPDATE {table} SET ready = true WHERE retry_after IS NOT NULL"),
                );
            }
            sql(engine.store(), &format!("VACUUM ANALYZE {table}"));
            engine
        })
        .collect();
    round(&engines); // warm-up
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..ROUNDS {
        for (figure, per_claim) in figures.iter_mut().zip(round(&engines)) {
            figure.push(per_claim);
        }
    }
    let version: String = engines[0]
        .store()
        .with_client(|client| {
            client
                .query_one("SHOW server_version", &[])
                .map(|row| row.get(0))
                .map_err(Error::store)
        })
        .expect("version");
    println!(
        "claim with {DELAYED} delayed messages ahead, or behind 1000 group heads in backoff, vs \
         none: us per claim (move and reap, take, \
         write, commit; one message), {ROUNDS} rounds of {CLAIMS} claims on each, interleaved, \
         after one warm-up, min / median / max; PostgreSQL {version}, synchronous_commit=off"
    );
    println!("{:<58} {:>8} {:>8} {:>8}", "queue", "min", "median", "max");
    let labels = [
        "none delayed".to_owned(),
        format!("{DELAYED} delayed ahead (schema 2: waiting, not walked)"),
        format!("{DELAYED} delayed ahead, in the ready index (as schema 1)"),
        format!("1000 group heads in backoff, {DELAYED} behind them"),
    ];
    let mut medians = Vec::new();
    for (label, figure) in labels.iter().zip(&mut figures) {
        figure.sort_by(f64::total_cmp);
        let (min, median, max) = (figure[0], figure[ROUNDS / 2], figure[ROUNDS - 1]);
        println!("{label:<58} {min:>8.1} {median:>8.1} {max:>8.1}");
        medians.push(median);
    }
    println!(
        "ratio of medians: {DELAYED} delayed ahead / none = {:.2}x (issue 10's target: at most \
         1.20x); as schema 1 / none = {:.2}x; 1000 group heads in backoff and {DELAYED} behind \
         them / none = {:.2}x (issue 21's target: at most 1.20x)",
        medians[1] / medians[0],
        medians[2] / medians[0],
        medians[3] / medians[0]
    );
    // Then the outage ends: an hour later the 10 000 of `ahead` are due at once (its due
    // messages are all taken). The first claim moves them all into the ready index, once.
    let later = NOW + 3_600_000;
    let moving = claim(&engines[1], later);
    let mut next: Vec<Duration> = (0..100).map(|_| claim(&engines[1], later)).collect();
    next.sort();
    println!(
        "when the {DELAYED} become due together: the claim that moves them took {:.1} ms; the \
         next 100 claims {:.0} / {:.0} / {:.0} us (min / median / max: until VACUUM, they step \
         over the index entries the move left behind)",
        moving.as_secs_f64() * 1e3,
        next[0].as_secs_f64() * 1e6,
        next[50].as_secs_f64() * 1e6,
        next[99].as_secs_f64() * 1e6
    );
    for kind in kinds {
        sql(
            engines[0].store(),
            &format!("DROP SCHEMA \"{prefix}_{kind}\" CASCADE"),
        );
    }
}
