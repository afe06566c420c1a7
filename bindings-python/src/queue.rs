//! `deadletter.Queue`: one named queue of a `Database`, each method one engine call ([`run`])
//! with the arguments converted first; and the hand-over of `Queue.process` and
//! `Queue.process_async` to the worker loops of the Python package (`deadletter._worker`).
//! One file (about 870 lines): pyo3 takes one `#[pymethods]` block per class unless its
//! `multiple-pymethods` feature (and the `inventory` crate) is turned on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deadletter::{Arg, Backoff, Call, Error, FieldError, Item, Message, Outcome};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{Value, describe_type, to_opt_datetime};
use crate::errors::{to_py_err, validation_error};
use crate::filters::{Bulk, Filters};
use crate::item::OwnedItem;
use crate::message::PyMessage;
use crate::policy::PyBackoff;
use crate::settings::PyQueueSettings;
use crate::shared::{Shared, run};
use crate::stats::PyQueueStats;

/// The Python module that runs the worker loops.
const LOOP_MODULE: &str = "deadletter._worker";
/// The Python module of `MessagePage`, what `list` returns.
const PAGE_MODULE: &str = "deadletter._page";

/// One named queue of a `Database`, made by `Database.queue(name, backoff=...)`. Every method
/// checks its arguments before it calls the store, then reads the database's clock once: a write
/// once the store holds its write lock (so a call that waited for another process's lock decides
/// with the instant it got it), a read when it starts. It raises `ValidationError` (a
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
    pub(crate) name: String,
    /// The handle's own policy, given in code: it wins over the queue's stored one.
    backoff: Option<Backoff>,
    /// Whether this handle warned that its policy differs from the stored one.
    warned: AtomicBool,
}

impl Queue {
    /// The handle on queue `name` (a valid name) of the database of `shared`, with its own
    /// `backoff` when it was given one.
    pub fn new(shared: Arc<Shared>, name: String, backoff: Option<Backoff>) -> Self {
        Self {
            shared,
            name,
            backoff,
            warned: AtomicBool::new(false),
        }
    }

    /// Runs an engine call that may kill messages (it takes a [`Call`]: the clock, the handle's
    /// policy and a jitter sample drawn now), then tells the dead-letter callbacks, and warns
    /// once per handle when the handle's policy overrode a different stored one.
    fn run_outcome<T: Send>(
        &self,
        py: Python<'_>,
        call: impl AsyncFnOnce(&Call<'_>) -> deadletter::Result<Outcome<T>> + Send,
    ) -> PyResult<T> {
        let sample = self.shared.sample(py)?;
        let backoff = self.backoff.as_ref();
        let outcome = self.shared.run(py, async |clock| {
            let at = Call {
                clock,
                backoff,
                sample,
            };
            call(&at).await
        })?;
        if let Some(stored) = outcome.overridden
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            self.warn_overridden(py, stored)?;
        }
        self.shared.notify(py, outcome.dead)?;
        Ok(outcome.value)
    }

    /// `warnings.warn` that this handle's policy is applied instead of the queue's `stored` one.
    fn warn_overridden(&self, py: Python<'_>, stored: Backoff) -> PyResult<()> {
        let own = Bound::new(py, PyBackoff(self.backoff.unwrap_or_default()))?;
        let stored = Bound::new(py, PyBackoff(stored))?;
        let message = format!(
            "queue {}: this handle's backoff {} is applied instead of the one stored with the \
             queue, {} (a handle's own backoff wins; give the handle none, or store the same \
             with Queue.set_settings, to agree with the other processes)",
            self.name.as_str().into_pyobject(py)?.repr()?,
            own.repr()?,
            stored.repr()?
        );
        let warnings = py.import("warnings")?;
        warnings.call_method1(
            "warn",
            (message, py.get_type::<pyo3::exceptions::PyUserWarning>(), 1),
        )?;
        Ok(())
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

    /// Whether its database is closed (`Database.closed`): every call then raises `StoreError`.
    /// The worker loops stop on a store error then, rather than wait for the store to come back.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.engine.store().is_closed()
    }

