//! Python values -> [`deadletter::Arg`], and UTC milliseconds <-> aware `datetime`.
//!
//! Values are mapped without judging them: the core applies every type and range rule, so Python
//! rejects exactly what JavaScript and Rust reject, with the same field codes.

use std::time::{SystemTime, UNIX_EPOCH};

use deadletter::validate::MAX_TIME;
use deadletter::{Arg, Error, FieldError, Millis};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyDelta, PyFloat, PyInt, PyString, PyTzInfo};

/// An owned [`Arg`]: what a Python argument becomes before the GIL is released.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// `None` or an absent argument.
    #[default]
    Null,
    /// A `bool` (checked before `int`, of which it is a subclass).
    Bool(bool),
    /// An `int` that fits in 64 bits.
    Int(i64),
    /// An `int` that does not.
    BigInt,
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// Anything else, described by its type (`a list`, `a bytes`).
    Other(String),
}

impl Value {
    /// Maps a Python value; `None` (an omitted argument) is [`Value::Null`].
    pub fn from_py(value: Option<&Bound<'_, PyAny>>) -> Self {
        let Some(value) = value else {
            return Self::Null;
        };
        if value.is_none() {
            Self::Null
        } else if let Ok(b) = value.cast::<PyBool>() {
            Self::Bool(b.is_true())
        } else if value.is_instance_of::<PyInt>() {
            value.extract::<i64>().map_or(Self::BigInt, Self::Int)
        } else if let Ok(f) = value.cast::<PyFloat>() {
            Self::Float(f.value())
        } else if let Ok(s) = value.cast::<PyString>() {
            // (`to_cow`: the stable ABI of 3.9 cannot borrow a str's UTF-8 buffer.)
            s.to_cow().map_or_else(
                |_| Self::Other("a str that is not valid UTF-8 (lone surrogates)".into()),
                |s| Self::Str(s.into_owned()),
            )
        } else {
            Self::Other(describe_type(value))
        }
    }

    /// A duration (a lease, a delay, an age, a backoff) given in seconds (`int` or `float`) or as
    /// a `datetime.timedelta`, as the core's integer milliseconds, rounded to the nearest one.
    /// Other values (`bool`, `str`, ...) are passed on unchanged for the core to reject.
    pub fn duration(value: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(match (value, Self::from_py(value)) {
            (_, Self::Int(seconds)) => seconds.checked_mul(1000).map_or(Self::BigInt, Self::Int),
            (_, Self::Float(seconds)) => from_float_ms(seconds * 1000.0),
            (Some(value), Self::Other(kind)) => match value.cast::<PyDelta>() {
                // Round half up to the nearest millisecond.
                Ok(delta) => Self::Int(millis((micros(delta.as_any())? + 500).div_euclid(1000))?),
                Err(_) => Self::Other(kind),
            },
            (_, other) => other,
        })
    }

    /// A bound of a filter on instants stored in milliseconds (`dead_after <= dead_at <
    /// dead_before`), given as an aware `datetime`: UTC milliseconds rounded up, which keeps the
    /// comparison exact (for a whole `m`, `m >= t` and `m < t` hold exactly when they do for
    /// `ceil(t)`), clamped to the core's last instant. Anything else, a naive `datetime`
    /// included, becomes [`Value::Other`] (or `Null` for `None`), so the core rejects it as the
    /// wrong type: an `int` is never taken for an instant.
    pub fn bound(value: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(value) = value.filter(|v| !v.is_none()) else {
            return Ok(Self::Null);
        };
        Ok(match read_instant(value)? {
            Instant::Micros(us) => Self::Int(millis((us + 999).div_euclid(1000))?.min(MAX_TIME)),
            Instant::Naive => Self::Other("a naive datetime (without tzinfo)".into()),
            Instant::NotDatetime => Self::Other(describe_type(value)),
        })
    }

    /// The borrowed form the core takes.
    pub fn arg(&self) -> Arg<'_> {
        match self {
            Self::Null => Arg::Null,
            Self::Bool(b) => Arg::Bool(*b),
            Self::Int(n) => Arg::Int(*n),
            Self::BigInt => Arg::BigInt,
            Self::Float(f) => Arg::Float(*f),
            Self::Str(s) => Arg::Str(s),
            Self::Other(kind) => Arg::Other(kind),
        }
    }
}

