//! What the conformance cases cannot show: the schema's life (reopen, foreign and newer schemas),
//! options, byte-exact payloads, and failures of the server (a killed session, a held row lock,
//! racing idempotency keys).

mod common;

use std::time::Duration;

use common::{Schemas, url};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Call, Engine, Error, Item, Limits, Status};
use deadletter_postgres::{Options, PostgresStore, SCHEMA_VERSION};

fn item(payload: &str) -> Item<'_> {
    Item {
        payload: Arg::Str(payload),
        ..Item::default()
    }
}

fn admin() -> postgres::Client {
    postgres::Client::connect(&url(), postgres::NoTls).expect("connect")
}

fn open(schema: &str) -> deadletter::Result<PostgresStore> {
    let options = Options {
        schema: schema.to_owned(),
        max_connections: 1,
        ..Options::default()
    };
    PostgresStore::open(&url(), &options)
}

/// An engine over a store opened on the test server with `options`.
fn engine(options: &Options) -> Engine<PostgresStore> {
    Engine::new(
        PostgresStore::open(&url(), options).expect("open"),
        Limits::default(),
    )
}

/// Locks message `id` of schema `schema` (`FOR UPDATE`) until the returned transaction ends.
fn hold<'a>(admin: &'a mut postgres::Client, schema: &str, id: i64) -> postgres::Transaction<'a> {
    let mut holder = admin.transaction().expect("begin");
    holder
        .execute(
            &format!("SELECT 1 FROM \"{schema}\".messages WHERE id = $1 FOR UPDATE"),
            &[&id],
        )
        .expect("hold the message");
    holder
}

#[test]
fn a_schema_keeps_its_messages_and_foreign_or_newer_schemas_are_refused() {
    let schemas = Schemas::new("life");
    let name = schemas.name();
    let engine = Engine::new(open(&name).expect("create"), Limits::default());
    let m =
        pollster::block_on(engine.enqueue("q".into(), &item("hé ✓"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    drop(engine);
    let engine = Engine::new(open(&name).expect("reopen"), Limits::default());
    let again = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(again, m);
    let next =
        pollster::block_on(engine.enqueue("q".into(), &item("b"), &at(BASE))).expect("enqueue");
    assert_eq!(next.id, 2);
    drop(engine);

    let mut admin = admin();
    let newer = SCHEMA_VERSION + 1;
    admin
        .batch_execute(&format!(
            "UPDATE \"{name}\".deadletter_schema SET version = {newer}"
        ))
        .expect("bump version");
    let refused = open(&name).expect_err("newer schema");
    assert_eq!(refused.code(), "store");
    assert!(
        refused.to_string().contains(&format!(
            "schema version {newer}; this deadletter reads version {SCHEMA_VERSION}"
        )),
        "{refused}"
    );

    let foreign = schemas.name();
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA \"{foreign}\"; CREATE TABLE \"{foreign}\".orders (id int)"
        ))
        .expect("another application's schema");
    let refused = open(&foreign).expect_err("foreign schema");
    assert_eq!(refused.code(), "store");
    assert!(
        refused.to_string().contains("not a deadletter schema")
            && refused.to_string().contains("orders"),
        "{refused}"
    );
    // Refusing changed nothing there.
    let tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
            &[&foreign],
        )
        .expect("count")
        .get(0);
    assert_eq!(tables, 1);

    // An existing, empty schema (made by a DBA, say) is filled.
    let empty = schemas.name();
    admin
        .batch_execute(&format!("CREATE SCHEMA \"{empty}\""))
        .expect("empty schema");
    open(&empty).expect("an empty schema is taken");
}

#[test]
fn a_schema_name_with_quotes_and_spaces_is_quoted() {
    let schemas = Schemas::new("odd");
    let name = format!("{} \"x\"; DROP", schemas.name());
    let engine = Engine::new(open(&name).expect("open"), Limits::default());
    let m = pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    let mut admin = admin();
    let found: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&name],
        )
        .expect("count")
        .get(0);
    assert_eq!(found, 1);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA \"{}\" CASCADE",
            name.replace('"', "\"\"")
        ))
        .expect("drop");
}

