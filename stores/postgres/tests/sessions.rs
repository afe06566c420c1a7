//! Failures of the server and of its sessions, beyond the conformance cases: a killed session, a
//! held row lock, a closed store, a server that never answers, a pool with every session in use, a
//! call that panics.

mod common;

use std::time::Duration;

use common::Schemas;
use common::store::{admin, engine, hold, item, open};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Call, Engine, Error, Limits, Status};
use deadletter_postgres::{Options, PostgresStore};

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

    // So does one whose enqueue and ack go in one round trip (issue 24: the queue's row and the
    // claimed message remembered, their statements prepared): they go the usual way.
    let call = deadletter::Call {
        clock: &|| Ok(BASE),
        backoff: None,
        sample: 0.0,
    };
    let claim = || {
        let claimed = engine.claim("q".into(), Arg::Null, || "t".into(), &call);
        pollster::block_on(claimed)
            .expect("claim")
            .value
            .expect("one")
    };
    let ack =
        |id: i64| pollster::block_on(engine.succeed("q".into(), id.into(), Arg::Null, &at(BASE)));
    for _ in 0..2 {
        pollster::block_on(engine.enqueue("q".into(), &item("c"), &at(BASE))).expect("enqueue");
        let claimed = claim();
        ack(claimed.id).expect("ack");
    }
    let claimed = claim();
    let pid = backend_pid(store);
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate");
    std::thread::sleep(Duration::from_millis(100));
    let acked = ack(claimed.id).expect("ack");
    assert_eq!(acked.status, Status::Succeeded);
    let pid = backend_pid(store);
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate");
    std::thread::sleep(Duration::from_millis(100));
    let last =
        pollster::block_on(engine.enqueue("q".into(), &item("d"), &at(BASE))).expect("enqueue");
    assert_eq!(last.id, 5, "one insert each");
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
