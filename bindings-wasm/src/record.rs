//! Messages as IndexedDB records and as the plain objects the JavaScript API returns, and queue
//! statistics as plain objects.
//!
//! Both message forms use the JavaScript field names (`retryCount`, `leaseExpiresAt`, ...). A
//! record keeps timestamps as numbers of milliseconds (null stays null, which keeps a message out
//! of the indexes that name that field); the API object turns them into `Date`s. A record also
//! has `lane` and `at`, its place in the claim index (the core's [`Lane`], see [`to_record`]),
//! which reading ignores, and never `deduplicated` (a property of an enqueue's result, not of
//! the message). A record read back goes through the core's checks ([`StoredMessage::check`]):
//! a value deadletter never writes is the same `store` error as in every other store.

use deadletter::storage::{Lane, StoredMessage, corrupt, upgrade_v1};
use deadletter::{Error, FailedAttempt, Id, Message, Millis, Result, Stats, Status};
use js_sys::{Array, Date, Object};
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `Reflect.get` on a plain object (a record, an entry of its history, an index key), which
    /// cannot throw: js-sys's catching binding costs a closure and an `arguments` object per call,
    /// on the path of every record read inside a transaction.
    #[wasm_bindgen(js_namespace = Reflect, js_name = get)]
    fn property(target: &JsValue, key: &JsValue) -> JsValue;
    /// `Reflect.set` on a plain object this module made, which cannot throw (see [`property`]).
    #[wasm_bindgen(js_namespace = Reflect, js_name = set)]
    fn define(target: &Object, key: &JsValue, value: &JsValue) -> bool;
}

/// `key` of a plain object (undefined when absent, or when `target` is no object).
pub fn get(target: &JsValue, key: &str) -> JsValue {
    if target.is_object() {
        with_key(key, |k| property(target, k))
    } else {
        JsValue::UNDEFINED
    }
}

/// Every property name this module reads or writes, with the core's name of the field (what a
/// corrupt-record error names).
const KEYS: [(&str, &str); 33] = [
    ("id", "id"),
    ("queue", "queue"),
    ("payload", "payload"),
    ("status", "status"),
    ("retryCount", "retry_count"),
    ("maxRetries", "max_retries"),
    ("retryAfter", "retry_after"),
    ("lastError", "last_error"),
    ("createdAt", "created_at"),
    ("updatedAt", "updated_at"),
    ("leaseToken", "lease_token"),
    ("leaseExpiresAt", "lease_expires_at"),
    ("idempotencyKey", "idempotency_key"),
    ("firstFailedAt", "first_failed_at"),
    ("deadAt", "dead_at"),
    ("errors", "errors"),
    ("errorsDropped", "errors_dropped"),
    ("replayCount", "replay_count"),
    ("replayedAt", "replayed_at"),
    ("lane", "lane"),
    ("at", "at"),
    ("deduplicated", "deduplicated"),
    ("attempt", "attempt"),
    ("error", "error"),
    ("pending", "pending"),
    ("processing", "processing"),
    ("succeeded", "succeeded"),
    ("dead", "dead"),
    ("expired", "expired"),
    ("delayed", "delayed"),
    ("nextDueAt", "next_due_at"),
    ("oldestDueAgeMs", "oldest_due_age_ms"),
    ("oldestDeadAgeMs", "oldest_dead_age_ms"),
];

thread_local! {
    /// [`KEYS`] as JavaScript strings, made once: a record has about twenty properties, and
    /// making each name anew for every property of every record costs a string conversion each.
    static JS_KEYS: Vec<JsValue> = KEYS.iter().map(|(k, _)| JsValue::from_str(k)).collect();
    /// The status names as JavaScript strings, made once (every record and message has one).
    static STATUSES: Vec<JsValue> = Status::ALL.iter().map(|s| JsValue::from_str(s.as_str())).collect();
}

/// `status` as a JavaScript string.
fn status(status: Status) -> JsValue {
    let at = Status::ALL
        .iter()
        .position(|s| *s == status)
        .unwrap_or_default();
    STATUSES.with(|all| all[at].clone())
}

