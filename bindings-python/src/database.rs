//! `deadletter.Database` and `deadletter.Queue`: the engine over SQLite or PostgreSQL
//! ([`AnyStore`]), with a clock, a random source for jitter, and the dead-letter callbacks.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use deadletter::{Arg, Backoff, Engine, Error, FieldError, Item, Message, Millis, Moment, Outcome};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{Value, describe_type, system_now, to_millis, to_opt_datetime};
use crate::errors::{PyField, to_py_err, validation_error};
use crate::message::PyMessage;
use crate::policy::PyBackoff;
use crate::stats::PyQueueStats;
use crate::store::AnyStore;

/// What a `Database` and its `Queue`s share.
pub struct Shared {
    /// The rules over the store (SQLite or PostgreSQL).
    pub engine: Engine<AnyStore>,
    /// The user's clock (zero-argument callable returning an aware datetime); `None`: the system
    /// clock.
    pub clock: Option<Py<PyAny>>,
    /// The user's random source for jitter (zero-argument callable returning a float in
    /// `[0, 1)`); `None`: `fastrand`.
    pub random: Option<Py<PyAny>>,
    /// The dead-letter callbacks, by subscription number, in subscription order.
    dead_letters: Mutex<Vec<(u64, Py<PyAny>)>>,
    /// The next subscription number.
    next_subscription: AtomicU64,
}

impl Shared {
    /// The shared state of a database just opened.
    pub fn new(
        engine: Engine<AnyStore>,
        clock: Option<Py<PyAny>>,
        random: Option<Py<PyAny>>,
    ) -> Self {
        Self {
            engine,
            clock,
            random,
            dead_letters: Mutex::new(Vec::new()),
            next_subscription: AtomicU64::new(0),
        }
    }

    /// The current instant, in UTC milliseconds, read with the GIL held.
    pub(crate) fn now(&self, py: Python<'_>) -> PyResult<Millis> {
        match &self.clock {
            Some(clock) => to_millis(&clock.bind(py).call0()?, "clock"),
            None => Ok(system_now()),
        }
    }

    /// The instant and the jitter sample of an operation that may reschedule messages under
    /// `policy` (a policy without jitter ignores the sample), read with the GIL held.
    fn moment<'a>(&self, py: Python<'_>, policy: &'a Backoff) -> PyResult<Moment<'a>> {
        let now = self.now(py)?;
        let sample = match &self.random {
            None => fastrand::f64(),
            Some(random) => {
                let drawn = Value::from_py(Some(&random.bind(py).call0()?));
                deadletter::validate::jitter_sample(&drawn.arg())
                    .map_err(|err| to_py_err(py, &err))?
            }
        };
        Ok(Moment {
            policy,
            sample,
            now,
        })
    }

    /// Calls every dead-letter callback with each message of `dead` (committed), in order, with
    /// the GIL held. An `Exception` a callback raises is logged on the `deadletter` logger and
    /// changes nothing; a `BaseException` that is not an `Exception` (`KeyboardInterrupt`,
    /// `SystemExit`) propagates.
    fn notify(&self, py: Python<'_>, dead: Vec<Message>) -> PyResult<()> {
        if dead.is_empty() {
            return Ok(());
        }
        let callbacks: Vec<Py<PyAny>> = match self.dead_letters.lock() {
            Ok(list) => list.iter().map(|(_, cb)| cb.clone_ref(py)).collect(),
            Err(_) => return Err(to_py_err(py, &Error::Store("callbacks poisoned".into()))),
        };
        for message in dead {
            for callback in &callbacks {
                let id = message.id;
                if let Err(err) = callback.call1(py, (PyMessage(message.clone()),)) {
                    if !err.is_instance_of::<PyException>(py) {
                        return Err(err);
                    }
                    report(py, callback, id, &err);
                }
            }
        }
        Ok(())
    }
}

