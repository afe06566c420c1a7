//! The public operations, in three halves that a caller without a [`Store`] can use on their own:
//!
//! - validate ([`request`]): each operation's arguments checked into a typed request
//!   ([`ClaimArgs`], [`FailArgs`], ...) with the open-time [`Limits`], before any store is called;
//! - plan ([`plan`], [`groups`]): what a store without a query language reads and writes for a
//!   claim over lanes ([`LaneClaim`]), the batches of the bulk operations ([`Batches`]) and the
//!   ordering groups' bookkeeping ([`Tails`], [`groups::change`]);
//! - apply ([`apply`]): each request's step on one message read, at the [`crate::Context`] the
//!   store read inside its transaction (the instant and the queue's settings): the next message or
//!   the error;
//! - scan ([`scan`]): the plans of a store that keeps its messages in a plain map and finds them
//!   by looking (the reference [`crate::MemoryStore`]; a host of the WebAssembly component);
//! - the filters of `list` and of the bulk actions ([`filters`]: [`FilterArgs`] checked into a
//!   [`Selection`], [`Filter::matches`] the one definition), a `list` page read by a [`Scan`]
//!   ([`page`]) and the bulk actions' requests and steps ([`bulk`]: [`BulkArgs`], and
//!   [`MoveAllArgs`] for `move_all`; [`moves`]: [`MoveArgs`] for one message), each of the
//!   three halves at once for these operations: the engine filters what the store's id-ordered
//!   page read ([`Store::list`]) returns, so no store translates a filter.
//!
//! [`Engine`] is those halves over a [`Store`], written once for every store, synchronous or not.
//! The WebAssembly binding exports the same halves to JavaScript, whose IndexedDB store calls them
//! inside its own transactions.

pub mod apply;
pub mod bulk;
pub mod filters;
pub mod groups;
pub mod moves;
pub mod page;
pub mod plan;
pub mod request;
pub mod scan;

use std::cell::Cell;

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis};
use crate::settings::{Clock, Context, QueueRow, QueueSettings, SettingsArgs, pause_step};
use crate::store::{Claimed, ListQuery, Store};
use crate::validate::{Check, Limits};

pub use apply::{Claiming, Outcome, Sift, Stats, sift};
pub use bulk::{BulkArgs, MoveAllArgs};
pub use filters::{Action, Filter, FilterArgs, Selection};
pub use groups::Tails;
pub use moves::MoveArgs;
pub use page::{ListArgs, Page, SCAN_BUDGET, SCAN_PAGE, Scan};
pub use plan::{BATCH, Batches, LaneClaim, TIMED_PAGE, Write};
pub use request::{
    ClaimArgs, EnqueueArgs, EnqueueItem, ExtendArgs, FailArgs, Item, MessageArgs, PurgeArgs,
    ReplayArgs, SucceedArgs, clock_at, queue_at,
};

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

/// What a binding hands an operation that may reschedule messages (`claim`, `claim_many`,
/// `reap`, `fail`): its clock (which the store reads under its write lock), the jitter sample the
/// binding drew for the call, and the queue handle's own backoff policy, when the handle was given
/// one in code (it then wins over the policy stored with the queue).
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The clock.
    pub clock: Clock<'a>,
    /// The handle's own policy, if any.
    pub backoff: Option<&'a Backoff>,
    /// The jitter sample in `[0, 1)` (ignored by a policy without jitter).
    pub sample: f64,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("backoff", &self.backoff)
            .field("sample", &self.sample)
            .finish_non_exhaustive()
    }
}

/// A queue database: the rules of deadletter applied over a [`Store`].
///
/// Every method takes the binding's clock ([`Clock`]), which the store reads once its write lock
/// is held (a read reads it when it starts), and returns an error without changing anything when
/// an argument is rejected or a transition is not allowed; bulk operations (`replay_all`,
/// `delete_all`, `retry_now_all`, `move_all`, `purge`) commit batch by batch, each batch
/// atomically.
#[derive(Debug)]
pub struct Engine<S> {
    store: S,
    limits: Limits,
}

