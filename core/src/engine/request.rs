//! Validate: the arguments of each operation, as a binding received them ([`Arg`]s), checked once
//! into a typed request with the open-time [`Limits`]. Every rejected field of a call is reported
//! together, in a `validation_failed` error, before the store is called (no lock is taken for bad
//! input). What depends on the instant or on the queue's stored settings (a delay's
//! `retry_after`, an expiry, a default from the settings, an instant past the representable
//! range) is computed by the request's step inside the store's transaction, from its
//! [`Context`](crate::Context).
//!
//! A request owns what it holds (no borrow of the caller's arguments), so that a binding can keep
//! it across the awaits of its own store (the WebAssembly binding hands one to JavaScript, which
//! runs the IndexedDB transaction). Its steps, applied to each message read, are in
//! [`super::apply`]; [`super::Engine`] is these two halves over a [`crate::Store`].

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::Result;
use crate::message::{Id, Millis, Status};
use crate::validate::{
    Check, Limits, MAX_BATCH, MAX_CLAIM_MANY, MAX_DELAY_MS, MAX_EXPIRES_IN_MS, MAX_LEASE_MS,
    MAX_RETRIES_RANGE, MAX_TIME, MIN_TIME,
};

use super::filters::Filter;

/// The arguments of one message to enqueue, as the caller gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item<'a> {
    /// A string of at most `max_payload_bytes` bytes, stored verbatim.
    pub payload: Arg<'a>,
    /// Integer 1..=10; default: the queue's stored `max_retries`, else 3.
    pub max_retries: Arg<'a>,
    /// Optional non-empty string of at most 255 characters.
    pub idempotency_key: Arg<'a>,
    /// Optional integer 0..=30 days in milliseconds: not claimable before `now + delay`.
    pub delay_ms: Arg<'a>,
    /// Optional ordering group: a non-empty string of at most 255 characters without NUL.
    pub group: Arg<'a>,
    /// Optional integer 1 ms..=365 days: the message expires at `now + expires_in`; default: the
    /// queue's stored `expires_in_ms`, else never.
    pub expires_in_ms: Arg<'a>,
}

/// One checked item of an enqueue, before its instants are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueItem {
    /// The payload.
    pub payload: String,
    /// The call's `max_retries`, when it gave one.
    pub max_retries: Option<u32>,
    /// The idempotency key.
    pub idempotency_key: Option<String>,
    /// The delay, in milliseconds (0: none).
    pub delay_ms: Millis,
    /// The ordering group.
    pub group: Option<String>,
    /// The call's expiry, in milliseconds from the enqueue, when it gave one.
    pub expires_in_ms: Option<Millis>,
}

/// `enqueue` and `enqueue_many`: the items to insert, in order, checked. Their messages are made
/// at the store's [`crate::Context`] by [`EnqueueArgs::messages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueArgs {
    /// The queue.
    pub queue: String,
    /// One per item, in order.
    pub items: Vec<EnqueueItem>,
    /// Whether the call was `enqueue_many` (field errors then carry the item's index).
    pub batch: bool,
}

impl EnqueueArgs {
    /// Checks `queue` (a name messages can be put under: no control or format character but
    /// the joiners and the tags of three flags, something visible, no white space nor a loose
    /// joiner or variation selector at either end, not `.` or `..`; see
    /// [`crate::validate::new_queue_name`] for the rest) and every item (at most [`MAX_BATCH`]): the payload within
    /// `limits.max_payload_bytes`, `max_retries`, the idempotency key, `delay_ms` (0..=30 days),
    /// `group`, `expires_in_ms` (1 ms..=365 days; more than `delay_ms`, which
    /// [`EnqueueArgs::messages`] checks). With `batch`, the field errors of an item carry its
    /// index.
    pub fn new(queue: &Arg<'_>, items: &[Item<'_>], batch: bool, limits: &Limits) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.new_queue(queue);
        if items.len() > MAX_BATCH {
            check.reject_too_large_batch(items.len(), MAX_BATCH);
        }
        let mut checked = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let before = check.len();
            let one = enqueue_item(&mut check, item, limits);
            if batch {
                check.tag_item(before, index);
            }
            checked.extend(one);
        }
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            items: checked,
            batch,
        })
    }

    /// The distinct idempotency keys and ordering groups of the items, each sorted (what a
    /// store with finer locks than one write lock locks before it reads the clock).
    pub fn names(&self) -> (Vec<&str>, Vec<&str>) {
        let mut keys: Vec<&str> = self
            .items
            .iter()
            .filter_map(|i| i.idempotency_key.as_deref())
            .collect();
        let mut groups: Vec<&str> = self
            .items
            .iter()
            .filter_map(|i| i.group.as_deref())
            .collect();
        for names in [&mut keys, &mut groups] {
            names.sort_unstable();
            names.dedup();
        }
        (keys, groups)
    }
}

