//! Every shared conformance case on SQLite, one test per case and variant (`harness = false`):
//! in memory (`[memory]`), and on a new file with each durability (`[file, full]`,
//! `[file, normal]`). Each case starts on a new, empty database; the files are removed when the
//! run ends.

mod common;

use std::process::ExitCode;
use std::sync::{Mutex, PoisonError};

use common::TempDb;
use deadletter::conformance::harness;
use deadletter_sqlite::{Durability, SqliteStore};

/// The files of the cases run so far, removed at the end.
static FILES: Mutex<Vec<TempDb>> = Mutex::new(Vec::new());

/// A store on a new file.
fn on_file(durability: Durability) -> SqliteStore {
    let file = TempDb::new();
    let store = SqliteStore::open(&file.0, durability).expect("open a new file");
    FILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(file);
    store
}

fn main() -> ExitCode {
    let mut trials = harness::trials("memory", || {
        SqliteStore::open(":memory:".as_ref(), Durability::Full).expect("open in memory")
    });
    for (name, durability) in Durability::ALL {
        let kind = format!("file, {name}");
        trials.extend(harness::trials(&kind, move || on_file(durability)));
    }
    let code = harness::run(trials);
    FILES.lock().unwrap_or_else(PoisonError::into_inner).clear();
    code
}
