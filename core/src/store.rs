//! What a store must do atomically. Stores select and persist; they never decide a next state:
//! every write goes through a step function from [`crate::machine`] that the engine hands them.
//!
//! Every write runs, in one transaction: take the write lock (SQLite `BEGIN IMMEDIATE`,
//! PostgreSQL the row and group locks, IndexedDB a readwrite transaction, a mutex) -> read the
//! clock, once -> read the queue's row ([`QueueRow`]) -> read the messages -> call the step with
//! the [`Context`] -> write. So a call that waited for the lock decides with the instant it got
//! it, and with the settings in force then (issue 23, item 2).

use std::future::Future;

use crate::engine::{Claiming, EnqueueArgs};
use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis, Status};
use crate::settings::{Clock, Context, QueueRow};
use crate::storage;

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

/// What one [`Store::claim`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The messages whose lease had run out, as `expire` left them.
    pub expired: Vec<Message>,
    /// The pending messages whose expiry had come, as `sweep` left them (dead), or as they were
    /// when it discarded them.
    pub swept: Vec<Message>,
    /// The messages taken, as `take` left them, in claim order.
    pub taken: Vec<Message>,
}

impl Claimed {
    /// The messages the claim made dead, in the order it did: expired leases whose retries were
    /// used up, then messages dead at their expiry (a discarded one is not dead). What the
    /// dead-letter callbacks hear.
    pub fn dead(&self) -> Vec<Message> {
        let written = self.expired.iter().chain(&self.swept);
        written
            .filter(|m| m.status == Status::Dead)
            .cloned()
            .collect()
    }

    /// How many leases it expired and expired messages it took out: what `reap` returns.
    pub fn reaped(&self) -> u64 {
        let n = self.expired.len().saturating_add(self.swept.len());
        u64::try_from(n).unwrap_or(u64::MAX)
    }
}

/// What [`Store::counts`] reads of one queue at `now`, from indexes only (never payloads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// How many messages are in each status, in [`Status::ALL`] order.
    pub by_status: [u64; 4],
    /// `processing` messages whose lease has run out (`lease_expires_at <= now`), not reaped yet.
    pub expired: u64,
    /// `pending` messages waiting for their backoff or delay (`retry_after > now`), not counting
    /// the members blocked behind their group's head.
    pub delayed: u64,
    /// The earliest `retry_after` among the delayed messages.
    pub next_due_at: Option<Millis>,
    /// The `created_at` of the first due `pending` message (not blocked) in claim order: the
    /// message the next claim takes, lowest id first ([`crate::storage::claim_order`]). The
    /// earliest `created_at` of the due messages unless the clock went back between enqueues;
    /// stores read it from the head of their ready lane instead of scanning it.
    pub oldest_due_created_at: Option<Millis>,
    /// The earliest `dead_at` among the `dead` messages.
    pub oldest_dead_at: Option<Millis>,
    /// The queue's row: whether it is paused.
    pub paused: bool,
    /// The queue's row: expired messages made dead.
    pub expired_dead: u64,
    /// The queue's row: expired messages discarded.
    pub expired_discarded: u64,
}

