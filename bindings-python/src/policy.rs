//! `deadletter.Backoff`: a queue's backoff policy, validated by the core.

use deadletter::{Backoff, Jitter};
use pyo3::prelude::*;
use pyo3::types::{PyDelta, PyDict};

use crate::convert::{Value, to_timedelta};
use crate::errors::to_py_err;

/// How long a failed message waits before its next attempt: after the n-th failure,
/// `min(initial * multiplier**(n-1), cap)`, rounded to the millisecond, then spread by `jitter`.
/// The default, `Backoff()`, is the original schedule `min(2**n, 3600)` seconds. Immutable; pass
/// it to `Database.queue(name, backoff=...)`.
///
/// `initial`: the delay after the first failure, and `cap`: the longest delay, each in seconds
/// (int or float) or a `datetime.timedelta`, rounded to the millisecond, 0..=30 days (default 2 s
/// and 3600 s). `multiplier`: an int or float, 1..=100 (default 2). `jitter`: `None` (the delay as
/// computed), `"full"` (uniform in `[0, delay)`) or `"equal"` (uniform in `[delay/2, delay)`), drawn
/// from the database's random source (see `deadletter.open`). `None` for any argument means its
/// default. Raises `ValidationError` (fields `initial`, `multiplier`, `cap`, `jitter`; every
/// rejected one) for a value of the wrong type or out of range; a bool is not a number.
#[pyclass(frozen, eq, module = "deadletter", name = "Backoff")]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PyBackoff(pub Backoff);

#[pymethods]
impl PyBackoff {
    #[new]
    #[pyo3(
        signature = (initial = None, multiplier = None, cap = None, jitter = None),
        text_signature = "(initial=2, multiplier=2, cap=3600, jitter=None)"
    )]
    fn new(
        py: Python<'_>,
        initial: Option<&Bound<'_, PyAny>>,
        multiplier: Option<&Bound<'_, PyAny>>,
        cap: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (initial, cap) = (Value::duration(initial)?, Value::duration(cap)?);
        let (multiplier, jitter) = (Value::from_py(multiplier), Value::from_py(jitter));
        Backoff::new(&initial.arg(), &multiplier.arg(), &cap.arg(), &jitter.arg())
            .map(Self)
            .map_err(|err| to_py_err(py, &err))
    }

    /// The delay after the first failure, as a `timedelta`.
    #[getter]
    fn initial<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDelta>> {
        to_timedelta(py, self.0.initial_ms)
    }

    /// The growth factor per further failure (a float).
    #[getter]
    fn multiplier(&self) -> f64 {
        self.0.multiplier
    }

    /// The longest delay, as a `timedelta`.
    #[getter]
    fn cap<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDelta>> {
        to_timedelta(py, self.0.cap_ms)
    }

    /// `None`, `"full"` or `"equal"`.
    #[getter]
    fn jitter(&self) -> Option<&'static str> {
        self.0.jitter.as_str()
    }

    /// The four arguments in a new dict (`initial` and `cap` as `timedelta`s): `Backoff(**d)`
    /// is the same policy.
    #[allow(clippy::wrong_self_convention)] // Python's name, as on the package's other classes
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("initial", self.initial(py)?)?;
        dict.set_item("multiplier", self.multiplier())?;
        dict.set_item("cap", self.cap(py)?)?;
        dict.set_item("jitter", self.jitter())?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        #[allow(clippy::cast_precision_loss)] // at most 30 days in milliseconds: exact in f64
        let seconds = |ms: i64| ms as f64 / 1000.0;
        let jitter = match self.0.jitter {
            Jitter::None => "None".to_owned(),
            other => format!("'{}'", other.as_str().unwrap_or_default()),
        };
        format!(
            "Backoff(initial={:?}, multiplier={:?}, cap={:?}, jitter={jitter})",
            seconds(self.0.initial_ms),
            self.0.multiplier,
            seconds(self.0.cap_ms)
        )
    }
}
