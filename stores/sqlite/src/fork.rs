//! Fork safety. A SQLite connection must not cross a `fork()`: the child would share it with the
//! parent, inherit its mutex locked forever when a thread of the parent was inside a call at that
//! moment, and inherit SQLite's record of the file locks this process holds, which the child does
//! not hold (POSIX locks are not inherited), so that even a database the child opened itself would
//! wait on locks nobody holds. Three hooks, plain functions that the host registers with its
//! fork machinery (the Python binding: `os.register_at_fork`):
//! - [`before_fork`]: wait until no thread is inside a SQLite call and hold new calls back
//!   (every call holds the [`Gate`] while it runs SQLite; a fork waits as long as one call may,
//!   at most the busy timeout);
//! - [`after_fork_in_parent`]: let the calls go on;
//! - [`after_fork_in_child`]: close the connections inherited from the parent without
//!   checkpointing (their files stay as the parent left them), which leaves SQLite's lock records
//!   clean, so that databases the child opens work as in any new process.
//!
//! Every call on a store opened before the fork then fails at once with a store error
//! (`SqliteStore` compares process ids, hooks or not), telling the user to open the database in
//! the child.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use rusqlite::Connection;
use rusqlite::config::DbConfig;

/// What holds a connection of this process, for [`after_fork_in_child`] to close.
pub trait Inherited: Send + Sync {
    /// Takes the connection out, if it still has it: later calls find none (the store reads as
    /// closed).
    fn take_connection(&self) -> Option<Connection>;
}

/// Held (shared) for the length of every SQLite call of this process; see [`enter`].
pub type Gate = RwLockReadGuard<'static, ()>;

static GATE: RwLock<()> = RwLock::new(());

/// Every connection opened in this process (dropped stores leave a dead `Weak`).
static OPEN: Mutex<Vec<Weak<dyn Inherited>>> = Mutex::new(Vec::new());

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
pub fn track<T: Inherited + 'static>(holder: &Arc<T>) {
    let holder: Arc<dyn Inherited> = holder.clone();
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    open.retain(|weak| weak.strong_count() > 0);
    open.push(Arc::downgrade(&holder));
}

/// Before a fork: waits for the SQLite calls in progress and holds new ones back until
/// [`after_fork_in_parent`] or [`after_fork_in_child`], which the same thread must call. (A host
/// with a global lock must not hold it while this waits, when a call in progress may take it:
/// the Python binding's calls take the GIL inside the store to read a Python clock, and its hook
/// releases the GIL while it waits.)
pub fn before_fork() {
    let gate = GATE.write().unwrap_or_else(PoisonError::into_inner);
    HELD.with(|held| *held.borrow_mut() = Some(gate));
}

/// After a fork, in the parent: lets the calls go on.
pub fn after_fork_in_parent() {
    HELD.with(|held| held.borrow_mut().take());
}

/// After a fork, in the child: closes the parent's connections (idle, since the fork waited for
/// every call) without a checkpoint, then lets the calls go on.
pub fn after_fork_in_child() {
    let open = std::mem::take(&mut *OPEN.lock().unwrap_or_else(PoisonError::into_inner));
    // No transaction is open: a fork waits until no call is inside the store, and the last call
    // to leave a store commits (see `group_commit.rs`).
    for conn in open
        .iter()
        .filter_map(Weak::upgrade)
        .filter_map(|holder| holder.take_connection())
    {
        // Without this, the last close in a process may checkpoint and delete the WAL.
        let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        if let Err((conn, _)) = conn.close() {
            std::mem::forget(conn);
        }
    }
    HELD.with(|held| held.borrow_mut().take());
}
