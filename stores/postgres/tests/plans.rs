//! The query plans that keep `claim` cheap on a large table: 1 000 000 messages, most finished,
//! dead or in backoff. Claim's statements must walk their partial indexes (no sequential scan, no
//! sort), both as planned for the values and as the generic plan claim runs (see
//! `deadletter_postgres::CLAIM_BEGIN`); and claim must not walk the messages in backoff (issue
//! 10): with 10 000 of them older than the first due message it reads no more pages than with
//! none; nor the messages waiting behind their group's head (issue 21): with 1 000 groups whose
//! heads are in backoff and 10 000 messages behind them, the same. The statements of groups and
//! expiry (a group's head and tail, the expiring messages) walk their indexes too.

mod common;

use common::Schemas;
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Call, Engine, Error, Item, Limits};
use deadletter_postgres::PostgresStore;
use postgres::types::{FromSql, Json};

const ROWS: i64 = 1_000_000;
const NOW: i64 = BASE + 2 * ROWS;

/// 1 000 000 messages created 1 ms apart in two queues (`other` holds every tenth block of 100):
/// per 100, 60 succeeded, 15 dead, 15 pending in backoff, 1 processing (its lease ran out in one
/// of each 100 such), 9 pending and due; `ready` as the store writes it (false exactly for the
/// messages in backoff).
fn fill(store: &PostgresStore) {
    let table = store.qualified("messages");
    let sql = format!(
        "INSERT INTO {table} (queue, payload, status, retry_count, max_retries, retry_after, \
           last_error, created_at, updated_at, lease_token, lease_expires_at, idempotency_key, \
           first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at, ready) \
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
           CASE WHEN k BETWEEN 60 AND 74 THEN {BASE} + i END, '[]', 0, 0, NULL, \
           k NOT BETWEEN 75 AND 89 \
         FROM (SELECT i, i % 100 AS k FROM generate_series(0, {ROWS} - 1) AS i) AS g"
    );
    store
        .with_client(|client| client.batch_execute(&sql).map_err(|err| fail(&err)))
        .expect("fill");
}

fn fail(err: &postgres::Error) -> Error {
    Error::Store(format!("{:?}", err.as_db_error()))
}

/// `VACUUM ANALYZE`, as autovacuum leaves a table that size: the planner knows its statistics
/// and which pages are all-visible. With `INDEX_CLEANUP ON`: the index entries of the group
/// heads claimed and failed (`enqueue_groups`) go, which a vacuum may otherwise leave while so
/// few rows are dead (PostgreSQL 14's bypass), and which any claimed message leaves behind
/// until then, grouped or not.
fn vacuum(store: &PostgresStore) {
    let table = store.qualified("messages");
    store
        .with_client(|client| {
            client
                .batch_execute(&format!("VACUUM (ANALYZE, INDEX_CLEANUP ON) {table}"))
                .map_err(|err| fail(&err))
        })
        .expect("vacuum");
}

/// The rows of `EXPLAIN (ANALYZE, BUFFERS{options}) sql` (parameters `$1` queue, `$2` now, `$3`
/// limit when `types` has three), run inside a transaction that is rolled back, as planned for
/// these values (`custom`) or as the generic plan a session reuses.
fn explain_rows<T: for<'a> FromSql<'a>>(
    store: &PostgresStore,
    sql: &str,
    (types, args): (&str, &str),
    mode: &str,
    options: &str,
) -> Vec<T> {
    store
        .with_client(|client| {
            client
                .batch_execute(&format!(
                    "BEGIN; SET LOCAL plan_cache_mode = force_{mode}_plan; PREPARE p({types}) AS {sql}"
            ))
                .map_err(Error::store)?;
            let rows = client
                .query(
                    &format!("EXPLAIN (ANALYZE, BUFFERS{options}) EXECUTE p({args})"),
                    &[],
                )
                .map_err(Error::store)?;
            let values = rows
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<Vec<T>, _>>()
                .map_err(Error::store)?;
            client.batch_execute("ROLLBACK").map_err(Error::store)?;
            // Only its own statement: the store's, prepared on this session, stay.
            client.batch_execute("DEALLOCATE p").map_err(Error::store)?;
            Ok(values)
        })
        .expect("explain")
}

