//! What a message's transitions write (issue 24), counted in WAL bytes, not timed: each message
//! is in one index of its status (schema version 6), so an enqueue writes the table, its primary
//! key and the index of ready messages; a claim the table, the key and the index of leases; an
//! ack the table, the key and the index of succeeded messages. Before version 6 two more indexes
//! held every message (by status, and by queue), and every transition wrote both. Its own test
//! binary: the WAL position is the server's, so no other test of this process may write
//! meanwhile; autovacuum is off on the table (its passes write WAL too).

mod common;

use common::Schemas;
use common::store::{admin, item};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Call, Engine, Limits};
use deadletter_postgres::PostgresStore;

const MESSAGES: u32 = 200;

/// The server's WAL insert position, in bytes.
fn wal(client: &mut postgres::Client) -> f64 {
    client
        .query_one(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8",
            &[],
        )
        .expect("wal")
        .get(0)
}

fn claim_and_ack(engine: &Engine<PostgresStore>) -> bool {
    let call = Call {
        clock: &|| Ok(BASE),
        backoff: None,
        sample: 0.0,
    };
    let claimed = pollster::block_on(engine.claim("q".into(), Arg::Null, || "t".into(), &call))
        .expect("claim")
        .value;
    let Some(m) = claimed else { return false };
    pollster::block_on(engine.succeed("q".into(), m.id.into(), "t".into(), &at(BASE)))
        .expect("ack");
    true
}

#[test]
fn an_enqueue_a_claim_and_an_ack_each_write_the_table_its_key_and_one_index() {
    let schemas = Schemas::new("wal");
    let engine = Engine::new(schemas.store(1), Limits::default());
    let mut admin = admin();
    let table = engine.store().qualified("messages");
    admin
        .batch_execute(&format!(
            "ALTER TABLE {table} SET (autovacuum_enabled = false)"
        ))
        .expect("no autovacuum");
    // Every statement prepared on the session first (a preparation writes no WAL, but the
    // catalog's caches may).
    let enqueue = || pollster::block_on(engine.enqueue("q".into(), &item("{\"n\": 1}"), &at(BASE)));
    enqueue().expect("enqueue");
    assert!(claim_and_ack(&engine));

    let from = wal(&mut admin);
    for _ in 0..MESSAGES {
        enqueue().expect("enqueue");
    }
    let enqueued = (wal(&mut admin) - from) / f64::from(MESSAGES);
    let from = wal(&mut admin);
    let mut acked = 0;
    while claim_and_ack(&engine) {
        acked += 1;
    }
    let cycled = (wal(&mut admin) - from) / f64::from(MESSAGES);
    assert_eq!(acked, MESSAGES);
    println!("WAL bytes per message: enqueue {enqueued:.0}, claim+ack {cycled:.0}");
    // Measured (PostgreSQL 15, no full-page images): enqueue 340, claim+ack 829; on schema
    // version 5, 493 and 1 095.
    assert!(enqueued < 420.0, "enqueue: {enqueued:.0} bytes");
    assert!(cycled < 960.0, "claim+ack: {cycled:.0} bytes");
}
