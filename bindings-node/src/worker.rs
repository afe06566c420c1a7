//! What the worker loop of the package's `worker.js` (`Queue.process`) takes from the core's
//! [`deadletter::worker`] rules, as the WebAssembly binding's `WorkerPlan` gives it: the checked
//! options with the heartbeat period and the idle wait ([`NativeWorkerPlan`]); the text a failed
//! handler is recorded with is `failureText` (lib.rs). The loop's mechanics are JavaScript.

use deadletter::worker::Plan;
use deadletter::{Millis, Result};
use napi::bindgen_prelude::{Either, Unknown};
use napi_derive::napi;

use crate::args::OwnedArg;
use crate::clock::instant;
use crate::reply;

/// The checked options of one worker loop (internal).
#[napi]
pub struct NativeWorkerPlan {
    plan: Plan,
}

#[allow(clippy::cast_precision_loss)] // every duration of a plan is at most 12 h in milliseconds
fn ms(value: Millis) -> f64 {
    value as f64
}

impl NativeWorkerPlan {
    /// The plan of `[concurrency, pollIntervalMs, shutdownTimeoutMs, leaseMs]`, or the core's
    /// validation error.
    pub fn new(default_lease_ms: Millis, options: [Unknown<'_>; 4]) -> napi::Result<Result<Self>> {
        let [concurrency, poll, shutdown, lease] = options;
        let [concurrency, poll, shutdown, lease] = [
            OwnedArg::from_js(concurrency)?,
            OwnedArg::from_js(poll)?,
            OwnedArg::from_js(shutdown)?,
            OwnedArg::from_js(lease)?,
        ];
        Ok(Plan::new(
            &concurrency.arg(),
            &poll.arg(),
            &shutdown.arg(),
            &lease.arg(),
            default_lease_ms,
        )
        .map(|plan| Self { plan }))
    }
}

#[napi]
impl NativeWorkerPlan {
    /// Handlers run at once.
    #[napi(getter)]
    pub fn concurrency(&self) -> u32 {
        u32::try_from(self.plan.concurrency).unwrap_or(u32::MAX)
    }

    /// The lease of each claimed message, in milliseconds.
    #[napi(getter)]
    pub fn lease_ms(&self) -> f64 {
        ms(self.plan.lease_ms)
    }

    /// How long a stopping loop waits for its handlers, in milliseconds.
    #[napi(getter)]
    pub fn shutdown_timeout_ms(&self) -> f64 {
        ms(self.plan.shutdown_timeout_ms)
    }

    /// How long an idle loop sleeps at `now` (what the clock returned: a `Date` or milliseconds)
    /// when the next delayed message is due at `nextDueAt` (a `Date`, or null); or the JSON text
    /// of the clock's validation error.
    #[napi]
    pub fn idle_wait_ms(
        &self,
        now: Unknown<'_>,
        next_due_at: Unknown<'_>,
    ) -> napi::Result<Either<f64, String>> {
        let next = match OwnedArg::instant(next_due_at)? {
            OwnedArg::Int(at) => Some(at),
            _ => None,
        };
        Ok(match instant(now)? {
            Ok(now) => Either::A(ms(self.plan.idle_wait_ms(next, now))),
            Err(err) => Either::B(reply::error(&err)),
        })
    }
}
