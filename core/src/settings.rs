//! A queue's settings, stored with the queue (issue 21), and the context every write decides with.
//!
//! - [`QueueSettings`]: the defaults a queue's operations apply when a call gives none (backoff
//!   policy, `max_retries`, lease, expiry and what expiry does) and whether the queue is paused.
//!   Every process reads them from the store, so workers, the HTTP server and the CLI agree.
//! - [`QueueRow`]: what a store keeps per queue: the settings and the expiry counters.
//! - [`Context`]: what a write reads once it holds its store's write lock: the clock (once) and
//!   the queue's row. Every step that depends on time or on the settings takes it, so that a call
//!   that waited for the lock decides with the instant it got it (issue 23, item 2).
//! - [`SettingsArgs`]: `set_settings`'s checked arguments.
//!
//! Precedence, for every operation: a per-call argument, else the queue's stored setting, else the
//! database's open-time option (the lease), else the built-in default. The one exception is the
//! backoff policy given to a queue handle in code (`db.queue(name, backoff=...)`): an explicit
//! choice, it wins over the stored policy for that handle's calls.

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::Result;
use crate::message::Millis;
use crate::validate::{Check, MAX_EXPIRES_IN_MS, MAX_LEASE_MS, MAX_RETRIES_RANGE};

/// What happens to a message still `pending` at its expiry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OnExpiry {
    /// It becomes `dead` with the error `expired` (kept, visible, replayable).
    #[default]
    Dead,
    /// It is deleted (its idempotency key is free again), not reported as dead.
    Discard,
}

impl OnExpiry {
    /// Both outcomes with their names, in the order documented.
    pub const ALL: [(&'static str, Self); 2] = [("dead", Self::Dead), ("discard", Self::Discard)];

    /// The name as stored and shown: `dead` or `discard`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dead => "dead",
            Self::Discard => "discard",
        }
    }

    /// Parses a name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, o)| *o)
    }
}

/// The settings stored with one queue. `None` is unset: the operation then falls back to the
/// database's open-time option or the built-in default (see the module's precedence).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueueSettings {
    /// The backoff policy of failures and expired leases; `None`: the handle's policy, else
    /// [`Backoff::default`].
    pub backoff: Option<Backoff>,
    /// The `max_retries` of an enqueue that gives none (1..=10); `None`: 3.
    pub max_retries: Option<u32>,
    /// The lease of a claim or extend that gives none, in milliseconds (1..=12 h); `None`: the
    /// database's open-time lease.
    pub lease_ms: Option<Millis>,
    /// The expiry of an enqueue (or replay) that gives none, in milliseconds from then (1 ms..=
    /// 365 days); `None`: messages never expire.
    pub expires_in_ms: Option<Millis>,
    /// What expiry does to a pending message.
    pub on_expiry: OnExpiry,
    /// Whether the queue is paused: it accepts every operation but claims nothing.
    pub paused: bool,
}

/// What a store keeps per queue (a row of its `queues` table, a record): the settings and the
/// expiry counters. A queue that has none reads as [`QueueRow::default`]; a store keeps a row
/// only while it differs from the default ([`QueueRow::worth_storing`]: a setting is set, the
/// queue is paused, or a message of it expired; the counters survive purges), so a queue with a
/// row is listed by `queues()` even while it holds no message, and one whose settings are all
/// back to the defaults, with nothing counted, has none (new-user finding F5, session 6: a
/// mistyped `pause` or `set_settings` left a queue listed for ever).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueueRow {
    /// The settings.
    pub settings: QueueSettings,
    /// Messages that expired while pending and became dead, since the row was created.
    pub expired_dead: u64,
    /// Messages that expired while pending and were discarded, since the row was created.
    pub expired_discarded: u64,
}

impl QueueRow {
    /// The row with `expired` more messages counted under `outcome`.
    #[must_use]
    pub fn count_expired(self, outcome: OnExpiry, expired: u64) -> Self {
        let mut row = self;
        let counter = match outcome {
            OnExpiry::Dead => &mut row.expired_dead,
            OnExpiry::Discard => &mut row.expired_discarded,
        };
        *counter = counter.saturating_add(expired);
        row
    }

