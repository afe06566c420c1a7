//! # deadletter-node
//!
//! The Node binding of [deadletter](../deadletter/index.html): the native module of the npm
//! package `deadletter`, which `import { open } from "deadletter"` uses in Node to open a SQLite
//! file (`open("./queue.db", options)`): the store of `stores/sqlite` (`deadletter-sqlite`), the
//! very file format of the Python package, under the same `Database` and `Queue` classes as the
//! browsers' IndexedDB (the package's `node/backend.js` is the backend they call in Node).
//!
//! - Every call runs off the JavaScript thread, on the database's own threads ([`pool`]), and
//!   its reply comes back in a batch with the others finished meanwhile; the calls made in one
//!   JavaScript tick run as one batch, in one transaction of the SQLite store, and batches made
//!   at once share commits through its group commit.
//! - The store reads the clock once it holds its write lock: the system clock there, or the
//!   user's `clock` function through a thread-safe function ([`clock`]).
//! - Arguments are mapped from JavaScript without judging ([`args`]); the core checks them and
//!   decides everything; a call's result or error goes back as one JSON text ([`reply`]).
//!
//! Like the other bindings, it holds no rule about messages: the state machine, validation,
//! backoff and claim order are the core's; the SQL is the store's.

// The crate docs are for whoever works on the binding (it is a native module, not a library
// to depend on): they link its private modules.
#![allow(rustdoc::private_intra_doc_links)]
// napi-derive registers the exports only outside tests: there they look unused.
#![cfg_attr(test, allow(dead_code))]

mod args;
mod clock;
mod database;
mod pool;
mod queue;
mod reply;
mod work;
mod worker;

use napi::bindgen_prelude::{Either, Unknown};
use napi_derive::napi;

/// The delay before the next attempt after the `retryCount`-th failure, in milliseconds:
/// `min(2^retryCount, 3600)` seconds; or the JSON text of the validation error (`retryCount` an
/// integer >= 0 of any size up to 2^63 - 1).
#[napi]
pub fn backoff_ms(retry_count: Unknown<'_>) -> napi::Result<Either<f64, String>> {
    let count = args::OwnedArg::from_js(retry_count)?;
    Ok(match deadletter::backoff(&count.arg()) {
        // At most 3_600_000: exact as f64.
        #[allow(clippy::cast_precision_loss)]
        Ok(delay) => Either::A(delay as f64),
        Err(err) => Either::B(reply::error(&err)),
    })
}

/// The stable error codes of the core (`deadletter::CODES`).
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    deadletter::CODES.to_vec()
}

/// The error a worker loop records for a handler that threw: `"<kind>: <message>"`.
#[napi]
#[allow(clippy::needless_pass_by_value)] // napi-rs passes JavaScript strings owned
pub fn failure_text(kind: String, message: String) -> String {
    deadletter::worker::failure_text(&kind, &message)
}