#[test]
fn bad_options_are_validation_errors_that_never_show_the_password() {
    let fields = |err: Error| -> Vec<(&str, &str)> {
        assert_eq!(err.code(), "validation_failed");
        assert!(!err.to_string().contains("sekret"), "{err}");
        err.field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect()
    };
    let bad_url = PostgresStore::open(
        "postgresql://u:sekret@host:notaport/db",
        &Options::default(),
    )
    .expect_err("bad url");
    assert_eq!(fields(bad_url), [("url", "invalid")]);
    let options = |schema: &str, max_connections| Options {
        schema: schema.to_owned(),
        max_connections,
        ..Options::default()
    };
    let empty = PostgresStore::open(&url(), &options("", 1)).expect_err("empty schema");
    assert_eq!(fields(empty), [("schema", "empty")]);
    let long = PostgresStore::open(&url(), &options(&"s".repeat(64), 1)).expect_err("long");
    assert_eq!(fields(long), [("schema", "too_long")]);
    let none = PostgresStore::open(&url(), &options("deadletter", 0)).expect_err("no sessions");
    assert_eq!(fields(none), [("max_connections", "out_of_range")]);

    let unreachable = PostgresStore::open(
        "postgresql://u:sekret@127.0.0.1:1/db",
        &Options {
            connect_timeout: Duration::from_millis(300),
            ..Options::default()
        },
    )
    .expect_err("nobody listens on port 1");
    assert_eq!(unreachable.code(), "store");
    assert!(!unreachable.to_string().contains("sekret"), "{unreachable}");

    // A refused login fails at once with the server's reason, not after the pool's retries.
    let wrong = url().replacen("://deadletter:deadletter@", "://deadletter:sekret@", 1);
    assert_ne!(
        wrong,
        url(),
        "the test server's URL has the password of scripts/pg.sh"
    );
    let refused = PostgresStore::open(&wrong, &Options::default()).expect_err("wrong password");
    assert_eq!(
        refused.to_string(),
        "store error: PostgreSQL: cannot connect: password authentication failed for user \
         \"deadletter\" (SQLSTATE 28P01)"
    );
}

#[test]
fn payloads_round_trip_byte_for_byte_and_nul_in_a_queue_name_is_refused_before_the_store() {
    let schemas = Schemas::new("bytes");
    let engine = Engine::new(schemas.store(1), Limits::default());
    pollster::block_on(async {
        let odd = "nul \0 inside, emoji 🦀, CR\r\n, quote ' and \\";
        let m = engine
            .enqueue("q".into(), &item(odd), &at(BASE))
            .await
            .expect("enqueue");
        assert_eq!(
            engine.get("q".into(), m.id.into()).await.unwrap().payload,
            odd
        );

        let err = engine
            .enqueue("q\0".into(), &item("a"), &at(BASE))
            .await
            .expect_err("NUL in a queue name");
        assert_eq!(err.code(), "validation_failed");
        assert!(err.to_string().contains("U+0000"), "{err}");
        assert_eq!(engine.queues(&at(BASE)).await.unwrap().len(), 1);
    });
}

/// The backend pid of the store's only session.
fn backend_pid(store: &PostgresStore) -> i32 {
    store
        .with_client(|client| {
            client
                .query_one("SELECT pg_backend_pid()", &[])
                .map(|row| row.get(0))
                .map_err(Error::store)
        })
        .expect("pid")
}

#[test]
fn a_session_killed_mid_transaction_fails_the_call_writes_nothing_and_the_next_call_reconnects() {
    let schemas = Schemas::new("killed");
    let engine = Engine::new(schemas.store(1), Limits::default());
    let store = engine.store();
    let m = pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    let pid = backend_pid(store);
    let mut admin = admin();

    // The step runs between the locking read and the write: kill the session there.
    let err = pollster::block_on(deadletter::Store::update(
        store,
        "q",
        m.id,
        &at(BASE),
        |mut message: deadletter::Message, _: &deadletter::Context| {
            admin
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .expect("terminate");
            message.status = Status::Dead;
            Ok(message)
        },
    ))
    .expect_err("the session died before the write");
    assert_eq!(err.code(), "store");
    assert!(
        err.to_string().starts_with("store error: PostgreSQL"),
        "{err}"
    );

    // Nothing was written, and the next call works on a new session.
    let read = pollster::block_on(engine.get("q".into(), m.id.into())).expect("reconnects");
    assert_eq!(read, m);
    assert_ne!(backend_pid(store), pid);

    // An idle session that died (a server restart, an admin's kill) costs the caller nothing.
    let pid = backend_pid(store);
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate");
    std::thread::sleep(Duration::from_millis(100));
    let second =
        pollster::block_on(engine.enqueue("q".into(), &item("b"), &at(BASE))).expect("enqueue");
    assert_eq!(second.id, 2);
}

