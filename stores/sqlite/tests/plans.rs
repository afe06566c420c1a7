//! The query plans that keep every operation on indexes however many succeeded, dead or delayed
//! messages there are (with and without `ANALYZE`), and a claim that does not walk the messages
//! in backoff (issue 10) nor the members of groups waiting behind their heads (issue 21): with
//! 10 000 of them ahead of the due one it runs as many steps as with none.

mod common;

use common::{TempDb, engine};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{at, claim_at, enqueue_at};
use deadletter::{Arg, Call, Engine, Error, Item, Limits, Status};
use deadletter_sqlite::{
    BY_KEY_SQL, CLAIM_SQL, COUNT_BY_STATUS_SQL, COUNT_DELAYED_SQL, COUNT_EXPIRED_SQL,
    COUNT_EXPIRY_SQL, DELETE_SQL, Durability, EXPIRED_SQL, EXPIRING_SQL, GET_SQL, HEAD_SQL,
    INSERT_SQL, KEY_TAKEN_SQL, LIST_SQL, MOVE_SQL, NEXT_DUE_SQL, OLDEST_DEAD_SQL, OLDEST_DUE_SQL,
    PROMOTE_SQL, PUT_QUEUE_SQL, QUEUE_NAMES_SQL, QUEUE_SQL, QUEUES_SQL, SqliteStore, TAIL_SQL,
    UNBLOCK_SQL, WRITE_SQL, list_status_sql,
};
use rusqlite::params;

/// The `detail` column of `EXPLAIN QUERY PLAN sql` (parameters unbound: plans do not depend on
/// their values here).
fn plan(store: &SqliteStore, sql: &str) -> Vec<String> {
    store
        .with_connection(|conn| {
            let mut statement = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .map_err(Error::store)?;
            let mut rows = statement.raw_query();
            let mut details = Vec::new();
            while let Some(row) = rows.next().map_err(Error::store)? {
                details.push(row.get::<_, String>(3).map_err(Error::store)?);
            }
            Ok(details)
        })
        .expect("explain")
}

/// Every query of the store with its name, and whether it must read indexes only (never a row).
fn queries() -> Vec<(String, String, bool)> {
    let mut all: Vec<(String, String, bool)> = [
        ("promote", PROMOTE_SQL, false),
        ("claim", CLAIM_SQL, false),
        ("expired", EXPIRED_SQL, false),
        ("get", GET_SQL, false),
        ("by key", BY_KEY_SQL, false),
        ("list", LIST_SQL, false),
        ("insert", INSERT_SQL, true),
        ("write", WRITE_SQL, false),
        ("delete", DELETE_SQL, false),
        ("count by status", COUNT_BY_STATUS_SQL, true),
        ("count expired", COUNT_EXPIRED_SQL, true),
        ("count delayed", COUNT_DELAYED_SQL, true),
        ("oldest due", OLDEST_DUE_SQL, true),
        ("next due", NEXT_DUE_SQL, true),
        ("oldest dead", OLDEST_DEAD_SQL, true),
        ("queues", QUEUES_SQL, true),
        ("expiring", EXPIRING_SQL, false),
        ("tail", TAIL_SQL, false),
        ("head", HEAD_SQL, false),
        ("unblock", UNBLOCK_SQL, false),
        ("queue", QUEUE_SQL, false),
        ("queue names", QUEUE_NAMES_SQL, true),
        ("put queue", PUT_QUEUE_SQL, false),
        ("count expiry", COUNT_EXPIRY_SQL, false),
        ("move", MOVE_SQL, false),
        ("key taken", KEY_TAKEN_SQL, true),
    ]
    .into_iter()
    .map(|(name, sql, covered)| (name.to_owned(), sql.to_owned(), covered))
    .collect();
    for status in Status::ALL {
        let sql = list_status_sql(status).to_owned();
        all.push((format!("list {status}"), sql, false));
    }
    all
}

/// Whether this SQLite library answers from a partial index alone a query whose other terms the
/// index's `WHERE` implies (the queries of one status: `status` is in no index). The bundled
/// library does (release wheels, `make test-rust`); older system libraries (Debian 12's 3.40)
/// read the rows of the range to check `status` again: still one search of the index, no scan.
fn covers_with_partial_indexes() -> bool {
    let conn = rusqlite::Connection::open_in_memory().expect("open");
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL) STRICT; \
         CREATE INDEX t_a ON t (a, id) WHERE b = 'x'",
    )
    .expect("probe");
    let detail: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM t WHERE a = 'q' AND b = 'x' AND id > 0",
            [],
            |row| row.get(3),
        )
        .expect("explain");
    detail.contains("COVERING INDEX")
}

