//! The one mapping from [`deadletter::Error`] to the Python exceptions of `deadletter._errors`.

use deadletter::validate::{MAX_DELAY_MS, MAX_EXPIRES_IN_MS, MAX_LEASE_MS, MAX_TIME, MIN_TIME};
use deadletter::worker::MAX_WAIT_MS;
use deadletter::{Conflict, Error, FieldError};
use deadletter_postgres::MAX_TIMEOUT_MS;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Python module that defines the exception classes.
const ERRORS_MODULE: &str = "deadletter._errors";

/// One rejected argument as Python reports it (a `FieldError` dict): the core's field errors
/// restated in Python's terms, and the few the binding finds itself (such as an unknown key of an
/// `enqueue_many` item, whose name is the caller's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyField {
    /// The argument's Python name.
    pub field: String,
    /// The stable code: `type`, `empty`, `too_long`, `too_large`, `out_of_range`, `invalid`,
    /// `unknown`.
    pub code: &'static str,
    /// For humans; not stable.
    pub message: String,
    /// The position of the `enqueue_many` item it belongs to.
    pub index: Option<usize>,
}

/// Converts a core error into the matching `deadletter` exception (every variant, exhaustively):
/// `Validation` -> `ValidationError` (`.errors`), `NotFound` -> `NotFoundError` (`.queue`, `.id`),
/// `Conflict` -> `ConflictError` (`.id`, `.reason`, `.status`), `Store` -> `StoreError`.
pub fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    build(py, err).unwrap_or_else(|failure| failure)
}

/// A `ValidationError` listing `fields`.
pub fn validation_error(py: Python<'_>, fields: &[PyField]) -> PyErr {
    validation(py, fields).unwrap_or_else(|failure| failure)
}

