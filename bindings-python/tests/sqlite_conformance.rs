//! The SQLite store against the shared conformance cases (in memory and on a file), the upgrade
//! of a file written by deadletter 0.1.0, and the query plans that keep every operation on
//! indexes however many succeeded, dead or delayed messages there are.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use _deadletter::sqlite::{
    BY_KEY_SQL, CLAIM_SQL, COUNT_BY_STATUS_SQL, COUNT_DELAYED_SQL, COUNT_EXPIRED_SQL, DELETE_SQL,
    Durability, EXPIRED_SQL, GET_SQL, INSERT_SQL, LIST_SQL, NEXT_DUE_SQL, OLDEST_DEAD_SQL,
    OLDEST_DUE_SQL, PROMOTE_SQL, QUEUES_SQL, SCHEMA_V1, SCHEMA_VERSION, SqliteStore, UPGRADE_V2,
    UPGRADE_V3, WRITE_SQL, list_status_sql, select_sql,
};
use deadletter::conformance::BASE;
use deadletter::{
    Arg, Backoff, Engine, Error, FailedAttempt, Filter, Item, Limits, Message, Moment, Status,
};
use rusqlite::params;

/// A fresh path in the system's temporary directory, removed (with its WAL files) on drop.
struct TempDb(PathBuf);

impl TempDb {
    fn new() -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("deadletter-test-{}-{n}.db", std::process::id());
        let temp = Self(std::env::temp_dir().join(name));
        temp.remove();
        temp
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

fn run_all(open: impl Fn() -> SqliteStore) -> usize {
    pollster::block_on(deadletter::conformance::run_all(open))
}

#[test]
fn every_case_passes_in_memory() {
    let n = run_all(|| SqliteStore::open(":memory:".as_ref(), Durability::Full).expect("open"));
    println!("{n} conformance cases passed on SQLite in memory");
}

#[test]
fn every_case_passes_on_a_file() {
    // Each case starts on a new, empty database file; all are removed when the test ends.
    for (name, durability) in Durability::ALL {
        let files = RefCell::new(Vec::new());
        let n = run_all(|| {
            let file = TempDb::new();
            let store = SqliteStore::open(&file.0, durability).expect("open");
            files.borrow_mut().push(file);
            store
        });
        println!("{n} conformance cases passed on SQLite files, durability {name}");
    }
}

fn engine(path: &Path) -> Engine<SqliteStore> {
    Engine::new(
        SqliteStore::open(path, Durability::Full).expect("open"),
        Limits::default(),
    )
}

fn item(payload: &str) -> Item<'_> {
    Item {
        payload: payload.into(),
        ..Item::default()
    }
}

fn user_version(store: &SqliteStore) -> i64 {
    store
        .with_connection(|conn| {
            conn.query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(Error::store)
        })
        .expect("user_version")
}

#[test]
fn a_file_keeps_its_messages_and_a_newer_schema_is_refused() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let m = pollster::block_on(db.enqueue("q".into(), &item("hé ✓"), BASE)).expect("enqueue");
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

/// A message of the 0.1.0 fixture as version 3 reads it: what 0.1.0 stored, with the failures it
/// counted as dropped history and no `retry_after` outside pending.
fn v1_message(id: i64, payload: &str, status: Status, counts: (u32, u32)) -> Message {
    let (retry_count, max_retries) = counts;
    Message {
        id,
        queue: "emails".into(),
        payload: payload.into(),
        status,
        retry_count,
        max_retries,
        retry_after: None,
        last_error: None,
        created_at: BASE,
        updated_at: BASE + 10_000,
        lease_token: None,
        lease_expires_at: None,
        idempotency_key: None,
        first_failed_at: None,
        dead_at: None,
        errors: Vec::new(),
        errors_dropped: retry_count,
        replay_count: 0,
        replayed_at: None,
        deduplicated: false,
    }
}

