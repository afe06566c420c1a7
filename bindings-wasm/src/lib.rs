//! # deadletter-wasm
//!
//! The WebAssembly binding of [deadletter](../deadletter/index.html): the core's rules for the npm
//! package `deadletter`, whose JavaScript drives IndexedDB (`js/store/`) while this module decides,
//! synchronously. It exports no future and no IndexedDB binding: only
//! - the checks of every call's arguments ([`rules`]: the options of a database and a queue, the
//!   clock's time and the jitter sample), each into a plan of the operation ([`plans`], [`claim`],
//!   [`bulk`], [`reads`], [`queue`]) that answers, for every record the store read inside its
//!   transaction, what to write (the core's steps, with the group bookkeeping of [`groups`]), and
//!   what the call resolves to once committed;
//! - the records ([`record`]: a message as an IndexedDB record, with its claim lane and group
//!   position, and back through the core's checks; as the API's object; [`queue`]: a queue's row,
//!   settings and statistics), the key ranges the store reads ([`keys`]), and the schema
//!   decisions ([`schema`]: create, upgrade, take or refuse; older records);
//! - the error mapping to `DeadLetterError` ([`errors`]), the worker loop's rules ([`worker`]),
//!   `backoffMs`, and the names and lease tokens ([`names`]).
//!
//! Every rule (validation, state machine, backoff, claim order, storage checks) stays in the core;
//! this crate maps JavaScript values to [`deadletter::Arg`] without judging them ([`args`]) and
//! records to messages and back.
//!
//! Natively only [`names`] is compiled; everything else is `wasm32` only.

// The crate docs are for whoever works on the binding (it is a native module, not a library
// to depend on): they link its private modules.
#![allow(rustdoc::private_intra_doc_links)]
// Natively the wasm32-only modules the crate docs link are not compiled.
#![cfg_attr(not(target_arch = "wasm32"), allow(rustdoc::broken_intra_doc_links))]

pub mod names;

#[cfg(target_arch = "wasm32")]
pub mod args;
#[cfg(target_arch = "wasm32")]
pub mod bulk;
#[cfg(target_arch = "wasm32")]
pub mod claim;
#[cfg(target_arch = "wasm32")]
pub mod errors;
#[cfg(target_arch = "wasm32")]
pub mod groups;
#[cfg(target_arch = "wasm32")]
pub mod keys;
#[cfg(target_arch = "wasm32")]
pub mod plans;
#[cfg(target_arch = "wasm32")]
pub mod queue;
#[cfg(target_arch = "wasm32")]
pub mod reads;
#[cfg(target_arch = "wasm32")]
pub mod record;
#[cfg(target_arch = "wasm32")]
pub mod rules;
#[cfg(target_arch = "wasm32")]
pub mod schema;
#[cfg(target_arch = "wasm32")]
pub mod worker;

/// The delay before the next attempt after the `retryCount`-th failure, in milliseconds:
/// `min(2^retryCount, 3600)` seconds. Throws a `validation_failed` `DeadLetterError` unless
/// `retryCount` is an integer >= 0 (of any size: `2**53` and `2**63 - 1` give 3600000; `2**64`
/// is `out_of_range`, as in Python).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(js_name = backoffMs)]
pub fn backoff_ms(retry_count: &wasm_bindgen::JsValue) -> Result<f64, wasm_bindgen::JsValue> {
    let delay = rules::js(deadletter::backoff(
        &args::OwnedArg::from_js(retry_count).arg(),
    ))?;
    // At most 3_600_000: exact as f64.
    #[allow(clippy::cast_precision_loss)]
    Ok(delay as f64)
}

/// The module's allocator: talc, smaller than Rust's default (dlmalloc) on wasm.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
