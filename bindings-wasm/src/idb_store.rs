//! [`IdbStore`]: the IndexedDB [`Store`], for browsers, workers and Node (with fake-indexeddb's
//! globals), on `web-sys` and [`crate::request`].
//!
//! One object store, `messages` (keyPath `id`, autoIncrement: ids from 1, strictly increasing,
//! never reused), with seven indexes (see [`crate::connection`] for their key paths): `claim`
//! (two lanes: the messages whose turn comes at a time, leases and delays, by that time; the due
//! pending messages in claim order), `expiry` (leases), `list` (one status in id order, with
//! `updatedAt`), `queue`, the unique `idempotency`, `delayed` (`retryAfter`) and `dead`
//! (`deadAt`). Within one index key, entries come in primary-key (= id) order, which gives
//! id-ordered pages.
//!
//! Each state change is one `readwrite` transaction that awaits only its own requests: the core's
//! steps are synchronous closures, so read -> step -> write happens inside it (see
//! [`crate::connection`] for why nothing else may be awaited there). In particular `claim` expires
//! the queue's overdue leases and takes the first due messages in the same transaction, so two
//! tabs or workers can never take the same message. It asks two things at once: the timed lane up
//! to `now` (usually empty: nothing to expire, nothing that became due; at most a page of
//! [`TIMED_PAGE`], the rest walked one record at a time) and the first messages of the ready
//! lane; so messages waiting for their backoff are never walked, only messages that are acted on
//! are loaded, and never many at once. `counts` reads index counts and keys, and loads only what the next
//! claim acts on; `select` walks keys and loads a message only when its filter needs `lastError`
//! or `deadAt`. No operation scans the whole store or loads it into memory.

use std::cell::Cell;
use std::rc::Rc;

use deadletter::{
    Claimed, Counts, Error, Filter, Id, ListQuery, Message, Millis, NewMessage, Result, Status,
    Store, apply_step, machine,
};
use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{
    IdbCursor, IdbCursorDirection, IdbCursorWithValue, IdbDatabase, IdbFactory, IdbIndex,
    IdbKeyRange, IdbObjectStore, IdbTransactionMode,
};

use crate::connection::{
    self, BY_CLAIM, BY_DEATH, BY_DELAY, BY_EXPIRY, BY_KEY, BY_QUEUE, BY_STATUS, js_error,
};
use crate::record::{READY, TIMED, from_record, make_ready, to_record};
use crate::request::request;

/// An open IndexedDB database holding messages.
///
/// The connection closes itself when another connection asks for a version change (a newer
/// schema in another tab); every later call then fails with a `store` error, as after
/// [`IdbStore::close`]. Dropping the store closes it too.
#[derive(Debug)]
pub struct IdbStore {
    db: IdbDatabase,
    closed: Rc<Cell<bool>>,
    /// `onversionchange` and `onclose` of the connection (kept alive here): marks it closed and
    /// closes it.
    _on_close: Closure<dyn Fn()>,
}

#[allow(clippy::cast_precision_loss)] // ids and millisecond timestamps are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn key(parts: &[JsValue]) -> JsValue {
    parts.iter().collect::<Array>().into()
}

const NEG_INF: f64 = f64::NEG_INFINITY;
const INF: f64 = f64::INFINITY;

/// The keys of an index from `[..prefix, lower]` to `[..prefix, upper]` (a longer key under
/// `[..prefix, x]` sorts with `x`'s part); `lower_open` excludes the keys whose next part is
/// `lower`, `upper` is included.
fn between(prefix: &[JsValue], lower: f64, lower_open: bool, upper: f64) -> Result<IdbKeyRange> {
    let part = |x: f64| [prefix, &[JsValue::from_f64(x)]].concat();
    let upper = match upper {
        // Every longer key under [..prefix, u] is below [..prefix, u, +inf]... and no key part is
        // above +inf among numbers, so [..prefix, +inf] bounds them all.
        INF => key(&part(INF)),
        u => key(&[part(u).as_slice(), &[JsValue::from_f64(INF)]].concat()),
    };
    let lower = if lower_open {
        key(&[part(lower).as_slice(), &[JsValue::from_f64(INF)]].concat())
    } else {
        key(&part(lower))
    };
    IdbKeyRange::bound_with_lower_open_and_upper_open(&lower, &upper, lower_open, false)
        .map_err(|e| js_error("key range", &e))
}

fn index(store: &IdbObjectStore, name: &str) -> Result<IdbIndex> {
    store.index(name).map_err(|e| js_error("index", &e))
}

