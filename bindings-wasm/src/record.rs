//! Messages as IndexedDB records and as the plain objects the JavaScript API returns.
//!
//! Both use the JavaScript field names (`retryCount`, `leaseExpiresAt`, ...). A record keeps
//! timestamps as numbers of milliseconds (null stays null, which keeps a message out of the
//! indexes that name that field); the API object turns them into `Date`s. A record also has
//! `dueAt` (see [`to_record`]); reading ignores it.

use deadletter::{Error, Message, Millis, Result, Status};
use js_sys::{Date, Object, Reflect};
use wasm_bindgen::JsValue;

fn set(object: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    let _ = Reflect::set(object, &JsValue::from_str(key), value);
}

fn opt_str(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from_str)
}

#[allow(clippy::cast_precision_loss)] // ids and millisecond timestamps are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn build(message: &Message, with_id: bool, time: impl Fn(Millis) -> JsValue) -> Object {
    let object = Object::new();
    let opt_time = |t: Option<Millis>| t.map_or(JsValue::NULL, &time);
    if with_id {
        set(&object, "id", &number(message.id));
    }
    set(&object, "queue", &JsValue::from_str(&message.queue));
    set(&object, "payload", &JsValue::from_str(&message.payload));
    set(
        &object,
        "status",
        &JsValue::from_str(message.status.as_str()),
    );
    set(&object, "retryCount", &message.retry_count.into());
    set(&object, "maxRetries", &message.max_retries.into());
    set(&object, "retryAfter", &opt_time(message.retry_after));
    set(
        &object,
        "lastError",
        &opt_str(message.last_error.as_deref()),
    );
    set(&object, "createdAt", &time(message.created_at));
    set(&object, "updatedAt", &time(message.updated_at));
    set(
        &object,
        "leaseToken",
        &opt_str(message.lease_token.as_deref()),
    );
    set(
        &object,
        "leaseExpiresAt",
        &opt_time(message.lease_expires_at),
    );
    object
}

/// What `dueAt` is for a message without `retryAfter`: `-Infinity`, a valid IndexedDB number key
/// that is below every instant, so such a message is due whatever the clock says (also before
/// 1970, when `now` is negative).
pub const NOT_DELAYED: f64 = f64::NEG_INFINITY;

/// The `dueAt` of a message whose `retryAfter` is `retry_after` (see [`to_record`]).
fn due_at(retry_after: Option<Millis>) -> JsValue {
    retry_after.map_or(JsValue::from_f64(NOT_DELAYED), number)
}

/// The record stored for `message`; without `id` for a new message (the store assigns it). It
/// also holds `dueAt`, a storage-only number for the claim index: `retryAfter`, or
/// [`NOT_DELAYED`] (`-Infinity`) when null (a null would keep the message out of the index).
pub fn to_record(message: &Message, with_id: bool) -> Object {
    let record = build(message, with_id, number);
    set(&record, "dueAt", &due_at(message.retry_after));
    record
}

/// The object the JavaScript API returns: timestamps as `Date`s.
pub fn to_js(message: &Message) -> JsValue {
    #[allow(clippy::cast_precision_loss)]
    let date = |ms: Millis| JsValue::from(Date::new(&JsValue::from_f64(ms as f64)));
    build(message, true, date).into()
}

/// The instants a stored timestamp may hold, in UTC milliseconds: 0001-01-01T00:00:00Z to
/// 9999-12-31T23:59:59.999Z, the range every binding represents (Python's `datetime`).
// TODO: use `deadletter::validate::MIN_TIME..=MAX_TIME` once the core defines them.
const TIME_RANGE: std::ops::RangeInclusive<Millis> = -62_135_596_800_000..=253_402_300_799_999;

/// What is wrong with one field of a record.
type Field<T> = std::result::Result<T, String>;

fn wrong(name: &str, value: &JsValue) -> String {
    format!("field {name} is {value:?}")
}

fn field(record: &JsValue, name: &str) -> Field<JsValue> {
    Reflect::get(record, &JsValue::from_str(name)).map_err(|e| wrong(name, &e))
}

fn int(record: &JsValue, name: &str) -> Field<i64> {
    let value = field(record, name)?;
    match value.as_f64() {
        // A whole number within ±2^53: the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        Some(n) if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 => Ok(n as i64),
        _ => Err(wrong(name, &value)),
    }
}

fn time(record: &JsValue, name: &str) -> Field<Millis> {
    let ms = int(record, name)?;
    if TIME_RANGE.contains(&ms) {
        Ok(ms)
    } else {
        Err(format!(
            "field {name} is {ms}, outside the time range deadletter writes \
             (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in UTC milliseconds)"
        ))
    }
}

fn opt_time(record: &JsValue, name: &str) -> Field<Option<Millis>> {
    if field(record, name)?.is_null() {
        Ok(None)
    } else {
        time(record, name).map(Some)
    }
}

fn count(record: &JsValue, name: &str) -> Field<u32> {
    let n = int(record, name)?;
    u32::try_from(n).map_err(|_| wrong(name, &number(n)))
}

fn string(record: &JsValue, name: &str) -> Field<String> {
    let value = field(record, name)?;
    value.as_string().ok_or_else(|| wrong(name, &value))
}

fn opt_string(record: &JsValue, name: &str) -> Field<Option<String>> {
    let value = field(record, name)?;
    if value.is_null() {
        Ok(None)
    } else {
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| wrong(name, &value))
    }
}

/// Reads a stored record back; a `store` error naming the message and the field when it holds a
/// value this binding never writes (a timestamp outside [`TIME_RANGE`], a wrong type, a missing
/// field, an unknown status).
pub fn from_record(record: &JsValue) -> Result<Message> {
    let id = int(record, "id")
        .map_err(|why| Error::Store(format!("corrupt record in IndexedDB: {why}")))?;
    read(record, id)
        .map_err(|why| Error::Store(format!("message {id} is corrupt in IndexedDB: {why}")))
}

fn read(record: &JsValue, id: i64) -> Field<Message> {
    let status = string(record, "status")?;
    Ok(Message {
        id,
        queue: string(record, "queue")?,
        payload: string(record, "payload")?,
        status: Status::parse(&status)
            .ok_or_else(|| wrong("status", &JsValue::from_str(&status)))?,
        retry_count: count(record, "retryCount")?,
        max_retries: count(record, "maxRetries")?,
        retry_after: opt_time(record, "retryAfter")?,
        last_error: opt_string(record, "lastError")?,
        created_at: time(record, "createdAt")?,
        updated_at: time(record, "updatedAt")?,
        lease_token: opt_string(record, "leaseToken")?,
        lease_expires_at: opt_time(record, "leaseExpiresAt")?,
    })
}
