//! What a store remembers of the rows it read and wrote (issue 24: an enqueue and an ack in one
//! round trip) is a guess the database checks in the transaction that writes: two stores on one
//! schema (two processes), one changing what the other remembers, and a tool's `UPDATE`. Every
//! call decides on the rows as they are, with the outcome and errors of a store that remembers
//! nothing; a guess refused spends no identity value.

mod common;

use common::Schemas;
use common::store::{item, open};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{
    Arg, Backoff, Call, Engine, Limits, Message, QueueSettings, SettingsArgs, Status,
};
use deadletter_postgres::PostgresStore;

fn call() -> Call<'static> {
    Call {
        clock: &|| Ok(BASE),
        backoff: None,
        sample: 0.0,
    }
}

fn enqueue(db: &Engine<PostgresStore>) -> Message {
    pollster::block_on(db.enqueue("q".into(), &item("p"), &at(BASE))).expect("enqueue")
}

fn claim(db: &Engine<PostgresStore>, token: &str) -> Message {
    let token = token.to_owned();
    pollster::block_on(db.claim("q".into(), Arg::Null, move || token.clone(), &call()))
        .expect("claim")
        .value
        .expect("a message")
}

fn fail(db: &Engine<PostgresStore>, id: i64, token: &str) -> deadletter::Result<Message> {
    let outcome = pollster::block_on(db.fail(
        "q".into(),
        id.into(),
        "boom".into(),
        token.into(),
        Arg::Null,
        Arg::Null,
        &call(),
    ));
    outcome.map(|o| o.value)
}

fn succeed(db: &Engine<PostgresStore>, id: i64, token: Arg<'_>) -> deadletter::Result<Message> {
    pollster::block_on(db.succeed("q".into(), id.into(), token, &at(BASE)))
}

fn settings(db: &Engine<PostgresStore>, settings: QueueSettings) {
    let args = SettingsArgs {
        queue: "q".into(),
        settings,
    };
    pollster::block_on(db.set_settings(&args)).expect("settings");
}

/// Two engines on one new schema, each over a store of its own (one session each), both warm:
/// every statement of the one-round-trip paths prepared on their sessions.
fn two(schemas: &Schemas) -> (Engine<PostgresStore>, Engine<PostgresStore>) {
    let schema = schemas.name();
    let a = Engine::new(open(&schema).expect("open"), Limits::default());
    let b = Engine::new(open(&schema).expect("open"), Limits::default());
    // The failed ones wait for their backoff: no claim at `BASE` takes them.
    for db in [&a, &b] {
        for _ in 0..2 {
            let m = enqueue(db);
            claim(db, "warm");
            fail(db, m.id, "warm").expect("fail");
            let m = enqueue(db);
            claim(db, "warm");
            succeed(db, m.id, Arg::Null).expect("succeed");
        }
    }
    (a, b)
}

#[test]
fn an_enqueue_takes_the_settings_another_store_wrote_since_and_spends_no_id_on_its_guess() {
    let schemas = Schemas::new("remembered_settings");
    let (a, b) = two(&schemas);
    let first = enqueue(&a);
    assert_eq!((first.max_retries, first.expires_at), (3, None));

    let set = QueueSettings {
        max_retries: Some(1),
        expires_in_ms: Some(60_000),
        ..QueueSettings::default()
    };
    settings(&b, set);
    let second = enqueue(&a);
    assert_eq!(
        (second.max_retries, second.expires_at),
        (1, Some(BASE + 60_000)),
        "the settings stored now"
    );
    assert_eq!(second.id, first.id + 1, "the refused guess drew no id");

    // Back to the defaults: the queue has no row any more.
    settings(&b, QueueSettings::default());
    let third = enqueue(&a);
    assert_eq!((third.max_retries, third.expires_at), (3, None));
    assert_eq!(third.id, second.id + 1);

    // Paused by another store: remembered settings that are not paused are refused too.
    pollster::block_on(b.pause("q".into(), true)).expect("pause");
    enqueue(&a);
    let stored = pollster::block_on(a.settings("q".into())).expect("settings");
    assert!(stored.paused);
    // Two messages at once take the batch's statement, guarded the same way.
    settings(&b, set);
    let items = [item("x"), item("y")];
    let many = pollster::block_on(a.enqueue_many("q".into(), &items, &at(BASE))).expect("many");
    let got: Vec<_> = many.iter().map(|m| (m.max_retries, m.expires_at)).collect();
    assert_eq!(got, [(1, Some(BASE + 60_000)); 2]);
}

#[test]
fn an_ack_decides_on_the_row_another_store_wrote_since_its_claim() {
    let schemas = Schemas::new("remembered_rows");
    let (a, b) = two(&schemas);

    // B fails the message A claimed and claims it again: A's ack with its token lost the lease,
    // as a store that remembers nothing would say; the message stays B's.
    let m = enqueue(&a);
    let claimed = claim(&a, "ta");
    assert_eq!(claimed.id, m.id);
    fail(&b, m.id, "ta").expect("b fails it");
    pollster::block_on(b.retry_now("q".into(), m.id.into(), &at(BASE))).expect("due");
    assert_eq!(claim(&b, "tb").id, m.id);
    let err = succeed(&a, m.id, "ta".into()).expect_err("the lease was lost");
    assert_eq!(err.code(), "conflict", "{err}");
    let stored = pollster::block_on(a.get("q".into(), m.id.into())).expect("get");
    assert_eq!(
        (stored.status, stored.lease_token.as_deref()),
        (Status::Processing, Some("tb"))
    );
    // Without a token, the ack acks the row as stored (B's failure in its history).
    let acked = succeed(&a, m.id, Arg::Null).expect("succeed");
    assert_eq!(
        (acked.status, acked.retry_count, acked.errors.len()),
        (Status::Succeeded, 1, 1)
    );
    assert_eq!(
        pollster::block_on(a.get("q".into(), m.id.into())).expect("get"),
        acked
    );

    // B sets a backoff after A claimed: A's failure backs off by it.
    let m = enqueue(&a);
    claim(&a, "ta");
    let backoff = Backoff {
        initial_ms: 60_000,
        multiplier: 2.0,
        cap_ms: 600_000,
        ..Backoff::default()
    };
    let set = QueueSettings {
        backoff: Some(backoff),
        ..QueueSettings::default()
    };
    settings(&b, set);
    let failed = fail(&a, m.id, "ta").expect("fail");
    assert_eq!(
        failed.retry_after,
        Some(BASE + 60_000),
        "the stored backoff"
    );

    // B extends the lease of a message A claimed: A's extend and ack carry on from B's row.
    let m = enqueue(&a);
    claim(&a, "ta");
    let extended = pollster::block_on(b.extend(
        "q".into(),
        m.id.into(),
        "ta".into(),
        Arg::Int(600_000),
        &at(BASE + 5),
    ))
    .expect("b extends");
    let acked = succeed(&a, m.id, "ta".into()).expect("succeed");
    assert_eq!(acked.status, Status::Succeeded);
    assert_eq!(
        pollster::block_on(a.get("q".into(), m.id.into())).expect("get"),
        acked
    );
    assert!(extended.lease_expires_at > Some(BASE));
}
