//! A queue's row as a record of the IndexedDB object store `queues` (keyed by `name`: the
//! columns of the core's [`StoredQueue`], in the JavaScript names) and back through the core's
//! checks ([`StoredQueue::check`]: a value deadletter never writes is the same `store` error as in
//! every other store), and a queue's objects in the JavaScript API: its settings
//! (`QueueSettings`) and statistics (`QueueStats`).

use deadletter::storage::{StoredQueue, queue_row};
use deadletter::{
    Arg, Backoff, Millis, QueueRow, QueueSettings, Result, SettingsArgs, Stats, pause_step,
    row_write,
};
use js_sys::Object;
use wasm_bindgen::prelude::*;

use crate::args::OwnedArg;
use crate::record::{get, number};

// The object literals are js/store/record.js (see src/record.rs).
#[wasm_bindgen(module = "/js/store/record.js")]
extern "C" {
    #[wasm_bindgen(js_name = queueRecord)]
    #[allow(clippy::too_many_arguments)]
    fn queue_record(
        name: &str,
        backoff_initial_ms: &JsValue,
        backoff_multiplier: &JsValue,
        backoff_cap_ms: &JsValue,
        backoff_jitter: &JsValue,
        max_retries: &JsValue,
        lease_ms: &JsValue,
        expires_in_ms: &JsValue,
        on_expiry: &str,
        paused: bool,
        expired_dead: &JsValue,
        expired_discarded: &JsValue,
        expires: bool,
    ) -> Object;

    #[wasm_bindgen(js_name = policy)]
    fn policy_object(
        initial_ms: &JsValue,
        multiplier: f64,
        cap_ms: &JsValue,
        jitter: &JsValue,
    ) -> JsValue;

    #[wasm_bindgen(js_name = settings)]
    fn settings_object(
        backoff: &JsValue,
        max_retries: &JsValue,
        lease_ms: &JsValue,
        expires_in_ms: &JsValue,
        on_expiry: &str,
        paused: bool,
    ) -> JsValue;

    #[wasm_bindgen(js_name = stats)]
    #[allow(clippy::too_many_arguments)]
    fn stats_object(
        queue: &str,
        pending: &JsValue,
        processing: &JsValue,
        succeeded: &JsValue,
        dead: &JsValue,
        expired: &JsValue,
        delayed: &JsValue,
        next_due_at: &JsValue,
        oldest_due_age_ms: &JsValue,
        oldest_dead_age_ms: &JsValue,
        paused: bool,
        expired_dead: &JsValue,
        expired_discarded: &JsValue,
    ) -> JsValue;
}

fn opt(n: Option<i64>) -> JsValue {
    n.map_or(JsValue::NULL, number)
}

#[allow(clippy::cast_possible_wrap)] // counters far below 2^53
fn count(n: u64) -> JsValue {
    number(n as i64)
}

fn jitter(policy: &Backoff) -> JsValue {
    policy
        .jitter
        .as_str()
        .map_or(JsValue::NULL, JsValue::from_str)
}

/// The record of queue `name`'s `row`; `expires`: whether the queue may hold messages with an
/// expiry (see [`expires`]).
pub fn to_record(name: &str, row: &QueueRow, expires: bool) -> Object {
    let s = StoredQueue::new(name, row);
    queue_record(
        name,
        &opt(s.backoff_initial_ms),
        &s.backoff_multiplier
            .map_or(JsValue::NULL, JsValue::from_f64),
        &opt(s.backoff_cap_ms),
        &s.backoff_jitter.map_or(JsValue::NULL, JsValue::from_str),
        &opt(s.max_retries),
        &opt(s.lease_ms),
        &opt(s.expires_in_ms),
        s.on_expiry,
        s.paused,
        &number(s.expired_dead),
        &number(s.expired_discarded),
        expires,
    )
}

/// Whether a queue's record (`undefined`: none) says that the queue may hold messages with an
/// expiry (its `expires`, schema 8, issue 20): without it, none of its messages can expire, and a
/// claim does not read the index `expiring`. Every write that gives a queue its first message
/// with an expiry sets it ([`mark_expiring`]; the upgrade to schema 8 sets it on every queue that
/// held one); nothing clears it.
pub fn expires(record: &JsValue) -> bool {
    get(record, "expires").is_truthy()
}

