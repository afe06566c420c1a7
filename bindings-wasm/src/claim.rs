//! `Queue.claim`, `Queue.claimMany` and `Queue.reap` ([`ClaimPlan`]): the core's
//! [`LaneClaim`] over the indexes of the IndexedDB store (`claim`, `expiring`, `group`), at the
//! context read inside the transaction, with the lease tokens JavaScript draws for it (random
//! version-4 UUIDs, `js/store/store.js`).

use deadletter::{Backoff, ClaimArgs, Error, Id, LaneClaim, Millis, QueueRow, Result, Write};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::plans::{context, count, messages, outcome};
use crate::record::{number, stored, to_js, to_ready_record, to_record};
use crate::rules::js;
use crate::{errors, keys, queue};

fn not_started() -> JsValue {
    errors::to_js(&Error::Store("the claim was not started".into()))
}

/// `Queue.claim`, `Queue.claimMany` and `Queue.reap`: a [`LaneClaim`] over the indexes. In one
/// write transaction the store reads, at once, the queue's row (first), the first key of
/// [`ClaimPlan::lanes`]' timed lane and [`ClaimPlan::wanted`] records from the head of its ready
/// lane; hands the row to [`ClaimPlan::start`] with the clock's time (false: the queue is paused,
/// nothing to do), reads the first key of the expiring range when [`ClaimPlan::expires`], and
/// hands the two first keys to [`ClaimPlan::due`], which names the pages to read up to now; then, writing every record it is given back (a number: delete that
/// id):
/// 1. the timed page through [`ClaimPlan::timed`] (and, when [`ClaimPlan::walking`], the rest of
///    that range one record at a time);
/// 2. the expiring page through [`ClaimPlan::expiring`] (and, when [`ClaimPlan::sweeping`], the
///    rest one record at a time), then the queue's row of [`ClaimPlan::row`] into `queues`;
/// 3. the first record of each range of [`ClaimPlan::left`] (index `group`) through
///    [`ClaimPlan::promote`];
/// 4. the head of the ready lane, read again when [`ClaimPlan::stale`], through
///    [`ClaimPlan::ready`] with as many fresh lease tokens, while [`ClaimPlan::wanted`] is not 0.
#[wasm_bindgen]
#[allow(clippy::struct_excessive_bools)] // independent answers to the store, each a getter
pub struct ClaimPlan {
    args: ClaimArgs,
    plan: Option<LaneClaim>,
    row: QueueRow,
    /// Whether the queue's record says it may hold messages with an expiry.
    expires: bool,
    overridden: Option<Backoff>,
    /// The group position of every record read (the store writes it back with the message).
    places: Vec<(Id, Option<Millis>)>,
    walking: bool,
    sweeping: bool,
    claiming: Claiming,
}

/// What a [`ClaimPlan`] resolves to.
#[derive(Clone, Copy)]
pub enum Claiming {
    /// The messages taken: one (`single`: the message or null) or an array.
    Messages {
        /// `Queue.claim`: the message itself, not an array of it.
        single: bool,
    },
    /// `Queue.reap`: how many leases were expired and messages taken out at their expiry.
    Reap,
}

impl ClaimPlan {
    /// The plan of the claim or the reap (`claiming`) `args`.
    pub(crate) fn new(args: ClaimArgs, claiming: Claiming) -> Self {
        Self {
            args,
            plan: None,
            row: QueueRow::default(),
            expires: false,
            overridden: None,
            places: Vec::new(),
            walking: false,
            sweeping: false,
            claiming,
        }
    }

    fn plan(&mut self) -> std::result::Result<&mut LaneClaim, JsValue> {
        self.plan.as_mut().ok_or_else(not_started)
    }

    /// The message of a record read, its place noted; with whether it is blocked.
    fn read(&mut self, record: &JsValue) -> Result<(deadletter::Message, bool)> {
        let s = stored(record)?;
        self.places.push((s.message.id, s.group_at));
        Ok((s.message, s.blocked))
    }

    fn place(&self, id: Id) -> Option<Millis> {
        self.places.iter().rev().find(|(i, _)| *i == id)?.1
    }

