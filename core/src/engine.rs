//! The public operations: validate the arguments, then run one atomic store call with the pure
//! step from [`crate::machine`]. Written once for every store, synchronous or not.

use crate::arg::Arg;
use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Message, Millis, NewMessage};
use crate::store::{ListQuery, Store};
use crate::validate::{
    Check, DEFAULT_LIST_LIMIT, DEFAULT_MAX_RETRIES, LIST_LIMIT_RANGE, Limits, MAX_LEASE_MS,
    MAX_RETRIES_RANGE,
};

/// The delay before the next attempt after the `retry_count`-th failure, in milliseconds:
/// `min(2^retry_count, 3600)` seconds (see [`machine::backoff_ms`]). `retry_count`: integer >= 0,
/// any size up to `i64::MAX`. Bindings expose it so users can show or plan the schedule.
pub fn backoff(retry_count: &Arg<'_>) -> Result<Millis> {
    let mut check = Check::default();
    let count = check.int("retry_count", retry_count, (0, i64::MAX), None);
    check.finish(|| {
        machine::backoff_ms(
            count
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(u32::MAX),
        )
    })
}

/// A queue database: the rules of deadletter applied over a [`Store`].
///
/// Every method takes `now` (UTC milliseconds) from the caller and returns an error without
/// changing anything when an argument is rejected or a transition is not allowed.
#[derive(Debug)]
pub struct Engine<S> {
    store: S,
    limits: Limits,
}

impl<S: Store> Engine<S> {
    /// An engine over `store` with the open-time `limits`.
    pub fn new(store: S, limits: Limits) -> Self {
        Self { store, limits }
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The limits it was opened with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Adds a `pending` message. `queue`: non-empty string, at most 255 characters; `payload`: a
    /// string of at most `max_payload_bytes` bytes, stored verbatim; `max_retries`: integer 1..=10,
    /// default 3.
    pub async fn enqueue(
        &self,
        queue: Arg<'_>,
        payload: Arg<'_>,
        max_retries: Arg<'_>,
        now: Millis,
    ) -> Result<Message> {
        let mut check = Check::default();
        let queue = check.queue(&queue);
        let payload = check.string("payload", &payload);
        if let Some(p) = payload.filter(|p| p.len() > self.limits.max_payload_bytes) {
            check.reject_too_large(p.len(), self.limits.max_payload_bytes);
        }
        let max_retries = check.int(
            "max_retries",
            &max_retries,
            MAX_RETRIES_RANGE,
            Some(DEFAULT_MAX_RETRIES),
        );
        let message = check.finish(|| NewMessage {
            queue: queue.unwrap_or_default().to_owned(),
            payload: payload.unwrap_or_default().to_owned(),
            max_retries: max_retries
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or_default(),
            now,
        })?;
        self.store.insert(message).await
    }

    /// Takes the next due message of `queue` (FIFO by `created_at`, then id) and leases it to the
    /// caller for `lease_ms` (1..=12 h; default: the open-time lease) under `lease_token`, which the
    /// binding draws at random. Expired leases of the queue are first counted as failed attempts.
    /// `None` when nothing is due.
    ///
    /// Leases are reaped lazily, by this call (as SQS makes a message visible again only when it is
    /// received): until the next `claim` on its queue, a message whose lease ran out still reads as
    /// `processing`, and its worker may still ack or fail it with its token.
    pub async fn claim(
        &self,
        queue: Arg<'_>,
        lease_ms: Arg<'_>,
        lease_token: String,
        now: Millis,
    ) -> Result<Option<Message>> {
        let mut check = Check::default();
        let queue = check.queue(&queue);
        let lease = check.int(
            "lease_ms",
            &lease_ms,
            (1, MAX_LEASE_MS),
            Some(self.limits.default_lease_ms),
        );
        let (queue, lease) =
            check.finish(|| (queue.unwrap_or_default(), lease.unwrap_or_default()))?;
        self.store
            .claim(
                queue,
                now,
                |message| machine::expire_lease(message, now),
                |message| {
                    debug_assert!(
                        machine::is_due(&message, now),
                        "store picked a message that is not due"
                    );
                    machine::claim(message, now, lease, lease_token)
                },
            )
            .await
    }

    /// Acks a `processing` message: -> `succeeded`. `lease_token`, when given, must be the current
    /// one (else `conflict`: the lease was lost).
    pub async fn succeed(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        lease_token: Arg<'_>,
        now: Millis,
    ) -> Result<Message> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let token = check.opt_string("lease_token", &lease_token);
        let (queue, id) = check.finish(|| (queue.unwrap_or_default(), id.unwrap_or_default()))?;
        self.store
            .update(queue, id, |m| machine::succeed(m, token, now))
            .await
    }

    /// Records a failed attempt of a `processing` message: back to `pending` after the backoff, or
    /// `dead` when retries are used up or `retryable` is false. `error` must be a string (stored
    /// truncated past 64 KiB); `retryable` a bool, default true.
    pub async fn fail(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        error: Arg<'_>,
        lease_token: Arg<'_>,
        retryable: Arg<'_>,
        now: Millis,
    ) -> Result<Message> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let error = check.string("error", &error);
        let token = check.opt_string("lease_token", &lease_token);
        let retryable = check.bool("retryable", &retryable, true);
        let (queue, id, error) = check.finish(|| {
            (
                queue.unwrap_or_default(),
                id.unwrap_or_default(),
                error.unwrap_or_default(),
            )
        })?;
        self.store
            .update(queue, id, |m| {
                machine::fail(m, error, token, retryable, now)
            })
            .await
    }

    /// Sends a `dead` message back (redrive): -> `pending` with `retry_count` 0.
    pub async fn replay(&self, queue: Arg<'_>, id: Arg<'_>, now: Millis) -> Result<Message> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let (queue, id) = check.finish(|| (queue.unwrap_or_default(), id.unwrap_or_default()))?;
        self.store
            .update(queue, id, |m| machine::replay(m, now))
            .await
    }

    /// One message; `not_found` when `queue` has no message `id`.
    pub async fn get(&self, queue: Arg<'_>, id: Arg<'_>) -> Result<Message> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let (queue, id) = check.finish(|| (queue.unwrap_or_default(), id.unwrap_or_default()))?;
        let found = self.store.get(queue, id).await?;
        found.ok_or_else(|| Error::NotFound {
            queue: queue.to_owned(),
            id,
        })
    }

    /// Messages of `queue` ordered by id: only `status` when given (`pending`, `processing`,
    /// `succeeded`, `dead`), at most `limit` (1..=1000, default 100), ids above `after_id`.
    pub async fn list(
        &self,
        queue: Arg<'_>,
        status: Arg<'_>,
        limit: Arg<'_>,
        after_id: Arg<'_>,
    ) -> Result<Vec<Message>> {
        let mut check = Check::default();
        let queue = check.queue(&queue);
        let status = check.status(&status);
        let limit = check.int("limit", &limit, LIST_LIMIT_RANGE, Some(DEFAULT_LIST_LIMIT));
        let after_id = match after_id {
            Arg::Null => None,
            ref given => check.int("after_id", given, (0, i64::MAX), None),
        };
        let query = check.finish(|| ListQuery {
            queue: queue.unwrap_or_default(),
            status,
            limit: limit
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or_default(),
            after_id,
        })?;
        self.store.list(&query).await
    }
}
