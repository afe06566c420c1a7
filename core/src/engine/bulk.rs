//! The bulk actions over the filters of `list` (issue 22): `replay_all`, `delete_all`,
//! `retry_now_all`, `move_all` ([`BulkArgs`]), each run batch by batch ([`super::BATCH`] messages, each batch
//! its own write transaction that checks the filter and the step again on every message), or as
//! a dry run: the same selection and the same steps without writing, which gives the exact count
//! the action would touch now.

use crate::arg::Arg;
use crate::error::Result;
use crate::machine;
use crate::message::{Id, Message, Millis, Status};
use crate::settings::{Clock, Context};
use crate::store::{ListQuery, Store};
use crate::validate::Check;

use super::apply::{self, expires_at};
use super::filters::{Action, Filter, FilterArgs, Selection};
use super::{BATCH, Engine, read_now};

/// `replay_all`, `delete_all`, `retry_now_all` or `move_all`: the messages of `queue` that the
/// filters select and the action may touch, at most `limit`, in id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkArgs {
    /// What it does.
    pub action: Action,
    /// The queue.
    pub queue: String,
    /// The filters, with the action's default status (see [`Action`]).
    pub selection: Selection,
    /// At most this many (`u64::MAX`: all).
    pub limit: u64,
    /// Count only: write nothing.
    pub dry_run: bool,
}

/// `move_all`: the bulk action [`Action::Move`] and the queue its messages go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveAllArgs {
    /// The selection, limit and dry run (its action is [`Action::Move`]).
    pub bulk: BulkArgs,
    /// The queue the messages go to.
    pub to_queue: String,
}

impl MoveAllArgs {
    /// Checks `queue`, `to_queue` (the rules of an enqueue's queue name, field `to_queue`;
    /// `queue` itself is `invalid`), the filters (status `pending` or `dead`, both by default),
    /// `limit` and `dry_run` as [`BulkArgs::new`] does; every rejected field together, in this
    /// order.
    pub fn new(
        queue: &Arg<'_>,
        to_queue: &Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: &Arg<'_>,
        dry_run: &Arg<'_>,
    ) -> Result<Self> {
        let mut to = None;
        let bulk = BulkArgs::check(
            Action::Move,
            queue,
            to_queue,
            &mut to,
            filters,
            limit,
            dry_run,
        )?;
        Ok(Self {
            bulk,
            to_queue: to.unwrap_or_default(),
        })
    }

    /// The step on one candidate inside a write at `ctx` ([`crate::Store::move_many`]), `taken`
    /// saying whether a message of the target queue carries its idempotency key: `None` (left
    /// where it is) when it is no longer selected or its key is taken there (a bulk move skips
    /// it and does not count it), else the message moved ([`machine::move_to`]).
    pub fn step(&self, message: Message, ctx: &Context, taken: bool) -> Result<Option<Message>> {
        if taken || !self.bulk.selects(&message, ctx.now) {
            return Ok(None);
        }
        machine::move_to(message, &self.to_queue, ctx.now).map(Some)
    }

    /// Whether the move would touch `message` at `ctx` (what a dry run counts; `taken` as for
    /// [`MoveAllArgs::step`]).
    pub fn touches(&self, message: &Message, ctx: &Context, taken: bool) -> Result<bool> {
        Ok(self.step(message.clone(), ctx, taken)?.is_some())
    }
}

impl BulkArgs {
    /// Checks `queue`, the filters for `action` (see [`Selection`] and [`Action`]: the statuses
    /// it allows), `limit` (>= 1; null: all) and `dry_run` (a bool, default false); every
    /// rejected field is reported together, in this order.
    ///
    /// `move_all` ([`Action::Move`]) takes a target queue: [`MoveAllArgs::new`]; here (no target
    /// given) it is a `type` error on `to_queue`.
    pub fn new(
        action: Action,
        queue: &Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: &Arg<'_>,
        dry_run: &Arg<'_>,
    ) -> Result<Self> {
        Self::check(
            action,
            queue,
            &Arg::Null,
            &mut None,
            filters,
            limit,
            dry_run,
        )
    }

