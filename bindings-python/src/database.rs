//! `deadletter.Database` and `deadletter.Queue`: the engine over SQLite, with a clock.

use std::future::Future;
use std::sync::Arc;

use deadletter::{Arg, Engine, Millis};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert::{Value, system_now, to_millis};
use crate::errors::to_py_err;
use crate::message::PyMessage;
use crate::sqlite::SqliteStore;

/// What a `Database` and its `Queue`s share.
pub struct Shared {
    /// The rules over the SQLite store.
    pub engine: Engine<SqliteStore>,
    /// The user's clock (zero-argument callable returning an aware datetime); `None`: the system
    /// clock.
    pub clock: Option<Py<PyAny>>,
}

impl Shared {
    /// The current instant, in UTC milliseconds, read with the GIL held.
    fn now(&self, py: Python<'_>) -> PyResult<Millis> {
        match &self.clock {
            Some(clock) => to_millis(&clock.bind(py).call0()?, "clock"),
            None => Ok(system_now()),
        }
    }
}

/// Runs one engine call with the GIL released (SQLite may wait up to 30 s for a lock) and maps
/// its error to a `deadletter` exception.
fn run<T, F>(py: Python<'_>, call: impl FnOnce() -> F + Send) -> PyResult<T>
where
    T: Send,
    F: Future<Output = deadletter::Result<T>>,
{
    py.detach(|| pollster::block_on(call()))
        .map_err(|err| to_py_err(py, &err))
}

/// A queue database on one SQLite connection, made by `deadletter.open`. Safe to share between
/// threads (calls are serialized on the connection and release the GIL while SQLite works); each
/// process opens its own: in a child made by `fork()`, every operation of a database opened before
/// the fork raises `StoreError` at once (open it again in the child) and `closed` is true. Also a
/// context manager that closes it on exit.
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
    /// creation). Raises `ValidationError` (field `queue`) for any other name.
    fn queue(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Queue> {
        let name = Value::from_py(Some(name));
        match deadletter::validate::queue_name(&name.arg()) {
            Ok(valid) => Ok(Queue {
                shared: Arc::clone(&self.shared),
                name: valid.to_owned(),
            }),
            Err(err) => Err(to_py_err(py, &err)),
        }
    }

    /// Closes the database. Later operations of its queues raise `StoreError`; closing again
    /// does nothing. In a child made by `fork()` it raises `StoreError` and leaves the parent's
    /// connection alone.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.shared.engine.store();
        py.detach(|| store.close())
            .map_err(|err| to_py_err(py, &err))
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

/// One named queue of a `Database`, made by `Database.queue(name)`. Every method reads the
/// database's clock once and raises `ValidationError` (a `ValueError`) for a rejected argument,
/// `NotFoundError` (a `LookupError`) for an id this queue does not have, `ConflictError` for a
/// transition not allowed now (wrong status, or a lost lease), `StoreError` when SQLite fails, the
/// database is closed, or a row it reads holds a value deadletter never writes (a timestamp
/// outside years 1..=9999, a wrong type, NULL, an unknown status: the error names the message and
/// the column). A call that raises has changed nothing.
#[pyclass(frozen, module = "deadletter", name = "Queue")]
pub struct Queue {
    shared: Arc<Shared>,
    name: String,
}

#[pymethods]
impl Queue {
    /// The queue's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Adds a pending message and returns it. `payload`: a str of at most `max_payload_bytes`
    /// bytes of UTF-8 (set at open), stored verbatim; `max_retries`: an int, 1..=10, the attempts
    /// allowed before the message is dead (default 3).
    #[pyo3(
        signature = (payload, *, max_retries = None),
        text_signature = "($self, payload, *, max_retries=3)"
    )]
    fn enqueue(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        max_retries: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (payload, max_retries) = (Value::from_py(Some(payload)), Value::from_py(max_retries));
        let now = self.shared.now(py)?;
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || {
            engine.enqueue(Arg::Str(queue), payload.arg(), max_retries.arg(), now)
        })
        .map(PyMessage)
    }

    /// Takes the next due message (FIFO by enqueue time, then id) and leases it: it becomes
    /// `processing` with a fresh random `lease_token` until `lease_expires_at`. Returns `None` when
    /// nothing is due. `lease`: seconds (int or float, 0.001..=43200) or a `datetime.timedelta`,
    /// rounded to the millisecond; `None` uses the database's lease (set at open, default 30 s).
    /// Messages of this queue whose lease ran out are first counted as failed attempts with the
    /// error `"lease expired"` (the same backoff and dead-letter rules as `fail`). Leases are
    /// reaped lazily, by this call: until then a message whose lease ran out reads as `processing`.
    #[pyo3(signature = (*, lease = None))]
    fn claim(
        &self,
        py: Python<'_>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyMessage>> {
        let lease = Value::lease(lease);
        let now = self.shared.now(py)?;
        let token = uuid::Uuid::new_v4().to_string();
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || {
            engine.claim(Arg::Str(queue), lease.arg(), token, now)
        })
        .map(|message| message.map(PyMessage))
    }

    /// Acks a processing message: it becomes `succeeded` (final). `lease_token`: when given, it
    /// must be the message's current token, else `ConflictError` (the lease expired and the
    /// message may be with another worker); `None` skips the check.
    #[pyo3(signature = (id, *, lease_token = None))]
    fn succeed(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        lease_token: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, token) = (Value::from_py(Some(id)), Value::from_py(lease_token));
        let now = self.shared.now(py)?;
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || {
            engine.succeed(Arg::Str(queue), id.arg(), token.arg(), now)
        })
        .map(PyMessage)
    }

    /// Records a failed attempt of a processing message. `error`: a str, stored as `last_error`
    /// (truncated past 64 KiB). With `retryable` true and retries left, the message goes back to
    /// `pending`, claimable after `min(2**retry_count, 3600)` seconds (the project's backoff
    /// contract); once `retry_count` reaches `max_retries`, or when `retryable` is false, it is
    /// `dead` (kept, listable, replayable). `lease_token`: as for `succeed`.
    #[pyo3(
        signature = (id, error, *, lease_token = None, retryable = None),
        text_signature = "($self, id, error, *, lease_token=None, retryable=True)"
    )]
    fn fail(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
        lease_token: Option<&Bound<'_, PyAny>>,
        retryable: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, error) = (Value::from_py(Some(id)), Value::from_py(Some(error)));
        let (token, retryable) = (Value::from_py(lease_token), Value::from_py(retryable));
        let now = self.shared.now(py)?;
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || {
            engine.fail(
                Arg::Str(queue),
                id.arg(),
                error.arg(),
                token.arg(),
                retryable.arg(),
                now,
            )
        })
        .map(PyMessage)
    }

    /// Sends a dead message back (redrive): `pending`, `retry_count` 0, no error, claimable now.
    /// `ConflictError` when it is not dead.
    fn replay(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let now = self.shared.now(py)?;
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || engine.replay(Arg::Str(queue), id.arg(), now)).map(PyMessage)
    }

    /// The message `id` of this queue; `NotFoundError` when there is none (ids of other queues
    /// are not visible here).
    fn get(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || engine.get(Arg::Str(queue), id.arg())).map(PyMessage)
    }

    /// Messages of this queue ordered by id: only those in `status` when given (`"pending"`,
    /// `"processing"`, `"succeeded"`, `"dead"`), at most `limit` (1..=1000), with ids greater
    /// than `after_id` (pass the last id of a page to get the next one).
    #[pyo3(
        signature = (*, status = None, limit = None, after_id = None),
        text_signature = "($self, *, status=None, limit=100, after_id=None)"
    )]
    fn list(
        &self,
        py: Python<'_>,
        status: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        after_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyMessage>> {
        let (status, limit) = (Value::from_py(status), Value::from_py(limit));
        let after_id = Value::from_py(after_id);
        let (engine, queue) = (&self.shared.engine, self.name.as_str());
        run(py, || {
            engine.list(Arg::Str(queue), status.arg(), limit.arg(), after_id.arg())
        })
        .map(|messages| messages.into_iter().map(PyMessage).collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = self.name.as_str().into_pyobject(py)?.repr()?;
        Ok(format!("<deadletter.Queue {name}>"))
    }
}