    /// Whether a store keeps `self` as the queue's row (the result of a write of the settings):
    /// only when it differs from a queue that was never configured, so that reading or resetting
    /// the settings of an unknown queue creates nothing, and a write that brings a row back to the
    /// default deletes it ([`crate::Store::write_queue_row`]).
    pub fn worth_storing(&self) -> bool {
        *self != Self::default()
    }
}

/// The binding's clock: the current instant in UTC milliseconds, or the error that reading it
/// raised (the call then fails with it, having changed nothing). A store calls it exactly once per
/// write transaction, once it holds its write lock; a read calls it once when it starts.
pub type Clock<'a> = &'a dyn Fn() -> Result<Millis>;

/// What a write decides with, read inside its transaction once the store holds its write lock:
/// the instant (the clock, read once) and the queue's row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Context {
    /// The instant, UTC milliseconds, within the representable range.
    pub now: Millis,
    /// The queue's stored row ([`QueueRow::default`] when it has none).
    pub queue: QueueRow,
}

impl Context {
    /// Reads `clock` once and checks its instant: outside 0001-01-01..=9999-12-31 it is a
    /// `validation_failed` error on field `clock` (the store then rolls back: nothing changes).
    pub fn read(clock: Clock<'_>, queue: QueueRow) -> Result<Self> {
        Self::new(clock()?, queue)
    }

    /// The context of an instant already read, checked as [`Context::read`] does.
    pub fn new(now: Millis, queue: QueueRow) -> Result<Self> {
        Check::at(now).finish(|| Self { now, queue })
    }

    /// The backoff policy of a failure or an expired lease: the handle's own `policy` when it
    /// has one (an explicit choice in code), else the queue's stored policy, else the default.
    pub fn policy(&self, handle: Option<&Backoff>) -> Backoff {
        handle
            .copied()
            .or(self.queue.settings.backoff)
            .unwrap_or_default()
    }

    /// The stored policy that the handle's own `policy` overrides, when both exist and differ:
    /// what a binding warns about (once per handle).
    pub fn overridden(&self, handle: Option<&Backoff>) -> Option<Backoff> {
        let stored = self.queue.settings.backoff?;
        (handle? != &stored).then_some(stored)
    }

    /// The lease of a claim or extend: `given` (the call's), else the queue's stored lease, else
    /// `open_time` (the database's).
    pub fn lease_ms(&self, given: Option<Millis>, open_time: Millis) -> Millis {
        given.or(self.queue.settings.lease_ms).unwrap_or(open_time)
    }
}

impl QueueSettings {
    /// The five configurable fields, each checked like its per-call twin, every rejected one
    /// reported together: `backoff` (already checked by [`Backoff::new`], whose field errors are
    /// added: `initial_ms`, `multiplier`, `cap_ms`, `jitter`; `None`: unset), `max_retries`
    /// (1..=10), `lease_ms` (1..=12 h), `expires_in_ms` (1 ms..=365 days), each an integer or
    /// null (unset), and `on_expiry` (`"dead"`, `"discard"`, or null: `"dead"`). Not paused.
    pub fn new(
        backoff: Option<Result<Backoff>>,
        max_retries: &Arg<'_>,
        lease_ms: &Arg<'_>,
        expires_in_ms: &Arg<'_>,
        on_expiry: &Arg<'_>,
    ) -> Result<Self> {
        let mut check = Check::default();
        let settings = Self::checked(
            &mut check,
            backoff,
            max_retries,
            lease_ms,
            expires_in_ms,
            on_expiry,
        );
        check.finish(|| settings)
    }