/// What `tests/fixtures/make_v1_sqlite.py` left in `tests/fixtures/v0.1.0.sqlite`.
fn fixture_messages() -> Vec<Message> {
    let processing = Status::Processing;
    vec![
        Message {
            last_error: Some("boom".into()),
            lease_token: Some("3af2372f-a438-4bdd-801f-f029843f632a".into()),
            lease_expires_at: Some(BASE + 70_000),
            ..v1_message(1, r#"{"to": "a@example.com"}"#, processing, (1, 3))
        },
        Message {
            updated_at: BASE,
            lease_token: Some("5d91d29d-6a48-48a9-9c57-90722f796f7d".into()),
            lease_expires_at: Some(BASE + 60_000),
            ..v1_message(2, "claimed", processing, (0, 5))
        },
        v1_message(3, "acked", Status::Succeeded, (0, 3)),
        Message {
            retry_after: Some(BASE + 12_000),
            last_error: Some("HTTP 503".into()),
            ..v1_message(4, "retried", Status::Pending, (1, 4))
        },
        Message {
            last_error: Some("malformed".into()),
            dead_at: Some(BASE + 10_000),
            ..v1_message(5, "poison", Status::Dead, (1, 1))
        },
        Message {
            updated_at: BASE + 15_000,
            ..v1_message(6, "replayed", Status::Pending, (0, 1))
        },
        Message {
            queue: "other queue/ü".into(),
            updated_at: BASE,
            ..v1_message(7, &"x".repeat(1000), Status::Pending, (0, 3))
        },
    ]
}

#[test]
fn a_file_written_by_0_1_0_is_upgraded_in_place() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/v0.1.0.sqlite");
    let file = TempDb::new();
    std::fs::copy(&fixture, &file.0).expect("copy the fixture");
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let read = |queue: &str| {
        pollster::block_on(db.list(queue.into(), Arg::Null, Arg::Null, Arg::Null)).expect("list")
    };
    let mut all = read("emails");
    all.extend(read("other queue/ü"));
    assert_eq!(all, fixture_messages());

    // The upgraded file works: expired leases are reaped into the new history, claim takes the
    // oldest due message, fail records it, replay counts, ids continue.
    let now = BASE + 100_000;
    let policy = Backoff::default();
    let at = Moment {
        policy: &policy,
        sample: 0.0,
        now,
    };
    let claimed =
        pollster::block_on(db.claim("emails".into(), Arg::Null, || "t".into(), at)).expect("claim");
    let taken = claimed.value.expect("message 4 is due");
    assert_eq!((taken.id, taken.retry_after), (4, None));
    let one = pollster::block_on(db.get("emails".into(), 1_i64.into())).expect("get 1");
    assert_eq!(
        (
            one.status,
            one.retry_count,
            one.retry_after,
            one.errors_dropped
        ),
        (Status::Pending, 2, Some(now + 4_000), 1)
    );
    let lease_expired = FailedAttempt {
        attempt: 2,
        error: "lease expired".into(),
        at: now,
    };
    assert_eq!(one.errors, vec![lease_expired]);
    let failed = pollster::block_on(db.fail(
        "emails".into(),
        4_i64.into(),
        "HTTP 500".into(),
        "t".into(),
        Arg::Null,
        at,
    ))
    .expect("fail");
    assert_eq!(
        (
            failed.value.retry_count,
            failed.value.errors.len(),
            failed.value.errors[0].attempt
        ),
        (2, 1, 2)
    );
    let replayed =
        pollster::block_on(db.replay("emails".into(), 5_i64.into(), now)).expect("replay");
    assert_eq!(
        (
            replayed.status,
            replayed.dead_at,
            replayed.replay_count,
            replayed.replayed_at
        ),
        (Status::Pending, None, 1, Some(now))
    );
    let next = pollster::block_on(db.enqueue("emails".into(), &item("new"), now)).expect("enqueue");
    assert_eq!(next.id, 8);
    drop(db);
    assert_eq!(
        user_version(engine(&file.0).store()),
        SCHEMA_VERSION,
        "reopening changes nothing"
    );
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
                        .map(|_| pollster::block_on(db.enqueue("q".into(), &keyed, BASE)))
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
    ]
    .into_iter()
    .map(|(name, sql, covered)| (name.to_owned(), sql.to_owned(), covered))
    .collect();
    for status in Status::ALL {
        let sql = list_status_sql(status).to_owned();
        all.push((format!("list {status}"), sql, false));
    }
    // select, for replay_all (dead, every combination of filters) and purge (both statuses).
    for mask in 0..8u8 {
        let filter = Filter {
            queue: "q",
            status: Status::Dead,
            error_contains: (mask & 1 != 0).then_some("boom"),
            dead_after: (mask & 2 != 0).then_some(BASE),
            dead_before: (mask & 4 != 0).then_some(BASE),
            updated_until: None,
        };
        all.push((
            format!("select replay_all {mask:03b}"),
            select_sql(&filter),
            true,
        ));
    }
    for status in [Status::Succeeded, Status::Dead] {
        let filter = Filter {
            queue: "q",
            status,
            error_contains: None,
            dead_after: None,
            dead_before: None,
            updated_until: Some(BASE),
        };
        // Succeeded messages have no index of their own: purge reads their rows.
        let covered = status == Status::Dead;
        all.push((
            format!("select purge {status}"),
            select_sql(&filter),
            covered,
        ));
    }
    all
}

