//! [`IdbStore`]: the IndexedDB [`Store`], for browsers, workers and Node (with fake-indexeddb's
//! globals), over the [`idb`] crate.
//!
//! One object store, `messages` (keyPath `id`, autoIncrement: ids from 1, strictly increasing),
//! with four indexes: `claim` `[queue, status, createdAt, id, dueAt]` (`dueAt` is a storage-only
//! number: `retryAfter`, or `-Infinity` when null, so that a message without one is due at
//! every instant, negative ones included), `expiry` `[queue, status, leaseExpiresAt]` (only
//! `processing` messages have a lease, so only they are in it), `list` `[queue, status]` and
//! `queue`. Within one index key, entries come in primary-key (= id) order, which gives the
//! `created_at`-then-id claim order and id-ordered pages.
//!
//! Each state change is one `readwrite` transaction that awaits only its own requests: the core's
//! steps are synchronous closures, so read -> step -> write happens inside it (see [`crate::connection`]
//! for why nothing else may be awaited there). In particular `claim` expires the queue's overdue
//! leases and takes the first due message in the same transaction, so two tabs or workers can
//! never take the same message. It walks the `claim` index with a key cursor, so messages waiting
//! for their backoff are skipped by their key alone: only the one taken is loaded. No operation
//! scans the whole store or loads it into memory.

use std::cell::Cell;
use std::rc::Rc;

use deadletter::{
    Error, Id, ListQuery, Message, Millis, NewMessage, Result, Store, apply_step, machine,
};
use idb::{Database, Factory, KeyRange, ObjectStore, Query, TransactionMode};
use js_sys::Array;
use wasm_bindgen::JsValue;
use web_sys::IdbDatabase;

use crate::connection::{self, BY_CREATED, BY_EXPIRY, BY_QUEUE, BY_STATUS, store_error};
use crate::record::{from_record, to_record};

/// An open IndexedDB database holding messages.
///
/// The connection closes itself when another connection asks for a version change (a newer
/// schema in another tab); every later call then fails with a `store` error, as after
/// [`IdbStore::close`]. Dropping the store closes it too.
#[derive(Debug)]
pub struct IdbStore {
    db: Database,
    closed: Rc<Cell<bool>>,
}