/// Queue `name`'s record (`undefined`: none) with `expires` set, to write; `undefined` when it
/// is set already. Throws the `store` error of a corrupt record.
#[wasm_bindgen(js_name = markExpiring)]
pub fn mark_expiring(name: &str, record: &JsValue) -> std::result::Result<JsValue, JsValue> {
    if expires(record) {
        return Ok(JsValue::UNDEFINED);
    }
    let row = crate::rules::js(from_record(name, record))?;
    Ok(to_record(name, &row, true).into())
}

/// Whether queue `name`'s record (from `queues.getAll()`) lists the queue in `queues()` as a row
/// does in every other store ([`deadletter::Store::queues`]): only when it differs from the
/// defaults (a setting, the pause, an expiry counted). A record that holds the defaults and only
/// the [`expires`] mark is kept for the claim's sake, not listed, so a queue whose messages with an
/// expiry are gone and whose settings are back to the defaults is not listed, as in SQLite,
/// PostgreSQL and memory (session 6's new-user finding F5, left in IndexedDB; case expiry.json).
/// Throws the `store` error of a corrupt record.
#[wasm_bindgen(js_name = listsQueue)]
pub fn lists_queue(name: &str, record: &JsValue) -> std::result::Result<bool, JsValue> {
    Ok(crate::rules::js(from_record(name, record))? != QueueRow::default())
}

/// The keys of a queue's record, in the order of the core's
/// [`QUEUE_COLUMNS`](deadletter::storage::QUEUE_COLUMNS).
const KEYS: [&str; 11] = [
    "backoffInitialMs",
    "backoffMultiplier",
    "backoffCapMs",
    "backoffJitter",
    "maxRetries",
    "leaseMs",
    "expiresInMs",
    "onExpiry",
    "paused",
    "expiredDead",
    "expiredDiscarded",
];

/// The row of queue `name` from its record (`undefined`: it has none, [`QueueRow::default`]),
/// checked by the core ([`queue_row`]): a `store` error naming the queue and the column when it
/// holds a value deadletter never writes.
pub fn from_record(name: &str, record: &JsValue) -> Result<QueueRow> {
    if record.is_undefined() {
        return Ok(QueueRow::default());
    }
    // Element by element, not `array::map`: a copy of it per length costs the module (issue 20).
    let mut values = [const { OwnedArg::Null }; 11];
    for (value, key) in values.iter_mut().zip(KEYS) {
        *value = OwnedArg::from_js(&get(record, key));
    }
    let mut args = [const { Arg::Null }; 11];
    for (arg, value) in args.iter_mut().zip(&values) {
        *arg = value.arg();
    }
    queue_row(name, &args)
}

/// A backoff policy as the API gives it: `{ initialMs, multiplier, capMs, jitter }`.
pub fn policy_to_js(policy: &Backoff) -> JsValue {
    policy_object(
        &number(policy.initial_ms),
        policy.multiplier,
        &number(policy.cap_ms),
        &jitter(policy),
    )
}

/// `QueueSettings`: the stored values (null where unset) and whether the queue is paused.
pub fn settings_to_js(settings: &QueueSettings) -> JsValue {
    settings_object(
        &settings
            .backoff
            .as_ref()
            .map_or(JsValue::NULL, policy_to_js),
        &opt(settings.max_retries.map(i64::from)),
        &opt(settings.lease_ms),
        &opt(settings.expires_in_ms),
        settings.on_expiry.as_str(),
        settings.paused,
    )
}

/// `QueueStats`: counts as numbers, `nextDueAt` a `Date` or null, ages in milliseconds or null.
pub fn stats_to_js(stats: &Stats) -> JsValue {
    let age = |ms: Option<Millis>| opt(ms);
    stats_object(
        &stats.queue,
        &count(stats.pending),
        &count(stats.processing),
        &count(stats.succeeded),
        &count(stats.dead),
        &count(stats.expired),
        &count(stats.delayed),
        &opt(stats.next_due_at),
        &age(stats.oldest_due_age_ms),
        &age(stats.oldest_dead_age_ms),
        stats.paused,
        &count(stats.expired_dead),
        &count(stats.expired_discarded),
    )
}

