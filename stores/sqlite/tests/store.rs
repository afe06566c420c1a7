//! What the conformance cases cannot show: a file's life (reopen, a newer schema, another
//! application's file, a folder named in errors as given), a closed store, racing connections on one idempotency key, a duplicate
//! key that writes nothing, and `move_all` over many batches of grouped messages (the kit's).

mod common;

use common::{TempDb, engine, item, user_version};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Engine, Error, Item, Limits, Message};
use deadletter_sqlite::{Durability, SCHEMA_VERSION, SqliteStore};

#[test]
fn a_file_keeps_its_messages_and_a_newer_schema_is_refused() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let m = pollster::block_on(db.enqueue("q".into(), &item("hé ✓"), &at(BASE))).expect("enqueue");
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    drop(db);
    let db = engine(&file.0);
    let again = pollster::block_on(db.get("q".into(), m.id.into())).expect("get");
    assert_eq!(again, m);
    db.store()
        .with_connection(|conn| {
            conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                .map_err(Error::store)
        })
        .expect("bump version");
    drop(db);
    let refused = SqliteStore::open(&file.0, Durability::Full).expect_err("newer schema");
    assert_eq!(refused.code(), "store");
    let newer = format!("schema version {}", SCHEMA_VERSION + 1);
    assert!(refused.to_string().contains(&newer), "{refused}");
}

#[test]
fn a_closed_store_fails_with_a_store_error() {
    let db = Engine::new(
        SqliteStore::open(":memory:".as_ref(), Durability::Full).expect("open"),
        Limits::default(),
    );
    db.store().close().expect("close");
    db.store().close().expect("close twice");
    let err = pollster::block_on(db.get("q".into(), 1_i64.into())).expect_err("closed");
    assert_eq!(err.code(), "store");
}

#[test]
fn a_path_that_cannot_be_opened_is_named_as_given() {
    // Issue 19: `./adir` read `././adir`. (The tests run in the crate's folder: `tests` is one.)
    for given in ["./tests", "tests", "tests/common/"] {
        let refused = SqliteStore::open(given.as_ref(), Durability::Full).expect_err("a folder");
        assert_eq!(refused.code(), "store");
        let said = refused.to_string();
        assert!(said.ends_with(&format!(": {given}")), "{said}");
    }
}

#[test]
fn a_path_ending_in_a_separator_is_a_folder_and_nothing_is_created() {
    // Tester T7 (session 13): SQLite dropped the end and made the file `trail`.
    for end in ["/", "/."] {
        let file = TempDb::new();
        let mut given = file.0.clone().into_os_string();
        given.push(end);
        let refused = SqliteStore::open(given.as_ref(), Durability::Full).expect_err("a folder");
        assert_eq!(refused.code(), "store");
        let said = format!(
            "store error: unable to open database file: {}",
            given.display()
        );
        assert_eq!(refused.to_string(), said);
        assert!(!file.0.exists(), "{} was created", file.0.display());
    }
}

#[test]
fn only_memory_itself_is_the_in_memory_database() {
    // Tester T9 (session 13): `Path` equality ignores a trailing `/` or `/.`, so `:memory:/`
    // opened the in-memory database. It is a folder's path now, refused as the others.
    for given in [":memory:/", ":memory:/."] {
        let refused = SqliteStore::open(given.as_ref(), Durability::Full).expect_err("a folder");
        let said = format!("store error: unable to open database file: {given}");
        assert_eq!(refused.to_string(), said);
    }
    assert!(SqliteStore::open(":memory:".as_ref(), Durability::Full).is_ok());
}

#[test]
fn another_applications_file_is_refused() {
    let file = TempDb::new();
    let conn = rusqlite::Connection::open(&file.0).expect("open");
    conn.execute_batch("CREATE TABLE foo (x)").expect("create");
    drop(conn);
    let refused = SqliteStore::open(&file.0, Durability::Full).expect_err("foreign file");
    assert!(
        refused.to_string().contains("not a deadletter database"),
        "{refused}"
    );
}

