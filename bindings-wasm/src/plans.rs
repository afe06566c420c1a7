//! The plans of the operations (internal; made by [`crate::rules::QueueRules`], run by
//! `js/backend.js` through the IndexedDB store `js/store/store.js`): each holds one call's
//! checked request and answers, for every record the store read inside its transaction, what to
//! write (the core's steps: [`deadletter::engine::apply`], [`deadletter::engine::plan`],
//! [`deadletter::engine::groups`]); after the commit, `finish` gives what the call resolves to.
//! JavaScript decides nothing about a message: it reads the ranges a plan names, hands the
//! records over and writes what it is given.
//!
//! A write decides at its transaction's context ([`context`]): the instant JavaScript read from
//! the clock once the transaction's first request (the queue's row in `queues`, or the message
//! for a step that reads no row) completed, when the transaction holds its lock, and that row.
//! The claim's plan is [`crate::claim::ClaimPlan`]; the group bookkeeping of updates and replays
//! is [`crate::groups::Book`].
//!
//! A plan that throws inside a transaction (a `DeadLetterError`: `not_found`, `conflict`, a
//! corrupt record, a clock out of range) makes the store abort it, so nothing is written.

use deadletter::{
    Backoff, Context, EnqueueArgs, Error, ExtendArgs, FailArgs, Id, Message, MessageArgs, MoveArgs,
    Outcome, ReplayArgs, Result, SucceedArgs, Tails,
};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::groups::Book;
use crate::record::{from_record, get, number, stored, to_js, to_record, whole};
use crate::rules::{js, now};
use crate::{errors, keys, queue};

/// The context of a write on `queue`: `clock`, what the clock returned once the transaction's
/// first request completed, and `row`, the queue's record in `queues` (`undefined`: none), both
/// checked.
pub(crate) fn context(queue: &str, clock: &JsValue, row: &JsValue) -> Result<Context> {
    let now = now(clock)?;
    Context::new(now, queue::from_record(queue, row)?)
}

/// `{ value, dead, overridden }`: what a call that can make messages dead resolves to;
/// `overridden`, when set, is the policy stored with the queue that the handle's own one was
/// applied instead of (the backend warns once per handle).
pub(crate) fn outcome(value: &JsValue, dead: &[Message], overridden: Option<&Backoff>) -> JsValue {
    let overridden = overridden.map_or(JsValue::UNDEFINED, queue::policy_to_js);
    literal(value, &messages(dead), &overridden)
}

#[wasm_bindgen(module = "/js/store/record.js")]
extern "C" {
    /// `{ value, dead, overridden }`, an object literal (issue 20: two keys made and set from
    /// here cost two decodes and three crossings per call).
    #[wasm_bindgen(js_name = outcome)]
    fn literal(value: &JsValue, dead: &JsValue, overridden: &JsValue) -> JsValue;
}

pub(crate) fn messages(list: &[Message]) -> JsValue {
    let out = Array::new();
    for message in list {
        out.push(&to_js(message, false));
    }
    out.into()
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
    let mut messages = Vec::new();
    for record in records.iter() {
        if !record.is_undefined() {
            messages.push(from_record(&record)?);
        }
    }
    Ok(messages)
}

fn finished_early() -> JsValue {
    errors::to_js(&Error::Store("finished before its step".into()))
}