/// Runs `f` with `key` as a JavaScript string (cached when it is one of [`KEYS`]).
fn with_key<T>(key: &str, f: impl FnOnce(&JsValue) -> T) -> T {
    match KEYS.iter().position(|(k, _)| *k == key) {
        Some(at) => JS_KEYS.with(|keys| f(&keys[at])),
        None => f(&JsValue::from_str(key)),
    }
}

/// The core's name of a record's property.
fn core_name(key: &str) -> &str {
    KEYS.iter()
        .find(|(k, _)| *k == key)
        .map_or(key, |(_, core)| core)
}

fn set(object: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    with_key(key, |key| define(object, key, value));
}

fn opt_str(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from_str)
}

/// A whole number as a JavaScript number (ids, counts and timestamps are far below 2^53).
#[allow(clippy::cast_precision_loss)]
pub fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

#[allow(clippy::cast_precision_loss)]
fn date(ms: Millis) -> JsValue {
    Date::new(&JsValue::from_f64(ms as f64)).into()
}

// The object literals are js/store/record.js (wasm-bindgen copies it into the package's snippets/).
#[wasm_bindgen(module = "/js/store/record.js")]
extern "C" {
    /// A record without `id` (`kind` 0), a record (1) or the API's message object (2).
    #[allow(clippy::too_many_arguments)]
    fn shape(
        kind: u32,
        id: &JsValue,
        queue: &str,
        payload: &str,
        status: &JsValue,
        retry_count: u32,
        max_retries: u32,
        retry_after: &JsValue,
        last_error: &JsValue,
        created_at: &JsValue,
        updated_at: &JsValue,
        lease_token: &JsValue,
        lease_expires_at: &JsValue,
        idempotency_key: &JsValue,
        first_failed_at: &JsValue,
        dead_at: &JsValue,
        errors: &JsValue,
        errors_dropped: u32,
        replay_count: u32,
        replayed_at: &JsValue,
        lane: &JsValue,
        at: &JsValue,
        deduplicated: bool,
    ) -> Object;

    /// One entry of a failure history (for `kind` 2, `at` becomes a `Date`).
    fn attempt(kind: u32, attempt: u32, error: &str, at: f64) -> JsValue;
}

/// Which object [`build`] makes.
#[derive(Clone, Copy)]
enum Kind {
    /// A record of a new message: no `id` (the store's key generator assigns it).
    New = 0,
    /// A stored record.
    Record = 1,
    /// The API's object: `Date`s, `deduplicated`, no `lane` nor `at`.
    Api = 2,
}

/// Instants go as numbers of milliseconds; `shape` makes `Date`s of them for the API's object.
fn build(message: &Message, kind: Kind, lane: &JsValue, at: &JsValue) -> Object {
    let time = number;
    let opt_time = |t: Option<Millis>| t.map_or(JsValue::NULL, time);
    #[allow(clippy::cast_precision_loss)] // instants are far below 2^53
    let errors: Array = message
        .errors
        .iter()
        .map(|entry| attempt(kind as u32, entry.attempt, &entry.error, entry.at as f64))
        .collect();
    shape(
        kind as u32,
        &number(message.id),
        &message.queue,
        &message.payload,
        &status(message.status),
        message.retry_count,
        message.max_retries,
        &opt_time(message.retry_after),
        &opt_str(message.last_error.as_deref()),
        &time(message.created_at),
        &time(message.updated_at),
        &opt_str(message.lease_token.as_deref()),
        &opt_time(message.lease_expires_at),
        &opt_str(message.idempotency_key.as_deref()),
        &opt_time(message.first_failed_at),
        &opt_time(message.dead_at),
        &errors,
        message.errors_dropped,
        message.replay_count,
        &opt_time(message.replayed_at),
        lane,
        at,
        message.deduplicated,
    )
}

/// `lane` of a record whose turn comes at a time, `at`: [`Lane::Waiting`] (a `pending` message
/// in backoff or delayed, until its `retryAfter`) and [`Lane::Leased`] (a `processing` one, until
/// its lease runs out). The claim index sorts them by `(at, id)`, so its part with `at <= now`
/// is what a claim acts on first.
pub const TIMED: f64 = 0.0;
/// `lane` of a [`Lane::Ready`] message, and of one a claim moved there once its `retryAfter` had
/// passed: `at` is its `createdAt`, so the lane is in claim order, `(createdAt, id)`.
pub const READY: f64 = 1.0;