    /// [`BulkArgs::new`], with `move_all`'s `to_queue` checked after `queue` (into `to`).
    fn check(
        action: Action,
        queue: &Arg<'_>,
        to_queue: &Arg<'_>,
        to: &mut Option<String>,
        filters: &FilterArgs<'_>,
        limit: &Arg<'_>,
        dry_run: &Arg<'_>,
    ) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.queue(queue);
        if action == Action::Move {
            *to = check.target_queue(to_queue, queue).map(str::to_owned);
        }
        let selection = Selection::check(&mut check, filters, Some(action));
        let limit = check.opt_int("limit", limit, (1, i64::MAX));
        let dry_run = check.bool("dry_run", dry_run, false);
        check.finish(|| Self {
            action,
            queue: queue.unwrap_or_default().to_owned(),
            selection: selection.unwrap_or_default(),
            limit: limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX)),
            dry_run,
        })
    }

    /// The filter at `now` (the instant `delayed` is judged at).
    pub fn filter(&self, now: Millis) -> Filter<'_> {
        self.selection.filter(&self.queue, now)
    }

    /// Whether `message` is selected at `now`: the filter matches and the action may touch it
    /// (for `delete_all` without a status: a finished message).
    pub fn selects(&self, message: &Message, now: Millis) -> bool {
        self.action.allows(message.status) && self.filter(now).matches(message)
    }

    /// The step of `replay_all` and `retry_now_all` on one candidate inside a write at `ctx`:
    /// `None` (left alone) when it is no longer selected (it may have changed since it was
    /// read), else the message replayed (with the queue's stored expiry, see
    /// [`machine::replay`]) or made due now ([`machine::retry_now`]). `delete_all` writes no
    /// message: `None` (see [`BulkArgs::deletes`]); nor does this for `move_all`
    /// ([`MoveAllArgs::step`]).
    pub fn step(&self, message: Message, ctx: &Context) -> Result<Option<Message>> {
        if !self.selects(&message, ctx.now) {
            return Ok(None);
        }
        match self.action {
            Action::Replay => machine::replay(message, ctx.now, expires_at(ctx, None)?).map(Some),
            Action::RetryNow => machine::retry_now(message, ctx.now).map(Some),
            Action::Delete | Action::Move => Ok(None),
        }
    }

    /// Whether `delete_all` deletes `message` (inside a write, or read at `now`): when it is
    /// still selected.
    pub fn deletes(&self, message: &Message, now: Millis) -> bool {
        self.action == Action::Delete && self.selects(message, now)
    }

    /// Whether the action would touch `message` at `ctx` (what a dry run counts): the step
    /// writes it, or it would be deleted. An error of the step (an instant past the
    /// representable range) is the action's error.
    /// (`move_all` is [`MoveAllArgs::touches`], which knows the target's keys: false here.)
    pub fn touches(&self, message: &Message, ctx: &Context) -> Result<bool> {
        match self.action {
            Action::Delete => Ok(self.deletes(message, ctx.now)),
            Action::Replay | Action::RetryNow => Ok(self.step(message.clone(), ctx)?.is_some()),
            Action::Move => Ok(false),
        }
    }
}

