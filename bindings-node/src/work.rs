//! What a call runs: one engine call ([`Job`]) with the database's engine and clock ([`Shared`]),
//! on a thread of the database's pool ([`crate::pool`]), off the JavaScript thread.
//!
//! [`Shared::run`] is the one place that hands the engine the database's clock, which the store
//! reads once it holds its write lock.

use std::sync::Mutex;

use deadletter::Engine;
use deadletter_sqlite::SqliteStore;

use crate::clock::Clock;

/// The engine over the SQLite store.
pub type Db = Engine<SqliteStore>;

/// One engine call, given the engine and the clock; its reply (JSON text).
pub type Job = Box<dyn FnOnce(&Db, deadletter::Clock<'_>) -> String + Send>;

/// What a database's handles share: the engine over the store, and the clock.
pub struct Shared {
    /// The rules over the store.
    pub engine: Db,
    clock: Clock,
}

impl Shared {
    /// The state of a database just opened.
    pub fn new(engine: Db, clock: Clock) -> Self {
        Self { engine, clock }
    }

    /// Runs one engine call with the database's clock. When the user's clock threw, the call
    /// (rolled back by the store) fails with what it threw; otherwise its reply.
    pub fn run(&self, job: Job) -> napi::Result<String> {
        let thrown = Mutex::new(None);
        let clock = || self.clock.read(&thrown);
        let reply = job(&self.engine, &clock);
        match thrown.into_inner().ok().flatten() {
            Some(err) => Err(err),
            None => Ok(reply),
        }
    }
}
