//! `Engine::next_claim_at`, what the HTTP API's empty claim sends as `Retry-After`: the next
//! delayed message's due instant, and nothing while the queue is paused.

use deadletter::conformance::BASE;
use deadletter::conformance::kit::{QUEUE, at, claim_at, enqueue_at};
use deadletter::{Engine, Limits, MemoryStore};

#[test]
fn a_paused_queue_gives_no_instant_for_its_next_claim() {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    let next = |now| pollster::block_on(db.next_claim_at(QUEUE.into(), &at(now))).unwrap();
    assert_eq!(next(BASE), None); // nothing delayed
    enqueue_at(&db, "later", 90_000, BASE);
    assert_eq!(next(BASE), Some(BASE + 90_000));
    pollster::block_on(db.pause(QUEUE.into(), true)).unwrap();
    assert_eq!(claim_at(&db, BASE + 90_000), None);
    assert_eq!(next(BASE), None);
    assert_eq!(
        pollster::block_on(db.next_due_at(QUEUE.into(), &at(BASE))).unwrap(),
        Some(BASE + 90_000),
        "next_due_at still says when the message is due"
    );
    pollster::block_on(db.pause(QUEUE.into(), false)).unwrap();
    assert_eq!(next(BASE + 1), Some(BASE + 90_000));
    assert_eq!(next(BASE + 90_000), None); // due now: nothing delayed
}

#[test]
fn the_queue_name_is_checked() {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    let err = pollster::block_on(db.next_claim_at("".into(), &at(BASE))).unwrap_err();
    assert_eq!(err.code(), "validation_failed");
}
