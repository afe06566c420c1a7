//! Apply: the step of each checked request ([`super::request`]) on one message read, inside the
//! store's atomic read-modify-write: the next message (the [`crate::machine`] transition with the
//! request's arguments) or the error that leaves it unchanged. A store, or a binding that drives
//! its own store (the IndexedDB store in JavaScript), calls these and decides nothing else.
//!
//! Also the shapes of what the operations return: [`Outcome`] (a value with the messages the
//! call made dead) and [`Stats`] (a queue's statistics from the store's [`Counts`]).

use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::machine::{self, Moment};
use crate::message::{Id, Message, Millis, NewMessage, Status};
use crate::settings::{Context, OnExpiry};
use crate::store::{Counts, apply_step};

use super::filters::Filter;
use crate::validate::{Check, DEFAULT_MAX_RETRIES, later};

use super::request::{
    ClaimArgs, EnqueueArgs, ExtendArgs, FailArgs, MessageArgs, PurgeArgs, ReplayArgs, SucceedArgs,
};

/// The expiry of a message enqueued or replayed at `ctx`: `given` (the call's, in milliseconds),
/// else the queue's stored expiry, from now; `None` when neither is set.
pub(crate) fn expires_at(ctx: &Context, given: Option<Millis>) -> Result<Option<Millis>> {
    given
        .or(ctx.queue.settings.expires_in_ms)
        .map(|ms| later(ctx.now, ms))
        .transpose()
}

impl EnqueueArgs {
    /// The messages to insert at `ctx`, in order: `max_retries` from the call, else the queue's
    /// stored value, else 3; `retry_after` `now + delay` (none without a delay); `expires_at` from
    /// the call's expiry, else the queue's. An instant past the representable range is a
    /// validation error on `clock`; a delay at least the expiry (the call's, else the queue's) one
    /// on `delay_ms`: the message would expire before it is due; each with the item's index in a
    /// batch.
    pub fn messages(&self, ctx: &Context) -> Result<Vec<NewMessage>> {
        let mut check = Check::default();
        let stored_retries = ctx.queue.settings.max_retries;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 3
        let default_retries = stored_retries.unwrap_or(DEFAULT_MAX_RETRIES as u32);
        let mut messages = Vec::with_capacity(self.items.len());
        for (index, item) in self.items.iter().enumerate() {
            let before = check.len();
            let retry_after = match item.delay_ms {
                0 => Ok(None),
                delay => later(ctx.now, delay).map(Some),
            };
            // One clock error per item: a clock that late is one problem, however many instants
            // it would push out of range.
            let instants = retry_after
                .and_then(|retry_after| Ok((retry_after, expires_at(ctx, item.expires_in_ms)?)));
            let (retry_after, expiry) = instants.unwrap_or_else(|err| {
                check.extend(err);
                (None, None)
            });
            // Due no earlier than it expires, the call's expiry or the queue's: it would never be
            // delivered (new-user finding F10, session 6). Said without figures (each binding
            // names a delay in its own unit) and in few words (the npm package's WebAssembly has
            // a size budget).
            if let (Some(due), Some(expires_at)) = (retry_after, expiry)
                && due >= expires_at
            {
                check.reject_invalid("delay_ms", "must be less than the expiry".into());
            }
            if self.batch {
                check.tag_item(before, index);
            }
            messages.push(NewMessage {
                queue: self.queue.clone(),
                payload: item.payload.clone(),
                max_retries: item.max_retries.unwrap_or(default_retries),
                idempotency_key: item.idempotency_key.clone(),
                retry_after,
                group: item.group.clone(),
                expires_at: expiry,
                now: ctx.now,
            });
        }
        check.finish(|| messages)
    }
}

/// One claim (or reap) as decided at its [`Context`] (see [`ClaimArgs::start`]): what the store
/// does with each message it finds, in this order: the leases that ran out ([`Claiming::expire`]),
/// the pending messages whose expiry came ([`Claiming::sweep`]), then up to `n` due messages
/// ([`Claiming::take`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Claiming {
    /// How many messages to take at most (0: a reap).
    pub n: usize,
    /// The instant.
    pub now: Millis,
    /// The lease of each message taken: the call's, else the queue's, else the open-time one.
    pub lease_ms: Millis,
    /// The backoff policy of the expired leases: the handle's, else the queue's, else the default.
    pub policy: Backoff,
    /// The jitter sample of the call.
    pub sample: f64,
    /// What expiry does to a pending message, the queue's setting.
    pub on_expiry: OnExpiry,
}