impl Counts {
    /// The counters with the queue's row filled in.
    #[must_use]
    pub fn with_row(self, row: &QueueRow) -> Self {
        Self {
            paused: row.settings.paused,
            expired_dead: row.expired_dead,
            expired_discarded: row.expired_discarded,
            ..self
        }
    }
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
    /// In one transaction: takes the write lock (and, in a store with finer locks, those of the
    /// idempotency keys and groups of `args`' items), reads `clock` once and the queue's row, and
    /// inserts the messages of `args` at that [`Context`] ([`EnqueueArgs::messages`]), in order,
    /// giving each an id
    /// strictly greater than every id the store assigned before (starting at 1, never reused, also
    /// after deletes). A message whose `idempotency_key` a stored message of its queue already
    /// carries (one stored before, or inserted earlier in this batch) is not inserted: that stored
    /// message is returned in its place, with `deduplicated` set. Stores enforce the key with a
    /// unique index, so two racing connections cannot both insert it. A grouped message goes to
    /// the end of its group ([`crate::storage::group_at`] behind the group's tail), blocked unless
    /// the group had no live member (two racing enqueues must not both become heads).
    fn insert(
        &self,
        args: &EnqueueArgs,
        clock: Clock<'_>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// Reads message `id`; `None` when there is none in `queue` (an id of another queue is absent).
    fn get(&self, queue: &str, id: Id) -> impl Future<Output = Result<Option<Message>>>;

    /// In one transaction: takes the write lock, reads `clock` once, the queue's row and message
    /// `id` of `queue`, writes `step(message, context)` and returns it. `Error::NotFound` when
    /// [`Store::get`] would return `None`; nothing is written when `step` fails. When the write
    /// takes a grouped message out of its group, the group's next member is unblocked
    /// ([`crate::storage::next_head`]); when it puts one back (a replay), it goes to the group's
    /// end.
    ///
    /// `step` may be called more than once, and only its last result is written: a store may
    /// run it first on a message and queue row it remembers, and again on the ones it reads when
    /// its database says they changed since (the PostgreSQL store's one-round-trip ack, issue 24).
    /// So it must decide from its arguments alone, as the machine's steps do.
    fn update(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context) -> Result<Message>,
    ) -> impl Future<Output = Result<Message>>;