    /// The records (and ids to delete) of `writes`; every message a claim writes is its group's
    /// head or has left its group.
    fn records(&self, writes: Vec<Write>) -> Array {
        let out = Array::new();
        for write in writes {
            out.push(&match write {
                Write::Put(m) => to_record(&m, true, true, self.place(m.id)).into(),
                Write::Ready(m) => to_ready_record(&m, self.place(m.id)).into(),
                Write::Delete(m) => number(m.id),
            });
        }
        out
    }

    fn each(
        &mut self,
        page: &Array,
        mut step: impl FnMut(&mut LaneClaim, deadletter::Message) -> Result<Option<Write>>,
    ) -> std::result::Result<Vec<Write>, JsValue> {
        let mut writes = Vec::new();
        for record in page.iter() {
            let (message, _) = js(self.read(&record))?;
            writes.extend(js(step(self.plan()?, message))?);
        }
        Ok(writes)
    }

    fn now(&self) -> Millis {
        self.plan.as_ref().map_or(Millis::MIN, |p| p.args().now)
    }
}

#[wasm_bindgen]
impl ClaimPlan {
    /// `[timed, expiring, ready]`, before the time is known: the whole timed lane of the queue
    /// (index `claim`), its pending messages that expire (index `expiring`), its ready lane. They
    /// depend on the queue's name alone: the store keeps them per queue.
    pub fn lanes(&self) -> Array {
        let q = &self.args.queue;
        keys::array(&[
            keys::timed_lane(q),
            keys::expiring(q, f64::INFINITY),
            keys::ready(q),
        ])
    }

    /// How many records to read from the head of the ready lane now: 0 when nothing more.
    #[wasm_bindgen(getter)]
    pub fn wanted(&self) -> u32 {
        let wanted = self.plan.as_ref().map_or(self.args.n, LaneClaim::wanted);
        u32::try_from(wanted).unwrap_or(u32::MAX)
    }

    /// Inside the transaction: `clock` (what the clock returned once the queue's row was read)
    /// and `row` (its record in `queues`, or `undefined`): the claim as decided at that context;
    /// false when the queue is paused (a claim then changes nothing). Throws a clock out of range
    /// or a corrupt row.
    pub fn start(&mut self, clock: &JsValue, row: &JsValue) -> std::result::Result<bool, JsValue> {
        let ctx = js(context(&self.args.queue, clock, row))?;
        self.row = ctx.queue;
        self.expires = queue::expires(row);
        self.overridden = ctx.overridden(self.args.backoff.as_ref());
        self.plan = self.args.start(&ctx).map(LaneClaim::new);
        Ok(self.plan.is_some())
    }

    /// Whether the store reads the first key of the expiring range of [`ClaimPlan::lanes`], once
    /// [`ClaimPlan::start`]ed: only when the queue's record says it may hold messages with an
    /// expiry (`queue::expires`; issue 20: most queues have none, and the read was 5 to 7 % of
    /// an enqueue+claim+succeed cycle).
    #[wasm_bindgen(getter)]
    pub fn expires(&self) -> bool {
        self.expires
    }

    /// `[timed, expiring]`: the ranges to read a page of, up to now, given the first key of the
    /// timed lane and of the expiring range of [`ClaimPlan::lanes`] (`undefined`: empty, or not
    /// read); null for one whose first key is still to come (nothing in it is due or expired).
    pub fn due(&self, timed: &JsValue, expiring: &JsValue) -> Array {
        let now = self.now();
        let q = &self.args.queue;
        let come = |key: &JsValue| keys::part(key, 2).is_some_and(|at| at <= now);
        #[allow(clippy::cast_precision_loss)] // a checked instant
        let upto = now as f64;
        keys::array(&[
            if come(timed) {
                keys::timed(q, now)
            } else {
                JsValue::NULL
            },
            if come(expiring) {
                keys::expiring(q, upto)
            } else {
                JsValue::NULL
            },
        ])
    }

    /// How many records of the timed and expiring ranges to read at once.
    #[wasm_bindgen(getter, js_name = pageSize)]
    #[allow(clippy::cast_possible_truncation)] // a small constant
    pub fn page_size(&self) -> u32 {
        deadletter::engine::TIMED_PAGE as u32
    }