/// The records of an array (what `getAll` resolves to).
fn records(all: &JsValue) -> Array {
    all.clone().unchecked_into()
}

/// Moves `cursor` on (its request then resolves again).
fn advance(cursor: &IdbCursor) -> Result<()> {
    cursor.continue_().map_err(|e| js_error("cursor", &e))
}

/// The cursor a cursor request resolved to; `None` at the end (null).
fn cursor<C: JsCast>(value: JsValue) -> Option<C> {
    value.dyn_into().ok()
}

/// Part `at` of an index key, as a number.
fn key_part(index_key: &JsValue, at: u32) -> Option<f64> {
    Reflect::get(index_key, &at.into())
        .ok()
        .and_then(|v| v.as_f64())
}

/// A number read from an index key as the whole number it was stored as.
#[allow(clippy::cast_possible_truncation)] // only ids and timestamps are stored there: whole, < 2^53
fn whole(n: f64) -> i64 {
    n as i64
}

/// The first key (an array) of `range` in index `name`, or `None` when the range is empty.
async fn first_key(
    store: &IdbObjectStore,
    name: &str,
    range: &IdbKeyRange,
) -> Result<Option<JsValue>> {
    let found = request(
        index(store, name)?.open_key_cursor_with_range(range),
        "openKeyCursor",
    )?;
    match cursor::<IdbCursor>(found.await?) {
        Some(cursor) => cursor.key().map(Some).map_err(|e| js_error("cursor", &e)),
        None => Ok(None),
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // a count: whole, >= 0
async fn count_in(store: &IdbObjectStore, name: &str, range: &IdbKeyRange) -> Result<u64> {
    let counted = request(index(store, name)?.count_with_key(range), "count")?.await?;
    Ok(counted.as_f64().unwrap_or_default() as u64)
}

async fn get_record(store: &IdbObjectStore, queue: &str, id: Id) -> Result<Option<Message>> {
    let found = request(store.get(&number(id)), "get")?.await?;
    if found.is_undefined() {
        return Ok(None);
    }
    Ok(Some(from_record(&found)?).filter(|m| m.queue == queue))
}

async fn put(store: &IdbObjectStore, message: &Message) -> Result<()> {
    put_record(store, &to_record(message, true)).await
}

async fn put_record(store: &IdbObjectStore, record: &JsValue) -> Result<()> {
    request(store.put(record), "put")?.await.map(drop)
}

/// The id IndexedDB's key generator assigned: a whole number within 1..2^53.
fn assigned_id(key: &JsValue) -> Result<Id> {
    key.as_f64()
        .filter(|k| k.fract() == 0.0 && *k >= 1.0 && *k <= 9_007_199_254_740_991.0)
        .map(whole)
        .ok_or_else(|| Error::Store(format!("IndexedDB assigned a bad key {key:?}")))
}

/// The most records of the claim index's timed lane that a claim loads at once: a claim after an
/// outage may find many thousands come due, whose payloads must not all be in memory together
/// (a WebAssembly module has at most 4 GiB).
const TIMED_PAGE: u32 = 100;

/// One record of the timed lane up to `now`: an overdue lease is expired (written, and added to
/// `expired` as `expire` left it); a pending message that came due is given back with its record.
async fn sort_timed(
    store: &IdbObjectStore,
    record: JsValue,
    now: Millis,
    expire: &mut dyn FnMut(Message) -> Result<Message>,
    expired: &mut Vec<Message>,
) -> Result<Option<(Message, JsValue)>> {
    let message = from_record(&record)?;
    if machine::lease_expired(&message, now) {
        let next = expire(message)?;
        put(store, &next).await?;
        expired.push(next);
        return Ok(None);
    }
    Ok(machine::is_due(&message, now).then_some((message, record)))
}

/// The messages of `became_due`, then the rest of the timed lane up to `now` in `range`, one
/// record at a time, join the ready lane; the overdue leases there are expired (returned as
/// `expire` left them).
async fn walk_timed(
    store: &IdbObjectStore,
    index: &IdbIndex,
    range: &IdbKeyRange,
    now: Millis,
    expire: &mut dyn FnMut(Message) -> Result<Message>,
    became_due: &mut Vec<(Message, JsValue)>,
) -> Result<Vec<Message>> {
    for (_, record) in became_due.drain(..) {
        make_ready(&record)?;
        put_record(store, &record).await?;
    }
    let mut expired = Vec::new();
    let mut walk = request(index.open_cursor_with_range(range), "openCursor")?;
    while let Some(current) = cursor::<IdbCursorWithValue>((&mut walk).await?) {
        let record = current.value().map_err(|e| js_error("cursor", &e))?;
        if let Some((_, record)) = sort_timed(store, record, now, expire, &mut expired).await? {
            make_ready(&record)?;
            put_record(store, &record).await?;
        }
        advance(&current)?;
    }
    Ok(expired)
}

/// Where `id` and `updatedAt` are in a key of the list index.
const LIST_ID: u32 = 2;
const LIST_UPDATED_AT: u32 = 3;

impl IdbStore {
    /// Opens (or creates, or upgrades) database `name` from `factory`. See [`connection::open`] for the
    /// blocked case.
    pub async fn open(factory: &IdbFactory, name: &str) -> Result<Self> {
        let db = connection::open(factory, name).await?;
        let closed: Rc<Cell<bool>> = Rc::default();
        let on_close = {
            let (db, closed) = (db.clone(), closed.clone());
            Closure::<dyn Fn()>::new(move || {
                closed.set(true);
                db.close();
            })
        };
        db.set_onversionchange(Some(on_close.as_ref().unchecked_ref()));
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        Ok(Self {
            db,
            closed,
            _on_close: on_close,
        })
    }

    /// Closes the connection (waits for running transactions); later calls fail with `store`.
    pub fn close(&self) {
        self.closed.set(true);
        self.db.close();
    }

    /// Whether the connection was closed, by [`IdbStore::close`] or by a version change.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// The underlying connection.
    pub fn database(&self) -> Result<&IdbDatabase> {
        if self.closed.get() {
            Err(Error::Store("the database is closed".into()))
        } else {
            Ok(&self.db)
        }
    }

    async fn write<T>(&self, body: impl AsyncFnOnce(&IdbObjectStore) -> Result<T>) -> Result<T> {
        connection::transaction(self.database()?, IdbTransactionMode::Readwrite, body).await
    }

    async fn read<T>(&self, body: impl AsyncFnOnce(&IdbObjectStore) -> Result<T>) -> Result<T> {
        connection::transaction(self.database()?, IdbTransactionMode::Readonly, body).await
    }
}

/// The transactions of the state changes, behind the [`Store`] methods, which pass their steps
/// in as trait objects.
impl IdbStore {
    /// [`Store::update`], with its step as a trait object: the steps of the engine's operations
    /// differ in type, and one copy of the transaction serves them all (a smaller `.wasm`).
    async fn update_one(
        &self,
        queue: &str,
        id: Id,
        step: &mut dyn FnMut(Message) -> Result<Message>,
    ) -> Result<Message> {
        self.write(async |store| {
            let next = apply_step(get_record(store, queue, id).await?, queue, id, step)?;
            put(store, &next).await?;
            Ok(next)
        })
        .await
    }

    /// [`Store::claim`], with its steps as trait objects.
    async fn claim_due(
        &self,
        queue: &str,
        now: Millis,
        limit: usize,
        expire: &mut dyn FnMut(Message) -> Result<Message>,
        take: &mut dyn FnMut(Message) -> Result<Message>,
    ) -> Result<Claimed> {
        let q = JsValue::from_str(queue);
        #[allow(clippy::cast_precision_loss)]
        let (timed, ready) = (
            between(&[q.clone(), TIMED.into()], NEG_INF, false, now as f64)?,
            between(&[q, READY.into()], NEG_INF, false, INF)?,
        );
        let limit_u32 = u32::try_from(limit).unwrap_or(u32::MAX);
        self.write(async |store| {
            let index = index(store, BY_CLAIM)?;
            // Both reads at once: the timed lane up to now (its first page), and the first
            // `limit` ready messages.
            let timed_page = request(
                index.get_all_with_key_and_limit(&timed, TIMED_PAGE),
                "getAll",
            )?;
            let ready_page = || {
                request(
                    index.get_all_with_key_and_limit(&ready, limit_u32),
                    "getAll",
                )
            };
            let mut first = (limit > 0).then(ready_page).transpose()?;
            // 1. In (at, id) order: the overdue leases are expired; the pending messages whose
            //    retryAfter has passed join the candidates (the ready lane, once written).
            let mut expired = Vec::new();
            let mut became_due = Vec::new();
            let timed_page = records(&timed_page.await?);
            let whole = timed_page.length() < TIMED_PAGE;
            for record in timed_page {
                became_due.extend(sort_timed(store, record, now, expire, &mut expired).await?);
            }
            if !whole {
                // More came due than a page: all join the ready lane, one record in memory at a
                // time, and the ready lane is read again (claim order is theirs now).
                let walked = walk_timed(store, &index, &timed, now, expire, &mut became_due);
                expired.extend(walked.await?);
                first = (limit > 0).then(ready_page).transpose()?;
            }
            let Some(first) = first else {
                return Ok(Claimed {
                    expired,
                    taken: Vec::new(),
                });
            };
            // 2. The first `limit` due messages in claim order: of the ready lane's first
            //    `limit`, and of those that just became due (which the others then wait for in
            //    the ready lane).
            let mut taken = Vec::new();
            let mut page = records(&first.await?);
            loop {
                let room = limit - taken.len();
                let full = page.length() as usize == room;
                // The page is in claim order; those that became due go in their place among the
                // first `room`, the others wait in the ready lane.
                let mut candidates = Vec::with_capacity(room + 1);
                for record in page {
                    candidates.push((from_record(&record)?, record, false));
                }
                let mut now_ready = Vec::new();
                for (message, record) in became_due.drain(..) {
                    let key = (message.created_at, message.id);
                    let at = candidates.partition_point(|(m, _, _)| (m.created_at, m.id) < key);
                    if at < room {
                        candidates.insert(at, (message, record, true));
                    } else {
                        now_ready.push(record);
                    }
                    if candidates.len() > room
                        && let Some((_, record, true)) = candidates.pop()
                    {
                        now_ready.push(record);
                    }
                }
                let mut moved_back = false;
                for (message, _, _) in candidates {
                    if machine::is_due(&message, now) {
                        let next = take(message)?;
                        put(store, &next).await?;
                        taken.push(next);
                    } else {
                        // Made ready at a later time than `now`: the clock went back. Back to the
                        // timed lane; the ready lane is read again, past it.
                        put(store, &message).await?;
                        moved_back = true;
                    }
                }
                for record in now_ready {
                    make_ready(&record)?;
                    put_record(store, &record).await?;
                }
                if !(moved_back && full && taken.len() < limit) {
                    break;
                }
                let wanted = u32::try_from(limit - taken.len()).unwrap_or(u32::MAX);
                let again = index.get_all_with_key_and_limit(&ready, wanted);
                page = records(&request(again, "getAll")?.await?);
            }
            Ok(Claimed { expired, taken })
        })
        .await
    }

    /// [`Store::update_many`], with its step as a trait object.
    async fn update_each(
        &self,
        queue: &str,
        ids: &[Id],
        step: &mut dyn FnMut(Message) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.write(async |store| {
            let mut written = Vec::new();
            for &id in ids {
                let Some(message) = get_record(store, queue, id).await? else {
                    continue;
                };
                if let Some(next) = step(message)? {
                    put(store, &next).await?;
                    written.push(next);
                }
            }
            Ok(written)
        })
        .await
    }

    /// [`Store::delete_many`], with its check as a trait object.
    async fn delete_each(
        &self,
        queue: &str,
        ids: &[Id],
        check: &mut dyn FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.write(async |store| {
            let mut deleted = Vec::new();
            for &id in ids {
                let Some(message) = get_record(store, queue, id).await? else {
                    continue;
                };
                if check(&message)? {
                    request(store.delete(&number(id)), "delete")?.await?;
                    deleted.push(message);
                }
            }
            Ok(deleted)
        })
        .await
    }
}

impl Drop for IdbStore {
    fn drop(&mut self) {
        // A closed connection gets no more events, so the dropped callback is never called.
        self.close();
        self.db.set_onversionchange(None);
        self.db.set_onclose(None);
    }
}

/// The first key of `[queue, 'pending', retryAfter > now]` in the delayed index: when the next
/// delayed message is due.
async fn next_due(store: &IdbObjectStore, queue: &str, now: Millis) -> Result<Option<Millis>> {
    #[allow(clippy::cast_precision_loss)]
    let delayed = between(
        &[queue.into(), Status::Pending.as_str().into()],
        now as f64,
        true,
        INF,
    )?;
    let first = first_key(store, BY_DELAY, &delayed).await?;
    Ok(first.and_then(|k| key_part(&k, 2)).map(whole))
}

/// The `createdAt` of the oldest due pending message of queue `q`: the first due one of the ready
/// lane (all are, unless the clock went back), or one of the timed lane's up to `now` whose
/// `retryAfter` has passed (loaded: a claim has not moved it to the ready lane yet).
async fn oldest_due(store: &IdbObjectStore, q: &JsValue, now: Millis) -> Result<Option<Millis>> {
    #[allow(clippy::cast_precision_loss)]
    let timed = between(&[q.clone(), TIMED.into()], NEG_INF, false, now as f64)?;
    let ready = between(&[q.clone(), READY.into()], NEG_INF, false, INF)?;
    let index = index(store, BY_CLAIM)?;
    let mut oldest: Option<Millis> = None;
    // One record at a time (after an outage, many thousands may have come due).
    let mut walk = request(index.open_cursor_with_range(&timed), "openCursor")?;
    while let Some(current) = cursor::<IdbCursorWithValue>((&mut walk).await?) {
        let message = from_record(&current.value().map_err(|e| js_error("cursor", &e))?)?;
        if message.status == Status::Pending && machine::is_due(&message, now) {
            oldest = Some(oldest.map_or(message.created_at, |o| o.min(message.created_at)));
        }
        advance(&current)?;
    }
    let mut walk = request(index.open_cursor_with_range(&ready), "openCursor")?;
    while let Some(current) = cursor::<IdbCursorWithValue>((&mut walk).await?) {
        let record = current.value().map_err(|e| js_error("cursor", &e))?;
        let message = from_record(&record)?;
        if machine::is_due(&message, now) {
            oldest = Some(oldest.map_or(message.created_at, |o| o.min(message.created_at)));
            break;
        }
        advance(&current)?;
    }
    Ok(oldest)
}

impl Store for IdbStore {
    async fn insert(&self, messages: Vec<NewMessage>) -> Result<Vec<Message>> {
        // Conversions before the transaction opens.
        let prepared: Vec<(Message, JsValue, Option<JsValue>)> = messages
            .into_iter()
            .map(|new| {
                let message = new.with_id(0);
                let record = to_record(&message, false).into();
                let unique = message
                    .idempotency_key
                    .as_deref()
                    .map(|k| key(&[JsValue::from_str(&message.queue), JsValue::from_str(k)]));
                (message, record, unique)
            })
            .collect();
        self.write(async |store| {
            let mut out = Vec::with_capacity(prepared.len());
            for (message, record, unique) in prepared {
                if let Some(unique) = unique {
                    let found = request(index(store, BY_KEY)?.get(&unique), "get")?.await?;
                    if !found.is_undefined() {
                        out.push(Message {
                            deduplicated: true,
                            ..from_record(&found)?
                        });
                        continue;
                    }
                }
                let id = assigned_id(&request(store.add(&record), "add")?.await?)?;
                out.push(Message { id, ..message });
            }
            Ok(out)
        })
        .await
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.read(async |store| get_record(store, queue, id).await)
            .await
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        let mut step = Some(step);
        let mut once = |message| match step.take() {
            Some(step) => step(message),
            None => Err(Error::Store("a step ran twice".into())),
        };
        self.update_one(queue, id, &mut once).await
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        limit: usize,
        mut expire: impl FnMut(Message) -> Result<Message>,
        mut take: impl FnMut(Message) -> Result<Message>,
    ) -> Result<Claimed> {
        self.claim_due(queue, now, limit, &mut expire, &mut take)
            .await
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let q = JsValue::from_str(query.queue);
        let after = query.after_id.unwrap_or(0);
        let limit = u32::try_from(query.limit).unwrap_or(u32::MAX);
        if let Some(status) = query.status {
            // [queue, status, id > after, *]: one request, in id order.
            #[allow(clippy::cast_precision_loss)]
            let range = between(&[q, status.as_str().into()], after as f64, true, INF)?;
            return self
                .read(async |store| {
                    let page = index(store, BY_STATUS)?.get_all_with_key_and_limit(&range, limit);
                    let page = request(page, "getAll")?.await?;
                    records(&page).iter().map(|r| from_record(&r)).collect()
                })
                .await;
        }
        self.read(async |store| {
            let only = IdbKeyRange::only(&q).map_err(|e| js_error("key range", &e))?;
            let walk = index(store, BY_QUEUE)?.open_cursor_with_range(&only);
            let mut walk = request(walk, "openCursor")?;
            let mut page = Vec::new();
            while let Some(current) = cursor::<IdbCursorWithValue>((&mut walk).await?) {
                let id = current.primary_key().map_err(|e| js_error("cursor", &e))?;
                let id = id
                    .as_f64()
                    .ok_or_else(|| Error::Store("IndexedDB cursor without a key".into()))?;
                #[allow(clippy::cast_precision_loss)]
                if id <= after as f64 {
                    // Keyset pagination: jump to the first id above `after` under this key.
                    current
                        .continue_primary_key(&q, &number(after.saturating_add(1)))
                        .map_err(|e| js_error("cursor", &e))?;
                } else {
                    let record = current.value().map_err(|e| js_error("cursor", &e))?;
                    page.push(from_record(&record)?);
                    if page.len() == query.limit {
                        break;
                    }
                    advance(&current)?;
                }
            }
            Ok(page)
        })
        .await
    }

    async fn select(&self, filter: &Filter<'_>, after_id: Id, limit: usize) -> Result<Vec<Id>> {
        let q = JsValue::from_str(filter.queue);
        // The list index shows id and updatedAt; the other criteria need the message itself.
        let needs_message = filter.error_contains.is_some()
            || filter.dead_after.is_some()
            || filter.dead_before.is_some();
        #[allow(clippy::cast_precision_loss)]
        let range = between(
            &[q, filter.status.as_str().into()],
            after_id as f64,
            true,
            INF,
        )?;
        self.read(async |store| {
            let walk = index(store, BY_STATUS)?.open_key_cursor_with_range(&range);
            let mut walk = request(walk, "openKeyCursor")?;
            let mut ids = Vec::new();
            while let Some(current) = cursor::<IdbCursor>((&mut walk).await?) {
                let index_key = current.key().map_err(|e| js_error("cursor", &e))?;
                let (Some(id), Some(updated_at)) = (
                    key_part(&index_key, LIST_ID).map(whole),
                    key_part(&index_key, LIST_UPDATED_AT).map(whole),
                ) else {
                    return Err(Error::Store(format!(
                        "bad key in index list: {index_key:?}"
                    )));
                };
                let recent = filter.updated_until.is_some_and(|until| updated_at > until);
                let selected = if recent {
                    false
                } else if needs_message {
                    get_record(store, filter.queue, id)
                        .await?
                        .is_some_and(|m| filter.matches(&m))
                } else {
                    true
                };
                if selected {
                    ids.push(id);
                    if ids.len() == limit {
                        break;
                    }
                }
                advance(&current)?;
            }
            Ok(ids)
        })
        .await
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut step: impl FnMut(Message) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.update_each(queue, ids, &mut step).await
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.delete_each(queue, ids, &mut check).await
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        let q = JsValue::from_str(queue);
        let of = |status: Status| [q.clone(), status.as_str().into()];
        #[allow(clippy::cast_precision_loss)]
        let now_f = now as f64;
        self.read(async |store| {
            let mut counts = Counts::default();
            for (slot, status) in counts.by_status.iter_mut().zip(Status::ALL) {
                *slot = count_in(
                    store,
                    BY_STATUS,
                    &between(&of(status), NEG_INF, false, INF)?,
                )
                .await?;
            }
            let overdue = between(&of(Status::Processing), NEG_INF, false, now_f)?;
            counts.expired = count_in(store, BY_EXPIRY, &overdue).await?;
            let delayed = between(&of(Status::Pending), now_f, true, INF)?;
            counts.delayed = count_in(store, BY_DELAY, &delayed).await?;
            counts.next_due_at = next_due(store, queue, now).await?;
            let dead = between(&of(Status::Dead), NEG_INF, false, INF)?;
            let oldest = first_key(store, BY_DEATH, &dead).await?;
            counts.oldest_dead_at = oldest.and_then(|k| key_part(&k, 2)).map(whole);
            counts.oldest_due_created_at = oldest_due(store, &q, now).await?;
            Ok(counts)
        })
        .await
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        self.read(async |store| next_due(store, queue, now).await)
            .await
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let mut names = self
            .read(async |store| {
                let walk = index(store, BY_QUEUE)?.open_key_cursor_with_range_and_direction(
                    &JsValue::NULL,
                    IdbCursorDirection::Nextunique,
                );
                let mut walk = request(walk, "openKeyCursor")?;
                let mut names = Vec::new();
                while let Some(current) = cursor::<IdbCursor>((&mut walk).await?) {
                    let name = current.key().map_err(|e| js_error("cursor", &e))?;
                    names.push(name.as_string().ok_or_else(|| {
                        Error::Store(format!("bad key in index queue: {name:?}"))
                    })?);
                    advance(&current)?;
                }
                Ok(names)
            })
            .await?;
        // IndexedDB orders strings by UTF-16 code unit; the trait promises byte order.
        names.sort_unstable();
        Ok(names)
    }
}