fn assert_plans(store: &SqliteStore, state: &str) {
    let covering = covers_with_partial_indexes();
    if !covering {
        println!(
            "SQLite {} reads the rows of a partial index's range: the queries that newer \
             libraries answer from the index alone are only checked to search it",
            rusqlite::version()
        );
    }
    for (name, sql, covered) in queries() {
        let covered = covered && covering;
        let plan = plan(store, &sql);
        println!(
            "EXPLAIN QUERY PLAN ({name}, {state}) {sql}\n  {}",
            plan.join("\n  ")
        );
        let on_messages: Vec<&String> = plan.iter().filter(|d| d.contains(" messages")).collect();
        let reads_messages = sql.contains("FROM messages") || sql.starts_with("UPDATE");
        assert!(
            !reads_messages || !on_messages.is_empty(),
            "{name} ({state}): {plan:?}"
        );
        for detail in &on_messages {
            // `SEARCH messages` alone is insert's `max(id)`: one seek to the end of the table.
            let max_id = detail.as_str() == "SEARCH messages";
            assert!(
                max_id || detail.starts_with("SEARCH messages USING "),
                "{name} ({state}): not a search: {plan:?}"
            );
            assert!(
                !covered || max_id || detail.contains("COVERING INDEX"),
                "{name} ({state}): reads rows: {plan:?}"
            );
        }
        // A page of processing messages is sorted by id, alone or in a page of every status.
        let sorted = plan.iter().filter(|d| d.contains("TEMP B-TREE")).count();
        let sorts = usize::from(name == "list processing" || name == "list");
        assert_eq!(sorted, sorts, "{name} ({state}): sorts: {plan:?}");
        for index in indexes_of(&name) {
            assert!(
                plan.iter().any(|d| d.contains(&format!("INDEX {index} "))),
                "{name} ({state}): not through {index}: {plan:?}"
            );
        }
    }
}

/// The indexes that some queries must go through: claim never walks the messages in backoff, and
/// the queries of one status read its partial index, and those of every status read the four
/// (a page of processing messages, alone or in a page of every status, is the one sort: they are
/// as many as the leases held).
fn indexes_of(query: &str) -> &'static [&'static str] {
    match query {
        "promote" | "count delayed" | "next due" => &["messages_delayed"],
        "expiring" => &["messages_expiring"],
        "tail" | "head" => &["messages_group"],
        "key taken" => &["messages_idempotency"],
        "oldest due" => &["messages_pending", "messages_delayed"],
        "claim" | "list pending" => &["messages_pending"],
        "list processing" => &["messages_leased"],
        "list succeeded" => &["messages_succeeded"],
        "list dead" => &["messages_dead"],
        "count by status" | "list" | "queues" => &[
            "messages_pending",
            "messages_leased",
            "messages_succeeded",
            "messages_dead",
        ],
        _ => &[],
    }
}

#[test]
fn every_query_searches_an_index_without_sorting() {
    let file = TempDb::new();
    let store = SqliteStore::open(&file.0, Durability::Full).expect("open");
    let now = BASE + 1_000_000;
    fill(&store, now);
    assert_plans(&store, "no statistics");
    store
        .with_connection(|conn| conn.execute_batch("ANALYZE").map_err(Error::store))
        .expect("analyze");
    assert_plans(&store, "after ANALYZE");

    // And the queries do what they say on this data: the first due message of "q" (id 19).
    let db = Engine::new(store, Limits::default());
    let clock = at(now);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let taken = pollster::block_on(db.claim("q".into(), Arg::Null, || "tok".into(), &call))
        .expect("claim")
        .value
        .expect("a due message");
    assert_eq!((taken.id, taken.status), (19, Status::Processing));
    let stats = pollster::block_on(db.stats("q".into(), &clock)).expect("stats");
    // 9000 messages in "q": per 10 ids, 4 succeeded, 2 dead, 2 delayed, 1 due (one in ten of
    // those processing), minus the one just claimed.
    assert_eq!(
        (stats.pending, stats.processing, stats.succeeded, stats.dead),
        (2000 + 900 - 1, 100 + 1, 4000, 2000)
    );
    assert_eq!(
        (stats.delayed, stats.next_due_at),
        (2000, Some(now + 60_000))
    );
    assert_eq!(stats.oldest_dead_age_ms, Some(now - (BASE + 4)));
    let names = pollster::block_on(db.queues(&clock)).expect("queues");
    let names: Vec<&str> = names.iter().map(|s| s.queue.as_str()).collect();
    assert_eq!(names, ["other", "q"]);
}