#[test]
fn a_row_held_past_the_lock_timeout_is_a_store_error_and_claims_skip_it() {
    let schemas = Schemas::new("locked");
    let name = schemas.name();
    let options = Options {
        schema: name.clone(),
        max_connections: 1,
        lock_timeout: Duration::from_millis(200),
        ..Options::default()
    };
    let engine = engine(&options);
    let clock = at(BASE);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    pollster::block_on(async {
        let first = engine
            .enqueue("q".into(), &item("a"), &at(BASE))
            .await
            .unwrap();
        let second = engine
            .enqueue("q".into(), &item("b"), &at(BASE))
            .await
            .unwrap();
        let mut admin = admin();
        let holder = hold(&mut admin, &name, first.id);

        let err = engine
            .replay("q".into(), first.id.into(), Arg::Null, &at(BASE))
            .await
            .expect_err("waits 200 ms, then gives up");
        assert_eq!(err.code(), "store");
        assert!(
            err.to_string().contains("55P03"),
            "lock_not_available: {err}"
        );

        // claim does not wait for the held row: it takes the next one.
        let taken = engine
            .claim("q".into(), Arg::Null, || "t".into(), &call)
            .await
            .unwrap()
            .value
            .expect("the second message");
        assert_eq!(taken.id, second.id);
        holder.rollback().expect("release");
        let taken = engine
            .claim("q".into(), Arg::Null, || "u".into(), &call)
            .await
            .unwrap()
            .value
            .expect("the first message, now free");
        assert_eq!(taken.id, first.id);
    });
}

