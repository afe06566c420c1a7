//! `deadletter.Message`: an immutable snapshot of one message.

use pyo3::prelude::*;
use pyo3::types::PyDict;

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
/// `succeed`/`fail`), `lease_expires_at` (datetime | None: while processing, when the lease runs
/// out). Two messages are equal when every attribute is.
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

    /// For a pending message after a failure: not claimable before this aware UTC datetime
    /// (the failure time plus `min(2**retry_count, 3600)` seconds); otherwise `None`.
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

    /// While processing: the token to pass to `succeed`/`fail`; otherwise `None`.
    #[getter]
    fn lease_token(&self) -> Option<&str> {
        self.0.lease_token.as_deref()
    }

    /// While processing: when the lease runs out (an aware UTC datetime); otherwise `None`.
    #[getter]
    fn lease_expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.lease_expires_at)
    }

    /// Every attribute in a new dict (timestamps as aware UTC datetimes or `None`).
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
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = &self.0;
        let text = |s: &str| -> PyResult<String> {
            let short: String = s.chars().take(60).collect();
            let ellipsis = if short.len() < s.len() { "..." } else { "" };
            Ok(format!("{}{ellipsis}", short.into_pyobject(py)?.repr()?))
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
        Ok(format!("<deadletter.Message {}>", parts.join(" ")))
    }
}