/// 10,000 messages in two queues: most succeeded, dead or in backoff, a few processing, a few due.
fn fill(store: &SqliteStore, now: i64) {
    store
        .with_connection(|conn| {
            let tx = conn.transaction().map_err(Error::store)?;
            {
                let mut insert = tx
                    .prepare(
                        "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
                         retry_after, last_error, created_at, updated_at, lease_token, \
                         lease_expires_at, dead_at, ready) \
                         VALUES (?1, 'p', ?2, ?3, 3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?4 IS NULL)",
                    )
                    .map_err(Error::store)?;
                for i in 0..10_000_i64 {
                    let queue = if i % 10 == 9 { "other" } else { "q" };
                    let created = BASE + i;
                    let none = None::<i64>;
                    let row = match i % 10 {
                        0..=3 => params![
                            queue,
                            "succeeded",
                            0,
                            none,
                            None::<&str>,
                            created,
                            None::<&str>,
                            none,
                            none
                        ],
                        4 | 5 => params![
                            queue,
                            "dead",
                            3,
                            none,
                            Some("boom"),
                            created,
                            None::<&str>,
                            none,
                            Some(created)
                        ],
                        6 | 7 => params![
                            queue,
                            "pending",
                            1,
                            Some(now + 60_000),
                            Some("boom"),
                            created,
                            None::<&str>,
                            none,
                            none
                        ],
                        8 if i % 100 == 8 => params![
                            queue,
                            "processing",
                            0,
                            none,
                            None::<&str>,
                            created,
                            Some("t"),
                            Some(now + 30_000),
                            none
                        ],
                        _ => params![
                            queue,
                            "pending",
                            0,
                            none,
                            None::<&str>,
                            created,
                            None::<&str>,
                            none,
                            none
                        ],
                    };
                    insert.execute(row).map_err(Error::store)?;
                }
            }
            tx.commit().map_err(Error::store)
        })
        .expect("fill");
}

/// The virtual machine steps SQLite spends on one run of the claim's query, at `now`.
fn claim_steps(store: &SqliteStore, now: i64) -> i32 {
    store
        .with_connection(|conn| {
            let mut statement = conn.prepare(CLAIM_SQL).map_err(Error::store)?;
            let found = statement
                .query_map(params!["q", now, 1], |row| row.get::<_, i64>(0))
                .map_err(Error::store)?
                .count();
            assert_eq!(found, 1);
            Ok(statement.get_status(rusqlite::StatementStatus::VmStep))
        })
        .expect("claim steps")
}

#[test]
fn claim_does_not_walk_the_messages_in_backoff() {
    let file = TempDb::new();
    let db = engine(&file.0);
    // 10,000 messages in backoff, enqueued before the due one: the old claim index held them
    // ahead of it, and claim read each of their entries.
    for start in (0..10_000).step_by(1000) {
        let items: Vec<Item<'_>> = (0..1000)
            .map(|_| Item {
                payload: "later".into(),
                delay_ms: 3_600_000_i64.into(),
                ..Item::default()
            })
            .collect();
        pollster::block_on(db.enqueue_many("q".into(), &items, &at(BASE + start)))
            .expect("enqueue");
    }
    let due = enqueue_at(&db, "now", 0, BASE + 20_000);
    let behind = claim_steps(db.store(), BASE + 30_000);

    let alone = TempDb::new();
    let reference = engine(&alone.0);
    enqueue_at(&reference, "now", 0, BASE + 20_000);
    let reference_steps = claim_steps(reference.store(), BASE + 30_000);
    assert_eq!(behind, reference_steps, "claim read the delayed messages");

    let taken = claim_at(&db, BASE + 30_000).expect("the due message");
    assert_eq!(taken.id, due.id);
    // An hour later all 10,000 are due: one claim moves them, then they come out in FIFO order.
    let later = BASE + 3_600_000 + 10_000;
    let first = claim_at(&db, later).expect("the oldest delayed message");
    assert_eq!((first.id, first.retry_after), (1, None));
    let second = claim_at(&db, later).expect("the next one");
    assert_eq!(second.id, 2);
}

