//! Fork safety. A child made by `fork()` shares the parent's sockets: any byte the child sent on
//! them (a query, or the goodbye a closing client sends) would land in the parent's sessions. So
//! in a child, every call of a store opened before the fork fails at once with a store error,
//! `close` touches nothing (and fails the same way), `is_closed` is true, and dropping the store
//! leaves the parent's sessions alone (forgotten, not closed). Opening a new store in the child
//! works. No hook is needed: the pool compares process ids. (The SQLite store has rules of its
//! own, in `deadletter-sqlite`'s `fork.rs`: its connections must also be closed in the child.)

use deadletter::{Error, Result};

/// The process that opened a pool: its sessions may be used there only.
#[derive(Debug)]
pub struct Owner {
    pid: u32,
}

impl Owner {
    /// This process.
    pub fn this_process() -> Self {
        Self {
            pid: std::process::id(),
        }
    }

    /// Whether this is another process than the owner: a child made by `fork()`.
    pub fn forked(&self) -> bool {
        std::process::id() != self.pid
    }

    /// `Ok` in the owner; in a forked child, the store error every call of the store gets.
    pub fn check(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::Store(
                "this database was opened before a fork, in the parent process, whose PostgreSQL \
                 connections must not be used by a child: open the database again in this \
                 process"
                    .into(),
            ));
        }
        Ok(())
    }
}
