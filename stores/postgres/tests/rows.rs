//! Rows changed behind the store's back: a value deadletter never writes is read back as the
//! core's store error, naming the message and the column, as in every store.

mod common;

use common::{Schemas, url};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{self, at};
use deadletter::{Arg, Engine, Item, Limits};
use deadletter_postgres::{Options, PostgresStore};

/// A row changed behind the store's back to hold an instant deadletter never writes is the same
/// store error as in every store, naming the message and the column (the core's check); the
/// other messages still read. (Before the check, PostgreSQL returned such a message as it was.)
#[test]
fn a_value_deadletter_never_writes_is_a_store_error_naming_message_and_column() {
    let schemas = Schemas::new("corrupt");
    let name = schemas.name();
    let options = Options {
        schema: name.clone(),
        max_connections: 1,
        ..Options::default()
    };
    let store = PostgresStore::open(&url(), &options).expect("open");
    let engine = Engine::new(store, Limits::default());
    for payload in ["one", "two", "three"] {
        let item = Item {
            payload: Arg::Str(payload),
            ..Item::default()
        };
        pollster::block_on(engine.enqueue("q".into(), &item, &at(BASE))).expect("enqueue");
    }
    let mut admin = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    let table = format!("\"{name}\".messages");
    admin
        .batch_execute(&format!(
            "UPDATE {table} SET created_at = 253402300800000 WHERE id = 1; \
             UPDATE {table} SET errors = '[{{\"attempt\": 1, \"error\": \"x\", \
             \"at\": -62135596800001}}]' WHERE id = 2"
        ))
        .expect("corrupt two rows");
    let time_range = "outside the time range deadletter writes (0001-01-01T00:00:00Z to \
                      9999-12-31T23:59:59.999Z, in UTC milliseconds)";
    let err = pollster::block_on(engine.get("q".into(), 1_i64.into())).expect_err("corrupt");
    assert_eq!(
        err.to_string(),
        format!(
            "store error: message 1 is corrupt: column created_at: holds 253402300800000, \
             {time_range}"
        )
    );
    let err = pollster::block_on(engine.get("q".into(), 2_i64.into())).expect_err("corrupt");
    assert_eq!(
        err.to_string(),
        format!(
            "store error: message 2 is corrupt: column errors: holds a failure at \
             -62135596800001, {time_range}"
        )
    );
    let err = kit::list(&engine, "q").expect_err("a page with a corrupt message");
    assert_eq!(err.code(), "store");
    let three = pollster::block_on(engine.get("q".into(), 3_i64.into())).expect("get");
    assert_eq!(three.payload, "three");
}

/// Schema version 6 dropped the check constraints on `status` and the counters (each write
/// statement evaluated them): a status or a count deadletter never writes, set behind the store's
/// back, is refused when read, as the constraints refused it when written.
#[test]
fn a_status_or_a_count_deadletter_never_writes_is_a_store_error() {
    let schemas = Schemas::new("corrupt6");
    let name = schemas.name();
    let options = Options {
        schema: name.clone(),
        max_connections: 1,
        ..Options::default()
    };
    let store = PostgresStore::open(&url(), &options).expect("open");
    let engine = Engine::new(store, Limits::default());
    for payload in ["one", "two", "three", "four"] {
        let item = Item {
            payload: Arg::Str(payload),
            ..Item::default()
        };
        pollster::block_on(engine.enqueue("q".into(), &item, &at(BASE))).expect("enqueue");
    }
    let mut admin = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    let table = format!("\"{name}\".messages");
    admin
        .batch_execute(&format!(
            "UPDATE {table} SET status = 'lost' WHERE id = 1; \
             UPDATE {table} SET retry_count = -1 WHERE id = 2; \
             UPDATE {table} SET replay_count = -1 WHERE id = 3"
        ))
        .expect("corrupt three rows");
    for id in 1..=3_i64 {
        let err = pollster::block_on(engine.get("q".into(), id.into())).expect_err("corrupt");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("store error: message {id} is corrupt: column ")),
            "{text}"
        );
    }
    let four = pollster::block_on(engine.get("q".into(), 4_i64.into())).expect("get");
    assert_eq!(four.payload, "four");
}
