//! `deadletter.Message`: an immutable snapshot of one message.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{to_datetime, to_opt_datetime};

/// One message as it was when the call returned: an immutable snapshot (later changes need a new
/// `Queue.get`). Timestamps are aware `datetime`s in UTC, with millisecond precision.
///
/// Attributes: `id` (int, assigned on enqueue, increasing), `queue` (str), `payload` (str, exactly
/// as enqueued), `status` (`"pending"`, `"processing"`, `"succeeded"` or `"dead"`), `retry_count`
/// (failed attempts since enqueue or the last replay; an expired lease counts as one),
/// `max_retries` (attempts allowed before the message is dead), `retry_after` (datetime | None:
/// a pending message is not claimable before it), `last_error` (str | None), `created_at`,
/// `updated_at` (datetime), `lease_token` (str | None: while processing, the token to show to
/// `succeed`/`fail`/`extend`), `lease_expires_at` (datetime | None: while processing, when the
/// lease runs out), `idempotency_key` (str | None), `deduplicated` (bool: on the result of an
/// enqueue, true when a stored message with that idempotency key was returned instead of
/// inserting), `first_failed_at` (datetime | None), `dead_at` (datetime | None: when it last became
/// dead, while dead), `errors` (the failure history, a new list of dicts `{"attempt": int,
/// "error": str, "at": datetime}`, oldest first, at most the last 20), `errors_dropped` (int: older
/// entries dropped from `errors`), `replay_count` (int), `replayed_at` (datetime | None), `group`
/// (str | None: its ordering group), `expires_at` (datetime | None: still pending then, it is
/// never delivered), `moved_from` (str | None: the queue it was last moved from by `Queue.move`
/// or `Queue.move_all`). Two messages are equal when every attribute is.
#[pyclass(frozen, eq, module = "deadletter", name = "Message")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyMessage(pub deadletter::Message);

#[pymethods]
impl PyMessage {
    /// The id: an int assigned by the store on enqueue, increasing from 1.
    #[getter]
    fn id(&self) -> i64 {
        self.0.id
    }

    /// The queue's name.
    #[getter]
    fn queue(&self) -> &str {
        &self.0.queue
    }

    /// The payload, byte-exact as enqueued (never parsed).
    #[getter]
    fn payload(&self) -> &str {
        &self.0.payload
    }

