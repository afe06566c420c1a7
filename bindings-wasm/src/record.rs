//! Messages as IndexedDB records and as the plain objects the JavaScript API returns, and queue
//! statistics as plain objects.
//!
//! Both message forms use the JavaScript field names (`retryCount`, `leaseExpiresAt`, ...). A
//! record keeps timestamps as numbers of milliseconds (null stays null, which keeps a message out
//! of the indexes that name that field); the API object turns them into `Date`s. A record also
//! has `lane` and `at`, its place in the claim index (see [`to_record`]), which reading ignores,
//! and never `deduplicated` (a property of an enqueue's result, not of the message).

use deadletter::validate::{MAX_TIME, MIN_TIME};
use deadletter::{Error, FailedAttempt, Message, Millis, Result, Stats, Status};
use js_sys::{Array, Date, Object, Reflect};
use wasm_bindgen::JsValue;

/// Every property name this module reads or writes.
const KEYS: [&str; 34] = [
    "id",
    "queue",
    "payload",
    "status",
    "retryCount",
    "maxRetries",
    "retryAfter",
    "lastError",
    "createdAt",
    "updatedAt",
    "leaseToken",
    "leaseExpiresAt",
    "idempotencyKey",
    "firstFailedAt",
    "deadAt",
    "errors",
    "errorsDropped",
    "replayCount",
    "replayedAt",
    "lane",
    "at",
    "deduplicated",
    "attempt",
    "error",
    "at",
    "pending",
    "processing",
    "succeeded",
    "dead",
    "expired",
    "delayed",
    "nextDueAt",
    "oldestDueAgeMs",
    "oldestDeadAgeMs",
];

thread_local! {
    /// [`KEYS`] as JavaScript strings, made once: a record has about twenty properties, and
    /// making each name anew for every property of every record costs a string conversion each.
    static JS_KEYS: Vec<JsValue> = KEYS.iter().map(|k| JsValue::from_str(k)).collect();
}

/// Runs `f` with `key` as a JavaScript string (cached when it is one of [`KEYS`]).
fn with_key<T>(key: &str, f: impl FnOnce(&JsValue) -> T) -> T {
    match KEYS.iter().position(|k| *k == key) {
        Some(at) => JS_KEYS.with(|keys| f(&keys[at])),
        None => f(&JsValue::from_str(key)),
    }
}

fn set(object: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    let _ = with_key(key, |key| Reflect::set(object, key, value));
}

fn opt_str(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from_str)
}

#[allow(clippy::cast_precision_loss)] // ids and millisecond timestamps are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

#[allow(clippy::cast_precision_loss)]
fn date(ms: Millis) -> JsValue {
    Date::new(&JsValue::from_f64(ms as f64)).into()
}

fn build(message: &Message, with_id: bool, time: impl Fn(Millis) -> JsValue) -> Object {
    let object = Object::new();
    let opt_time = |t: Option<Millis>| t.map_or(JsValue::NULL, &time);
    if with_id {
        set(&object, "id", &number(message.id));
    }
    let status = message.status.as_str();
    let errors: Array = message
        .errors
        .iter()
        .map(|entry| {
            let attempt = Object::new();
            set(&attempt, "attempt", &entry.attempt.into());
            set(&attempt, "error", &entry.error.as_str().into());
            set(&attempt, "at", &time(entry.at));
            JsValue::from(attempt)
        })
        .collect();
    let fields: [(&str, JsValue); 18] = [
        ("queue", message.queue.as_str().into()),
        ("payload", message.payload.as_str().into()),
        ("status", status.into()),
        ("retryCount", message.retry_count.into()),
        ("maxRetries", message.max_retries.into()),
        ("retryAfter", opt_time(message.retry_after)),
        ("lastError", opt_str(message.last_error.as_deref())),
        ("createdAt", time(message.created_at)),
        ("updatedAt", time(message.updated_at)),
        ("leaseToken", opt_str(message.lease_token.as_deref())),
        ("leaseExpiresAt", opt_time(message.lease_expires_at)),
        (
            "idempotencyKey",
            opt_str(message.idempotency_key.as_deref()),
        ),
        ("firstFailedAt", opt_time(message.first_failed_at)),
        ("deadAt", opt_time(message.dead_at)),
        ("errors", errors.into()),
        ("errorsDropped", message.errors_dropped.into()),
        ("replayCount", message.replay_count.into()),
        ("replayedAt", opt_time(message.replayed_at)),
    ];
    for (key, value) in &fields {
        set(&object, key, value);
    }
    object
}

