//! Messages as IndexedDB records and as the plain objects the JavaScript API returns.
//!
//! Both message forms use the JavaScript field names (`retryCount`, `leaseExpiresAt`, ...). A
//! record keeps timestamps as numbers of milliseconds and leaves out every field that is null
//! (issue 20: a smaller record to clone and store; a missing field reads as null, as the null
//! older versions wrote does, and keeps a message out of the indexes that name that field); the
//! API object turns them into `Date`s and has every field. A record also
//! has its place, storage only: `lane` and `at` in the claim index (the core's [`Lane`], see
//! [`to_record`]; a pending record without a lane is blocked behind its group's head) and
//! `groupAt`, its position in its ordering group while it is live ([`Stored`]); and never
//! `deduplicated` (a property of an enqueue's result, not of the message). A record read back
//! goes through the core's checks ([`StoredMessage::check`]): a value deadletter never writes is
//! the same `store` error as in every other store. Queue rows are [`crate::queue`]'s.

use deadletter::storage::{Lane, StoredMessage, corrupt, live, upgrade_v1};
use deadletter::{Error, FailedAttempt, Message, Millis, Result};
use js_sys::{Array, Object};
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `Reflect.get` on a plain object (a record, a queue's record), which cannot throw: js-sys's
    /// catching binding costs a closure and an `arguments` object per call.
    #[wasm_bindgen(js_namespace = Reflect, js_name = get)]
    fn property(target: &JsValue, key: &JsValue) -> JsValue;
}

/// `key` of a plain object (undefined when absent, or when `target` is no object).
pub fn get(target: &JsValue, key: &str) -> JsValue {
    if target.is_object() {
        property(target, &JsValue::from_str(key))
    } else {
        JsValue::UNDEFINED
    }
}

/// A whole number as a JavaScript number (ids, counts and timestamps are far below 2^53).
#[allow(clippy::cast_precision_loss)]
pub fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

// The object literals are js/store/record.js (wasm-bindgen copies it into the package's snippets/).
#[wasm_bindgen(module = "/js/store/record.js")]
extern "C" {
    /// A record without `id` (`kind` 0), a record (1) or the API's message object (2). Instants
    /// and other numbers that may be null are NaN for null; the texts (the status among them)
    /// are [`texts`]; `errors` is `undefined` for an empty history; a record (`kind` 0 and 1)
    /// leaves out the fields that are null.
    #[allow(clippy::too_many_arguments)]
    fn shape(
        kind: u32,
        id: f64,
        texts: &[u8],
        retry_count: u32,
        max_retries: u32,
        retry_after: f64,
        created_at: f64,
        updated_at: f64,
        lease_expires_at: f64,
        first_failed_at: f64,
        dead_at: f64,
        errors: &JsValue,
        errors_dropped: u32,
        replay_count: u32,
        replayed_at: f64,
        expires_at: f64,
        group_at: f64,
        lane: f64,
        at: f64,
        deduplicated: bool,
    ) -> Object;

    /// One entry of a failure history (for `kind` 2, `at` becomes a `Date`).
    fn attempt(kind: u32, attempt: u32, error: &str, at: f64) -> JsValue;

    /// The fields of a record by type: its numbers (and its texts' lengths, its history's length,
    /// whether it is blocked, its id: see [`Numbers`]) written into `numbers` (a view of this
    /// module's memory: no copy, and no `Float64Array::to_vec`, whose length assertion links the
    /// formatting of `Debug`); returns its texts as one string, or the field of the wrong type
    /// and what it holds (`[field, why]`).
    fn view(record: &JsValue, version: u32, numbers: &mut [f64]) -> JsValue;

    /// The failure history of a record [`view`] read, flat: `[attempt, error, at, ...]`.
    fn history(record: &JsValue) -> Array;
}

/// Where js/store/record.js's `view` writes what it read, after the [`WHOLE`] numbers of a record.
struct Numbers;

impl Numbers {
    /// The length in UTF-16 code units of each text (NaN: null), [`TEXTS`] of them.
    const LENGTHS: usize = WHOLE;
    /// How many entries the failure history has.
    const HISTORY: usize = Self::LENGTHS + TEXTS;
    /// 1 when the record is pending without a lane (blocked), else 0.
    const BLOCKED: usize = Self::HISTORY + 1;
    /// The record's `id` when it is a number, else NaN.
    const ID: usize = Self::BLOCKED + 1;
    /// How many numbers `view` writes.
    const LEN: usize = Self::ID + 1;
}

