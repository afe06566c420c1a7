//! JavaScript values at the edges of the binding: strings that do not convert exactly, and the
//! details of the errors (run in Node by `make test-js`; no IndexedDB needed).
#![cfg(target_arch = "wasm32")]

use deadletter::{Conflict, Error, FieldError, Status};
use deadletter_wasm::args::{INVALID_DATE, OwnedArg, UNPAIRED_SURROGATE, js_string};
use deadletter_wasm::errors;
use js_sys::{JsString, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

fn utf16(units: &[u16]) -> JsValue {
    JsString::from_char_code(units).into()
}

#[wasm_bindgen_test]
fn strings_with_an_unpaired_surrogate_are_not_strings() {
    let j = u16::from(b'j');
    for units in [
        &[0xd800][..],
        &[0xdfff],
        &[j, 0xd800],
        &[j, 0xdfff],
        &[0xd83d, j],      // a high surrogate followed by no low one
        &[0xde00, 0xd83d], // a pair in the wrong order
    ] {
        let value = utf16(units);
        assert_eq!(js_string(&value), None, "{units:x?}");
        assert_eq!(
            OwnedArg::from_js(&value),
            OwnedArg::Other(UNPAIRED_SURROGATE),
            "{units:x?}"
        );
    }
    // Well-formed strings convert exactly, a genuine U+FFFD and a surrogate pair included.
    for (units, expected) in [
        (&[0xfffd][..], "\u{fffd}"),
        (&[j, 0xfffd, j], "j\u{fffd}j"),
        (&[0xd83d, 0xde00], "\u{1f600}"),
        (&[], ""),
    ] {
        assert_eq!(js_string(&utf16(units)).as_deref(), Some(expected));
        assert_eq!(
            OwnedArg::from_js(&utf16(units)),
            OwnedArg::Str(expected.into())
        );
    }
    assert_eq!(js_string(&JsValue::from_f64(1.0)), None);
}

fn get(error: &JsValue, key: &str) -> JsValue {
    Reflect::get(error, &key.into()).expect("readable")
}

fn has(error: &JsValue, key: &str) -> bool {
    Reflect::has(error, &key.into()).expect("an object")
}

/// `errors::to_js` without the registered class (as here) builds a plain `Error` with the same
/// properties as `DeadLetterError`.
#[wasm_bindgen_test]
fn errors_carry_their_details_and_only_those_that_apply() {
    let not_found = errors::to_js(&Error::NotFound {
        queue: "jobs".into(),
        id: 7,
    });
    assert_eq!(get(&not_found, "code"), "not_found");
    assert_eq!(get(&not_found, "queue"), "jobs");
    assert_eq!(get(&not_found, "id"), 7.0);
    assert!(!has(&not_found, "reason") && !has(&not_found, "status"));

    let wrong = errors::to_js(&Error::Conflict(Conflict::WrongStatus {
        id: 3,
        status: Status::Succeeded,
        operation: "succeed",
    }));
    assert_eq!(get(&wrong, "code"), "conflict");
    assert_eq!(get(&wrong, "reason"), "wrong_status");
    assert_eq!(get(&wrong, "id"), 3.0);
    assert_eq!(get(&wrong, "status"), "succeeded");
    assert!(!has(&wrong, "queue"));

    let lost = errors::to_js(&Error::Conflict(Conflict::LeaseLost { id: 4 }));
    assert_eq!(get(&lost, "reason"), "lease_lost");
    assert_eq!(get(&lost, "id"), 4.0);
    assert!(!has(&lost, "status") && !has(&lost, "queue"));

    let invalid = errors::to_js(&Error::Validation(vec![FieldError::new(
        "payload",
        "type",
        format!("must be a string, got {UNPAIRED_SURROGATE}"),
    )]));
    let store = errors::to_js(&Error::Store("disk full".into()));
    for error in [invalid, store] {
        for key in ["reason", "id", "status", "queue"] {
            assert!(!has(&error, key), "{key}");
        }
    }
}

/// Integers are integers whatever their size, as in Python: within `i64` they are `Int` (also past
/// 2^53), beyond it `BigInt`; fractions and non-finite numbers stay `Float`.
#[wasm_bindgen_test]
fn numbers_map_by_value_not_by_safety() {
    let two_53 = 9_007_199_254_740_992.0;
    let two_63 = 9_223_372_036_854_775_808.0;
    for (n, expected) in [
        (0.0, OwnedArg::Int(0)),
        (-0.0, OwnedArg::Int(0)),
        (two_53, OwnedArg::Int(1 << 53)),
        (-two_63, OwnedArg::Int(i64::MIN)),
        (two_63 - 1024.0, OwnedArg::Int(i64::MAX - 1023)),
        (two_63, OwnedArg::BigInt),
        (-two_63 * 2.0, OwnedArg::BigInt),
        (1e300, OwnedArg::BigInt),
        (1.5, OwnedArg::Float(1.5)),
        (f64::INFINITY, OwnedArg::Float(f64::INFINITY)),
    ] {
        assert_eq!(OwnedArg::from_js(&JsValue::from_f64(n)), expected, "{n}");
    }
    assert!(
        matches!(OwnedArg::from_js(&JsValue::from_f64(f64::NAN)), OwnedArg::Float(f) if f.is_nan())
    );
    // Instants: a Date is its milliseconds; an invalid one is NaN, a float. As a value (a
    // filter's, which js/api.js leaves as it is), an invalid Date is named so (issue 19: it read
    // "a float", the NaN of its time).
    let date = js_sys::Date::new(&JsValue::from_f64(-1500.0));
    assert_eq!(
        OwnedArg::instant(&date.clone().into()),
        OwnedArg::Int(-1500)
    );
    let invalid: JsValue = js_sys::Date::new(&JsValue::from_str("not a date")).into();
    assert!(matches!(OwnedArg::instant(&invalid), OwnedArg::Float(f) if f.is_nan()));
    assert_eq!(OwnedArg::from_js(&invalid), OwnedArg::Other(INVALID_DATE));
    assert_eq!(OwnedArg::from_js(&date.into()), OwnedArg::Other("a Date"));
    assert_eq!(OwnedArg::instant(&JsValue::from_f64(7.0)), OwnedArg::Int(7));
}