fn validation(py: Python<'_>, fields: &[PyField]) -> PyResult<PyErr> {
    let described: Vec<String> = fields
        .iter()
        .map(|f| match f.index {
            Some(i) => format!("items[{i}].{}: {}", f.field, f.message),
            None => format!("{}: {}", f.field, f.message),
        })
        .collect();
    let errors = fields
        .iter()
        .map(|f| {
            let dict = PyDict::new(py);
            dict.set_item("field", &f.field)?;
            dict.set_item("code", f.code)?;
            dict.set_item("message", &f.message)?;
            if let Some(index) = f.index {
                dict.set_item("index", index)?;
            }
            Ok(dict)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let message = format!("validation failed: {}", described.join("; "));
    let exception = py
        .import(ERRORS_MODULE)?
        .getattr("ValidationError")?
        .call1((message, errors))?;
    Ok(PyErr::from_value(exception))
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let module = py.import(ERRORS_MODULE)?;
    let exception = match err {
        Error::Validation(fields) => {
            let fields: Vec<PyField> = fields.iter().map(python_field).collect();
            return validation(py, &fields);
        }
        Error::NotFound { queue, id } => {
            module
                .getattr("NotFoundError")?
                .call1((err.to_string(), queue, id))?
        }
        Error::Conflict(conflict) => {
            let (id, reason, status) = match conflict {
                Conflict::WrongStatus { id, status, .. } => {
                    (*id, "wrong_status", Some(status.as_str()))
                }
                Conflict::LeaseLost { id } => (*id, "lease_lost", None),
                Conflict::KeyTaken { id, .. } => (*id, "key_taken", None),
            };
            module
                .getattr("ConflictError")?
                .call1((err.to_string(), id, reason, status))?
        }
        Error::Store(_) => module.getattr("StoreError")?.call1((err.to_string(),))?,
    };
    Ok(PyErr::from_value(exception))
}

/// The core's fields in milliseconds and their Python names, which take seconds or a
/// `datetime.timedelta`, with the range (in milliseconds) that out-of-range messages restate.
const DURATIONS: [(&str, &str, (i64, i64)); 11] = [
    ("lease_ms", "lease", (1, MAX_LEASE_MS)),
    ("delay_ms", "delay", (0, MAX_DELAY_MS)),
    ("retry_in_ms", "retry_in", (0, MAX_DELAY_MS)),
    ("expires_in_ms", "expires_in", (1, MAX_EXPIRES_IN_MS)),
    ("older_than_ms", "older_than", (0, MAX_TIME - MIN_TIME)),
    ("initial_ms", "initial", (0, MAX_DELAY_MS)),
    ("cap_ms", "cap", (0, MAX_DELAY_MS)),
    ("poll_interval_ms", "poll_interval", (1, MAX_WAIT_MS)),
    ("shutdown_timeout_ms", "shutdown_timeout", (0, MAX_WAIT_MS)),
    ("connect_timeout_ms", "connect_timeout", (1, MAX_TIMEOUT_MS)),
    ("lock_timeout_ms", "lock_timeout", (1, MAX_TIMEOUT_MS)),
];

/// Fields whose Python argument has another name: the PostgreSQL store's `url` is `open`'s `path`.
const RENAMED: [(&str, &str); 1] = [("url", "path")];

/// A field error in Python's terms: the one table of renamed fields and restated messages.
/// Durations in milliseconds (`lease_ms`, ...) are seconds or a `timedelta` in Python
/// (`lease`, ...); instants are aware `datetime`s; null is `None`.
fn python_field(error: &FieldError) -> PyField {
    let (field, message) = if let Some((_, name, (min, max))) =
        DURATIONS.iter().find(|(core, ..)| *core == error.field)
    {
        let message = match error.code {
            "out_of_range" => format!(
                "must be between {} and {} seconds",
                seconds(*min),
                seconds(*max)
            ),
            _ => error
                .message
                .replace("an integer", "a number of seconds or a datetime.timedelta"),
        };
        ((*name).to_owned(), message)
    } else if deadletter::FilterArgs::INSTANTS.contains(&error.field) {
        let message = match error.code {
            "out_of_range" => {
                "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z".to_owned()
            }
            _ => error.message.replace("an integer", "an aware datetime"),
        };
        (error.field.to_owned(), message)
    } else if let Some((_, name)) = RENAMED.iter().find(|(core, _)| *core == error.field) {
        ((*name).to_owned(), error.message.clone())
    } else {
        (error.field.to_owned(), error.message.clone())
    };
    PyField {
        field,
        code: error.code,
        message: none_named(message),
        index: error.index,
    }
}

/// A message with the core's "got null" said in Python's word, `None` (issue 19: the core has
/// one null, which each language names).
fn none_named(message: String) -> String {
    match message.strip_suffix(", got null") {
        Some(start) => format!("{start}, got None"),
        None => message,
    }
}

/// Milliseconds as seconds, without trailing zeros: `1` -> `0.001`, `43200000` -> `43200`.
fn seconds(ms: i64) -> String {
    let (whole, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{frac:03}")
            .trim_end_matches('0')
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_restated_in_seconds() {
        let lease = python_field(&FieldError::new("lease_ms", "out_of_range", "x"));
        assert_eq!(
            (lease.field.as_str(), lease.message.as_str()),
            ("lease", "must be between 0.001 and 43200 seconds")
        );
        let delay = python_field(&FieldError::new(
            "delay_ms",
            "type",
            "must be an integer, got a str",
        ));
        assert_eq!(
            (delay.field.as_str(), delay.message.as_str()),
            (
                "delay",
                "must be a number of seconds or a datetime.timedelta, got a str"
            )
        );
        assert_eq!(seconds(MAX_TIME - MIN_TIME), "315537897599.999");
        let none = python_field(&FieldError::new(
            "payload",
            "type",
            "must be a string, got null",
        ));
        assert_eq!(none.message, "must be a string, got None");
        assert_eq!(seconds(MAX_DELAY_MS), "2592000");
    }
}