/// How many texts a record has (`TEXT` in js/store/record.js).
const TEXTS: usize = 8;

/// The texts of `message` as `shape` reads them (js/store/record.js's `text`): for each of
/// `queue`, `payload`, `status`, `lastError`, `leaseToken`, `idempotencyKey`, `group` and
/// `movedFrom`, its
/// length in bytes (4 bytes, little-endian; `u32::MAX`: null) then its UTF-8 bytes. Handed over
/// as one view of the module's memory (issue 20: the glue made a typed array and called a
/// `TextDecoder` for each text, 21 of the 24 decodes of a cycle enqueue+claim+succeed).
fn texts(message: &Message) -> Vec<u8> {
    let all = [
        Some(message.queue.as_str()),
        Some(message.payload.as_str()),
        Some(message.status.as_str()),
        message.last_error.as_deref(),
        message.lease_token.as_deref(),
        message.idempotency_key.as_deref(),
        message.group.as_deref(),
        message.moved_from.as_deref(),
    ];
    let mut out = Vec::with_capacity(all.iter().map(|t| 4 + t.map_or(0, str::len)).sum());
    for text in all {
        #[allow(clippy::cast_possible_truncation)] // texts are far below 4 GiB
        let len = text.map_or(u32::MAX, |t| t.len() as u32);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(text.unwrap_or_default().as_bytes());
    }
    out
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

/// A number, or NaN for none (what `shape` takes for null).
#[allow(clippy::cast_precision_loss)] // ids, counts and instants are far below 2^53
fn float(n: Option<i64>) -> f64 {
    n.map_or(f64::NAN, |n| n as f64)
}

/// Instants go as numbers of milliseconds; `shape` makes `Date`s of them for the API's object.
/// `place` is `[groupAt, lane, at]` (NaN: null).
fn build(message: &Message, kind: Kind, place: [f64; 3], deduplicated: bool) -> Object {
    let [group_at, lane, at] = place;
    // No array made for an empty history (most messages): `shape` makes it.
    let errors = if message.errors.is_empty() {
        JsValue::UNDEFINED
    } else {
        let errors = Array::new();
        for entry in &message.errors {
            let at = float(Some(entry.at));
            errors.push(&attempt(kind as u32, entry.attempt, &entry.error, at));
        }
        errors.into()
    };
    shape(
        kind as u32,
        float(Some(message.id)),
        &texts(message),
        message.retry_count,
        message.max_retries,
        float(message.retry_after),
        float(Some(message.created_at)),
        float(Some(message.updated_at)),
        float(message.lease_expires_at),
        float(message.first_failed_at),
        float(message.dead_at),
        &errors,
        message.errors_dropped,
        message.replay_count,
        float(message.replayed_at),
        float(message.expires_at),
        group_at,
        lane,
        at,
        deduplicated,
    )
}

/// `lane` of a record whose turn comes at a time, `at`: [`Lane::Waiting`] (a `pending` message
/// in backoff or delayed, until its `retryAfter`) and [`Lane::Leased`] (a `processing` one, until
/// its lease runs out). The claim index sorts them by `(at, id)`, so its part with `at <= now`
/// is what a claim acts on first.
pub const TIMED: f64 = 0.0;
/// `lane` of a [`Lane::Ready`] message, and of one a claim moved there once its `retryAfter` had
/// passed: `at` is [`READY_AT`] for every one of them, so the lane is in claim order, by id
/// ([`deadletter::storage::claim_order`]: enqueue order; schema 9, before which `at` was the
/// `createdAt`).
pub const READY: f64 = 1.0;
/// `at` of every record in the [`READY`] lane: one value, so that the claim index
/// (`[queue, lane, at, id]`) orders the lane by id.
pub const READY_AT: f64 = 0.0;

/// A message as stored, with its place (storage only): its position in its ordering group while
/// it is live (`groupAt`), and whether it waits behind the group's head (a `pending` record
/// without a lane: [`Lane::Blocked`]).
#[derive(Debug, Clone)]
pub struct Stored {
    /// The message.
    pub message: Message,
    /// Its position's instant in its group ([`deadletter::storage::Position`]), while live.
    pub group_at: Option<Millis>,
    /// Whether it is blocked behind its group's head.
    pub blocked: bool,
}

/// The record stored for `message` (without `id` when `with_id` is false: a new message, whose
/// id the store assigns), with its place: `head` says whether it is its group's head (see
/// [`Lane::of`]), `group_at` its position in its group (kept only while it is live). Its `lane`
/// and `at` place it in the claim index: [`TIMED`] with `retryAfter` (waiting) or
/// `leaseExpiresAt` (leased), [`READY`] with [`READY_AT`]; none (left out) for a finished message and for
/// one blocked behind its group's head, which keeps it out of the claim index (and out of the
/// `delayed` index, whose key ends with `lane`).
pub fn to_record(message: &Message, with_id: bool, head: bool, group_at: Option<Millis>) -> Object {
    let kind = if with_id { Kind::Record } else { Kind::New };
    let group_at = float(group_at.filter(|_| message.group.is_some() && live(message)));
    let (lane, at) = match Lane::of(message, head) {
        Some(Lane::Ready) => (READY, READY_AT),
        Some(Lane::Waiting(at) | Lane::Leased(at)) => (TIMED, float(Some(at))),
        Some(Lane::Blocked) | None => (f64::NAN, f64::NAN),
    };
    build(message, kind, [group_at, lane, at], false)
}

/// The record of `message`, unchanged, in the [`READY`] lane (as its group's head): a claim moves
/// a waiting message there once its `retryAfter` has passed (it keeps its `retryAfter` until it
/// is claimed).
pub fn to_ready_record(message: &Message, group_at: Option<Millis>) -> Object {
    build(
        message,
        Kind::Record,
        [float(group_at), READY, READY_AT],
        false,
    )
}

/// The object the JavaScript API returns: timestamps (also each error's `at`) as `Date`s, and
/// `deduplicated` (an enqueue's result that is a message stored before, under its idempotency
/// key).
pub fn to_js(message: &Message, deduplicated: bool) -> JsValue {
    build(message, Kind::Api, [f64::NAN; 3], deduplicated).into()
}

/// A whole number within ±2^53 (the cast is then exact).
pub fn whole(value: &JsValue) -> Option<i64> {
    value.as_f64().and_then(whole_number)
}

/// `n` when it is a whole number within ±2^53 (the cast is then exact).
fn whole_number(n: f64) -> Option<i64> {
    #[allow(clippy::cast_possible_truncation)]
    (n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0).then_some(n as i64)
}

/// A record read back: the message (checked by the core) and its place. `version` is the schema
/// version that wrote it; `js/store/record.js`'s `view` checks the type of each field (a field
/// that version did not have reads as its default) and hands the values over by type: the
/// numbers into this module's memory, the texts as one string cut here by their lengths.
fn read(record: &JsValue, version: u32) -> Result<Stored> {
    let mut numbers = [f64::NAN; Numbers::LEN];
    let fields = view(record, version, &mut numbers);
    let id = whole_number(numbers[Numbers::ID])
        .ok_or_else(|| Error::Store("an IndexedDB record without a whole-number id".into()))?;
    let Some(all) = fields.as_string() else {
        let fields: Array = fields.unchecked_into();
        let field = fields.get(0).as_string().unwrap_or_default();
        let why = fields.get(1).as_string().unwrap_or_default();
        return Err(corrupt(id, &field, why));
    };
    #[allow(clippy::cast_possible_truncation)] // whole numbers within 2^53, checked by `view`
    let n = |i: usize| numbers.get(i).filter(|x| !x.is_nan()).map(|x| *x as i64);
    let mut texts = cut(&all, &numbers[Numbers::LENGTHS..Numbers::HISTORY])
        .map_err(|at| {
            let field = TEXT_FIELDS.get(at).copied().unwrap_or_default();
            corrupt(id, field, "holds an unpaired surrogate")
        })?
        .into_iter();
    let mut t = || texts.next().flatten();
    let [
        queue,
        payload,
        status,
        last_error,
        lease_token,
        idempotency_key,
        group,
        moved_from,
    ] = [t(), t(), t(), t(), t(), t(), t(), t()];
    let mut errors = Vec::new();
    if n(Numbers::HISTORY).unwrap_or_default() > 0 {
        let history = history(record);
        for i in (0..history.length()).step_by(3) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked by `view`
            errors.push(FailedAttempt {
                attempt: history.get(i).as_f64().unwrap_or_default() as u32,
                error: history.get(i + 1).as_string().unwrap_or_default(),
                at: whole(&history.get(i + 2)).unwrap_or_default(),
            });
        }
    }
    let status = status.unwrap_or_default();
    let message = StoredMessage {
        id,
        queue: queue.unwrap_or_default(),
        payload: payload.unwrap_or_default(),
        status: &status,
        retry_count: n(0).unwrap_or_default(),
        max_retries: n(1).unwrap_or_default(),
        retry_after: n(2),
        last_error,
        created_at: n(3).unwrap_or_default(),
        updated_at: n(4).unwrap_or_default(),
        lease_token,
        lease_expires_at: n(5),
        idempotency_key,
        first_failed_at: n(6),
        dead_at: n(7),
        errors,
        errors_dropped: n(8).unwrap_or_default(),
        replay_count: n(9).unwrap_or_default(),
        replayed_at: n(10),
        group,
        expires_at: n(11),
        moved_from,
    }
    .check()?;
    Ok(Stored {
        message,
        group_at: n(12),
        blocked: n(Numbers::BLOCKED) == Some(1),
    })
}