#[allow(clippy::cast_precision_loss)] // ids and millisecond timestamps are far below 2^53
fn number(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn key(parts: &[JsValue]) -> JsValue {
    parts.iter().collect::<Array>().into()
}

/// The keys of an index from `[..prefix, -inf]` to `[..prefix, upper]`, both included (a longer
/// key under `[..prefix, upper]` is below it when its next part is).
fn under(prefix: &[JsValue], upper: &JsValue) -> Result<Query> {
    let lower = [prefix, &[JsValue::from_f64(f64::NEG_INFINITY)]].concat();
    let upper = [prefix, std::slice::from_ref(upper)].concat();
    KeyRange::bound(&key(&lower), &key(&upper), None, None)
        .map(Query::from)
        .map_err(store_error)
}

/// Where `dueAt` is in a key of the claim index.
const DUE_AT: u32 = 4;

async fn get_record(store: &ObjectStore, queue: &str, id: Id) -> Result<Option<Message>> {
    let found = store.get(number(id)).map_err(store_error)?.await;
    match found.map_err(store_error)? {
        Some(record) => Ok(Some(from_record(&record)?).filter(|m| m.queue == queue)),
        None => Ok(None),
    }
}

async fn put(store: &ObjectStore, message: &Message) -> Result<()> {
    let req = store
        .put(&to_record(message, true), None)
        .map_err(store_error)?;
    req.await.map(drop).map_err(store_error)
}

impl IdbStore {
    /// Opens (or creates, or upgrades) database `name` from `factory`. See [`connection::open`] for the
    /// blocked case.
    pub async fn open(factory: &Factory, name: &str) -> Result<Self> {
        let raw: IdbDatabase = connection::open(factory, name).await?.into();
        let mut db = Database::from(raw.clone());
        let closed: Rc<Cell<bool>> = Rc::default();
        let close = |raw: IdbDatabase, closed: Rc<Cell<bool>>| {
            move |_| {
                closed.set(true);
                raw.close();
            }
        };
        db.on_version_change(close(raw.clone(), closed.clone()));
        db.on_close(close(raw, closed.clone()));
        Ok(Self { db, closed })
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
    pub fn database(&self) -> Result<&Database> {
        if self.closed.get() {
            Err(Error::Store("the database is closed".into()))
        } else {
            Ok(&self.db)
        }
    }
}

impl Drop for IdbStore {
    fn drop(&mut self) {
        // A closed connection gets no more events, so the dropped callbacks are never called.
        self.close();
    }
}

impl Store for IdbStore {
    async fn insert(&self, message: NewMessage) -> Result<Message> {
        let record = to_record(&message.clone().with_id(0), false);
        let id = connection::transaction(
            self.database()?,
            TransactionMode::ReadWrite,
            async |store| {
                let key = store.add(&record, None).map_err(store_error)?.await;
                let key = key.map_err(store_error)?;
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
        connection::transaction(self.database()?, TransactionMode::ReadOnly, async |store| {
            get_record(store, queue, id).await
        })
        .await
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        connection::transaction(
            self.database()?,
            TransactionMode::ReadWrite,
            async |store| {
                let next = apply_step(get_record(store, queue, id).await?, queue, id, step)?;
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
        connection::transaction(
            self.database()?,
            TransactionMode::ReadWrite,
            async |store| {
                // 1. Overdue leases: [queue, 'processing', -inf ..= now] of the expiry index.
                let overdue = under(&[q.clone(), "processing".into()], &number(now))?;
                let index = store.index(BY_EXPIRY).map_err(store_error)?;
                let records = index.get_all(Some(overdue), None).map_err(store_error)?;
                let records = records.await.map_err(store_error)?;
                let mut expired = Vec::with_capacity(records.len());
                for record in records {
                    let message = from_record(&record)?;
                    if machine::lease_expired(&message, now) {
                        let next = expire(message)?;
                        put(store, &next).await?;
                        expired.push(next.id);
                    }
                }
                // 2. The first due pending message in [queue, 'pending', createdAt, dueAt] (then id)
                //    order. The key carries dueAt: the messages still waiting for their backoff are
                //    skipped without being loaded; only the one found is read, by its id.
                let all_pending = under(
                    &[q.clone(), "pending".into()],
                    &JsValue::from_f64(f64::INFINITY),
                )?;
                let index = store.index(BY_CREATED).map_err(store_error)?;
                let cursor = index.open_key_cursor(Some(all_pending), None);
                let cursor = cursor.map_err(store_error)?.await.map_err(store_error)?;
                let mut cursor = cursor.map(idb::KeyCursor::into_managed);
                while let Some(current) = cursor.as_mut() {
                    let (Some(index_key), Some(id)) = (
                        current.key().map_err(store_error)?,
                        current.primary_key().map_err(store_error)?,
                    ) else {
                        break;
                    };
                    let due_at = js_sys::Reflect::get(&index_key, &DUE_AT.into())
                        .ok()
                        .and_then(|d| d.as_f64());
                    #[allow(clippy::cast_precision_loss)]
                    if due_at.is_some_and(|d| d <= now as f64) {
                        let found = store.get(id).map_err(store_error)?.await;
                        if let Some(record) = found.map_err(store_error)? {
                            let message = from_record(&record)?;
                            if machine::is_due(&message, now) && !expired.contains(&message.id) {
                                let taken = take(message)?;
                                put(store, &taken).await?;
                                return Ok(Some(taken));
                            }
                        }
                    }
                    current.next(None).await.map_err(store_error)?;
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
        connection::transaction(self.database()?, TransactionMode::ReadOnly, async |store| {
            let only = KeyRange::only(&key).map_err(store_error)?;
            let cursor = store
                .index(index)
                .and_then(|i| i.open_cursor(Some(only.into()), None))
                .map_err(store_error)?;
            let cursor = cursor.await.map_err(store_error)?;
            let mut cursor = cursor.map(idb::Cursor::into_managed);
            let mut page = Vec::new();
            while let Some(current) = cursor.as_mut() {
                let (Some(id), Some(record)) = (
                    current.primary_key().map_err(store_error)?,
                    current.value().map_err(store_error)?,
                ) else {
                    break;
                };
                let id = id
                    .as_f64()
                    .ok_or_else(|| Error::Store("IndexedDB cursor without a key".into()))?;
                let moved = if id <= number(after).as_f64().unwrap_or(0.0) {
                    // Keyset pagination: jump to the first id above `after` under this key.
                    current
                        .next_primary_key(&key, &number(after.saturating_add(1)))
                        .await
                } else {
                    page.push(from_record(&record)?);
                    if page.len() == query.limit {
                        break;
                    }
                    current.next(None).await
                };
                moved.map_err(store_error)?;
            }
            Ok(page)
        })
        .await
    }
}