/// Logs a dead-letter callback's exception with its traceback on the `deadletter` logger.
fn report(py: Python<'_>, callback: &Py<PyAny>, id: deadletter::Id, err: &PyErr) {
    let logged = (|| -> PyResult<()> {
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("deadletter",))?;
        let kwargs = PyDict::new(py);
        let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
        kwargs.set_item("exc_info", exc_info)?;
        logger.call_method(
            "exception",
            ("on_dead callback %r raised for message %d", callback, id),
            Some(&kwargs),
        )?;
        Ok(())
    })();
    if let Err(failure) = logged {
        failure.write_unraisable(py, Some(callback.bind(py)));
    }
}

/// Runs one engine call with the GIL released (the store may wait up to 30 s for a lock, or for
/// a connection) and maps its error to a `deadletter` exception.
fn run<T, F>(py: Python<'_>, call: impl FnOnce() -> F + Send) -> PyResult<T>
where
    T: Send,
    F: Future<Output = deadletter::Result<T>>,
{
    py.detach(|| pollster::block_on(call()))
        .map_err(|err| to_py_err(py, &err))
}

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
    /// creation), whose failed messages wait according to `backoff` (a `deadletter.Backoff`;
    /// `None`: `Backoff()`, `min(2**n, 3600)` seconds after the n-th failure). Handles are cheap:
    /// two handles on one name see the same messages, each with its own backoff. Raises
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
            None => Ok(Backoff::default()),
            Some(given) => given.cast::<PyBackoff>().map(|b| b.get().0).map_err(|_| {
                let kind = describe_type(given);
                FieldError::new(
                    "backoff",
                    "type",
                    format!("must be a deadletter.Backoff or None, got {kind}"),
                )
            }),
        };
        match (checked, policy) {
            (Ok(valid), Ok(backoff)) => Ok(Queue {
                shared: Arc::clone(&self.shared),
                name: valid.to_owned(),
                backoff,
            }),
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

    /// The statistics of every queue that holds messages (a list of `QueueStats`, by name in
    /// ascending code-point order), read from indexes. Raises `ValidationError` (field `clock`)
    /// for a bad clock, `StoreError` when the store fails or the database is closed.
    fn queues(&self, py: Python<'_>) -> PyResult<Vec<PyQueueStats>> {
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || engine.queues(now)).map(|all| all.into_iter().map(PyQueueStats).collect())
    }

    /// Registers `callback`, a callable that takes one `Message`, as a dead-letter callback: after
    /// every call of this database that made messages dead (`Queue.fail`, and `Queue.claim`,
    /// `Queue.claim_many` and `Queue.reap` when an expired lease used up the last attempt)
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
        let id = self
            .shared
            .next_subscription
            .fetch_add(1, Ordering::Relaxed);
        self.shared
            .dead_letters
            .lock()
            .map_err(|_| to_py_err(py, &Error::Store("callbacks poisoned".into())))?
            .push((id, callback.clone().unbind()));
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
        let callbacks = self
            .shared
            .dead_letters
            .lock()
            .map(|mut list| std::mem::take(&mut *list));
        drop(callbacks);
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
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        // The callback is dropped after the lock is released: dropping it may run Python code.
        let removed = shared.dead_letters.lock().ok().and_then(|mut list| {
            let at = list.iter().position(|(id, _)| *id == self.id)?;
            Some(list.remove(at))
        });
        drop(removed);
    }
}

/// The keys an `enqueue_many` item may have, besides none.
const ITEM_KEYS: [&str; 4] = ["payload", "max_retries", "idempotency_key", "delay"];

/// One `enqueue` or `enqueue_many` item, converted with the GIL held.
#[derive(Debug, Default)]
struct OwnedItem {
    payload: Value,
    max_retries: Value,
    idempotency_key: Value,
    delay: Value,
}

