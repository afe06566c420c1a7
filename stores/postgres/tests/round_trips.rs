//! The round trips of the hot paths (issue 24), counted, not timed: an enqueue of one message
//! without key or group takes 1 once the store read its queue's row (`BEGIN`, the insert guarded
//! by the settings it read and `COMMIT`, sent together; 2 before: `BEGIN` with the queue's row,
//! then the insert with `COMMIT`), a claim of one with nothing expired 2 (`BEGIN` with the
//! queue's row, the expiring messages, the expired leases and the head of the ready index, the
//! clock read before: no lock is waited for in them; the take with `COMMIT`), an ack or a
//! failure of a message the store wrote last (its claim) 1 (`BEGIN`, the write guarded by the
//! row's version and `COMMIT`; 2 otherwise: `BEGIN` with the message locked, then its write with
//! `COMMIT`). A claim stays at 2: what it takes is the head it reads. Before pipelining
//! (deadletter 0.x, issue 24's note) they took 4, 6 and 4; the claim took 3 until its reads went
//! with its `BEGIN`, the enqueue and the ack 2 until they went on what the store remembers. And a last write that fails still fails the call, writes nothing and leaves its
//! session usable (the `COMMIT` sent with it answers with a rollback).

mod common;

use common::Schemas;
use common::store::{admin, item};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Call, Engine, Limits, Message, Status};
use deadletter_postgres::PostgresStore;

fn call() -> Call<'static> {
    Call {
        clock: &|| Ok(BASE),
        backoff: None,
        sample: 0.0,
    }
}

fn claim(engine: &Engine<PostgresStore>) -> deadletter::Result<Option<Message>> {
    pollster::block_on(engine.claim("q".into(), Arg::Null, || "t".into(), &call())).map(|o| o.value)
}

fn enqueue(engine: &Engine<PostgresStore>, payload: &str) -> deadletter::Result<Message> {
    pollster::block_on(engine.enqueue("q".into(), &item(payload), &at(BASE)))
}

fn succeed(engine: &Engine<PostgresStore>, id: i64) -> deadletter::Result<Message> {
    pollster::block_on(engine.succeed("q".into(), id.into(), Arg::Null, &at(BASE)))
}

fn fail(engine: &Engine<PostgresStore>, id: i64) -> deadletter::Result<Message> {
    pollster::block_on(engine.fail(
        "q".into(),
        id.into(),
        "boom".into(),
        Arg::Null,
        Arg::Null,
        Arg::Null,
        &call(),
    ))
    .map(|outcome| outcome.value)
}

/// The round trips `f` took on `engine`'s store.
fn trips<T>(engine: &Engine<PostgresStore>, f: impl FnOnce() -> T) -> (T, u64) {
    let before = engine.store().round_trips();
    let out = f();
    (out, engine.store().round_trips() - before)
}

/// Runs every call of the hot paths twice on `engine` (one session): each statement prepared,
/// and every statement of the one-round-trip paths too (prepared the first time, when the call
/// took its usual path).
fn warm(engine: &Engine<PostgresStore>) {
    for _ in 0..2 {
        let m = enqueue(engine, "warm").expect("enqueue");
        assert_eq!(claim(engine).expect("claim").map(|c| c.id), Some(m.id));
        fail(engine, m.id).expect("fail");
        let m = enqueue(engine, "warm").expect("enqueue");
        claim(engine).expect("claim");
        succeed(engine, m.id).expect("succeed");
        assert_eq!(claim(engine).expect("claim"), None);
    }
}

#[test]
fn enqueue_ack_and_fail_take_one_round_trip_with_what_the_store_remembers_a_claim_two() {
    let schemas = Schemas::new("trips");
    let engine = Engine::new(schemas.store(1), Limits::default());
    warm(&engine);

    // A queue this store has not read yet: its row first (`BEGIN` with it), then the insert
    // with `COMMIT`; from then on, the insert alone, with `BEGIN` and `COMMIT`.
    let (_, n) = trips(&engine, || {
        pollster::block_on(engine.enqueue("new".into(), &item("x"), &at(BASE))).expect("enqueue")
    });
    assert_eq!(n, 2, "enqueue on a queue not read yet");
    let (_, n) = trips(&engine, || {
        pollster::block_on(engine.enqueue("new".into(), &item("y"), &at(BASE))).expect("enqueue")
    });
    assert_eq!(n, 1, "enqueue on a queue read before");

    let (m, n) = trips(&engine, || enqueue(&engine, "a").expect("enqueue"));
    assert_eq!(n, 1, "enqueue");
    let (claimed, n) = trips(&engine, || claim(&engine).expect("claim"));
    assert_eq!(claimed.map(|c| c.id), Some(m.id));
    assert_eq!(n, 2, "claim of one");
    let (acked, n) = trips(&engine, || succeed(&engine, m.id).expect("succeed"));
    assert_eq!(acked.status, Status::Succeeded);
    assert_eq!(n, 1, "succeed of a message this store claimed");
    let read = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(read, acked, "what the ack returned is what it stored");

    let m = enqueue(&engine, "b").expect("enqueue");
    claim(&engine).expect("claim");
    let (failed, n) = trips(&engine, || fail(&engine, m.id).expect("fail"));
    assert_eq!((failed.status, failed.retry_count), (Status::Pending, 1));
    assert_eq!(n, 1, "fail");
    let read = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(read, failed, "what the failure returned is what it stored");
    // Nothing to take (the failed one is in backoff): the reads, then `COMMIT` alone.
    let (none, n) = trips(&engine, || claim(&engine).expect("claim"));
    assert_eq!(none, None);
    assert_eq!(n, 2, "claim of none");

    // A message changed since this store wrote it (by another store, a tool): its guarded write
    // writes nothing, and the ack reads the row and decides on it.
    let m = enqueue(&engine, "c").expect("enqueue");
    claim(&engine).expect("claim").expect("the message");
    engine
        .store()
        .with_client(|client| {
            let table = engine.store().qualified("messages");
            let sql = format!("UPDATE {table} SET payload = 'tool' WHERE id = $1");
            client
                .execute(&sql, &[&m.id])
                .map_err(deadletter::Error::store)
        })
        .expect("a tool's update");
    let (acked, n) = trips(&engine, || succeed(&engine, m.id).expect("succeed"));
    assert_eq!(
        (acked.status, acked.payload.as_str()),
        (Status::Succeeded, "tool")
    );
    assert_eq!(n, 3, "the guarded write, then the usual two");
}