/// The plan of `sql` in text (see [`explain_rows`]).
fn explain(store: &PostgresStore, sql: &str, types: &str, args: &str, mode: &str) -> String {
    explain_rows::<String>(store, sql, (types, args), mode, "").join("\n")
}

/// What one run of `sql` read, with the generic plan claim runs: (pages of tables and indexes,
/// found in shared buffers or read, and rows the top node returned). Pages, not time: a count
/// that does not vary from run to run on the same data.
fn pages_read(store: &PostgresStore, sql: &str, types: &str, args: &str) -> (u64, u64) {
    let rows: Vec<Json<serde_json::Value>> =
        explain_rows(store, sql, (types, args), "generic", ", FORMAT JSON");
    let Json(plan) = &rows[0];
    let top = &plan[0]["Plan"];
    let number = |key: &str| top[key].as_u64().unwrap_or_else(|| panic!("{key}: {plan}"));
    (
        number("Shared Hit Blocks") + number("Shared Read Blocks"),
        number("Actual Rows"),
    )
}

/// When the messages of the queues `ahead` and `none` are enqueued: after the million.
const LATE: i64 = NOW - 10_000;

/// Queue `ahead`: 10 000 messages delayed by an hour, then one due message, enqueued 5 s later
/// (so every delayed one is older); queue `none`: the due message alone. Through the engine, so
/// that the store writes them as it always does.
fn enqueue_ahead_and_none(engine: &Engine<PostgresStore>) {
    let later = Item {
        payload: Arg::Str("later"),
        delay_ms: Arg::Int(3_600_000),
        ..Item::default()
    };
    let batch = vec![later; 1000];
    for _ in 0..10 {
        pollster::block_on(engine.enqueue_many("ahead".into(), &batch, &at(LATE)))
            .expect("enqueue");
    }
    let now = Item {
        payload: Arg::Str("now"),
        ..Item::default()
    };
    for queue in ["ahead", "none"] {
        pollster::block_on(engine.enqueue(queue.into(), &now, &at(LATE + 5000))).expect("enqueue");
    }
}

/// Queue `groups`: 1 000 groups of 11 messages, each group's head failed with `retry_in` an hour
/// (in backoff, so that the 10 000 behind them stay blocked), then one due message without a
/// group, enqueued 5 s after them (as in queue `ahead`). Through the engine.
fn enqueue_groups(engine: &Engine<PostgresStore>) {
    common::groups::heads_in_backoff(engine, "groups", 1000, 10, LATE);
    let now = Item {
        payload: Arg::Str("now"),
        ..Item::default()
    };
    pollster::block_on(engine.enqueue("groups".into(), &now, &at(LATE + 5000))).expect("enqueue");
}