    fn checked(
        check: &mut Check,
        backoff: Option<Result<Backoff>>,
        max_retries: &Arg<'_>,
        lease_ms: &Arg<'_>,
        expires_in_ms: &Arg<'_>,
        on_expiry: &Arg<'_>,
    ) -> Self {
        let max_retries = check.opt_int("max_retries", max_retries, MAX_RETRIES_RANGE);
        let lease_ms = check.opt_int("lease_ms", lease_ms, (1, MAX_LEASE_MS));
        let expires_in_ms = check.opt_int("expires_in_ms", expires_in_ms, (1, MAX_EXPIRES_IN_MS));
        let on_expiry = check.one_of("on_expiry", on_expiry, &OnExpiry::ALL, OnExpiry::Dead);
        let backoff = match backoff {
            None => None,
            Some(Ok(policy)) => Some(policy),
            Some(Err(err)) => {
                check.extend(err);
                None
            }
        };
        Self {
            backoff,
            max_retries: max_retries.and_then(|n| u32::try_from(n).ok()),
            lease_ms,
            expires_in_ms,
            on_expiry,
            paused: false,
        }
    }
}

/// `set_settings`: a queue and the five configurable fields, checked. The call replaces them (an
/// absent field is unset again); `paused` and the counters are left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsArgs {
    /// The queue.
    pub queue: String,
    /// The settings to store (`paused` is ignored).
    pub settings: QueueSettings,
}

impl SettingsArgs {
    /// Checks `queue` (any handle's name) and the fields (see [`QueueSettings::new`]), every
    /// rejected one reported together. Storing settings creates a queue without a message, so a
    /// name an enqueue refuses is accepted only where [`row_write`] says (session 10): the write
    /// decides it, once it has read the queue.
    pub fn new(
        queue: &Arg<'_>,
        backoff: Option<Result<Backoff>>,
        max_retries: &Arg<'_>,
        lease_ms: &Arg<'_>,
        expires_in_ms: &Arg<'_>,
        on_expiry: &Arg<'_>,
    ) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.queue(queue);
        let settings = QueueSettings::checked(
            &mut check,
            backoff,
            max_retries,
            lease_ms,
            expires_in_ms,
            on_expiry,
        );
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            settings,
        })
    }

    /// The row with these settings in place of its own (pause and counters kept).
    pub fn step(&self, row: QueueRow) -> QueueRow {
        QueueRow {
            settings: QueueSettings {
                paused: row.settings.paused,
                ..self.settings
            },
            ..row
        }
    }
}

/// `pause` (`paused` true) and `resume` (false): the row with only `paused` changed.
pub fn pause_step(row: QueueRow, paused: bool) -> QueueRow {
    let mut row = row;
    row.settings.paused = paused;
    row
}

