//! Validate: the arguments of each operation, as a binding received them ([`Arg`]s), checked once
//! into a typed request, with the caller's `now` and the open-time [`Limits`]. Every rejected
//! field of a call is reported together, in a `validation_failed` error, before anything is read
//! or written.
//!
//! A request owns what it holds (no borrow of the caller's arguments), so that a binding can keep
//! it across the awaits of its own store (the WebAssembly binding hands one to JavaScript, which
//! runs the IndexedDB transaction). Its steps, applied to each message read, are in
//! [`super::apply`]; [`super::Engine`] is these two halves over a [`crate::Store`].

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::Result;
use crate::machine::Moment;
use crate::message::{Id, Millis, NewMessage, Status};
use crate::store::{Filter, ListQuery};
use crate::validate::{
    Check, DEFAULT_LIST_LIMIT, DEFAULT_MAX_RETRIES, LIST_LIMIT_RANGE, Limits, MAX_BATCH,
    MAX_CLAIM_MANY, MAX_DELAY_MS, MAX_LEASE_MS, MAX_RETRIES_RANGE, MAX_TIME, MIN_TIME, later,
};

/// The arguments of one message to enqueue, as the caller gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item<'a> {
    /// A string of at most `max_payload_bytes` bytes, stored verbatim.
    pub payload: Arg<'a>,
    /// Integer 1..=10, default 3.
    pub max_retries: Arg<'a>,
    /// Optional non-empty string of at most 255 characters.
    pub idempotency_key: Arg<'a>,
    /// Optional integer 0..=30 days in milliseconds: not claimable before `now + delay`.
    pub delay_ms: Arg<'a>,
}

/// `enqueue` and `enqueue_many`: the messages to insert, in order, each with its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueArgs {
    /// One new message per item.
    pub messages: Vec<NewMessage>,
}

impl EnqueueArgs {
    /// Checks `queue` and every item (at most [`MAX_BATCH`]): the payload within
    /// `limits.max_payload_bytes`, `max_retries` (default 3), the idempotency key, `delay_ms`
    /// (default 0; `now + delay` must stay within the representable instants). With `batch`, the
    /// field errors of an item carry its index.
    pub fn new(
        queue: &Arg<'_>,
        items: &[Item<'_>],
        batch: bool,
        now: Millis,
        limits: &Limits,
    ) -> Result<Self> {
        let mut check = Check::at(now);
        let queue = check.queue(queue);
        if items.len() > MAX_BATCH {
            check.reject_too_large_batch(items.len(), MAX_BATCH);
        }
        let mut messages = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let before = check.len();
            let message = new_message(&mut check, item, now, limits);
            if batch {
                check.tag_item(before, index);
            }
            messages.extend(message);
        }
        let queue = check.finish(|| queue.unwrap_or_default().to_owned())?;
        for message in &mut messages {
            message.queue.clone_from(&queue);
        }
        Ok(Self { messages })
    }
}

/// Checks one item; `None` when a field was rejected (recorded in `check`).
fn new_message(
    check: &mut Check,
    item: &Item<'_>,
    now: Millis,
    limits: &Limits,
) -> Option<NewMessage> {
    let payload = check.string("payload", &item.payload);
    if let Some(p) = payload.filter(|p| p.len() > limits.max_payload_bytes) {
        check.reject_too_large(p.len(), limits.max_payload_bytes);
    }
    let max_retries = check.int(
        "max_retries",
        &item.max_retries,
        MAX_RETRIES_RANGE,
        Some(DEFAULT_MAX_RETRIES),
    );
    let key = check.idempotency_key(&item.idempotency_key);
    let delay = check.int("delay_ms", &item.delay_ms, (0, MAX_DELAY_MS), Some(0));
    let retry_after = match delay {
        Some(0) | None => None,
        Some(delay) => match later(now, delay) {
            Ok(at) => Some(at),
            Err(err) => {
                check.extend(err);
                None
            }
        },
    };
    Some(NewMessage {
        queue: String::new(),
        payload: payload?.to_owned(),
        max_retries: u32::try_from(max_retries?).ok()?,
        idempotency_key: key.map(str::to_owned),
        retry_after,
        now,
    })
}