impl<S: Store> Engine<S> {
    /// A bulk action: its selection at the clock's instant (read once, when it starts), then
    /// each batch written (or, on a dry run, counted at that instant with the queue's row).
    /// `moving`: the move of `move_all` (`args` is its [`MoveAllArgs::bulk`]).
    pub(super) async fn run_bulk(
        &self,
        args: &BulkArgs,
        moving: Option<&MoveAllArgs>,
        clock: Clock<'_>,
    ) -> Result<u64> {
        let now = read_now(clock)?;
        let (queue, status) = (&args.queue, args.selection.read_status());
        let selects = |m: &Message| args.selects(m, now);
        if args.dry_run {
            let ctx = Context::new(now, self.store.queue_row(queue).await?)?;
            return self
                .in_batches(queue, status, args.limit, selects, async |picked| {
                    let Some(moving) = moving else {
                        let mut n = 0;
                        for message in picked {
                            n += u64::from(args.touches(message, &ctx)?);
                        }
                        return Ok(n);
                    };
                    let taken = self.keys_taken(&moving.to_queue, picked).await?;
                    let mut n = 0;
                    for message in picked {
                        let key = message.idempotency_key.as_ref();
                        let taken = key.is_some_and(|k| taken.contains(k));
                        n += u64::from(moving.touches(message, &ctx, taken)?);
                    }
                    Ok(n)
                })
                .await;
        }
        self.in_batches(queue, status, args.limit, selects, async |picked| {
            let ids: Vec<Id> = picked.iter().map(|m| m.id).collect();
            let written = if let Some(moving) = moving {
                let step = |m, ctx: &Context, taken| moving.step(m, ctx, taken);
                let to_queue = &moving.to_queue;
                self.store
                    .move_many(queue, &ids, to_queue, clock, step)
                    .await?
            } else if args.action == Action::Delete {
                let deletes = |m: &Message| Ok(args.deletes(m, now));
                self.store.delete_many(queue, &ids, deletes).await?
            } else {
                let step = |m, ctx: &Context| args.step(m, ctx);
                self.store.update_many(queue, &ids, clock, step).await?
            };
            Ok(apply::count(&written))
        })
        .await
    }

    /// For a dry run of `move_all`: the idempotency keys of `picked` that a message of
    /// `to_queue` carries (one store read per batch, none when no message has a key).
    async fn keys_taken(&self, to_queue: &str, picked: &[Message]) -> Result<Vec<String>> {
        let keys: Vec<&str> = picked
            .iter()
            .filter_map(|m| m.idempotency_key.as_deref())
            .collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.store.keys_taken(to_queue, &keys).await
    }