impl OwnedItem {
    fn item(&self) -> Item<'_> {
        Item {
            payload: self.payload.arg(),
            max_retries: self.max_retries.arg(),
            idempotency_key: self.idempotency_key.arg(),
            delay_ms: self.delay.arg(),
        }
    }

    /// An `enqueue_many` item: a dict with some of [`ITEM_KEYS`] (another key is an `unknown`
    /// field of item `index`, added to `unknown`), else the payload itself.
    fn from_item(
        value: &Bound<'_, PyAny>,
        index: usize,
        unknown: &mut Vec<PyField>,
    ) -> PyResult<Self> {
        let Ok(dict) = value.cast::<PyDict>() else {
            return Ok(Self {
                payload: Value::from_py(Some(value)),
                ..Self::default()
            });
        };
        for key in dict.keys() {
            if !key
                .extract::<String>()
                .is_ok_and(|k| ITEM_KEYS.contains(&k.as_str()))
            {
                let field = key.str().map_or_else(|_| "?".to_owned(), |s| s.to_string());
                let message = format!(
                    "is not a key of an item (expected {})",
                    ITEM_KEYS.join(", ")
                );
                unknown.push(PyField {
                    field,
                    code: "unknown",
                    message,
                    index: Some(index),
                });
            }
        }
        Ok(Self {
            payload: Value::from_py(dict.get_item("payload")?.as_ref()),
            max_retries: Value::from_py(dict.get_item("max_retries")?.as_ref()),
            idempotency_key: Value::from_py(dict.get_item("idempotency_key")?.as_ref()),
            delay: Value::duration(dict.get_item("delay")?.as_ref())?,
        })
    }
}

/// One named queue of a `Database`, made by `Database.queue(name, backoff=...)`. Every method
/// reads the database's clock once, before any work, and raises `ValidationError` (a
/// `ValueError`) for a rejected argument or clock, `NotFoundError` (a `LookupError`) for an id
/// this queue does not have, `ConflictError` for a transition not allowed now (wrong status, or a
/// lost lease), `StoreError` when the store fails (SQLite; PostgreSQL: a lost connection, a
/// server restart, a lock held past `lock_timeout`), the database is closed, or a row it reads
/// holds a value deadletter never writes (a timestamp outside years 1..=9999, a wrong type, NULL,
/// an unknown status: the error names the message and the column). A call that raises has
/// changed nothing, except on PostgreSQL when the connection broke as the call committed: then
/// it took effect whole or not at all, and only reading tells. Durations are seconds (int or
/// float) or `datetime.timedelta`s, rounded to the millisecond; instants are aware `datetime`s.
#[pyclass(frozen, module = "deadletter", name = "Queue")]
pub struct Queue {
    pub(crate) shared: Arc<Shared>,
    name: String,
    backoff: Backoff,
}

impl Queue {
    /// Runs an engine call that may kill messages, then tells the dead-letter callbacks.
    fn run_outcome<T, F>(&self, py: Python<'_>, call: impl FnOnce() -> F + Send) -> PyResult<T>
    where
        T: Send,
        F: Future<Output = deadletter::Result<Outcome<T>>>,
    {
        let outcome = run(py, call)?;
        self.shared.notify(py, outcome.dead)?;
        Ok(outcome.value)
    }

    fn queue(&self) -> Arg<'_> {
        Arg::Str(&self.name)
    }
}

/// A fresh random lease token (uuid v4).
fn token() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn messages(list: Vec<Message>) -> Vec<PyMessage> {
    list.into_iter().map(PyMessage).collect()
}

#[pymethods]
impl Queue {
    /// The queue's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The queue handle's backoff policy.
    #[getter]
    fn backoff(&self) -> PyBackoff {
        PyBackoff(self.backoff)
    }

