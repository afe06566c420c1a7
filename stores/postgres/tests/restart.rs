//! The server is killed and restarted (`pg_ctl restart -m immediate`, like a crash) while four
//! workers claim and ack: calls in flight fail with a store error, the workers carry on with new
//! connections, every acked message stays acked, and no message is held by two workers at once.
//! Its own test binary, so that the restart disturbs no other test.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::Schemas;
use common::workers::{Mix, check_holders, enqueue, wall_clock, work};
use deadletter::{Engine, Limits};
use deadletter_postgres::{Options, PostgresStore};

const TOTAL: usize = 3_000;
const WORKERS: usize = 4;

fn pg_sh(command: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/pg.sh");
    let out = Command::new(script)
        .arg(command)
        .output()
        .expect("scripts/pg.sh");
    assert!(
        out.status.success(),
        "pg.sh {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn workers_survive_a_server_restart_without_losing_an_ack_or_sharing_a_message() {
    assert_eq!(
        pg_sh("url"),
        common::url(),
        "this test restarts the cluster of scripts/pg.sh: run it through `make test-postgres`"
    );
    let schemas = Schemas::new("restart");
    let name = schemas.name();
    let open = || {
        let options = Options {
            schema: name.clone(),
            max_connections: 2,
            ..Options::default()
        };
        PostgresStore::open(&common::url(), &options).expect("open")
    };
    enqueue(open(), "jobs", TOTAL);
    let watcher = Engine::new(open(), Limits::default());
    let stop = AtomicBool::new(false);
    let mix = Mix {
        fail: 0,
        fail_permanently: 0,
        abandon: 0,
    };
    let (logs, restarted_at, acked_before) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let store = open();
                let stop = &stop;
                // A 1 s lease: a claim whose commit was lost in the crash comes back soon.
                scope.spawn(move || work(store, "jobs", TOTAL as u64, 1_000, mix, stop))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        let acked_before = loop {
            assert!(Instant::now() < deadline, "no progress before the restart");
            let stats =
                pollster::block_on(watcher.stats("jobs".into(), &wall_clock)).expect("stats");
            if stats.succeeded >= TOTAL as u64 / 3 {
                break stats.succeeded;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let restarted_at = Instant::now();
        pg_sh("restart");
        println!(
            "server restarted in {:.1?} with {acked_before} of {TOTAL} acked",
            restarted_at.elapsed()
        );
        let logs: Vec<_> = workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect();
        stop.store(true, Ordering::Relaxed);
        (logs, restarted_at, acked_before)
    });

    let errors: usize = logs.iter().map(|log| log.store_errors).sum();
    let first = logs.iter().find_map(|log| log.first_store_error.clone());
    println!("{errors} store errors during the restart, the first: {first:?}");
    assert!(
        errors > 0,
        "a worker mid-call at the crash must have got a store error"
    );
    assert!(
        logs.iter()
            .flat_map(|l| &l.store_error_times)
            .all(|t| *t >= restarted_at),
        "no store error before the restart"
    );
    let summary = check_holders(&logs);
    let stats = pollster::block_on(watcher.stats("jobs".into(), &wall_clock)).expect("stats after");
    assert_eq!(
        (stats.succeeded, stats.dead, stats.pending, stats.processing),
        (TOTAL as u64, 0, 0, 0),
        "every message acked once the workers recovered"
    );
    for id in &summary.acked {
        let m = pollster::block_on(watcher.get("jobs".into(), (*id).into())).expect("get");
        assert_eq!(
            m.status.as_str(),
            "succeeded",
            "acked message {id} was lost"
        );
    }
    assert!(
        summary.acked.len() as u64 > acked_before,
        "workers acked after the restart"
    );
    println!(
        "{} acks seen by workers (the rest committed while their caller got a store error), {} claims: {:?}",
        summary.acked.len(),
        summary.claims,
        summary.ends
    );
}
