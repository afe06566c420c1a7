//! The SQLite store against the shared conformance cases (in memory and on a file), and the query
//! plans that keep `claim` cheap however many succeeded, dead or delayed messages there are.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use _deadletter::sqlite::{CLAIM_SQL, EXPIRED_SQL, SqliteStore};
use deadletter::conformance::BASE;
use deadletter::{Engine, Error};
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
    let n = run_all(|| SqliteStore::open(":memory:".as_ref()).expect("open"));
    println!("{n} conformance cases passed on SQLite in memory");
}

#[test]
fn every_case_passes_on_a_file() {
    // Each case starts on a new, empty database file; all are removed when the test ends.
    let files = RefCell::new(Vec::new());
    let n = run_all(|| {
        let file = TempDb::new();
        let store = SqliteStore::open(&file.0).expect("open");
        files.borrow_mut().push(file);
        store
    });
    println!("{n} conformance cases passed on SQLite files");
}

#[test]
fn a_file_keeps_its_messages_and_a_newer_schema_is_refused() {
    let file = TempDb::new();
    let engine = Engine::new(SqliteStore::open(&file.0).expect("open"), limits_default());
    let m = pollster::block_on(engine.enqueue("q".into(), "hé ✓".into(), 3_i64.into(), BASE))
        .expect("enqueue");
    drop(engine);
    let engine = Engine::new(
        SqliteStore::open(&file.0).expect("reopen"),
        limits_default(),
    );
    let again = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(again, m);
    engine
        .store()
        .with_connection(|conn| {
            conn.pragma_update(None, "user_version", 2)
                .map_err(Error::store)
        })
        .expect("bump version");
    drop(engine);
    let refused = SqliteStore::open(&file.0).expect_err("newer schema");
    assert_eq!(refused.code(), "store");
    assert!(
        refused.to_string().contains("schema version 2"),
        "{refused}"
    );
}

#[test]
fn a_closed_store_fails_with_a_store_error() {
    let engine = Engine::new(
        SqliteStore::open(":memory:".as_ref()).expect("open"),
        limits_default(),
    );
    engine.store().close().expect("close");
    engine.store().close().expect("close twice");
    let err = pollster::block_on(engine.get("q".into(), 1_i64.into())).expect_err("closed");
    assert_eq!(err.code(), "store");
}

fn limits_default() -> deadletter::Limits {
    deadletter::Limits::default()
}

/// The `detail` column of `EXPLAIN QUERY PLAN sql` with parameters `("q", now)`.
fn plan(store: &SqliteStore, sql: &str, now: i64) -> Vec<String> {
    store
        .with_connection(|conn| {
            let mut statement = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .map_err(Error::store)?;
            let rows = statement
                .query_map(params!["q", now], |row| row.get::<_, String>(3))
                .map_err(Error::store)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(Error::store)
        })
        .expect("explain")
}

#[test]
fn claim_searches_an_index_without_sorting() {
    let file = TempDb::new();
    let store = SqliteStore::open(&file.0).expect("open");
    let now = BASE + 1_000_000;
    fill(&store, now);
    for (name, sql) in [("claim", CLAIM_SQL), ("expire", EXPIRED_SQL)] {
        let plan = plan(&store, sql, now);
        println!("EXPLAIN QUERY PLAN ({name}) {sql}\n  {}", plan.join("\n  "));
        assert!(
            plan.iter()
                .any(|d| d.starts_with("SEARCH messages USING INDEX")),
            "{name}: {plan:?}"
        );
        assert!(
            plan.iter()
                .all(|d| !d.contains("TEMP B-TREE") && !d.starts_with("SCAN")),
            "{name}: {plan:?}"
        );
    }

    // And the query does what it says on this data: the first due message of "q" (id 19).
    let engine = Engine::new(store, limits_default());
    let taken =
        pollster::block_on(engine.claim("q".into(), deadletter::Arg::Null, "tok".into(), now))
            .expect("claim")
            .expect("a due message");
    assert_eq!((taken.id, taken.status.as_str()), (19, "processing"));
}

/// 10,000 messages in two queues: most succeeded, dead or in backoff, a few processing, a few due;
/// then `ANALYZE`, so the planner decides with real statistics.
fn fill(store: &SqliteStore, now: i64) {
    store
        .with_connection(|conn| {
            let tx = conn.transaction().map_err(Error::store)?;
            {
                let mut insert = tx
                    .prepare(
                        "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
                         retry_after, last_error, created_at, updated_at, lease_token, \
                         lease_expires_at) VALUES (?1, 'p', ?2, ?3, 3, ?4, ?5, ?6, ?6, ?7, ?8)",
                    )
                    .map_err(Error::store)?;
                for i in 0..10_000_i64 {
                    let queue = if i % 10 == 9 { "other" } else { "q" };
                    let created = BASE + i;
                    let row = match i % 10 {
                        0..=3 => params![
                            queue,
                            "succeeded",
                            0,
                            None::<i64>,
                            None::<String>,
                            created,
                            None::<String>,
                            None::<i64>
                        ],
                        4 | 5 => params![
                            queue,
                            "dead",
                            3,
                            None::<i64>,
                            Some("boom"),
                            created,
                            None::<String>,
                            None::<i64>
                        ],
                        6 | 7 => params![
                            queue,
                            "pending",
                            1,
                            Some(now + 60_000),
                            Some("boom"),
                            created,
                            None::<String>,
                            None::<i64>
                        ],
                        8 if i % 100 == 8 => params![
                            queue,
                            "processing",
                            0,
                            None::<i64>,
                            None::<String>,
                            created,
                            Some("t"),
                            Some(now + 30_000)
                        ],
                        _ => params![
                            queue,
                            "pending",
                            0,
                            None::<i64>,
                            None::<String>,
                            created,
                            None::<String>,
                            None::<i64>
                        ],
                    };
                    insert.execute(row).map_err(Error::store)?;
                }
            }
            tx.execute_batch("ANALYZE").map_err(Error::store)?;
            tx.commit().map_err(Error::store)
        })
        .expect("fill");
}