impl ClaimArgs {
    /// The claim at `ctx`; `None` when the queue is paused and this is a claim (not a reap): a
    /// paused queue claims nothing, and its claims change nothing (leases already held keep
    /// running until a reap or the resume).
    pub fn start(&self, ctx: &Context) -> Option<Claiming> {
        if self.n > 0 && ctx.queue.settings.paused {
            return None;
        }
        Some(Claiming {
            n: self.n,
            now: ctx.now,
            lease_ms: ctx.lease_ms(self.lease_ms, self.default_lease_ms),
            policy: ctx.policy(self.backoff.as_ref()),
            sample: self.sample,
            on_expiry: ctx.queue.settings.on_expiry,
        })
    }
}

impl Claiming {
    /// The moment of the claim: its instant, the policy and the call's jitter sample.
    pub fn moment(&self) -> Moment<'_> {
        Moment {
            policy: &self.policy,
            sample: self.sample,
            now: self.now,
        }
    }

    /// The `index`-th (0-based) lease of this claim found run out: a failed attempt with the error
    /// `lease expired`, rescheduled with the `index`-th jitter sample of the call (see
    /// [`Moment::nth`]), or dead when its retries are used up or its expiry has come.
    pub fn expire(&self, message: Message, index: usize) -> Result<Message> {
        machine::expire_lease(message, self.moment().nth(index))
    }

    /// A pending message whose expiry came: `Some` of it dead with the error `expired`, to write
    /// (the queue's outcome `dead`), or `None`: delete it (`discard`). Either way the store counts
    /// it in the queue's row ([`crate::QueueRow::count_expired`]).
    pub fn sweep(&self, message: Message) -> Result<Option<Message>> {
        match self.on_expiry {
            OnExpiry::Dead => machine::expire(message, self.now).map(Some),
            OnExpiry::Discard => Ok(None),
        }
    }

    /// `n` messages swept at their expiry as what they add to the queue's row's two counters,
    /// `(dead, discarded)`, by the queue's `on_expiry`: the split [`crate::QueueRow::count_expired`]
    /// makes, for a store that adds them to its row in place.
    pub fn expiry_counts<N: Default>(&self, n: N) -> (N, N) {
        match self.on_expiry {
            OnExpiry::Dead => (n, N::default()),
            OnExpiry::Discard => (N::default(), n),
        }
    }

    /// A due message taken: `processing` under `lease_token` until `now + lease_ms`.
    pub fn take(&self, message: Message, lease_token: String) -> Result<Message> {
        machine::claim(message, self.now, self.lease_ms, lease_token)
    }
}

impl SucceedArgs {
    /// Whether [`SucceedArgs::step`] reads the queue's row ([`Context::queue`]): never, an ack
    /// depends on the instant only. A store may then give its [`Context`] the default row without
    /// reading it (the IndexedDB store skips that request: issue 20).
    pub fn reads_queue(&self) -> bool {
        false
    }

    /// The ack of `message` (see [`machine::succeed`]).
    pub fn step(&self, message: Message, ctx: &Context) -> Result<Message> {
        machine::succeed(message, self.lease_token.as_deref(), ctx.now)
    }
}

impl FailArgs {
    /// Whether [`FailArgs::step`] reads the queue's row ([`Context::queue`]; see
    /// [`SucceedArgs::reads_queue`]): always, for its stored backoff policy (and the warning of a
    /// handle's own policy that overrides it, [`Context::overridden`]).
    pub fn reads_queue(&self) -> bool {
        true
    }

    /// The failed attempt of `message` (see [`machine::fail`]), under the handle's policy, else
    /// the queue's, else the default, unless the call gave its own delay.
    pub fn step(&self, message: Message, ctx: &Context) -> Result<Message> {
        let policy = ctx.policy(self.backoff.as_ref());
        let at = Moment {
            policy: &policy,
            sample: self.sample,
            now: ctx.now,
        };
        machine::fail(
            message,
            &self.error,
            self.lease_token.as_deref(),
            self.retryable,
            self.retry_in_ms,
            at,
        )
    }
}

impl ExtendArgs {
    /// Whether [`ExtendArgs::step`] reads the queue's row ([`Context::queue`]; see
    /// [`SucceedArgs::reads_queue`]): only for its stored lease, when the call gave none.
    pub fn reads_queue(&self) -> bool {
        self.lease_ms.is_none()
    }