    /// The handle's own backoff policy (`Database.queue(name, backoff=...)`), which wins over the
    /// one stored with the queue; `None` when it was given none (the stored policy applies, else
    /// `Backoff()`).
    #[getter]
    fn backoff(&self) -> Option<PyBackoff> {
        self.backoff.map(PyBackoff)
    }

    /// Adds a pending message and returns it. `payload`: a str of at most `max_payload_bytes`
    /// bytes of UTF-8 (set at open), stored verbatim; `max_retries`: an int, 1..=10, the attempts
    /// allowed before the message is dead (default: the queue's stored `max_retries`, else 3);
    /// `idempotency_key`: a non-empty str of at most 255 characters: when a message of this queue
    /// (in any status, until it is deleted or purged) already carries it, that message is
    /// returned as it is now, with `deduplicated` true, and nothing is inserted (also between
    /// processes: the store's unique index decides); `delay`: seconds or a `timedelta`, 0..=30
    /// days: not claimable before now + delay (`retry_after`); `group`: the ordering group, a
    /// non-empty str of at most 255 characters: the messages of one group are delivered one at a
    /// time, in the order they entered it (a message is claimable only while no earlier message
    /// of its group is pending or processing); `expires_in`: seconds or a `timedelta`, 0.001 s..=
    /// 365 days (default: the queue's stored expiry, else never): still pending at now +
    /// `expires_in` (`expires_at`), it is never delivered, and the next claim or reap makes it dead
    /// with the error `"expired"` (or discards it, when the queue's `on_expiry` says so). The
    /// queue's name must hold no control or format character (Unicode's Cf: bidirectional
    /// controls, zero-width spaces, ...) but the joiners U+200C and U+200D, and not be only
    /// white space and invisible characters, nor start or end with white space, nor read as
    /// another name: white space but U+0020, a joiner or variation selector that joins or varies
    /// nothing, an accent after an ASCII letter (`ValidationError`, field `queue`).
    #[pyo3(
        signature = (payload, *, max_retries = None, idempotency_key = None, delay = None, group = None, expires_in = None),
        text_signature = "($self, payload, *, max_retries=None, idempotency_key=None, delay=None, group=None, expires_in=None)"
    )]
    #[allow(clippy::too_many_arguments)] // one per keyword argument
    fn enqueue(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        max_retries: Option<&Bound<'_, PyAny>>,
        idempotency_key: Option<&Bound<'_, PyAny>>,
        delay: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        expires_in: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let item = OwnedItem {
            payload: Value::from_py(Some(payload)),
            max_retries: Value::from_py(max_retries),
            idempotency_key: Value::from_py(idempotency_key),
            delay: Value::duration(delay)?,
            group: Value::from_py(group),
            expires_in: Value::duration(expires_in)?,
        };
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine.enqueue(self.queue(), &item.item(), clock).await
            })
            .map(PyMessage)
    }

    /// Adds every item in one transaction, all or nothing, in order, and returns the messages
    /// (a list as long as `items`). `items`: a list (or tuple) of at most 1000 items, each a str
    /// payload or a dict with the keys `payload` (required), `max_retries`, `idempotency_key`,
    /// `delay`, `group`, `expires_in`, as in `enqueue`. Idempotency keys are honoured against stored messages and within
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
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                let items: Vec<Item<'_>> = owned.iter().map(OwnedItem::item).collect();
                engine.enqueue_many(self.queue(), &items, clock).await
            })
            .map(messages)
    }

    /// Takes the next due message (FIFO by enqueue time, then id) and leases it: it becomes
    /// `processing` with a fresh random `lease_token` until `lease_expires_at`, and its
    /// `retry_after` is cleared. A message of an ordering group is taken only while it is its
    /// group's head. Returns `None` when nothing is due, and on a paused queue (which then
    /// changes nothing). `lease`: seconds (int or float, 0.001..=43200) or a
    /// `datetime.timedelta`, rounded to the millisecond; `None` uses the queue's stored lease,
    /// else the database's (set at open, default 30 s). Messages of this queue whose lease ran
    /// out are first counted as failed attempts with the error `"lease expired"` (the same
    /// backoff and dead-letter rules as `fail`), and its pending messages whose expiry came are
    /// taken out (dead with the error `"expired"`, or discarded); the dead-letter callbacks hear
    /// of those that die. Leases are reaped lazily, by this call or `reap`: until then a message
    /// whose lease ran out reads as `processing`.
    #[pyo3(signature = (*, lease = None))]
    fn claim(
        &self,
        py: Python<'_>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyMessage>> {
        let lease = Value::duration(lease)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, async |at| {
            engine.claim(self.queue(), lease.arg(), token, at).await
        })
        .map(|message| message.map(PyMessage))
    }

    /// Like `claim` for up to `n` due messages (an int, 1..=100) in one transaction, at most one
    /// per ordering group: a list in claim order, each with its own lease token; empty when
    /// nothing is due.
    #[pyo3(signature = (n, *, lease = None))]
    fn claim_many(
        &self,
        py: Python<'_>,
        n: &Bound<'_, PyAny>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyMessage>> {
        let (n, lease) = (Value::from_py(Some(n)), Value::duration(lease)?);
        let engine = &self.shared.engine;
        self.run_outcome(py, async |at| {
            engine
                .claim_many(self.queue(), n.arg(), lease.arg(), token, at)
                .await
        })
        .map(messages)
    }

    /// The heartbeat: the lease of a processing message now runs until now + `lease` (seconds or
    /// a `timedelta`, 0.001..=43200; `None`: the queue's stored lease, else the database's,
    /// `open(lease=...)`, 30 s by default; not the lease the message was claimed with). `lease_token` (a str) is
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
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine
                    .extend(self.queue(), id.arg(), token.arg(), lease.arg(), clock)
                    .await
            })
            .map(PyMessage)
    }

    /// Acks a processing message: it becomes `succeeded` (final), and its ordering group moves on
    /// to its next message. `lease_token`: when given, it must be the message's current token,
    /// else `ConflictError` (reason `lease_lost`: that lease expired and the message was claimed
    /// again, or the token was never this message's); `None` skips the check.
    #[pyo3(signature = (id, *, lease_token = None))]
    fn succeed(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        lease_token: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, token) = (Value::from_py(Some(id)), Value::from_py(lease_token));
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine
                    .succeed(self.queue(), id.arg(), token.arg(), clock)
                    .await
            })
            .map(PyMessage)
    }

    /// Records a failed attempt of a processing message. `error`: a str, stored as `last_error`
    /// and appended to `errors` (truncated past 64 KiB). With `retryable` true and retries left,
    /// the message goes back to `pending`, claimable after the backoff (`retry_after`): this
    /// handle's policy, else the queue's stored one, else `min(2**retry_count, 3600)` seconds;
    /// or after `retry_in` (seconds or a `timedelta`, 0..=30 days: this failure's own delay, say
    /// from a downstream `Retry-After`). The attempt counts either way: once `retry_count`
    /// reaches `max_retries`, when `retryable` is false, or when the message's expiry has come,
    /// it is `dead` (kept, listable, replayable; the dead-letter callbacks are called).
    /// `lease_token`: as for `succeed`.
    #[pyo3(
        signature = (id, error, *, lease_token = None, retryable = None, retry_in = None),
        text_signature = "($self, id, error, *, lease_token=None, retryable=True, retry_in=None)"
    )]
    fn fail(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
        lease_token: Option<&Bound<'_, PyAny>>,
        retryable: Option<&Bound<'_, PyAny>>,
        retry_in: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, error) = (Value::from_py(Some(id)), Value::from_py(Some(error)));
        let (token, retryable) = (Value::from_py(lease_token), Value::from_py(retryable));
        let retry_in = Value::duration(retry_in)?;
        let engine = &self.shared.engine;
        self.run_outcome(py, async |at| {
            engine
                .fail(
                    self.queue(),
                    id.arg(),
                    error.arg(),
                    token.arg(),
                    retryable.arg(),
                    retry_in.arg(),
                    at,
                )
                .await
        })
        .map(PyMessage)
    }

    /// Sends a dead message back (redrive): `pending`, `retry_count` 0, no `last_error`, claimable
    /// now (a message of an ordering group goes to the end of its group, behind every message of
    /// it pending or processing now); `errors` is kept, `replay_count` grows, `replayed_at` is
    /// now. It expires after `expires_in` (seconds or a `timedelta`, 0.001 s..=365 days;
    /// default: the queue's stored expiry, else never). `ConflictError` when it is not dead.
    #[pyo3(signature = (id, *, expires_in = None))]
    fn replay(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        expires_in: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessage> {
        let (id, expires_in) = (Value::from_py(Some(id)), Value::duration(expires_in)?);
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine
                    .replay(self.queue(), id.arg(), expires_in.arg(), clock)
                    .await
            })
            .map(PyMessage)
    }

    /// Replays every dead message of this queue that the filters select, in id order, and
    /// returns how many (an int), or with `dry_run=True` changes nothing and returns the exact
    /// count it would replay now. The filters are `list`'s, as keywords (`error_contains`,
    /// `dead_after` <= `dead_at` < `dead_before`, `payload_contains`, `group`, ...); `status`,
    /// when given, must be `"dead"` (`ValidationError`, code `invalid`, otherwise). `limit`: an
    /// int >= 1, the most to replay (default: all). Commits in batches of 200 messages, each in
    /// its own transaction that checks each message again, so other connections never wait
    /// long; a message replayed is pending afterwards (with the queue's stored expiry, if any),
    /// so running it again does not replay it twice. Raises `ValidationError` (every rejected
    /// filter) or `StoreError`; when a batch fails, the batches before it stay replayed, and
    /// calling again finishes the work.
    #[pyo3(
        signature = (*, limit = None, dry_run = None, **filters),
        text_signature = "($self, *, status=None, delayed=None, payload_contains=None, error_contains=None, group=None, idempotency_key=None, created_after=None, created_before=None, updated_after=None, updated_before=None, dead_after=None, dead_before=None, limit=None, dry_run=False)"
    )]
    fn replay_all(
        &self,
        py: Python<'_>,
        limit: Option<&Bound<'_, PyAny>>,
        dry_run: Option<&Bound<'_, PyAny>>,
        filters: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let bulk = Bulk::new("replay_all", limit, dry_run, filters)?;
        let engine = &self.shared.engine;
        self.shared.run(py, async |clock| {
            let (filters, limit, dry_run) = bulk.args();
            engine
                .replay_all(self.queue(), &filters, limit, dry_run, clock)
                .await
        })
    }

    /// Deletes every finished message (succeeded or dead) of this queue that the filters
    /// select, in id order, and returns how many, or with `dry_run=True` changes nothing and
    /// returns the exact count it would delete now. Their idempotency keys are free again. The
    /// filters are `list`'s; `status`, when given, narrows to `"succeeded"` or `"dead"` (another
    /// is a `ValidationError`: pending and processing messages are never deleted). `limit` and
    /// the batches of 200: as `replay_all`.
    #[pyo3(
        signature = (*, limit = None, dry_run = None, **filters),
        text_signature = "($self, *, status=None, delayed=None, payload_contains=None, error_contains=None, group=None, idempotency_key=None, created_after=None, created_before=None, updated_after=None, updated_before=None, dead_after=None, dead_before=None, limit=None, dry_run=False)"
    )]
    fn delete_all(
        &self,
        py: Python<'_>,
        limit: Option<&Bound<'_, PyAny>>,
        dry_run: Option<&Bound<'_, PyAny>>,
        filters: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let bulk = Bulk::new("delete_all", limit, dry_run, filters)?;
        let engine = &self.shared.engine;
        self.shared.run(py, async |clock| {
            let (filters, limit, dry_run) = bulk.args();
            engine
                .delete_all(self.queue(), &filters, limit, dry_run, clock)
                .await
        })
    }

    /// `retry_now` for every pending message of this queue that the filters select and that
    /// waits for a backoff or a delay (`retry_after` later than now), in id order; returns how
    /// many, or with `dry_run=True` changes nothing and returns the exact count it would make
    /// due now. The filters are `list`'s; `status`, when given, must be `"pending"`. `limit` and
    /// the batches of 200: as `replay_all`.
    #[pyo3(
        signature = (*, limit = None, dry_run = None, **filters),
        text_signature = "($self, *, status=None, delayed=None, payload_contains=None, error_contains=None, group=None, idempotency_key=None, created_after=None, created_before=None, updated_after=None, updated_before=None, dead_after=None, dead_before=None, limit=None, dry_run=False)"
    )]
    fn retry_now_all(
        &self,
        py: Python<'_>,
        limit: Option<&Bound<'_, PyAny>>,
        dry_run: Option<&Bound<'_, PyAny>>,
        filters: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let bulk = Bulk::new("retry_now_all", limit, dry_run, filters)?;
        let engine = &self.shared.engine;
        self.shared.run(py, async |clock| {
            let (filters, limit, dry_run) = bulk.args();
            engine
                .retry_now_all(self.queue(), &filters, limit, dry_run, clock)
                .await
        })
    }

    /// Moves every pending and dead message of this queue that the filters select to
    /// `to_queue` (as `move` does: ids, payloads, history and counters kept, `moved_from` set),
    /// in id order, and returns how many, or with `dry_run=True` changes nothing and returns the
    /// exact count it would move now. The filters are `list`'s; `status`, when given, narrows to
    /// `"pending"` or `"dead"` (another is a `ValidationError`). A message whose idempotency key
    /// a message of `to_queue` already carries stays where it is and is not counted (a dry run
    /// checks the keys too). `to_queue` follows the rules of a queue name; this queue itself is
    /// a `ValidationError` (field `to_queue`). `limit` and the batches of 200: as `replay_all`.
    #[pyo3(
        signature = (to_queue, *, limit = None, dry_run = None, **filters),
        text_signature = "($self, to_queue, *, status=None, delayed=None, payload_contains=None, error_contains=None, group=None, idempotency_key=None, created_after=None, created_before=None, updated_after=None, updated_before=None, dead_after=None, dead_before=None, limit=None, dry_run=False)"
    )]
    fn move_all(
        &self,
        py: Python<'_>,
        to_queue: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
        dry_run: Option<&Bound<'_, PyAny>>,
        filters: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let to_queue = Value::from_py(Some(to_queue));
        let bulk = Bulk::new("move_all", limit, dry_run, filters)?;
        let engine = &self.shared.engine;
        self.shared.run(py, async |clock| {
            let (filters, limit, dry_run) = bulk.args();
            engine
                .move_all(
                    self.queue(),
                    to_queue.arg(),
                    &filters,
                    limit,
                    dry_run,
                    clock,
                )
                .await
        })
    }

    /// Moves a pending or dead message to the queue `to_queue` and returns it there: same id,
    /// payload, status, counters, history, `retry_after`, expiry, idempotency key and group;
    /// `moved_from` is this queue's name, `updated_at` now. A grouped pending message leaves its
    /// group here (the next member becomes its head) and joins the end of the group of the same
    /// name in `to_queue`. Raises `ValidationError` for a bad id or `to_queue` (the rules of a
    /// queue name; this queue itself is invalid), `NotFoundError` when this queue has no such
    /// message, `ConflictError` with reason `"wrong_status"` for a processing or succeeded
    /// message and with reason `"key_taken"` when a message of `to_queue` carries its
    /// idempotency key (the message stays here).
    #[pyo3(name = "move")]
    fn move_message(
        &self,
        py: Python<'_>,
        id: &Bound<'_, PyAny>,
        to_queue: &Bound<'_, PyAny>,
    ) -> PyResult<PyMessage> {
        let (id, to_queue) = (Value::from_py(Some(id)), Value::from_py(Some(to_queue)));
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine
                    .move_message(self.queue(), id.arg(), to_queue.arg(), clock)
                    .await
            })
            .map(PyMessage)
    }

    /// Retry now: a pending message waiting for its backoff or delay becomes due at once
    /// (`retry_after` cleared, `updated_at` now; a message of an ordering group still waits
    /// behind its group's head), its attempt counts unchanged; returns it. A pending message
    /// already due is returned unchanged. Raises `ConflictError` for any other status,
    /// `NotFoundError` when the queue has no such message.
    fn retry_now(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| {
                engine.retry_now(self.queue(), id.arg(), clock).await
            })
            .map(PyMessage)
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
        let engine = &self.shared.engine;
        self.shared.run(py, async |clock| {
            engine
                .purge(self.queue(), status.arg(), older_than.arg(), clock)
                .await
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

    /// Counts the expired leases of this queue as failed attempts now and takes out its pending
    /// messages whose expiry came (what `claim` does first; also on a paused queue), and returns
    /// how many; so a queue whose workers all died still moves on when asked. The dead-letter
    /// callbacks hear of the messages that die.
    fn reap(&self, py: Python<'_>) -> PyResult<u64> {
        let engine = &self.shared.engine;
        self.run_outcome(py, async |at| engine.reap(self.queue(), at).await)
    }

    /// The statistics of this queue now, a `QueueStats`, read from indexes.
    fn stats(&self, py: Python<'_>) -> PyResult<PyQueueStats> {
        let engine = &self.shared.engine;
        self.shared
            .run(py, async |clock| engine.stats(self.queue(), clock).await)
            .map(PyQueueStats)
    }

    /// The settings stored with this queue (a `QueueSettings`: `None` where unset) and whether it
    /// is paused. A queue never configured reads as all defaults (nothing is written).
    fn settings(&self, py: Python<'_>) -> PyResult<PyQueueSettings> {
        let engine = &self.shared.engine;
        run(py, || engine.settings(self.queue())).map(PyQueueSettings)
    }

    /// Stores this queue's settings, in the database, for every process, and returns them (a
    /// `QueueSettings`). It replaces all five: an argument left out (or `None`) is unset again.
    /// `backoff`: a `deadletter.Backoff`, or a dict of its arguments (`initial`, `multiplier`,
    /// `cap`, `jitter`: checked with the other arguments, each rejected one reported), the policy
    /// of failures and expired leases (a handle given its own in code still uses its own, and
    /// warns once); `max_retries`: an int, 1..=10
    /// (for enqueues that give none); `lease`: 0.001..=43200 s (for claims and extends that give
    /// none); `expires_in`: 0.001 s..=365 days (for enqueues and replays that give none);
    /// `on_expiry`: `"dead"` (the default) or `"discard"`; durations in seconds or `timedelta`s.
    /// Pausing is `pause`/`resume`, which this leaves alone. Raises `ValidationError` listing
    /// every rejected argument; nothing changes then. Storing settings on a queue that does not
    /// exist (no message, no stored settings) makes it, so its name then follows `enqueue`'s
    /// rules (`invalid` on `queue`); a queue stored under a name they refuse (by 0.1.0) takes
    /// settings, and storing none always succeeds.
    #[pyo3(
        signature = (*, backoff = None, max_retries = None, lease = None, expires_in = None, on_expiry = None),
        text_signature = "($self, *, backoff=None, max_retries=None, lease=None, expires_in=None, on_expiry=None)"
    )]
    fn set_settings(
        &self,
        py: Python<'_>,
        backoff: Option<&Bound<'_, PyAny>>,
        max_retries: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
        expires_in: Option<&Bound<'_, PyAny>>,
        on_expiry: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyQueueSettings> {
        let policy = match backoff.filter(|b| !b.is_none()) {
            None => None,
            Some(given) => Some(stored_policy(py, given)?),
        };
        let max_retries = Value::from_py(max_retries);
        let (lease, expires_in) = (Value::duration(lease)?, Value::duration(expires_in)?);
        let on_expiry = Value::from_py(on_expiry);
        let args = deadletter::SettingsArgs::new(
            &self.queue(),
            policy,
            &max_retries.arg(),
            &lease.arg(),
            &expires_in.arg(),
            &on_expiry.arg(),
        )
        .map_err(|err| to_py_err(py, &err))?;
        let engine = &self.shared.engine;
        run(py, || engine.set_settings(&args)).map(PyQueueSettings)
    }

    /// Pauses this queue, for every process: it accepts enqueues and every other operation but
    /// claims nothing (`claim` returns `None`, `claim_many` nothing; worker loops idle and take
    /// up again within their poll interval once it is resumed); leases already held keep
    /// running. Idempotent; returns the settings. Pausing a queue that does not exist (no message,
    /// no stored settings) makes it, so its name then follows `enqueue`'s rules
    /// (`ValidationError`, `invalid` on `queue`); a queue stored under a name they refuse (by
    /// 0.1.0) is paused.
    fn pause(&self, py: Python<'_>) -> PyResult<PyQueueSettings> {
        let engine = &self.shared.engine;
        run(py, || engine.pause(self.queue(), true)).map(PyQueueSettings)
    }

    /// Resumes this queue (see `pause`). Idempotent; returns the settings. Takes any name a
    /// handle takes, also one stored by 0.1.0 that `enqueue` refuses.
    fn resume(&self, py: Python<'_>) -> PyResult<PyQueueSettings> {
        let engine = &self.shared.engine;
        run(py, || engine.pause(self.queue(), false)).map(PyQueueSettings)
    }

    /// When the next delayed message of this queue becomes due: the earliest `retry_after` later
    /// than now among its pending messages (in backoff or enqueued with a delay; not those
    /// waiting behind their group's head), as an aware UTC `datetime`; `None` when no message is
    /// delayed. One index read: what an idle worker waits
    /// for (the same value as `stats().next_due_at`).
    fn next_due_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let engine = &self.shared.engine;
        let due = self.shared.run(py, async |clock| {
            engine.next_due_at(self.queue(), clock).await
        })?;
        to_opt_datetime(py, due)
    }

    /// For `deadletter.http`: when a claim on this queue that took nothing can next take a
    /// message, as an aware UTC `datetime`: `next_due_at()`, or `None` when none is delayed and
    /// while the queue is paused (its claims take nothing until `resume`; the core's
    /// `Engine::next_claim_at`). The empty claim's `Retry-After`.
    #[pyo3(name = "_next_claim_at")]
    fn next_claim_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let engine = &self.shared.engine;
        let at = self.shared.run(py, async |clock| {
            engine.next_claim_at(self.queue(), clock).await
        })?;
        to_opt_datetime(py, at)
    }

    /// The message `id` of this queue; `NotFoundError` when there is none (ids of other queues
    /// are not visible here).
    fn get(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyMessage> {
        let id = Value::from_py(Some(id));
        let engine = &self.shared.engine;
        run(py, || engine.get(self.queue(), id.arg())).map(PyMessage)
    }

    /// The messages of this queue that the filters select, in id order: at most `limit` (1..=1000,
    /// default 100) with ids greater than `after_id`, as a `deadletter.MessagePage` (a list with
    /// `next_after_id`: the `after_id` of the next page, `None` when the call reached the end of
    /// the queue before the page was full). The filters, all optional and combined with AND:
    /// `status` (`"pending"`, `"processing"`, `"succeeded"`, `"dead"`); `delayed`: a bool, `True`
    /// for the pending messages waiting for a backoff or delay, `False` for the others (with
    /// another `status`: `ValidationError`); `payload_contains`, `error_contains` (in
    /// `last_error`): a non-empty str without NUL, case-sensitive; `group`, `idempotency_key`:
    /// exactly; `created_after`/`created_before`, `updated_after`/`updated_before`,
    /// `dead_after`/`dead_before`: aware datetimes, `after <= t < before`. A call examines at most
    /// the core's scan budget of messages (`SCAN_BUDGET`, 10 000): every filter but `status` is
    /// checked on the messages in id order (no index answers it, not even `idempotency_key`,
    /// `group` or a time range), and when the budget runs out before the page is full the page is
    /// short (even empty) and `next_after_id` is the last id examined, to go on from. Raises
    /// `ValidationError` listing every rejected filter.
    #[pyo3(
        signature = (status = None, *, limit = None, after_id = None, **filters),
        text_signature = "($self, status=None, *, delayed=None, payload_contains=None, error_contains=None, group=None, idempotency_key=None, created_after=None, created_before=None, updated_after=None, updated_before=None, dead_after=None, dead_before=None, limit=100, after_id=None)"
    )]
    fn list<'py>(
        &self,
        py: Python<'py>,
        status: Option<&Bound<'py, PyAny>>,
        limit: Option<&Bound<'py, PyAny>>,
        after_id: Option<&Bound<'py, PyAny>>,
        filters: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let filters = Filters::new("list", status, filters)?;
        let (limit, after_id) = (Value::from_py(limit), Value::from_py(after_id));
        let engine = &self.shared.engine;
        let page = self.shared.run(py, async |clock| {
            engine
                .list(
                    self.queue(),
                    &filters.args(),
                    limit.arg(),
                    after_id.arg(),
                    clock,
                )
                .await
        })?;
        let class = py.import(PAGE_MODULE)?.getattr("MessagePage")?;
        class.call1((messages(page.messages), page.next_after_id))
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
    /// returns and their messages are left to their leases (an outcome being written then is
    /// waited for). A second `KeyboardInterrupt` while
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
    /// leases; an outcome being written then is waited for), then raises
    /// `asyncio.CancelledError`.
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

    fn __repr__(&self) -> String {
        format!("<deadletter.Queue {}>", crate::names::literal(&self.name))
    }
}