fn assert_plans(store: &SqliteStore, state: &str) {
    for (name, sql, covered) in queries() {
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
        assert!(
            name == "list processing" || plan.iter().all(|d| !d.contains("TEMP B-TREE")),
            "{name} ({state}): sorts: {plan:?}"
        );
        for index in indexes_of(&name) {
            assert!(
                plan.iter().any(|d| d.contains(&format!("INDEX {index} "))),
                "{name} ({state}): not through {index}: {plan:?}"
            );
        }
    }
}

/// The indexes that some queries must go through: claim never walks the messages in backoff, and
/// the queries of one status read its partial index (a page of processing messages is the one
/// query that sorts: they are as many as the leases held).
fn indexes_of(query: &str) -> &'static [&'static str] {
    match query {
        "claim" => &["messages_ready"],
        "promote" | "count delayed" | "next due" => &["messages_delayed"],
        "oldest due" => &["messages_ready", "messages_delayed"],
        "list pending" => &["messages_pending"],
        "list processing" => &["messages_leased"],
        "list dead" => &["messages_dead"],
        "count by status" => &[
            "messages_pending",
            "messages_leased",
            "messages_dead_at",
            "messages_by_queue_id",
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
    let policy = Backoff::default();
    let at = Moment {
        policy: &policy,
        sample: 0.0,
        now,
    };
    let taken = pollster::block_on(db.claim("q".into(), Arg::Null, || "tok".into(), at))
        .expect("claim")
        .value
        .expect("a due message");
    assert_eq!((taken.id, taken.status), (19, Status::Processing));
    let stats = pollster::block_on(db.stats("q".into(), now)).expect("stats");
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
    let names = pollster::block_on(db.queues(now)).expect("queues");
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

fn enqueue_at(db: &Engine<SqliteStore>, payload: &str, delay_ms: i64, now: i64) -> Message {
    let delayed = Item {
        payload: payload.into(),
        delay_ms: delay_ms.into(),
        ..Item::default()
    };
    pollster::block_on(db.enqueue("q".into(), &delayed, now)).expect("enqueue")
}

fn claim_at(db: &Engine<SqliteStore>, now: i64) -> Option<Message> {
    let policy = Backoff::default();
    let at = Moment {
        policy: &policy,
        sample: 0.0,
        now,
    };
    pollster::block_on(db.claim("q".into(), Arg::Null, || "tok".into(), at))
        .expect("claim")
        .value
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
        pollster::block_on(db.enqueue_many("q".into(), &items, BASE + start)).expect("enqueue");
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

#[test]
fn a_promoted_message_is_not_claimed_when_the_clock_goes_back() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let delayed = enqueue_at(&db, "delayed", 10_000, BASE);
    let due = enqueue_at(&db, "due", 0, BASE + 1);
    // At BASE + 20 s both are due: the claim moves the delayed one to the ready index and takes
    // the oldest (the delayed one); then ...
    let taken = claim_at(&db, BASE + 20_000).expect("the delayed message");
    assert_eq!(taken.id, delayed.id);
    let other = enqueue_at(&db, "again", 10_000, BASE + 2);
    let promoted = claim_at(&db, BASE + 20_000).expect("the due message");
    assert_eq!(promoted.id, due.id);
    // ... `other` was moved by that claim (due at BASE + 10 s). With the clock back before its
    // retry_after, it is delayed again: not claimed, counted as delayed, next due.
    assert_eq!(claim_at(&db, BASE + 5_000), None);
    let stats = pollster::block_on(db.stats("q".into(), BASE + 5_000)).expect("stats");
    assert_eq!(
        (stats.delayed, stats.next_due_at, stats.oldest_due_age_ms),
        (1, Some(BASE + 10_002), None)
    );
    assert_eq!(claim_at(&db, BASE + 10_002).map(|m| m.id), Some(other.id));
}

/// A file as this store wrote it at schema version 2 (`now`: the instant of the test): pending
/// due, pending whose backoff is over, pending in backoff, processing with an expired lease,
/// succeeded.
fn write_version_2(path: &Path, now: i64) {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(SCHEMA_V1).expect("v1");
    conn.execute_batch(UPGRADE_V2).expect("v2");
    conn.pragma_update(None, "user_version", 2)
        .expect("version");
    let mut insert = conn
        .prepare(
            "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
                 retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
                 errors, errors_dropped) \
                 VALUES ('q', ?1, ?2, ?3, 3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, 0)",
        )
        .expect("insert");
    let failed = r#"[{"attempt":1,"error":"boom","at":1767225600000}]"#;
    let none = None::<i64>;
    let rows = [
        params![
            "due",
            "pending",
            0,
            none,
            None::<&str>,
            BASE + 3,
            None::<&str>,
            none,
            "[]"
        ],
        params![
            "over",
            "pending",
            1,
            Some(now - 1),
            Some("boom"),
            BASE + 1,
            None::<&str>,
            none,
            failed
        ],
        params![
            "later",
            "pending",
            1,
            Some(now + 50_000),
            Some("boom"),
            BASE,
            None::<&str>,
            none,
            failed
        ],
        params![
            "held",
            "processing",
            0,
            none,
            None::<&str>,
            BASE + 2,
            Some("t"),
            Some(now - 5),
            "[]"
        ],
        params![
            "done",
            "succeeded",
            0,
            none,
            None::<&str>,
            BASE + 4,
            None::<&str>,
            none,
            "[]"
        ],
    ];
    for row in rows {
        insert.execute(row).expect("row");
    }
}

#[test]
fn a_version_2_file_is_upgraded_in_place() {
    let file = TempDb::new();
    let now = BASE + 100_000;
    write_version_2(&file.0, now);
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let ready: Vec<(i64, i64)> = db
        .store()
        .with_connection(|conn| {
            let mut statement = conn
                .prepare("SELECT id, ready FROM messages ORDER BY id")
                .map_err(Error::store)?;
            let rows = statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(Error::store)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Error::store)
        })
        .expect("ready");
    assert_eq!(ready, [(1, 1), (2, 0), (3, 0), (4, 1), (5, 1)]);
    let all =
        pollster::block_on(db.list("q".into(), Arg::Null, Arg::Null, Arg::Null)).expect("list");
    let fields: Vec<(&str, Status, Option<i64>)> = all
        .iter()
        .map(|m| (m.payload.as_str(), m.status, m.retry_after))
        .collect();
    assert_eq!(
        fields,
        [
            ("due", Status::Pending, None),
            ("over", Status::Pending, Some(now - 1)),
            ("later", Status::Pending, Some(now + 50_000)),
            ("held", Status::Processing, None),
            ("done", Status::Succeeded, None),
        ]
    );
    let stats = pollster::block_on(db.stats("q".into(), now)).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.delayed,
            stats.next_due_at,
            stats.expired
        ),
        (3, 1, Some(now + 50_000), 1)
    );
    assert_eq!(stats.oldest_due_age_ms, Some(now - (BASE + 1)));
    // FIFO among the due messages, the one whose backoff is over first; the expired lease goes
    // back into backoff; the one still in backoff stays.
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("over".into()));
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("due".into()));
    assert_eq!(claim_at(&db, now), None);
    drop(db);
    assert_eq!(user_version(engine(&file.0).store()), SCHEMA_VERSION);
}