/// `Queue.settings`: the settings of queue `name` from its record in `queues` (`undefined`: none,
/// all defaults). Throws a `store` `DeadLetterError` for a corrupt record.
#[wasm_bindgen(js_name = settingsOf)]
pub fn settings_of(name: &str, record: &JsValue) -> std::result::Result<JsValue, JsValue> {
    let row = crate::rules::js(from_record(name, record))?;
    Ok(settings_to_js(&row.settings))
}

/// What a write of a queue's row does.
enum RowChange {
    /// `Queue.setSettings`.
    Settings(SettingsArgs),
    /// `Queue.pause` (true) and `Queue.resume` (false).
    Pause(bool),
}

/// `Queue.setSettings`, `Queue.pause` and `Queue.resume`: inside one write transaction, the store
/// reads the queue's record in `queues` (and, for a name an enqueue refuses, whether the queue
/// holds a message: [`RowPlan::messages`]), hands them to [`RowPlan::step`] and writes what it
/// answers.
#[wasm_bindgen]
pub struct RowPlan {
    queue: String,
    change: RowChange,
    written: Option<QueueRow>,
}

impl RowPlan {
    pub(crate) fn settings(args: SettingsArgs) -> Self {
        Self {
            queue: args.queue.clone(),
            change: RowChange::Settings(args),
            written: None,
        }
    }

    pub(crate) fn pause(queue: String, paused: bool) -> Self {
        Self {
            queue,
            change: RowChange::Pause(paused),
            written: None,
        }
    }
}

#[wasm_bindgen]
impl RowPlan {
    /// The range of index `list` whose first key tells [`RowPlan::step`] whether the queue holds
    /// a message, read in the same transaction; `null` when the step does not ask (a name an
    /// enqueue accepts: the rare name it refuses pays the read, `deadletter::row_write`).
    pub fn messages(&self) -> JsValue {
        match deadletter::validate::new_queue_name(&Arg::Str(&self.queue)) {
            Ok(_) => JsValue::NULL,
            Err(_) => crate::keys::queue(&self.queue),
        }
    }

    /// The queue's record (`undefined`: none) and the first key of [`RowPlan::messages`]
    /// (`undefined`: none, or not read): the record to write, `undefined` when nothing changes (a
    /// queue never configured gets a record only when it differs from the defaults), or `null`:
    /// delete the record, which the write brought back to the defaults (not the core's
    /// `QueueRow::worth_storing`, the same comparison, linked in the module once: its size has a
    /// budget; new-user finding F5, session 6), unless it marks the queue as one whose messages
    /// may expire ([`expires`]), which is written with the defaults (and not listed:
    /// [`lists_queue`]). Throws the `validation_failed` error of a write that would create a
    /// queue under a name an enqueue refuses (`deadletter::row_write`, session 10).
    pub fn step(
        &mut self,
        record: &JsValue,
        message: &JsValue,
    ) -> std::result::Result<JsValue, JsValue> {
        let row = crate::rules::js(from_record(&self.queue, record))?;
        let next = match &self.change {
            RowChange::Settings(args) => args.step(row),
            RowChange::Pause(paused) => pause_step(row, *paused),
        };
        let holds_message = !message.is_undefined();
        let next = crate::rules::js(row_write(&self.queue, &row, next, holds_message))?;
        self.written = Some(next);
        let marked = expires(record);
        // A queue without a record reads as the defaults: unchanged, it gets none.
        Ok(if next == row {
            JsValue::UNDEFINED
        } else if !marked && next == QueueRow::default() {
            JsValue::NULL
        } else {
            to_record(&self.queue, &next, marked).into()
        })
    }

    /// Once committed: the settings.
    pub fn finish(self) -> JsValue {
        settings_to_js(&self.written.unwrap_or_default().settings)
    }
}
