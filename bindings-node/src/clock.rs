//! The clock of a database: the system clock, or the user's `clock` option, a JavaScript function.
//!
//! The store reads the clock once it holds its write lock (a read reads it when it starts), on a
//! thread of the database's pool. The system clock is read there; the user's function can only
//! run on the JavaScript thread, so the pool thread asks it through a thread-safe function and
//! waits for the answer (the JavaScript thread is free: every call of the package is
//! asynchronous). What the function returns is judged there: a `Date` or a finite number of
//! milliseconds (floored), else a `type` error on field `clock`; what it throws is kept, and the
//! call rejects with that very value once the store has rolled back.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{SystemTime, UNIX_EPOCH};

use deadletter::{Error, FieldError, Millis, Result};
use napi::bindgen_prelude::{FromNapiValue, Function, JsValue, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{JsDate, Status, ValueType};

use crate::args::kind;

/// The user's clock as the pool threads call it: weak (it does not keep Node's event loop
/// alive), errors thrown by it handed to the caller.
type UserClock = ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>;

/// Where a database's instants come from.
pub enum Clock {
    /// `Date.now()`'s clock, read on the calling thread.
    System,
    /// The user's function.
    User(UserClock),
}

impl Clock {
    /// The clock of the `clock` option: the system's without one.
    pub fn new(user: Option<Function<'_, (), Unknown<'static>>>) -> napi::Result<Self> {
        Ok(match user {
            None => Self::System,
            Some(function) => Self::User(
                function
                    .build_threadsafe_function()
                    .callee_handled::<false>()
                    .weak::<true>()
                    .build()?,
            ),
        })
    }

    /// Reads the clock (on any thread). When the user's function throws, the error is put in
    /// `thrown` (the first one only) and the call fails with a store error, which the caller
    /// replaces with it.
    pub fn read(&self, thrown: &Mutex<Option<napi::Error>>) -> Result<Millis> {
        let user = match self {
            Self::System => return Ok(system_now()),
            Self::User(user) => user,
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let status = user.call_with_return_value(
            (),
            ThreadsafeFunctionCallMode::Blocking,
            move |returned: napi::Result<Unknown<'_>>, _env| {
                let _ = tx.send(returned.and_then(instant));
                Ok(())
            },
        );
        let answer = if status == Status::Ok {
            rx.recv().unwrap_or_else(|_| Err(closing()))
        } else {
            Err(closing())
        };
        match answer {
            Ok(judged) => judged,
            Err(err) => {
                let text = err.reason.clone();
                if let Ok(mut slot) = thrown.lock() {
                    slot.get_or_insert(err);
                }
                Err(Error::Store(format!("the clock threw: {text}")))
            }
        }
    }
}

/// The error of a clock that can no longer be called (Node is shutting down).
fn closing() -> napi::Error {
    napi::Error::new(
        Status::Closing,
        "the clock cannot be called: Node is exiting",
    )
}

/// The system clock, in UTC milliseconds.
pub fn system_now() -> Millis {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or_else(
        |before| -Millis::try_from(before.duration().as_millis()).unwrap_or(Millis::MAX),
        |after| Millis::try_from(after.as_millis()).unwrap_or(Millis::MAX),
    )
}

/// What the clock returned, judged: a valid `Date` or a finite number of milliseconds
/// (floored; the core then rejects an instant out of its range, naming the value returned),
/// else a `type` error on `clock` (NaN, an invalid `Date`, a string...). The outer result is
/// N-API's.
pub fn instant(value: Unknown<'_>) -> napi::Result<Result<Millis>> {
    let ms = match value.get_type()? {
        ValueType::Number => Some(f64::from_unknown(value)?),
        ValueType::Object if value.is_date()? => Some(JsDate::from_unknown(value)?.value_of()?),
        _ => None,
    };
    Ok(match ms {
        Some(ms) if ms.is_finite() => deadletter::validate::clock_millis(ms, || {
            // As JavaScript writes it (`String(-1e20)`): only a number is that large.
            value
                .coerce_to_string()
                .and_then(|text| text.into_utf8()?.into_owned())
                .unwrap_or_default()
        }),
        _ => Err(Error::Validation(vec![FieldError::new(
            "clock",
            "type",
            format!(
                "must be a function returning a valid Date or a finite number of milliseconds, got {}",
                kind(value)?
            ),
        )])),
    })
}
