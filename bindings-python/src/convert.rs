//! Python values -> [`deadletter::Arg`], and UTC milliseconds <-> aware `datetime`.
//!
//! Values are mapped without judging them: the core applies every type and range rule, so Python
//! rejects exactly what JavaScript and Rust reject, with the same field codes.

use std::time::{SystemTime, UNIX_EPOCH};

use deadletter::{Arg, Error, FieldError, Millis};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyDelta, PyFloat, PyInt, PyString, PyTzInfo};

/// An owned [`Arg`]: what a Python argument becomes before the GIL is released.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None` or an absent argument.
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

    /// A lease (visibility timeout) given in seconds (`int` or `float`) or as a
    /// `datetime.timedelta`, as the core's integer `lease_ms`: milliseconds rounded to the nearest
    /// one. Other values (`bool`, `str`, ...) are passed on unchanged for the core to reject.
    pub fn lease(value: Option<&Bound<'_, PyAny>>) -> Self {
        match (value, Self::from_py(value)) {
            (_, Self::Int(seconds)) => seconds.checked_mul(1000).map_or(Self::BigInt, Self::Int),
            (_, Self::Float(seconds)) => from_float_ms(seconds * 1000.0),
            (Some(value), Self::Other(kind)) => match value.cast::<PyDelta>().map(delta_parts) {
                Ok(Ok((days, seconds, micros))) => {
                    // Microseconds are 0..=999_999; round half up to the nearest millisecond.
                    Self::Int(days * 86_400_000 + seconds * 1000 + (micros + 500) / 1000)
                }
                _ => Self::Other(kind),
            },
            (_, other) => other,
        }
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

/// A `timedelta`'s normalized `(days, seconds, microseconds)`, read as attributes (the stable ABI
/// has no access to the C struct). Seconds are 0..86400, microseconds 0..1000000.
fn delta_parts(delta: &Bound<'_, PyDelta>) -> PyResult<(i64, i64, i64)> {
    Ok((
        delta.getattr("days")?.extract()?,
        delta.getattr("seconds")?.extract()?,
        delta.getattr("microseconds")?.extract()?,
    ))
}

/// `a list`, `an object`: how a value of an unexpected type is named in error messages.
fn describe_type(value: &Bound<'_, PyAny>) -> String {
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

/// An aware `datetime` -> UTC milliseconds (microseconds floored). A naive `datetime`, or a value
/// that is not a `datetime`, is a validation error on `field`.
pub fn to_millis(value: &Bound<'_, PyAny>, field: &'static str) -> PyResult<Millis> {
    let py = value.py();
    let Ok(datetime) = value.cast::<PyDateTime>() else {
        let message = format!("must return a datetime, got {}", describe_type(value));
        return Err(reject(py, field, "type", message));
    };
    let aware =
        !datetime.getattr("tzinfo")?.is_none() && !value.call_method0("utcoffset")?.is_none();
    if !aware {
        let message = "must return an aware datetime (with a tzinfo, e.g. \
                       datetime.now(timezone.utc)); got a naive one"
            .to_owned();
        return Err(reject(py, field, "invalid", message));
    }
    let since_epoch = value.sub(epoch(py)?)?;
    let (days, seconds, micros) = delta_parts(since_epoch.cast::<PyDelta>()?)?;
    let ms = days * 86_400_000 + seconds * 1000 + micros / 1000;
    if ms > LATEST_NOW {
        let message = "must be before 9999-12-30T00:00:00Z, so that every lease and retry instant \
                       computed from it is a valid datetime"
            .to_owned();
        return Err(reject(py, field, "out_of_range", message));
    }
    Ok(ms)
}

/// 9999-12-30T00:00:00Z: a later `now` plus a lease (at most 12 h) or a backoff (at most 1 h)
/// could pass `datetime.max`, and the stored message could not be read back.
const LATEST_NOW: Millis = 253_402_128_000_000;

fn reject(py: Python<'_>, field: &'static str, code: &'static str, message: String) -> PyErr {
    crate::errors::to_py_err(
        py,
        &Error::Validation(vec![FieldError {
            field,
            code,
            message,
        }]),
    )
}

/// The system clock, in UTC milliseconds.
pub fn system_now() -> Millis {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
