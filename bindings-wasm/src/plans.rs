//! The plans of the operations (internal; made by [`crate::rules::QueueRules`], run by
//! `js/backend.js` through the IndexedDB store `js/store/store.js`): each holds one call's
//! checked request and answers, for every record the store read inside its transaction, what to
//! write (the core's steps: [`deadletter::engine::apply`], [`deadletter::engine::plan`]); after
//! the commit, `finish` gives what the call resolves to. JavaScript decides nothing about a
//! message: it reads the ranges a plan names, hands the records over and writes what it is given.
//!
//! The claim's plan is [`crate::claim::ClaimPlan`].
//!
//! A plan that throws inside a transaction (a `DeadLetterError`: `not_found`, `conflict`, a
//! corrupt record) makes the store abort it, so nothing is written.

use deadletter::engine::{Sift, sift};
use deadletter::{
    Batches, Context, Error, ExtendArgs, FailArgs, Id, ListQuery, Message, MessageArgs, Millis,
    NewMessage, Outcome, PurgeArgs, ReplayAllArgs, ReplayArgs, Result, Stats, Status, SucceedArgs,
    machine,
};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::record::{from_record, number, stats_to_js, to_js, to_record, whole};
use crate::rules::js;
use crate::{errors, keys};

/// `{ value, dead }`: what a call that can make messages dead resolves to.
pub(crate) fn outcome(value: &JsValue, dead: &[Message]) -> JsValue {
    let object = Object::new();
    let _ = Reflect::set(&object, &"value".into(), value);
    let _ = Reflect::set(&object, &"dead".into(), &messages(dead));
    object.into()
}

pub(crate) fn messages(list: &[Message]) -> JsValue {
    list.iter().map(to_js).collect::<Array>().into()
}

/// An id as a JavaScript number.
#[allow(clippy::cast_precision_loss)] // ids are far below 2^53
fn float(id: Id) -> f64 {
    id as f64
}

