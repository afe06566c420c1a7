//! What a store must do atomically. Stores select and persist; they never decide a next state:
//! every write goes through a step function from [`crate::machine`] that the engine hands them.

use std::future::Future;

use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis, NewMessage, Status};

/// One page of `list`: messages of `queue` (optionally of one `status`) with `id > after_id`,
/// ordered by id, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Only messages in this status, when set.
    pub status: Option<Status>,
    /// Page size, 1..=1000.
    pub limit: usize,
    /// Only ids greater than this (keyset pagination), when set.
    pub after_id: Option<Id>,
}

/// Which messages of one queue and status a bulk operation (`replay_all`, `purge`) looks at.
/// [`Filter::matches`] is the definition; stores may translate it into their query language, and
/// the engine checks it again on each message inside the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter<'a> {
    /// The queue.
    pub queue: &'a str,
    /// The status every selected message has.
    pub status: Status,
    /// Only messages whose `last_error` contains this text (case-sensitive), when set.
    pub error_contains: Option<&'a str>,
    /// Only messages with `dead_at >= dead_after`, when set.
    pub dead_after: Option<Millis>,
    /// Only messages with `dead_at < dead_before`, when set.
    pub dead_before: Option<Millis>,
    /// Only messages with `updated_at <= updated_until`, when set.
    pub updated_until: Option<Millis>,
}

impl Filter<'_> {
    /// Whether `message` is selected.
    pub fn matches(&self, message: &Message) -> bool {
        let dead_at = message.dead_at;
        message.queue == self.queue
            && message.status == self.status
            && self.error_contains.is_none_or(|text| {
                message
                    .last_error
                    .as_deref()
                    .is_some_and(|e| e.contains(text))
            })
            && self
                .dead_after
                .is_none_or(|after| dead_at.is_some_and(|at| at >= after))
            && self
                .dead_before
                .is_none_or(|before| dead_at.is_some_and(|at| at < before))
            && self
                .updated_until
                .is_none_or(|until| message.updated_at <= until)
    }
}

/// What one [`Store::claim`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The messages whose lease had run out, as `expire` left them.
    pub expired: Vec<Message>,
    /// The messages taken, as `take` left them, in claim order.
    pub taken: Vec<Message>,
}

/// What [`Store::counts`] reads of one queue at `now`, from indexes only (never payloads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// How many messages are in each status, in [`Status::ALL`] order.
    pub by_status: [u64; 4],
    /// `processing` messages whose lease has run out (`lease_expires_at <= now`), not reaped yet.
    pub expired: u64,
    /// `pending` messages waiting for their backoff or delay (`retry_after > now`).
    pub delayed: u64,
    /// The earliest `retry_after` among the delayed messages.
    pub next_due_at: Option<Millis>,
    /// The earliest `created_at` among the due `pending` messages.
    pub oldest_due_created_at: Option<Millis>,
    /// The earliest `dead_at` among the `dead` messages.
    pub oldest_dead_at: Option<Millis>,
}

/// Persistence for messages.
///
/// The methods return futures so that one trait serves both synchronous stores (SQLite, memory:
/// their futures are ready at once and are driven by `pollster::block_on` or any executor) and
/// asynchronous ones (IndexedDB, whose requests complete on the event loop). Step functions are
/// plain synchronous closures, so an asynchronous store can run read -> step -> write inside one
/// transaction without awaiting anything foreign to it.
///
/// Every method is atomic: on `Err` (from the store or from a step) nothing was written.
/// Stores must pass the shared conformance cases in `tests/conformance/`.
pub trait Store {
    /// Inserts `messages` in order, in one transaction, giving each an id strictly greater than
    /// every id the store assigned before (starting at 1, never reused, also after deletes). A
    /// message whose `idempotency_key` a stored message of its queue already carries (one stored
    /// before, or inserted earlier in this batch) is not inserted: that stored message is returned
    /// in its place, with `deduplicated` set. Stores enforce the key with a unique index, so two
    /// racing connections cannot both insert it.
    fn insert(&self, messages: Vec<NewMessage>) -> impl Future<Output = Result<Vec<Message>>>;

    /// Reads message `id`; `None` when there is none in `queue` (an id of another queue is absent).
    fn get(&self, queue: &str, id: Id) -> impl Future<Output = Result<Option<Message>>>;