    /// The heartbeat of `message` (see [`machine::extend`]): the call's lease, else the queue's,
    /// else the open-time one.
    pub fn step(&self, message: Message, ctx: &Context) -> Result<Message> {
        let lease = ctx.lease_ms(self.lease_ms, self.default_lease_ms);
        machine::extend(message, &self.lease_token, lease, ctx.now)
    }
}

impl MessageArgs {
    /// The message this request names, from what the store found under its id: `not_found` when
    /// there was nothing, a message of another queue (ids of other queues are invisible), or one
    /// under another id (a host's read that returned another row: the component's `apply` changed
    /// it as the one named; new-user finding N1, session 7).
    pub fn found(&self, found: Option<Message>) -> Result<Message> {
        found_in(&self.queue, self.id, found)
    }

    /// Whether `message` may be deleted: only finished messages (see [`machine::deletable`]).
    pub fn delete(&self, message: &Message) -> Result<()> {
        machine::deletable(message)
    }

    /// Whether [`MessageArgs::retry_now`] reads the queue's row ([`Context::queue`]; see
    /// [`SucceedArgs::reads_queue`]): never.
    pub fn reads_queue(&self) -> bool {
        false
    }

    /// `retry_now` of `message` (see [`machine::retry_now`]).
    pub fn retry_now(&self, message: Message, ctx: &Context) -> Result<Message> {
        machine::retry_now(message, ctx.now)
    }
}

impl ReplayArgs {
    /// See [`MessageArgs::found`].
    pub fn found(&self, found: Option<Message>) -> Result<Message> {
        found_in(&self.queue, self.id, found)
    }

    /// Whether [`ReplayArgs::step`] reads the queue's row ([`Context::queue`]; see
    /// [`SucceedArgs::reads_queue`]): only for its stored expiry, when the call gave none.
    pub fn reads_queue(&self) -> bool {
        self.expires_in_ms.is_none()
    }

    /// The redrive of `message` (see [`machine::replay`]), with the call's expiry, else the
    /// queue's, else none.
    pub fn step(&self, message: Message, ctx: &Context) -> Result<Message> {
        machine::replay(message, ctx.now, expires_at(ctx, self.expires_in_ms)?)
    }
}

/// `found` when it is message `id` of `queue`, else `not_found`.
fn found_in(queue: &str, id: Id, found: Option<Message>) -> Result<Message> {
    apply_step(
        found.filter(|m| m.id == id && m.queue == queue),
        queue,
        id,
        Ok,
    )
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
    } else if *filter
        == (Filter {
            queue: filter.queue,
            status: filter.status,
            now: filter.now,
            updated_until: filter.updated_until,
            ..Filter::default()
        })
    {
        Sift::Take
    } else {
        Sift::Load
    }
}

/// A result, with the messages the call made dead (committed), for the dead-letter callbacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// What the operation returns.
    pub value: T,
    /// Every message this call moved to `dead`, in the order it did.
    pub dead: Vec<Message>,
    /// The queue's stored backoff policy when the call applied the handle's own policy instead
    /// and the two differ (see [`crate::Context::overridden`]): what a binding warns about, once
    /// per handle.
    pub overridden: Option<Backoff>,
}

impl<T> Outcome<T> {
    /// `value`, with the dead messages among `written` (every message the call wrote, in order).
    pub fn new(value: T, written: &[Message]) -> Self {
        let dead = written
            .iter()
            .filter(|m| m.status == Status::Dead)
            .cloned()
            .collect();
        Self {
            value,
            dead,
            overridden: None,
        }
    }
}

