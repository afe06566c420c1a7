//! `Queue.replayAll` and `Queue.purge` ([`BulkPlan`], internal): the core's [`Batches`] over the
//! `list` index of the IndexedDB store, each batch in its own write transaction.

use deadletter::engine::{Sift, sift};
use deadletter::{Batches, Error, Id, PurgeArgs, ReplayAllArgs};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::groups::Book;
use crate::plans::{context, read_all};
use crate::record::{from_record, number, stored, whole};
use crate::rules::js;
use crate::{errors, keys};

/// What the writes of a bulk operation do.
enum Bulk {
    Replay(ReplayAllArgs),
    Purge(PurgeArgs),
}

/// `Queue.replayAll` and `Queue.purge`, in [`Batches`]: while [`BulkPlan::next`] names a
/// selection, the store walks the keys of the `list` index in that range, asking
/// [`BulkPlan::sift`] about each (and [`BulkPlan::matches`] about the record when it says so),
/// then, in a write transaction, reads the records of the ids it kept and:
/// - for `replayAll`, reads the queue's row first, hands everything to [`BulkPlan::replay`] with
///   the clock's time, and writes the replays with their groups' bookkeeping (the [`Book`] it
///   answers: a replayed message goes to its group's end);
/// - for `purge`, deletes the ids [`BulkPlan::deletable`] returns;
///
/// [`BulkPlan::record`] closes the batch.
#[wasm_bindgen]
pub struct BulkPlan {
    bulk: Bulk,
    batches: Batches,
}

impl BulkPlan {
    pub(crate) fn replay_all(args: ReplayAllArgs) -> Self {
        let batches = Batches::new(args.limit);
        Self {
            bulk: Bulk::Replay(args),
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
            Bulk::Replay(a) => a.filter(),
            Bulk::Purge(a) => a.filter(),
        }
    }

    fn replays(&self, clock: &JsValue, row: &JsValue, found: &Array) -> deadletter::Result<Book> {
        let Bulk::Replay(args) = &self.bulk else {
            return Err(Error::Store("not a replay".into()));
        };
        let ctx = context(&args.queue, clock, row)?;
        let mut book = Book::new(&args.queue, ctx.now);
        for record in found.iter().filter(|r| !r.is_undefined()) {
            let before = stored(&record)?;
            if before.message.queue != args.queue {
                continue;
            }
            if let Some(next) = args.step(before.message.clone(), &ctx)? {
                book.push(before, next);
            }
        }
        Ok(book)
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
    pub fn sift(&self, key: &JsValue) -> Result<u8, JsValue> {
        let updated_at = keys::part(key, 3)
            .ok_or_else(|| errors::to_js(&Error::Store("a bad key in index list".into())))?;
        Ok(match sift(&self.filter(), updated_at) {
            Sift::Skip => 0,
            Sift::Take => 1,
            Sift::Load => 2,
        })
    }

    /// Whether the filter selects the message of `record`.
    pub fn matches(&self, record: &JsValue) -> Result<bool, JsValue> {
        Ok(self.filter().matches(&js(from_record(record))?))
    }

    /// `replayAll`, inside a batch's write: `clock` (what the clock returned once the queue's row
    /// was read), `row` (its record, or `undefined`) and the records found under the selected ids
    /// (`undefined`: gone): the replays of the messages the filter still selects, to write with
    /// their groups' bookkeeping.
    pub fn replay(&self, clock: &JsValue, row: &JsValue, found: &Array) -> Result<Book, JsValue> {
        js(self.replays(clock, row, found))
    }

    /// `purge`, inside a batch's write: of the records found under the selected ids
    /// (`undefined`: gone), the ids to delete.
    pub fn deletable(&self, found: &Array) -> Result<Array, JsValue> {
        let out = Array::new();
        if let Bulk::Purge(args) = &self.bulk {
            for message in js(read_all(found))? {
                if message.queue == args.queue && args.selects(&message) {
                    out.push(&number(message.id));
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