/// `lane` of a record in the claim index whose turn comes at a time, `at`: a `processing` message
/// (`at`: when its lease runs out) or a `pending` one waiting for its backoff or delay (`at`: its
/// `retryAfter`). The claim index sorts them by `(at, id)`, so the part with `at <= now` is what
/// a claim has to act on first: leases to expire, messages that became due.
pub const TIMED: f64 = 0.0;
/// `lane` of a `pending` message that is due whatever the time: enqueued without delay, replayed,
/// or moved here by a claim once its `retryAfter` had passed ([`make_ready`]). `at` is its
/// `createdAt`, so the lane is in claim order, `(createdAt, id)`.
pub const READY: f64 = 1.0;

/// The record stored for `message`; without `id` for a new message (the store assigns it). It
/// also holds `lane` and `at`, storage-only numbers that place it in the claim index: [`TIMED`]
/// with `leaseExpiresAt` for a `processing` message and with `retryAfter` for a `pending` one that
/// has one, [`READY`] with `createdAt` for a `pending` one without; null for a finished message,
/// which keeps it out of the index.
pub fn to_record(message: &Message, with_id: bool) -> Object {
    let record = build(message, with_id, number);
    let (lane, at) = match (message.status, message.retry_after) {
        (Status::Pending, Some(at)) => (JsValue::from_f64(TIMED), number(at)),
        (Status::Pending, None) => (JsValue::from_f64(READY), number(message.created_at)),
        (Status::Processing, _) => match message.lease_expires_at {
            Some(at) => (JsValue::from_f64(TIMED), number(at)),
            None => (JsValue::NULL, JsValue::NULL),
        },
        (Status::Succeeded | Status::Dead, _) => (JsValue::NULL, JsValue::NULL),
    };
    set(&record, "lane", &lane);
    set(&record, "at", &at);
    record
}

/// Moves a stored `pending` record whose `retryAfter` has passed to the [`READY`] lane, in place
/// (the message itself does not change: it keeps its `retryAfter` until it is claimed).
pub fn make_ready(record: &JsValue) -> Result<()> {
    let created_at = field(record, "createdAt")?;
    for (name, value) in [("lane", JsValue::from_f64(READY)), ("at", created_at)] {
        with_key(name, |key| Reflect::set(record, key, &value)).map_err(|e| corrupt(name, &e))?;
    }
    Ok(())
}

