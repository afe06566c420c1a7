//! A queue's row (settings, pause, expiry counters) as stores keep it ([`StoredQueue`]), and its
//! checks when read back ([`queue_row`]).

use std::fmt::Display;

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::{Error, Quoted, Result};
use crate::settings::{QueueRow, QueueSettings};

/// A queue's row as a store keeps it, column by column (SQLite and PostgreSQL: the table
/// `queues`; IndexedDB: a record of the object store `queues`): [`StoredQueue::new`] from a
/// [`QueueRow`] to write, [`StoredQueue::check`] back when read. The backoff policy is four
/// columns, all set or all null (`backoff_jitter` is null also for a policy without jitter).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredQueue<'a> {
    /// The queue's name.
    pub name: &'a str,
    /// See [`Backoff::initial_ms`].
    pub backoff_initial_ms: Option<i64>,
    /// See [`Backoff::multiplier`].
    pub backoff_multiplier: Option<f64>,
    /// See [`Backoff::cap_ms`].
    pub backoff_cap_ms: Option<i64>,
    /// See [`Backoff::jitter`]: `full`, `equal` or null.
    pub backoff_jitter: Option<&'a str>,
    /// See [`QueueSettings::max_retries`].
    pub max_retries: Option<i64>,
    /// See [`QueueSettings::lease_ms`].
    pub lease_ms: Option<i64>,
    /// See [`QueueSettings::expires_in_ms`].
    pub expires_in_ms: Option<i64>,
    /// See [`QueueSettings::on_expiry`]: `dead` or `discard`.
    pub on_expiry: &'a str,
    /// See [`QueueSettings::paused`].
    pub paused: bool,
    /// See [`QueueRow::expired_dead`].
    pub expired_dead: i64,
    /// See [`QueueRow::expired_discarded`].
    pub expired_discarded: i64,
}

impl<'a> StoredQueue<'a> {
    /// The columns of `row`, the row of queue `name`.
    pub fn new(name: &'a str, row: &QueueRow) -> Self {
        let settings = &row.settings;
        let backoff = settings.backoff.as_ref();
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Self {
            name,
            backoff_initial_ms: backoff.map(|b| b.initial_ms),
            backoff_multiplier: backoff.map(|b| b.multiplier),
            backoff_cap_ms: backoff.map(|b| b.cap_ms),
            backoff_jitter: backoff.and_then(|b| b.jitter.as_str()),
            max_retries: settings.max_retries.map(i64::from),
            lease_ms: settings.lease_ms,
            expires_in_ms: settings.expires_in_ms,
            on_expiry: settings.on_expiry.as_str(),
            paused: settings.paused,
            expired_dead: count(row.expired_dead),
            expired_discarded: count(row.expired_discarded),
        }
    }

    /// The row, when every value is one deadletter writes (see [`queue_row`]).
    pub fn check(self) -> Result<QueueRow> {
        let int = |n: Option<i64>| n.map_or(Arg::Null, Arg::Int);
        queue_row(
            self.name,
            &[
                int(self.backoff_initial_ms),
                self.backoff_multiplier.map_or(Arg::Null, Arg::Float),
                int(self.backoff_cap_ms),
                self.backoff_jitter.map_or(Arg::Null, Arg::Str),
                int(self.max_retries),
                int(self.lease_ms),
                int(self.expires_in_ms),
                Arg::Str(self.on_expiry),
                Arg::Bool(self.paused),
                Arg::Int(self.expired_dead),
                Arg::Int(self.expired_discarded),
            ],
        )
    }
}

/// The columns of a queue's row, in [`StoredQueue`]'s order (what [`queue_row`] takes).
pub const QUEUE_COLUMNS: [&str; 11] = [
    "backoff_initial_ms",
    "backoff_multiplier",
    "backoff_cap_ms",
    "backoff_jitter",
    "max_retries",
    "lease_ms",
    "expires_in_ms",
    "on_expiry",
    "paused",
    "expired_dead",
    "expired_discarded",
];

/// The row of queue `name` from its columns ([`QUEUE_COLUMNS`]' order) as values of any type (a
/// typed store's [`StoredQueue::check`]; a store whose records are untyped, IndexedDB's, hands
/// over what it read), when every value is one deadletter writes: each setting of the type and
/// within the range `set_settings` accepts, a policy whole or absent, `paused` a bool, counters
/// integers >= 0. Otherwise a store error naming the queue and the column: `queue "jobs" is
/// corrupt: column lease_ms: ...`.
pub fn queue_row(name: &str, columns: &[Arg<'_>; 11]) -> Result<QueueRow> {
    let corrupt = |column: &str, why: &dyn Display| {
        Error::Store(format!(
            "queue {} is corrupt: column {column}: {why}",
            Quoted(name)
        ))
    };
    let [
        initial,
        multiplier,
        cap,
        jitter,
        max_retries,
        lease,
        expires_in,
        on_expiry,
        paused,
        dead,
        discarded,
    ] = columns;
    let set = [initial, multiplier, cap].map(|a| *a != Arg::Null);
    let backoff = match set {
        [false, false, false] if *jitter == Arg::Null => None,
        [true, true, true] => Some(Backoff::new(initial, multiplier, cap, jitter)),
        _ => {
            let why = "holds part of a backoff policy (its four columns are set together)";
            return Err(corrupt("backoff_initial_ms", &why));
        }
    };
    let settings =
        QueueSettings::new(backoff, max_retries, lease, expires_in, on_expiry).map_err(|err| {
            match err.field_errors().first() {
                Some(field) => corrupt(field.field, &field.message),
                None => err,
            }
        })?;
    let Arg::Bool(paused) = *paused else {
        return Err(corrupt(
            "paused",
            &format_args!("holds {}, not a bool", paused.kind()),
        ));
    };
    let count = |column: &str, arg: &Arg<'_>| match arg {
        Arg::Int(n) if *n >= 0 => Ok(n.unsigned_abs()),
        Arg::Int(n) => Err(corrupt(column, &format_args!("holds {n}, not a count"))),
        other => Err(corrupt(
            column,
            &format_args!("holds {}, not a count", other.kind()),
        )),
    };
    Ok(QueueRow {
        settings: QueueSettings { paused, ..settings },
        expired_dead: count("expired_dead", dead)?,
        expired_discarded: count("expired_discarded", discarded)?,
    })
}
