//! The rules of a worker loop (poll, process, succeed or fail), decided here so that every binding's
//! loop behaves the same; the bindings own only the mechanics (threads, tasks, timers, signals).
//!
//! - A handler that returns acks its message; one that raises fails it with [`failure_text`]; a
//!   permanent error fails it with `retryable` false.
//! - While a handler runs, its lease is extended every [`Plan::heartbeat_ms`] (half the lease, as
//!   BullMQ renews its locks), so a slow handler keeps its message.
//! - An idle loop sleeps [`Plan::idle_wait_ms`]: until the next delayed message is due, or the
//!   poll interval, whichever is sooner; never less than 1 ms, so it never spins.

use crate::arg::Arg;
use crate::error::Result;
use crate::message::Millis;
use crate::validate::{Check, MAX_LEASE_MS};

/// Most handlers one loop runs at once.
pub const MAX_CONCURRENCY: i64 = 1000;
/// Longest poll interval and shutdown timeout: one hour, in milliseconds.
pub const MAX_WAIT_MS: i64 = 3_600_000;

/// The validated options of one worker loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Handlers run at once (1..=1000).
    pub concurrency: usize,
    /// Longest idle sleep between polls, in milliseconds (1..=1 h).
    pub poll_interval_ms: Millis,
    /// How long a stopping loop waits for running handlers, in milliseconds (0..=1 h); after it
    /// their messages are left to their leases.
    pub shutdown_timeout_ms: Millis,
    /// The lease of each claimed message, renewed by heartbeats, in milliseconds (1..=12 h).
    pub lease_ms: Millis,
}

impl Plan {
    /// Validates the options (`Null` takes the default: concurrency 1, poll interval 1 s, shutdown
    /// timeout 30 s, lease `default_lease_ms`); every rejected field is reported.
    pub fn new(
        concurrency: &Arg<'_>,
        poll_interval_ms: &Arg<'_>,
        shutdown_timeout_ms: &Arg<'_>,
        lease_ms: &Arg<'_>,
        default_lease_ms: Millis,
    ) -> Result<Self> {
        let mut check = Check::default();
        let concurrency = check.int("concurrency", concurrency, (1, MAX_CONCURRENCY), Some(1));
        let poll = check.int(
            "poll_interval_ms",
            poll_interval_ms,
            (1, MAX_WAIT_MS),
            Some(1000),
        );
        let shutdown = check.int(
            "shutdown_timeout_ms",
            shutdown_timeout_ms,
            (0, MAX_WAIT_MS),
            Some(30_000),
        );
        let lease = check.int(
            "lease_ms",
            lease_ms,
            (1, MAX_LEASE_MS),
            Some(default_lease_ms),
        );
        check.finish(|| Self {
            concurrency: concurrency
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(1),
            poll_interval_ms: poll.unwrap_or_default(),
            shutdown_timeout_ms: shutdown.unwrap_or_default(),
            lease_ms: lease.unwrap_or_default(),
        })
    }

    /// How often a running handler's lease is extended: every half lease (at least 1 ms).
    pub fn heartbeat_ms(&self) -> Millis {
        (self.lease_ms / 2).max(1)
    }

    /// How long an idle loop sleeps at `now` before polling again: until `next_due_at` (when the
    /// next delayed message becomes due) or for the poll interval, whichever is sooner; at least
    /// 1 ms.
    pub fn idle_wait_ms(&self, next_due_at: Option<Millis>, now: Millis) -> Millis {
        let until_due = next_due_at.map_or(self.poll_interval_ms, |at| at.saturating_sub(now));
        until_due.clamp(1, self.poll_interval_ms)
    }
}

/// The `error` recorded when a handler raises: `"<kind>: <message>"`, or the kind alone when the
/// message is empty (Python `ValueError: bad input`, JavaScript `TypeError: x is undefined`).
pub fn failure_text(kind: &str, message: &str) -> String {
    if message.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {message}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan::new(&Arg::Null, &Arg::Null, &Arg::Null, &Arg::Null, 30_000).unwrap()
    }

    #[test]
    fn defaults() {
        assert_eq!(
            plan(),
            Plan {
                concurrency: 1,
                poll_interval_ms: 1000,
                shutdown_timeout_ms: 30_000,
                lease_ms: 30_000
            }
        );
        assert_eq!(plan().heartbeat_ms(), 15_000);
    }

    #[test]
    fn idle_waits_for_the_sooner_of_next_due_and_the_poll_interval_and_never_spins() {
        let p = plan();
        assert_eq!(p.idle_wait_ms(None, 0), 1000);
        assert_eq!(p.idle_wait_ms(Some(250), 0), 250);
        assert_eq!(p.idle_wait_ms(Some(5000), 0), 1000);
        assert_eq!(p.idle_wait_ms(Some(0), 10), 1);
        assert_eq!(p.idle_wait_ms(Some(i64::MIN), i64::MAX), 1);
    }

    #[test]
    fn options_are_validated_together() {
        let err = Plan::new(
            &Arg::Int(0),
            &Arg::Float(0.5),
            &Arg::Int(-1),
            &Arg::Int(0),
            30_000,
        )
        .unwrap_err();
        let fields: Vec<_> = err
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(
            fields,
            [
                ("concurrency", "out_of_range"),
                ("poll_interval_ms", "type"),
                ("shutdown_timeout_ms", "out_of_range"),
                ("lease_ms", "out_of_range")
            ]
        );
    }

    #[test]
    fn failure_text_names_the_kind() {
        assert_eq!(failure_text("ValueError", "bad"), "ValueError: bad");
        assert_eq!(failure_text("TimeoutError", ""), "TimeoutError");
    }
}