/// The object the JavaScript API returns: timestamps (also each error's `at`) as `Date`s, and
/// `deduplicated`.
pub fn to_js(message: &Message) -> JsValue {
    let object = build(message, true, date);
    set(&object, "deduplicated", &message.deduplicated.into());
    object.into()
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

/// Brings a record written by schema version 1 or 2 (0.1.0) to version 3, in place: the fields
/// added in 3 get what the message's past allows to know (`errors` empty, its `retryCount`
/// failures counted in `errorsDropped`, `deadAt` = `updatedAt` for a dead message, zeros and
/// nulls elsewhere); `retryAfter` is cleared unless the message is pending (0.1.0 left it on
/// claimed messages; now it is set exactly while a message waits for its backoff). The upgrade
/// then reads it with [`from_record`] and writes it again with [`to_record`].
pub fn upgrade_record(record: &JsValue) -> Result<()> {
    let get = |name: &str| field(record, name);
    let put = |name: &str, value: &JsValue| {
        with_key(name, |key| Reflect::set(record, key, value))
            .map(drop)
            .map_err(|e| corrupt(name, &e))
    };
    let status = get("status")?;
    if status.as_string().as_deref() != Some(Status::Pending.as_str()) {
        put("retryAfter", &JsValue::NULL)?;
    }
    let dead = status.as_string().as_deref() == Some(Status::Dead.as_str());
    put(
        "deadAt",
        &if dead {
            get("updatedAt")?
        } else {
            JsValue::NULL
        },
    )?;
    put("errors", &Array::new())?;
    put("errorsDropped", &get("retryCount")?)?;
    put("idempotencyKey", &JsValue::NULL)?;
    put("firstFailedAt", &JsValue::NULL)?;
    put("replayCount", &JsValue::from_f64(0.0))?;
    put("replayedAt", &JsValue::NULL)
}

fn corrupt(field: &str, value: &JsValue) -> Error {
    Error::Store(format!(
        "corrupt record in IndexedDB: field {field} is {value:?}"
    ))
}

fn field(record: &JsValue, name: &str) -> Result<JsValue> {
    with_key(name, |key| Reflect::get(record, key)).map_err(|e| corrupt(name, &e))
}

fn int(record: &JsValue, name: &str) -> Result<i64> {
    let value = field(record, name)?;
    whole(&value).ok_or_else(|| corrupt(name, &value))
}

/// A whole number within ±2^53 (the cast is then exact).
fn whole(value: &JsValue) -> Option<i64> {
    match value.as_f64() {
        #[allow(clippy::cast_possible_truncation)]
        Some(n) if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Some(n as i64),
        _ => None,
    }
}

/// A timestamp: a whole number of milliseconds within the range deadletter writes
/// (`MIN_TIME..=MAX_TIME`, what every binding can represent).
fn time(record: &JsValue, name: &str) -> Result<Millis> {
    let ms = int(record, name)?;
    if (MIN_TIME..=MAX_TIME).contains(&ms) {
        Ok(ms)
    } else {
        Err(Error::Store(format!(
            "corrupt record in IndexedDB: field {name} is {ms}, outside the time range deadletter \
             writes (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in UTC milliseconds)"
        )))
    }
}

fn opt_time(record: &JsValue, name: &str) -> Result<Option<Millis>> {
    if field(record, name)?.is_null() {
        Ok(None)
    } else {
        time(record, name).map(Some)
    }
}

fn count(record: &JsValue, name: &str) -> Result<u32> {
    let n = int(record, name)?;
    u32::try_from(n).map_err(|_| corrupt(name, &number(n)))
}

fn string(record: &JsValue, name: &str) -> Result<String> {
    let value = field(record, name)?;
    value.as_string().ok_or_else(|| corrupt(name, &value))
}

fn opt_string(record: &JsValue, name: &str) -> Result<Option<String>> {
    let value = field(record, name)?;
    if value.is_null() {
        Ok(None)
    } else {
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| corrupt(name, &value))
    }
}

fn history(record: &JsValue) -> Result<Vec<FailedAttempt>> {
    let value = field(record, "errors")?;
    if !Array::is_array(&value) {
        return Err(corrupt("errors", &value));
    }
    Array::from(&value)
        .iter()
        .map(|entry| {
            Ok(FailedAttempt {
                attempt: count(&entry, "attempt")?,
                error: string(&entry, "error")?,
                at: time(&entry, "at")?,
            })
        })
        .collect::<Result<_>>()
        .map_err(|err| match err {
            Error::Store(why) => Error::Store(format!("{why} (in errors)")),
            other => other,
        })
}

/// Reads a stored record back; a `store` error naming the message and the field when it holds a
/// value this binding never writes (a timestamp outside the range, a wrong type, a missing field,
/// an unknown status).
pub fn from_record(record: &JsValue) -> Result<Message> {
    let id = int(record, "id")?;
    read(record, id).map_err(|err| match err {
        Error::Store(why) => Error::Store(why.replacen(
            "corrupt record in IndexedDB",
            &format!("message {id} is corrupt in IndexedDB"),
            1,
        )),
        other => other,
    })
}

fn read(record: &JsValue, id: i64) -> Result<Message> {
    let status = string(record, "status")?;
    Ok(Message {
        id,
        queue: string(record, "queue")?,
        payload: string(record, "payload")?,
        status: Status::parse(&status)
            .ok_or_else(|| corrupt("status", &JsValue::from_str(&status)))?,
        retry_count: count(record, "retryCount")?,
        max_retries: count(record, "maxRetries")?,
        retry_after: opt_time(record, "retryAfter")?,
        last_error: opt_string(record, "lastError")?,
        created_at: time(record, "createdAt")?,
        updated_at: time(record, "updatedAt")?,
        lease_token: opt_string(record, "leaseToken")?,
        lease_expires_at: opt_time(record, "leaseExpiresAt")?,
        idempotency_key: opt_string(record, "idempotencyKey")?,
        first_failed_at: opt_time(record, "firstFailedAt")?,
        dead_at: opt_time(record, "deadAt")?,
        errors: history(record)?,
        errors_dropped: count(record, "errorsDropped")?,
        replay_count: count(record, "replayCount")?,
        replayed_at: opt_time(record, "replayedAt")?,
        deduplicated: false,
    })
}
