//! `deadletter.QueueSettings`: the settings stored with a queue (issue 21), as `Queue.settings()`,
//! `Queue.set_settings()`, `Queue.pause()` and `Queue.resume()` return them.

use deadletter::QueueSettings;
use pyo3::prelude::*;
use pyo3::types::{PyDelta, PyDict};

use crate::convert::to_timedelta;
use crate::policy::PyBackoff;

/// The settings stored with one queue, in the database, so that every process (workers, the HTTP
/// server, the CLI) applies the same: an immutable snapshot. `None` means unset: the operation
/// then uses its fallback.
///
/// Attributes: `backoff` (`Backoff` | None: the policy of failures and expired leases; unset:
/// `Backoff()`, unless the queue handle was given its own, which wins), `max_retries` (int |
/// None: for an enqueue that gives none; unset: 3), `lease` (timedelta | None: for a claim or an
/// extend that gives none; unset: the database's lease, `open(lease=...)`), `expires_in`
/// (timedelta | None: for an enqueue or replay that gives none; unset: messages never expire),
/// `on_expiry` (`"dead"`: an expired message becomes dead with the error `expired`, or
/// `"discard"`: it is deleted), `paused` (bool: a paused queue claims nothing). A per-call
/// argument always wins over the stored value.
#[pyclass(frozen, eq, module = "deadletter", name = "QueueSettings")]
#[derive(Debug, Clone, PartialEq)]
pub struct PyQueueSettings(pub QueueSettings);

#[pymethods]
impl PyQueueSettings {
    /// The stored backoff policy, or `None`.
    #[getter]
    fn backoff(&self) -> Option<PyBackoff> {
        self.0.backoff.map(PyBackoff)
    }

    /// The stored default `max_retries`, or `None`.
    #[getter]
    fn max_retries(&self) -> Option<u32> {
        self.0.max_retries
    }

    /// The stored default lease, a `timedelta`, or `None`.
    #[getter]
    fn lease<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDelta>>> {
        self.0.lease_ms.map(|ms| to_timedelta(py, ms)).transpose()
    }

    /// The stored default expiry (from the enqueue or replay), a `timedelta`, or `None`.
    #[getter]
    fn expires_in<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDelta>>> {
        self.0
            .expires_in_ms
            .map(|ms| to_timedelta(py, ms))
            .transpose()
    }

    /// What expiry does to a pending message: `"dead"` or `"discard"`.
    #[getter]
    fn on_expiry(&self) -> &'static str {
        self.0.on_expiry.as_str()
    }

    /// Whether the queue is paused.
    #[getter]
    fn paused(&self) -> bool {
        self.0.paused
    }

    /// Every attribute in a new dict (`backoff` a `Backoff` or `None`, durations `timedelta`s).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("backoff", self.backoff())?;
        dict.set_item("max_retries", self.max_retries())?;
        dict.set_item("lease", self.lease(py)?)?;
        dict.set_item("expires_in", self.expires_in(py)?)?;
        dict.set_item("on_expiry", self.on_expiry())?;
        dict.set_item("paused", self.paused())?;
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let backoff = match self.backoff() {
            Some(policy) => Bound::new(py, policy)?.repr()?.to_string(),
            None => "None".into(),
        };
        let seconds = |ms: Option<i64>| match ms {
            #[allow(clippy::cast_precision_loss)] // at most 365 days in ms: exact in f64
            Some(ms) => format!("{:?}", ms as f64 / 1000.0),
            None => "None".into(),
        };
        let max_retries = self
            .max_retries()
            .map_or_else(|| "None".into(), |n| n.to_string());
        Ok(format!(
            "QueueSettings(backoff={backoff}, max_retries={max_retries}, lease={}, \
             expires_in={}, on_expiry='{}', paused={})",
            seconds(self.0.lease_ms),
            seconds(self.0.expires_in_ms),
            self.on_expiry(),
            if self.paused() { "True" } else { "False" }
        ))
    }
}