    /// Atomically, in one transaction, once the write lock is held, `clock` read once and the
    /// queue's row read: `start(context)` says what to do; `None` (a paused queue's claim): nothing.
    /// Otherwise, with its [`Claiming`]:
    /// 1. every `processing` message of `queue` whose `lease_expires_at <= now` is replaced by
    ///    `expire(message, index)`, called in `(lease_expires_at, id)` order;
    /// 2. every `pending` message of `queue` whose `expires_at <= now` (ready, waiting or
    ///    blocked) is replaced by `sweep(message)` (or deleted when it returns `None`), in
    ///    `(expires_at, id)` order, and counted in the queue's row ([`QueueRow::count_expired`]);
    /// 3. the groups these took a member out of get their next member unblocked;
    /// 4. then up to `n` due `pending` messages of `queue` (`retry_after` null or `<= now`, not
    ///    blocked, and not one that step 1 just wrote), in claim order (by id:
    ///    [`crate::storage::claim_order`]), are each
    ///    replaced by `take(message, tokens())`.
    ///
    /// `n` 0 only reaps (steps 1-3). Stores find every set through indexes, so the cost does not
    /// grow with succeeded, dead, delayed or blocked messages.
    fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        tokens: impl FnMut() -> String,
    ) -> impl Future<Output = Result<Claimed>>;

    /// One page of messages, see [`ListQuery`]. Read-only: takes no write lock. The engine's
    /// `list` and bulk actions read the queue through it and filter what it returns
    /// ([`crate::Filter::matches`]); the bulk actions then write the ids they selected with
    /// [`Store::update_many`] / [`Store::delete_many`], which check each message again.
    fn list(&self, query: &ListQuery<'_>) -> impl Future<Output = Result<Vec<Message>>>;

    /// In one transaction (write lock, `clock` read once, the queue's row), for each of `ids`
    /// still in `queue`, in order: reads it and writes `step(message, context)` when that is
    /// `Some` (a `None` leaves it alone), with the group bookkeeping of [`Store::update`]. Returns
    /// the messages written. An `Err` from a step writes nothing.
    fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// In one transaction, for each of `ids` still in `queue`: deletes it when `check(message)`
    /// is `Ok(true)`. Returns the deleted messages. An `Err` from `check` deletes nothing.
    /// (Only finished messages are deleted this way, so no group changes.)
    fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        check: impl FnMut(&Message) -> Result<bool>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// `move` and `move_all` (issue 22). In one transaction (write lock, `clock` read once, the
    /// row of `queue`), for each of `ids` still in `queue`, in order: reads it and whether a
    /// message of `to_queue` carries its idempotency key (`taken`; false for a message without
    /// one), and writes `step(message, context, taken)` when that is `Some` (a `None` leaves it
    /// alone): the message the step returns, whose `queue` is `to_queue` now (with `moved_from`
    /// and `updated_at` the step set), under its id. A grouped `pending` message leaves its group
    /// in `queue` (the group's next member is unblocked, [`crate::storage::next_head`]) and goes
    /// to the end of the group of the same name in `to_queue` ([`crate::storage::group_at`]
    /// behind its tail, with its own id), blocked unless that group had no live member. The
    /// unique index of `(queue, idempotency_key)` holds: a step never moves a message whose key
    /// is taken, and a key inserted into `to_queue` by a racing connection makes the write fail
    /// with a store error, never two messages with one key. Returns the messages written. An
    /// `Err` from a step writes nothing.
    fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> impl Future<Output = Result<Vec<Message>>>;

    /// The keys among `keys` that a stored message of `queue` carries as its idempotency key, in
    /// any order (read-only, from the unique index of keys): what a dry run of `move_all` asks
    /// of the target queue.
    fn keys_taken(&self, queue: &str, keys: &[&str]) -> impl Future<Output = Result<Vec<String>>>;

    /// The counters of `queue` at `now`, see [`Counts`], with its row's.
    fn counts(&self, queue: &str, now: Millis) -> impl Future<Output = Result<Counts>>;

    /// The names of the queues that hold at least one message or have a stored row, in ascending
    /// (byte) order.
    fn queues(&self) -> impl Future<Output = Result<Vec<String>>>;

    /// The earliest `retry_after` later than `now` among the `pending` messages of `queue` that
    /// are not blocked behind their group's head (when the next delayed message becomes due),
    /// read from an index; `None` when none is delayed. The same value as
    /// [`Counts::next_due_at`], without counting anything.
    fn next_due_at(&self, queue: &str, now: Millis)
    -> impl Future<Output = Result<Option<Millis>>>;

    /// The queue's stored row; [`QueueRow::default`] when it has none (reading writes nothing).
    fn queue_row(&self, queue: &str) -> impl Future<Output = Result<QueueRow>>;

    /// In one transaction: reads the queue's row (the default when it has none) and writes
    /// `step(row)`, which it returns, when it is [`QueueRow::worth_storing`]; otherwise the queue
    /// has no row (it had none, or the one it had is deleted), so that a queue whose settings are
    /// all back to the defaults (a mistyped `pause` resumed, a `set_settings` of nothing) is not
    /// listed by [`Store::queues`] once it holds no message (new-user finding F5, session 6).
    fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> impl Future<Output = Result<QueueRow>>;
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

/// The [`Counts`] of `messages` (all of one queue, each with whether it is blocked behind its
/// group's head) at `now`, computed message by message: the definition the reference store uses
/// and other stores' queries must agree with. A blocked member counts as pending, neither due nor
/// delayed.
pub fn count<'a>(messages: impl IntoIterator<Item = (&'a Message, bool)>, now: Millis) -> Counts {
    let mut counts = Counts::default();
    let mut first_due = None;
    for (message, blocked) in messages {
        let slot = Status::ALL
            .iter()
            .position(|s| *s == message.status)
            .unwrap_or_default();
        counts.by_status[slot] += 1;
        if machine::lease_expired(message, now) {
            counts.expired += 1;
        }
        if blocked {
            continue;
        }
        if machine::is_delayed(message, now) {
            counts.delayed += 1;
            counts.next_due_at = earliest(counts.next_due_at, message.retry_after);
        }
        if machine::is_due(message, now)
            && first_due.is_none_or(|first| storage::claim_order(message) < first)
        {
            first_due = Some(storage::claim_order(message));
            counts.oldest_due_created_at = Some(message.created_at);
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