/// The keys of a backoff policy given to `set_settings` as a dict: `Backoff`'s arguments.
const BACKOFF_KEYS: [&str; 4] = ["initial", "multiplier", "cap", "jitter"];

/// `set_settings`' `backoff`: a `deadletter.Backoff`, or a dict of its arguments, checked by the
/// core (its field errors then join the others'); anything else is a `type` error on `backoff`.
/// A key of the dict that is not an argument of `Backoff` raises `ValidationError` alone (code
/// `unknown`).
fn stored_policy(
    py: Python<'_>,
    given: &Bound<'_, PyAny>,
) -> PyResult<deadletter::Result<Backoff>> {
    if let Ok(policy) = given.cast::<PyBackoff>() {
        return Ok(Ok(policy.get().0));
    }
    let Ok(dict) = given.cast::<PyDict>() else {
        let kind = describe_type(given);
        let message =
            format!("must be a deadletter.Backoff, a dict of its arguments or None, got {kind}");
        return Ok(Err(Error::Validation(vec![FieldError::new(
            "backoff", "type", message,
        )])));
    };
    let mut unknown = Vec::new();
    for key in dict.keys() {
        if !key
            .extract::<String>()
            .is_ok_and(|k| BACKOFF_KEYS.contains(&k.as_str()))
        {
            let field = key.str().map_or_else(|_| "?".to_owned(), |s| s.to_string());
            let message = format!(
                "is not an argument of Backoff (expected {})",
                BACKOFF_KEYS.join(", ")
            );
            unknown.push(crate::errors::PyField {
                field,
                code: "unknown",
                message,
                index: None,
            });
        }
    }
    if !unknown.is_empty() {
        return Err(validation_error(py, &unknown));
    }
    let initial = Value::duration(dict.get_item("initial")?.as_ref())?;
    let cap = Value::duration(dict.get_item("cap")?.as_ref())?;
    let multiplier = Value::from_py(dict.get_item("multiplier")?.as_ref());
    let jitter = Value::from_py(dict.get_item("jitter")?.as_ref());
    Ok(Backoff::new(
        &initial.arg(),
        &multiplier.arg(),
        &cap.arg(),
        &jitter.arg(),
    ))
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