#[test]
fn racing_producers_with_the_same_idempotency_keys_store_each_key_once() {
    let schemas = Schemas::new("race");
    let name = schemas.name();
    open(&name).expect("create");
    let results: Vec<Vec<(i64, bool)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let engine = Engine::new(open(&name).expect("open"), Limits::default());
                    (0..200)
                        .map(|k| {
                            let key = format!("key-{k}");
                            let job = Item {
                                payload: Arg::Str("p"),
                                idempotency_key: Arg::Str(&key),
                                ..Item::default()
                            };
                            let m = pollster::block_on(engine.enqueue("q".into(), &job, &at(BASE)))
                                .expect("enqueue");
                            (m.id, m.deduplicated)
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    // Every producer got, for each key, the one stored message; exactly one of them inserted it.
    for k in 0..200 {
        let ids: Vec<i64> = results.iter().map(|r| r[k].0).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "key-{k}: {ids:?}");
        let inserted = results.iter().filter(|r| !r[k].1).count();
        assert_eq!(inserted, 1, "key-{k}");
    }
    let stored: i64 = admin()
        .query_one(&format!("SELECT count(*) FROM \"{name}\".messages"), &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, 200);
}

#[test]
fn racing_batches_with_the_same_keys_in_different_orders_never_deadlock() {
    // Each transaction inserts its keys in item order; two batches holding the same keys in
    // different orders waited for each other (PostgreSQL: "deadlock detected", 40P01).
    let schemas = Schemas::new("keyorder");
    let name = schemas.name();
    open(&name).expect("create");
    // Round r's batches hold keys 20r..20r+60: new keys in every round, most shared.
    let keys: Vec<String> = (0..260).map(|k| format!("key-{k}")).collect();
    let start = std::sync::Barrier::new(4);
    let results: Vec<deadletter::Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4_usize)
            .map(|worker| {
                let (keys, name, start) = (&keys, &name, &start);
                scope.spawn(move || {
                    let engine = Engine::new(open(name).expect("open"), Limits::default());
                    start.wait();
                    for round in 0..10_usize {
                        // A different order in every worker and round: rotated, every other one reversed.
                        let mut order: Vec<&String> =
                            keys[20 * round..20 * round + 60].iter().collect();
                        order.rotate_left((worker * 17 + round * 7) % 60);
                        if (worker + round) % 2 == 1 {
                            order.reverse();
                        }
                        let items: Vec<Item<'_>> = order
                            .iter()
                            .map(|key| Item {
                                payload: Arg::Str("p"),
                                idempotency_key: Arg::Str(key),
                                ..Item::default()
                            })
                            .collect();
                        pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE)))?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for result in &results {
        assert!(result.is_ok(), "{result:?}");
    }
    let stored: i64 = admin()
        .query_one(&format!("SELECT count(*) FROM \"{name}\".messages"), &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, 240);
}

#[test]
fn racing_batches_get_ascending_ids_in_item_order_and_each_id_its_own_payload() {
    let schemas = Schemas::new("batches");
    let name = schemas.name();
    open(&name).expect("create");
    std::thread::scope(|scope| {
        for producer in ["a", "b", "c"] {
            let name = &name;
            scope.spawn(move || {
                let engine = Engine::new(open(name).expect("open"), Limits::default());
                let payloads: Vec<String> = (0..1000).map(|i| format!("{producer}-{i}")).collect();
                let items: Vec<Item<'_>> = payloads.iter().map(|p| item(p)).collect();
                for _ in 0..5 {
                    let batch =
                        pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE)))
                            .expect("enqueue_many");
                    assert!(batch.windows(2).all(|w| w[0].id < w[1].id), "ascending ids");
                    for (m, p) in batch.iter().zip(&payloads) {
                        assert_eq!(&m.payload, p);
                        let stored =
                            pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
                        assert_eq!(&stored.payload, p, "message {}", m.id);
                    }
                }
            });
        }
    });
}

#[test]
fn a_closed_store_fails_with_a_store_error_and_ends_its_sessions() {
    let schemas = Schemas::new("closed");
    let name = schemas.name();
    let engine = Engine::new(open(&name).expect("open"), Limits::default());
    pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    let pid = backend_pid(engine.store());
    engine.store().close().expect("close");
    engine.store().close().expect("close twice");
    assert!(engine.store().is_closed());
    let err = pollster::block_on(engine.get("q".into(), 1_i64.into())).expect_err("closed");
    assert_eq!(
        (err.code(), err.to_string().contains("closed")),
        ("store", true)
    );
    // The session is gone from the server (the backend exits once the socket closes).
    let mut admin = admin();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let alive: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .expect("count")
            .get(0);
        if alive == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "session {pid} still open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The threads of this process whose name starts with `prefix` (Linux: `/proc/self/task`).
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

#[test]
fn a_server_that_accepts_and_never_answers_fails_the_open_within_connect_timeout() {
    // The driver's connect_timeout bounds only the TCP connection; a proxy whose backend is gone
    // accepts and stays silent. The login is bounded too, and leaves no thread or socket behind.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let silent = std::thread::spawn(move || {
        // Holds every connection open without a word, until it has seen three.
        let held: Vec<_> = listener.incoming().take(3).collect();
        std::thread::sleep(Duration::from_secs(1));
        drop(held);
    });
    let options = Options {
        connect_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let url = format!("postgresql://u:secret@127.0.0.1:{port}/db");
        let err = PostgresStore::open(&url, &options).expect_err("no login");
        let waited = started.elapsed();
        assert_eq!(err.code(), "store");
        assert_eq!(
            err.to_string(),
            "store error: PostgreSQL: cannot connect: the server did not complete the login \
             within 300ms"
        );
        assert!(waited < Duration::from_secs(2), "waited {waited:?}");
    }
    // Linux names a thread by its first 15 bytes: "deadletter-post" for the store's logins.
    assert_eq!(
        threads_named("deadletter-post"),
        0,
        "a login thread was left behind"
    );
    silent.join().expect("listener");
}