/// Schema version 4 gives ids without `AUTOINCREMENT`: an id that a message deleted before the
/// upgrade had is not given again, from a file of version 2 or 3; nor one deleted after it.
#[test]
fn ids_are_not_reused_across_the_upgrade_to_version_4() {
    for version in [2, 3] {
        let file = TempDb::new();
        let now = BASE + 100_000;
        write_version_2(&file.0, now);
        {
            let conn = rusqlite::Connection::open(&file.0).expect("open");
            if version == 3 {
                conn.execute_batch(UPGRADE_V3).expect("v3");
                conn.pragma_update(None, "user_version", 3)
                    .expect("version");
            }
            // The highest id: AUTOINCREMENT remembers 5, max(id) is now 4.
            conn.execute("DELETE FROM messages WHERE id = 5", [])
                .expect("delete");
        }
        let db = engine(&file.0);
        assert_eq!(user_version(db.store()), SCHEMA_VERSION, "from {version}");
        let enqueue = |payload: &str| {
            pollster::block_on(db.enqueue("q".into(), &item(payload), now))
                .expect("enqueue")
                .id
        };
        assert_eq!(enqueue("after the upgrade"), 6, "from {version}");
        // Finish the newest message, delete it, enqueue: 7, not 6.
        db.store()
            .with_connection(|conn| {
                conn.execute("UPDATE messages SET status = 'succeeded' WHERE id = 6", [])
                    .map(drop)
                    .map_err(Error::store)
            })
            .expect("finish 6");
        let deleted = pollster::block_on(db.delete("q".into(), 6_i64.into())).expect("delete");
        assert_eq!(deleted.id, 6);
        assert_eq!(enqueue("after a delete"), 7, "from {version}");
    }
}

