//! The one mapping from [`deadletter::Error`] to the Python exceptions of `deadletter._errors`.

use deadletter::{Conflict, Error, FieldError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Python module that defines the exception classes.
const ERRORS_MODULE: &str = "deadletter._errors";

/// Converts a core error into the matching `deadletter` exception (every variant, exhaustively):
/// `Validation` -> `ValidationError` (`.errors`), `NotFound` -> `NotFoundError` (`.queue`, `.id`),
/// `Conflict` -> `ConflictError` (`.id`, `.reason`, `.status`), `Store` -> `StoreError`.
pub fn to_py_err(py: Python<'_>, err: &Error) -> PyErr {
    build(py, err).unwrap_or_else(|failure| failure)
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let module = py.import(ERRORS_MODULE)?;
    let exception = match err {
        Error::Validation(fields) => {
            let fields: Vec<(&str, &str, String)> = fields.iter().map(python_field).collect();
            let described: Vec<String> = fields
                .iter()
                .map(|(field, _, message)| format!("{field}: {message}"))
                .collect();
            let errors = fields
                .into_iter()
                .map(|(field, code, message)| {
                    let dict = PyDict::new(py);
                    dict.set_item("field", field)?;
                    dict.set_item("code", code)?;
                    dict.set_item("message", message)?;
                    Ok(dict)
                })
                .collect::<PyResult<Vec<_>>>()?;
            let message = format!("validation failed: {}", described.join("; "));
            module
                .getattr("ValidationError")?
                .call1((message, errors))?
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
            };
            module
                .getattr("ConflictError")?
                .call1((err.to_string(), id, reason, status))?
        }
        Error::Store(_) => module.getattr("StoreError")?.call1((err.to_string(),))?,
    };
    Ok(PyErr::from_value(exception))
}

/// A field error in Python's terms: the core's `lease_ms` (integer milliseconds) is the
/// binding's `lease` (seconds or a `timedelta`), so its name and messages are restated.
fn python_field(error: &FieldError) -> (&'static str, &'static str, String) {
    match (error.field, error.code) {
        ("lease_ms", "out_of_range") => (
            "lease",
            error.code,
            "must be between 0.001 and 43200 seconds (12 hours)".to_owned(),
        ),
        ("lease_ms", _) => (
            "lease",
            error.code,
            error
                .message
                .replace("an integer", "a number of seconds or a datetime.timedelta"),
        ),
        (field, code) => (field, code, error.message.clone()),
    }
}
