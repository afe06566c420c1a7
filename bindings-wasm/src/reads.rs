//! The plans of the reads of the IndexedDB store that look at more than one message (internal):
//! a queue's statistics ([`StatsPlan`]; a page of `Queue.list` is [`crate::bulk::ListPlan`]).

use deadletter::storage::claim_order;
use deadletter::{Error, Id, Millis, Result, Stats, Status, machine};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::record::{from_record, whole};
use crate::rules::js;
use crate::{errors, keys, queue};

/// `Queue.stats`: in one read transaction, the store reads the queue's row, counts the ranges of
/// [`StatsPlan::ranges`], reads the first keys of two of them, and walks the claim lanes through
/// [`StatsPlan::timed`] and [`StatsPlan::ready`] for the first due message in claim order and
/// the leases that ran out.
#[wasm_bindgen]
pub struct StatsPlan {
    queue: String,
    now: Millis,
    /// The first due message in claim order so far: its place in it and its `created_at`.
    first_due: Option<(Id, Millis)>,
    /// The leases that ran out (the `processing` messages of the timed lane up to now).
    expired: u64,
}

impl StatsPlan {
    pub(crate) fn new(queue: String, now: Millis) -> Self {
        Self {
            queue,
            now,
            first_due: None,
            expired: 0,
        }
    }

    fn due(&mut self, record: &JsValue) -> Result<bool> {
        let message = from_record(record)?;
        self.expired += u64::from(message.status == Status::Processing);
        let due = machine::is_due(&message, self.now);
        let order = claim_order(&message);
        if due && self.first_due.is_none_or(|(first, _)| order < first) {
            self.first_due = Some((order, message.created_at));
        }
        Ok(due)
    }
}

#[wasm_bindgen]
impl StatsPlan {
    /// The ranges: `byStatus` (index `list`, one per status in lifecycle order), `delayed`
    /// (index `delayed`, whose first key is the next due instant),
    /// `dead` (index `dead`, whose first key is the oldest death), `timed` and `ready` (index
    /// `claim`).
    pub fn ranges(&self) -> Object {
        let (q, now) = (self.queue.as_str(), self.now);
        let by_status = Array::new();
        for status in Status::ALL {
            by_status.push(&keys::status(q, status));
        }
        let object = Object::new();
        for (name, range) in [
            ("byStatus", by_status.into()),
            ("delayed", keys::delayed(q, now)),
            ("dead", keys::dead(q)),
            ("timed", keys::timed(q, now)),
            ("ready", keys::ready(q)),
        ] {
            let _ = Reflect::set(&object, &name.into(), &range);
        }
        object
    }

    /// A record of the timed range (in any order): a `processing` one is a lease that ran out.
    pub fn timed(&mut self, record: &JsValue) -> std::result::Result<(), JsValue> {
        js(self.due(record)).map(drop)
    }

    /// A record of the ready lane, in claim order: true once the walk may stop (it found the
    /// lane's first due message; of the due ones in the timed lane, [`StatsPlan::timed`] kept
    /// the first in claim order, and the earlier of the two is the one a claim takes first).
    pub fn ready(&mut self, record: &JsValue) -> std::result::Result<bool, JsValue> {
        js(self.due(record))
    }

    /// The statistics, from `counts` (the counts of `byStatus`, then `delayed`),
    /// the first keys of `delayed` and `dead` (`undefined` when empty) and the queue's record in
    /// `queues` (`undefined`: none).
    pub fn finish(
        self,
        counts: &Array,
        first_delayed: &JsValue,
        first_dead: &JsValue,
        row: &JsValue,
    ) -> std::result::Result<JsValue, JsValue> {
        let row = js(queue::from_record(&self.queue, row))?;
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
            expired: self.expired,
            delayed: next()?,
            next_due_at: keys::part(first_delayed, 2),
            oldest_due_created_at: self.first_due.map(|(_, created_at)| created_at),
            oldest_dead_at: keys::part(first_dead, 2),
            ..deadletter::Counts::default()
        }
        .with_row(&row);
        Ok(queue::stats_to_js(&Stats::new(
            &self.queue,
            &counts,
            self.now,
        )))
    }
}

/// `Database.queues`: the statistics plan of queue `name` (a name the store found) at `now`,
/// the instant [`crate::rules::DatabaseRules::queues`] checked.
#[wasm_bindgen(js_name = statsPlan)]
pub fn stats_plan(name: String, now: f64) -> StatsPlan {
    #[allow(clippy::cast_possible_truncation)] // a checked instant, whole
    StatsPlan::new(name, now as Millis)
}
