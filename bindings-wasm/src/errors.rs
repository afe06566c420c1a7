//! `deadletter::Error` -> JavaScript `DeadLetterError`, in one exhaustive match.
//!
//! The class itself is defined in `js/errors.js` and registered at start-up by `js/index.js`
//! (`setErrorClass`), so that `instanceof` works with the very class the package exports. Before
//! registration (Rust tests) a plain `Error` with the same `name`, `code`, `errors` and details
//! (`reason`, `id`, `status`, `queue`) is built.

use std::cell::RefCell;

use deadletter::{Conflict, Error, FieldError};
use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the `DeadLetterError` class that every rejection is an instance of; called once by
/// the package's entry module.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(class: Function) {
    // `try_with`, not `with`: the latter's panic links the formatting of `Debug` (about 500 bytes
    // of the size budget); on wasm32 without threads the slot is always there.
    let _ = ERROR_CLASS.try_with(|cell| *cell.borrow_mut() = Some(class));
}

/// The stable error codes of the core (`deadletter::CODES`), exported as `CODES` by the package.
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Array {
    let out = Array::new();
    for code in deadletter::CODES {
        out.push(&JsValue::from_str(code));
    }
    out
}

// The objects are made by js/store/record.js (see src/record.rs).
#[wasm_bindgen(module = "/js/store/record.js")]
extern "C" {
    /// One rejected field: `{ field, code, message }` (the field and its message in JavaScript's
    /// terms: see `crate::names`), and `index` when not undefined.
    #[wasm_bindgen(js_name = fieldError)]
    fn field_error_object(field: &str, code: &str, message: &str, index: &JsValue) -> JsValue;

    /// The error: an instance of `class` (a plain `Error` named like it when `class` is
    /// undefined), its message composed from `errors` when `message` is null.
    #[wasm_bindgen(js_name = deadLetterError)]
    #[allow(clippy::too_many_arguments)]
    fn error_object(
        class: &JsValue,
        message: &JsValue,
        code: &str,
        errors: &Array,
        reason: &JsValue,
        id: &JsValue,
        status: &JsValue,
        queue: &JsValue,
    ) -> JsValue;
}

#[allow(clippy::cast_precision_loss)] // ids are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn field_error(error: &FieldError) -> JsValue {
    #[allow(clippy::cast_precision_loss)] // a batch index is small
    let index = error
        .index
        .map_or(JsValue::UNDEFINED, |i| JsValue::from_f64(i as f64));
    field_error_object(error.field, error.code, &error.message, &index)
}

/// The `DeadLetterError` for `error`: `code` is the core's stable code; for validation, `errors`
/// lists `{ field, code, message }` with the JavaScript field names, and `index` for a field of
/// an `enqueueMany` item (else it is empty), and the message is composed from them
/// (`validation failed: field: message; ...`, by `js/store/record.js`, as the package's own
/// validation errors are). The structured details of Python's `NotFoundError` and
/// `ConflictError` are properties too, set only where they apply (absent otherwise):
/// - `not_found`: `queue` (the queue searched) and `id`;
/// - `conflict`: `reason` (`"wrong_status"` or `"lease_lost"`), `id`, and for `wrong_status`
///   `status`, the message's current status.
pub fn to_js(error: &Error) -> JsValue {
    let none = || JsValue::UNDEFINED;
    let (mut reason, mut id, mut status, mut queue) = (none(), none(), none(), none());
    let errors = Array::new();
    match error {
        Error::Validation(fields) => {
            for field in fields {
                errors.push(&field_error(field));
            }
        }
        Error::NotFound { queue: q, id: i } => {
            queue = q.as_str().into();
            id = number(*i);
        }
        Error::Conflict(Conflict::WrongStatus {
            id: i, status: s, ..
        }) => {
            reason = "wrong_status".into();
            id = number(*i);
            status = s.as_str().into();
        }
        Error::Conflict(Conflict::LeaseLost { id: i }) => {
            reason = "lease_lost".into();
            id = number(*i);
        }
        Error::Conflict(Conflict::KeyTaken { id: i, .. }) => {
            reason = "key_taken".into();
            id = number(*i);
        }
        Error::Store(_) => {}
    }
    let message = if errors.length() > 0 {
        JsValue::NULL
    } else {
        error.to_string().into()
    };
    let class = ERROR_CLASS
        .try_with(|cell| cell.borrow().clone())
        .ok()
        .flatten();
    let class = class.map_or(JsValue::UNDEFINED, JsValue::from);
    error_object(
        &class,
        &message,
        error.code(),
        &errors,
        &reason,
        &id,
        &status,
        &queue,
    )
}
