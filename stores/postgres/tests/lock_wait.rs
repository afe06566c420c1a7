//! A call that waits for a lock another connection holds decides with the instant it got the lock
//! (issue 23, item 2): a claim with a 2 s lease that waited 3 s for the table's lock (held by
//! another connection, as an upgrade of the schema holds it) returns a lease valid for its full
//! length from the moment the call returned; so does the backoff of a failure that waited 3 s for
//! its message's row lock. (With the instant read before the wait, the lease came back already
//! expired.)

mod common;

use std::time::Duration;

use common::{Schemas, url};
use deadletter::conformance::kit::system_now;
use deadletter::{Arg, Call, Engine, Item, Limits, Millis};

/// How long the other connection holds its lock.
const HOLD: Duration = Duration::from_secs(3);

/// The granularity allowed between the instant the store read and the call's return: the commit
/// and the clock's resolution.
const SLACK_MS: Millis = 250;

/// Runs `call` while another connection holds `lock` (statements run in its transaction) for
/// [`HOLD`]; returns what it returned, with the instants it started and returned at.
fn while_locked<T>(lock: &str, call: impl FnOnce() -> T) -> (T, Millis, Millis) {
    let mut holder = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    holder
        .batch_execute(&format!("BEGIN; {lock}"))
        .expect("lock");
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(HOLD);
            holder.batch_execute("COMMIT").expect("unlock");
        });
        let started = system_now().expect("clock");
        let value = call();
        let returned = system_now().expect("clock");
        (value, started, returned)
    })
}

#[test]
fn a_claim_and_a_failure_that_waited_for_a_lock_decide_with_the_instant_they_got_it() {
    let schemas = Schemas::new("lockwait");
    let db = Engine::new(schemas.store(2), Limits::default());
    let table = db.store().qualified("messages");
    let item = Item {
        payload: "a".into(),
        ..Item::default()
    };
    pollster::block_on(db.enqueue("q".into(), &item, &system_now)).expect("enqueue");
    let call = Call {
        clock: &system_now,
        backoff: None,
        sample: 0.0,
    };

    let lock = format!("LOCK TABLE {table} IN EXCLUSIVE MODE");
    let (claimed, started, returned) = while_locked(&lock, || {
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

    let lock = format!("SELECT 1 FROM {table} WHERE id = {} FOR UPDATE", claimed.id);
    let (failed, started, returned) = while_locked(&lock, || {
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
    let waited = returned - started;
    assert!(
        waited >= 2_900,
        "the failure did not wait for the lock ({waited} ms)"
    );
    let retry_after = failed.expect("fail").value.retry_after.expect("a backoff");
    // The first failure's backoff is 2 s from the instant of the failure.
    assert!(
        retry_after - returned >= 2_000 - SLACK_MS,
        "a 2 s backoff ends {} ms after the call returned",
        retry_after - returned
    );
}
