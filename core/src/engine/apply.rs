//! Apply: the step of each checked request ([`super::request`]) on one message read, inside the
//! store's atomic read-modify-write: the next message (the [`crate::machine`] transition with the
//! request's arguments) or the error that leaves it unchanged. A store, or a binding that drives
//! its own store (the IndexedDB store in JavaScript), calls these and decides nothing else.
//!
//! Also the shapes of what the operations return: [`Outcome`] (a value with the messages the
//! call made dead) and [`Stats`] (a queue's statistics from the store's [`Counts`]).

use crate::error::{Error, Result};
use crate::machine::{self, Moment};
use crate::message::{Id, Message, Millis, Status};
use crate::store::{Counts, Filter, apply_step};

use super::request::{
    ClaimArgs, ExtendArgs, FailArgs, MessageArgs, PurgeArgs, ReplayAllArgs, ReplayArgs, SucceedArgs,
};

impl ClaimArgs {
    /// The moment of the claim: its instant, the queue's policy and the call's jitter sample.
    pub fn moment(&self) -> Moment<'_> {
        Moment {
            policy: &self.policy,
            sample: self.sample,
            now: self.now,
        }
    }

    /// The `index`-th (0-based) lease of this claim found run out: a failed attempt with the error
    /// `lease expired`, rescheduled with the `index`-th jitter sample of the call (see
    /// [`Moment::nth`]), or dead when its retries are used up.
    pub fn expire(&self, message: Message, index: usize) -> Result<Message> {
        machine::expire_lease(message, self.moment().nth(index))
    }

    /// A due message taken: `processing` under `lease_token` until `now + lease_ms`.
    pub fn take(&self, message: Message, lease_token: String) -> Result<Message> {
        machine::claim(message, self.now, self.lease_ms, lease_token)
    }
}

impl SucceedArgs {
    /// The ack of `message` (see [`machine::succeed`]).
    pub fn step(&self, message: Message) -> Result<Message> {
        machine::succeed(message, self.lease_token.as_deref(), self.now)
    }
}

impl FailArgs {
    /// The failed attempt of `message` (see [`machine::fail`]).
    pub fn step(&self, message: Message) -> Result<Message> {
        let at = Moment {
            policy: &self.policy,
            sample: self.sample,
            now: self.now,
        };
        machine::fail(
            message,
            &self.error,
            self.lease_token.as_deref(),
            self.retryable,
            at,
        )
    }
}

impl ExtendArgs {
    /// The heartbeat of `message` (see [`machine::extend`]).
    pub fn step(&self, message: Message) -> Result<Message> {
        machine::extend(message, &self.lease_token, self.lease_ms, self.now)
    }
}

impl MessageArgs {
    /// The message this request names, from what the store found under its id: `not_found` when
    /// there was nothing, or a message of another queue (ids of other queues are invisible).
    pub fn found(&self, found: Option<Message>) -> Result<Message> {
        found_in(&self.queue, self.id, found)
    }

    /// Whether `message` may be deleted: only finished messages (see [`machine::deletable`]).
    pub fn delete(&self, message: &Message) -> Result<()> {
        machine::deletable(message)
    }
}

impl ReplayArgs {
    /// See [`MessageArgs::found`].
    pub fn found(&self, found: Option<Message>) -> Result<Message> {
        found_in(&self.queue, self.id, found)
    }

    /// The redrive of `message` (see [`machine::replay`]).
    pub fn step(&self, message: Message) -> Result<Message> {
        machine::replay(message, self.now)
    }
}

/// `found` when it is a message of `queue`, else `not_found`.
fn found_in(queue: &str, id: Id, found: Option<Message>) -> Result<Message> {
    apply_step(found.filter(|m| m.queue == queue), queue, id, Ok)
}

impl ReplayAllArgs {
    /// The step of one candidate: replayed when the filter still selects it (it may have changed
    /// since it was selected), `None` (left alone) otherwise.
    pub fn step(&self, message: Message) -> Result<Option<Message>> {
        if self.filter().matches(&message) {
            machine::replay(message, self.now).map(Some)
        } else {
            Ok(None)
        }
    }
}

impl PurgeArgs {
    /// Whether one candidate is deleted: when the filter still selects it.
    pub fn selects(&self, message: &Message) -> bool {
        self.filter().matches(message)
    }
}

