//! The SQLite store's fork hooks (`deadletter_sqlite::fork`: wait for the calls in progress
//! before a fork, close the parent's connections in the child) registered with
//! `os.register_at_fork`. The rules are the store's; this file only wires them to Python.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `os.register_at_fork(before=...)`: waits for the SQLite calls in progress and holds new ones
/// back, without the GIL while it waits: a call in progress takes the GIL again to read a clock
/// given to `open` (the store reads it once it holds its write lock), and the other threads of
/// the process, which are not inside a SQLite call, keep running meanwhile (issue 23, item 3).
#[pyfunction]
fn before_fork(py: Python<'_>) {
    py.detach(deadletter_sqlite::fork::before_fork);
}

/// `os.register_at_fork(after_in_parent=...)`: lets the calls go on.
#[pyfunction]
fn after_fork_in_parent() {
    deadletter_sqlite::fork::after_fork_in_parent();
}

/// `os.register_at_fork(after_in_child=...)`: closes the parent's connections without a
/// checkpoint, then lets the calls go on.
#[pyfunction]
fn after_fork_in_child() {
    deadletter_sqlite::fork::after_fork_in_child();
}

/// Registers the three hooks with `os.register_at_fork` (absent on Windows, which has no fork).
pub fn install(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let os = module.py().import("os")?;
    let Ok(register) = os.getattr("register_at_fork") else {
        return Ok(());
    };
    let hooks = PyDict::new(module.py());
    hooks.set_item("before", wrap_pyfunction!(before_fork, module)?)?;
    hooks.set_item(
        "after_in_parent",
        wrap_pyfunction!(after_fork_in_parent, module)?,
    )?;
    hooks.set_item(
        "after_in_child",
        wrap_pyfunction!(after_fork_in_child, module)?,
    )?;
    register.call((), Some(&hooks))?;
    Ok(())
}