    /// Reads message `id` of `queue`, writes `step(message)` and returns it, atomically.
    /// `Error::NotFound` when [`Store::get`] would return `None`; nothing is written when `step` fails.
    fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> impl Future<Output = Result<Message>>;

    /// Atomically, in one transaction:
    /// 1. every `processing` message of `queue` whose `lease_expires_at <= now` is replaced by
    ///    `expire(message)`, called in `(lease_expires_at, id)` order;
    /// 2. then up to `limit` `pending` messages of `queue` whose `retry_after` is null or
    ///    `<= now` (and that step 1 did not just write), ordered by `created_at` then `id`, are
    ///    each replaced by `take(message)`.
    ///
    /// `limit` 0 only reaps (step 1). Stores find both sets through indexes, so the cost does not
    /// grow with succeeded, dead or delayed messages.
    fn claim(
        &self,
        queue: &str,
        now: Millis,
        limit: usize,
        expire: impl FnMut(Message) -> Result<Message>,
        take: impl FnMut(Message) -> Result<Message>,
    ) -> impl Future<Output = Result<Claimed>>;

    /// One page of messages, see [`ListQuery`].
    fn list(&self, query: &ListQuery<'_>) -> impl Future<Output = Result<Vec<Message>>>;

    /// Read-only: the ids, ascending and greater than `after_id`, of at most `limit` messages
    /// that `filter` selects. Takes no write lock (the candidates are checked again by
    /// [`Store::update_many`] / [`Store::delete_many`]).
    fn select(
        &self,
        filter: &Filter<'_>,
        after_id: Id,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Id>>>;

    /// In one transaction, for each of `ids` still in `queue`: reads it and writes `step(message)`
    /// when that is `Some` (a `None` leaves it alone). Returns the messages written. An `Err` from
    /// a step writes nothing.
    fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        step: impl FnMut(Message) -> Result<Option<Message>>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// In one transaction, for each of `ids` still in `queue`: deletes it when `check(message)`
    /// is `Ok(true)`. Returns the deleted messages. An `Err` from `check` deletes nothing.
    fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        check: impl FnMut(&Message) -> Result<bool>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// The counters of `queue` at `now`, see [`Counts`].
    fn counts(&self, queue: &str, now: Millis) -> impl Future<Output = Result<Counts>>;

    /// The names of the queues that hold at least one message, in ascending (byte) order.
    fn queues(&self) -> impl Future<Output = Result<Vec<String>>>;

    /// The earliest `retry_after` later than `now` among the `pending` messages of `queue` (when
    /// the next delayed message becomes due), read from an index; `None` when none is delayed.
    /// The same value as [`Counts::next_due_at`], without counting anything.
    fn next_due_at(&self, queue: &str, now: Millis)
    -> impl Future<Output = Result<Option<Millis>>>;
}

/// What every store's [`Store::update`] does once it has read: `step(message)`, or `not_found`
/// when the store found no message `id` in `queue`.
pub fn apply_step(
    found: Option<Message>,
    queue: &str,
    id: Id,
    step: impl FnOnce(Message) -> Result<Message>,
) -> Result<Message> {
    step(found.ok_or_else(|| Error::NotFound {
        queue: queue.to_owned(),
        id,
    })?)
}

/// The [`Counts`] of `messages` (all of one queue) at `now`, computed message by message: the
/// definition the reference store uses and other stores' queries must agree with.
pub fn count<'a>(messages: impl IntoIterator<Item = &'a Message>, now: Millis) -> Counts {
    let mut counts = Counts::default();
    for message in messages {
        let slot = Status::ALL
            .iter()
            .position(|s| *s == message.status)
            .unwrap_or_default();
        counts.by_status[slot] += 1;
        if machine::lease_expired(message, now) {
            counts.expired += 1;
        }
        if machine::is_delayed(message, now) {
            counts.delayed += 1;
            counts.next_due_at = earliest(counts.next_due_at, message.retry_after);
        }
        if machine::is_due(message, now) {
            counts.oldest_due_created_at =
                earliest(counts.oldest_due_created_at, Some(message.created_at));
        }
        if message.status == Status::Dead {
            counts.oldest_dead_at = earliest(counts.oldest_dead_at, message.dead_at);
        }
    }
    counts
}

fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
