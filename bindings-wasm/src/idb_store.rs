//! [`IdbStore`]: the IndexedDB [`Store`], for browsers, workers and Node (with an `IDBFactory`
//! such as fake-indexeddb's).
//!
//! One object store, `messages` (keyPath `id`, autoIncrement: ids from 1, strictly increasing),
//! with four indexes: `claim` `[queue, status, createdAt]`, `expiry`
//! `[queue, status, leaseExpiresAt]` (only `processing` messages have a lease, so only they are in
//! it), `list` `[queue, status]` and `queue`. Within one index key, entries come in primary-key
//! (= id) order, which gives the `created_at`-then-id claim order and id-ordered pages.
//!
//! Each state change is one `readwrite` transaction that awaits only its own requests: the core's
//! steps are synchronous closures, so read -> step -> write happens inside it (see [`crate::idb`]
//! for why nothing else may be awaited there). In particular `claim` expires the queue's overdue
//! leases and takes the first due message in the same transaction, so two tabs or workers can
//! never take the same message. No operation scans the whole store or loads it into memory.

use std::cell::Cell;
use std::rc::Rc;

use deadletter::{Error, Id, ListQuery, Message, Millis, NewMessage, Result, Store, machine};
use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    IdbCursor, IdbCursorWithValue, IdbDatabase, IdbFactory, IdbObjectStore, IdbTransactionMode,
};

use crate::idb::{self, BY_CREATED, BY_EXPIRY, BY_QUEUE, BY_STATUS, js_error, request};
use crate::record::{from_record, to_record};

/// An open IndexedDB database holding messages.
///
/// The connection closes itself when another connection asks for a version change (a newer
/// schema in another tab); every later call then fails with a `store` error, as after
/// [`IdbStore::close`].
#[derive(Debug)]
pub struct IdbStore {
    db: IdbDatabase,
    ranges: KeyRanges,
    closed: Rc<Cell<bool>>,
    _on_close: Closure<dyn FnMut()>,
}

#[allow(clippy::cast_precision_loss)] // ids and millisecond timestamps are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn key(parts: &[JsValue]) -> JsValue {
    parts.iter().collect::<Array>().into()
}

#[wasm_bindgen]
extern "C" {
    /// The `IDBKeyRange` class of the IndexedDB implementation in use.
    #[wasm_bindgen(js_name = IDBKeyRange)]
    #[derive(Debug, Clone)]
    pub type KeyRanges;
    #[wasm_bindgen(method, catch)]
    fn bound(
        this: &KeyRanges,
        lower: &JsValue,
        upper: &JsValue,
    ) -> std::result::Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn only(this: &KeyRanges, key: &JsValue) -> std::result::Result<JsValue, JsValue>;
}

impl KeyRanges {
    /// `IDBKeyRange.bound(lower, upper)`, both included.
    fn between(&self, lower: &JsValue, upper: &JsValue) -> Result<JsValue> {
        self.bound(lower, upper)
            .map_err(|e| js_error("IDBKeyRange.bound", &e))
    }

    /// `IDBKeyRange.only(key)`.
    fn exactly(&self, key: &JsValue) -> Result<JsValue> {
        self.only(key).map_err(|e| js_error("IDBKeyRange.only", &e))
    }
}

async fn get_record(store: &IdbObjectStore, queue: &str, id: Id) -> Result<Option<Message>> {
    let req = store.get(&number(id)).map_err(|e| js_error("get", &e))?;
    let found = request(&req).await?;
    if found.is_undefined() {
        return Ok(None);
    }
    let message = from_record(&found)?;
    Ok(Some(message).filter(|m| m.queue == queue))
}

async fn put(store: &IdbObjectStore, message: &Message) -> Result<()> {
    let req = store
        .put(&to_record(message, true))
        .map_err(|e| js_error("put", &e))?;
    request(&req).await.map(drop)
}