/// Whether a write of the row of queue `name` (`pause`, `resume`, `set_settings`) that read `row`
/// may store `next` (returned): only the creation of a queue takes an enqueue's queue-name rules
/// ([`crate::validate::new_queue_name`]; session 10, task N2). A name they refuse (one 0.1.0
/// or an older rule took: `emails `, `..`, U+3164) is accepted when the queue exists (it has a
/// stored row, or `holds_message`: a message of it is stored), so that an operator can pause it
/// while moving its messages out and clear its settings, and when the write stores nothing (`next`
/// is not [`QueueRow::worth_storing`]: a `resume`, a `set_settings` of nothing); otherwise it is
/// the enqueue's error, `validation_failed` with `invalid` on `queue`, and the store writes
/// nothing. A store looks `holds_message` up only for a name an enqueue refuses: one read of an
/// index, in the write's transaction or before it (no message is ever put under such a name, so
/// one seen before the write was there when it started).
pub fn row_write(
    name: &str,
    row: &QueueRow,
    next: QueueRow,
    holds_message: bool,
) -> Result<QueueRow> {
    if holds_message || row.worth_storing() || !next.worth_storing() {
        return Ok(next);
    }
    crate::validate::new_queue_name(&Arg::Str(name)).map(|_| next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(err: &crate::Error) -> Vec<(&'static str, &'static str)> {
        err.field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect()
    }

    #[test]
    fn the_call_wins_then_the_stored_value_then_the_open_time_default() {
        let stored = Backoff {
            initial_ms: 10_000,
            ..Backoff::default()
        };
        let handle = Backoff {
            initial_ms: 500,
            ..Backoff::default()
        };
        let mut row = QueueRow::default();
        let bare = Context::new(0, row).unwrap();
        assert_eq!(bare.policy(None), Backoff::default());
        assert_eq!(bare.lease_ms(None, 30_000), 30_000);
        row.settings.backoff = Some(stored);
        row.settings.lease_ms = Some(7_000);
        let ctx = Context::new(0, row).unwrap();
        assert_eq!(ctx.policy(None), stored);
        assert_eq!(ctx.policy(Some(&handle)), handle);
        assert_eq!(ctx.overridden(Some(&handle)), Some(stored));
        assert_eq!(ctx.overridden(Some(&stored)), None);
        assert_eq!(ctx.overridden(None), None);
        assert_eq!(ctx.lease_ms(None, 30_000), 7_000);
        assert_eq!(ctx.lease_ms(Some(100), 30_000), 100);
    }

    #[test]
    fn a_clock_out_of_range_is_a_validation_error_on_clock() {
        let err = Context::read(&|| Ok(i64::MAX), QueueRow::default()).unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
    }

    #[test]
    fn set_settings_replaces_the_configurable_fields_and_keeps_pause_and_counters() {
        let args = SettingsArgs::new(
            &"q".into(),
            None,
            &Arg::Int(5),
            &Arg::Null,
            &Arg::Null,
            &"discard".into(),
        )
        .unwrap();
        let before = QueueRow {
            settings: QueueSettings {
                lease_ms: Some(9),
                paused: true,
                ..QueueSettings::default()
            },
            expired_dead: 4,
            expired_discarded: 0,
        };
        let after = args.step(before);
        assert_eq!(after.settings.max_retries, Some(5));
        assert_eq!(after.settings.lease_ms, None);
        assert_eq!(after.settings.on_expiry, OnExpiry::Discard);
        assert!(after.settings.paused);
        assert_eq!(after.expired_dead, 4);
        assert!(!QueueRow::default().worth_storing());
        assert!(pause_step(QueueRow::default(), true).worth_storing());
    }

    #[test]
    fn only_the_creation_of_a_queue_takes_an_enqueues_name_rules() {
        let (none, paused) = (QueueRow::default(), pause_step(QueueRow::default(), true));
        assert_eq!(row_write("jobs", &none, paused, false), Ok(paused));
        let err = row_write("emails ", &none, paused, false).unwrap_err();
        assert_eq!(fields(&err), [("queue", "invalid")]);
        // A queue that exists (a message, a row), or a write that stores nothing.
        assert_eq!(row_write("emails ", &none, paused, true), Ok(paused));
        assert_eq!(row_write("..", &paused, none, false), Ok(none));
        assert_eq!(row_write("\u{3164}", &none, none, false), Ok(none));
        // The fields are checked first; the name is the write's to judge.
        let args = SettingsArgs::new(
            &"..".into(),
            None,
            &Arg::Int(0),
            &Arg::Null,
            &Arg::Null,
            &Arg::Null,
        );
        assert_eq!(
            fields(&args.unwrap_err()),
            [("max_retries", "out_of_range")]
        );
    }

    #[test]
    fn every_rejected_field_is_reported() {
        let bad_policy = Backoff::new(&Arg::Null, &Arg::Float(0.5), &Arg::Null, &"x".into());
        let err = SettingsArgs::new(
            &"q".into(),
            Some(bad_policy),
            &Arg::Int(0),
            &Arg::Float(2.5),
            &Arg::Int(0),
            &Arg::Int(1),
        )
        .unwrap_err();
        assert_eq!(
            fields(&err),
            [
                ("max_retries", "out_of_range"),
                ("lease_ms", "type"),
                ("expires_in_ms", "out_of_range"),
                ("on_expiry", "type"),
                ("multiplier", "out_of_range"),
                ("jitter", "invalid")
            ]
        );
    }
}