/// The instant of a read, from `clock`, checked.
fn read_now(clock: Clock<'_>) -> Result<Millis> {
    let now = clock()?;
    clock_at(now)?;
    Ok(now)
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
    pub async fn enqueue(
        &self,
        queue: Arg<'_>,
        item: &Item<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = EnqueueArgs::new(&queue, std::slice::from_ref(item), false, &self.limits)?;
        let mut batch = self.store.insert(&args, clock).await?;
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
        clock: Clock<'_>,
    ) -> Result<Vec<Message>> {
        let args = EnqueueArgs::new(&queue, items, true, &self.limits)?;
        self.store.insert(&args, clock).await
    }

    /// Takes the next due message of `queue` (FIFO: enqueue order, by id; a grouped message
    /// only while it is its group's head) and leases it to the caller for `lease_ms` (1..=12 h;
    /// default: the queue's stored lease, else the open-time lease) under a token from `tokens`
    /// (drawn at random by the binding). Expired leases of the queue are first counted as failed
    /// attempts under the call's policy, and its messages whose expiry came are taken out. `None`
    /// when nothing is due, and on a paused queue (which then changes nothing).
    ///
    /// Leases are reaped lazily, by this call or [`Engine::reap`] (as SQS makes a message visible
    /// again only when it is received): until then, a message whose lease ran out still reads as
    /// `processing`, and its worker may still ack, fail or extend it with its token.
    pub async fn claim(
        &self,
        queue: Arg<'_>,
        lease_ms: Arg<'_>,
        tokens: impl FnMut() -> String,
        call: &Call<'_>,
    ) -> Result<Outcome<Option<Message>>> {
        let claimed = self
            .claim_many(queue, Arg::Int(1), lease_ms, tokens, call)
            .await?;
        Ok(Outcome {
            value: claimed.value.into_iter().next(),
            dead: claimed.dead,
            overridden: claimed.overridden,
        })
    }

    /// Like [`Engine::claim`] for up to `n` (1..=100) due messages, in claim order, in one
    /// transaction, at most one per group; empty when nothing is due.
    pub async fn claim_many(
        &self,
        queue: Arg<'_>,
        n: Arg<'_>,
        lease_ms: Arg<'_>,
        tokens: impl FnMut() -> String,
        call: &Call<'_>,
    ) -> Result<Outcome<Vec<Message>>> {
        let args = ClaimArgs::new(
            &queue,
            &n,
            &lease_ms,
            call.backoff,
            call.sample,
            &self.limits,
        )?;
        let (claimed, overridden) = self.run_claim(&args, call.clock, tokens).await?;
        let dead = claimed.dead();
        Ok(Outcome {
            value: claimed.taken,
            dead,
            overridden,
        })
    }

    /// Counts the expired leases of `queue` as failed attempts now and takes its messages whose
    /// expiry came out (what `claim` does first; also on a paused queue), and returns how many;
    /// so a queue whose workers all died still moves on when asked.
    pub async fn reap(&self, queue: Arg<'_>, call: &Call<'_>) -> Result<Outcome<u64>> {
        let args = ClaimArgs::reap(&queue, call.backoff, call.sample)?;
        let (reaped, overridden) = self.run_claim(&args, call.clock, String::new).await?;
        Ok(Outcome {
            value: reaped.reaped(),
            dead: reaped.dead(),
            overridden,
        })
    }

    /// One [`Store::claim`] with the steps of `args`, and the stored policy the handle's overrode.
    async fn run_claim(
        &self,
        args: &ClaimArgs,
        clock: Clock<'_>,
        tokens: impl FnMut() -> String,
    ) -> Result<(Claimed, Option<Backoff>)> {
        let overridden = Cell::new(None);
        let claimed = self
            .store
            .claim(
                &args.queue,
                clock,
                |ctx| {
                    overridden.set(ctx.overridden(args.backoff.as_ref()));
                    args.start(ctx)
                },
                tokens,
            )
            .await?;
        Ok((claimed, overridden.get()))
    }

    /// Acks a `processing` message: -> `succeeded`. `lease_token`, when given, must be the current
    /// one (else `conflict`: the lease was lost). A grouped message's group moves on to its next
    /// member.
    pub async fn succeed(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        lease_token: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = SucceedArgs::new(&queue, &id, &lease_token)?;
        self.store
            .update(&args.queue, args.id, clock, |m, ctx| args.step(m, ctx))
            .await
    }

    /// Records a failed attempt of a `processing` message: back to `pending` after the backoff
    /// (the handle's policy, else the queue's, else the default) or after `retry_in_ms` (0..=30
    /// days, this failure's own delay), or `dead` when retries are used up, when `retryable` is
    /// false, or when its expiry has come. `error` must be a string (stored truncated past
    /// 64 KiB); `retryable` a bool, default true.
    #[allow(clippy::too_many_arguments)] // one per argument of `fail`
    pub async fn fail(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        error: Arg<'_>,
        lease_token: Arg<'_>,
        retryable: Arg<'_>,
        retry_in_ms: Arg<'_>,
        call: &Call<'_>,
    ) -> Result<Outcome<Message>> {
        let args = FailArgs::new(
            &queue,
            &id,
            &error,
            &lease_token,
            &retryable,
            &retry_in_ms,
            call.backoff,
            call.sample,
        )?;
        let overridden = Cell::new(None);
        let message = self
            .store
            .update(&args.queue, args.id, call.clock, |m, ctx| {
                overridden.set(ctx.overridden(args.backoff.as_ref()));
                args.step(m, ctx)
            })
            .await?;
        let mut outcome = Outcome::new(message.clone(), std::slice::from_ref(&message));
        outcome.overridden = overridden.get();
        Ok(outcome)
    }

    /// The heartbeat: moves the lease of a `processing` message to `now + lease_ms` (1..=12 h;
    /// default: the queue's stored lease, else the open-time lease). `lease_token` is required
    /// and must be the current one (else `conflict`: the lease was lost, expired and reaped or
    /// taken by another worker).
    pub async fn extend(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        lease_token: Arg<'_>,
        lease_ms: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = ExtendArgs::new(&queue, &id, &lease_token, &lease_ms, &self.limits)?;
        self.store
            .update(&args.queue, args.id, clock, |m, ctx| args.step(m, ctx))
            .await
    }

    /// Sends a `dead` message back (redrive): -> `pending` with `retry_count` 0, expiring after
    /// `expires_in_ms` (1 ms..=365 days; default: the queue's stored expiry, else never). A grouped
    /// message goes to the end of its group, behind every member pending or processing now.
    pub async fn replay(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        expires_in_ms: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = ReplayArgs::new(&queue, &id, &expires_in_ms)?;
        self.store
            .update(&args.queue, args.id, clock, |m, ctx| args.step(m, ctx))
            .await
    }

    /// Replays (as [`Engine::replay`] does, with the queue's stored expiry) the dead messages of
    /// `queue` that `filters` select (see [`FilterArgs`]; `status` may only be `dead`), at most
    /// `limit` (>= 1, default all), in id order; returns how many. In batches of [`BATCH`]
    /// messages, each in its own write transaction (which reads the clock) that checks the
    /// filters again on each message; a message replayed once is pending afterwards, so running
    /// it again does not replay it twice. `dry_run` (a bool, default false): the same selection
    /// and steps at the clock's instant with the queue's stored settings, nothing written: the
    /// exact count it would replay now (issue 22: an operator confirms a bulk action with it).
    ///
    /// Errors: `validation_failed` with every rejected argument (queue, filters in
    /// [`FilterArgs::NAMES`] order, `limit`, `dry_run`) before anything is read; `store` from a
    /// batch's read or write, when the batches before it stay committed (a rerun picks up what
    /// is left, since the filters select only what was not acted on).
    pub async fn replay_all(
        &self,
        queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        dry_run: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        self.bulk(Action::Replay, queue, filters, limit, dry_run, clock)
            .await
    }

    /// Deletes the finished messages (`succeeded` or `dead`; `status` may narrow to one, another
    /// is `invalid`) of `queue` that `filters` select, at most `limit`, in id order, which frees
    /// their idempotency keys; returns how many. Batches and `dry_run` as [`Engine::replay_all`].
    pub async fn delete_all(
        &self,
        queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        dry_run: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        self.bulk(Action::Delete, queue, filters, limit, dry_run, clock)
            .await
    }

    /// Makes due now (as [`Engine::retry_now`] does) the `pending` messages of `queue` waiting
    /// for a backoff or delay (`retry_after > now`: `delayed` is always true) that `filters`
    /// select, at most `limit`, in id order; returns how many. A grouped one still waits behind
    /// its group's head. Batches and `dry_run` as [`Engine::replay_all`].
    pub async fn retry_now_all(
        &self,
        queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        dry_run: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        self.bulk(Action::RetryNow, queue, filters, limit, dry_run, clock)
            .await
    }

    /// Moves (as [`Engine::move_message`] does) the `pending` and `dead` messages of `queue`
    /// that `filters` select (`status` may narrow to one of the two; another is `invalid`) to
    /// `to_queue` (checked as an enqueue's queue name, field `to_queue`; `queue` itself is
    /// `invalid`), at most `limit`, in id order; returns how many. A message whose idempotency
    /// key a message of `to_queue` carries stays where it is and is not counted (also by a dry
    /// run, which reads the target's keys). Batches and `dry_run` as [`Engine::replay_all`].
    pub async fn move_all(
        &self,
        queue: Arg<'_>,
        to_queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        dry_run: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        let args = MoveAllArgs::new(&queue, &to_queue, filters, &limit, &dry_run)?;
        self.run_bulk(&args.bulk, Some(&args), clock).await
    }

    /// The bulk action `action` ([`Engine::replay_all`], [`Engine::delete_all`] or
    /// [`Engine::retry_now_all`]), for a binding that takes the action as a value
    /// ([`Action::Move`] takes a target queue: [`Engine::move_all`]; here it is a `type` error
    /// on `to_queue`).
    pub async fn bulk(
        &self,
        action: Action,
        queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        dry_run: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        let args = BulkArgs::new(action, &queue, filters, &limit, &dry_run)?;
        self.run_bulk(&args, None, clock).await
    }

    /// Makes a `pending` message waiting for its backoff or delay due now: `retry_after` null,
    /// `updated_at` now (a grouped one still waits behind its group's head); a pending message
    /// already due is returned unchanged. `conflict` for another status, `not_found` when the
    /// queue has no such message.
    pub async fn retry_now(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = MessageArgs::new(&queue, &id)?;
        self.store
            .update(&args.queue, args.id, clock, |m, ctx| args.retry_now(m, ctx))
            .await
    }

    /// Moves a `pending` or `dead` message of `queue` to `to_queue` (issue 22) and returns it
    /// there: same id, payload, status, counters, history, `retry_after`, expiry, idempotency key
    /// and group; `moved_from` is `queue`, `updated_at` now. A grouped pending message leaves its
    /// group in `queue` (the next member becomes its head) and joins the end of the group of the
    /// same name in `to_queue`.
    ///
    /// Errors: `validation_failed` for `queue`, `id`, or `to_queue` (the rules of an enqueue's
    /// queue name; `queue` itself is `invalid`); `not_found` when `queue` has no message `id`;
    /// `conflict` ([`crate::Conflict::WrongStatus`], operation `move`) for a processing or
    /// succeeded message, and ([`crate::Conflict::KeyTaken`]) when a message of `to_queue`
    /// carries its idempotency key: the message stays where it is.
    pub async fn move_message(
        &self,
        queue: Arg<'_>,
        id: Arg<'_>,
        to_queue: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Message> {
        let args = MoveArgs::new(&queue, &id, &to_queue)?;
        let step = |m, ctx: &Context, taken| args.step(m, ctx, taken).map(Some);
        let moved = self
            .store
            .move_many(&args.queue, &[args.id], &args.to_queue, clock, step)
            .await?;
        args.found(moved.into_iter().next())
    }

    /// Deletes the finished messages of `queue` in `status` (`succeeded` or `dead` only; any
    /// other status is a validation error) whose `updated_at` is at least `older_than_ms`
    /// (>= 0) before now (the clock, read when the call starts); returns how many. In batches,
    /// like [`Engine::replay_all`].
    pub async fn purge(
        &self,
        queue: Arg<'_>,
        status: Arg<'_>,
        older_than_ms: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        let args = PurgeArgs::new(&queue, &status, &older_than_ms, clock()?)?;
        let filter = args.filter();
        let selects = |m: &Message| filter.matches(m);
        self.in_batches(
            &args.queue,
            Some(args.status),
            u64::MAX,
            selects,
            async |picked| {
                let ids: Vec<Id> = picked.iter().map(|m| m.id).collect();
                let deleted = self
                    .store
                    .delete_many(&args.queue, &ids, |m| Ok(args.selects(m)))
                    .await?;
                Ok(apply::count(&deleted))
            },
        )
        .await
    }

    /// Removes one finished (`succeeded` or `dead`) message and returns it; `conflict` for any
    /// other status, `not_found` when the queue has no such message.
    pub async fn delete(&self, queue: Arg<'_>, id: Arg<'_>) -> Result<Message> {
        let args = MessageArgs::new(&queue, &id)?;
        let deleted = self
            .store
            .delete_many(&args.queue, &[args.id], |m| args.delete(m).map(|()| true))
            .await?;
        args.found(deleted.into_iter().next())
    }

    /// The statistics of `queue` now (see [`Stats`]), read from indexes.
    pub async fn stats(&self, queue: Arg<'_>, clock: Clock<'_>) -> Result<Stats> {
        let queue = queue_name_only(&queue)?;
        let now = read_now(clock)?;
        let counts = self.store.counts(&queue, now).await?;
        Ok(Stats::new(&queue, &counts, now))
    }

    /// The statistics of every queue that holds messages or has stored settings, by name.
    pub async fn queues(&self, clock: Clock<'_>) -> Result<Vec<Stats>> {
        let now = read_now(clock)?;
        let mut all = Vec::new();
        for name in self.store.queues().await? {
            let counts = self.store.counts(&name, now).await?;
            all.push(Stats::new(&name, &counts, now));
        }
        Ok(all)
    }

    /// When the next delayed message of `queue` becomes due: the earliest `retry_after` later than
    /// now among its pending messages (not blocked behind their group's head); `None` when none is
    /// delayed. Cheap (one index read): what an idle worker waits for.
    pub async fn next_due_at(&self, queue: Arg<'_>, clock: Clock<'_>) -> Result<Option<Millis>> {
        let queue = queue_name_only(&queue)?;
        let now = read_now(clock)?;
        self.store.next_due_at(&queue, now).await
    }

    /// When a claim on `queue` that took nothing can next take a message: when its next delayed
    /// message comes due ([`Engine::next_due_at`]); `None` when none is delayed, and while the
    /// queue is paused, whose claims take nothing until it is resumed, an instant no clock can
    /// tell. The HTTP API's empty claim sends it as `Retry-After` (absent for `None`): it sent the
    /// next due instant of a paused queue, which told its clients to come back for a message they
    /// could not get (left by session 6's helpers). Reads the queue's row, then, unless paused,
    /// as [`Engine::next_due_at`].
    pub async fn next_claim_at(&self, queue: Arg<'_>, clock: Clock<'_>) -> Result<Option<Millis>> {
        let queue = queue_name_only(&queue)?;
        if self.store.queue_row(&queue).await?.settings.paused {
            return Ok(None);
        }
        let now = read_now(clock)?;
        self.store.next_due_at(&queue, now).await
    }

    /// One message; `not_found` when `queue` has no message `id`.
    pub async fn get(&self, queue: Arg<'_>, id: Arg<'_>) -> Result<Message> {
        let args = MessageArgs::new(&queue, &id)?;
        args.found(self.store.get(&args.queue, args.id).await?)
    }

    /// One page of the messages of `queue` that `filters` select (see [`FilterArgs`]), in id
    /// order, ids above `after_id` (>= 0), at most `limit` (1..=1000, default 100), with where to
    /// go on ([`Page::next_after_id`]). Without a filter beyond `status` this is one read of the
    /// store's index; with one it examines at most [`SCAN_BUDGET`] messages (the page may then be
    /// short, even empty, with `next_after_id` set). The clock is read only for `delayed`. Takes
    /// no write lock.
    ///
    /// Errors: `validation_failed` with every rejected argument (queue, filters in
    /// [`FilterArgs::NAMES`] order, `limit`, `after_id`); with `delayed`, a clock outside the
    /// representable range (field `clock`); `store` from the read.
    pub async fn list(
        &self,
        queue: Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: Arg<'_>,
        after_id: Arg<'_>,
        clock: Clock<'_>,
    ) -> Result<Page> {
        let args = ListArgs::new(&queue, filters, &limit, &after_id)?;
        let now = if args.needs_clock() {
            read_now(clock)?
        } else {
            0
        };
        let mut scan = Scan::new(args, now);
        while let Some(query) = scan.next() {
            let page = self.store.list(&query).await?;
            scan.feed(page);
        }
        Ok(scan.finish())
    }

    /// The settings stored with `queue` (nulls where unset) and whether it is paused; a queue
    /// never configured reads as all defaults (nothing is written). Takes any queue name a
    /// handle takes, also one stored by 0.1.0.
    pub async fn settings(&self, queue: Arg<'_>) -> Result<QueueSettings> {
        let queue = queue_name_only(&queue)?;
        Ok(self.store.queue_row(&queue).await?.settings)
    }

    /// Replaces the configurable settings of the queue `args` names (see [`SettingsArgs`]: an
    /// unset field is unset again; `paused` and the counters are left alone) and returns them. A
    /// name an enqueue refuses is `invalid` on `queue` unless the queue exists or nothing is
    /// stored ([`crate::row_write`]).
    pub async fn set_settings(&self, args: &SettingsArgs) -> Result<QueueSettings> {
        let row = self.write_row(&args.queue, |row| args.step(row)).await?;
        Ok(row.settings)
    }

    /// Pauses `queue` (`paused` true: it claims nothing until resumed; every process sees it) or
    /// resumes it (false); idempotent. Returns the settings. Takes any handle's name, but pausing
    /// creates a queue that does not exist, and a name an enqueue refuses is then `invalid` on
    /// `queue` ([`crate::row_write`]): a queue stored under one (by 0.1.0) is paused and resumed.
    pub async fn pause(&self, queue: Arg<'_>, paused: bool) -> Result<QueueSettings> {
        let queue = queue_name_only(&queue)?;
        let row = self
            .write_row(&queue, |row| pause_step(row, paused))
            .await?;
        Ok(row.settings)
    }

    /// Writes `step(row)` as the row of `queue` where [`crate::row_write`] allows it. Only a name
    /// an enqueue refuses pays the read of whether the queue holds a message: its first message,
    /// read before the write. No message is ever put under such a name, so one read that found
    /// none is still right at the write, and one that found a message gives the outcome of the
    /// write ordered before whatever moved or deleted it since.
    async fn write_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> QueueRow,
    ) -> Result<QueueRow> {
        let first = ListQuery {
            queue,
            status: None,
            limit: 1,
            after_id: None,
        };
        let holds_message = crate::validate::new_queue_name(&Arg::Str(queue)).is_err()
            && !self.store.list(&first).await?.is_empty();
        self.store
            .write_queue_row(queue, |row| {
                crate::row_write(queue, &row, step(row), holds_message)
            })
            .await
    }
}

/// A queue name checked alone (the calls on a whole queue).
fn queue_name_only(queue: &Arg<'_>) -> Result<String> {
    crate::validate::queue_name(queue).map(str::to_owned)
}