/// Calls that queue while another call holds the connection share its successor's commit; a
/// failing call among them (a step's error) changes nothing of the others, and each
/// gets exactly the result it would have got alone.
#[test]
fn concurrent_calls_share_commits_and_keep_their_own_outcomes() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let store = db.store();
    let ids: Vec<i64> = (0..9)
        .map(|i| enqueue_at(&db, &format!("m{i}"), 0, BASE + i).id)
        .collect();
    let before = store.commits();
    let first = ids[0];
    let start = std::sync::Barrier::new(ids.len());
    let outcomes: Vec<Result<Message, Error>> = std::thread::scope(|scope| {
        let calls: Vec<_> = ids
            .iter()
            .map(|&id| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    if id == first {
                        // Holds the connection long enough for the others to queue behind it.
                        pollster::block_on(deadletter::Store::update(store, "q", id, |m| {
                            std::thread::sleep(std::time::Duration::from_millis(300));
                            Ok(Message {
                                last_error: Some("first".into()),
                                ..m
                            })
                        }))
                    } else {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        pollster::block_on(deadletter::Store::update(store, "q", id, |m| {
                            if id % 2 == 0 {
                                Err(Error::Store(format!("refused {id}")))
                            } else {
                                Ok(Message {
                                    last_error: Some(format!("changed {id}")),
                                    ..m
                                })
                            }
                        }))
                    }
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().expect("call")).collect()
    });
    let commits = store.commits() - before;
    assert!(
        commits <= 3,
        "{commits} commits for 9 calls: none was shared"
    );
    for (id, outcome) in ids.iter().zip(&outcomes) {
        let stored = pollster::block_on(db.get("q".into(), (*id).into())).expect("get");
        match outcome {
            Ok(written) => {
                assert!(*id == first || id % 2 == 1);
                assert_eq!(written, &stored);
            }
            Err(err) => {
                assert_eq!(err.to_string(), format!("store error: refused {id}"));
                assert_eq!(
                    stored.payload,
                    format!("m{}", id - 1),
                    "a refused call wrote"
                );
            }
        }
    }
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1 + ids
            .iter()
            .filter(|id| *id % 2 == 1 && **id != ids[0])
            .count()
    );
}
