//! The WIT types of `types` and the core's, both ways: arguments, errors, messages, policies,
//! settings, contexts, stored messages and statistics. Field for field, nothing judged (the
//! requests are in [`crate::requests`]).

use deadletter::engine::scan;
use deadletter::{
    Arg, Backoff, FilterArgs, Jitter, OnExpiry, QueueRow, QueueSettings, Stats, Status,
};

use crate::wit::types as w;

/// `From` both ways between a core type and its WIT record, field for field: the fields of the
/// first list have the same type on both sides; those of `into` convert with `Into`, those of
/// `options` are options of such, those of `each` lists of such.
macro_rules! both_ways {
    ($core:ty, $wit:ty, [$($same:ident),*]
        $(, into [$($into:ident),*])?
        $(, options [$($option:ident),*])?
        $(, each [$($each:ident),*])?) => {
        impl From<$core> for $wit {
            fn from(a: $core) -> Self {
                Self {
                    $($same: a.$same,)*
                    $($($into: a.$into.into(),)*)?
                    $($($option: a.$option.map(Into::into),)*)?
                    $($($each: a.$each.into_iter().map(Into::into).collect(),)*)?
                }
            }
        }

        impl From<$wit> for $core {
            fn from(a: $wit) -> Self {
                Self {
                    $($same: a.$same,)*
                    $($($into: a.$into.into(),)*)?
                    $($($option: a.$option.map(Into::into),)*)?
                    $($($each: a.$each.into_iter().map(Into::into).collect(),)*)?
                }
            }
        }
    };
}

pub(crate) use both_ways;

/// A WIT argument as the core's [`Arg`], borrowed.
pub fn arg(value: &w::Arg) -> Arg<'_> {
    match value {
        w::Arg::Null => Arg::Null,
        w::Arg::Boolean(b) => Arg::Bool(*b),
        w::Arg::Int(n) => Arg::Int(*n),
        w::Arg::BigInt => Arg::BigInt,
        w::Arg::Float(f) => Arg::Float(*f),
        w::Arg::Text(s) => Arg::Str(s),
        w::Arg::Other(kind) => Arg::Other(kind),
    }
}

/// An optional WIT argument as the core's [`Arg`] (none: [`Arg::Null`], not set).
fn opt_arg(value: Option<&w::Arg>) -> Arg<'_> {
    value.map_or(Arg::Null, arg)
}

/// The WIT filters as the core's [`FilterArgs`], borrowed.
pub fn filters(f: &w::FilterArgs) -> FilterArgs<'_> {
    FilterArgs {
        status: opt_arg(f.status.as_ref()),
        delayed: opt_arg(f.delayed.as_ref()),
        payload_contains: opt_arg(f.payload_contains.as_ref()),
        error_contains: opt_arg(f.error_contains.as_ref()),
        group: opt_arg(f.group.as_ref()),
        idempotency_key: opt_arg(f.idempotency_key.as_ref()),
        created_after: opt_arg(f.created_after.as_ref()),
        created_before: opt_arg(f.created_before.as_ref()),
        updated_after: opt_arg(f.updated_after.as_ref()),
        updated_before: opt_arg(f.updated_before.as_ref()),
        dead_after: opt_arg(f.dead_after.as_ref()),
        dead_before: opt_arg(f.dead_before.as_ref()),
    }
}

/// A result of the core with its error as the WIT `error`.
pub fn result<T, U: From<T>>(result: deadletter::Result<T>) -> Result<U, w::Error> {
    result.map(U::from).map_err(w::Error::from)
}

impl From<deadletter::Error> for w::Error {
    fn from(err: deadletter::Error) -> Self {
        let code = match err {
            deadletter::Error::Validation(_) => w::ErrorCode::ValidationFailed,
            deadletter::Error::NotFound { .. } => w::ErrorCode::NotFound,
            deadletter::Error::Conflict(_) => w::ErrorCode::Conflict,
            deadletter::Error::Store(_) => w::ErrorCode::Store,
        };
        let fields = err
            .field_errors()
            .iter()
            .map(|f| w::FieldError {
                field: f.field.to_owned(),
                code: f.code.to_owned(),
                reason: f.message.clone(),
                index: f.index.map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
            })
            .collect();
        Self {
            code,
            message: err.to_string(),
            fields,
        }
    }
}

impl From<Status> for w::Status {
    fn from(status: Status) -> Self {
        match status {
            Status::Pending => Self::Pending,
            Status::Processing => Self::Processing,
            Status::Succeeded => Self::Succeeded,
            Status::Dead => Self::Dead,
        }
    }
}