impl IdbStore {
    /// Opens (or creates) database `name` from `factory`, building key ranges with `key_ranges`
    /// (the `IDBKeyRange` class of the same implementation: a range of one implementation is an
    /// invalid key to another). See [`idb::open`] for the blocked case.
    pub async fn open(factory: &IdbFactory, key_ranges: KeyRanges, name: &str) -> Result<Self> {
        let db = idb::open(factory, name).await?;
        let closed: Rc<Cell<bool>> = Rc::default();
        let on_close = {
            let (db, closed) = (db.clone(), closed.clone());
            Closure::<dyn FnMut()>::new(move || {
                closed.set(true);
                db.close();
            })
        };
        db.set_onversionchange(Some(on_close.as_ref().unchecked_ref()));
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        Ok(Self {
            db,
            ranges: key_ranges,
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
}

impl Drop for IdbStore {
    fn drop(&mut self) {
        self.db.set_onversionchange(None);
        self.db.set_onclose(None);
    }
}

impl Store for IdbStore {
    async fn insert(&self, message: NewMessage) -> Result<Message> {
        let record = to_record(&message.clone().with_id(0), false);
        let id = idb::transaction(
            self.database()?,
            IdbTransactionMode::Readwrite,
            async |store| {
                let req = store.add(&record).map_err(|e| js_error("add", &e))?;
                let key = request(&req).await?;
                key.as_f64()
                    .filter(|k| k.fract() == 0.0 && *k >= 1.0 && *k <= 9_007_199_254_740_991.0)
                    // A whole number within 1..2^53: the cast is exact.
                    .map(|k| {
                        #[allow(clippy::cast_possible_truncation)]
                        let id = k as i64;
                        id
                    })
                    .ok_or_else(|| Error::Store(format!("IndexedDB assigned a bad key {key:?}")))
            },
        )
        .await?;
        Ok(message.with_id(id))
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        idb::transaction(
            self.database()?,
            IdbTransactionMode::Readonly,
            async |store| get_record(store, queue, id).await,
        )
        .await
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        idb::transaction(
            self.database()?,
            IdbTransactionMode::Readwrite,
            async |store| {
                let current =
                    get_record(store, queue, id)
                        .await?
                        .ok_or_else(|| Error::NotFound {
                            queue: queue.to_owned(),
                            id,
                        })?;
                let next = step(current)?;
                put(store, &next).await?;
                Ok(next)
            },
        )
        .await
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        expire: impl Fn(Message) -> Result<Message>,
        take: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Option<Message>> {
        let q = JsValue::from_str(queue);
        let index = |store: &IdbObjectStore, name: &str| {
            store.index(name).map_err(|e| js_error("index", &e))
        };
        idb::transaction(
            self.database()?,
            IdbTransactionMode::Readwrite,
            async |store| {
                // 1. Overdue leases: [queue, 'processing', -inf ..= now] of the expiry index.
                let processing = JsValue::from_str("processing");
                let overdue = self.ranges.between(
                    &key(&[
                        q.clone(),
                        processing.clone(),
                        JsValue::from_f64(f64::NEG_INFINITY),
                    ]),
                    &key(&[q.clone(), processing, number(now)]),
                )?;
                let req = index(store, BY_EXPIRY)?
                    .get_all_with_key(&overdue)
                    .map_err(|e| js_error("getAll", &e))?;
                let records: Array = request(&req).await?.unchecked_into();
                let mut expired = Vec::with_capacity(records.length() as usize);
                for record in records.iter() {
                    let message = from_record(&record)?;
                    if machine::lease_expired(&message, now) {
                        let next = expire(message)?;
                        put(store, &next).await?;
                        expired.push(next.id);
                    }
                }
                // 2. The first due pending message, in [queue, 'pending', createdAt] (then id) order,
                //    stepping over the ones still waiting for their backoff.
                let pending = JsValue::from_str("pending");
                let all_pending = self.ranges.between(
                    &key(&[
                        q.clone(),
                        pending.clone(),
                        JsValue::from_f64(f64::NEG_INFINITY),
                    ]),
                    &key(&[q.clone(), pending, JsValue::from_f64(f64::INFINITY)]),
                )?;
                let req = index(store, BY_CREATED)?
                    .open_cursor_with_range(&all_pending)
                    .map_err(|e| js_error("openCursor", &e))?;
                let mut current = request(&req).await?;
                while !current.is_null() {
                    let cursor: IdbCursorWithValue = current.unchecked_into();
                    let message =
                        from_record(&cursor.value().map_err(|e| js_error("cursor", &e))?)?;
                    if machine::is_due(&message, now) && !expired.contains(&message.id) {
                        let taken = take(message)?;
                        put(store, &taken).await?;
                        return Ok(Some(taken));
                    }
                    cursor.continue_().map_err(|e| js_error("continue", &e))?;
                    current = request(&req).await?;
                }
                Ok(None)
            },
        )
        .await
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let q = JsValue::from_str(query.queue);
        let (index, key) = match query.status {
            Some(status) => (BY_STATUS, key(&[q, JsValue::from_str(status.as_str())])),
            None => (BY_QUEUE, q),
        };
        let after = query.after_id.unwrap_or(0);
        idb::transaction(
            self.database()?,
            IdbTransactionMode::Readonly,
            async |store| {
                let only = self.ranges.exactly(&key)?;
                let req = store
                    .index(index)
                    .and_then(|i| i.open_cursor_with_range(&only))
                    .map_err(|e| js_error("openCursor", &e))?;
                let mut page = Vec::new();
                let mut current = request(&req).await?;
                while !current.is_null() && page.len() < query.limit {
                    let cursor: IdbCursorWithValue = current.unchecked_into();
                    let id = cursor
                        .primary_key()
                        .ok()
                        .and_then(|k| k.as_f64())
                        .ok_or_else(|| Error::Store("IndexedDB cursor without a key".into()))?;
                    let moved = if id <= number(after).as_f64().unwrap_or(0.0) {
                        // Keyset pagination: jump to the first id above `after` under this key.
                        cursor
                            .unchecked_ref::<IdbCursor>()
                            .continue_primary_key(&key, &number(after.saturating_add(1)))
                    } else {
                        page.push(from_record(
                            &cursor.value().map_err(|e| js_error("cursor", &e))?,
                        )?);
                        if page.len() == query.limit {
                            break;
                        }
                        cursor.continue_()
                    };
                    moved.map_err(|e| js_error("continue", &e))?;
                    current = request(&req).await?;
                }
                Ok(page)
            },
        )
        .await
    }
}
