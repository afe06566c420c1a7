//! JavaScript values as core [`Arg`]s, mapped without judging (the core applies every rule), the
//! way the WebAssembly binding maps them (`bindings-wasm/src/args.rs`), so that Node and browsers
//! reject the same inputs with the same fields and codes. They are read on the JavaScript thread
//! and owned, so that the call can move to a thread of the database's pool.

use deadletter::{Arg, Item};
use napi::bindgen_prelude::{Array, FromNapiValue, JsValue, Unknown};
use napi::{JsDate, JsString, ValueType};

/// An [`Arg`] that owns its string, so it can move to another thread.
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

/// How a string that is not well-formed UTF-16 is named in messages (`must be a string, got a
/// string with an unpaired surrogate`): the core rejects it with code `type`, as Python rejects a
/// `str` with a lone surrogate and the WebAssembly binding a string of the same kind.
pub const UNPAIRED_SURROGATE: &str = "a string with an unpaired surrogate";

impl OwnedArg {
    /// Maps `value`: undefined/null -> Null, boolean -> Bool, integer (`Number.isInteger`) ->
    /// `Int` within the range of `i64`, `BigInt` beyond, other numbers -> `Float`, well-formed
    /// string -> Str, anything else -> Other. Nothing is converted: a `Date`, a boxed number or an
    /// object is never turned into a string or a number, and a string with an unpaired surrogate
    /// is `Other`, never a lossy `Str`.
    pub fn from_js(value: Unknown<'_>) -> napi::Result<Self> {
        Ok(match value.get_type()? {
            ValueType::Undefined | ValueType::Null => Self::Null,
            ValueType::Boolean => Self::Bool(bool::from_unknown(value)?),
            ValueType::Number => Self::number(f64::from_unknown(value)?),
            ValueType::String => string(value)?.map_or(Self::Other(UNPAIRED_SURROGATE), Self::Str),
            _ => Self::Other(kind(value)?),
        })
    }

    /// A number: an integer within `i64` (-2^63..2^63, exclusive above) is `Int` (the cast is then
    /// exact), a larger one `BigInt`, anything else (fraction, NaN, infinity) `Float`.
    pub fn number(n: f64) -> Self {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
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
    pub fn instant(value: Unknown<'_>) -> napi::Result<Self> {
        if value.get_type()? == ValueType::Object && value.is_date()? {
            return Ok(Self::number(JsDate::from_unknown(value)?.value_of()?));
        }
        Self::from_js(value)
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

/// How an invalid `Date` (`new Date(NaN)`) is named in messages (`must be a Date or an integer
/// number of milliseconds since the epoch, got an invalid Date`), not as the float NaN its time
/// is (issue 19); the WebAssembly binding's name too.
pub const INVALID_DATE: &str = "an invalid Date";

/// The JavaScript string `value` as a Rust string, `None` when it holds an unpaired surrogate.
/// Node's UTF-8 conversion replaces each unpaired surrogate with U+FFFD, so that `"jobs-\ud800"`
/// and `"jobs-\udfff"` would become the same queue: only when the result holds a U+FFFD (rare)
/// is the string read again as UTF-16, which tells a genuine U+FFFD from a replaced surrogate.
fn string(value: Unknown<'_>) -> napi::Result<Option<String>> {
    let text = JsString::from_unknown(value)?;
    let utf8 = text.into_utf8()?.into_owned()?;
    if !utf8.contains('\u{FFFD}') {
        return Ok(Some(utf8));
    }
    // `as_str` leaves out the terminating NUL that `as_slice` holds; it fails on a lone surrogate.
    Ok(text.into_utf16()?.as_str().ok())
}

/// How a value that is not null, a boolean, a number or a string is named in messages (the
/// names of the WebAssembly binding; an invalid `Date`: [`INVALID_DATE`]).
pub fn kind(value: Unknown<'_>) -> napi::Result<&'static str> {
    Ok(match value.get_type()? {
        ValueType::BigInt => "a bigint",
        ValueType::Symbol => "a symbol",
        ValueType::Function => "a function",
        ValueType::Undefined | ValueType::Null => "null",
        ValueType::Boolean => "a bool",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        // Issue 19: an invalid `Date` (`new Date(NaN)`) is no instant, whatever its type.
        _ if value.is_date()? && JsDate::from_unknown(value)?.value_of()?.is_nan() => INVALID_DATE,
        _ if value.is_date()? => "a Date",
        _ if value.is_array()? => "an array",
        _ => "an object",
    })
}

/// The arguments of one message to enqueue (`payload`, `maxRetries`, `idempotencyKey`,
/// `delayMs`, `group`, `expiresInMs`), owned. The default has none: its payload is null.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedItem([OwnedArg; 6]);

impl Default for OwnedItem {
    fn default() -> Self {
        Self(std::array::from_fn(|_| OwnedArg::Null))
    }
}

impl OwnedItem {
    /// From the six values, in that order.
    pub fn from_js(values: [Unknown<'_>; 6]) -> napi::Result<Self> {
        let mut item = Self::default();
        for (slot, value) in item.0.iter_mut().zip(values) {
            *slot = OwnedArg::from_js(value)?;
        }
        Ok(item)
    }

    /// From a row `[payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs]` (what the
    /// package's `api.js` makes of each item of `enqueueMany`; missing ones are undefined); a value
    /// that is not an array is taken as a payload.
    pub fn from_row(row: Unknown<'_>) -> napi::Result<Self> {
        let mut item = Self::default();
        if row.get_type()? == ValueType::Object && row.is_array()? {
            let row = Array::from_unknown(row)?;
            for (i, slot) in (0..).zip(item.0.iter_mut()) {
                if let Some(value) = row.get::<Unknown<'_>>(i)? {
                    *slot = OwnedArg::from_js(value)?;
                }
            }
        } else {
            item.0[0] = OwnedArg::from_js(row)?;
        }
        Ok(item)
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
