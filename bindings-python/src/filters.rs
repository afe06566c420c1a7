//! The filters of `Queue.list` and of the bulk actions (`replay_all`, `delete_all`,
//! `retry_now_all`), given as keyword arguments: each named in the core's
//! [`FilterArgs::NAMES`], mapped like every other argument ([`Value`]; the instants, `*_after`
//! and `*_before`, as aware `datetime`s by [`Value::bound`]), then handed to the core, which
//! checks them all and reports every rejected one together.

use deadletter::FilterArgs;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::Value;

/// The filters of one call, owned before the GIL is released.
#[derive(Debug, Default)]
pub struct Filters {
    values: Vec<(&'static str, Value)>,
}

impl Filters {
    /// The filters given to `method` as keywords (`given`), plus `status` when the method takes
    /// it as a parameter of its own (`list`). A keyword that names no filter is a `TypeError`,
    /// as Python raises for any unexpected keyword argument.
    pub fn new(
        method: &str,
        status: Option<&Bound<'_, PyAny>>,
        given: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut values = Vec::new();
        if let Some(status) = status {
            values.push(("status", Value::from_py(Some(status))));
        }
        for (key, value) in given.into_iter().flat_map(PyDictMethods::iter) {
            let key: String = key.extract()?;
            let Some(name) = FilterArgs::NAMES.iter().copied().find(|n| *n == key) else {
                return Err(PyTypeError::new_err(format!(
                    "Queue.{method}() got an unexpected keyword argument '{key}' (the filters: \
                     {})",
                    FilterArgs::NAMES.join(", ")
                )));
            };
            let value = if name.ends_with("_after") || name.ends_with("_before") {
                Value::bound(Some(&value))?
            } else {
                Value::from_py(Some(&value))
            };
            values.push((name, value));
        }
        Ok(Self { values })
    }

    /// The core's arguments, borrowing these values.
    pub fn args(&self) -> FilterArgs<'_> {
        let mut args = FilterArgs::default();
        for (name, value) in &self.values {
            let known = args.set(name, value.arg());
            debug_assert!(known, "{name} is one of FilterArgs::NAMES");
        }
        args
    }
}

/// The arguments of a bulk action: its filters, `limit` and `dry_run`.
#[derive(Debug)]
pub struct Bulk {
    filters: Filters,
    limit: Value,
    dry_run: Value,
}

impl Bulk {
    /// The arguments given to the bulk action `method`.
    pub fn new(
        method: &str,
        limit: Option<&Bound<'_, PyAny>>,
        dry_run: Option<&Bound<'_, PyAny>>,
        filters: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        Ok(Self {
            filters: Filters::new(method, None, filters)?,
            limit: Value::from_py(limit),
            dry_run: Value::from_py(dry_run),
        })
    }

    /// The core's arguments: the filters, `limit` and `dry_run`.
    pub fn args(&self) -> (FilterArgs<'_>, deadletter::Arg<'_>, deadletter::Arg<'_>) {
        (self.filters.args(), self.limit.arg(), self.dry_run.arg())
    }
}
