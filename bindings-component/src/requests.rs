//! The checked requests of the core (`deadletter::engine::request`) as WIT records and back: a
//! host keeps the record `validate` gave and passes it to `apply` or `plan` unchanged.

use deadletter::{
    ClaimArgs, EnqueueArgs, EnqueueItem, ExtendArgs, FailArgs, ListQuery, MessageArgs, PurgeArgs,
    ReplayAllArgs, ReplayArgs, SettingsArgs, SucceedArgs,
};

use crate::convert::both_ways;
use crate::wit::types as w;

both_ways!(SucceedArgs, w::SucceedArgs, [queue, id, lease_token]);
both_ways!(
    ExtendArgs,
    w::ExtendArgs,
    [queue, id, lease_token, lease_ms, default_lease_ms]
);
both_ways!(MessageArgs, w::MessageArgs, [queue, id]);
both_ways!(ReplayArgs, w::ReplayArgs, [queue, id, expires_in_ms]);
both_ways!(
    ReplayAllArgs,
    w::ReplayAllArgs,
    [queue, error_contains, dead_before, dead_after, limit]
);
both_ways!(
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

both_ways!(EnqueueArgs, w::EnqueueArgs, [queue, batch], each[items]);

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

both_ways!(
    FailArgs,
    w::FailArgs,
    [
        queue,
        id,
        error,
        lease_token,
        retryable,
        retry_in_ms,
        sample
    ],
    options[backoff]
);
both_ways!(
    PurgeArgs,
    w::PurgeArgs,
    [queue, updated_until],
    into[status]
);
both_ways!(SettingsArgs, w::SettingsArgs, [queue], into[settings]);

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
