//! The checked requests of the core (`deadletter::engine::request`) as WIT records and back: a
//! host keeps the record `validate` gave and passes it to `apply` or `plan` unchanged.

use deadletter::{
    ClaimArgs, EnqueueArgs, EnqueueItem, ExtendArgs, FailArgs, ListQuery, MessageArgs, PurgeArgs,
    ReplayAllArgs, ReplayArgs, SettingsArgs, SucceedArgs,
};

use crate::wit::types as w;

/// `From` both ways between a core request and its WIT record whose fields have the same names
/// and types.
macro_rules! same_fields {
    ($core:ty, $wit:ty, [$($field:ident),*]) => {
        impl From<$core> for $wit {
            fn from(a: $core) -> Self {
                Self { $($field: a.$field),* }
            }
        }

        impl From<$wit> for $core {
            fn from(a: $wit) -> Self {
                Self { $($field: a.$field),* }
            }
        }
    };
}

same_fields!(SucceedArgs, w::SucceedArgs, [queue, id, lease_token]);
same_fields!(
    ExtendArgs,
    w::ExtendArgs,
    [queue, id, lease_token, lease_ms, default_lease_ms]
);
same_fields!(MessageArgs, w::MessageArgs, [queue, id]);
same_fields!(ReplayArgs, w::ReplayArgs, [queue, id, expires_in_ms]);
same_fields!(
    ReplayAllArgs,
    w::ReplayAllArgs,
    [queue, error_contains, dead_before, dead_after, limit]
);
same_fields!(
    EnqueueItem,
    w::EnqueueItem,
    [
        payload,
        max_retries,
        idempotency_key,
        delay_ms,
        group,
        expires_in_ms
    ]
);

impl From<EnqueueArgs> for w::EnqueueArgs {
    fn from(a: EnqueueArgs) -> Self {
        Self {
            queue: a.queue,
            items: a.items.into_iter().map(Into::into).collect(),
            batch: a.batch,
        }
    }
}

impl From<w::EnqueueArgs> for EnqueueArgs {
    fn from(a: w::EnqueueArgs) -> Self {
        Self {
            queue: a.queue,
            items: a.items.into_iter().map(Into::into).collect(),
            batch: a.batch,
        }
    }
}

impl From<ClaimArgs> for w::ClaimArgs {
    fn from(a: ClaimArgs) -> Self {
        Self {
            queue: a.queue,
            // At most 100 (0 for a reap).
            n: u32::try_from(a.n).unwrap_or(u32::MAX),
            lease_ms: a.lease_ms,
            default_lease_ms: a.default_lease_ms,
            backoff: a.backoff.map(Into::into),
            sample: a.sample,
        }
    }
}

impl From<w::ClaimArgs> for ClaimArgs {
    fn from(a: w::ClaimArgs) -> Self {
        Self {
            queue: a.queue,
            n: usize::try_from(a.n).unwrap_or(usize::MAX),
            lease_ms: a.lease_ms,
            default_lease_ms: a.default_lease_ms,
            backoff: a.backoff.map(Into::into),
            sample: a.sample,
        }
    }
}

impl From<FailArgs> for w::FailArgs {
    fn from(a: FailArgs) -> Self {
        Self {
            queue: a.queue,
            id: a.id,
            error: a.error,
            lease_token: a.lease_token,
            retryable: a.retryable,
            retry_in_ms: a.retry_in_ms,
            backoff: a.backoff.map(Into::into),
            sample: a.sample,
        }
    }
}

impl From<w::FailArgs> for FailArgs {
    fn from(a: w::FailArgs) -> Self {
        Self {
            queue: a.queue,
            id: a.id,
            error: a.error,
            lease_token: a.lease_token,
            retryable: a.retryable,
            retry_in_ms: a.retry_in_ms,
            backoff: a.backoff.map(Into::into),
            sample: a.sample,
        }
    }
}

impl From<PurgeArgs> for w::PurgeArgs {
    fn from(a: PurgeArgs) -> Self {
        Self {
            queue: a.queue,
            status: a.status.into(),
            updated_until: a.updated_until,
        }
    }
}

impl From<w::PurgeArgs> for PurgeArgs {
    fn from(a: w::PurgeArgs) -> Self {
        Self {
            queue: a.queue,
            status: a.status.into(),
            updated_until: a.updated_until,
        }
    }
}

impl From<ListQuery<'_>> for w::ListArgs {
    fn from(q: ListQuery<'_>) -> Self {
        Self {
            queue: q.queue.to_owned(),
            status: q.status.map(Into::into),
            // At most 1000.
            limit: u32::try_from(q.limit).unwrap_or(u32::MAX),
            after_id: q.after_id,
        }
    }
}

impl From<SettingsArgs> for w::SettingsArgs {
    fn from(a: SettingsArgs) -> Self {
        Self {
            queue: a.queue,
            settings: a.settings.into(),
        }
    }
}

impl From<w::SettingsArgs> for SettingsArgs {
    fn from(a: w::SettingsArgs) -> Self {
        Self {
            queue: a.queue,
            settings: a.settings.into(),
        }
    }
}