/// `claim`, `claim_many` and `reap`: take up to `n` due messages of `queue` under a lease of
/// `lease_ms`, after counting its expired leases as failed attempts under `policy`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimArgs {
    /// The queue.
    pub queue: String,
    /// How many messages to take at most: 1..=100, or 0 for `reap` (expire only).
    pub n: usize,
    /// The lease of each message taken, in milliseconds (1..=12 h).
    pub lease_ms: Millis,
    /// The instant of the claim, UTC milliseconds.
    pub now: Millis,
    /// The queue's backoff policy, for the expired leases.
    pub policy: Backoff,
    /// The jitter sample the binding drew for this call, in `[0, 1)`.
    pub sample: f64,
}

impl ClaimArgs {
    /// Checks `queue`, `n` (1..=100, required) and `lease_ms` (1..=12 h; default the open-time
    /// lease) at `at.now`.
    pub fn new(
        queue: &Arg<'_>,
        n: &Arg<'_>,
        lease_ms: &Arg<'_>,
        at: Moment<'_>,
        limits: &Limits,
    ) -> Result<Self> {
        let mut check = Check::at(at.now);
        let queue = check.queue(queue);
        let n = check.int("n", n, (1, MAX_CLAIM_MANY), None);
        let lease = check.int(
            "lease_ms",
            lease_ms,
            (1, MAX_LEASE_MS),
            Some(limits.default_lease_ms),
        );
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            n: n.and_then(|n| usize::try_from(n).ok()).unwrap_or_default(),
            lease_ms: lease.unwrap_or_default(),
            now: at.now,
            policy: *at.policy,
            sample: at.sample,
        })
    }

    /// `reap`: only the expired leases of `queue` at `at.now` (`n` 0).
    pub fn reap(queue: &Arg<'_>, at: Moment<'_>) -> Result<Self> {
        Ok(Self {
            queue: queue_at(queue, at.now)?,
            n: 0,
            lease_ms: 0,
            now: at.now,
            policy: *at.policy,
            sample: at.sample,
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
    /// The instant, UTC milliseconds.
    pub now: Millis,
}

impl SucceedArgs {
    /// Checks `queue`, `id` (>= 1) and the optional `lease_token` (a string) at `now`.
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>, lease_token: &Arg<'_>, now: Millis) -> Result<Self> {
        let mut check = Check::at(now);
        let (queue, id) = (check.queue(queue), check.id(id));
        let token = check.opt_string("lease_token", lease_token);
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            lease_token: token.map(str::to_owned),
            now,
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
    /// The instant, UTC milliseconds.
    pub now: Millis,
    /// The queue's backoff policy.
    pub policy: Backoff,
    /// The jitter sample the binding drew for this call, in `[0, 1)`.
    pub sample: f64,
}

impl FailArgs {
    /// Checks `queue`, `id`, `error` (a string without NUL), the optional `lease_token` and
    /// `retryable` (a bool, default true) at `at.now`.
    pub fn new(
        queue: &Arg<'_>,
        id: &Arg<'_>,
        error: &Arg<'_>,
        lease_token: &Arg<'_>,
        retryable: &Arg<'_>,
        at: Moment<'_>,
    ) -> Result<Self> {
        let mut check = Check::at(at.now);
        let (queue, id) = (check.queue(queue), check.id(id));
        let error = check.text("error", error);
        let token = check.opt_string("lease_token", lease_token);
        let retryable = check.bool("retryable", retryable, true);
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            error: error.unwrap_or_default().to_owned(),
            lease_token: token.map(str::to_owned),
            retryable,
            now: at.now,
            policy: *at.policy,
            sample: at.sample,
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
    /// The new lease from `now`, in milliseconds (1..=12 h).
    pub lease_ms: Millis,
    /// The instant, UTC milliseconds.
    pub now: Millis,
}

impl ExtendArgs {
    /// Checks `queue`, `id`, `lease_token` (a string, required) and `lease_ms` (1..=12 h; default
    /// the open-time lease) at `now`.
    pub fn new(
        queue: &Arg<'_>,
        id: &Arg<'_>,
        lease_token: &Arg<'_>,
        lease_ms: &Arg<'_>,
        now: Millis,
        limits: &Limits,
    ) -> Result<Self> {
        let mut check = Check::at(now);
        let (queue, id) = (check.queue(queue), check.id(id));
        let token = check.string("lease_token", lease_token);
        let lease = check.int(
            "lease_ms",
            lease_ms,
            (1, MAX_LEASE_MS),
            Some(limits.default_lease_ms),
        );
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            lease_token: token.unwrap_or_default().to_owned(),
            lease_ms: lease.unwrap_or_default(),
            now,
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
    /// The instant, UTC milliseconds.
    pub now: Millis,
}

impl ReplayArgs {
    /// Checks `queue` and `id` at `now`.
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>, now: Millis) -> Result<Self> {
        let mut check = Check::at(now);
        let (queue, id) = (check.queue(queue), check.id(id));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            now,
        })
    }
}

/// `replay_all`: the dead messages of a queue that the filters select, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayAllArgs {
    /// The queue.
    pub queue: String,
    /// Only messages whose `last_error` contains this text.
    pub error_contains: Option<String>,
    /// Only messages with `dead_at < dead_before`.
    pub dead_before: Option<Millis>,
    /// Only messages with `dead_at >= dead_after`.
    pub dead_after: Option<Millis>,
    /// At most this many (`u64::MAX`: all).
    pub limit: u64,
    /// The instant, UTC milliseconds.
    pub now: Millis,
}