/// Issue 10: claim with 10 000 messages in backoff older than the first due one (queue `ahead`)
/// reads no more pages than with none (queue `none`). Were the delayed messages in the ready
/// index, the take would walk one index entry for each (about a hundred more pages here). Issue
/// 21: the same with 1 000 group heads in backoff and 10 000 messages blocked behind them (queue
/// `groups`).
fn claim_reads_no_more_with_delayed_messages_ahead(store: &PostgresStore) {
    let sql = store.statements();
    let now = NOW;
    let mut read = Vec::new();
    let queues = ["ahead", "groups", "none"];
    for queue in queues {
        let steps = [
            (
                "reap",
                &sql.expired,
                "text, bigint",
                format!("'{queue}', {now}"),
            ),
            (
                "move (the WITH that reap's statement starts with, alone: EXPLAIN counts its \
                 pages apart)",
                &sql.move_due,
                "text, bigint",
                format!("'{queue}', {now}"),
            ),
            (
                "due",
                &sql.due,
                "text, bigint, bigint",
                format!("'{queue}', {now}, 1"),
            ),
        ];
        for (step, statement, types, args) in steps {
            let plan = explain(store, statement, types, &args, "generic");
            println!("-- claim's {step} on queue {queue:?}, generic plan:\n{plan}\n");
            read.push(pages_read(store, statement, types, &args));
        }
    }
    let (ahead, rest) = read.split_at(3);
    let (groups, none) = rest.split_at(3);
    let pages = |r: &[(u64, u64)]| r.iter().map(|r| r.0).collect::<Vec<_>>();
    println!(
        "pages read (reap + move + due): 10 000 delayed ahead {:?}, 1 000 group heads in backoff \
         and 10 000 behind them {:?}, none {:?}",
        pages(ahead),
        pages(groups),
        pages(none)
    );
    // Nothing to reap or move on any queue; the due message is taken on each.
    let rows = |r: &[(u64, u64)]| r.iter().map(|r| r.1).collect::<Vec<_>>();
    assert_eq!(
        (rows(ahead), rows(groups), rows(none)),
        (vec![0, 0, 1], vec![0, 0, 1], vec![0, 0, 1])
    );
    assert!(
        ahead.iter().zip(none).all(|(a, n)| a.0 <= n.0),
        "claim read more with 10 000 delayed messages ahead: {read:?}"
    );
    // Within two pages: where the 1 000 heads were in the ready index before their claims, the
    // B-tree's leaves may split differently (a page more on the way); walking the 10 000 blocked
    // members would read about 60 more (some 170 entries a leaf).
    assert!(
        groups.iter().zip(none).all(|(g, n)| g.0 <= n.0 + 2),
        "claim read more with 10 000 messages behind group heads in backoff: {read:?}"
    );
}

/// The statements of groups and expiry walk their indexes on the million messages plus the
/// queue `groups` (no sequential scan, no sort): a group's tail (where an enqueue or a replay
/// puts a message) and head (what a finished head's group takes next), and the pending messages
/// whose expiry came (what claim and reap take out first: in the index, or a bitmap of it).
fn groups_and_expiry_walk_their_indexes(store: &PostgresStore) {
    let sql = store.statements();
    let now = NOW;
    let checks = [
        ("a group's tail", &sql.tail, "messages_group"),
        ("a group's head", &sql.head, "messages_group"),
    ];
    for (name, statement, index) in checks {
        for mode in ["custom", "generic"] {
            let plan = explain(store, statement, "text, text", "'groups', 'group-7'", mode);
            println!("-- {name}, {mode} plan:\n{statement}\n{plan}\n");
            assert!(
                plan.contains(&format!("using {index} on messages")),
                "{name} ({mode}): {plan}"
            );
            assert!(!plan.contains("Seq Scan"), "{name} ({mode}): {plan}");
            assert!(!plan.contains("Sort"), "{name} ({mode}): {plan}");
        }
    }
    for mode in ["custom", "generic"] {
        let plan = explain(
            store,
            &sql.queue_and_expiring,
            "text, bigint",
            &format!("'q', {now}"),
            mode,
        );
        println!(
            "-- the queue's row and the expiring messages (claim), {mode} plan:\n{}\n{plan}\n",
            sql.queue_and_expiring
        );
        // The generic plan, which claim runs, may read them with a bitmap of the index: it reads
        // only those whose expiry came, as the index scan does, all of which the claim takes
        // out. (The queues table holds a row per configured queue: it may be scanned.)
        assert!(
            plan.contains("using messages_expiring on messages")
                || plan.contains("Bitmap Index Scan on messages_expiring"),
            "{mode}: {plan}"
        );
        assert!(!plan.contains("Seq Scan on messages"), "{mode}: {plan}");
    }
}

