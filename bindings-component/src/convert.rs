//! The WIT types of `types` and the core's, both ways: arguments, errors, messages, policies,
//! settings, contexts, stored messages and statistics. Field for field, nothing judged (the
//! requests are in [`crate::requests`]).

use deadletter::engine::scan;
use deadletter::{Arg, Backoff, Jitter, OnExpiry, QueueRow, QueueSettings, Stats, Status};

use crate::wit::types as w;

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

impl From<deadletter::FailedAttempt> for w::FailedAttempt {
    fn from(a: deadletter::FailedAttempt) -> Self {
        Self {
            attempt: a.attempt,
            error: a.error,
            at: a.at,
        }
    }
}

impl From<w::FailedAttempt> for deadletter::FailedAttempt {
    fn from(a: w::FailedAttempt) -> Self {
        Self {
            attempt: a.attempt,
            error: a.error,
            at: a.at,
        }
    }
}

impl From<deadletter::Message> for w::Message {
    fn from(m: deadletter::Message) -> Self {
        Self {
            id: m.id,
            queue: m.queue,
            payload: m.payload,
            status: m.status.into(),
            retry_count: m.retry_count,
            max_retries: m.max_retries,
            retry_after: m.retry_after,
            last_error: m.last_error,
            created_at: m.created_at,
            updated_at: m.updated_at,
            lease_token: m.lease_token,
            lease_expires_at: m.lease_expires_at,
            idempotency_key: m.idempotency_key,
            first_failed_at: m.first_failed_at,
            dead_at: m.dead_at,
            errors: m.errors.into_iter().map(Into::into).collect(),
            errors_dropped: m.errors_dropped,
            replay_count: m.replay_count,
            replayed_at: m.replayed_at,
            group: m.group,
            expires_at: m.expires_at,
            deduplicated: m.deduplicated,
        }
    }
}

impl From<w::Message> for deadletter::Message {
    fn from(m: w::Message) -> Self {
        Self {
            id: m.id,
            queue: m.queue,
            payload: m.payload,
            status: m.status.into(),
            retry_count: m.retry_count,
            max_retries: m.max_retries,
            retry_after: m.retry_after,
            last_error: m.last_error,
            created_at: m.created_at,
            updated_at: m.updated_at,
            lease_token: m.lease_token,
            lease_expires_at: m.lease_expires_at,
            idempotency_key: m.idempotency_key,
            first_failed_at: m.first_failed_at,
            dead_at: m.dead_at,
            errors: m.errors.into_iter().map(Into::into).collect(),
            errors_dropped: m.errors_dropped,
            replay_count: m.replay_count,
            replayed_at: m.replayed_at,
            group: m.group,
            expires_at: m.expires_at,
            deduplicated: m.deduplicated,
        }
    }
}

impl From<deadletter::NewMessage> for w::NewMessage {
    fn from(m: deadletter::NewMessage) -> Self {
        Self {
            queue: m.queue,
            payload: m.payload,
            max_retries: m.max_retries,
            idempotency_key: m.idempotency_key,
            retry_after: m.retry_after,
            group: m.group,
            expires_at: m.expires_at,
            now: m.now,
        }
    }
}

impl From<w::NewMessage> for deadletter::NewMessage {
    fn from(m: w::NewMessage) -> Self {
        Self {
            queue: m.queue,
            payload: m.payload,
            max_retries: m.max_retries,
            idempotency_key: m.idempotency_key,
            retry_after: m.retry_after,
            group: m.group,
            expires_at: m.expires_at,
            now: m.now,
        }
    }
}

impl From<Backoff> for w::Backoff {
    fn from(b: Backoff) -> Self {
        Self {
            initial_ms: b.initial_ms,
            multiplier: b.multiplier,
            cap_ms: b.cap_ms,
            jitter: match b.jitter {
                Jitter::None => w::Jitter::None,
                Jitter::Full => w::Jitter::Full,
                Jitter::Equal => w::Jitter::Equal,
            },
        }
    }
}

impl From<w::Backoff> for Backoff {
    fn from(b: w::Backoff) -> Self {
        Self {
            initial_ms: b.initial_ms,
            multiplier: b.multiplier,
            cap_ms: b.cap_ms,
            jitter: match b.jitter {
                w::Jitter::None => Jitter::None,
                w::Jitter::Full => Jitter::Full,
                w::Jitter::Equal => Jitter::Equal,
            },
        }
    }
}

/// The core's policy checked from WIT arguments (see [`Backoff::new`]).
pub fn backoff(policy: &w::BackoffArgs) -> deadletter::Result<Backoff> {
    Backoff::new(
        &arg(&policy.initial_ms),
        &arg(&policy.multiplier),
        &arg(&policy.cap_ms),
        &arg(&policy.jitter),
    )
}

impl From<QueueSettings> for w::QueueSettings {
    fn from(s: QueueSettings) -> Self {
        Self {
            backoff: s.backoff.map(Into::into),
            max_retries: s.max_retries,
            lease_ms: s.lease_ms,
            expires_in_ms: s.expires_in_ms,
            on_expiry: match s.on_expiry {
                OnExpiry::Dead => w::OnExpiry::Dead,
                OnExpiry::Discard => w::OnExpiry::Discard,
            },
            paused: s.paused,
        }
    }
}

impl From<w::QueueSettings> for QueueSettings {
    fn from(s: w::QueueSettings) -> Self {
        Self {
            backoff: s.backoff.map(Into::into),
            max_retries: s.max_retries,
            lease_ms: s.lease_ms,
            expires_in_ms: s.expires_in_ms,
            on_expiry: match s.on_expiry {
                w::OnExpiry::Dead => OnExpiry::Dead,
                w::OnExpiry::Discard => OnExpiry::Discard,
            },
            paused: s.paused,
        }
    }
}

impl From<QueueRow> for w::QueueRow {
    fn from(r: QueueRow) -> Self {
        Self {
            settings: r.settings.into(),
            expired_dead: r.expired_dead,
            expired_discarded: r.expired_discarded,
        }
    }
}

impl From<w::QueueRow> for QueueRow {
    fn from(r: w::QueueRow) -> Self {
        Self {
            settings: r.settings.into(),
            expired_dead: r.expired_dead,
            expired_discarded: r.expired_discarded,
        }
    }
}

/// A queue's stored row, or the row of a queue that has none.
pub fn row(stored: Option<w::QueueRow>) -> QueueRow {
    stored.map(Into::into).unwrap_or_default()
}

impl From<deadletter::Context> for w::Context {
    fn from(c: deadletter::Context) -> Self {
        Self {
            now: c.now,
            queue: c.queue.into(),
        }
    }
}

impl From<w::Context> for deadletter::Context {
    fn from(c: w::Context) -> Self {
        Self {
            now: c.now,
            queue: c.queue.into(),
        }
    }
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

impl From<scan::Stored> for w::Stored {
    fn from(s: scan::Stored) -> Self {
        Self {
            message: s.message.into(),
            group_at: s.group_at,
        }
    }
}

impl From<w::Stored> for scan::Stored {
    fn from(s: w::Stored) -> Self {
        Self {
            message: s.message.into(),
            group_at: s.group_at,
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
