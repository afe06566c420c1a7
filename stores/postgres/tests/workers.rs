//! 8 workers, each with its own connection, share 20 000 messages with random failures, crashes
//! (abandoned messages) and short leases: every message ends acked or dead, none is left, none is
//! acked twice, and no message is ever held by two workers at once.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use common::Schemas;
use common::workers::{Mix, check_holders, enqueue, wall_clock, work};
use deadletter::{Engine, Limits};

const TOTAL: usize = 20_000;
const WORKERS: usize = 8;

#[test]
fn eight_workers_finish_20000_messages_exactly_once() {
    let schemas = Schemas::new("workers");
    let name = schemas.name();
    let open = || {
        let options = deadletter_postgres::Options {
            schema: name.clone(),
            max_connections: 1,
            ..Default::default()
        };
        deadletter_postgres::PostgresStore::open(&common::url(), &options).expect("open")
    };
    enqueue(open(), "jobs", TOTAL);
    let mix = Mix {
        fail: 50,
        fail_permanently: 10,
        abandon: 20,
    };
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let logs: Vec<_> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let store = open();
                let stop = &stop;
                scope.spawn(move || work(store, "jobs", TOTAL as u64, 200, mix, stop))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let elapsed = started.elapsed();

    assert!(
        logs.iter().all(|log| log.store_errors == 0),
        "{:?}",
        logs.iter()
            .map(|l| &l.first_store_error)
            .collect::<Vec<_>>()
    );
    let summary = check_holders(&logs);
    let engine = Engine::new(open(), Limits::default());
    let stats = pollster::block_on(engine.stats("jobs".into(), &wall_clock)).expect("stats");
    assert_eq!(
        (stats.pending, stats.processing),
        (0, 0),
        "none left: {stats:?}"
    );
    assert_eq!(stats.succeeded + stats.dead, TOTAL as u64, "{stats:?}");
    assert_eq!(
        stats.succeeded,
        summary.acked.len() as u64,
        "every ack, and only acks, stuck"
    );
    for id in summary.acked.iter().take(500) {
        let m = pollster::block_on(engine.get("jobs".into(), (*id).into())).expect("get");
        assert_eq!(m.status.as_str(), "succeeded");
    }
    let mut ends: Vec<_> = summary.ends.iter().collect();
    ends.sort();
    println!(
        "{WORKERS} workers finished {TOTAL} messages in {elapsed:.1?}: {} succeeded, {} dead, \
         {} claims ({ends:?}); no double holder, no double ack",
        stats.succeeded, stats.dead, summary.claims
    );
}