/// The distinct values of `names`, in the order they first come (no sort: the module has none).
fn distinct<'a>(names: impl Iterator<Item = Option<&'a String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names.flatten() {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// `Queue.enqueue` and `Queue.enqueueMany`: inside its transaction, the store reads the queue's
/// row (first), the stored message of each idempotency key of [`EnqueuePlan::keys`] (unique index
/// `idempotency`) and the tail of each group of [`EnqueuePlan::tails`] (the last key of index
/// `group`), hands them to [`EnqueuePlan::start`] with the clock's time, and adds the records it
/// answers.
#[wasm_bindgen]
pub struct EnqueuePlan {
    args: EnqueueArgs,
    keys: Vec<String>,
    groups: Vec<String>,
    /// The messages added (their ids 0 until [`EnqueuePlan::finish`]) and those found under a key.
    messages: Vec<Message>,
    /// Per item: its message (an index of `messages`) and whether it was deduplicated.
    slots: Vec<(usize, bool)>,
    /// The messages added, in the order of the records.
    added: Vec<usize>,
    /// Whether the queue's record says it may hold messages with an expiry.
    expires: bool,
    /// `Queue.enqueueMany` (the messages in an array), not `Queue.enqueue` (the message).
    batch: bool,
}

impl EnqueuePlan {
    pub(crate) fn new(args: EnqueueArgs, batch: bool) -> Self {
        let keys = distinct(args.items.iter().map(|i| i.idempotency_key.as_ref()));
        let groups = distinct(args.items.iter().map(|i| i.group.as_ref()));
        Self {
            args,
            keys,
            groups,
            messages: Vec::new(),
            slots: Vec::new(),
            added: Vec::new(),
            expires: false,
            batch,
        }
    }

    fn start_items(&mut self, ctx: &Context, found: &Array, tail_keys: &Array) -> Result<Array> {
        let mut tails = Tails::new();
        for (group, key) in self.groups.iter().zip(tail_keys.iter()) {
            tails.read(group, keys::position(&key));
        }
        // Per key: the message that carries it (stored, or the first item of the batch with it).
        let mut holder: Vec<Option<usize>> = Vec::with_capacity(self.keys.len());
        for record in found.iter() {
            holder.push(if record.is_undefined() {
                None
            } else {
                self.messages.push(from_record(&record)?);
                Some(self.messages.len() - 1)
            });
        }
        let out = Array::new();
        for new in self.args.messages(ctx)? {
            let key = new
                .idempotency_key
                .as_ref()
                .and_then(|k| self.keys.iter().position(|known| known == k));
            if let Some(at) = key.and_then(|k| holder[k]) {
                self.slots.push((at, true));
                continue;
            }
            let (group_at, head) = match &new.group {
                Some(group) => {
                    let (at, head) = tails.enter(group, ctx.now, None)?;
                    (Some(at), head)
                }
                None => (None, true),
            };
            let message = new.with_id(0);
            out.push(&to_record(&message, false, head, group_at));
            let at = self.messages.len();
            self.messages.push(message);
            if let Some(k) = key {
                holder[k] = Some(at);
            }
            self.added.push(at);
            self.slots.push((at, false));
        }
        Ok(out)
    }
}

#[wasm_bindgen]
impl EnqueuePlan {
    /// The keys of the unique index `idempotency` (`[queue, idempotencyKey]`) to look up, one per
    /// distinct key of the items.
    pub fn keys(&self) -> Array {
        let queue = JsValue::from_str(&self.args.queue);
        let out = Array::new();
        for key in &self.keys {
            out.push(&keys::array(&[queue.clone(), JsValue::from_str(key)]));
        }
        out
    }

    /// The ranges of index `group` whose last key (the group's tail) to read, one per distinct
    /// group of the items.
    pub fn tails(&self) -> Array {
        keys::groups(&self.args.queue, &self.groups)
    }

    /// Inside the transaction: `clock` (what the clock returned once the queue's row was read),
    /// `row` (its record, or `undefined`), `found` (the record stored under each key of
    /// [`EnqueuePlan::keys`], or `undefined`) and `tails` (the last key of each range of
    /// [`EnqueuePlan::tails`], or `undefined`): the records to add, in order. An item is not
    /// added when a stored message, or an earlier item of the batch, carries its idempotency key;
    /// a new grouped message goes to its group's end, blocked unless the group had no live
    /// member.
    pub fn start(
        &mut self,
        clock: &JsValue,
        row: &JsValue,
        found: &Array,
        tails: &Array,
    ) -> std::result::Result<Array, JsValue> {
        let ctx = js(context(&self.args.queue, clock, row))?;
        self.expires = queue::expires(row);
        js(self.start_items(&ctx, found, tails))
    }

    /// After [`EnqueuePlan::start`]: the queue whose record the store must mark as holding
    /// messages with an expiry (`markExpiring`, src/queue.rs) with the records, when one has an
    /// expiry and the record did not say so (see [`Book::marks`]); else none.
    pub fn marks(&self) -> Array {
        let expiring = self
            .added
            .iter()
            .any(|at| self.messages[*at].expires_at.is_some());
        if expiring && !self.expires {
            keys::array(&[JsValue::from_str(&self.args.queue)])
        } else {
            Array::new()
        }
    }

    /// The messages, once committed, given the id the store assigned to each record added: an
    /// item not added is the message that carries its key, with `deduplicated` true. An array
    /// for `enqueueMany`, the message itself for `enqueue`.
    pub fn finish(mut self, ids: &Array) -> JsValue {
        for (at, id) in self.added.iter().zip(ids.iter()) {
            self.messages[*at].id = whole(&id).unwrap_or_default();
        }
        let out = Array::new();
        for (at, deduplicated) in &self.slots {
            let message = to_js(&self.messages[*at], *deduplicated);
            if !self.batch {
                return message;
            }
            out.push(&message);
        }
        out.into()
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
    /// `Queue.retryNow`.
    RetryNow(MessageArgs),
    /// `Queue.move`.
    Move(MoveArgs),
}

/// `Queue.succeed`, `fail`, `extend`, `replay`, `retryNow` and `move`: inside its transaction,
/// the store reads the queue's row (first; only when [`UpdatePlan::reads_queue_js`]) and the record
/// of [`UpdatePlan::id`], for a move
/// whether the target queue holds its idempotency key ([`UpdatePlan::key`]), hands them to
/// [`UpdatePlan::start`] with the clock's time, then writes the record with its groups'
/// bookkeeping (the [`Book`] it answers; a move's in both queues).
#[wasm_bindgen]
pub struct UpdatePlan {
    update: Update,
    /// The handle's own policy (a failure's backoff).
    policy: Option<Backoff>,
    written: Option<Message>,
    overridden: Option<Backoff>,
}

impl UpdatePlan {
    pub(crate) fn new(update: Update, policy: Option<Backoff>) -> Self {
        Self {
            update,
            policy,
            written: None,
            overridden: None,
        }
    }

    /// Whether the store reads the queue's row: when the step reads it (the core's
    /// `reads_queue` of each request: a succeed, a retry-now, an extend with its own lease do not,
    /// and their store skips that request: issue 20), and for a replay and a move, whose write
    /// may put a message with an expiry into a queue whose record must then say so
    /// ([`Book::marks`]: the transaction is on both object stores).
    fn reads_queue(&self) -> bool {
        match &self.update {
            Update::Succeed(a) => a.reads_queue(),
            Update::Fail(a) => a.reads_queue(),
            Update::Extend(a) => a.reads_queue(),
            Update::RetryNow(a) => a.reads_queue(),
            Update::Replay(_) | Update::Move(_) => true,
        }
    }

    fn target(&self) -> (&str, Id) {
        match &self.update {
            Update::Succeed(a) => (&a.queue, a.id),
            Update::Fail(a) => (&a.queue, a.id),
            Update::Extend(a) => (&a.queue, a.id),
            Update::Replay(a) => (&a.queue, a.id),
            Update::RetryNow(a) => (&a.queue, a.id),
            Update::Move(a) => (&a.queue, a.id),
        }
    }

    fn apply(
        &mut self,
        clock: &JsValue,
        row: &JsValue,
        found: &JsValue,
        taken: bool,
    ) -> Result<Book> {
        let (queue, id) = self.target();
        let queue = queue.to_owned();
        let row = if self.reads_queue() {
            row
        } else {
            &JsValue::UNDEFINED
        };
        let ctx = context(&queue, clock, row)?;
        let before = if found.is_undefined() {
            None
        } else {
            Some(stored(found)?)
        };
        let message = MessageArgs {
            queue: queue.clone(),
            id,
        }
        .found(before.as_ref().map(|b| b.message.clone()))?;
        let next = match &self.update {
            Update::Succeed(a) => a.step(message, &ctx),
            Update::Fail(a) => {
                self.overridden = ctx.overridden(self.policy.as_ref());
                a.step(message, &ctx)
            }
            Update::Extend(a) => a.step(message, &ctx),
            Update::Replay(a) => a.step(message, &ctx),
            Update::RetryNow(a) => a.retry_now(message, &ctx),
            Update::Move(a) => a.step(message, &ctx, taken),
        }?;
        let mut book = Book::new(&queue, ctx.now, queue::expires(row));
        if let Some(before) = before {
            book.push(before, next.clone());
        }
        self.written = Some(next);
        Ok(book)
    }
}

#[wasm_bindgen]
impl UpdatePlan {
    /// The id of the message to read.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        float(self.target().1)
    }

    /// Whether the store reads the queue's row for [`UpdatePlan::start`]; when false it reads
    /// only the message (the transaction's first request, after which the clock is read) and
    /// passes `undefined` as the row.
    #[wasm_bindgen(getter, js_name = readsQueue)]
    pub fn reads_queue_js(&self) -> bool {
        self.reads_queue()
    }

    /// For a move, the key to look up in index `idempotency` for the record found (whether the
    /// target queue holds its idempotency key: see [`key_probe`]); `undefined` otherwise.
    pub fn key(&self, found: &JsValue) -> JsValue {
        match &self.update {
            Update::Move(a) => key_probe(&a.to_queue, found),
            _ => JsValue::UNDEFINED,
        }
    }

    /// Inside the transaction: `clock` (what the clock returned once the transaction's first
    /// request, the queue's row or else the message, completed), `row` (its record, or
    /// `undefined`; ignored when the step reads none), `found` (the record found under the id, or
    /// `undefined`) and `taken` (a move's: whether index `idempotency` holds its
    /// [`UpdatePlan::key`]): the step, as the write to make with its groups' bookkeeping. Throws
    /// `not_found` (no message of the queue), `conflict` (a move's `key_taken` too), a clock out
    /// of range or a corrupt-record `store` error.
    pub fn start(
        &mut self,
        clock: &JsValue,
        row: &JsValue,
        found: &JsValue,
        taken: bool,
    ) -> std::result::Result<Book, JsValue> {
        js(self.apply(clock, row, found, taken))
    }

    /// Once committed: `{ value, dead, overridden }`.
    pub fn finish(self) -> std::result::Result<JsValue, JsValue> {
        let message = self.written.ok_or_else(finished_early)?;
        let written = Outcome::new(to_js(&message, false), std::slice::from_ref(&message));
        Ok(outcome(
            &written.value,
            &written.dead,
            self.overridden.as_ref(),
        ))
    }
}

/// The key of the unique index `idempotency` (`[queue, idempotencyKey]`) that says whether
/// `to_queue` holds the idempotency key of `record` (`undefined` for a record without a key, or
/// none found): what a move's store reads before its step ([`UpdatePlan::key`],
/// `BulkPlan::keys`).
pub(crate) fn key_probe(to_queue: &str, record: &JsValue) -> JsValue {
    match get(record, "idempotencyKey").as_string() {
        Some(key) => keys::array(&[JsValue::from_str(to_queue), key.into()]).into(),
        None => JsValue::UNDEFINED,
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
        Ok(to_js(&js(self.args.found(message))?, false))
    }

    /// `Queue.delete`, inside the write: of the records found (`undefined`: none), the ids to
    /// delete. Throws `conflict` for a message that is not finished (a live message is never
    /// deleted from under its worker).
    pub fn deletable(&self, found: &Array) -> std::result::Result<Array, JsValue> {
        let ids = Array::new();
        for message in &js(read_all(found))? {
            if message.queue != self.args.queue {
                continue;
            }
            js(self.args.delete(message))?;
            ids.push(&number(message.id));
        }
        Ok(ids)
    }
}