/// Checks one item; `None` when a field was rejected (recorded in `check`).
fn enqueue_item(check: &mut Check, item: &Item<'_>, limits: &Limits) -> Option<EnqueueItem> {
    let payload = check.string("payload", &item.payload);
    if let Some(p) = payload.filter(|p| p.len() > limits.max_payload_bytes) {
        check.reject_too_large(p.len(), limits.max_payload_bytes);
    }
    let max_retries = check.opt_int("max_retries", &item.max_retries, MAX_RETRIES_RANGE);
    let key = check.idempotency_key(&item.idempotency_key);
    let delay = check.int("delay_ms", &item.delay_ms, (0, MAX_DELAY_MS), Some(0));
    let group = check.group(&item.group);
    let expires_in = check.opt_int("expires_in_ms", &item.expires_in_ms, (1, MAX_EXPIRES_IN_MS));
    Some(EnqueueItem {
        payload: payload?.to_owned(),
        max_retries: max_retries.and_then(|n| u32::try_from(n).ok()),
        idempotency_key: key.map(str::to_owned),
        delay_ms: delay?,
        group: group.map(str::to_owned),
        expires_in_ms: expires_in,
    })
}

/// `claim`, `claim_many` and `reap`: take up to `n` due messages of `queue` under a lease, after
/// counting its expired leases as failed attempts and taking its expired messages out.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimArgs {
    /// The queue.
    pub queue: String,
    /// How many messages to take at most: 1..=100, or 0 for `reap` (expire only).
    pub n: usize,
    /// The call's lease, in milliseconds (1..=12 h), when it gave one.
    pub lease_ms: Option<Millis>,
    /// The database's open-time lease, the last fallback.
    pub default_lease_ms: Millis,
    /// The queue handle's own backoff policy, which wins over the stored one.
    pub backoff: Option<Backoff>,
    /// The jitter sample the binding drew for this call, in `[0, 1)`.
    pub sample: f64,
}

impl ClaimArgs {
    /// Checks `queue`, `n` (1..=100, required) and `lease_ms` (1..=12 h; default: the queue's
    /// stored lease, else the open-time lease); the jitter `sample` is the binding's to check
    /// ([`crate::validate::jitter_sample`], [`crate::validate::sampled`]).
    pub fn new(
        queue: &Arg<'_>,
        n: &Arg<'_>,
        lease_ms: &Arg<'_>,
        backoff: Option<&Backoff>,
        sample: f64,
        limits: &Limits,
    ) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.queue(queue);
        let n = check.int("n", n, (1, MAX_CLAIM_MANY), None);
        let lease = check.opt_int("lease_ms", lease_ms, (1, MAX_LEASE_MS));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            n: n.and_then(|n| usize::try_from(n).ok()).unwrap_or_default(),
            lease_ms: lease,
            default_lease_ms: limits.default_lease_ms,
            backoff: backoff.copied(),
            sample,
        })
    }

    /// `reap`: only the expired leases and messages of `queue` (`n` 0); the jitter `sample` as
    /// for [`ClaimArgs::new`].
    pub fn reap(queue: &Arg<'_>, backoff: Option<&Backoff>, sample: f64) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.queue(queue);
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            n: 0,
            lease_ms: None,
            default_lease_ms: 0,
            backoff: backoff.copied(),
            sample,
        })
    }
}

/// `succeed`: ack message `id` of `queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SucceedArgs {
    /// The queue.
    pub queue: String,
    /// The message.
    pub id: Id,
    /// When given, it must be the current lease token.
    pub lease_token: Option<String>,
}

impl SucceedArgs {
    /// Checks `queue`, `id` (>= 1) and the optional `lease_token` (a string).
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>, lease_token: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        let token = check.opt_string("lease_token", lease_token);
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            lease_token: token.map(str::to_owned),
        })
    }
}

/// `fail`: record a failed attempt of message `id` of `queue`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailArgs {
    /// The queue.
    pub queue: String,
    /// The message.
    pub id: Id,
    /// The error text (without NUL; stored truncated past 64 KiB).
    pub error: String,
    /// When given, it must be the current lease token.
    pub lease_token: Option<String>,
    /// False: dead at once, whatever retries are left.
    pub retryable: bool,
    /// This failure's own delay before the next attempt, in milliseconds, instead of the
    /// backoff (a `Retry-After` from downstream), when given.
    pub retry_in_ms: Option<Millis>,
    /// The queue handle's own backoff policy, which wins over the stored one.
    pub backoff: Option<Backoff>,
    /// The jitter sample the binding drew for this call, in `[0, 1)`.
    pub sample: f64,
}

