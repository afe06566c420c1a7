//! What the worker loop of `js/worker.js` (`Queue.process`) takes from the core's
//! [`deadletter::worker`] rules: the validated options with the heartbeat period and the idle
//! wait ([`WorkerPlan`]), and the text a failed handler is recorded with ([`failure_text`]). The
//! loop's mechanics (timers, promises, `AbortSignal`, online and offline events) are JavaScript.

use deadletter::worker::{self, Plan};
use wasm_bindgen::prelude::*;

use crate::args::{OwnedArg, owned_args};
use crate::errors;
use crate::rules::{js, now};

/// The validated options of one `Queue.process` loop (internal; see `js/worker.js`).
#[wasm_bindgen]
pub struct WorkerPlan {
    plan: Plan,
}

#[allow(clippy::cast_precision_loss)] // every duration of a plan is at most 12 h in milliseconds
fn ms(value: i64) -> f64 {
    value as f64
}

#[wasm_bindgen]
impl WorkerPlan {
    /// Checks the options (`undefined`/`null`: concurrency 1, poll interval 1000 ms, shutdown
    /// timeout 30000 ms, `default_lease_ms`, the database's lease). Throws a `validation_failed`
    /// `DeadLetterError` listing every rejected field (`concurrency`, `pollIntervalMs`,
    /// `shutdownTimeoutMs`, `leaseMs`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        default_lease_ms: f64,
        concurrency: &JsValue,
        poll_interval_ms: &JsValue,
        shutdown_timeout_ms: &JsValue,
        lease_ms: &JsValue,
    ) -> Result<WorkerPlan, JsValue> {
        let [concurrency, poll, shutdown, lease] =
            owned_args![concurrency, poll_interval_ms, shutdown_timeout_ms, lease_ms];
        Plan::new(
            &concurrency.arg(),
            &poll.arg(),
            &shutdown.arg(),
            &lease.arg(),
            #[allow(clippy::cast_possible_truncation)] // the database's checked lease
            (default_lease_ms as i64),
        )
        .map(|plan| Self { plan })
        .map_err(|e| errors::to_js(&e))
    }

    /// Handlers run at once (1..=1000).
    #[wasm_bindgen(getter)]
    pub fn concurrency(&self) -> u32 {
        u32::try_from(self.plan.concurrency).unwrap_or(u32::MAX)
    }

    /// The lease of each claimed message, in milliseconds.
    #[wasm_bindgen(getter, js_name = leaseMs)]
    pub fn lease_ms(&self) -> f64 {
        ms(self.plan.lease_ms)
    }

    /// How long a stopping loop waits for its running handlers, in milliseconds.
    #[wasm_bindgen(getter, js_name = shutdownTimeoutMs)]
    pub fn shutdown_timeout_ms(&self) -> f64 {
        ms(self.plan.shutdown_timeout_ms)
    }

    /// How long an idle loop sleeps, in milliseconds, at `clock` (what the database's clock
    /// returned): until `nextDueAt` (what `Queue.nextDueAt` resolved to: a `Date` or null) or for
    /// the poll interval, whichever is sooner; at least 1. Throws a `validation_failed`
    /// `DeadLetterError` when the clock's value is no time.
    #[wasm_bindgen(js_name = idleWaitMs)]
    pub fn idle_wait_ms(&self, clock: &JsValue, next_due_at: &JsValue) -> Result<f64, JsValue> {
        let now = js(now(clock))?;
        let next = match OwnedArg::instant(next_due_at) {
            OwnedArg::Int(at) => Some(at),
            _ => None,
        };
        Ok(ms(self.plan.idle_wait_ms(next, now)))
    }
}

/// The `error` a handler that threw is failed with: `"<kind>: <message>"`, or `kind` alone when
/// `message` is empty (`TypeError: x is undefined`); see [`worker::failure_text`]. Strings arrive
/// through wasm-bindgen's lossy conversion, so the text is always one `fail` accepts.
#[wasm_bindgen(js_name = failureText)]
pub fn failure_text(kind: &str, message: &str) -> String {
    worker::failure_text(kind, message)
}