/// What a store that walks an index of `(status, id, updated_at)` keys (IndexedDB's `list`
/// index) does with one key before it loads the message, for `filter`: [`Sift::Skip`] when the key
/// alone rules it out, [`Sift::Take`] when it alone selects it, [`Sift::Load`] when the
/// message itself must be read and given to [`Filter::matches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sift {
    /// Not selected.
    Skip,
    /// Selected.
    Take,
    /// Read the message and ask [`Filter::matches`].
    Load,
}

/// See [`Sift`]: the key of a message of `filter`'s queue and status, with its `updated_at`.
pub fn sift(filter: &Filter<'_>, updated_at: Millis) -> Sift {
    if filter.updated_until.is_some_and(|until| updated_at > until) {
        Sift::Skip
    } else if filter.error_contains.is_some()
        || filter.dead_after.is_some()
        || filter.dead_before.is_some()
    {
        Sift::Load
    } else {
        Sift::Take
    }
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
    /// `value`, with the dead messages among `written` (every message the call wrote, in order).
    pub fn new(value: T, written: &[Message]) -> Self {
        let dead = written
            .iter()
            .filter(|m| m.status == Status::Dead)
            .cloned()
            .collect();
        Self { value, dead }
    }
}

/// The statistics of one queue at one instant (see [`super::Engine::stats`]).
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

impl Stats {
    /// The statistics of `queue` at `now` from what its store counted.
    pub fn new(queue: &str, counts: &Counts, now: Millis) -> Self {
        let age = |since: Option<Millis>| since.map(|t| now.saturating_sub(t).max(0));
        let [pending, processing, succeeded, dead] = counts.by_status;
        Self {
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
        }
    }
}

/// How many messages, as the count the bulk operations return.
pub fn count(messages: &[Message]) -> u64 {
    u64::try_from(messages.len()).unwrap_or(u64::MAX)
}

/// The `not_found` error of message `id` in `queue`.
pub fn not_found(queue: &str, id: Id) -> Error {
    Error::NotFound {
        queue: queue.to_owned(),
        id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arg, Backoff, Limits, NewMessage};

    const NOW: Millis = 1_767_225_600_000;

    fn pending(id: Id) -> Message {
        NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 2,
            idempotency_key: None,
            retry_after: None,
            now: NOW - 10,
        }
        .with_id(id)
    }

    #[test]
    fn a_claim_takes_and_expires_with_its_own_moment() {
        let policy = Backoff::default();
        let at = Moment {
            policy: &policy,
            sample: 0.0,
            now: NOW,
        };
        let args = ClaimArgs::new(
            &"q".into(),
            &Arg::Int(2),
            &Arg::Int(500),
            at,
            &Limits::default(),
        )
        .unwrap();
        let taken = args.take(pending(1), "t".into()).unwrap();
        assert_eq!(
            (
                taken.status,
                taken.lease_expires_at,
                taken.lease_token.as_deref()
            ),
            (Status::Processing, Some(NOW + 500), Some("t"))
        );
        let expired = args.expire(taken, 0).unwrap();
        assert_eq!(
            (
                expired.status,
                expired.retry_after,
                expired.last_error.as_deref()
            ),
            (Status::Pending, Some(NOW + 2_000), Some("lease expired"))
        );
    }

    #[test]
    fn a_message_of_another_queue_is_not_found() {
        let args = MessageArgs::new(&"other".into(), &Arg::Int(1)).unwrap();
        assert_eq!(args.found(Some(pending(1))), Err(not_found("other", 1)));
        assert_eq!(args.found(None), Err(not_found("other", 1)));
        let mine = MessageArgs::new(&"q".into(), &Arg::Int(1)).unwrap();
        assert_eq!(mine.found(Some(pending(1))), Ok(pending(1)));
    }

    #[test]
    fn keys_are_sifted_before_messages_are_loaded() {
        let purge = PurgeArgs::new(&"q".into(), &"dead".into(), &Arg::Int(100), NOW).unwrap();
        assert_eq!(sift(&purge.filter(), NOW - 100), Sift::Take);
        assert_eq!(sift(&purge.filter(), NOW - 99), Sift::Skip);
        let replay = ReplayAllArgs::new(
            &"q".into(),
            &"boom".into(),
            &Arg::Null,
            &Arg::Null,
            &Arg::Null,
            NOW,
        )
        .unwrap();
        assert_eq!(sift(&replay.filter(), NOW), Sift::Load);
    }
}