impl FailArgs {
    /// Checks `queue`, `id`, `error` (a string without NUL), the optional `lease_token`,
    /// `retryable` (a bool, default true) and `retry_in_ms` (0..=30 days, like a delay); the
    /// jitter `sample` as for [`ClaimArgs::new`].
    #[allow(clippy::too_many_arguments)] // one per argument of `fail`, and the handle's two
    pub fn new(
        queue: &Arg<'_>,
        id: &Arg<'_>,
        error: &Arg<'_>,
        lease_token: &Arg<'_>,
        retryable: &Arg<'_>,
        retry_in_ms: &Arg<'_>,
        backoff: Option<&Backoff>,
        sample: f64,
    ) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        let error = check.text("error", error);
        let token = check.opt_string("lease_token", lease_token);
        let retryable = check.bool("retryable", retryable, true);
        let retry_in = check.opt_int("retry_in_ms", retry_in_ms, (0, MAX_DELAY_MS));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            error: error.unwrap_or_default().to_owned(),
            lease_token: token.map(str::to_owned),
            retryable,
            retry_in_ms: retry_in,
            backoff: backoff.copied(),
            sample,
        })
    }
}

/// `extend`: the heartbeat of message `id` of `queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendArgs {
    /// The queue.
    pub queue: String,
    /// The message.
    pub id: Id,
    /// The current lease token (required).
    pub lease_token: String,
    /// The call's new lease from now, in milliseconds (1..=12 h), when it gave one.
    pub lease_ms: Option<Millis>,
    /// The database's open-time lease, the last fallback.
    pub default_lease_ms: Millis,
}

impl ExtendArgs {
    /// Checks `queue`, `id`, `lease_token` (a string, required) and `lease_ms` (1..=12 h;
    /// default: the queue's stored lease, else the open-time lease).
    pub fn new(
        queue: &Arg<'_>,
        id: &Arg<'_>,
        lease_token: &Arg<'_>,
        lease_ms: &Arg<'_>,
        limits: &Limits,
    ) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        let token = check.string("lease_token", lease_token);
        let lease = check.opt_int("lease_ms", lease_ms, (1, MAX_LEASE_MS));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            lease_token: token.unwrap_or_default().to_owned(),
            lease_ms: lease,
            default_lease_ms: limits.default_lease_ms,
        })
    }
}

/// `get` and `delete`: one message of a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageArgs {
    /// The queue.
    pub queue: String,
    /// The message.
    pub id: Id,
}

impl MessageArgs {
    /// Checks `queue` and `id` (no clock is involved).
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
        })
    }
}

/// `replay`: send one dead message of a queue back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayArgs {
    /// The queue.
    pub queue: String,
    /// The message.
    pub id: Id,
    /// Its new expiry, in milliseconds from the replay, when the call gave one.
    pub expires_in_ms: Option<Millis>,
}

impl ReplayArgs {
    /// Checks `queue`, `id` and `expires_in_ms` (1 ms..=365 days; default: the queue's stored
    /// expiry, else never).
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>, expires_in_ms: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        let expires_in = check.opt_int("expires_in_ms", expires_in_ms, (1, MAX_EXPIRES_IN_MS));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            expires_in_ms: expires_in,
        })
    }
}

/// `purge`: the finished messages of a queue in one status, last updated at `updated_until` or
/// before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeArgs {
    /// The queue.
    pub queue: String,
    /// `succeeded` or `dead`.
    pub status: Status,
    /// `now - older_than_ms`.
    pub updated_until: Millis,
}

impl PurgeArgs {
    /// Checks `queue`, `status` (required: `succeeded` or `dead`) and `older_than_ms` (>= 0) at
    /// `now`.
    pub fn new(
        queue: &Arg<'_>,
        status: &Arg<'_>,
        older_than_ms: &Arg<'_>,
        now: Millis,
    ) -> Result<Self> {
        let mut check = Check::at(now);
        let queue = check.queue(queue);
        let status = check.finished_status(status);
        let older = check.int(
            "older_than_ms",
            older_than_ms,
            (0, MAX_TIME - MIN_TIME),
            None,
        );
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            status: status.unwrap_or(Status::Dead),
            updated_until: now.saturating_sub(older.unwrap_or_default()),
        })
    }

    /// Which messages it looks at.
    pub fn filter(&self) -> Filter<'_> {
        Filter {
            queue: &self.queue,
            status: Some(self.status),
            updated_until: Some(self.updated_until),
            ..Filter::default()
        }
    }
}

/// The checked name of a call on a whole queue at `now` (`stats`, `next_due_at`, `reap`).
pub fn queue_at(queue: &Arg<'_>, now: Millis) -> Result<String> {
    let mut check = Check::at(now);
    let queue = check.queue(queue);
    check.finish(|| queue.unwrap_or_default().to_owned())
}

/// Checks the clock alone (`queues`, which names no queue).
pub fn clock_at(now: Millis) -> Result<()> {
    Check::at(now).finish(|| ())
}

#[cfg(test)]
mod tests;
