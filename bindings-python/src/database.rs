//! `deadletter.Database`: the engine over SQLite or PostgreSQL ([`AnyStore`](crate::store::AnyStore)),
//! with a clock, a random source for jitter and the dead-letter callbacks ([`Shared`]); and
//! `Unsubscribe`, which `Database.on_dead` returns.

use std::sync::{Arc, Weak};

use deadletter::{Error, FieldError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert::{Value, describe_type};
use crate::errors::to_py_err;
use crate::policy::PyBackoff;
use crate::queue::Queue;
use crate::shared::Shared;
use crate::stats::PyQueueStats;

/// A queue database, made by `deadletter.open`: one SQLite connection, or a pool of PostgreSQL
/// connections. Safe to share between threads (calls release the GIL while the store works; on
/// SQLite they are serialized on the connection, on PostgreSQL each takes a pooled connection, up
/// to `max_connections` at once); each process opens its own: in a child made by `fork()`, every
/// operation of a database opened before the fork raises `StoreError` at once (open it again in
/// the child) and `closed` is true. Also a context manager that closes it on exit.
#[pyclass(frozen, module = "deadletter", name = "Database")]
pub struct Database {
    shared: Arc<Shared>,
}

impl Database {
    /// A database over `shared`.
    pub fn new(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }
}

#[pymethods]
impl Database {
    /// The queue called `name` (a non-empty str of at most 255 characters; queues need no
    /// creation). `backoff`: a `deadletter.Backoff` that this handle's failures and expired
    /// leases wait by, whatever the queue's stored settings say (an explicit choice in code wins;
    /// the first call of the handle that applies it while a different policy is stored warns,
    /// once, with `warnings.warn`); `None`: the policy stored with the queue
    /// (`Queue.set_settings`), else `Backoff()`, `min(2**n, 3600)` seconds after the n-th
    /// failure. Handles are cheap: two handles on one name see the same messages. Raises
    /// `ValidationError` (fields `queue`, `backoff`) for any other name or backoff.
    #[pyo3(signature = (name, *, backoff = None))]
    fn queue(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        backoff: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Queue> {
        let name = Value::from_py(Some(name));
        let checked = deadletter::validate::queue_name(&name.arg());
        let policy = match backoff.filter(|b| !b.is_none()) {
            None => Ok(None),
            Some(given) => given
                .cast::<PyBackoff>()
                .map(|b| Some(b.get().0))
                .map_err(|_| {
                    let kind = describe_type(given);
                    FieldError::new(
                        "backoff",
                        "type",
                        format!("must be a deadletter.Backoff or None, got {kind}"),
                    )
                }),
        };
        match (checked, policy) {
            (Ok(valid), Ok(backoff)) => Ok(Queue::new(
                Arc::clone(&self.shared),
                valid.to_owned(),
                backoff,
            )),
            (checked, policy) => {
                let mut fields = checked
                    .err()
                    .map(|e| e.field_errors().to_vec())
                    .unwrap_or_default();
                fields.extend(policy.err());
                Err(to_py_err(py, &Error::Validation(fields)))
            }
        }
    }

    /// The statistics of every queue that holds messages or has stored settings (a paused empty
    /// queue is listed), a list of `QueueStats`, by name in ascending code-point order, read
    /// from indexes. Raises `ValidationError` (field `clock`) for a bad clock, `StoreError` when
    /// the store fails or the database is closed.
    fn queues(&self, py: Python<'_>) -> PyResult<Vec<PyQueueStats>> {
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| engine.queues(clock).await)
            .map(|all| all.into_iter().map(PyQueueStats).collect())
    }

    /// Registers `callback`, a callable that takes one `Message`, as a dead-letter callback: after
    /// every call of this database that made messages dead (`Queue.fail`, and `Queue.claim`,
    /// `Queue.claim_many` and `Queue.reap` when an expired lease used up the last attempt or a
    /// pending message expired)
    /// returns from the store (committed), each callback is called with each message that died,
    /// in order, in the calling thread, before that call returns. An exception the callback
    /// raises is logged with its traceback on the `logging` logger `"deadletter"` and changes
    /// nothing (the call still returns its result); `KeyboardInterrupt` and `SystemExit`
    /// propagate. Returns a zero-argument callable that unregisters it (calling it again does
    /// nothing). Raises `ValidationError` (field `callback`) when `callback` is not callable.
    fn on_dead(&self, py: Python<'_>, callback: &Bound<'_, PyAny>) -> PyResult<Unsubscribe> {
        if !callback.is_callable() {
            let message = format!(
                "must be a callable taking a Message, got {}",
                describe_type(callback)
            );
            return Err(to_py_err(
                py,
                &Error::Validation(vec![FieldError::new("callback", "type", message)]),
            ));
        }
        let id = self.shared.subscribe(py, callback.clone().unbind())?;
        Ok(Unsubscribe {
            shared: Arc::downgrade(&self.shared),
            id,
        })
    }

    /// Closes the database and lets go of its dead-letter callbacks (nothing can die any more).
    /// Later operations of its queues raise `StoreError`; closing again does nothing. In a child
    /// made by `fork()` it raises `StoreError` and leaves the parent's connection alone.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.shared.engine.store();
        py.detach(|| store.close())
            .map_err(|err| to_py_err(py, &err))?;
        self.shared.forget_callbacks();
        Ok(())
    }

    /// Whether `close` was called; true in a child made by `fork()` after it was opened.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.engine.store().is_closed()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the database; exceptions propagate.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        let limits = self.shared.engine.limits();
        format!(
            "<deadletter.Database {state} lease={}.{:03}s max_payload_bytes={}>",
            limits.default_lease_ms / 1000,
            limits.default_lease_ms % 1000,
            limits.max_payload_bytes
        )
    }
}

/// Unregisters one dead-letter callback when called (returned by `Database.on_dead`).
#[pyclass(frozen, module = "deadletter", name = "Unsubscribe")]
pub struct Unsubscribe {
    shared: Weak<Shared>,
    id: u64,
}

#[pymethods]
impl Unsubscribe {
    /// Unregisters the callback; calling again does nothing.
    fn __call__(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.unsubscribe(self.id);
        }
    }
}
