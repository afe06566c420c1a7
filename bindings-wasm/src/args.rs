//! JavaScript values as core [`Arg`]s, mapped without judging: the core applies every rule.

use deadletter::{Arg, Item};
use js_sys::{Array, Date};
use wasm_bindgen::{JsCast, JsValue};

/// An [`Arg`] that owns its string, so it can move into a future.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedArg {
    /// `undefined` or `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number that is an integer within the range of `i64` (beyond 2^53 too: `2**53` is an
    /// integer to JavaScript, as it is to Python).
    Int(i64),
    /// A number that is an integer beyond the range of `i64` (`2**64`), like Python's big ints.
    BigInt,
    /// Any other number: with a fraction, NaN or infinite.
    Float(f64),
    /// A string that is well-formed UTF-16 (no unpaired surrogate).
    Str(String),
    /// Anything else, by its name for messages (`a Date`, `an object`, `a bigint`...).
    Other(&'static str),
}

impl OwnedArg {
    /// Maps `value`: undefined/null -> Null, boolean -> Bool, integer (`Number.isInteger`) ->
    /// `Int` within the range of `i64`, `BigInt` beyond, other numbers -> `Float`, well-formed string
    /// -> Str, anything else -> Other. Nothing is converted (a `Date`, a boxed number or an object
    /// is never turned into a string or a number), and a string with an unpaired surrogate is
    /// `Other` (see [`js_string`]), never a lossy `Str`.
    pub fn from_js(value: &JsValue) -> Self {
        if value.is_undefined() || value.is_null() {
            Self::Null
        } else if let Some(b) = value.as_bool() {
            Self::Bool(b)
        } else if let Some(n) = value.as_f64() {
            Self::number(n)
        } else if value.is_string() {
            js_string(value).map_or(Self::Other(UNPAIRED_SURROGATE), Self::Str)
        } else {
            Self::Other(kind(value))
        }
    }

    /// A number: an integer within `i64` (-2^63..2^63, exclusive above) is `Int` (the cast is then
    /// exact), a larger one `BigInt`, anything else (fraction, NaN, infinity) `Float`.
    pub fn number(n: f64) -> Self {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        // `Number.isInteger(n)`.
        if !(n.is_finite() && n.fract() == 0.0) {
            Self::Float(n)
        } else if (-TWO_63..TWO_63).contains(&n) {
            #[allow(clippy::cast_possible_truncation)]
            Self::Int(n as i64)
        } else {
            Self::BigInt
        }
    }

    /// An instant: a `Date` is its time in milliseconds since the epoch (an invalid `Date` is
    /// NaN, so a type error), anything else maps as [`OwnedArg::from_js`] (a number of
    /// milliseconds).
    pub fn instant(value: &JsValue) -> Self {
        match value.dyn_ref::<Date>() {
            Some(date) => Self::number(date.get_time()),
            None => Self::from_js(value),
        }
    }

    /// The borrowed [`Arg`] for the core.
    pub fn arg(&self) -> Arg<'_> {
        match self {
            Self::Null => Arg::Null,
            Self::Bool(b) => Arg::Bool(*b),
            Self::Int(n) => Arg::Int(*n),
            Self::BigInt => Arg::BigInt,
            Self::Float(f) => Arg::Float(*f),
            Self::Str(s) => Arg::Str(s),
            Self::Other(name) => Arg::Other(name),
        }
    }
}

/// `[OwnedArg::from_js(a), OwnedArg::from_js(b), ...]`: the arguments of one call, each mapped
/// in place. Not `[a, b].map(OwnedArg::from_js)`: the module got a copy of `array::map` for each
/// length (about 170 bytes each; issue 20, the size budget).
macro_rules! owned_args {
    ($($value:expr),+ $(,)?) => {
        [$($crate::args::OwnedArg::from_js($value)),+]
    };
}
pub(crate) use owned_args;

/// Every value of `row` from index 0, mapped into `out` in place (not `array::from_fn`, a copy
/// of which each length would cost the module; issue 20).
pub fn fill(out: &mut [OwnedArg], row: &Array) {
    for (i, value) in (0..).zip(out.iter_mut()) {
        *value = OwnedArg::from_js(&row.get(i));
    }
}

