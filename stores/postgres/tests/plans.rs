//! The query plans that keep `claim` cheap on a large table: 1 000 000 messages, most finished,
//! dead or in backoff. Claim's two reads must walk their partial indexes (no sequential scan, no
//! sort), both as first planned and as the generic plan a session settles on.

mod common;

use common::Schemas;
use deadletter::conformance::BASE;
use deadletter::{Arg, Backoff, Engine, Error, Limits, Moment};
use deadletter_postgres::PostgresStore;

const ROWS: i64 = 1_000_000;
const NOW: i64 = BASE + 2 * ROWS;

/// 1 000 000 messages created 1 ms apart in two queues (`other` holds every tenth block of 100):
/// per 100, 60 succeeded, 15 dead, 15 pending in backoff, 1 processing (its lease ran out in one
/// of each 100 such), 9 pending and due. Then `VACUUM ANALYZE`, as autovacuum leaves a table
/// that size: the planner knows its statistics and which pages are all-visible.
fn fill(store: &PostgresStore) {
    let table = store.qualified("messages");
    let sql = format!(
        "INSERT INTO {table} (queue, payload, status, retry_count, max_retries, retry_after, \
           last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, \
           first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at) \
         SELECT CASE WHEN (i / 100) % 10 = 9 THEN 'other' ELSE 'q' END, \
           convert_to('{{\"n\": ' || i || '}}', 'UTF8'), \
           CASE WHEN k < 60 THEN 'succeeded' WHEN k < 75 THEN 'dead' \
                WHEN k < 90 OR k > 90 THEN 'pending' ELSE 'processing' END, \
           CASE WHEN k BETWEEN 60 AND 89 THEN 1 ELSE 0 END, 3, \
           CASE WHEN k BETWEEN 75 AND 89 THEN {NOW} + 60000 END, \
           CASE WHEN k BETWEEN 60 AND 89 THEN 'boom' END, \
           {BASE} + i, {BASE} + i, \
           CASE WHEN k = 90 THEN 'token-' || i END, \
           CASE WHEN k = 90 AND i % 10000 = 90 THEN {NOW} - 1000 \
                WHEN k = 90 THEN {NOW} + 30000 END, \
           NULL, CASE WHEN k BETWEEN 60 AND 89 THEN {BASE} + i END, \
           CASE WHEN k BETWEEN 60 AND 74 THEN {BASE} + i END, '[]', 0, 0, NULL \
         FROM (SELECT i, i % 100 AS k FROM generate_series(0, {ROWS} - 1) AS i) AS g"
    );
    let fail = |err: postgres::Error| Error::Store(format!("{:?}", err.as_db_error()));
    store
        .with_client(|client| {
            client.batch_execute(&sql).map_err(fail)?;
            client
                .batch_execute(&format!("VACUUM ANALYZE {table}"))
                .map_err(fail)
        })
        .expect("fill");
}

/// The plan of `sql` (parameters `$1` queue, `$2` now, `$3` limit when `types` has three), run
/// with `EXPLAIN (ANALYZE, BUFFERS)` inside a transaction that is rolled back, as planned for
/// these values (`custom`) or as the generic plan a session reuses.
fn explain(store: &PostgresStore, sql: &str, types: &str, args: &str, mode: &str) -> String {
    store
        .with_client(|client| {
            let mut tx = client.transaction().map_err(Error::store)?;
            tx.batch_execute(&format!(
                "SET LOCAL plan_cache_mode = force_{mode}_plan; PREPARE p({types}) AS {sql}"
            ))
            .map_err(Error::store)?;
            let rows = tx
                .query(
                    &format!("EXPLAIN (ANALYZE, BUFFERS) EXECUTE p({args})"),
                    &[],
                )
                .map_err(Error::store)?;
            let lines: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            tx.rollback().map_err(Error::store)?;
            client
                .batch_execute("DEALLOCATE ALL")
                .map_err(Error::store)?;
            Ok(lines.join("\n"))
        })
        .expect("explain")
}

#[test]
fn claim_walks_its_partial_indexes_on_a_million_messages() {
    let schemas = Schemas::new("plans");
    let store = schemas.store(1);
    let started = std::time::Instant::now();
    fill(&store);
    println!("filled {ROWS} messages in {:?}", started.elapsed());
    let sql = store.statements();
    let now = NOW;
    let checks = [
        (
            "claim, step 2 (due)",
            &sql.due,
            "text, bigint, bigint",
            format!("'q', {now}, 1"),
            "messages_due",
        ),
        (
            "claim, step 1 (expired leases)",
            &sql.expired,
            "text, bigint",
            format!("'q', {now}"),
            "messages_leases",
        ),
        (
            "next_due_at",
            &sql.next_due_at,
            "text, bigint",
            format!("'q', {now}"),
            "messages_delayed",
        ),
    ];
    for (name, statement, types, args, index) in &checks {
        for mode in ["custom", "generic"] {
            let plan = explain(&store, statement, types, args, mode);
            println!("-- {name}, {mode} plan:\n{statement}\n{plan}\n");
            assert!(
                plan.contains(&format!("using {index} on messages")),
                "{name} ({mode}): {plan}"
            );
            assert!(!plan.contains("Seq Scan"), "{name} ({mode}): {plan}");
            assert!(!plan.contains("Sort"), "{name} ({mode}): {plan}");
        }
    }
    let counts = explain(
        &store,
        &sql.counts,
        "text, bigint",
        &format!("'q', {now}"),
        "generic",
    );
    println!("-- counts (stats), generic plan:\n{counts}\n");
    assert!(!counts.contains("Seq Scan"), "{counts}");

    // And on this data claim does what it says: it reaps the 100 expired leases (messages
    // 90, 10 090, ...: all in q), then takes the oldest due message of q, id 92 (created 91 ms
    // after BASE; ids start at 1).
    let engine = Engine::new(store, Limits::default());
    let policy = Backoff::default();
    let at = Moment {
        policy: &policy,
        sample: 0.0,
        now,
    };
    let started = std::time::Instant::now();
    let out = pollster::block_on(engine.claim("q".into(), Arg::Null, || "tok".into(), at))
        .expect("claim");
    println!(
        "claim on {ROWS} messages (reaping 100 leases) took {:?}",
        started.elapsed()
    );
    assert_eq!(out.value.expect("a due message").id, 92);
    let stats = pollster::block_on(engine.stats("q".into(), now)).expect("stats");
    assert_eq!((stats.expired, stats.processing), (0, 9_000 - 100 + 1));
}