    /// `"pending"`, `"processing"`, `"succeeded"` or `"dead"`.
    #[getter]
    fn status(&self) -> &'static str {
        self.0.status.as_str()
    }

    /// Failed attempts since enqueue or the last replay (an expired lease counts as one).
    #[getter]
    fn retry_count(&self) -> u32 {
        self.0.retry_count
    }

    /// Attempts allowed before the message is dead (1..=10).
    #[getter]
    fn max_retries(&self) -> u32 {
        self.0.max_retries
    }

    /// Set exactly while the message is pending in backoff (after a failure: the failure time
    /// plus the queue's backoff; or enqueued with a delay): not claimable before this aware UTC
    /// datetime. `None` otherwise (cleared by claim and replay).
    #[getter]
    fn retry_after<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.retry_after)
    }

    /// The error of the last failed attempt (`"lease expired"` when a lease ran out), or `None`.
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.0.last_error.as_deref()
    }

    /// When it was enqueued: an aware UTC datetime.
    #[getter]
    fn created_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_datetime(py, self.0.created_at)
    }

    /// When it last changed: an aware UTC datetime.
    #[getter]
    fn updated_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_datetime(py, self.0.updated_at)
    }

    /// While processing: the token to pass to `succeed`/`fail`/`extend`; otherwise `None`.
    #[getter]
    fn lease_token(&self) -> Option<&str> {
        self.0.lease_token.as_deref()
    }

    /// While processing: when the lease runs out (an aware UTC datetime); otherwise `None`.
    #[getter]
    fn lease_expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.lease_expires_at)
    }

    /// The producer's idempotency key (a str), or `None`.
    #[getter]
    fn idempotency_key(&self) -> Option<&str> {
        self.0.idempotency_key.as_deref()
    }

    /// On the result of `enqueue`/`enqueue_many`: `True` when a message of the queue already
    /// carried the idempotency key and was returned (as it is now) instead of inserting a new
    /// one. `False` everywhere else.
    #[getter]
    fn deduplicated(&self) -> bool {
        self.0.deduplicated
    }

    /// When the first failed attempt was recorded (an aware UTC datetime; never changed
    /// afterwards, replays included), or `None`.
    #[getter]
    fn first_failed_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.first_failed_at)
    }

    /// While dead: when it last became dead (an aware UTC datetime); otherwise `None`.
    #[getter]
    fn dead_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.dead_at)
    }

    /// The failure history, oldest first, at most the last 20 failed attempts: a new list of
    /// dicts `{"attempt": int, "error": str, "at": datetime}` on each access. `attempt` counts
    /// every failure since enqueue, across replays (1 for the first); an expired lease is an
    /// entry with the error `"lease expired"`.
    #[getter]
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = self
            .0
            .errors
            .iter()
            .map(|entry| {
                let dict = PyDict::new(py);
                dict.set_item("attempt", entry.attempt)?;
                dict.set_item("error", &entry.error)?;
                dict.set_item("at", to_datetime(py, entry.at)?)?;
                Ok(dict)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, entries)
    }

    /// How many older entries were dropped from `errors` to keep it at 20 (for a message
    /// written by deadletter 0.1.0: its failures before the upgrade, whose details were not kept).
    #[getter]
    fn errors_dropped(&self) -> u32 {
        self.0.errors_dropped
    }

    /// How many times it was replayed from the dead-letter queue.
    #[getter]
    fn replay_count(&self) -> u32 {
        self.0.replay_count
    }

    /// When it was last replayed (an aware UTC datetime), or `None`.
    #[getter]
    fn replayed_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.replayed_at)
    }

    /// Its ordering group, or `None`: the messages of one group are delivered one at a time, in
    /// the order they entered it.
    #[getter]
    fn group(&self) -> Option<&str> {
        self.0.group.as_deref()
    }

    /// When it expires (an aware UTC datetime), or `None`: still pending then, it is never
    /// delivered (the next claim or reap takes it out).
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.expires_at)
    }

    /// The queue it was last moved from (`Queue.move`, `Queue.move_all`), or `None` if it was
    /// never moved.
    #[getter]
    fn moved_from(&self) -> Option<&str> {
        self.0.moved_from.as_deref()
    }

    /// Every attribute in a new dict (timestamps as aware UTC datetimes or `None`; `errors` as
    /// a new list of dicts).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.0;
        let dict = PyDict::new(py);
        dict.set_item("id", m.id)?;
        dict.set_item("queue", &m.queue)?;
        dict.set_item("payload", &m.payload)?;
        dict.set_item("status", m.status.as_str())?;
        dict.set_item("retry_count", m.retry_count)?;
        dict.set_item("max_retries", m.max_retries)?;
        dict.set_item("retry_after", to_opt_datetime(py, m.retry_after)?)?;
        dict.set_item("last_error", &m.last_error)?;
        dict.set_item("created_at", to_datetime(py, m.created_at)?)?;
        dict.set_item("updated_at", to_datetime(py, m.updated_at)?)?;
        dict.set_item("lease_token", &m.lease_token)?;
        dict.set_item("lease_expires_at", to_opt_datetime(py, m.lease_expires_at)?)?;
        dict.set_item("idempotency_key", &m.idempotency_key)?;
        dict.set_item("deduplicated", m.deduplicated)?;
        dict.set_item("first_failed_at", self.first_failed_at(py)?)?;
        dict.set_item("dead_at", self.dead_at(py)?)?;
        dict.set_item("errors", self.errors(py)?)?;
        dict.set_item("errors_dropped", m.errors_dropped)?;
        dict.set_item("replay_count", m.replay_count)?;
        dict.set_item("replayed_at", self.replayed_at(py)?)?;
        dict.set_item("group", &m.group)?;
        dict.set_item("expires_at", self.expires_at(py)?)?;
        dict.set_item("moved_from", &m.moved_from)?;
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = &self.0;
        let text = |s: &str| -> PyResult<String> {
            let short: String = s.chars().take(60).collect();
            let ellipsis = if short.len() < s.len() { "..." } else { "" };
            Ok(format!("{}{ellipsis}", crate::names::literal(&short)))
        };
        let mut parts = vec![
            format!("id={}", m.id),
            format!("queue={}", text(&m.queue)?),
            format!("status='{}'", m.status.as_str()),
            format!("retry_count={}/{}", m.retry_count, m.max_retries),
            format!("payload={}", text(&m.payload)?),
        ];
        if let Some(at) = to_opt_datetime(py, m.retry_after)? {
            parts.push(format!("retry_after={}", at.str()?));
        }
        if let Some(error) = &m.last_error {
            parts.push(format!("last_error={}", text(error)?));
        }
        if let Some(at) = to_opt_datetime(py, m.lease_expires_at)? {
            parts.push(format!("lease_expires_at={}", at.str()?));
        }
        if let Some(at) = to_opt_datetime(py, m.dead_at)? {
            parts.push(format!("dead_at={}", at.str()?));
        }
        if let Some(key) = &m.idempotency_key {
            parts.push(format!("idempotency_key={}", text(key)?));
        }
        if let Some(group) = &m.group {
            parts.push(format!("group={}", text(group)?));
        }
        if let Some(at) = to_opt_datetime(py, m.expires_at)? {
            parts.push(format!("expires_at={}", at.str()?));
        }
        if let Some(from) = &m.moved_from {
            parts.push(format!("moved_from={}", text(from)?));
        }
        if m.replay_count > 0 {
            parts.push(format!("replay_count={}", m.replay_count));
        }
        if m.deduplicated {
            parts.push("deduplicated=True".to_owned());
        }
        Ok(format!("<deadletter.Message {}>", parts.join(" ")))
    }
}
