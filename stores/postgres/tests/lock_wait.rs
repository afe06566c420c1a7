//! A call that waits for a lock another connection holds decides with the instant it got the lock
//! (issue 23, item 2; the scenario is the store kit's): a claim that waited for the table's lock
//! (held by another connection, as an upgrade of the schema holds it), and a failure that waited
//! for its message's row lock. A claim reads the clock before it sends `BEGIN` with its reads, on
//! a session that prepared them (issue 24): there, the table's lock is not waited for (`NOWAIT`),
//! and a claim that finds it held waits for it with its reads and reads the clock again.

mod common;

use common::store::item;
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
    // The one-round-trip failure (issue 24) of a message it claimed, prepared too: its write
    // does not wait for the row's lock (`NOWAIT`), a call that finds it held waits the usual way.
    // On another queue: the same statements, and nothing left in the scenario's.
    let now = Call {
        clock: &kit::system_now,
        ..call
    };
    for _ in 0..2 {
        let m = pollster::block_on(db.enqueue("warm".into(), &item("warm"), &kit::system_now))
            .expect("enqueue");
        let claimed = pollster::block_on(db.claim(
            "warm".into(),
            Arg::Int(2_000),
            || kit::TOKEN.into(),
            &now,
        ))
        .expect("claim");
        assert_eq!(claimed.value.map(|c| c.id), Some(m.id));
        let failed = pollster::block_on(db.fail(
            "warm".into(),
            m.id.into(),
            "boom".into(),
            kit::TOKEN.into(),
            Arg::Null,
            Arg::Null,
            &now,
        ));
        failed.expect("fail");
    }
    scenario(&db);
}

/// An enqueue on a session that went in one round trip before (issue 24: the queue's row
/// remembered, the guarded insert prepared) finds the table's lock held (`LOCK TABLE ... IN SHARE
/// MODE`, which excludes writes): it waits for it and dates its message from when it got it.
#[test]
fn an_enqueue_that_waited_for_the_tables_lock_dates_its_message_from_when_it_got_it() {
    let schemas = Schemas::new("lockwaitenqueue");
    let db = Engine::new(schemas.store(1), Limits::default());
    let enqueue = || pollster::block_on(db.enqueue("q".into(), &item("a"), &kit::system_now));
    for _ in 0..2 {
        enqueue().expect("enqueue");
    }
    let trips = db.store().round_trips();
    enqueue().expect("enqueue");
    assert_eq!(db.store().round_trips() - trips, 1, "warm: one round trip");

    let table = db.store().qualified("messages");
    let mut holder = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    holder
        .batch_execute(&format!("BEGIN; LOCK TABLE {table} IN SHARE MODE"))
        .expect("lock");
    let hold = std::time::Duration::from_millis(500);
    let (m, started) = std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(hold);
            holder.batch_execute("COMMIT").expect("unlock");
        });
        let started = kit::system_now().expect("clock");
        (enqueue().expect("enqueue"), started)
    });
    let waited = m.created_at - started;
    assert!(
        waited >= 500 - SLACK_MS,
        "the message is dated {waited} ms after the call started, the lock was held 500 ms"
    );
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
