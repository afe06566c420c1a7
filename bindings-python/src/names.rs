//! Queue names and texts as people see them, by the core's rule (`deadletter::shown`): what the
//! CLI's tables and the HTTP API's problem details show (`_deadletter.printable`), `repr` of a
//! message, a queue and its statistics (`literal`), and the check of a name that would make a new queue
//! (`_deadletter.check_new_queue`, for the HTTP API's routes that create one).

use deadletter::shown::{escape, shown};
use deadletter::{EnqueueArgs, Limits};
use pyo3::prelude::*;

use crate::convert::Value;
use crate::errors::to_py_err;

/// `text` with every character that a new queue name refuses as a control or invisible one
/// escaped as Python writes it (`\n`, `\x1b`, `\u202e`, `\U000e0041`: the core's `escape`, as its
/// error messages write them), every other one as it is: the joiners, the variation selectors and
/// the tags of the flags of England, Scotland and Wales too. What the CLI's tables and the HTTP
/// API's problem details show (`deadletter._invisible`).
#[pyfunction]
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (c, hidden) in shown(text) {
        if hidden {
            let _ = escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as a Python string literal in `repr`: in single quotes (double quotes when it holds a
/// single quote and no double one, as Python chooses), the quote and `\` escaped, and the
/// characters `printable` escapes.
pub fn literal(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for (c, hidden) in shown(text) {
        if c == quote || c == '\\' {
            out.push('\\');
            out.push(c);
        } else if hidden {
            let _ = escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out.push(quote);
    out
}

/// Raises `ValidationError` (`invalid` on `queue`, or `type`, `empty`, `too_long`) when `name`
/// cannot name a new queue: the rule of `Queue.enqueue`'s queue (no control or invisible
/// character, something visible, no white space at either end, not `.` or `..`). Stores nothing.
#[pyfunction]
pub fn check_new_queue(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = Value::from_py(Some(name));
    EnqueueArgs::new(&name.arg(), &[], false, &Limits::default())
        .map(|_| ())
        .map_err(|err| to_py_err(py, &err))
}

/// Adds `printable` and `check_new_queue` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(printable, m)?)?;
    m.add_function(wrap_pyfunction!(check_new_queue, m)?)
}