/// The record stored for `message`; without `id` for a new message (the store assigns it). Its
/// `lane` and `at` place it in the claim index as the core's [`Lane::of`] says: [`TIMED`] with
/// `retryAfter` (waiting) or `leaseExpiresAt` (leased), [`READY`] with `createdAt`; null for a
/// finished message, which keeps it out of the index.
pub fn to_record(message: &Message, with_id: bool) -> Object {
    let kind = if with_id { Kind::Record } else { Kind::New };
    // No ordering groups in this store yet (issue 21's JavaScript side): every message is its
    // own head, and none is blocked.
    match Lane::of(message, true) {
        Some(Lane::Ready) => build(message, kind, &READY.into(), &number(message.created_at)),
        Some(Lane::Waiting(at) | Lane::Leased(at)) => {
            build(message, kind, &TIMED.into(), &number(at))
        }
        Some(Lane::Blocked) | None => build(message, kind, &JsValue::NULL, &JsValue::NULL),
    }
}

/// The record of `message`, unchanged, in the [`READY`] lane: a claim moves a waiting message
/// there once its `retryAfter` has passed (it keeps its `retryAfter` until it is claimed).
pub fn to_ready_record(message: &Message) -> Object {
    build(
        message,
        Kind::Record,
        &READY.into(),
        &number(message.created_at),
    )
}

/// The object the JavaScript API returns: timestamps (also each error's `at`) as `Date`s, and
/// `deduplicated`.
pub fn to_js(message: &Message) -> JsValue {
    build(message, Kind::Api, &JsValue::UNDEFINED, &JsValue::UNDEFINED).into()
}

/// Queue statistics as the plain object the JavaScript API returns: counts as numbers,
/// `nextDueAt` a `Date` or null, ages in milliseconds or null.
pub fn stats_to_js(stats: &Stats) -> JsValue {
    #[allow(clippy::cast_precision_loss)] // counts are far below 2^53
    let count = |n: u64| JsValue::from_f64(n as f64);
    let object = Object::new();
    set(&object, "queue", &stats.queue.as_str().into());
    set(&object, "pending", &count(stats.pending));
    set(&object, "processing", &count(stats.processing));
    set(&object, "succeeded", &count(stats.succeeded));
    set(&object, "dead", &count(stats.dead));
    set(&object, "expired", &count(stats.expired));
    set(&object, "delayed", &count(stats.delayed));
    set(
        &object,
        "nextDueAt",
        &stats.next_due_at.map_or(JsValue::NULL, date),
    );
    let age = |ms: Option<Millis>| ms.map_or(JsValue::NULL, number);
    set(&object, "oldestDueAgeMs", &age(stats.oldest_due_age_ms));
    set(&object, "oldestDeadAgeMs", &age(stats.oldest_dead_age_ms));
    object.into()
}

/// A whole number within ±2^53 (the cast is then exact).
pub fn whole(value: &JsValue) -> Option<i64> {
    match value.as_f64() {
        #[allow(clippy::cast_possible_truncation)]
        Some(n) if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Some(n as i64),
        _ => None,
    }
}

/// How a record's value is named in a corrupt-record error.
fn kind(value: &JsValue) -> String {
    if value.is_undefined() {
        "nothing".into()
    } else if let Some(n) = whole(value) {
        // Formatted as an integer: no float formatting code in the module.
        format!("the number {n}")
    } else if value.as_f64().is_some() {
        "a number that is not a whole one within 2^53".into()
    } else if value.is_string() {
        "a string".into()
    } else {
        crate::args::kind(value).into()
    }
}

/// The properties of one stored record, read with the store's own checks (a value of the wrong
/// type, or a missing one, is [`corrupt`] naming the message and the field). `lenient`: a field
/// that is absent takes its default (a record of schema version 1 or 2, before the fields of 3).
struct Reader<'r> {
    record: &'r JsValue,
    id: Id,
    lenient: bool,
}