#[test]
fn two_connections_racing_with_one_key_insert_one_message() {
    let file = TempDb::new();
    drop(engine(&file.0));
    let keyed = Item {
        payload: "x".into(),
        idempotency_key: "k".into(),
        ..Item::default()
    };
    let results: Vec<Message> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let path = file.0.clone();
                let keyed = keyed.clone();
                scope.spawn(move || {
                    let db = engine(&path);
                    (0..50)
                        .map(|_| pollster::block_on(db.enqueue("q".into(), &keyed, &at(BASE))))
                        .collect::<Result<Vec<_>, _>>()
                        .expect("enqueue")
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    assert_eq!(results.iter().filter(|m| !m.deduplicated).count(), 1);
    assert!(results.iter().all(|m| m.id == 1));
}

/// A duplicate enqueue returns the stored message and writes nothing: not a frame is appended to
/// the WAL and another connection sees no change (`PRAGMA data_version`); the next message still
/// gets the next id.
#[test]
fn a_duplicate_key_writes_nothing() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let keyed = |payload| Item {
        payload,
        idempotency_key: "k".into(),
        ..Item::default()
    };
    let first =
        pollster::block_on(db.enqueue("q".into(), &keyed("a".into()), &at(BASE))).expect("enqueue");
    let other = rusqlite::Connection::open(&file.0).expect("open");
    let version = || -> i64 {
        other
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .expect("data_version")
    };
    let wal = file.0.with_extension("db-wal");
    let (size, seen) = (std::fs::metadata(&wal).expect("wal").len(), version());
    let again = pollster::block_on(db.enqueue("q".into(), &keyed("b".into()), &at(BASE + 1)))
        .expect("enqueue");
    assert!(again.deduplicated);
    assert_eq!(
        Message {
            deduplicated: false,
            ..again
        },
        first
    );
    assert_eq!(std::fs::metadata(&wal).expect("wal").len(), size);
    assert_eq!(version(), seen);
    let next = pollster::block_on(db.enqueue("q".into(), &item("c"), &at(BASE))).expect("enqueue");
    assert_eq!(next.id, first.id + 1);
}

#[test]
fn a_bulk_move_keeps_every_group_in_order_across_batches() {
    let file = TempDb::new();
    deadletter::conformance::kit::a_bulk_move_keeps_every_group_in_order_across_batches(&engine(
        &file.0,
    ));
}

#[test]
fn a_queue_under_a_name_now_refused_keeps_working() {
    let file = TempDb::new();
    deadletter::conformance::kit::a_queue_under_a_name_now_refused_keeps_working(&engine(&file.0));
}

#[test]
fn a_queue_row_stored_under_a_name_now_refused_is_paused_and_configured() {
    // Session 10: a row written raw (as 0.1.0 or a session-8 build could store it) under names
    // an enqueue refuses; the queue exists, so pause and set_settings take it, and once its
    // settings are cleared (the row deleted) it no longer exists and pause is refused again.
    let file = TempDb::new();
    let db = engine(&file.0);
    let clock = at(BASE);
    for name in ["..", "emails ", "jobs\u{200d}"] {
        db.store()
            .with_connection(|conn| {
                conn.execute(
                    "INSERT INTO queues (name, max_retries) VALUES (?1, 7)",
                    [name],
                )
                .map_err(Error::store)
            })
            .expect("raw row");
        let paused = pollster::block_on(db.pause(name.into(), true)).expect("pause");
        assert_eq!(
            (paused.paused, paused.max_retries),
            (true, Some(7)),
            "{name:?}"
        );
        let listed = pollster::block_on(db.queues(&clock)).expect("queues");
        assert_eq!(
            listed
                .iter()
                .map(|s| (s.queue.as_str(), s.paused))
                .collect::<Vec<_>>(),
            [(name, true)]
        );
        let none = deadletter::Arg::Null;
        let args = |retries| {
            deadletter::SettingsArgs::new(&name.into(), None, &retries, &none, &none, &none)
                .expect("valid")
        };
        let set = pollster::block_on(db.set_settings(&args(deadletter::Arg::Int(5))));
        assert_eq!(set.expect("set_settings").max_retries, Some(5));
        assert!(
            !pollster::block_on(db.pause(name.into(), false))
                .expect("resume")
                .paused
        );
        let cleared = pollster::block_on(db.set_settings(&args(none.clone()))).expect("clear");
        assert_eq!(cleared, deadletter::QueueSettings::default());
        assert!(
            pollster::block_on(db.queues(&clock))
                .expect("queues")
                .is_empty()
        );
        let refused = pollster::block_on(db.pause(name.into(), true)).expect_err("no queue");
        let fields: Vec<_> = refused
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(fields, [("queue", "invalid")], "{name:?}");
    }
}
