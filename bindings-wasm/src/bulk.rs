//! The bulk operations (internal): `Queue.replayAll`, `deleteAll`, `retryNowAll` (the core's
//! [`BulkArgs`], over the filters of `list`), `moveAll` ([`MoveAllArgs`]) and `Queue.purge`, in
//! the core's [`Batches`] over the `list` index of the IndexedDB store, each batch in its own
//! transaction; and a page of `Queue.list` ([`ListPlan`], the core's [`Scan`]).

use deadletter::engine::{Action, BulkArgs, Scan};
use deadletter::{Batches, Id, Millis, MoveAllArgs, PurgeArgs, Result};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::groups::Book;
use crate::plans::{context, key_probe, messages, read_all};
use crate::record::{from_record, number, stored, whole};
use crate::rules::js;
use crate::{keys, queue};

/// What the writes of a bulk operation do.
enum Bulk {
    /// `replayAll`, `deleteAll`, `retryNowAll`, at the instant the call started (the filter
    /// `delayed` of the selection is judged then; each write judges again at its own).
    Action(BulkArgs, Millis),
    /// `moveAll`, at the instant the call started (as for `Action`).
    Move(MoveAllArgs, Millis),
    Purge(PurgeArgs),
}

/// A bulk operation in [`Batches`]: while [`BulkPlan::next`] (then [`BulkPlan::record`]) names a
/// selection, the store reads the records of its ranges of the `list` index in id order, asking
/// [`BulkPlan::matches`] about each until it has as many as the selection has room for; then,
/// in one transaction, reads the records of the ids it kept and:
/// - for `replayAll` and `retryNowAll` ([`BulkPlan::writes`] true), reads the queue's row first,
///   hands everything to [`BulkPlan::step`] with the clock's time, and writes the [`Book`] it
///   answers with its groups' bookkeeping (a replayed message goes to its group's end);
/// - for `deleteAll` and `purge`, deletes the ids [`BulkPlan::deletable`] returns;
/// - for a dry run ([`BulkPlan::dry`]), does the same reads in a read-only transaction and the
///   same steps, and writes nothing: the size of the [`Book`], or the number of ids
///   [`BulkPlan::deletable`] returns, is how many the write would have touched (the core's
///   [`BulkArgs::touches`]);
///
/// [`BulkPlan::record`] closes the batch and names the next selection.
#[wasm_bindgen]
pub struct BulkPlan {
    bulk: Bulk,
    batches: Batches,
}

impl BulkPlan {
    pub(crate) fn action(args: BulkArgs, now: Millis) -> Self {
        let batches = Batches::new(args.limit);
        Self {
            bulk: Bulk::Action(args, now),
            batches,
        }
    }

    pub(crate) fn moving(args: MoveAllArgs, now: Millis) -> Self {
        let batches = Batches::new(args.bulk.limit);
        Self {
            bulk: Bulk::Move(args, now),
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
            Bulk::Action(a, now) => a.filter(*now),
            Bulk::Move(a, now) => a.bulk.filter(*now),
            Bulk::Purge(a) => a.filter(),
        }
    }

    /// The step of each record found that is still selected at the transaction's context, as
    /// a [`Book`] (none for `purge`, which deletes); `taken`, for `moveAll`, what index
    /// `idempotency` holds under each record's [`BulkPlan::keys`].
    fn steps(&self, clock: &JsValue, row: &JsValue, found: &Array, taken: &Array) -> Result<Book> {
        let queue = match &self.bulk {
            Bulk::Action(a, _) => &a.queue,
            Bulk::Move(a, _) => &a.bulk.queue,
            Bulk::Purge(_) => return Ok(Book::new("", 0, false)),
        };
        let ctx = context(queue, clock, row)?;
        let mut book = Book::new(queue, ctx.now, queue::expires(row));
        for (i, record) in found.iter().enumerate() {
            if record.is_undefined() {
                continue;
            }
            let before = stored(&record)?;
            let message = before.message.clone();
            let next = match &self.bulk {
                Bulk::Move(a, _) => {
                    let held = !taken
                        .get(u32::try_from(i).unwrap_or_default())
                        .is_undefined();
                    a.step(message, &ctx, held)?
                }
                Bulk::Action(a, _) => a.step(message, &ctx)?,
                Bulk::Purge(_) => None,
            };
            if let Some(next) = next {
                book.push(before, next);
            }
        }
        Ok(book)
    }
}

#[wasm_bindgen]
impl BulkPlan {
    /// The next selection, `[ranges, room]`: at most `room` ids of the queue's records with an
    /// id above the batch's, in the `list` index's `ranges` (one per status: [`keys::after`]);
    /// `undefined` when the operation is over.
    pub fn next(&self) -> Option<Array> {
        let (after, room) = self.batches.next()?;
        let filter = self.filter();
        let ranges = keys::after(filter.queue, filter.status, after);
        #[allow(clippy::cast_precision_loss)] // at most BATCH
        Some(keys::array(&[ranges, JsValue::from_f64(room as f64)]))
    }

    /// Whether the operation selects the message of `record`.
    pub fn matches(&self, record: &JsValue) -> std::result::Result<bool, JsValue> {
        let message = js(from_record(record))?;
        Ok(match &self.bulk {
            Bulk::Action(a, now) => a.selects(&message, *now),
            Bulk::Move(a, now) => a.bulk.selects(&message, *now),
            Bulk::Purge(a) => a.filter().matches(&message),
        })
    }