#[allow(clippy::cast_precision_loss)] // counts are far below 2^53
pub(crate) fn count(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// The messages of an array of records (`undefined` entries: nothing found, skipped).
pub(crate) fn read_all(records: &Array) -> Result<Vec<Message>> {
    records
        .iter()
        .filter(|r| !r.is_undefined())
        .map(|r| from_record(&r))
        .collect()
}

/// `Queue.enqueue` and `Queue.enqueueMany`: the records to add, in order, each after the lookup
/// of its idempotency key (when it has one) came back empty.
#[wasm_bindgen]
pub struct EnqueuePlan {
    messages: Vec<NewMessage>,
}

impl EnqueuePlan {
    pub(crate) fn new(messages: Vec<NewMessage>) -> Self {
        Self { messages }
    }
}

#[wasm_bindgen]
impl EnqueuePlan {
    /// The record of each new message, without an id (the store assigns it).
    pub fn records(&self) -> Array {
        self.messages
            .iter()
            .map(|new| JsValue::from(to_record(&new.clone().with_id(0), false)))
            .collect()
    }

    /// For each record, the key of the unique index `idempotency` (`[queue, idempotencyKey]`)
    /// to look up before adding it, or null when it carries no key.
    pub fn keys(&self) -> Array {
        self.messages
            .iter()
            .map(|m| match &m.idempotency_key {
                Some(k) => [JsValue::from_str(&m.queue), JsValue::from_str(k)]
                    .into_iter()
                    .collect::<Array>()
                    .into(),
                None => JsValue::NULL,
            })
            .collect()
    }

    /// The messages, once committed: `results` holds, for each record, the id the store assigned
    /// (a number) or the stored record that carried its idempotency key (`deduplicated` true).
    pub fn finish(self, results: &Array) -> std::result::Result<Array, JsValue> {
        let out = Array::new();
        for (new, result) in self.messages.into_iter().zip(results.iter()) {
            let message = match whole(&result) {
                Some(id) => new.with_id(id),
                None => Message {
                    deduplicated: true,
                    ..js(from_record(&result))?
                },
            };
            out.push(&to_js(&message));
        }
        Ok(out)
    }
}

/// The step of a call on one message.
pub enum Update {
    /// `Queue.succeed`.
    Succeed(SucceedArgs),
    /// `Queue.fail`.
    Fail(FailArgs),
    /// `Queue.extend`.
    Extend(ExtendArgs),
    /// `Queue.replay`.
    Replay(ReplayArgs),
}

/// `Queue.succeed`, `fail`, `extend` and `replay`: the store reads the record of [`UpdatePlan::id`]
/// and writes what [`UpdatePlan::step`] returns.
#[wasm_bindgen]
pub struct UpdatePlan {
    update: Update,
    ctx: Context,
    written: Option<Message>,
}

impl UpdatePlan {
    pub(crate) fn new(update: Update, ctx: Context) -> Self {
        Self {
            update,
            ctx,
            written: None,
        }
    }

    fn target(&self) -> (&str, Id) {
        match &self.update {
            Update::Succeed(a) => (&a.queue, a.id),
            Update::Fail(a) => (&a.queue, a.id),
            Update::Extend(a) => (&a.queue, a.id),
            Update::Replay(a) => (&a.queue, a.id),
        }
    }

    fn apply(&self, found: &JsValue) -> Result<Message> {
        let (queue, id) = self.target();
        let message = if found.is_undefined() {
            None
        } else {
            Some(from_record(found)?)
        };
        let message = MessageArgs {
            queue: queue.to_owned(),
            id,
        }
        .found(message)?;
        match &self.update {
            Update::Succeed(a) => a.step(message, &self.ctx),
            Update::Fail(a) => a.step(message, &self.ctx),
            Update::Extend(a) => a.step(message, &self.ctx),
            Update::Replay(a) => a.step(message, &self.ctx),
        }
    }
}

#[wasm_bindgen]
impl UpdatePlan {
    /// The id of the message to read.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        float(self.target().1)
    }

    /// The record the store found under the id (`undefined` when none); returns the record to
    /// write. Throws `not_found` (no message of the queue), `conflict` or a corrupt-record `store`
    /// error.
    pub fn step(&mut self, found: &JsValue) -> std::result::Result<Object, JsValue> {
        let next = js(self.apply(found))?;
        let record = to_record(&next, true);
        self.written = Some(next);
        Ok(record)
    }

    /// Once committed: `{ value, dead }`.
    pub fn finish(self) -> std::result::Result<JsValue, JsValue> {
        let message = self
            .written
            .ok_or_else(|| errors::to_js(&Error::Store("finished before its step".into())))?;
        let written = Outcome::new(to_js(&message), std::slice::from_ref(&message));
        Ok(outcome(&written.value, &written.dead))
    }
}

/// `Queue.get` and `Queue.delete`: one message by id.
#[wasm_bindgen]
pub struct ReadPlan {
    args: MessageArgs,
}

impl ReadPlan {
    pub(crate) fn new(args: MessageArgs) -> Self {
        Self { args }
    }
}

#[wasm_bindgen]
impl ReadPlan {
    /// The id of the message to read.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        float(self.args.id)
    }

    /// The message of the record found under the id (`undefined` when none). Throws `not_found`
    /// (nothing, or a message of another queue) or a corrupt-record `store` error.
    pub fn found(&self, found: &JsValue) -> std::result::Result<JsValue, JsValue> {
        let message = if found.is_undefined() {
            None
        } else {
            Some(js(from_record(found))?)
        };
        Ok(to_js(&js(self.args.found(message))?))
    }

    /// `Queue.delete`, inside the write: of the records found (`undefined`: none), the ids to
    /// delete. Throws `conflict` for a message that is not finished (a live message is never
    /// deleted from under its worker).
    pub fn deletable(&self, found: &Array) -> std::result::Result<Array, JsValue> {
        let mine: Vec<Message> = js(read_all(found))?
            .into_iter()
            .filter(|m| m.queue == self.args.queue)
            .collect();
        let ids = Array::new();
        for message in &mine {
            js(self.args.delete(message))?;
            ids.push(&number(message.id));
        }
        Ok(ids)
    }
}

/// What one write of a bulk operation does.
enum Bulk {
    Replay(ReplayAllArgs, Context),
    Purge(PurgeArgs),
}