impl ReplayAllArgs {
    /// Checks `queue`, `error_contains` (a string without NUL), `dead_before` and `dead_after`
    /// (instants within the representable range) and `limit` (>= 1; null: all) at `now`.
    pub fn new(
        queue: &Arg<'_>,
        error_contains: &Arg<'_>,
        dead_before: &Arg<'_>,
        dead_after: &Arg<'_>,
        limit: &Arg<'_>,
        now: Millis,
    ) -> Result<Self> {
        let mut check = Check::at(now);
        let queue = check.queue(queue);
        let error_contains = check.opt_text("error_contains", error_contains);
        let dead_before = check.opt_instant("dead_before", dead_before);
        let dead_after = check.opt_instant("dead_after", dead_after);
        let limit = match limit {
            Arg::Null => None,
            given => check.int("limit", given, (1, i64::MAX), None),
        };
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            error_contains: error_contains.map(str::to_owned),
            dead_before,
            dead_after,
            limit: limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX)),
            now,
        })
    }

    /// Which messages it looks at.
    pub fn filter(&self) -> Filter<'_> {
        Filter {
            queue: &self.queue,
            status: Status::Dead,
            error_contains: self.error_contains.as_deref(),
            dead_after: self.dead_after,
            dead_before: self.dead_before,
            updated_until: None,
        }
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
            status: self.status,
            error_contains: None,
            dead_after: None,
            dead_before: None,
            updated_until: Some(self.updated_until),
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

