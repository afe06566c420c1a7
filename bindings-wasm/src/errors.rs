//! `deadletter::Error` -> JavaScript `DeadLetterError`, in one exhaustive match.
//!
//! The class itself is defined in `js/errors.js` and registered at start-up by `js/index.js`
//! (`setErrorClass`), so that `instanceof` works with the very class the package exports. Before
//! registration (Rust tests) a plain `Error` with the same `name`, `code` and `errors` is built.

use std::cell::RefCell;

use deadletter::{Error, FieldError};
use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::names::js_field;

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

fn field_error(error: &FieldError) -> JsValue {
    let object = Object::new();
    set(&object, "field", &js_field(error.field).into());
    set(&object, "code", &error.code.into());
    set(&object, "message", &error.message.as_str().into());
    object.into()
}

/// The `DeadLetterError` for `error`: `code` is the core's stable code; for validation, `errors`
/// lists `{ field, code, message }` with the JavaScript field names (else it is empty).
pub fn to_js(error: &Error) -> JsValue {
    let (message, fields) = match error {
        Error::Validation(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", js_field(f.field), f.message))
                .collect();
            (
                format!("validation failed: {}", parts.join("; ")),
                fields.as_slice(),
            )
        }
        Error::NotFound { .. } | Error::Conflict(_) | Error::Store(_) => {
            (error.to_string(), &[][..])
        }
    };
    let errors: Array = fields.iter().map(field_error).collect();
    let details = Object::new();
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
    set(&fallback, "code", &error.code().into());
    set(&fallback, "errors", &errors);
    fallback.into()
}
