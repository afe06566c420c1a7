//! `deadletter.QueueStats`: the statistics of one queue at one instant.

use deadletter::Stats;
use pyo3::prelude::*;
use pyo3::types::{PyDelta, PyDict};

use crate::convert::{to_opt_datetime, to_timedelta};

/// The statistics of one queue at the instant of `Queue.stats()` or `Database.queues()`, read
/// from SQLite's indexes: an immutable snapshot.
///
/// Attributes: `queue` (str), `pending` (int: waiting to be claimed: due, in backoff, or behind
/// the head of its ordering group),
/// `processing` (int: held by a worker, expired leases included until reaped), `succeeded`,
/// `dead` (int), `expired` (int: processing messages whose lease has run out, counted as failed by
/// the next `claim` or `reap`), `delayed` (int: pending messages in backoff or enqueued with a
/// delay), `next_due_at` (datetime | None: when the next delayed message becomes due),
/// `oldest_due_age` (timedelta | None: how long the due pending message the next claim takes, the
/// first in enqueue order, has been in the queue), `oldest_dead_age` (timedelta | None: how long the oldest dead message has been dead),
/// `paused` (bool: the queue claims nothing until resumed), `expired_dead` and `expired_discarded`
/// (int: messages that expired while pending and became dead or were discarded, since the queue
/// was first configured or had one expire; purging does not lower them). Members of an ordering
/// group waiting behind its head are pending, neither due nor delayed. Two stats are equal when
/// every attribute is.
#[pyclass(frozen, eq, module = "deadletter", name = "QueueStats")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyQueueStats(pub Stats);

#[pymethods]
impl PyQueueStats {
    /// The queue's name.
    #[getter]
    fn queue(&self) -> &str {
        &self.0.queue
    }

    /// Messages waiting to be claimed (due, in backoff or delayed, or behind their group's head).
    #[getter]
    fn pending(&self) -> u64 {
        self.0.pending
    }

    /// Messages held by a worker (expired leases included until reaped).
    #[getter]
    fn processing(&self) -> u64 {
        self.0.processing
    }

    /// Messages acked.
    #[getter]
    fn succeeded(&self) -> u64 {
        self.0.succeeded
    }

    /// Messages in the dead-letter queue.
    #[getter]
    fn dead(&self) -> u64 {
        self.0.dead
    }

    /// Processing messages whose lease has already run out (failed by the next claim or reap).
    #[getter]
    fn expired(&self) -> u64 {
        self.0.expired
    }

    /// Pending messages not due yet (in backoff after a failure, or enqueued with a delay).
    #[getter]
    fn delayed(&self) -> u64 {
        self.0.delayed
    }

    /// When the next delayed message becomes due (an aware UTC datetime), or `None`.
    #[getter]
    fn next_due_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        to_opt_datetime(py, self.0.next_due_at)
    }

    /// How long the due pending message the next claim takes (the first in enqueue order) has
    /// been in the queue (`now - created_at`, zero if the clock went back), or `None` when
    /// nothing is due.
    #[getter]
    fn oldest_due_age<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDelta>>> {
        self.0
            .oldest_due_age_ms
            .map(|ms| to_timedelta(py, ms))
            .transpose()
    }

    /// How long the oldest dead message has been dead (`now - dead_at`), or `None` when there is
    /// none.
    #[getter]
    fn oldest_dead_age<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDelta>>> {
        self.0
            .oldest_dead_age_ms
            .map(|ms| to_timedelta(py, ms))
            .transpose()
    }

    /// Whether the queue is paused (it claims nothing until resumed).
    #[getter]
    fn paused(&self) -> bool {
        self.0.paused
    }

    /// Messages that expired while pending and became dead (error `expired`).
    #[getter]
    fn expired_dead(&self) -> u64 {
        self.0.expired_dead
    }

    /// Messages that expired while pending and were discarded (the queue's `on_expiry`).
    #[getter]
    fn expired_discarded(&self) -> u64 {
        self.0.expired_discarded
    }

    /// Every attribute in a new dict (`next_due_at` a datetime, ages timedeltas, or `None`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.0;
        let dict = PyDict::new(py);
        dict.set_item("queue", &s.queue)?;
        dict.set_item("pending", s.pending)?;
        dict.set_item("processing", s.processing)?;
        dict.set_item("succeeded", s.succeeded)?;
        dict.set_item("dead", s.dead)?;
        dict.set_item("expired", s.expired)?;
        dict.set_item("delayed", s.delayed)?;
        dict.set_item("next_due_at", self.next_due_at(py)?)?;
        dict.set_item("oldest_due_age", self.oldest_due_age(py)?)?;
        dict.set_item("oldest_dead_age", self.oldest_dead_age(py)?)?;
        dict.set_item("paused", s.paused)?;
        dict.set_item("expired_dead", s.expired_dead)?;
        dict.set_item("expired_discarded", s.expired_discarded)?;
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let s = &self.0;
        let mut parts = vec![
            format!("queue={}", crate::names::literal(&s.queue)),
            format!("pending={}", s.pending),
            format!("processing={}", s.processing),
            format!("succeeded={}", s.succeeded),
            format!("dead={}", s.dead),
            format!("expired={}", s.expired),
            format!("delayed={}", s.delayed),
        ];
        if let Some(at) = self.next_due_at(py)? {
            parts.push(format!("next_due_at={}", at.str()?));
        }
        if let Some(age) = self.oldest_due_age(py)? {
            parts.push(format!("oldest_due_age={}", age.str()?));
        }
        if let Some(age) = self.oldest_dead_age(py)? {
            parts.push(format!("oldest_dead_age={}", age.str()?));
        }
        if s.paused {
            parts.push("paused=True".into());
        }
        if s.expired_dead > 0 || s.expired_discarded > 0 {
            parts.push(format!("expired_dead={}", s.expired_dead));
            parts.push(format!("expired_discarded={}", s.expired_discarded));
        }
        Ok(format!("<deadletter.QueueStats {}>", parts.join(" ")))
    }
}
