//! What the SQLite tests share: temporary database files, removed afterwards, and a few calls
//! through the engine.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use deadletter::{Engine, Error, Item, Limits};
use deadletter_sqlite::{Durability, SqliteStore};

/// A fresh path in the system's temporary directory, removed (with its WAL files) on drop.
pub struct TempDb(pub PathBuf);

impl TempDb {
    /// A path no file has yet.
    pub fn new() -> Self {
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

/// The engine over a store on `path`, with the default limits.
pub fn engine(path: &Path) -> Engine<SqliteStore> {
    Engine::new(
        SqliteStore::open(path, Durability::Full).expect("open"),
        Limits::default(),
    )
}

/// An item of `payload` and nothing else.
pub fn item(payload: &str) -> Item<'_> {
    Item {
        payload: payload.into(),
        ..Item::default()
    }
}

/// The schema version of the store's file (`PRAGMA user_version`).
pub fn user_version(store: &SqliteStore) -> i64 {
    store
        .with_connection(|conn| {
            conn.query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(Error::store)
        })
        .expect("user_version")
}

/// The threads of this process named as the checkpoint thread (`comm` keeps 15 bytes): for the
/// test binaries that count them (`checkpoint.rs`, `checkpoint_full.rs`), one test each.
pub fn checkpoint_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "deadletter-chec")
        .count()
}

/// The length of the WAL file of the database at `path` (0 when there is none).
pub fn wal_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}