/// `Queue.replayAll` and `Queue.purge`, in [`Batches`]: while [`BulkPlan::next`] names a
/// selection, the store walks the keys of the `list` index in that range, asking
/// [`BulkPlan::sift`] about each (and [`BulkPlan::matches`] about the record when it says so),
/// then, in a write, hands the records of the ids it kept to [`BulkPlan::step`] and writes (or, for
/// a purge, deletes) what it returns; [`BulkPlan::record`] closes the batch.
#[wasm_bindgen]
pub struct BulkPlan {
    bulk: Bulk,
    batches: Batches,
}

impl BulkPlan {
    pub(crate) fn replay(args: ReplayAllArgs, ctx: Context) -> Self {
        let batches = Batches::new(args.limit);
        Self {
            bulk: Bulk::Replay(args, ctx),
            batches,
        }
    }

    pub(crate) fn purge(args: PurgeArgs) -> Self {
        Self {
            bulk: Bulk::Purge(args),
            batches: Batches::new(u64::MAX),
        }
    }

    fn filter(&self) -> deadletter::Filter<'_> {
        match &self.bulk {
            Bulk::Replay(a, _) => a.filter(),
            Bulk::Purge(a) => a.filter(),
        }
    }
}

#[wasm_bindgen]
impl BulkPlan {
    /// The next selection, `[range, room]`: at most `room` ids of the `list` index's `range`;
    /// `undefined` when the operation is over.
    pub fn next(&self) -> Option<Array> {
        let (after, room) = self.batches.next()?;
        let filter = self.filter();
        let range = keys::status_after(filter.queue, filter.status, after);
        #[allow(clippy::cast_precision_loss)] // at most BATCH
        Some(
            [range, JsValue::from_f64(room as f64)]
                .into_iter()
                .collect(),
        )
    }

    /// One key of the selection's range (`[queue, status, id, updatedAt]`): 0 skip it, 1 select
    /// it, 2 read the record and ask [`BulkPlan::matches`].
    pub fn sift(&self, key: &JsValue) -> std::result::Result<u8, JsValue> {
        let updated_at = keys::part(key, 3)
            .ok_or_else(|| errors::to_js(&Error::Store("a bad key in index list".into())))?;
        Ok(match sift(&self.filter(), updated_at) {
            Sift::Skip => 0,
            Sift::Take => 1,
            Sift::Load => 2,
        })
    }

    /// Whether the filter selects the message of `record`.
    pub fn matches(&self, record: &JsValue) -> std::result::Result<bool, JsValue> {
        Ok(self.filter().matches(&js(from_record(record))?))
    }

