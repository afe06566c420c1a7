//! What a message writes (issue 24, schema version 8): the WAL frames an enqueue appends, and a
//! whole cycle (enqueue, claim, succeed), counted on the WAL file at durability `normal`, below
//! the store's checkpoint threshold so that nothing resets it. Every B-tree a transaction changes
//! costs at least one page: an enqueue writes the table and `messages_pending` (it wrote four
//! B-trees until version 8), a cycle about 8 pages (10 before).

mod common;

use common::{TempDb, item, wal_bytes};
use deadletter::conformance::kit::{TOKEN, at, claim_at};
use deadletter::{Engine, Limits};
use deadletter_sqlite::{Durability, SqliteStore};

/// One WAL frame: a page of 4 KiB and its 24-byte header.
const FRAME: f64 = 4096.0 + 24.0;

/// The WAL frames appended per message by `n` runs of `each` on a new file at `normal`.
fn frames_per_message(n: u32, each: impl Fn(&Engine<SqliteStore>, u32)) -> f64 {
    let file = TempDb::new();
    let db = Engine::new(
        SqliteStore::open(&file.0, Durability::Normal).expect("open"),
        Limits::default(),
    );
    let before = wal_bytes(&file.0);
    for i in 0..n {
        each(&db, i);
    }
    let grown = u32::try_from(wal_bytes(&file.0) - before).expect("a WAL below 4 GiB");
    f64::from(grown) / FRAME / f64::from(n)
}

#[test]
fn an_enqueue_writes_two_b_trees_and_a_cycle_about_eight_pages() {
    let clock = at(1_767_225_600_000);
    let enqueue = |db: &Engine<SqliteStore>, i: u32| {
        let payload = format!(r#"{{"n": {i}}}"#);
        pollster::block_on(db.enqueue("q".into(), &item(&payload), &clock)).expect("enqueue");
    };
    // 500 enqueues: about 1 060 frames, far below the 4 000 at which a checkpoint starts over.
    let enqueued = frames_per_message(500, enqueue);
    assert!(
        (2.0..=2.5).contains(&enqueued),
        "{enqueued:.2} frames per enqueue"
    );

    let cycle = |db: &Engine<SqliteStore>, i: u32| {
        enqueue(db, i);
        let taken = claim_at(db, 1_767_225_600_000).expect("the message just enqueued");
        pollster::block_on(db.succeed("q".into(), taken.id.into(), TOKEN.into(), &clock))
            .expect("succeed");
    };
    // 300 cycles: about 2 400 frames.
    let cycled = frames_per_message(300, cycle);
    assert!(
        (7.0..=8.5).contains(&cycled),
        "{cycled:.2} frames per enqueue, claim and succeed"
    );
}
