//! # deadletter-wasm
//!
//! The WebAssembly binding of [deadletter](../deadletter/index.html) for browsers, workers and
//! Node: an IndexedDB [`Store`](deadletter::Store) ([`idb_store::IdbStore`]) and the objects
//! behind the npm package `deadletter` (`js/index.js` is its hand-written entry, `js/index.d.ts`
//! its types). Every rule (validation, state machine, backoff) stays in the core; this crate maps
//! JavaScript values to [`deadletter::Arg`] without judging them, reads the clock, draws lease
//! tokens from `crypto.getRandomValues`, persists in IndexedDB and maps errors to
//! `DeadLetterError` once (`errors.rs`).
//!
//! The worker loop (`Queue.process`) takes its rules from the core through [`worker`]; its
//! mechanics (timers, promises, `AbortSignal`, online and offline events) are `js/worker.js`.
//!
//! ```js
//! import { open } from "deadletter";
//! const db = await open("app-queue");
//! const q = db.queue("emails");
//! await q.enqueue('{"to":"alice"}', { maxRetries: 5 });
//! const m = await q.claim();
//! if (m) await q.succeed(m.id, { leaseToken: m.leaseToken });
//! ```
//!
//! Natively only [`names`] is compiled; everything else is `wasm32` only.

pub mod names;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod args;
#[cfg(target_arch = "wasm32")]
pub mod connection;
#[cfg(target_arch = "wasm32")]
pub mod errors;
#[cfg(target_arch = "wasm32")]
pub mod idb_store;
#[cfg(target_arch = "wasm32")]
pub mod record;
#[cfg(target_arch = "wasm32")]
pub mod request;
#[cfg(target_arch = "wasm32")]
pub mod worker;
