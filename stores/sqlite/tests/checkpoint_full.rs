//! Checkpoints at `"full"` (issues 19 and 24, `src/checkpoint.rs`'s `START_FULL`): the store's
//! thread starts at 1000 frames there. Its own test binary: it counts the process's threads, as
//! `checkpoint.rs` does.

mod common;

use common::{TempDb, checkpoint_threads, item, wal_bytes};
use deadletter::{Engine, Limits};
use deadletter_sqlite::{Durability, SqliteStore};

/// At `"full"` the thread starts at 1000 frames, not at `"normal"`'s 4000 (issues 19 and 24:
/// `checkpoint::START_FULL`): about 2 frames per enqueue (schema version 8), so none after 200
/// enqueues, one after 400 more, and the WAL file stays within the frames of one start and its
/// limit.
#[test]
fn at_full_the_thread_starts_at_1000_frames() {
    let file = TempDb::new();
    let db = Engine::new(
        SqliteStore::open(&file.0, Durability::Full).expect("open"),
        Limits::default(),
    );
    let clock = || Ok(1_767_225_600_000);
    let enqueue = || {
        pollster::block_on(db.enqueue("q".into(), &item(r#"{"n": 1}"#), &clock)).expect("enqueue")
    };
    for _ in 0..200 {
        enqueue();
    }
    assert_eq!(checkpoint_threads(), 0, "started before 1000 frames");
    let mut largest = 0;
    for _ in 0..400 {
        enqueue();
        largest = largest.max(wal_bytes(&file.0));
    }
    assert_eq!(checkpoint_threads(), 1, "not started at 1000 frames");
    assert!(largest < 4000 * 4120, "the WAL grew to {largest} bytes");
    db.store().close().expect("close");
    assert_eq!(checkpoint_threads(), 0, "close left the thread running");
}
