//! A call that waits for another connection's write lock decides with the instant it got the lock
//! (issue 23, item 2): another connection holds `BEGIN IMMEDIATE` for 3 s while a claim with a
//! 2 s lease waits for it; the lease it returns is valid for its full length from the moment the
//! call returned, as is the backoff of a failure that waited the same way. (With the instant read
//! before the wait, the lease came back already expired.)

mod common;

use std::time::Duration;

use common::{TempDb, engine, item};
use deadletter::conformance::kit::system_now;
use deadletter::{Arg, Call, Millis};

/// How long the other connection holds the write lock.
const HOLD: Duration = Duration::from_secs(3);

/// The granularity allowed between the instant the store read and the call's return: the commit
/// (a sync of the WAL) and the clock's resolution.
const SLACK_MS: Millis = 250;

/// Runs `call` while another connection to `path` holds the write lock for [`HOLD`]; returns
/// what it returned, with the instants it started and returned at.
fn while_locked<T>(path: &std::path::Path, call: impl FnOnce() -> T) -> (T, Millis, Millis) {
    let holder = rusqlite::Connection::open(path).expect("open");
    holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(HOLD);
            holder.execute_batch("COMMIT").expect("unlock");
        });
        let started = system_now().expect("clock");
        let value = call();
        let returned = system_now().expect("clock");
        (value, started, returned)
    })
}

#[test]
fn a_claim_and_a_failure_that_waited_for_the_lock_decide_with_the_instant_they_got_it() {
    let file = TempDb::new();
    let db = engine(&file.0);
    pollster::block_on(db.enqueue("q".into(), &item("a"), &system_now)).expect("enqueue");
    let call = Call {
        clock: &system_now,
        backoff: None,
        sample: 0.0,
    };

    let (claimed, started, returned) = while_locked(&file.0, || {
        pollster::block_on(db.claim("q".into(), Arg::Int(2_000), || "t".into(), &call))
    });
    let claimed = claimed.expect("claim").value.expect("the message");
    let waited = returned - started;
    assert!(
        waited >= 2_900,
        "the claim did not wait for the lock ({waited} ms)"
    );
    let lease = claimed.lease_expires_at.expect("a lease");
    assert!(
        lease - returned >= 2_000 - SLACK_MS,
        "a 2 s lease handed out after a {waited} ms wait runs out {} ms after the call returned",
        lease - returned
    );

    let (failed, _, returned) = while_locked(&file.0, || {
        pollster::block_on(db.fail(
            "q".into(),
            claimed.id.into(),
            "boom".into(),
            "t".into(),
            Arg::Null,
            Arg::Null,
            &call,
        ))
    });
    let retry_after = failed.expect("fail").value.retry_after.expect("a backoff");
    // The first failure's backoff is 2 s from the instant of the failure.
    assert!(
        retry_after - returned >= 2_000 - SLACK_MS,
        "a 2 s backoff ends {} ms after the call returned",
        retry_after - returned
    );
}
