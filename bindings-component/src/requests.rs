//! The checked requests of the core (`deadletter::engine::request`) as WIT records and back: a
//! host keeps the record `validate` gave and passes it to `apply` or `plan` unchanged.

use deadletter::{
    Action, BulkArgs, ClaimArgs, EnqueueArgs, EnqueueItem, ExtendArgs, FailArgs, ListArgs,
    ListQuery, MessageArgs, MoveAllArgs, MoveArgs, Page, PurgeArgs, ReplayArgs, Selection,
    SettingsArgs, SucceedArgs,
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
both_ways!(MoveArgs, w::MoveArgs, [queue, id, to_queue]);
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

both_ways!(
    Selection,
    w::Selection,
    [
        delayed,
        payload_contains,
        error_contains,
        group,
        idempotency_key,
        created_after,
        created_before,
        updated_after,
        updated_before,
        dead_after,
        dead_before
    ],
    options[status]
);

impl From<ListArgs> for w::ListArgs {
    fn from(a: ListArgs) -> Self {
        Self {
            queue: a.queue,
            selection: a.selection.into(),
            // At most 1000.
            limit: u32::try_from(a.limit).unwrap_or(u32::MAX),
            after_id: a.after_id,
        }
    }
}

impl From<w::ListArgs> for ListArgs {
    fn from(a: w::ListArgs) -> Self {
        Self {
            queue: a.queue,
            selection: a.selection.into(),
            limit: usize::try_from(a.limit).unwrap_or(usize::MAX),
            after_id: a.after_id,
        }
    }
}

impl From<ListQuery<'_>> for w::ListQuery {
    fn from(q: ListQuery<'_>) -> Self {
        Self {
            queue: q.queue.to_owned(),
            status: q.status.map(Into::into),
            // At most 1000 (or the scan's read, at most 10 000).
            limit: u32::try_from(q.limit).unwrap_or(u32::MAX),
            after_id: q.after_id,
        }
    }
}

impl From<Page> for w::Page {
    fn from(page: Page) -> Self {
        Self {
            messages: crate::convert::messages(page.messages),
            next_after_id: page.next_after_id,
        }
    }
}

impl From<Action> for w::BulkAction {
    fn from(action: Action) -> Self {
        match action {
            Action::Replay => Self::Replay,
            Action::Delete => Self::Delete,
            Action::RetryNow => Self::RetryNow,
            Action::Move => Self::Move,
        }
    }
}

impl From<w::BulkAction> for Action {
    fn from(action: w::BulkAction) -> Self {
        match action {
            w::BulkAction::Replay => Self::Replay,
            w::BulkAction::Delete => Self::Delete,
            w::BulkAction::RetryNow => Self::RetryNow,
            w::BulkAction::Move => Self::Move,
        }
    }
}

both_ways!(
    BulkArgs,
    w::BulkArgs,
    [queue, limit, dry_run],
    into[action, selection]
);
both_ways!(MoveAllArgs, w::MoveAllArgs, [to_queue], into[bulk]);