/// Issue 24: the one-round-trip ack's write (`row::write_if_unchanged`, here setting
/// `updated_at` only) finds its row by the primary key and the queue's row by its key, as
/// planned for the values and as the generic plan; message 92 of `q`, at a version it is not
/// (nothing written).
fn a_guarded_write_finds_its_row_by_its_key(store: &PostgresStore) {
    let sql = store.statements();
    let m = &sql.messages;
    let write = format!(
        "WITH m AS (SELECT id FROM {m} WHERE {} FOR UPDATE NOWAIT) \
         UPDATE {m} AS t SET updated_at = $13 FROM m WHERE t.id = m.id \
         RETURNING t.xmin::text || t.ctid::text, t.blocked",
        sql.unchanged
    );
    let types = "bigint, text, text, bigint, float8, bigint, text, int, bigint, bigint, text, \
        boolean, bigint";
    let args = "92, '1(0,1)', 'q', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'dead', false, 5";
    for mode in ["custom", "generic"] {
        let plan = explain(store, &write, types, args, mode);
        println!("-- the ack's guarded write, {mode} plan:\n{write}\n{plan}\n");
        assert!(
            plan.contains("using messages_pkey on messages"),
            "{mode}: {plan}"
        );
        assert!(!plan.contains("Seq Scan on messages"), "{mode}: {plan}");
    }
}

/// Issue 24: no index holds every message (each transition would write it), so `list`, the
/// counts and `queues` read the index of each status. On the million messages, as planned for
/// the values and as the generic plan: a page of 50 of queue `q` (all statuses, after id 500 000;
/// and of each status) reads its indexes, never the table by a sequential scan nor the primary
/// key from id 500 000 on, and `queues` probes each index once per queue.
fn lists_and_counts_walk_the_indexes_of_each_status(store: &PostgresStore) {
    let sql = store.statements();
    let mut pages = Vec::new();
    for mode in ["custom", "generic"] {
        let plan = explain(
            store,
            &sql.list,
            "text, bigint, bigint",
            "'q', 500000, 50",
            mode,
        );
        println!("-- list (every status), {mode} plan:\n{plan}\n");
        assert!(!plan.contains("Seq Scan"), "list ({mode}): {plan}");
        for status in ["pending", "processing", "succeeded", "dead"] {
            let args = format!("'q', '{status}', 500000, 50");
            let plan = explain(
                store,
                &sql.list_status,
                "text, text, bigint, bigint",
                &args,
                mode,
            );
            println!("-- list ({status}), {mode} plan:\n{plan}\n");
            assert!(!plan.contains("Seq Scan"), "list {status} ({mode}): {plan}");
            if mode == "generic" {
                let read = pages_read(store, &sql.list_status, "text, text, bigint, bigint", &args);
                pages.push((status, read));
            }
        }
    }
    let plan: Vec<String> = store
        .with_client(|client| {
            let rows = client
                .query(&format!("EXPLAIN (ANALYZE, BUFFERS) {}", sql.queues), &[])
                .map_err(Error::store)?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(Error::store))
                .collect()
        })
        .expect("explain");
    let plan = plan.join("\n");
    println!("-- queues:\n{plan}\n");
    assert!(!plan.contains("Seq Scan"), "queues: {plan}");
    let all = pages_read(store, &sql.list, "text, bigint, bigint", "'q', 500000, 50");
    println!(
        "pages read by a page of 50 (generic plans): every status {all:?}, by status {pages:?}"
    );
    // Each of the 50 rows is read by its id (its primary key's three levels and its heap page),
    // after their ids from the indexes (the 4 500 processing ones after id 500 000: 47 pages).
    // Walking the primary key (every message after id 500 000) would read some 15 000.
    assert_eq!(all.1, 50);
    assert!(all.0 < 300, "{all:?}");
    for (status, (read, rows)) in pages {
        assert_eq!(rows, 50, "{status}");
        assert!(read < 300, "{status}: {read} pages");
    }
}

