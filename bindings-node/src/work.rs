//! How a call runs: off the JavaScript thread. Each call of the package's API becomes one [`Work`]
//! (an N-API async work item: napi-rs's `AsyncTask`), which runs its engine call on a thread of
//! libuv's pool and resolves the call's promise with the [`reply`](crate::reply) once it is done,
//! so the event loop never waits on the disk. Calls made at once run on several pool threads and
//! meet in the SQLite store, whose group commit lets them share one commit (as Python threads do).
//!
//! [`Shared::run`] is the one place that hands the engine the database's clock, which the store
//! reads once it holds its write lock.

use std::sync::{Arc, Mutex};

use deadletter::Engine;
use deadletter_sqlite::SqliteStore;
use napi::{Env, ScopedTask};

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

/// One call on a pool thread: resolves to its reply, or rejects with what the user's clock threw.
pub struct Work {
    shared: Arc<Shared>,
    job: Option<Job>,
}

impl Work {
    /// The work of `job` on the database of `shared`.
    pub fn new(shared: &Arc<Shared>, job: Job) -> Self {
        Self {
            shared: Arc::clone(shared),
            job: Some(job),
        }
    }
}

impl ScopedTask<'_> for Work {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let job = self
            .job
            .take()
            .ok_or_else(|| napi::Error::from_reason("deadletter: a call ran twice"))?;
        self.shared.run(job)
    }

    fn resolve(&mut self, _env: &Env, reply: String) -> napi::Result<String> {
        Ok(reply)
    }
}