impl Reader<'_> {
    fn fault(&self, key: &str, why: impl std::fmt::Display) -> Error {
        corrupt(self.id, core_name(key), why)
    }

    /// The value of `key`; `None` for null (and, when lenient, for absent).
    fn value(&self, key: &str) -> Option<JsValue> {
        let value = get(self.record, key);
        if value.is_null() || (self.lenient && value.is_undefined()) {
            None
        } else {
            Some(value)
        }
    }

    fn required<T>(&self, key: &str, found: Option<T>) -> Result<T> {
        found.ok_or_else(|| self.fault(key, "is null"))
    }

    fn text(&self, key: &str) -> Result<Option<String>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| self.fault(key, format_args!("holds {}, not a string", kind(&v)))),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => whole(&v).map(Some).ok_or_else(|| {
                self.fault(key, format_args!("holds {}, not a whole number", kind(&v)))
            }),
        }
    }

    fn history(&self) -> Result<Vec<FailedAttempt>> {
        let Some(value) = self.value("errors") else {
            return if self.lenient {
                Ok(Vec::new())
            } else {
                Err(self.fault("errors", "is null"))
            };
        };
        if !Array::is_array(&value) {
            return Err(self.fault("errors", format_args!("holds {}, not a list", kind(&value))));
        }
        let entry_of = |entry: JsValue| {
            let at = Reader {
                record: &entry,
                id: self.id,
                lenient: false,
            };
            let (attempt, error, when) = (at.int("attempt")?, at.text("error")?, at.int("at")?);
            match (attempt.and_then(|a| u32::try_from(a).ok()), error, when) {
                (Some(attempt), Some(error), Some(at)) => Ok(FailedAttempt { attempt, error, at }),
                _ => Err(self.fault("errors", "holds an entry without attempt, error and at")),
            }
        };
        value
            .unchecked_ref::<Array>()
            .iter()
            .map(|entry| entry_of(entry).map_err(|_| self.fault("errors", "holds a bad entry")))
            .collect()
    }

    fn read(&self) -> Result<Message> {
        let text = |key| self.required(key, self.text(key)?);
        let int = |key| self.required(key, self.int(key)?);
        let counted = |key| match self.int(key)? {
            None if self.lenient => Ok(0),
            found => self.required(key, found),
        };
        let status = text("status")?;
        StoredMessage {
            id: self.id,
            queue: text("queue")?,
            payload: text("payload")?,
            status: &status,
            retry_count: int("retryCount")?,
            max_retries: int("maxRetries")?,
            retry_after: self.int("retryAfter")?,
            last_error: self.text("lastError")?,
            created_at: int("createdAt")?,
            updated_at: int("updatedAt")?,
            lease_token: self.text("leaseToken")?,
            lease_expires_at: self.int("leaseExpiresAt")?,
            idempotency_key: self.text("idempotencyKey")?,
            first_failed_at: self.int("firstFailedAt")?,
            dead_at: self.int("deadAt")?,
            errors: self.history()?,
            errors_dropped: counted("errorsDropped")?,
            replay_count: counted("replayCount")?,
            replayed_at: self.int("replayedAt")?,
            group: None,
            expires_at: None,
        }
        .check()
    }
}

fn record_id(record: &JsValue) -> Result<Id> {
    let id = get(record, "id");
    whole(&id).ok_or_else(|| Error::Store("an IndexedDB record without a whole-number id".into()))
}

/// Reads a stored record back; a `store` error naming the message and the field when it holds a
/// value this binding never writes (a timestamp outside the range, a wrong type, a missing
/// field, an unknown status): see [`StoredMessage::check`].
pub fn from_record(record: &JsValue) -> Result<Message> {
    let id = record_id(record)?;
    Reader {
        record,
        id,
        lenient: false,
    }
    .read()
}

/// The record of schema version 4 for a record written by schema version `from` (1, 2 or 3), for
/// the upgrade transaction: one of 1 or 2 (deadletter 0.1.0) is read with the fields of 3 at
/// their defaults and given what 0.1.0 knew ([`upgrade_v1`]); every record is then written as
/// this version writes it, so it gets its place in the new indexes.
pub fn upgrade_record(record: &JsValue, from: u32) -> Result<Object> {
    let id = record_id(record)?;
    let old = from < 3;
    let message = Reader {
        record,
        id,
        lenient: old,
    }
    .read()?;
    let message = if old { upgrade_v1(message) } else { message };
    Ok(to_record(&message, true))
}
