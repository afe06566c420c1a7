//! The public operations: validate the arguments, then run atomic store calls with the pure
//! steps from [`crate::machine`]. Written once for every store, synchronous or not.

use crate::arg::Arg;
use crate::error::{Error, Result};
use crate::machine::{self, Moment};
use crate::message::{Id, Message, Millis, NewMessage, Status};
use crate::store::{Filter, ListQuery, Store};
use crate::validate::{
    Check, DEFAULT_LIST_LIMIT, DEFAULT_MAX_RETRIES, LIST_LIMIT_RANGE, Limits, MAX_BATCH,
    MAX_CLAIM_MANY, MAX_DELAY_MS, MAX_LEASE_MS, MAX_RETRIES_RANGE, MAX_TIME, MIN_TIME, later,
};

/// How many messages one transaction of `replay_all` or `purge` touches at most, so that other
/// connections never wait long for the write lock.
pub const BATCH: usize = 200;

/// The delay before the next attempt after the `retry_count`-th failure, in milliseconds:
/// `min(2^retry_count, 3600)` seconds, the default [`crate::Backoff`]. `retry_count`: integer >= 0,
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

/// A result, with the messages the call made dead (committed), for the dead-letter callbacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// What the operation returns.
    pub value: T,
    /// Every message this call moved to `dead`, in the order it did.
    pub dead: Vec<Message>,
}

impl<T> Outcome<T> {
    fn new(value: T, written: &[Message]) -> Self {
        let dead = written
            .iter()
            .filter(|m| m.status == Status::Dead)
            .cloned()
            .collect();
        Self { value, dead }
    }
}

/// The statistics of one queue at one instant (see [`Engine::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// The queue.
    pub queue: String,
    /// Messages waiting to be claimed (due or in backoff).
    pub pending: u64,
    /// Messages held by a worker (expired leases included until reaped).
    pub processing: u64,
    /// Messages acked.
    pub succeeded: u64,
    /// Messages in the dead-letter queue.
    pub dead: u64,
    /// `processing` messages whose lease has already run out (reaped by the next claim or reap).
    pub expired: u64,
    /// `pending` messages in backoff or delayed (`retry_after` in the future).
    pub delayed: u64,
    /// The earliest `retry_after` among delayed messages: when the next one becomes due.
    pub next_due_at: Option<Millis>,
    /// How long the oldest due `pending` message has been in the queue (`now - created_at`),
    /// in milliseconds (0 when the clock went back).
    pub oldest_due_age_ms: Option<Millis>,
    /// How long the oldest dead message has been dead (`now - dead_at`), in milliseconds.
    pub oldest_dead_age_ms: Option<Millis>,
}

