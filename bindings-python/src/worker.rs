//! What the Python worker loop takes from the core's worker rules ([`deadletter::worker`]): its
//! validated options, when to heartbeat, how long to sleep when idle, and the error text of a
//! handler's exception. The loop's mechanics (threads, asyncio tasks, signals) are pure Python, in
//! `deadletter._worker`; `Queue.process` and `Queue.process_async` hand their arguments to it
//! (`queue.rs`).

use std::sync::Arc;

use deadletter::Millis;
use deadletter::worker::{Plan, failure_text as text_of};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{Value, to_millis};
use crate::errors::to_py_err;
use crate::queue::Queue;
use crate::shared::{Shared, run};

/// Registers this module's class and function in the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<WorkerPlan>()?;
    m.add_function(wrap_pyfunction!(failure_text, m)?)
}

/// The validated options of one worker loop over one queue, made by `deadletter._worker` (not a
/// public name of `deadletter`). Durations are float seconds.
#[pyclass(frozen, module = "deadletter._deadletter", name = "WorkerPlan")]
pub struct WorkerPlan {
    plan: Plan,
    shared: Arc<Shared>,
}

#[pymethods]
impl WorkerPlan {
    /// Validates the options of a loop over `queue` (`None` takes the default): `concurrency` an
    /// int, 1..=1000 (default 1); `poll_interval` 0.001..=3600 s (default 1 s);
    /// `shutdown_timeout` 0..=3600 s (default 30 s); `lease` 0.001..=43200 s (default: the
    /// queue's stored lease when the loop starts, else the database's lease); durations in
    /// seconds (int or float) or `timedelta`s. Raises `ValidationError` listing every rejected
    /// option (and `StoreError` when the queue's settings cannot be read).
    #[new]
    #[pyo3(signature = (queue, *, concurrency = None, poll_interval = None, shutdown_timeout = None, lease = None))]
    fn new(
        py: Python<'_>,
        queue: &Bound<'_, Queue>,
        concurrency: Option<&Bound<'_, PyAny>>,
        poll_interval: Option<&Bound<'_, PyAny>>,
        shutdown_timeout: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let shared = Arc::clone(&queue.get().shared);
        let concurrency = Value::from_py(concurrency);
        let (poll, shutdown) = (
            Value::duration(poll_interval)?,
            Value::duration(shutdown_timeout)?,
        );
        let lease = Value::duration(lease)?;
        let stored = if matches!(lease, Value::Null) {
            let engine = &shared.engine;
            let name = Value::Str(queue.get().name.clone());
            run(py, || engine.settings(name.arg()))?.lease_ms
        } else {
            None
        };
        let default_lease = stored.unwrap_or(shared.engine.limits().default_lease_ms);
        let plan = Plan::new(
            &concurrency.arg(),
            &poll.arg(),
            &shutdown.arg(),
            &lease.arg(),
            default_lease,
        )
        .map_err(|err| to_py_err(py, &err))?;
        Ok(Self { plan, shared })
    }

    /// Handlers run at once.
    #[getter]
    fn concurrency(&self) -> usize {
        self.plan.concurrency
    }

    /// The longest idle sleep between polls, in seconds.
    #[getter]
    fn poll_interval(&self) -> f64 {
        seconds(self.plan.poll_interval_ms)
    }

    /// How long a stopping loop waits for running handlers, in seconds.
    #[getter]
    fn shutdown_timeout(&self) -> f64 {
        seconds(self.plan.shutdown_timeout_ms)
    }

    /// The lease of each claimed message, renewed by heartbeats, in seconds.
    #[getter]
    fn lease(&self) -> f64 {
        seconds(self.plan.lease_ms)
    }

    /// How often a running handler's lease is extended, in seconds: every half lease.
    #[getter]
    fn heartbeat(&self) -> f64 {
        seconds(self.plan.heartbeat_ms())
    }

    /// How long an idle loop sleeps now, in seconds: until `next_due_at` (an aware `datetime`, or
    /// `None` when nothing is delayed) or for the poll interval, whichever is sooner; at least
    /// 1 ms. "Now" is the database's clock, the one `next_due_at` was read against.
    fn idle_wait(&self, py: Python<'_>, next_due_at: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
        let due = next_due_at
            .filter(|at| !at.is_none())
            .map(|at| to_millis(at, "next_due_at"))
            .transpose()?;
        let now = self.shared.now(py)?;
        Ok(seconds(self.plan.idle_wait_ms(due, now)))
    }

    fn __repr__(&self) -> String {
        format!(
            "<deadletter WorkerPlan concurrency={} poll_interval={}s shutdown_timeout={}s lease={}s heartbeat={}s>",
            self.plan.concurrency,
            self.poll_interval(),
            self.shutdown_timeout(),
            self.lease(),
            self.heartbeat()
        )
    }
}

/// The error text the loop records when a handler raises: `"<kind>: <message>"`, or `kind`
/// alone when `message` is empty (`failure_text("ValueError", "bad")` is
/// `"ValueError: bad"`). A NUL or a lone surrogate becomes U+FFFD, so `Queue.fail` always
/// accepts it.
#[pyfunction]
fn failure_text(kind: &Bound<'_, PyString>, message: &Bound<'_, PyString>) -> PyResult<String> {
    Ok(text_of(&lossy(kind)?, &lossy(message)?))
}

/// A `str` as UTF-8, each lone surrogate replaced by one U+FFFD (as JavaScript's strings would
/// be; `to_string_lossy` would put one per byte of its UTF-8 form).
fn lossy(text: &Bound<'_, PyString>) -> PyResult<String> {
    // (`to_cow`: the stable ABI of 3.9 cannot borrow a str's UTF-8 buffer.)
    if let Ok(valid) = text.to_cow() {
        return Ok(valid.into_owned());
    }
    let bytes: Vec<u8> = text
        .call_method1("encode", ("utf-16-le", "surrogatepass"))?
        .extract()?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    Ok(String::from_utf16_lossy(&units))
}

/// Milliseconds as float seconds (exact for every duration a plan holds).
#[allow(clippy::cast_precision_loss)] // at most 12 h in milliseconds: exact in f64
fn seconds(ms: Millis) -> f64 {
    ms as f64 / 1000.0
}
