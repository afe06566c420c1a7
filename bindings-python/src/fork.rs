//! Fork safety. A SQLite connection must not cross a `fork()`: the child would share it with the
//! parent, inherit its mutex locked forever when a thread of the parent was inside a call at that
//! moment, and inherit SQLite's record of the file locks this process holds, which the child does
//! not hold (POSIX locks are not inherited), so that even a database the child opened itself would
//! wait on locks nobody holds. Through `os.register_at_fork`:
//! - before a fork, wait until no thread is inside a SQLite call and hold new calls back (every
//!   call holds the [`Gate`] while it runs SQLite; a fork waits as long as one call may, at most
//!   the busy timeout);
//! - in the parent, let the calls go on;
//! - in the child, close the connections inherited from the parent without checkpointing (their
//!   files stay as the parent left them), which leaves SQLite's lock records clean, so that
//!   databases the child opens work as in any new process.
//!
//! Every call on a store opened before the fork then fails at once with a store error
//! (`SqliteStore` compares process ids), telling the user to open the database in the child.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rusqlite::config::DbConfig;

use crate::group_commit::Session;

/// A store's connection, shared with the list of open connections.
pub type Slot = Mutex<Session>;

/// Held (shared) for the length of every SQLite call of this process; see [`enter`].
pub type Gate = RwLockReadGuard<'static, ()>;

static GATE: RwLock<()> = RwLock::new(());

/// Every connection opened in this process (dropped stores leave a dead `Weak`).
static OPEN: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

thread_local! {
    /// The exclusive side of [`GATE`], from `before_fork` to the `after_fork_*` hook: the same
    /// thread, in the parent and in the child.
    static HELD: RefCell<Option<RwLockWriteGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// Enters a SQLite call: waits while a fork is being prepared. Take it once per call, before the
/// connection's mutex, and release it after (a second `enter` in the same thread could wait for a
/// fork that waits for the first).
pub fn enter() -> Gate {
    GATE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Records a new connection, to be closed in forked children.
pub fn track(slot: &Arc<Slot>) {
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    open.retain(|weak| weak.strong_count() > 0);
    open.push(Arc::downgrade(slot));
}

/// `os.register_at_fork(before=...)`: waits for the SQLite calls in progress (they run without the
/// GIL and need it only after leaving the gate) and holds new ones back.
#[pyfunction]
fn before_fork() {
    let gate = GATE.write().unwrap_or_else(PoisonError::into_inner);
    HELD.with(|held| *held.borrow_mut() = Some(gate));
}

/// `os.register_at_fork(after_in_parent=...)`.
#[pyfunction]
fn after_fork_in_parent() {
    HELD.with(|held| held.borrow_mut().take());
}

/// `os.register_at_fork(after_in_child=...)`: closes the parent's connections (idle, since the
/// fork waited for every call) without a checkpoint, then opens the gate.
#[pyfunction]
fn after_fork_in_child() {
    let open = std::mem::take(&mut *OPEN.lock().unwrap_or_else(PoisonError::into_inner));
    for slot in open.iter().filter_map(Weak::upgrade) {
        let conn = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        // No transaction is open: a fork waits until no call is inside the store, and the last
        // call to leave a store commits (see `crate::group_commit`).
        if let Some(conn) = conn {
            // Without this, the last close in a process may checkpoint and delete the WAL.
            let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
            if let Err((conn, _)) = conn.close() {
                std::mem::forget(conn);
            }
        }
    }
    HELD.with(|held| held.borrow_mut().take());
}

/// Registers the three hooks with `os.register_at_fork` (absent on Windows, which has no fork).
pub fn install(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let os = module.py().import("os")?;
    let Ok(register) = os.getattr("register_at_fork") else {
        return Ok(());
    };
    let hooks = PyDict::new(module.py());
    hooks.set_item("before", wrap_pyfunction!(before_fork, module)?)?;
    hooks.set_item(
        "after_in_parent",
        wrap_pyfunction!(after_fork_in_parent, module)?,
    )?;
    hooks.set_item(
        "after_in_child",
        wrap_pyfunction!(after_fork_in_child, module)?,
    )?;
    register.call((), Some(&hooks))?;
    Ok(())
}