/// A queue database: the rules of deadletter applied over a [`Store`].
///
/// Every method takes `now` (UTC milliseconds) from the caller and returns an error without
/// changing anything when an argument is rejected or a transition is not allowed; bulk operations
/// (`replay_all`, `purge`) commit batch by batch, each batch atomically.
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

    /// Adds a `pending` message (see [`Item`] for the arguments). With an idempotency key that a
    /// stored message of the queue carries, returns that message (`deduplicated` true) and
    /// inserts nothing, whatever its status.
    pub async fn enqueue(&self, queue: Arg<'_>, item: &Item<'_>, now: Millis) -> Result<Message> {
        let mut batch = self
            .insert(queue, std::slice::from_ref(item), false, now)
            .await?;
        batch
            .pop()
            .ok_or_else(|| Error::Store("the store returned no message".into()))
    }

    /// Adds every item in one transaction, all or nothing, in order (at most 1000). Idempotency
    /// keys are honoured against stored messages and inside the batch (the first occurrence
    /// wins). Field errors carry the index of their item.
    pub async fn enqueue_many(
        &self,
        queue: Arg<'_>,
        items: &[Item<'_>],
        now: Millis,
    ) -> Result<Vec<Message>> {
        self.insert(queue, items, true, now).await
    }

    /// Validates and inserts `items`; field errors carry their item's index when `batch`.
    async fn insert(
        &self,
        queue: Arg<'_>,
        items: &[Item<'_>],
        batch: bool,
        now: Millis,
    ) -> Result<Vec<Message>> {
        let mut check = Check::at(now);
        let queue = check.queue(&queue);
        if items.len() > MAX_BATCH {
            check.reject_too_large_batch(items.len(), MAX_BATCH);
        }
        let mut messages = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let before = check.len();
            let message = self.new_message(&mut check, item, now);
            if batch {
                check.tag_item(before, index);
            }
            messages.extend(message);
        }
        let queue = check.finish(|| queue.unwrap_or_default().to_owned())?;
        for message in &mut messages {
            message.queue.clone_from(&queue);
        }
        self.store.insert(messages).await
    }

    /// Validates one item; `None` when a field was rejected (recorded in `check`).
    fn new_message(&self, check: &mut Check, item: &Item<'_>, now: Millis) -> Option<NewMessage> {
        let payload = check.string("payload", &item.payload);
        if let Some(p) = payload.filter(|p| p.len() > self.limits.max_payload_bytes) {
            check.reject_too_large(p.len(), self.limits.max_payload_bytes);
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

    /// Takes the next due message of `queue` (FIFO by `created_at`, then id) and leases it to the
    /// caller for `lease_ms` (1..=12 h; default: the open-time lease) under a token from
    /// `tokens` (drawn at random by the binding). Expired leases of the queue are first counted
    /// as failed attempts under `at`'s policy. `None` when nothing is due.
    ///
    /// Leases are reaped lazily, by this call or [`Engine::reap`] (as SQS makes a message visible
    /// again only when it is received): until then, a message whose lease ran out still reads as
    /// `processing`, and its worker may still ack, fail or extend it with its token.
    pub async fn claim(
        &self,
        queue: Arg<'_>,
        lease_ms: Arg<'_>,
        tokens: impl FnMut() -> String,
        at: Moment<'_>,
    ) -> Result<Outcome<Option<Message>>> {
        let claimed = self
            .claim_many(queue, Arg::Int(1), lease_ms, tokens, at)
            .await?;
        Ok(Outcome {
            value: claimed.value.into_iter().next(),
            dead: claimed.dead,
        })
    }

    /// Like [`Engine::claim`] for up to `n` (1..=100) due messages, in claim order, in one
    /// transaction; empty when nothing is due.
    pub async fn claim_many(
        &self,
        queue: Arg<'_>,
        n: Arg<'_>,
        lease_ms: Arg<'_>,
        mut tokens: impl FnMut() -> String,
        at: Moment<'_>,
    ) -> Result<Outcome<Vec<Message>>> {
        let mut check = Check::at(at.now);
        let queue = check.queue(&queue);
        let n = check.int("n", &n, (1, MAX_CLAIM_MANY), None);
        let lease = check.int(
            "lease_ms",
            &lease_ms,
            (1, MAX_LEASE_MS),
            Some(self.limits.default_lease_ms),
        );
        let (queue, n, lease) = check.finish(|| {
            (
                queue.unwrap_or_default(),
                n.and_then(|n| usize::try_from(n).ok()).unwrap_or_default(),
                lease.unwrap_or_default(),
            )
        })?;
        let mut expired = 0;
        let claimed = self
            .store
            .claim(
                queue,
                at.now,
                n,
                |message| {
                    expired += 1;
                    machine::expire_lease(message, at.nth(expired - 1))
                },
                |message| {
                    debug_assert!(
                        machine::is_due(&message, at.now),
                        "store picked a message that is not due"
                    );
                    machine::claim(message, at.now, lease, tokens())
                },
            )
            .await?;
        Ok(Outcome::new(claimed.taken, &claimed.expired))
    }

    /// Counts the expired leases of `queue` as failed attempts now (what `claim` does first) and
    /// returns how many; so a queue whose workers all died still moves on when asked.
    pub async fn reap(&self, queue: Arg<'_>, at: Moment<'_>) -> Result<Outcome<u64>> {
        let queue = only_queue(&queue, at.now)?;
        let mut expired = 0;
        let claimed = self
            .store
            .claim(
                queue,
                at.now,
                0,
                |message| {
                    expired += 1;
                    machine::expire_lease(message, at.nth(expired - 1))
                },
                |_| Err(Error::Store("reap takes nothing".into())),
            )
            .await?;
        Ok(Outcome::new(count(&claimed.expired), &claimed.expired))
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
        let mut check = Check::at(now);
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let token = check.opt_string("lease_token", &lease_token);
        let (queue, id) = check.finish(|| (queue.unwrap_or_default(), id.unwrap_or_default()))?;
        self.store
            .update(queue, id, |m| machine::succeed(m, token, now))
            .await
    }

    /// Records a failed attempt of a `processing` message: back to `pending` after the backoff of
    /// `at`'s policy, or `dead` when retries are used up or `retryable` is false. `error` must be
    /// a string (stored truncated past 64 KiB); `retryable` a bool, default true.
    pub async fn fail(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        error: Arg<'_>,
        lease_token: Arg<'_>,
        retryable: Arg<'_>,
        at: Moment<'_>,
    ) -> Result<Outcome<Message>> {
        let mut check = Check::at(at.now);
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let error = check.text("error", &error);
        let token = check.opt_string("lease_token", &lease_token);
        let retryable = check.bool("retryable", &retryable, true);
        let (queue, id, error) = check.finish(|| {
            (
                queue.unwrap_or_default(),
                id.unwrap_or_default(),
                error.unwrap_or_default(),
            )
        })?;
        let message = self
            .store
            .update(queue, id, |m| machine::fail(m, error, token, retryable, at))
            .await?;
        Ok(Outcome::new(
            message.clone(),
            std::slice::from_ref(&message),
        ))
    }

    /// The heartbeat: moves the lease of a `processing` message to `now + lease_ms` (1..=12 h;
    /// default: the open-time lease). `lease_token` is required and must be the current one
    /// (else `conflict`: the lease was lost, expired and reaped or taken by another worker).
    pub async fn extend(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        lease_token: Arg<'_>,
        lease_ms: Arg<'_>,
        now: Millis,
    ) -> Result<Message> {
        let mut check = Check::at(now);
        let (queue, id) = (check.queue(&queue), check.id(&id));
        let token = check.string("lease_token", &lease_token);
        let lease = check.int(
            "lease_ms",
            &lease_ms,
            (1, MAX_LEASE_MS),
            Some(self.limits.default_lease_ms),
        );
        let (queue, id, token, lease) = check.finish(|| {
            (
                queue.unwrap_or_default(),
                id.unwrap_or_default(),
                token.unwrap_or_default(),
                lease.unwrap_or_default(),
            )
        })?;
        self.store
            .update(queue, id, |m| machine::extend(m, token, lease, now))
            .await
    }

    /// Sends a `dead` message back (redrive): -> `pending` with `retry_count` 0.
    pub async fn replay(&self, queue: Arg<'_>, id: Arg<'_>, now: Millis) -> Result<Message> {
        let (queue, id) = one_message(Check::at(now), &queue, &id)?;
        self.store
            .update(queue, id, |m| machine::replay(m, now))
            .await
    }

    /// Replays every dead message of `queue` that the filters select (`error_contains`: text the
    /// `last_error` contains, case-sensitive, without NUL; `dead_after <= dead_at <
    /// dead_before`, instants in UTC ms), at most `limit` (1.., default all), in id order;
    /// returns how many. Batches of [`BATCH`] messages, each in its own write transaction; a
    /// message replayed once is pending afterwards, so running it again does not replay it twice.
    pub async fn replay_all(
        &self,
        queue: Arg<'_>,
        error_contains: Arg<'_>,
        dead_before: Arg<'_>,
        dead_after: Arg<'_>,
        limit: Arg<'_>,
        now: Millis,
    ) -> Result<u64> {
        let mut check = Check::at(now);
        let queue = check.queue(&queue);
        let error_contains = check.opt_text("error_contains", &error_contains);
        let dead_before = check.opt_instant("dead_before", &dead_before);
        let dead_after = check.opt_instant("dead_after", &dead_after);
        let limit = match limit {
            Arg::Null => None,
            ref given => check.int("limit", given, (1, i64::MAX), None),
        };
        let filter = check.finish(|| Filter {
            queue: queue.unwrap_or_default(),
            status: Status::Dead,
            error_contains,
            dead_after,
            dead_before,
            updated_until: None,
        })?;
        let limit = limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
        self.in_batches(&filter, limit, async |ids| {
            let replayed = self
                .store
                .update_many(filter.queue, ids, |m| {
                    if filter.matches(&m) {
                        machine::replay(m, now).map(Some)
                    } else {
                        Ok(None)
                    }
                })
                .await?;
            Ok(count(&replayed))
        })
        .await
    }

    /// Deletes the finished messages of `queue` in `status` (`succeeded` or `dead` only; any
    /// other status is a validation error) whose `updated_at` is at least `older_than_ms`
    /// (>= 0) before `now`; returns how many. In batches, like [`Engine::replay_all`].
    pub async fn purge(
        &self,
        queue: Arg<'_>,
        status: Arg<'_>,
        older_than_ms: Arg<'_>,
        now: Millis,
    ) -> Result<u64> {
        let mut check = Check::at(now);
        let queue = check.queue(&queue);
        let status = check.finished_status(&status);
        let older = check.int(
            "older_than_ms",
            &older_than_ms,
            (0, MAX_TIME - MIN_TIME),
            None,
        );
        let filter = check.finish(|| Filter {
            queue: queue.unwrap_or_default(),
            status: status.unwrap_or(Status::Dead),
            error_contains: None,
            dead_after: None,
            dead_before: None,
            updated_until: Some(now.saturating_sub(older.unwrap_or_default())),
        })?;
        self.in_batches(&filter, u64::MAX, async |ids| {
            let deleted = self
                .store
                .delete_many(filter.queue, ids, |m| Ok(filter.matches(m)))
                .await?;
            Ok(count(&deleted))
        })
        .await
    }

    /// Runs `apply` on the ids `filter` selects, [`BATCH`] at a time in id order, until `limit`
    /// messages were applied or none is left; returns how many `apply` reported.
    async fn in_batches(
        &self,
        filter: &Filter<'_>,
        limit: u64,
        mut apply: impl AsyncFnMut(&[Id]) -> Result<u64>,
    ) -> Result<u64> {
        let (mut done, mut after) = (0u64, 0);
        while done < limit {
            let room = usize::try_from(limit - done)
                .unwrap_or(usize::MAX)
                .min(BATCH);
            let ids = self.store.select(filter, after, room).await?;
            let Some(&last) = ids.last() else { break };
            done += apply(&ids).await?;
            after = last;
        }
        Ok(done)
    }

    /// Removes one finished (`succeeded` or `dead`) message and returns it; `conflict` for any
    /// other status, `not_found` when the queue has no such message.
    pub async fn delete(&self, queue: Arg<'_>, id: Arg<'_>) -> Result<Message> {
        let (queue, id) = one_message(Check::default(), &queue, &id)?;
        let deleted = self
            .store
            .delete_many(queue, &[id], |m| machine::deletable(m).map(|()| true))
            .await?;
        deleted.into_iter().next().ok_or_else(|| Error::NotFound {
            queue: queue.to_owned(),
            id,
        })
    }

    /// The statistics of `queue` at `now` (see [`Stats`]), read from indexes.
    pub async fn stats(&self, queue: Arg<'_>, now: Millis) -> Result<Stats> {
        let queue = only_queue(&queue, now)?;
        self.stats_of(queue, now).await
    }

    /// The statistics of every queue that holds messages, by name.
    pub async fn queues(&self, now: Millis) -> Result<Vec<Stats>> {
        Check::at(now).finish(|| ())?;
        let mut all = Vec::new();
        for name in self.store.queues().await? {
            all.push(self.stats_of(&name, now).await?);
        }
        Ok(all)
    }

    async fn stats_of(&self, queue: &str, now: Millis) -> Result<Stats> {
        let counts = self.store.counts(queue, now).await?;
        let age = |since: Option<Millis>| since.map(|t| now.saturating_sub(t).max(0));
        let [pending, processing, succeeded, dead] = counts.by_status;
        Ok(Stats {
            queue: queue.to_owned(),
            pending,
            processing,
            succeeded,
            dead,
            expired: counts.expired,
            delayed: counts.delayed,
            next_due_at: counts.next_due_at,
            oldest_due_age_ms: age(counts.oldest_due_created_at),
            oldest_dead_age_ms: age(counts.oldest_dead_at),
        })
    }

    /// When the next delayed message of `queue` becomes due: the earliest `retry_after` later than
    /// `now` among its pending messages; `None` when none is delayed. Cheap (one index read): what
    /// an idle worker waits for.
    pub async fn next_due_at(&self, queue: Arg<'_>, now: Millis) -> Result<Option<Millis>> {
        let queue = only_queue(&queue, now)?;
        self.store.next_due_at(queue, now).await
    }

    /// One message; `not_found` when `queue` has no message `id`.
    pub async fn get(&self, queue: Arg<'_>, id: Arg<'_>) -> Result<Message> {
        let (queue, id) = one_message(Check::default(), &queue, &id)?;
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

/// The checked name of a call on a whole queue at `now`.
fn only_queue<'q>(queue: &Arg<'q>, now: Millis) -> Result<&'q str> {
    let mut check = Check::at(now);
    let queue = check.queue(queue);
    check.finish(|| queue.unwrap_or_default())
}

/// The checked queue and id of a call on one message, with the rest of `check`.
fn one_message<'q>(mut check: Check, queue: &Arg<'q>, id: &Arg<'_>) -> Result<(&'q str, Id)> {
    let (queue, id) = (check.queue(queue), check.id(id));
    check.finish(|| (queue.unwrap_or_default(), id.unwrap_or_default()))
}

fn count(messages: &[Message]) -> u64 {
    u64::try_from(messages.len()).unwrap_or(u64::MAX)
}
