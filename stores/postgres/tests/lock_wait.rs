//! A call that waits for a lock another connection holds decides with the instant it got the lock
//! (issue 23, item 2; the scenario is the store kit's): a claim that waited for the table's lock
//! (held by another connection, as an upgrade of the schema holds it), and a failure that waited
//! for its message's row lock. A claim reads the clock before it sends `BEGIN` with its reads, on
//! a session that prepared them (issue 24): there, the table's lock is not waited for (`NOWAIT`),
//! and a claim that finds it held waits for it with its reads and reads the clock again.

mod common;

use common::{Schemas, url};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{self, Locked};
use deadletter::{Arg, Call, Engine, Limits, Millis};
use deadletter_postgres::PostgresStore;

/// The granularity allowed between the instant the store read and the call's return: the commit
/// and the clock's resolution.
const SLACK_MS: Millis = 250;

#[test]
fn a_claim_and_a_failure_that_waited_for_a_lock_decide_with_the_instant_they_got_it() {
    let schemas = Schemas::new("lockwait");
    scenario(&Engine::new(schemas.store(2), Limits::default()));
}

#[test]
fn so_do_they_on_a_session_that_prepared_the_claim_before() {
    let schemas = Schemas::new("lockwaitwarm");
    let db = Engine::new(schemas.store(1), Limits::default());
    let call = Call {
        clock: &|| Ok(BASE),
        backoff: None,
        sample: 0.0,
    };
    let trips = db.store().round_trips();
    let none = pollster::block_on(db.claim("other".into(), Arg::Null, || "t".into(), &call));
    assert_eq!(none.expect("claim").value, None);
    let trips = db.store().round_trips() - trips;
    let again = pollster::block_on(db.claim("other".into(), Arg::Null, || "t".into(), &call));
    assert_eq!(again.expect("claim").value, None);
    let (first, second) = (trips, db.store().round_trips() - trips);
    assert!(first > second, "the first claim prepared its statements");
    scenario(&db);
}

fn scenario(db: &Engine<PostgresStore>) {
    let table = db.store().qualified("messages");
    kit::a_call_that_waited_for_a_lock_decides_with_the_instant_it_got_it(db, SLACK_MS, |what| {
        let lock = match what {
            Locked::Claim => format!("LOCK TABLE {table} IN EXCLUSIVE MODE"),
            Locked::Fail(id) => format!("SELECT 1 FROM {table} WHERE id = {id} FOR UPDATE"),
        };
        let mut holder = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
        holder
            .batch_execute(&format!("BEGIN; {lock}"))
            .expect("lock");
        move || holder.batch_execute("COMMIT").expect("unlock")
    });
}