#[test]
fn claim_walks_its_partial_indexes_on_a_million_messages() {
    let schemas = Schemas::new("plans");
    let engine = Engine::new(schemas.store(1), Limits::default());
    let store = engine.store();
    let started = std::time::Instant::now();
    fill(store);
    enqueue_ahead_and_none(&engine);
    enqueue_groups(&engine);
    vacuum(store);
    println!("filled {ROWS} messages in {:?}", started.elapsed());
    let sql = store.statements();
    let now = NOW;
    let checks = [
        (
            "claim, step 2 (due: the head of the ready index)",
            &sql.due,
            "text, bigint, bigint",
            format!("'q', {now}, 1"),
            "messages_ready",
        ),
        (
            "claim, step 1 (expired leases, after moving the waiting messages now due)",
            &sql.expired,
            "text, bigint",
            format!("'q', {now}"),
            "messages_leases",
        ),
        (
            "claim, step 1 (moving the waiting messages now due, before the expired leases)",
            &sql.expired,
            "text, bigint",
            format!("'q', {now}"),
            "messages_delayed",
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
            let plan = explain(store, statement, types, args, mode);
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
        store,
        &sql.counts,
        "text, bigint",
        &format!("'q', {now}"),
        "generic",
    );
    println!("-- counts (stats), generic plan:\n{counts}\n");
    assert!(!counts.contains("Seq Scan"), "{counts}");

    lists_and_counts_walk_the_indexes_of_each_status(store);
    claim_reads_no_more_with_delayed_messages_ahead(store);
    groups_and_expiry_walk_their_indexes(store);
    a_guarded_write_finds_its_row_by_its_key(store);

    // And on this data claim does what it says: it reaps the 100 expired leases (messages
    // 90, 10 090, ...: all in q), then takes the oldest due message of q, id 92 (created 91 ms
    // after BASE; ids start at 1).
    let clock = at(now);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let started = std::time::Instant::now();
    let out = pollster::block_on(engine.claim("q".into(), Arg::Null, || "tok".into(), &call))
        .expect("claim");
    println!(
        "claim on {ROWS} messages (reaping 100 leases) took {:?}",
        started.elapsed()
    );
    assert_eq!(out.value.expect("a due message").id, 92);
    let stats = pollster::block_on(engine.stats("q".into(), &clock)).expect("stats");
    assert_eq!((stats.expired, stats.processing), (0, 9_000 - 100 + 1));
}

/// Issue 24: on a small table (2 000 pending messages, 35 pages, not analyzed yet) claim's first
/// statement does not scan the table to mark ready the waiting messages whose backoff is over,
/// when there are none: the generic plan estimated ten ids for its update and chose a sequential
/// scan of the table over ten probes of the primary key, run at every claim for no id at all
/// (35 pages, 130 to 250 us of a claim's server time in `make bench-postgres`). Its plan now
/// updates by the primary key, and only when the array of ids is not empty.
#[test]
fn claim_reads_a_few_pages_on_a_small_table() {
    let schemas = Schemas::new("plans_small");
    let engine = Engine::new(schemas.store(1), Limits::default());
    let store = engine.store();
    let item = Item {
        payload: Arg::Str("{\"to\": \"alice@example.com\"}"),
        ..Item::default()
    };
    // Not analyzed, as a new table is until autovacuum comes (the benchmark's, each round): the
    // planner knows its size from its pages only.
    let table = store.qualified("messages");
    store
        .with_client(|client| {
            client
                .batch_execute(&format!(
                    "ALTER TABLE {table} SET (autovacuum_enabled = false)"
                ))
                .map_err(|err| fail(&err))
        })
        .expect("no autovacuum");
    let items = vec![item; 1000];
    for _ in 0..2 {
        pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE))).expect("enqueue");
    }
    let sql = store.statements();
    let args = format!("'q', {}", BASE + 1000);
    for (name, statement) in [("reap", &sql.expired), ("move", &sql.move_due)] {
        let plan = explain(store, statement, "text, bigint", &args, "generic");
        println!("-- claim's {name} on 2 000 pending messages, generic plan:\n{plan}\n");
        assert!(!plan.contains("Seq Scan"), "{name}: {plan}");
        let (pages, rows) = pages_read(store, statement, "text, bigint", &args);
        assert_eq!(rows, 0, "{name}: nothing to reap or move");
        assert!(pages <= 3, "{name} read {pages} pages: {plan}");
    }
}
