//! The ordering-group bookkeeping of the writes of one transaction ([`Book`]: an update, a batch
//! of replays), as the core plans it ([`deadletter::engine::groups`]): a message entering its
//! group (a replay) goes behind the group's tail, which the store reads before it writes; one
//! leaving it (it succeeded, died) makes the store read the group's first live member after it
//! wrote, which is unblocked when it is the head now ([`next_head`]); one moving to another queue
//! (`move`) does both: it leaves its group in the book's queue and goes behind the tail of the
//! group of the same name in its new queue. The plans of updates and
//! replays hand one to JavaScript (`js/store/store.js`'s `place`), which reads what it names and
//! writes what it answers.

use deadletter::engine::groups::{Change, change};
use deadletter::storage::next_head;
use deadletter::{Message, Millis, Result, Tails};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::keys;
use crate::record::{Stored, stored, to_record};
use crate::rules::js;

/// The writes of one transaction on one queue, each a step's result over the message as stored
/// (internal: see the module).
#[wasm_bindgen]
pub struct Book {
    queue: String,
    now: Millis,
    writes: Vec<(Stored, Message)>,
    /// The groups a write left.
    left: Vec<String>,
    /// Whether `queue`'s record says it may hold messages with an expiry (read with it).
    expires: bool,
}

impl Book {
    /// No write yet, on `queue` at `now` (the transaction's instant); `expires`: whether the
    /// queue's record, when the store read it, says it may hold messages with an expiry.
    pub fn new(queue: &str, now: Millis, expires: bool) -> Self {
        Self {
            queue: queue.to_owned(),
            now,
            writes: Vec::new(),
            left: Vec::new(),
            expires,
        }
    }

    /// `after` (a step's result) is to be written over `before`.
    pub fn push(&mut self, before: Stored, after: Message) {
        self.writes.push((before, after));
    }

    /// The groups the writes put a message into, each once, with the queue it is in then (the
    /// book's, or for a move the target: one book moves to one queue).
    fn entered(&self) -> Vec<(&str, &str)> {
        let mut groups: Vec<(&str, &str)> = Vec::new();
        for (before, after) in &self.writes {
            if let (Change::Enters | Change::Moves, Some(group)) =
                (change(&before.message, Some(after)), &after.group)
                && !groups.iter().any(|(_, g)| g == group)
            {
                groups.push((&after.queue, group));
            }
        }
        groups
    }

    fn place_all(&mut self, tail_keys: &Array) -> Result<Array> {
        let mut tails = Tails::new();
        for ((_, group), key) in self.entered().into_iter().zip(tail_keys.iter()) {
            tails.read(group, keys::position(&key));
        }
        let out = Array::new();
        for (before, after) in &self.writes {
            let record = match (change(&before.message, Some(after)), &after.group) {
                (change @ (Change::Enters | Change::Moves), Some(group)) => {
                    // A move leaves the group in this queue too.
                    if change == Change::Moves && !self.left.contains(group) {
                        self.left.push(group.clone());
                    }
                    let (at, head) = tails.enter(group, self.now, Some(after.id))?;
                    to_record(after, true, head, Some(at))
                }
                (Change::Leaves, Some(group)) => {
                    if !self.left.contains(group) {
                        self.left.push(group.clone());
                    }
                    to_record(after, true, true, None)
                }
                _ => to_record(after, true, !before.blocked, before.group_at),
            };
            out.push(&record);
        }
        Ok(out)
    }
}

#[wasm_bindgen]
impl Book {
    /// How many writes.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.writes.len()).unwrap_or(u32::MAX)
    }

    /// The queues whose record the store must mark as holding messages with an expiry
    /// (`markExpiring`, src/queue.rs) with the writes: those a write puts a message with an expiry
    /// into that it did not have there before (a replay's new expiry, a move to another queue),
    /// but the book's own queue when its record, read, says so already. A message that had its
    /// expiry in its queue before finds the mark there: an ack reads no record.
    pub fn marks(&self) -> Array {
        let mut queues: Vec<&String> = Vec::new();
        for (before, after) in &self.writes {
            let had = before.message.expires_at.is_some() && before.message.queue == after.queue;
            let known = self.expires && after.queue == self.queue;
            if after.expires_at.is_some() && !had && !known && !queues.contains(&&after.queue) {
                queues.push(&after.queue);
            }
        }
        let out = Array::new();
        for queue in queues {
            out.push(&JsValue::from_str(queue));
        }
        out
    }

    /// The ranges of index `group` whose last key (the group's tail) the store reads before it
    /// writes, for [`Book::place`].
    pub fn tails(&self) -> Array {
        let out = Array::new();
        for (queue, group) in self.entered() {
            out.push(&keys::group(queue, group));
        }
        out
    }

    /// The records to write, in order, given the last key of each range of [`Book::tails`]
    /// (`undefined`: the group has no live member).
    pub fn place(&mut self, tails: &Array) -> std::result::Result<Array, JsValue> {
        js(self.place_all(tails))
    }

    /// The ranges of index `group` whose first record (the group's first live member) the store
    /// reads once it wrote, for [`Book::promote`]: the groups a write left.
    pub fn left(&self) -> Array {
        keys::groups(&self.queue, &self.left)
    }

    /// The records to write, given the first record of each range of [`Book::left`]
    /// (`undefined`: none): each group's first live member, unblocked when it is the head now.
    pub fn promote(&self, records: &Array) -> std::result::Result<Array, JsValue> {
        let out = Array::new();
        for record in records.iter().filter(|r| !r.is_undefined()) {
            let first = js(stored(&record))?;
            if next_head(Some(&first.message), first.blocked).is_some() {
                out.push(&to_record(&first.message, true, true, first.group_at).into());
            }
        }
        Ok(out)
    }
}