/// The statistics of one queue at one instant (see [`super::Engine::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// The queue.
    pub queue: String,
    /// Messages waiting to be claimed (due, in backoff, or behind their group's head).
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
    /// Whether the queue is paused (it claims nothing).
    pub paused: bool,
    /// Messages that expired while pending and became dead, since the queue's row was created
    /// (purging does not lower it).
    pub expired_dead: u64,
    /// Messages that expired while pending and were discarded, since the queue's row was created.
    pub expired_discarded: u64,
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
            paused: counts.paused,
            expired_dead: counts.expired_dead,
            expired_discarded: counts.expired_discarded,
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
    use crate::{Arg, Limits, NewMessage, QueueRow};

    const NOW: Millis = 1_767_225_600_000;

    fn pending(id: Id) -> Message {
        NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 2,
            idempotency_key: None,
            retry_after: None,
            group: None,
            expires_at: None,
            now: NOW - 10,
        }
        .with_id(id)
    }

    fn ctx(row: QueueRow) -> Context {
        Context::new(NOW, row).unwrap()
    }

    #[test]
    fn a_claim_takes_and_expires_with_its_own_moment() {
        let args = ClaimArgs::new(
            &"q".into(),
            &Arg::Int(2),
            &Arg::Int(500),
            None,
            0.0,
            &Limits::default(),
        )
        .unwrap();
        let claim = args.start(&ctx(QueueRow::default())).unwrap();
        let taken = claim.take(pending(1), "t".into()).unwrap();
        assert_eq!(
            (
                taken.status,
                taken.lease_expires_at,
                taken.lease_token.as_deref()
            ),
            (Status::Processing, Some(NOW + 500), Some("t"))
        );
        let expired = claim.expire(taken, 0).unwrap();
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
    fn a_paused_queue_claims_nothing_but_reaps_and_sweeps_by_its_setting() {
        let mut row = QueueRow::default();
        row.settings.paused = true;
        row.settings.on_expiry = OnExpiry::Discard;
        row.settings.lease_ms = Some(7_000);
        let limits = Limits::default();
        let claim = ClaimArgs::new(&"q".into(), &Arg::Int(1), &Arg::Null, None, 0.0, &limits);
        assert_eq!(claim.unwrap().start(&ctx(row)), None);
        let reap = ClaimArgs::reap(&"q".into(), None, 0.0).unwrap();
        let reaping = reap.start(&ctx(row)).unwrap();
        let expiring = Message {
            expires_at: Some(NOW),
            ..pending(1)
        };
        assert_eq!(reaping.sweep(expiring.clone()), Ok(None));
        row.settings = crate::QueueSettings::default();
        let dead = reap.start(&ctx(row)).unwrap().sweep(expiring).unwrap();
        let dead = dead.unwrap();
        assert_eq!(
            (dead.status, dead.last_error.as_deref(), dead.dead_at),
            (Status::Dead, Some("expired"), Some(NOW))
        );
        row.settings.lease_ms = Some(7_000);
        let claim = ClaimArgs::new(&"q".into(), &Arg::Int(1), &Arg::Null, None, 0.0, &limits);
        assert_eq!(claim.unwrap().start(&ctx(row)).unwrap().lease_ms, 7_000);
    }

    #[test]
    fn enqueue_takes_the_stored_defaults_and_tags_clock_errors_in_a_batch() {
        let mut row = QueueRow::default();
        row.settings.max_retries = Some(7);
        row.settings.expires_in_ms = Some(1_000);
        let items = [
            crate::Item {
                payload: "a".into(),
                ..crate::Item::default()
            },
            crate::Item {
                payload: "b".into(),
                max_retries: Arg::Int(2),
                expires_in_ms: Arg::Int(5),
                delay_ms: Arg::Int(3),
                ..crate::Item::default()
            },
        ];
        let args = EnqueueArgs::new(&"q".into(), &items, true, &Limits::default()).unwrap();
        let made = args.messages(&ctx(row)).unwrap();
        let got: Vec<_> = made
            .iter()
            .map(|m| (m.max_retries, m.expires_at, m.retry_after))
            .collect();
        assert_eq!(
            got,
            [
                (7, Some(NOW + 1_000), None),
                (2, Some(NOW + 5), Some(NOW + 3))
            ]
        );
        let late = Context::new(crate::validate::MAX_TIME - 2, row).unwrap();
        let err = args.messages(&late).unwrap_err();
        let fields: Vec<_> = err
            .field_errors()
            .iter()
            .map(|f| (f.field, f.index))
            .collect();
        assert_eq!(fields, [("clock", Some(0)), ("clock", Some(1))]);
    }

    /// A row with every setting set, unlike the default one.
    fn configured() -> QueueRow {
        let policy = (
            &Arg::Int(5_000),
            &Arg::Float(3.0),
            &Arg::Int(60_000),
            &Arg::Null,
        );
        QueueRow {
            settings: crate::QueueSettings {
                backoff: Some(Backoff::new(policy.0, policy.1, policy.2, policy.3).unwrap()),
                max_retries: Some(9),
                lease_ms: Some(7_000),
                expires_in_ms: Some(1_000),
                on_expiry: OnExpiry::Discard,
                paused: true,
            },
            expired_dead: 4,
            expired_discarded: 0,
        }
    }

    #[test]
    fn the_steps_that_say_they_read_no_queue_row_decide_the_same_without_it() {
        let (bare, set) = (ctx(QueueRow::default()), ctx(configured()));
        let leased = machine::claim(pending(1), NOW - 5, 1_000, "t".into()).unwrap();
        let fail = |retryable| {
            let args = (&"e".into(), &"t".into(), &Arg::Bool(retryable), &Arg::Null);
            FailArgs::new(
                &"q".into(),
                &Arg::Int(1),
                args.0,
                args.1,
                args.2,
                args.3,
                None,
                0.0,
            )
            .unwrap()
        };
        let dead = fail(false).step(leased.clone(), &bare).unwrap();
        let delayed = Message {
            retry_after: Some(NOW + 60_000),
            ..pending(1)
        };
        let queue = || Arg::from("q");
        let succeed = SucceedArgs::new(&queue(), &Arg::Int(1), &"t".into()).unwrap();
        let extend = |lease| {
            ExtendArgs::new(
                &queue(),
                &Arg::Int(1),
                &"t".into(),
                &lease,
                &Limits::default(),
            )
        };
        let (extend, extend_stored) = (extend(Arg::Int(500)).unwrap(), extend(Arg::Null).unwrap());
        let replay = |expiry| ReplayArgs::new(&queue(), &Arg::Int(1), &expiry).unwrap();
        let (replay, replay_stored) = (replay(Arg::Int(50)), replay(Arg::Null));
        let retry = MessageArgs::new(&queue(), &Arg::Int(1)).unwrap();
        let moving = crate::MoveArgs::new(&queue(), &Arg::Int(1), &"r".into()).unwrap();
        let same = |step: &dyn Fn(&Context) -> Result<Message>| {
            let without = step(&bare).unwrap();
            (without == step(&set).unwrap()).then_some(without)
        };
        assert!(!succeed.reads_queue() && same(&|c| succeed.step(leased.clone(), c)).is_some());
        assert!(!extend.reads_queue() && same(&|c| extend.step(leased.clone(), c)).is_some());
        assert!(!replay.reads_queue() && same(&|c| replay.step(dead.clone(), c)).is_some());
        assert!(!retry.reads_queue() && same(&|c| retry.retry_now(delayed.clone(), c)).is_some());
        assert!(!moving.reads_queue() && same(&|c| moving.step(dead.clone(), c, false)).is_some());
        // The others read it, and differ by it.
        assert!(
            extend_stored.reads_queue()
                && same(&|c| extend_stored.step(leased.clone(), c)).is_none()
        );
        assert!(
            replay_stored.reads_queue() && same(&|c| replay_stored.step(dead.clone(), c)).is_none()
        );
        let fail = fail(true);
        assert!(fail.reads_queue() && same(&|c| fail.step(leased.clone(), c)).is_none());
    }

    #[test]
    fn a_message_of_another_queue_is_not_found() {
        let args = MessageArgs::new(&"other".into(), &Arg::Int(1)).unwrap();
        assert_eq!(args.found(Some(pending(1))), Err(not_found("other", 1)));
        assert_eq!(args.found(None), Err(not_found("other", 1)));
        let mine = MessageArgs::new(&"q".into(), &Arg::Int(1)).unwrap();
        assert_eq!(mine.found(Some(pending(1))), Ok(pending(1)));
        // Another id than the one named (finding N1): not this message either.
        assert_eq!(mine.found(Some(pending(99))), Err(not_found("q", 1)));
    }

    #[test]
    fn keys_are_sifted_before_messages_are_loaded() {
        let purge = PurgeArgs::new(&"q".into(), &"dead".into(), &Arg::Int(100), NOW).unwrap();
        assert_eq!(sift(&purge.filter(), NOW - 100), Sift::Take);
        assert_eq!(sift(&purge.filter(), NOW - 99), Sift::Skip);
        let filters = crate::FilterArgs {
            error_contains: "boom".into(),
            ..crate::FilterArgs::default()
        };
        let replay = crate::BulkArgs::new(
            crate::Action::Replay,
            &"q".into(),
            &filters,
            &Arg::Null,
            &Arg::Null,
        )
        .unwrap();
        assert_eq!(sift(&replay.filter(NOW), NOW), Sift::Load);
        let all = crate::BulkArgs::new(
            crate::Action::Replay,
            &"q".into(),
            &crate::FilterArgs::default(),
            &Arg::Null,
            &Arg::Null,
        )
        .unwrap();
        assert_eq!(sift(&all.filter(NOW), NOW), Sift::Take);
    }
}
