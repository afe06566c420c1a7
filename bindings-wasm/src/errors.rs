//! `deadletter::Error` -> JavaScript `DeadLetterError`, in one exhaustive match.
//!
//! The class itself is defined in `js/errors.js` and registered at start-up by `js/index.js`
//! (`setErrorClass`), so that `instanceof` works with the very class the package exports. Before
//! registration (Rust tests) a plain `Error` with the same `name`, `code`, `errors` and details
//! (`reason`, `id`, `status`, `queue`) is built.

use std::cell::RefCell;

use deadletter::{Conflict, Error, FieldError};
use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::names::{js_field, js_message};

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the `DeadLetterError` class that every rejection is an instance of; called once by
/// the package's entry module.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(class: Function) {
    ERROR_CLASS.with(|cell| *cell.borrow_mut() = Some(class));
}

/// The stable error codes of the core (`deadletter::CODES`), exported as `CODES` by the package.
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Array {
    deadletter::CODES
        .iter()
        .map(|c| JsValue::from_str(c))
        .collect()
}

fn set(object: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(object, &JsValue::from_str(key), value);
}

#[allow(clippy::cast_precision_loss)] // ids are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn field_error(error: &FieldError) -> JsValue {
    let object = Object::new();
    set(&object, "field", &js_field(error.field).into());
    set(&object, "code", &error.code.into());
    set(
        &object,
        "message",
        &js_message(error.field, &error.message).into(),
    );
    if let Some(index) = error.index {
        #[allow(clippy::cast_precision_loss)] // a batch index is small
        set(&object, "index", &JsValue::from_f64(index as f64));
    }
    object.into()
}

/// The `DeadLetterError` for `error`: `code` is the core's stable code; for validation, `errors`
/// lists `{ field, code, message }` with the JavaScript field names, and `index` for a field of
/// an `enqueueMany` item (else it is empty). The
/// structured details of Python's `NotFoundError` and `ConflictError` are properties too, set only
/// where they apply (absent otherwise):
/// - `not_found`: `queue` (the queue searched) and `id`;
/// - `conflict`: `reason` (`"wrong_status"` or `"lease_lost"`), `id`, and for `wrong_status`
///   `status`, the message's current status.
pub fn to_js(error: &Error) -> JsValue {
    let details = Object::new();
    let (message, fields) = match error {
        Error::Validation(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| {
                    let message = js_message(f.field, &f.message);
                    match f.index {
                        Some(i) => format!("items[{i}].{}: {message}", js_field(f.field)),
                        None => format!("{}: {message}", js_field(f.field)),
                    }
                })
                .collect();
            (
                format!("validation failed: {}", parts.join("; ")),
                fields.as_slice(),
            )
        }
        Error::NotFound { queue, id } => {
            set(&details, "queue", &queue.as_str().into());
            set(&details, "id", &number(*id));
            (error.to_string(), &[][..])
        }
        Error::Conflict(conflict) => {
            match conflict {
                Conflict::WrongStatus {
                    id,
                    status,
                    operation: _,
                } => {
                    set(&details, "reason", &"wrong_status".into());
                    set(&details, "id", &number(*id));
                    set(&details, "status", &status.as_str().into());
                }
                Conflict::LeaseLost { id } => {
                    set(&details, "reason", &"lease_lost".into());
                    set(&details, "id", &number(*id));
                }
            }
            (error.to_string(), &[][..])
        }
        Error::Store(_) => (error.to_string(), &[][..]),
    };
    let errors: Array = fields.iter().map(field_error).collect();
    set(&details, "code", &error.code().into());
    set(&details, "errors", &errors);
    let class = ERROR_CLASS.with(|cell| cell.borrow().clone());
    let args: Array = [JsValue::from_str(&message), details.clone().into()]
        .into_iter()
        .collect();
    if let Some(built) = class.and_then(|class| Reflect::construct(&class, &args).ok()) {
        return built;
    }
    let fallback = js_sys::Error::new(&message);
    fallback.set_name("DeadLetterError");
    // The same own properties as the registered class sets: `code`, `errors` and the details.
    let _ = Object::assign(&fallback, &details);
    fallback.into()
}