/// `list`: checks `queue`, `status` (optional), `limit` (1..=1000, default 100) and `after_id`
/// (optional, >= 0).
pub fn list_query<'a>(
    queue: &Arg<'a>,
    status: &Arg<'_>,
    limit: &Arg<'_>,
    after_id: &Arg<'_>,
) -> Result<ListQuery<'a>> {
    let mut check = Check::default();
    let queue = check.queue(queue);
    let status = check.status(status);
    let limit = check.int("limit", limit, LIST_LIMIT_RANGE, Some(DEFAULT_LIST_LIMIT));
    let after_id = match after_id {
        Arg::Null => None,
        given => check.int("after_id", given, (0, i64::MAX), None),
    };
    check.finish(|| ListQuery {
        queue: queue.unwrap_or_default(),
        status,
        limit: limit
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_default(),
        after_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_767_225_600_000;

    fn fields(err: &crate::Error) -> Vec<(&'static str, &'static str, Option<usize>)> {
        err.field_errors()
            .iter()
            .map(|f| (f.field, f.code, f.index))
            .collect()
    }

    #[test]
    fn claim_args_are_typed_with_the_open_time_lease_by_default() {
        let policy = Backoff::default();
        let at = Moment {
            policy: &policy,
            sample: 0.25,
            now: NOW,
        };
        let args = ClaimArgs::new(
            &"jobs".into(),
            &Arg::Int(3),
            &Arg::Null,
            at,
            &Limits::default(),
        );
        assert_eq!(
            args,
            Ok(ClaimArgs {
                queue: "jobs".into(),
                n: 3,
                lease_ms: 30_000,
                now: NOW,
                policy,
                sample: 0.25
            })
        );
        let bad = ClaimArgs::new(
            &"".into(),
            &Arg::Int(0),
            &Arg::Float(1.5),
            at,
            &Limits::default(),
        );
        assert_eq!(
            fields(&bad.unwrap_err()),
            [
                ("queue", "empty", None),
                ("n", "out_of_range", None),
                ("lease_ms", "type", None)
            ]
        );
    }

    #[test]
    fn enqueue_args_tag_batch_items_and_fill_in_the_queue() {
        let ok = Item {
            payload: "a".into(),
            delay_ms: Arg::Int(5),
            ..Item::default()
        };
        let bad = Item {
            payload: Arg::Int(1),
            max_retries: Arg::Int(11),
            ..Item::default()
        };
        let err = EnqueueArgs::new(
            &"q".into(),
            &[ok.clone(), bad],
            true,
            NOW,
            &Limits::default(),
        );
        assert_eq!(
            fields(&err.unwrap_err()),
            [
                ("payload", "type", Some(1)),
                ("max_retries", "out_of_range", Some(1))
            ]
        );
        let args = EnqueueArgs::new(&"q".into(), &[ok], false, NOW, &Limits::default()).unwrap();
        assert_eq!(
            args.messages,
            [NewMessage {
                queue: "q".into(),
                payload: "a".into(),
                max_retries: 3,
                idempotency_key: None,
                retry_after: Some(NOW + 5),
                now: NOW
            }]
        );
    }

    #[test]
    fn a_clock_out_of_range_is_reported_with_the_other_fields() {
        let err = SucceedArgs::new(&"q".into(), &Arg::Int(0), &Arg::Int(1), MAX_TIME + 1);
        assert_eq!(
            fields(&err.unwrap_err()),
            [
                ("clock", "out_of_range", None),
                ("id", "out_of_range", None),
                ("lease_token", "type", None)
            ]
        );
    }

    #[test]
    fn purge_and_replay_all_select_through_their_filter() {
        let purge = PurgeArgs::new(&"q".into(), &"succeeded".into(), &Arg::Int(1000), NOW).unwrap();
        assert_eq!(purge.filter().updated_until, Some(NOW - 1000));
        assert_eq!(purge.filter().status, Status::Succeeded);
        let replay = ReplayAllArgs::new(
            &"q".into(),
            &"boom".into(),
            &Arg::Null,
            &Arg::Int(5),
            &Arg::Null,
            NOW,
        )
        .unwrap();
        assert_eq!(
            (
                replay.filter().error_contains,
                replay.filter().dead_after,
                replay.limit
            ),
            (Some("boom"), Some(5), u64::MAX)
        );
    }
}
