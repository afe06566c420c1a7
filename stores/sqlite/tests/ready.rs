//! Schema version 3's ready index (issue 10) beyond the conformance cases: a message moved to it
//! is not taken when the clock goes back before its `retry_after`.

mod common;

use common::{TempDb, claim_at, engine, enqueue_at};
use deadletter::conformance::BASE;

#[test]
fn a_promoted_message_is_not_claimed_when_the_clock_goes_back() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let delayed = enqueue_at(&db, "delayed", 10_000, BASE);
    let due = enqueue_at(&db, "due", 0, BASE + 1);
    // At BASE + 20 s both are due: the claim moves the delayed one to the ready index and takes
    // the oldest (the delayed one); then ...
    let taken = claim_at(&db, BASE + 20_000).expect("the delayed message");
    assert_eq!(taken.id, delayed.id);
    let other = enqueue_at(&db, "again", 10_000, BASE + 2);
    let promoted = claim_at(&db, BASE + 20_000).expect("the due message");
    assert_eq!(promoted.id, due.id);
    // ... `other` was moved by that claim (due at BASE + 10 s). With the clock back before its
    // retry_after, it is delayed again: not claimed, counted as delayed, next due.
    assert_eq!(claim_at(&db, BASE + 5_000), None);
    let stats = pollster::block_on(db.stats("q".into(), BASE + 5_000)).expect("stats");
    assert_eq!(
        (stats.delayed, stats.next_due_at, stats.oldest_due_age_ms),
        (1, Some(BASE + 10_002), None)
    );
    assert_eq!(claim_at(&db, BASE + 10_002).map(|m| m.id), Some(other.id));
}