/// How a string that is not well-formed UTF-16 is named in messages (`must be a string, got a
/// string with an unpaired surrogate`): the core rejects it with code `type`, as Python rejects a
/// `str` with a lone surrogate.
pub const UNPAIRED_SURROGATE: &str = "a string with an unpaired surrogate";

/// How an invalid `Date` (`new Date(NaN)`) is named in messages (`must be a Date or an integer
/// number of milliseconds since the epoch, got an invalid Date`), not as the float NaN its time
/// is (issue 19).
pub const INVALID_DATE: &str = "an invalid Date";

/// `value` as a Rust string when it is a string that converts exactly; `None` when it is not a
/// string or holds an unpaired surrogate (`"\ud800"`).
///
/// `JsValue::as_string` is lossy: the UTF-8 encoding replaces each unpaired surrogate with U+FFFD,
/// so `"jobs-\ud800"` and `"jobs-\udfff"` would become the same queue. Such a replacement can
/// only show up as a U+FFFD in the result; then (only then, so no second pass in the usual case)
/// the result is turned back into a JavaScript string and compared with the original (`===`),
/// which tells a genuine U+FFFD from a replaced surrogate in one native comparison, unlike
/// `JsString::is_valid_utf16`, which crosses into JavaScript once per code unit.
pub fn js_string(value: &JsValue) -> Option<String> {
    let s = value.as_string()?;
    if s.chars().any(|c| c == '\u{FFFD}') && JsValue::from_str(&s) != *value {
        None
    } else {
        Some(s)
    }
}

/// How a non-primitive (or bigint/symbol) value is named in messages (an invalid `Date`:
/// [`INVALID_DATE`]).
pub fn kind(value: &JsValue) -> &'static str {
    if value.is_bigint() {
        "a bigint"
    } else if value.is_symbol() {
        "a symbol"
    } else if value.is_function() {
        "a function"
    } else if let Some(date) = value.dyn_ref::<Date>() {
        // Issue 19: an invalid `Date` (`new Date(NaN)`) is no instant, whatever its type.
        if date.get_time().is_nan() {
            INVALID_DATE
        } else {
            "a Date"
        }
    } else if Array::is_array(value) {
        "an array"
    } else if value.is_null() || value.is_undefined() {
        "null"
    } else if value.as_bool().is_some() {
        "a bool"
    } else if value.as_f64().is_some() {
        "a number"
    } else if value.is_string() {
        "a string"
    } else {
        "an object"
    }
}

/// Reads the value of a JavaScript object's property; `undefined` when `object` is not an object.
pub fn prop(object: &JsValue, key: &str) -> JsValue {
    if object.is_object() || object.is_function() {
        js_sys::Reflect::get(object, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

/// `value` as a function when it is one.
pub fn function(value: &JsValue) -> Option<js_sys::Function> {
    value.dyn_ref::<js_sys::Function>().cloned()
}

/// The arguments of one message to enqueue (`payload`, `maxRetries`, `idempotencyKey`,
/// `delayMs`, `group`, `expiresInMs`), owned.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedItem([OwnedArg; 6]);

impl OwnedItem {
    /// From a row `[payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs]` (what
    /// `js/api.js` makes of the arguments of `enqueue` and of each item of `enqueueMany`); a
    /// value that is not an array is taken as a payload.
    pub fn from_row(row: &JsValue) -> Self {
        let mut args = [const { OwnedArg::Null }; 6];
        if Array::is_array(row) {
            fill(&mut args, row.unchecked_ref());
        } else {
            args[0] = OwnedArg::from_js(row);
        }
        Self(args)
    }

    /// The core's [`Item`].
    pub fn item(&self) -> Item<'_> {
        let [
            payload,
            max_retries,
            idempotency_key,
            delay_ms,
            group,
            expires_in_ms,
        ] = &self.0;
        Item {
            payload: payload.arg(),
            max_retries: max_retries.arg(),
            idempotency_key: idempotency_key.arg(),
            delay_ms: delay_ms.arg(),
            group: group.arg(),
            expires_in_ms: expires_in_ms.arg(),
        }
    }
}