    /// Walks the messages of `queue` (of `status`, when set) in id order, [`BATCH`] at a time
    /// from the store's page read, picks those `selects` keeps (at most `limit` in all) and
    /// hands each batch's picks to `apply`; returns the sum of what `apply` reported.
    pub(super) async fn in_batches(
        &self,
        queue: &str,
        status: Option<Status>,
        limit: u64,
        selects: impl Fn(&Message) -> bool,
        mut apply: impl AsyncFnMut(&[Message]) -> Result<u64>,
    ) -> Result<u64> {
        let (mut done, mut after) = (0_u64, None);
        while done < limit {
            let query = ListQuery {
                queue,
                status,
                limit: BATCH,
                after_id: after,
            };
            let page = self.store.list(&query).await?;
            let last = page.len() < BATCH;
            let room = usize::try_from(limit - done)
                .unwrap_or(usize::MAX)
                .min(BATCH);
            let mut picked = Vec::with_capacity(room.min(page.len()));
            for message in page {
                after = Some(message.id);
                if selects(&message) {
                    picked.push(message);
                    if picked.len() == room {
                        break;
                    }
                }
            }
            if !picked.is_empty() {
                done = done.saturating_add(apply(&picked).await?);
            }
            if last && picked.len() < room {
                break;
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewMessage, QueueRow, Status};

    const NOW: Millis = 1_767_225_600_000;

    fn message(status: Status, retry_after: Option<Millis>) -> Message {
        let mut m = NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 3,
            idempotency_key: None,
            retry_after,
            group: None,
            expires_at: None,
            now: NOW - 10,
        }
        .with_id(1);
        m.status = status;
        m
    }

    fn bulk(action: Action) -> BulkArgs {
        BulkArgs::new(
            action,
            &"q".into(),
            &FilterArgs::default(),
            &Arg::Null,
            &Arg::Null,
        )
        .unwrap()
    }

    #[test]
    fn each_action_touches_its_statuses_only() {
        let ctx = Context::new(NOW, QueueRow::default()).unwrap();
        let delayed = message(Status::Pending, Some(NOW + 1));
        let due = message(Status::Pending, Some(NOW));
        let cases = [
            (Action::Replay, [false, false, false, false, true]),
            (Action::Delete, [false, false, false, true, true]),
            (Action::RetryNow, [true, false, false, false, false]),
        ];
        let messages = [
            delayed,
            due,
            message(Status::Processing, None),
            message(Status::Succeeded, None),
            message(Status::Dead, None),
        ];
        for (action, want) in cases {
            let args = bulk(action);
            let got: Vec<bool> = messages
                .iter()
                .map(|m| args.touches(m, &ctx).unwrap())
                .collect();
            assert_eq!(got, want, "{action:?}");
        }
        let made_due = bulk(Action::RetryNow)
            .step(messages[0].clone(), &ctx)
            .unwrap();
        assert_eq!(
            made_due.map(|m| (m.retry_after, m.updated_at)),
            Some((None, NOW))
        );
    }

    #[test]
    fn move_all_takes_pending_and_dead_messages_whose_key_is_free_in_the_target() {
        let ctx = Context::new(NOW, QueueRow::default()).unwrap();
        let none = FilterArgs::default();
        let args = MoveAllArgs::new(&"q".into(), &"q2".into(), &none, &Arg::Null, &Arg::Null);
        let args = args.unwrap();
        let statuses = [
            Status::Pending,
            Status::Processing,
            Status::Succeeded,
            Status::Dead,
        ];
        let touched: Vec<bool> = statuses
            .iter()
            .map(|s| args.touches(&message(*s, None), &ctx, false).unwrap())
            .collect();
        assert_eq!(touched, [true, false, false, true]);
        assert!(
            !args
                .touches(&message(Status::Dead, None), &ctx, true)
                .unwrap()
        );
        let moved = args.step(message(Status::Dead, None), &ctx, false).unwrap();
        assert_eq!(
            moved.map(|m| (m.queue, m.moved_from, m.updated_at)),
            Some(("q2".into(), Some("q".into()), NOW))
        );
        // Without a target (the action as a value): to_queue is missing.
        let err = BulkArgs::new(Action::Move, &"q".into(), &none, &Arg::Null, &Arg::Null);
        let fields: Vec<_> = err
            .unwrap_err()
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(fields, [("to_queue", "type")]);
        let filters = FilterArgs {
            status: "succeeded".into(),
            ..FilterArgs::default()
        };
        let err = MoveAllArgs::new(&"q".into(), &"q".into(), &filters, &Arg::Int(0), &Arg::Null);
        let fields: Vec<_> = err
            .unwrap_err()
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(
            fields,
            [
                ("to_queue", "invalid"),
                ("status", "invalid"),
                ("limit", "out_of_range")
            ]
        );
    }

    #[test]
    fn limit_and_dry_run_are_checked_with_the_filters() {
        let filters = FilterArgs {
            status: "pending".into(),
            ..FilterArgs::default()
        };
        let err = BulkArgs::new(
            Action::Delete,
            &"q".into(),
            &filters,
            &Arg::Int(0),
            &"no".into(),
        )
        .unwrap_err();
        let fields: Vec<_> = err
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(
            fields,
            [
                ("status", "invalid"),
                ("limit", "out_of_range"),
                ("dry_run", "type")
            ]
        );
        let args = BulkArgs::new(
            Action::Replay,
            &"q".into(),
            &FilterArgs::default(),
            &Arg::Int(3),
            &Arg::Bool(true),
        );
        assert_eq!(args.map(|a| (a.limit, a.dry_run)), Ok((3, true)));
    }
}