/// The core's names of the texts of a record, in the order of [`read`]'s.
const TEXT_FIELDS: [&str; TEXTS] = [
    "queue",
    "payload",
    "status",
    "last_error",
    "lease_token",
    "idempotency_key",
    "group",
    "moved_from",
];

/// The texts of `all` (their concatenation) by their `lengths` in UTF-16 code units (NaN: null);
/// the index of the text whose length ends inside a character: a surrogate pair made of an
/// unpaired surrogate at its end and one at the start of the next (deadletter writes no
/// unpaired surrogates).
fn cut(all: &str, lengths: &[f64]) -> std::result::Result<Vec<Option<String>>, usize> {
    let mut out = Vec::with_capacity(lengths.len());
    let mut rest = all;
    for (at, len) in lengths.iter().enumerate() {
        if len.is_nan() {
            out.push(None);
            continue;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // a string's length
        let mut units = *len as usize;
        let mut end = 0;
        for c in rest.chars() {
            if units == 0 {
                break;
            }
            units = units.checked_sub(c.len_utf16()).ok_or(at)?;
            end += c.len_utf8();
        }
        if units > 0 {
            return Err(at);
        }
        // Never out of bounds nor inside a character (no slicing, whose panic formats).
        let (text, after) = rest.split_at_checked(end).ok_or(at)?;
        out.push(Some(text.to_owned()));
        rest = after;
    }
    Ok(out)
}

/// How many numbers a record has (`WHOLE` in js/store/record.js).
const WHOLE: usize = 13;

/// The schema version whose records [`from_record`] reads: 6, whose records versions 7 to 9 write
/// with the same fields (7 has fewer indexes, 9 another `at` in the ready lane; see
/// `crate::schema::VERSION`).
const VERSION: u32 = 6;

/// Reads a stored record back; a `store` error naming the message and the field when it holds a
/// value this binding never writes (a timestamp outside the range, a wrong type, a missing
/// field, an unknown status): see [`StoredMessage::check`].
pub fn from_record(record: &JsValue) -> Result<Message> {
    Ok(stored(record)?.message)
}

/// Reads a stored record back with its place (see [`from_record`]).
pub fn stored(record: &JsValue) -> Result<Stored> {
    read(record, VERSION)
}

/// The record of schema version 9 for a record written by schema version `from` (1 to 8), for
/// the upgrade transaction: one of 1 or 2 (deadletter 0.1.0) is read with the fields of 3 at
/// their defaults and given what 0.1.0 knew ([`upgrade_v1`]); the fields of 5 (ordering group,
/// expiry, group position) are null before 5, and `movedFrom` (6) before 6; every record is
/// then written as this version writes it, so it gets its place in the new indexes. One of 5 to
/// 8 keeps its place (`groupAt`, `lane`, `at`), but for the `at` of the [`READY`] lane, which is
/// [`READY_AT`] from 9 on (the lane in claim order, by id; its `createdAt` before).
pub fn upgrade_record(record: &JsValue, from: u32) -> Result<Object> {
    let stored = read(record, from)?;
    if from >= 5 {
        let place = |key| get(record, key).as_f64().unwrap_or(f64::NAN);
        let lane = place("lane");
        let at = if lane == READY { READY_AT } else { place("at") };
        return Ok(build(
            &stored.message,
            Kind::Record,
            [float(stored.group_at), lane, at],
            false,
        ));
    }
    let message = stored.message;
    let message = if from < 3 {
        upgrade_v1(message)
    } else {
        message
    };
    Ok(to_record(&message, true, true, None))
}