    /// Whether a batch writes messages (`replayAll`, `retryNowAll`, `moveAll`) rather than
    /// deletes them.
    #[wasm_bindgen(getter)]
    pub fn writes(&self) -> bool {
        match &self.bulk {
            Bulk::Action(a, _) => a.action != Action::Delete,
            Bulk::Move(..) => true,
            Bulk::Purge(_) => false,
        }
    }

    /// Whether it is a dry run: every batch is read-only and counts what it would write.
    #[wasm_bindgen(getter)]
    pub fn dry(&self) -> bool {
        match &self.bulk {
            Bulk::Action(a, _) => a.dry_run,
            Bulk::Move(a, _) => a.bulk.dry_run,
            Bulk::Purge(_) => false,
        }
    }

    /// For `moveAll`, the keys to look up in index `idempotency` for the records found (whether
    /// the target queue holds each one's idempotency key), before [`BulkPlan::step`]; none
    /// (an empty array) for the other operations.
    pub fn keys(&self, found: &Array) -> Array {
        match &self.bulk {
            Bulk::Move(a, _) => {
                let out = Array::new();
                for record in found.iter() {
                    out.push(&key_probe(&a.to_queue, &record));
                }
                out
            }
            _ => Array::new(),
        }
    }

    /// A batch of `replayAll`, `retryNowAll` or `moveAll`, inside its write: `clock` (what the
    /// clock returned once the queue's row was read), `row` (its record, or `undefined`), the
    /// records found under the selected ids (`undefined`: gone) and, for `moveAll`, what index
    /// `idempotency` holds under their [`BulkPlan::keys`] (a message whose key the target
    /// holds is skipped, not counted): the steps of the messages still selected, to write with
    /// their groups' bookkeeping.
    pub fn step(
        &self,
        clock: &JsValue,
        row: &JsValue,
        found: &Array,
        taken: &Array,
    ) -> std::result::Result<Book, JsValue> {
        js(self.steps(clock, row, found, taken))
    }

    /// `deleteAll` and `purge`, inside a batch's write: of the records found under the selected
    /// ids (`undefined`: gone), the ids to delete (those still selected; `deleteAll` selects
    /// finished messages, which no instant changes).
    pub fn deletable(&self, found: &Array) -> std::result::Result<Array, JsValue> {
        let out = Array::new();
        for message in js(read_all(found))? {
            let deletes = match &self.bulk {
                Bulk::Action(a, now) => a.deletes(&message, *now),
                Bulk::Move(..) => false,
                Bulk::Purge(a) => message.queue == a.queue && a.selects(&message),
            };
            if deletes {
                out.push(&number(message.id));
            }
        }
        Ok(out)
    }

    /// Closes a batch: the ids selected (ascending) and how many the write applied (or the dry
    /// run counted); then the next selection as [`BulkPlan::next`] gives it.
    pub fn record(&mut self, ids: &Array, applied: u32) -> Option<Array> {
        let mut selected: Vec<Id> = Vec::new();
        for id in ids.iter() {
            selected.extend(whole(&id));
        }
        let ids = selected;
        self.batches.record(&ids, applied.into());
        self.next()
    }

    /// How many messages were acted on (or, for a dry run, would have been).
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // a count, far below 2^53
        let done = self.batches.done() as f64;
        done
    }
}

/// `Queue.list` (the core's [`Scan`]): in one read transaction, while [`ListPlan::next`] (then
/// [`ListPlan::feed`]) names a page, the store reads it and hands its records to
/// [`ListPlan::feed`]; [`ListPlan::finish`] is the answer.
#[wasm_bindgen]
pub struct ListPlan {
    scan: Scan,
}

impl ListPlan {
    pub(crate) fn new(scan: Scan) -> Self {
        Self { scan }
    }
}

#[wasm_bindgen]
impl ListPlan {
    /// The next page to read, `[ranges, limit]`: at most `limit` records with an id above the
    /// page's, in the `list` index's `ranges` (one per status: [`keys::after`]). `undefined` when
    /// the scan is over.
    pub fn next(&self) -> Option<Array> {
        let query = self.scan.next()?;
        let ranges = keys::after(query.queue, query.status, query.after_id.unwrap_or(0));
        #[allow(clippy::cast_precision_loss)] // at most SCAN_BUDGET
        let limit = JsValue::from_f64(query.limit as f64);
        Some(keys::array(&[ranges, limit]))
    }

    /// The records of the page [`ListPlan::next`] named, in id order; then the next page to
    /// read, as [`ListPlan::next`] gives it.
    pub fn feed(&mut self, records: &Array) -> std::result::Result<Option<Array>, JsValue> {
        self.scan.feed(js(read_all(records))?);
        Ok(self.next())
    }

    /// The page: `[messages, nextAfterId]` (`nextAfterId` null when the queue holds no further
    /// match).
    pub fn finish(self) -> Array {
        let page = self.scan.finish();
        let next = page.next_after_id.map_or(JsValue::NULL, number);
        keys::array(&[messages(&page.messages), next])
    }
}
