//! `deadletter.Queue`: one named queue of a `Database`, each method one engine call ([`run`])
//! with the arguments converted first; and the hand-over of `Queue.process` and
//! `Queue.process_async` to the worker loops of the Python package (`deadletter._worker`).

use std::future::Future;
use std::sync::Arc;

use deadletter::{Arg, Backoff, Error, FieldError, Item, Message, Outcome};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{Value, describe_type, to_opt_datetime};
use crate::errors::{to_py_err, validation_error};
use crate::item::OwnedItem;
use crate::message::PyMessage;
use crate::policy::PyBackoff;
use crate::shared::{Shared, run};
use crate::stats::PyQueueStats;

/// The Python module that runs the worker loops.
const LOOP_MODULE: &str = "deadletter._worker";

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
    /// The handle on queue `name` (a valid name) of the database of `shared`.
    pub fn new(shared: Arc<Shared>, name: String, backoff: Backoff) -> Self {
        Self {
            shared,
            name,
            backoff,
        }
    }

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
        delegate(slf, "process", handler, options)
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
        delegate(slf, "process_async", handler, options)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = self.name.as_str().into_pyobject(py)?.repr()?;
        Ok(format!("<deadletter.Queue {name}>"))
    }
}

/// Calls `deadletter._worker.<name>(queue, handler, **options)`.
fn delegate<'py>(
    queue: &Bound<'py, Queue>,
    name: &str,
    handler: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let function = queue.py().import(LOOP_MODULE)?.getattr(name)?;
    function.call((queue, handler), options)
}
