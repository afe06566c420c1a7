//! A call that waits for another connection's write lock decides with the instant it got the lock
//! (issue 23, item 2; the scenario is the store kit's): another connection holds
//! `BEGIN IMMEDIATE` while a claim, then a failure, waits for it.

mod common;

use common::{TempDb, engine};
use deadletter::Millis;
use deadletter::conformance::kit;

/// The granularity allowed between the instant the store read and the call's return: the commit
/// (a sync of the WAL) and the clock's resolution.
const SLACK_MS: Millis = 250;

#[test]
fn a_claim_and_a_failure_that_waited_for_the_lock_decide_with_the_instant_they_got_it() {
    let file = TempDb::new();
    let db = engine(&file.0);
    kit::a_call_that_waited_for_a_lock_decides_with_the_instant_it_got_it(&db, SLACK_MS, |_| {
        let holder = rusqlite::Connection::open(&file.0).expect("open");
        holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
        move || holder.execute_batch("COMMIT").expect("unlock")
    });
}
