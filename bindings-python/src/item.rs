//! One `enqueue` or `enqueue_many` item, converted from Python with the GIL held, before the
//! call releases it.

use deadletter::Item;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::Value;
use crate::errors::PyField;

/// The keys an `enqueue_many` item may have, besides none.
const ITEM_KEYS: [&str; 6] = [
    "payload",
    "max_retries",
    "idempotency_key",
    "delay",
    "group",
    "expires_in",
];

/// One `enqueue` or `enqueue_many` item, converted with the GIL held.
#[derive(Debug, Default)]
pub struct OwnedItem {
    /// The payload.
    pub payload: Value,
    /// `max_retries`.
    pub max_retries: Value,
    /// `idempotency_key`.
    pub idempotency_key: Value,
    /// `delay`, in milliseconds.
    pub delay: Value,
    /// `group`.
    pub group: Value,
    /// `expires_in`, in milliseconds.
    pub expires_in: Value,
}

impl OwnedItem {
    /// The item as the engine takes it.
    pub fn item(&self) -> Item<'_> {
        Item {
            payload: self.payload.arg(),
            max_retries: self.max_retries.arg(),
            idempotency_key: self.idempotency_key.arg(),
            delay_ms: self.delay.arg(),
            group: self.group.arg(),
            expires_in_ms: self.expires_in.arg(),
        }
    }

    /// An `enqueue_many` item: a dict with some of [`ITEM_KEYS`] (another key is an `unknown`
    /// field of item `index`, added to `unknown`), else the payload itself.
    pub fn from_item(
        value: &Bound<'_, PyAny>,
        index: usize,
        unknown: &mut Vec<PyField>,
    ) -> PyResult<Self> {
        let Ok(dict) = value.cast::<PyDict>() else {
            return Ok(Self {
                payload: Value::from_py(Some(value)),
                ..Self::default()
            });
        };
        for key in dict.keys() {
            if !key
                .extract::<String>()
                .is_ok_and(|k| ITEM_KEYS.contains(&k.as_str()))
            {
                let field = key.str().map_or_else(|_| "?".to_owned(), |s| s.to_string());
                let message = format!(
                    "is not a key of an item (expected {})",
                    ITEM_KEYS.join(", ")
                );
                unknown.push(PyField {
                    field,
                    code: "unknown",
                    message,
                    index: Some(index),
                });
            }
        }
        Ok(Self {
            payload: Value::from_py(dict.get_item("payload")?.as_ref()),
            max_retries: Value::from_py(dict.get_item("max_retries")?.as_ref()),
            idempotency_key: Value::from_py(dict.get_item("idempotency_key")?.as_ref()),
            delay: Value::duration(dict.get_item("delay")?.as_ref())?,
            group: Value::from_py(dict.get_item("group")?.as_ref()),
            expires_in: Value::duration(dict.get_item("expires_in")?.as_ref())?,
        })
    }
}