    /// Records of the timed range, in key order; returns the records to write.
    pub fn timed(&mut self, page: &Array) -> std::result::Result<Array, JsValue> {
        let mut writes = self.each(page, LaneClaim::timed)?;
        if !self.walking && page.length() as usize == deadletter::engine::TIMED_PAGE {
            self.walking = true;
            writes.extend(self.plan()?.overflow());
        }
        Ok(self.records(writes))
    }

    /// Whether the timed page was full: the store walks the rest of the timed range one record
    /// at a time through [`ClaimPlan::timed`].
    #[wasm_bindgen(getter)]
    pub fn walking(&self) -> bool {
        self.walking
    }

    /// Records of the expiring range, in key order; returns the records to write (numbers:
    /// the ids to delete).
    pub fn expiring(&mut self, page: &Array) -> std::result::Result<Array, JsValue> {
        let writes = self.each(page, LaneClaim::expiring)?;
        if !self.sweeping && page.length() as usize == deadletter::engine::TIMED_PAGE {
            self.sweeping = true;
        }
        Ok(self.records(writes))
    }

    /// Whether the expiring page was full: the store walks the rest of the expiring range one
    /// record at a time through [`ClaimPlan::expiring`].
    #[wasm_bindgen(getter)]
    pub fn sweeping(&self) -> bool {
        self.sweeping
    }

    /// The queue's record to write in `queues` (the messages taken out at their expiry counted),
    /// or `undefined` when none was.
    pub fn row(&self) -> JsValue {
        match &self.plan {
            Some(plan) if plan.swept() > 0 => {
                let swept = u64::try_from(plan.swept()).unwrap_or(u64::MAX);
                let row = self.row.count_expired(plan.args().on_expiry, swept);
                queue::to_record(&self.args.queue, &row, self.expires).into()
            }
            _ => JsValue::UNDEFINED,
        }
    }

    /// The ranges of index `group` whose first record to read: the groups a member left.
    pub fn left(&self) -> Array {
        let left = self.plan.as_ref().map_or(&[][..], LaneClaim::left);
        keys::groups(&self.args.queue, left)
    }

    /// The first record of each range of [`ClaimPlan::left`] (`undefined`: none); returns the
    /// records to write (each group's new head, unblocked).
    pub fn promote(&mut self, records: &Array) -> std::result::Result<Array, JsValue> {
        let mut writes = Vec::new();
        for record in records.iter() {
            let first = if record.is_undefined() {
                None
            } else {
                Some(js(self.read(&record))?)
            };
            let blocked = first.as_ref().is_some_and(|(_, blocked)| *blocked);
            writes.extend(self.plan()?.head(first.map(|(m, _)| m), blocked));
        }
        Ok(self.records(writes))
    }

    /// Whether a head of the ready lane read before the claim's writes must be read again.
    #[wasm_bindgen(getter)]
    pub fn stale(&self) -> bool {
        self.plan.as_ref().is_some_and(LaneClaim::stale)
    }

    /// Records of the head of the ready lane, in key order, and [`ClaimPlan::wanted`] fresh
    /// lease tokens (strings); returns the records to write.
    pub fn ready(&mut self, page: &Array, tokens: &Array) -> std::result::Result<Array, JsValue> {
        let mut found = Vec::new();
        for record in page.iter() {
            found.push(js(self.read(&record))?.0);
        }
        let mut tokens = tokens.iter();
        let plan = self.plan.as_mut().ok_or_else(not_started)?;
        let token = || {
            tokens
                .next()
                .and_then(|t| t.as_string())
                .unwrap_or_default()
        };
        let writes = js(plan.ready(found, token))?;
        Ok(self.records(writes))
    }

    /// Once committed: `{ value, dead, overridden }`, `value` the messages taken (for `claim`,
    /// the message or null; for `reap`, how many leases were expired and messages taken out at
    /// their expiry); nothing taken on a paused queue.
    pub fn finish(self) -> JsValue {
        let claimed = self.plan.map(LaneClaim::finish).unwrap_or_default();
        let value = match self.claiming {
            Claiming::Reap => count(claimed.reaped()),
            Claiming::Messages { single: true } => claimed
                .taken
                .first()
                .map_or(JsValue::NULL, |m| to_js(m, false)),
            Claiming::Messages { single: false } => messages(&claimed.taken),
        };
        outcome(&value, &claimed.dead(), self.overridden.as_ref())
    }
}