    /// Inside the write, the records found under the selected ids (`undefined`: gone): for
    /// `replayAll` the records to write, for `purge` the ids to delete.
    pub fn step(&self, found: &Array) -> std::result::Result<Array, JsValue> {
        let out = Array::new();
        for message in js(read_all(found))? {
            if message.queue != self.filter().queue {
                continue;
            }
            match &self.bulk {
                Bulk::Replay(a, ctx) => {
                    if let Some(next) = js(a.step(message, ctx))? {
                        out.push(&to_record(&next, true));
                    }
                }
                Bulk::Purge(a) => {
                    if a.selects(&message) {
                        out.push(&number(message.id));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Closes a batch: the ids selected (ascending) and how many the write applied.
    pub fn record(&mut self, ids: &Array, applied: u32) {
        let ids: Vec<Id> = ids.iter().filter_map(|id| whole(&id)).collect();
        self.batches.record(&ids, applied.into());
    }

    /// How many messages were replayed or deleted.
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a count, far below 2^53
        let done = self.batches.done() as f64;
        done
    }
}

/// `Queue.stats`: the store counts the ranges of [`StatsPlan::ranges`], reads the first keys of
/// two of them, and walks the claim lanes through [`StatsPlan::timed`] and [`StatsPlan::ready`]
/// for the oldest due message.
#[wasm_bindgen]
pub struct StatsPlan {
    queue: String,
    now: Millis,
    oldest_due: Option<Millis>,
}

impl StatsPlan {
    pub(crate) fn new(queue: String, now: Millis) -> Self {
        Self {
            queue,
            now,
            oldest_due: None,
        }
    }

    fn due(&mut self, record: &JsValue) -> Result<bool> {
        let message = from_record(record)?;
        let due = machine::is_due(&message, self.now);
        if due {
            let at = message.created_at;
            self.oldest_due = Some(self.oldest_due.map_or(at, |o| o.min(at)));
        }
        Ok(due)
    }
}

#[wasm_bindgen]
impl StatsPlan {
    /// The ranges: `byStatus` (index `list`, one per status in lifecycle order), `expired`
    /// (index `expiry`), `delayed` (index `delayed`, whose first key is the next due instant),
    /// `dead` (index `dead`, whose first key is the oldest death), `timed` and `ready` (index
    /// `claim`).
    pub fn ranges(&self) -> Object {
        let (q, now) = (self.queue.as_str(), self.now);
        let by_status: Array = Status::ALL.iter().map(|s| keys::status(q, *s)).collect();
        let object = Object::new();
        for (name, range) in [
            ("byStatus", by_status.into()),
            ("expired", keys::overdue(q, now)),
            ("delayed", keys::delayed(q, now)),
            ("dead", keys::dead(q)),
            ("timed", keys::timed(q, now)),
            ("ready", keys::ready(q)),
        ] {
            let _ = Reflect::set(&object, &name.into(), &range);
        }
        object
    }

    /// A record of the timed range (in any order).
    pub fn timed(&mut self, record: &JsValue) -> std::result::Result<(), JsValue> {
        js(self.due(record)).map(drop)
    }

    /// A record of the ready lane, in claim order: true once the walk may stop (it found the
    /// first due message).
    pub fn ready(&mut self, record: &JsValue) -> std::result::Result<bool, JsValue> {
        js(self.due(record))
    }

    /// The statistics, from `counts` (the counts of `byStatus`, then `expired` and `delayed`)
    /// and the first keys of `delayed` and `dead` (`undefined` when empty).
    pub fn finish(
        self,
        counts: &Array,
        first_delayed: &JsValue,
        first_dead: &JsValue,
    ) -> std::result::Result<JsValue, JsValue> {
        let mut numbers = counts
            .iter()
            .map(|n| whole(&n).and_then(|n| u64::try_from(n).ok()));
        let mut next = || {
            numbers
                .next()
                .flatten()
                .ok_or_else(|| errors::to_js(&Error::Store("IndexedDB count failed".into())))
        };
        let counts = deadletter::Counts {
            by_status: [next()?, next()?, next()?, next()?],
            expired: next()?,
            delayed: next()?,
            next_due_at: keys::part(first_delayed, 2),
            oldest_due_created_at: self.oldest_due,
            oldest_dead_at: keys::part(first_dead, 2),
            ..deadletter::Counts::default()
        };
        Ok(stats_to_js(&Stats::new(&self.queue, &counts, self.now)))
    }
}

/// `Database.queues`: the statistics plan of queue `name` (a name the store found) at `now`,
/// the instant [`crate::rules::DatabaseRules::queues`] checked.
#[wasm_bindgen(js_name = statsPlan)]
pub fn stats_plan(name: String, now: f64) -> StatsPlan {
    #[allow(clippy::cast_possible_truncation)] // a checked instant, whole
    StatsPlan::new(name, now as Millis)
}

/// `Queue.list`: `{ queue, range, limit, afterId }`: with a status, the `range` of the `list`
/// index to read (ids above `afterId`, at most `limit`); without, `range` is null and the store
/// reads the `queue` index from the id after `afterId`. The page read goes to [`messages_of`].
pub fn list_plan(query: &ListQuery<'_>) -> JsValue {
    let after_id = query.after_id.unwrap_or(0);
    let range = query.status.map_or(JsValue::NULL, |s| {
        keys::status_after(query.queue, s, after_id)
    });
    let object = Object::new();
    #[allow(clippy::cast_precision_loss)] // at most 1000
    let limit = JsValue::from_f64(query.limit as f64);
    for (key, value) in [
        ("queue", JsValue::from_str(query.queue)),
        ("range", range),
        ("limit", limit),
        ("afterId", number(after_id)),
    ] {
        let _ = Reflect::set(&object, &key.into(), &value);
    }
    object.into()
}

/// The messages of the records of one page of `Queue.list`, in order.
#[wasm_bindgen(js_name = messagesOf)]
pub fn messages_of(page: &Array) -> std::result::Result<Array, JsValue> {
    Ok(js(read_all(page))?.iter().map(to_js).collect())
}