#[test]
fn a_call_waits_connect_timeout_for_a_session_when_all_are_in_use() {
    let schemas = Schemas::new("busy");
    let name = schemas.name();
    let options = Options {
        schema: name.clone(),
        max_connections: 1,
        connect_timeout: Duration::from_millis(200),
        ..Options::default()
    };
    let engine = engine(&options);
    let first =
        pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    // The store's one session waits for a row another session holds; meanwhile a second call
    // must wait for a session, then fail.
    let mut admin = admin();
    let holder = hold(&mut admin, &name, first.id);
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            pollster::block_on(engine.replay("q".into(), first.id.into(), Arg::Null, &at(BASE)))
        });
        std::thread::sleep(Duration::from_millis(300)); // the replay holds the session by now
        let started = std::time::Instant::now();
        let err = pollster::block_on(engine.get("q".into(), first.id.into())).expect_err("busy");
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(
            err.to_string(),
            "store error: PostgreSQL: no connection within 200ms: all 1 sessions are in use"
        );
        holder.rollback().expect("release");
        let err = waiting.join().expect("replay").expect_err("not dead");
        assert_eq!(err.code(), "conflict");
    });
    // Given back, the session serves the next call.
    let message = pollster::block_on(engine.get("q".into(), first.id.into())).expect("get");
    assert_eq!(message.payload, "a");
}

#[test]
fn a_role_given_only_an_empty_schema_made_for_it_can_open_it() {
    // The README's second way: a role without the right to create schemas in the database, and
    // an empty schema an administrator made for it.
    let schemas = Schemas::new("granted");
    let name = schemas.name();
    let role = format!("{name}_role");
    let mut admin = admin();
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'; CREATE SCHEMA \"{name}\" AUTHORIZATION \"{role}\""
        ))
        .expect("role and schema");
    let can_create: bool = admin
        .query_one(
            "SELECT has_database_privilege($1, current_database(), 'CREATE')",
            &[&role],
        )
        .expect("privilege")
        .get(0);
    assert!(!can_create, "the role must not be able to create schemas");
    let url = url();
    let (_, host) = url.split_once('@').expect("user@host");
    let options = Options {
        schema: name.clone(),
        ..Options::default()
    };
    let opened = PostgresStore::open(&format!("postgresql://{role}:pw@{host}"), &options);
    let engine = Engine::new(opened.expect("open"), Limits::default());
    let m = pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    drop(engine);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA \"{name}\" CASCADE; DROP ROLE \"{role}\""
        ))
        .expect("clean up");
}

#[test]
fn a_call_that_panics_holds_no_row_lock_afterwards() {
    // A panic in a step (here the caller's lease-token closure, inside claim's transaction) must
    // not lend its session again with the transaction open: its row locks would stay, and the
    // next BEGIN on it would join the half-done transaction.
    let schemas = Schemas::new("panicked");
    let name = schemas.name();
    let engine = Engine::new(open(&name).expect("open"), Limits::default());
    let other = Engine::new(open(&name).expect("open"), Limits::default());
    let clock = at(BASE);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let items = [item("a"), item("b")];
    pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE))).expect("enqueue");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pollster::block_on(engine.claim_many(
            "q".into(),
            2_i64.into(),
            Arg::Null,
            || panic!("token"),
            &call,
        ))
    }));
    assert!(panicked.is_err());
    // The other store's workers can claim both (the server ends the closed session's
    // transaction as soon as it sees the socket close).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let claimed = pollster::block_on(other.claim_many(
            "q".into(),
            2_i64.into(),
            Arg::Null,
            || "t".into(),
            &call,
        ))
        .expect("claim")
        .value;
        if claimed.len() == 2 {
            break;
        }
        assert!(claimed.is_empty(), "{claimed:?}");
        assert!(std::time::Instant::now() < deadline, "the rows stay locked");
        std::thread::sleep(Duration::from_millis(20));
    }
    // And the first store works on a new session.
    assert_eq!(
        pollster::block_on(engine.get("q".into(), 1_i64.into()))
            .expect("get")
            .status,
        Status::Processing
    );
}