    /// Adds a pending message and returns it. `payload`: a str of at most `max_payload_bytes`
    /// bytes of UTF-8 (set at open), stored verbatim; `max_retries`: an int, 1..=10, the attempts
    /// allowed before the message is dead (default 3); `idempotency_key`: a non-empty str of at
    /// most 255 characters: when a message of this queue (in any status, until it is deleted or
    /// purged) already carries it, that message is returned as it is now, with `deduplicated`
    /// true, and nothing is inserted (also between processes: the store's unique index decides);
    /// `delay`: seconds or a `timedelta`, 0..=30 days: not claimable before now + delay
    /// (`retry_after`).
    #[pyo3(
        signature = (payload, *, max_retries = None, idempotency_key = None, delay = None),
        text_signature = "($self, payload, *, max_retries=3, idempotency_key=None, delay=None)"
    )]
    fn enqueue(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        max_retries: Option<&Bound<'_, PyAny>>,
        idempotency_key: Option<&Bound<'_, PyAny>>,
        delay: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let item = OwnedItem {
            payload: Value::from_py(Some(payload)),
            max_retries: Value::from_py(max_retries),
            idempotency_key: Value::from_py(idempotency_key),
            delay: Value::duration(delay)?,
        };
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || async {
            engine.enqueue(self.queue(), &item.item(), now).await
        })
        .map(PyMessage)
    }

    /// Adds every item in one transaction, all or nothing, in order, and returns the messages
    /// (a list as long as `items`). `items`: a list (or tuple) of at most 1000 items, each a str
    /// payload or a dict with the keys `payload` (required), `max_retries`, `idempotency_key`,
    /// `delay`, as in `enqueue`. Idempotency keys are honoured against stored messages and within
    /// the batch (the first occurrence is inserted; later ones return it, `deduplicated`).
    /// Raises `ValidationError` when `items` is not a list (field `items`), has more than 1000
    /// items (`items`, `too_large`), or an item is rejected: its field errors carry `"index"`,
    /// the item's position; a dict key not listed above is a field of that name with code
    /// `unknown` (reported alone, before the other checks).
    fn enqueue_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<PyMessage>> {
        let given: Vec<Bound<'_, PyAny>> = if let Ok(list) = items.cast::<PyList>() {
            list.iter().collect()
        } else if let Ok(tuple) = items.cast::<PyTuple>() {
            tuple.iter().collect()
        } else {
            let message = format!(
                "must be a list of payloads or dicts, got {}",
                describe_type(items)
            );
            return Err(to_py_err(
                py,
                &Error::Validation(vec![FieldError::new("items", "type", message)]),
            ));
        };
        let mut unknown = Vec::new();
        let owned = given
            .iter()
            .enumerate()
            .map(|(index, item)| OwnedItem::from_item(item, index, &mut unknown))
            .collect::<PyResult<Vec<_>>>()?;
        if !unknown.is_empty() {
            return Err(validation_error(py, &unknown));
        }
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || async {
            let items: Vec<Item<'_>> = owned.iter().map(OwnedItem::item).collect();
            engine.enqueue_many(self.queue(), &items, now).await
        })
        .map(messages)
    }

    /// Takes the next due message (FIFO by enqueue time, then id) and leases it: it becomes
    /// `processing` with a fresh random `lease_token` until `lease_expires_at`, and its
    /// `retry_after` is cleared. Returns `None` when nothing is due. `lease`: seconds (int or
    /// float, 0.001..=43200) or a `datetime.timedelta`, rounded to the millisecond; `None` uses the
    /// database's lease (set at open, default 30 s). Messages of this queue whose lease ran out
    /// are first counted as failed attempts with the error `"lease expired"` (the same backoff and
    /// dead-letter rules as `fail`; the dead-letter callbacks hear of those that die). Leases are
    /// reaped lazily, by this call or `reap`: until then a message whose lease ran out reads as
    /// `processing`.
    #[pyo3(signature = (*, lease = None))]
    fn claim(
        &self,
        py: Python<'_>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyMessage>> {
        let lease = Value::duration(lease)?;
        let at = self.shared.moment(py, &self.backoff)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, || engine.claim(self.queue(), lease.arg(), token, at))
            .map(|message| message.map(PyMessage))
    }

    /// Like `claim` for up to `n` due messages (an int, 1..=100) in one transaction: a list in
    /// claim order, each with its own lease token; empty when nothing is due.
    #[pyo3(signature = (n, *, lease = None))]
    fn claim_many(
        &self,
        py: Python<'_>,
        n: &Bound<'_, PyAny>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyMessage>> {
        let (n, lease) = (Value::from_py(Some(n)), Value::duration(lease)?);
        let at = self.shared.moment(py, &self.backoff)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, || {
            engine.claim_many(self.queue(), n.arg(), lease.arg(), token, at)
        })
        .map(messages)
    }

    /// The heartbeat: the lease of a processing message now runs until now + `lease` (seconds or
    /// a `timedelta`, 0.001..=43200; `None`: the database's default lease, `open(lease=...)`,
    /// 30 s by default, not the lease the message was claimed with). `lease_token` (a str) is
    /// required and must be the current one, else `ConflictError`: reason `lease_lost` while the
    /// message is processing under another worker's lease (its own expired, was reaped, and the
    /// message was claimed again); reason `wrong_status` once it is no longer processing (reaped
    /// into backoff or dead, or finished by another worker). A lease that ran out but was not
    /// reaped yet can still be extended.
    #[pyo3(signature = (id, *, lease_token, lease = None))]
    fn extend(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        lease_token: &Bound<'_, PyAny>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, token) = (Value::from_py(Some(id)), Value::from_py(Some(lease_token)));
        let lease = Value::duration(lease)?;
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || {
            engine.extend(self.queue(), id.arg(), token.arg(), lease.arg(), now)
        })
        .map(PyMessage)
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
        let engine = &self.shared.engine;
        run(py, || {
            engine.succeed(self.queue(), id.arg(), token.arg(), now)
        })
        .map(PyMessage)
    }

    /// Records a failed attempt of a processing message. `error`: a str, stored as `last_error`
    /// and appended to `errors` (truncated past 64 KiB). With `retryable` true and retries left,
    /// the message goes back to `pending`, claimable after the queue's backoff (`retry_after`;
    /// by default `min(2**retry_count, 3600)` seconds); once `retry_count` reaches
    /// `max_retries`, or when `retryable` is false, it is `dead` (kept, listable, replayable;
    /// the dead-letter callbacks are called). `lease_token`: as for `succeed`.
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
        let at = self.shared.moment(py, &self.backoff)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, || {
            engine.fail(
                self.queue(),
                id.arg(),
                error.arg(),
                token.arg(),
                retryable.arg(),
                at,
            )
        })
        .map(PyMessage)
    }

    /// Sends a dead message back (redrive): `pending`, `retry_count` 0, no `last_error`, claimable
    /// now; `errors` is kept, `replay_count` grows, `replayed_at` is now. `ConflictError` when it
    /// is not dead.
    fn replay(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || engine.replay(self.queue(), id.arg(), now)).map(PyMessage)
    }

    /// Replays every dead message of this queue that the filters select, in id order, and
    /// returns how many (an int). `error_contains`: a str the `last_error` contains
    /// (case-sensitive; no NUL, which no error text holds: else `ValidationError`); `dead_after` <= `dead_at` < `dead_before`: aware datetimes (exactly:
    /// bounds between two milliseconds are rounded up, as `dead_at` is whole ms); `limit`: an
    /// int >= 1, the most to replay (default: all). Commits in batches of 200 messages, each in its
    /// own transaction, so other connections never wait long; a message replayed is pending
    /// afterwards, so running it again does not replay it twice. Raises `ValidationError` (the
    /// filters) or `StoreError`; when a batch fails, the batches before it stay replayed, and
    /// calling again finishes the work.
    #[pyo3(signature = (*, error_contains = None, dead_before = None, dead_after = None, limit = None))]
    fn replay_all(
        &self,
        py: Python<'_>,
        error_contains: Option<&Bound<'_, PyAny>>,
        dead_before: Option<&Bound<'_, PyAny>>,
        dead_after: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let error_contains = Value::from_py(error_contains);
        let (before, after) = (Value::bound(dead_before)?, Value::bound(dead_after)?);
        let limit = Value::from_py(limit);
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || {
            engine.replay_all(
                self.queue(),
                error_contains.arg(),
                before.arg(),
                after.arg(),
                limit.arg(),
                now,
            )
        })
    }

    /// Deletes the finished messages of this queue in `status` (`"succeeded"` or `"dead"`; any
    /// other value is a `ValidationError`) whose last change (`updated_at`) is at least
    /// `older_than` ago (seconds or a `timedelta`, >= 0), and returns how many. In batches of
    /// 200, like `replay_all`: when a batch fails (`StoreError`), the batches before it stay
    /// deleted, and calling again finishes the work.
    #[pyo3(signature = (*, status, older_than))]
    fn purge(
        &self,
        py: Python<'_>,
        status: &Bound<'_, PyAny>,
        older_than: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let (status, older_than) = (
            Value::from_py(Some(status)),
            Value::duration(Some(older_than))?,
        );
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || {
            engine.purge(self.queue(), status.arg(), older_than.arg(), now)
        })
    }

    /// Removes one finished (succeeded or dead) message and returns it as it was. Raises
    /// `ConflictError` for any other status (a live message is never deleted from under its
    /// worker), `NotFoundError` when the queue has no such message.
    fn delete(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let engine = &self.shared.engine;
        run(py, || engine.delete(self.queue(), id.arg())).map(PyMessage)
    }

    /// Counts the expired leases of this queue as failed attempts now (what `claim` does first)
    /// and returns how many; so a queue whose workers all died still moves on when asked. The
    /// dead-letter callbacks hear of the messages that die.
    fn reap(&self, py: Python<'_>) -> PyResult<u64> {
        let at = self.shared.moment(py, &self.backoff)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, || engine.reap(self.queue(), at))
    }

    /// The statistics of this queue now, a `QueueStats`, read from indexes.
    fn stats(&self, py: Python<'_>) -> PyResult<PyQueueStats> {
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        run(py, || engine.stats(self.queue(), now)).map(PyQueueStats)
    }

    /// When the next delayed message of this queue becomes due: the earliest `retry_after` later
    /// than now among its pending messages (in backoff or enqueued with a delay), as an aware UTC
    /// `datetime`; `None` when no message is delayed. One index read: what an idle worker waits
    /// for (the same value as `stats().next_due_at`).
    fn next_due_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let now = self.shared.now(py)?;
        let engine = &self.shared.engine;
        let due = run(py, || engine.next_due_at(self.queue(), now))?;
        to_opt_datetime(py, due)
    }

    /// The message `id` of this queue; `NotFoundError` when there is none (ids of other queues
    /// are not visible here).
    fn get(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let engine = &self.shared.engine;
        run(py, || engine.get(self.queue(), id.arg())).map(PyMessage)
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
        let engine = &self.shared.engine;
        run(py, || {
            engine.list(self.queue(), status.arg(), limit.arg(), after_id.arg())
        })
        .map(messages)
    }

    /// The worker loop: claims this queue's messages and calls `handler(message)` for each on up
    /// to `concurrency` daemon threads until it is stopped, then returns how many messages it
    /// handled (an int: those whose outcome it recorded with `succeed` or `fail`).
    ///
    /// A handler that returns acks its message; one that raises fails it with the error
    /// `"ExceptionType: message"` (retried after the queue's backoff); raising
    /// `deadletter.PermanentError` (or a subclass) fails it with `retryable=False`: dead at once.
    /// The loop claims with `claim_many` up to its free slots, under `lease` (default: the
    /// database's), and extends a running handler's lease every half lease; a lease lost all the
    /// same (`ConflictError` from `extend`) ends its heartbeats, and the handler's outcome is then
    /// refused and logged on the `logging` logger `"deadletter"` (as are handler exceptions, at
    /// INFO with their traceback, the error and each part of the traceback cut at 4096 characters;
    /// and stopping, with its reason). When nothing is due it sleeps until the next delayed message
    /// is due or for `poll_interval`, whichever is sooner.
    ///
    /// It stops when `stop_when_idle` is true and a poll finds nothing due, nothing in flight and
    /// nothing delayed (`next_due_at()` is None); when `stop` (a `threading.Event`) is set; on
    /// SIGTERM, unless the application handles it (its disposition is not the default: it is left
    /// alone, stop the loop with `stop`): deadletter's handler, installed from the main thread,
    /// stops every `process` loop of the process (other threads' too) and is removed, restoring the
    /// default, when the last of them ends; on `KeyboardInterrupt`. Stopping ends the claims;
    /// running handlers get `shutdown_timeout` to finish (their heartbeats go on), then the loop
    /// returns and their messages are left to their leases. A second `KeyboardInterrupt` while
    /// handlers finish propagates at once.
    ///
    /// `concurrency`: an int, 1..=1000 (default 1); `poll_interval`: 0.001..=3600 s (default
    /// 1 s); `shutdown_timeout`: 0..=3600 s (default 30 s); `lease`: 0.001..=43200 s (default
    /// the database's); durations in seconds (int or float) or `timedelta`; `stop_when_idle`: a
    /// bool. Raises `ValidationError` listing every rejected argument (a handler that is not
    /// callable, or is an `async def` function: use `process_async`) before claiming anything;
    /// an error of `claim_many` or `next_due_at` (`StoreError`) stops the loop as above, then is
    /// raised.
    #[pyo3(
        signature = (handler, **options),
        text_signature = "($self, handler, *, concurrency=1, poll_interval=1.0, stop_when_idle=False, shutdown_timeout=30.0, lease=None, stop=None)"
    )]
    fn process<'py>(
        slf: &Bound<'py, Self>,
        handler: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::worker::delegate(slf, "process", handler, options)
    }

    /// `process` for `async def` handlers, on the running asyncio event loop: validates its
    /// arguments at once (as `process`; the handler must be an `async def` function), then returns
    /// the coroutine of the loop, which runs at most `concurrency` handlers as tasks, makes every
    /// database call in a thread of its own executor (never on the event loop, nor behind the
    /// handlers' `asyncio.to_thread` calls in the default executor) and returns how many messages
    /// it handled. `stop` is an `asyncio.Event`; SIGTERM is handled through
    /// `loop.add_signal_handler` when the event loop runs in the main thread on Unix, unless the
    /// application handles SIGTERM (its disposition is not the default when the loop starts: it
    /// is left alone; stop the loop with `stop` or by cancelling it): one handler per event loop
    /// stops every `process_async` loop on it, removed (the default restored) when the last of
    /// them ends. Cancelled
    /// (what Ctrl-C does under `asyncio.run`), it stops claiming, waits up to `shutdown_timeout`
    /// for the running handlers, cancels those still running (their messages are left to their
    /// leases), then raises `asyncio.CancelledError`.
    #[pyo3(
        signature = (handler, **options),
        text_signature = "($self, handler, *, concurrency=1, poll_interval=1.0, stop_when_idle=False, shutdown_timeout=30.0, lease=None, stop=None)"
    )]
    fn process_async<'py>(
        slf: &Bound<'py, Self>,
        handler: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::worker::delegate(slf, "process_async", handler, options)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = self.name.as_str().into_pyobject(py)?.repr()?;
        Ok(format!("<deadletter.Queue {name}>"))
    }
}