impl From<w::Status> for Status {
    fn from(status: w::Status) -> Self {
        match status {
            w::Status::Pending => Self::Pending,
            w::Status::Processing => Self::Processing,
            w::Status::Succeeded => Self::Succeeded,
            w::Status::Dead => Self::Dead,
        }
    }
}

both_ways!(
    deadletter::FailedAttempt,
    w::FailedAttempt,
    [attempt, error, at]
);
both_ways!(
    deadletter::Message,
    w::Message,
    [
        id,
        queue,
        payload,
        retry_count,
        max_retries,
        retry_after,
        last_error,
        created_at,
        updated_at,
        lease_token,
        lease_expires_at,
        idempotency_key,
        first_failed_at,
        dead_at,
        errors_dropped,
        replay_count,
        replayed_at,
        group,
        expires_at,
        moved_from,
        deduplicated
    ],
    into[status],
    each[errors]
);
both_ways!(
    deadletter::NewMessage,
    w::NewMessage,
    [
        queue,
        payload,
        max_retries,
        idempotency_key,
        retry_after,
        group,
        expires_at,
        now
    ]
);

impl From<Jitter> for w::Jitter {
    fn from(jitter: Jitter) -> Self {
        match jitter {
            Jitter::None => Self::None,
            Jitter::Full => Self::Full,
            Jitter::Equal => Self::Equal,
        }
    }
}

impl From<w::Jitter> for Jitter {
    fn from(jitter: w::Jitter) -> Self {
        match jitter {
            w::Jitter::None => Self::None,
            w::Jitter::Full => Self::Full,
            w::Jitter::Equal => Self::Equal,
        }
    }
}

impl From<OnExpiry> for w::OnExpiry {
    fn from(outcome: OnExpiry) -> Self {
        match outcome {
            OnExpiry::Dead => Self::Dead,
            OnExpiry::Discard => Self::Discard,
        }
    }
}

impl From<w::OnExpiry> for OnExpiry {
    fn from(outcome: w::OnExpiry) -> Self {
        match outcome {
            w::OnExpiry::Dead => Self::Dead,
            w::OnExpiry::Discard => Self::Discard,
        }
    }
}

both_ways!(
    Backoff,
    w::Backoff,
    [initial_ms, multiplier, cap_ms],
    into[jitter]
);
both_ways!(
    QueueSettings,
    w::QueueSettings,
    [max_retries, lease_ms, expires_in_ms, paused],
    into[on_expiry],
    options[backoff]
);
both_ways!(
    QueueRow,
    w::QueueRow,
    [expired_dead, expired_discarded],
    into[settings]
);
both_ways!(deadletter::Context, w::Context, [now], into[queue]);
both_ways!(scan::Stored, w::Stored, [group_at], into[message]);

/// The core's policy checked from WIT arguments (see [`Backoff::new`]).
pub fn backoff(policy: &w::BackoffArgs) -> deadletter::Result<Backoff> {
    Backoff::new(
        &arg(&policy.initial_ms),
        &arg(&policy.multiplier),
        &arg(&policy.cap_ms),
        &arg(&policy.jitter),
    )
}

/// A queue's stored row, or the row of a queue that has none.
pub fn row(stored: Option<w::QueueRow>) -> QueueRow {
    stored.map(Into::into).unwrap_or_default()
}

impl From<deadletter::Limits> for w::Limits {
    fn from(l: deadletter::Limits) -> Self {
        Self {
            default_lease_ms: l.default_lease_ms,
            max_payload_bytes: l.max_payload_bytes as u64,
        }
    }
}

impl From<w::Limits> for deadletter::Limits {
    fn from(l: w::Limits) -> Self {
        Self {
            default_lease_ms: l.default_lease_ms,
            max_payload_bytes: usize::try_from(l.max_payload_bytes).unwrap_or(usize::MAX),
        }
    }
}

impl From<scan::Change> for w::Change {
    fn from(change: scan::Change) -> Self {
        match change {
            scan::Change::Put(stored) => Self::Put(stored.into()),
            scan::Change::Delete(id) => Self::Delete(id),
        }
    }
}

impl From<Stats> for w::Stats {
    fn from(s: Stats) -> Self {
        Self {
            queue: s.queue,
            pending: s.pending,
            processing: s.processing,
            succeeded: s.succeeded,
            dead: s.dead,
            expired: s.expired,
            delayed: s.delayed,
            next_due_at: s.next_due_at,
            oldest_due_age_ms: s.oldest_due_age_ms,
            oldest_dead_age_ms: s.oldest_dead_age_ms,
            paused: s.paused,
            expired_dead: s.expired_dead,
            expired_discarded: s.expired_discarded,
        }
    }
}

/// Messages of the core as WIT messages.
pub fn messages(list: Vec<deadletter::Message>) -> Vec<w::Message> {
    list.into_iter().map(Into::into).collect()
}