/// A whole number of milliseconds from a float: rounded to the nearest; a float too large for 64
/// bits is [`Value::BigInt`] (out of range), a non-finite one stays a float (wrong type).
#[allow(clippy::cast_possible_truncation)] // checked against the i64 range first
fn from_float_ms(ms: f64) -> Value {
    // 2^63 is exactly representable; every float below it in magnitude fits in i64 once rounded.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let rounded = ms.round();
    if !rounded.is_finite() {
        Value::Float(ms)
    } else if !(-LIMIT..LIMIT).contains(&rounded) {
        Value::BigInt
    } else {
        Value::Int(rounded as i64)
    }
}

/// `a list`, `an object`: how a value of an unexpected type is named in error messages.
pub fn describe_type(value: &Bound<'_, PyAny>) -> String {
    let name = value
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string());
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// `1970-01-01T00:00:00+00:00`.
fn epoch(py: Python<'_>) -> PyResult<Bound<'_, PyDateTime>> {
    let utc = PyTzInfo::utc(py)?.to_owned();
    PyDateTime::new(py, 1970, 1, 1, 0, 0, 0, 0, Some(&utc))
}

/// UTC milliseconds -> an aware `datetime` in UTC (exact: integer arithmetic on `timedelta`).
pub fn to_datetime(py: Python<'_>, ms: Millis) -> PyResult<Bound<'_, PyAny>> {
    epoch(py)?.add(to_timedelta(py, ms)?)
}

/// A duration in milliseconds as a `datetime.timedelta` (exact).
pub fn to_timedelta(py: Python<'_>, ms: Millis) -> PyResult<Bound<'_, PyDelta>> {
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    PyDelta::new(
        py,
        i32::try_from(days)?,
        i32::try_from(rest / 1000)?,
        i32::try_from(rest % 1000 * 1000)?,
        false,
    )
}

/// An optional timestamp as an aware `datetime` or `None`.
pub fn to_opt_datetime(py: Python<'_>, ms: Option<Millis>) -> PyResult<Option<Bound<'_, PyAny>>> {
    ms.map(|ms| to_datetime(py, ms)).transpose()
}

/// What a value given as an instant turned out to be.
enum Instant {
    /// An aware `datetime`, in UTC microseconds since the epoch.
    Micros(i128),
    /// A `datetime` without a UTC offset.
    Naive,
    /// Not a `datetime`.
    NotDatetime,
}

fn read_instant(value: &Bound<'_, PyAny>) -> PyResult<Instant> {
    if value.cast::<PyDateTime>().is_err() {
        return Ok(Instant::NotDatetime);
    }
    if value.call_method0("utcoffset")?.is_none() {
        return Ok(Instant::Naive);
    }
    let since_epoch = value.sub(epoch(value.py())?)?;
    Ok(Instant::Micros(micros(&since_epoch)?))
}

/// A `timedelta`'s length in microseconds, from its `days`, `seconds` and `microseconds`.
fn micros(delta: &Bound<'_, PyAny>) -> PyResult<i128> {
    let field =
        |name: &str| -> PyResult<i128> { delta.getattr(name)?.extract::<i64>().map(i128::from) };
    Ok((field("days")? * 86_400 + field("seconds")?) * 1_000_000 + field("microseconds")?)
}

/// Milliseconds that fit in 64 bits (every `timedelta` does).
fn millis(ms: i128) -> PyResult<Millis> {
    Millis::try_from(ms).map_err(|err| pyo3::exceptions::PyOverflowError::new_err(err.to_string()))
}

/// The clock's answer, an aware `datetime`, as UTC milliseconds (microseconds floored). A naive
/// `datetime`, or a value that is not a `datetime`, is a validation error on `field`. The range
/// is the core's to check (field `clock`, code `out_of_range`), with the instants derived from it.
pub fn to_millis(value: &Bound<'_, PyAny>, field: &'static str) -> PyResult<Millis> {
    let py = value.py();
    match read_instant(value)? {
        Instant::Micros(us) => millis(us.div_euclid(1000)),
        Instant::NotDatetime => {
            let message = format!("must return a datetime, got {}", describe_type(value));
            Err(reject(py, field, "type", message))
        }
        Instant::Naive => {
            let message = "must return an aware datetime (with a tzinfo, e.g. \
                           datetime.now(timezone.utc)); got a naive one"
                .to_owned();
            Err(reject(py, field, "invalid", message))
        }
    }
}

fn reject(py: Python<'_>, field: &'static str, code: &'static str, message: String) -> PyErr {
    crate::errors::to_py_err(
        py,
        &Error::Validation(vec![FieldError::new(field, code, message)]),
    )
}

/// The system clock, in UTC milliseconds.
pub fn system_now() -> Millis {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