/// The statements `f` sent on `engine`'s store (`BEGIN`, `LOCK TABLE` and `COMMIT` each count).
fn statements<T>(engine: &Engine<PostgresStore>, f: impl FnOnce() -> T) -> (T, u64) {
    let before = engine.store().statements_sent();
    let out = f();
    (out, engine.store().statements_sent() - before)
}

/// Each statement costs the server its bind, executor start and end and its reply, beyond what
/// it executes (issue 24): a claim of one sends `BEGIN` and the table's lock (`NOWAIT`), its
/// three reads (the queue's row with the expiring messages; the expired leases with the move of
/// due messages; the head of the ready index), the take's write and `COMMIT`: 7 (9 until the
/// queue's row joined the expiring messages and generic plans became the session's setting); an
/// ack of a message the store claimed `BEGIN`, the lock (`NOWAIT`), its guarded write and
/// `COMMIT`: 4 (5 when it read the message first); an enqueue the same 4 (the guarded insert).
#[test]
fn a_claim_sends_seven_statements_an_ack_and_an_enqueue_four() {
    let schemas = Schemas::new("statements");
    let engine = Engine::new(schemas.store(1), Limits::default());
    warm(&engine);

    let (m, n) = statements(&engine, || enqueue(&engine, "a").expect("enqueue"));
    assert_eq!(n, 4, "enqueue");
    let (claimed, n) = statements(&engine, || claim(&engine).expect("claim"));
    assert_eq!(claimed.map(|c| c.id), Some(m.id));
    assert_eq!(n, 7, "claim of one");
    let (acked, n) = statements(&engine, || succeed(&engine, m.id).expect("succeed"));
    assert_eq!(acked.status, Status::Succeeded);
    assert_eq!(n, 4, "succeed");
}

#[test]
fn a_last_write_that_fails_fails_the_call_writes_nothing_and_the_session_carries_on() {
    let schemas = Schemas::new("lastwrite");
    let engine = Engine::new(schemas.store(1), Limits::default());
    let schema = engine.store().schema().to_owned();
    let mut admin = admin();
    // Refuses the payload "refused" and every write of status `$2`.
    let refuse = |admin: &mut postgres::Client, status: &str| {
        admin
            .batch_execute(&format!(
                "CREATE OR REPLACE FUNCTION \"{schema}\".refuse() RETURNS trigger AS $$ \
                 BEGIN IF NEW.status = '{status}' OR NEW.payload = 'refused'::bytea THEN \
                 RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$ \
                 LANGUAGE plpgsql; \
                 CREATE OR REPLACE TRIGGER refuse BEFORE INSERT OR UPDATE ON \
                 \"{schema}\".messages FOR EACH ROW EXECUTE FUNCTION \"{schema}\".refuse()"
            ))
            .expect("trigger");
    };
    let refused = |err: deadletter::Error| {
        assert_eq!(err.code(), "store");
        assert!(
            err.to_string()
                .contains("refused by the test (SQLSTATE P0001)"),
            "{err}"
        );
    };
    let count = |engine: &Engine<PostgresStore>| {
        engine
            .store()
            .with_client(|client| {
                client
                    .query_one(&format!("SELECT count(*) FROM \"{schema}\".messages"), &[])
                    .map(|row| row.get::<_, i64>(0))
                    .map_err(deadletter::Error::store)
            })
            .expect("count")
    };

    let m = enqueue(&engine, "a").expect("enqueue");
    refuse(&mut admin, "processing");
    refused(enqueue(&engine, "refused").expect_err("the insert is refused"));
    assert_eq!(count(&engine), 1, "the refused insert wrote nothing");
    refused(claim(&engine).expect_err("the take is refused"));
    let read = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(read.status, Status::Pending);

    refuse(&mut admin, "succeeded");
    let claimed = claim(&engine).expect("claim").expect("one");
    refused(succeed(&engine, claimed.id).expect_err("the ack is refused"));
    let read = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(read.status, Status::Processing);

    // The same session carries on: no transaction was left open or aborted on it.
    admin
        .batch_execute(&format!("DROP TRIGGER refuse ON \"{schema}\".messages"))
        .expect("drop trigger");
    let acked = succeed(&engine, claimed.id).expect("succeed");
    assert_eq!(acked.status, Status::Succeeded);
    let next = enqueue(&engine, "b").expect("enqueue");
    assert_eq!(count(&engine), 2);
    assert!(next.id > m.id);
}