/// The virtual machine steps SQLite spends on the statements of one claim that look for work:
/// the expired leases, the expiring messages, the move of the messages whose backoff is over,
/// the head of the ready index (which takes one message).
fn claim_lookup_steps(store: &SqliteStore, now: i64) -> i32 {
    store
        .with_connection(|conn| {
            let mut steps = 0;
            let mut promote = conn.prepare(PROMOTE_SQL).map_err(Error::store)?;
            let moved = promote.execute(params!["q", now]).map_err(Error::store)?;
            assert_eq!(moved, 0, "nothing came due");
            steps += promote.get_status(rusqlite::StatementStatus::VmStep);
            for (sql, limit, want) in [
                (EXPIRED_SQL, None, 0),
                (EXPIRING_SQL, None, 0),
                (CLAIM_SQL, Some(1), 1),
            ] {
                let mut statement = conn.prepare(sql).map_err(Error::store)?;
                let found = match limit {
                    Some(n) => statement
                        .query_map(params!["q", now, n], |_| Ok(()))
                        .map(Iterator::count),
                    None => statement
                        .query_map(params!["q", now], |_| Ok(()))
                        .map(Iterator::count),
                }
                .map_err(Error::store)?;
                assert_eq!(found, want, "{sql}");
                steps += statement.get_status(rusqlite::StatementStatus::VmStep);
            }
            Ok(steps)
        })
        .expect("claim steps")
}

/// 1 000 messages claimed and failed (in backoff until `BASE + 2 001`), each the head of its own
/// group with 10 members behind it when `members`, then one due message (enqueued last).
fn heads_in_backoff(db: &Engine<SqliteStore>, members: bool) -> deadletter::Message {
    let rounds = if members { 11 } else { 1 };
    for round in 0..rounds {
        let items: Vec<Item<'_>> = GROUPS
            .iter()
            .map(|group| Item {
                payload: if round == 0 {
                    "head".into()
                } else {
                    "member".into()
                },
                group: if members { Arg::Str(group) } else { Arg::Null },
                ..Item::default()
            })
            .collect();
        pollster::block_on(db.enqueue_many("q".into(), &items, &at(BASE))).expect("enqueue");
    }
    let clock = at(BASE + 1);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    for _ in 0..10 {
        let taken = pollster::block_on(db.claim_many(
            "q".into(),
            Arg::Int(100),
            Arg::Null,
            || "t".into(),
            &call,
        ));
        assert_eq!(taken.expect("claim").value.len(), 100);
    }
    for id in 1..=1000_i64 {
        let failed = pollster::block_on(db.fail(
            "q".into(),
            id.into(),
            "503".into(),
            Arg::Null,
            Arg::Null,
            Arg::Null,
            &call,
        ))
        .expect("fail");
        assert_eq!(failed.value.retry_after, Some(BASE + 1 + 2_000));
    }
    enqueue_at(db, "now", 0, BASE + 2)
}

#[test]
fn claim_does_not_walk_the_members_waiting_behind_their_group_heads() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let due = heads_in_backoff(&db, true);
    let grouped = claim_lookup_steps(db.store(), BASE + 3);
    let plain = TempDb::new();
    let reference = engine(&plain.0);
    heads_in_backoff(&reference, false);
    let reference_steps = claim_lookup_steps(reference.store(), BASE + 3);
    assert_eq!(grouped, reference_steps, "claim read the blocked members");
    assert_eq!(claim_at(&db, BASE + 3).map(|m| m.id), Some(due.id));
    let stats = pollster::block_on(db.stats("q".into(), &at(BASE + 3))).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.delayed,
            stats.processing,
            stats.oldest_due_age_ms
        ),
        (11_000, 1_000, 1, None)
    );
}

/// 1 000 group names.
static GROUPS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    (0..1000)
        .map(|i| &*Box::leak(format!("customer-{i}").into_boxed_str()))
        .collect()
});

/// A cached statement keeps its plan when the clock bound to its range constraints moves on: a
/// SQLite built with `SQLITE_ENABLE_STAT4` (rusqlite's `bundled`, these tests with all features)
/// compiled claim's statements again at every call otherwise, 18 % of a Node process's
/// instructions (issue 19). Claims at later and later instants reprepare none of them.
#[test]
fn claims_at_new_instants_reprepare_no_statement() {
    let file = TempDb::new();
    let db = engine(&file.0);
    for i in 0..5 {
        enqueue_at(&db, &format!("m{i}"), 0, BASE + i);
        claim_at(&db, BASE + 1_000 * (i + 1)).expect("claimed");
    }
    let reprepared: Vec<(&str, i32)> = db
        .store()
        .with_connection(|conn| {
            Ok([EXPIRED_SQL, PROMOTE_SQL, CLAIM_SQL, EXPIRING_SQL]
                .into_iter()
                .map(|sql| {
                    let statement = conn.prepare_cached(sql).expect("cached");
                    (
                        sql,
                        statement.get_status(rusqlite::StatementStatus::RePrepare),
                    )
                })
                .collect())
        })
        .expect("read");
    for (sql, count) in reprepared {
        assert_eq!(count, 0, "{sql}");
    }
}
