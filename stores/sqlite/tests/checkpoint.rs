//! Checkpoints off the callers' path (issue 24, `src/checkpoint.rs`): once a store's WAL holds
//! 4000 frames, a thread of the store copies it into the database file, not the call whose commit
//! filled it; the WAL stays bounded, and `close` stops the thread. Its own test binary: it counts
//! the process's threads.

mod common;

use std::path::Path;

use common::{TempDb, checkpoint_threads, item, wal_bytes};
use deadletter::{Engine, Limits};
use deadletter_sqlite::{Durability, SqliteStore};

#[test]
fn a_thread_of_the_store_checkpoints_the_wal_and_close_stops_it() {
    let memory = Engine::new(
        SqliteStore::open(Path::new(":memory:"), Durability::Normal).expect("open"),
        Limits::default(),
    );
    let file = TempDb::new();
    let db = Engine::new(
        SqliteStore::open(&file.0, Durability::Normal).expect("open"),
        Limits::default(),
    );
    let clock = || Ok(1_767_225_600_000);
    let enqueue = |db: &Engine<SqliteStore>| {
        pollster::block_on(db.enqueue("q".into(), &item(r#"{"n": 1}"#), &clock)).expect("enqueue")
    };
    for _ in 0..100 {
        enqueue(&memory);
        enqueue(&db);
    }
    assert_eq!(
        checkpoint_threads(),
        0,
        "started before the WAL held 4000 frames"
    );

    // About 2 frames per enqueue (schema version 8): 18 000 frames, four times the threshold.
    let mut largest = 0;
    for _ in 0..9000 {
        enqueue(&db);
        largest = largest.max(wal_bytes(&file.0));
    }
    assert_eq!(checkpoint_threads(), 1);
    // Started over, not grown to 18 000 frames of 4120 bytes (74 MB): at most LIMIT frames and
    // what one pass lets the writer add meanwhile.
    assert!(largest < 16_000 * 4120, "the WAL grew to {largest} bytes");

    db.store().close().expect("close");
    assert_eq!(checkpoint_threads(), 0, "close left the thread running");
    let again = Engine::new(
        SqliteStore::open(&file.0, Durability::Normal).expect("open"),
        Limits::default(),
    );
    let stats = pollster::block_on(again.stats("q".into(), &clock)).expect("stats");
    assert_eq!(stats.pending, 9100);
}
