//! What the store needs of IndexedDB besides its requests ([`crate::request`]): one transaction
//! run as a unit, opening the database (schema version 4, with the upgrades from 1, 2 and 3)
//! within a time limit, refusing another application's database without changing it, and errors
//! as `store`.
//!
//! # Why the store's steps are synchronous
//! An IndexedDB transaction commits by itself as soon as control returns to the event loop with
//! none of its requests pending. Awaiting anything else inside it (a timer, `fetch`, the clock of
//! another realm, a promise of another transaction) lets it commit half-way: the following request
//! then throws `TransactionInactiveError`, or, worse with a careless store, the write lands in a
//! second transaction and the read-decide-write is no longer atomic. So inside [`transaction`]
//! the store awaits only that transaction's own requests (a [`crate::request::Request`] resumes in
//! a microtask of the request's `success` event, while the transaction is still active), and the
//! decisions between them are the core's synchronous step closures; the clock is read, the lease
//! token drawn and the arguments converted before the transaction opens. A request issued after
//! the transaction went inactive fails, and [`transaction`] reports it as a `store` error: nothing
//! is written silently (the `inactive_transaction` test shows it).

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use deadletter::{Error, Result};
use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    IdbDatabase, IdbFactory, IdbIndexParameters, IdbObjectStore, IdbObjectStoreParameters,
    IdbOpenDbRequest, IdbTransactionMode,
};

use crate::record::{from_record, to_record, upgrade_record};
use crate::request::{finished, open_request, request};

/// The one object store.
pub const STORE: &str = "messages";
/// Schema version: 1 had `claim` on `[queue, status, createdAt]`; 2 adds `id` and `dueAt` to it;
/// 3 adds the failure history, dead-letter and idempotency fields to every record, the indexes
/// `idempotency`, `delayed` and `dead`, and `id` and `updatedAt` to `list`; 4 puts `claim` on
/// `[queue, lane, at, id]` (records get `lane` and `at` in place of `dueAt`).
pub const VERSION: u32 = 4;
/// Index `[queue, lane, at, id]` (`lane` and `at`: see [`crate::record::to_record`]): lane
/// [`TIMED`](crate::record::TIMED) holds the `processing` messages by the end of their lease and
/// the delayed `pending` ones by their `retryAfter`, so its part up to `now` is exactly what a
/// claim must act on (usually nothing); lane [`READY`](crate::record::READY) holds the due
/// `pending` messages in claim order (`createdAt`, then id). Finished messages are not in it.
pub const BY_CLAIM: &str = "claim";
/// Index `[queue, status, leaseExpiresAt]`: only `processing` messages have a non-null
/// `leaseExpiresAt`, so only they are in it.
pub const BY_EXPIRY: &str = "expiry";
/// Index `[queue, status, id, updatedAt]`: `list` with a status and the counts by status; its key
/// cursor walks one status in id order and shows `updatedAt` (what `purge` selects on) without
/// loading the message.
pub const BY_STATUS: &str = "list";
/// Index `queue`: `list` without a status (id order within a key), and the queue names.
pub const BY_QUEUE: &str = "queue";
/// Unique index `[queue, idempotencyKey]`: at most one message of a queue carries a key (a
/// message without one, null, is not in it).
pub const BY_KEY: &str = "idempotency";
/// Index `[queue, status, retryAfter]`: the messages waiting for their backoff or enqueue delay
/// (`retryAfter` is null otherwise), by when they are due: `stats().delayed` and `nextDueAt`.
pub const BY_DELAY: &str = "delayed";
/// Index `[queue, status, deadAt]`: the dead messages (`deadAt` is null otherwise) by when they
/// died: `stats().oldestDeadAgeMs`.
pub const BY_DEATH: &str = "dead";
/// How long `open` waits, e.g. while other connections block it, in milliseconds.
pub const OPEN_TIMEOUT_MS: i32 = 5_000;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &Function, ms: i32) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(timer: &JsValue);
}

/// A `store` error from a thrown JavaScript value (a `DOMException` such as
/// `TransactionInactiveError`, `QuotaExceededError`, `InvalidStateError`, or any `Error`).
pub fn js_error(context: &str, value: &JsValue) -> Error {
    // Read `name`/`message` structurally: a DOMException of fake-indexeddb or of another realm
    // is not `instanceof` this realm's class.
    let text = |key: &str| {
        Reflect::get(value, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_string())
    };
    match (value.is_object(), text("name"), text("message")) {
        (true, Some(name), Some(message)) => {
            Error::Store(format!("IndexedDB {context}: {name}: {message}"))
        }
        _ => Error::Store(format!("IndexedDB {context}: {value:?}")),
    }
}

/// Runs `body` inside one transaction on [`STORE`] and waits for it to commit.
///
/// `body` must await only requests of this transaction (see the module docs). On `Err` from
/// `body` the transaction is aborted, so nothing it wrote stays; if the commit itself fails (quota,
/// I/O, a request issued after the transaction went inactive) the result is a `store` error.
pub async fn transaction<T>(
    db: &IdbDatabase,
    mode: IdbTransactionMode,
    body: impl AsyncFnOnce(&IdbObjectStore) -> Result<T>,
) -> Result<T> {
    let tx = db
        .transaction_with_str_and_mode(STORE, mode)
        .map_err(|e| js_error("transaction", &e))?;
    let store = tx
        .object_store(STORE)
        .map_err(|e| js_error("transaction", &e))?;
    // Watch for the outcome before the first await: `body` may let the transaction finish.
    let done = finished(&tx);
    let outcome = body(&store).await;
    match outcome {
        // No explicit commit(): the transaction commits once its last request is done.
        Ok(value) => done.await.map(|()| value),
        Err(err) => {
            // Already finished (committed by itself, or aborted) when abort() fails: fine.
            let _ = tx.abort();
            let _ = done.await;
            Err(err)
        }
    }
}

/// The key path of every index of schema `version` (1 to [`VERSION`]), by name: what a database
/// of ours at that version has, to tell another application's database from ours.
fn shape(version: u32) -> Vec<(&'static str, &'static [&'static str])> {
    let mut indexes: Vec<(&'static str, &'static [&'static str])> = vec![
        (BY_EXPIRY, &["queue", "status", "leaseExpiresAt"]),
        (BY_QUEUE, &["queue"]),
    ];
    indexes.push(match version {
        1 => (BY_CLAIM, &["queue", "status", "createdAt"]),
        2 | 3 => (BY_CLAIM, &["queue", "status", "createdAt", "id", "dueAt"]),
        _ => (BY_CLAIM, &["queue", "lane", "at", "id"]),
    });
    if version < 3 {
        indexes.push((BY_STATUS, &["queue", "status"]));
    } else {
        indexes.extend([
            (BY_STATUS, &["queue", "status", "id", "updatedAt"][..]),
            (BY_KEY, &["queue", "idempotencyKey"]),
            (BY_DELAY, &["queue", "status", "retryAfter"]),
            (BY_DEATH, &["queue", "status", "deadAt"]),
        ]);
    }
    indexes
}

/// A key path as the list of its fields (a single one for a string key path).
fn fields_of(path: &JsValue) -> Vec<String> {
    match path.as_string() {
        Some(one) => vec![one],
        None if Array::is_array(path) => Array::from(path)
            .iter()
            .map(|f| f.as_string().unwrap_or_default())
            .collect(),
        None => Vec::new(),
    }
}

/// Why `store` is not the `messages` store of schema `version`, if it is not: the key path `id`
/// with a key generator, and every index of [`shape`] with its key path. Reads names only.
fn foreign_shape(store: &IdbObjectStore, version: u32) -> Option<String> {
    let key = store.key_path().map(|k| fields_of(&k)).unwrap_or_default();
    if key != ["id"] || !store.auto_increment() {
        return Some(format!(
            "its {STORE:?} store is not keyed by an auto-incremented id"
        ));
    }
    shape(version).into_iter().find_map(|(name, fields)| {
        let found = store
            .index(name)
            .ok()
            .and_then(|index| index.key_path().ok())
            .map(|k| fields_of(&k));
        (found.as_deref() != Some(&fields.iter().map(|f| (*f).to_owned()).collect::<Vec<_>>()[..]))
            .then(|| format!("its {STORE:?} store has no index {name:?} on {fields:?}"))
    })
}

/// The refusal of a database that is not a deadletter one.
fn not_ours(name: &str, why: &str) -> Error {
    Error::Store(format!(
        "IndexedDB database {name:?} is not a deadletter database: {why}; nothing was changed"
    ))
}

/// Checks an opened database against schema [`VERSION`] without writing (the shape is read from
/// a read-only transaction that makes no request).
fn check_shape(db: &IdbDatabase) -> Option<String> {
    if !db.object_store_names().contains(STORE) {
        return Some(format!("it has no object store {STORE:?}"));
    }
    let store = db
        .transaction_with_str(STORE)
        .and_then(|tx| tx.object_store(STORE));
    match store {
        Ok(store) => foreign_shape(&store, VERSION),
        Err(err) => Some(format!("{err:?}")),
    }
}

fn index(store: &IdbObjectStore, name: &str, fields: &[&str], unique: bool) -> Result<()> {
    let path: JsValue = match fields {
        [one] => JsValue::from_str(one),
        many => many
            .iter()
            .map(|f| JsValue::from_str(f))
            .collect::<Array>()
            .into(),
    };
    let params = IdbIndexParameters::new();
    params.set_unique(unique);
    store
        .create_index_with_str_sequence_and_optional_parameters(name, &path, &params)
        .map(drop)
        .map_err(|e| js_error("createIndex", &e))
}

/// The indexes a store of version `from` lacks (or has with an older key path) for [`VERSION`].
fn create_indexes(store: &IdbObjectStore, from: u32) -> Result<()> {
    if from == 0 {
        index(
            store,
            BY_EXPIRY,
            &["queue", "status", "leaseExpiresAt"],
            false,
        )?;
        index(store, BY_QUEUE, &["queue"], false)?;
    } else {
        delete_index(store, BY_CLAIM)?;
    }
    index(store, BY_CLAIM, &["queue", "lane", "at", "id"], false)?;
    if from < 3 {
        if from > 0 {
            delete_index(store, BY_STATUS)?;
        }
        index(
            store,
            BY_STATUS,
            &["queue", "status", "id", "updatedAt"],
            false,
        )?;
        index(store, BY_KEY, &["queue", "idempotencyKey"], true)?;
        index(store, BY_DELAY, &["queue", "status", "retryAfter"], false)?;
        index(store, BY_DEATH, &["queue", "status", "deadAt"], false)?;
    }
    Ok(())
}

fn delete_index(store: &IdbObjectStore, name: &str) -> Result<()> {
    store
        .delete_index(name)
        .map_err(|e| js_error("deleteIndex", &e))
}

/// Version 1, 2 or 3 -> 4, in the upgrade transaction: every record is rewritten as this version
/// writes it (before 3, first given the fields of version 3: see [`upgrade_record`]), and so gets
/// its place in the new indexes.
async fn upgrade_records(store: IdbObjectStore, from: u32) -> Result<()> {
    let mut cursor = request(store.open_cursor(), "openCursor")?;
    while let Ok(current) = (&mut cursor)
        .await?
        .dyn_into::<web_sys::IdbCursorWithValue>()
    {
        let record = current.value().map_err(|e| js_error("cursor", &e))?;
        if from < 3 {
            upgrade_record(&record)?;
        }
        let record = to_record(&from_record(&record)?, true);
        request(current.update(&record), "update")?.await?;
        current.continue_().map_err(|e| js_error("cursor", &e))?;
    }
    Ok(())
}

/// Why an upgrade was aborted (so that the open failed).
enum Refusal {
    /// The database at an older version of ours is another application's.
    NotOurs(String),
    /// Creating or upgrading the schema failed.
    Failed,
}

type Refused = Rc<RefCell<Option<Refusal>>>;

/// Creates or upgrades the schema; on failure, or when an older database is not deadletter's,
/// aborts the upgrade, so the open fails and the database is left as it was.
fn upgrade(open: &IdbOpenDbRequest, old_version: f64, refused: &Refused) {
    let refuse = |why: Refusal| *refused.borrow_mut() = Some(why);
    let (Ok(db), Some(tx)) = (open.result(), open.transaction()) else {
        refuse(Refusal::Failed);
        return;
    };
    let db: IdbDatabase = db.unchecked_into();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let from = old_version as u32;
    if (1..VERSION).contains(&from) {
        let foreign = match tx.object_store(STORE) {
            Ok(store) => foreign_shape(&store, from),
            Err(_) => Some(format!(
                "it has version {from} and no object store {STORE:?}"
            )),
        };
        if let Some(why) = foreign {
            refuse(Refusal::NotOurs(why));
            let _ = tx.abort();
            return;
        }
    }
    let created = match from {
        0 => {
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&JsValue::from_str("id"));
            params.set_auto_increment(true);
            db.create_object_store_with_optional_parameters(STORE, &params)
                .map_err(|e| js_error("createObjectStore", &e))
                .and_then(|store| create_indexes(&store, 0))
        }
        1..VERSION => tx
            .object_store(STORE)
            .map_err(|e| js_error("upgrade", &e))
            .and_then(|store| {
                create_indexes(&store, from)?;
                let (refused, tx) = (refused.clone(), tx.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    if upgrade_records(store, from).await.is_err() {
                        *refused.borrow_mut() = Some(Refusal::Failed);
                        let _ = tx.abort();
                    }
                });
                Ok(())
            }),
        _ => Err(Error::Store("unknown schema version".into())),
    };
    if created.is_err() {
        refuse(Refusal::Failed);
        let _ = tx.abort();
    }
}

/// Opens (creating at version [`VERSION`] when new, upgrading from 1, 2 or 3) database `name` from
/// `factory`.
///
/// Another application's database of that name is refused with a `store` error and left as it
/// was: at an older version without deadletter's store and indexes the upgrade is aborted; at
/// version [`VERSION`] it is checked after opening (without writing) and closed; above it
/// IndexedDB refuses to open it at all.
///
/// An open that has not completed after [`OPEN_TIMEOUT_MS`] (blocked by another connection that
/// does not close, or queued behind another tab's upgrade or delete) fails with a `store` error
/// instead of hanging; should it go through later, that connection is closed at once.
pub async fn open(factory: &IdbFactory, name: &str) -> Result<IdbDatabase> {
    let raw = factory
        .open_with_u32(name, VERSION)
        .map_err(|e| js_error("open", &e))?;
    let refused: Refused = Rc::default();
    let in_upgrade = refused.clone();
    // Owned by JavaScript (collected with the request): an open that goes through after the time
    // limit still creates or upgrades the schema, then is closed.
    let on_upgrade = {
        let raw = raw.clone();
        Closure::<dyn FnMut(_)>::new(move |event: web_sys::IdbVersionChangeEvent| {
            upgrade(&raw, event.old_version(), &in_upgrade);
        })
        .into_js_value()
    };
    raw.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
    let opening = open_request(raw.clone());
    let mut timer = JsValue::UNDEFINED;
    let expired = JsFuture::from(Promise::new(&mut |resolve, _| {
        timer = set_timeout(&resolve, OPEN_TIMEOUT_MS);
    }));
    let (mut opened, mut expired) = (pin!(opening), pin!(expired));
    let outcome = poll_fn(|cx| match opened.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(Some(result)),
        Poll::Pending => expired.as_mut().poll(cx).map(|_| None),
    })
    .await;
    clear_timeout(&timer);
    let refusal = refused.borrow_mut().take();
    let failure = raw.error().ok().flatten().map(|dom| dom.name());
    match outcome {
        Some(Ok(db)) => {
            let db: IdbDatabase = db.unchecked_into();
            match check_shape(&db) {
                None => Ok(db),
                Some(why) => {
                    db.close();
                    Err(not_ours(name, &why))
                }
            }
        }
        Some(Err(err)) => Err(match (refusal, failure.as_deref()) {
            (Some(Refusal::NotOurs(why)), _) => not_ours(name, &why),
            (Some(Refusal::Failed), _) => Error::Store(format!(
                "IndexedDB open of {name:?}: creating or upgrading the schema failed"
            )),
            (None, Some("VersionError")) => Error::Store(format!(
                "IndexedDB database {name:?} has a version above {VERSION}, deadletter's schema \
                 version: it is not a deadletter database, or a newer deadletter wrote it; \
                 nothing was changed"
            )),
            (None, _) => err,
        }),
        None => {
            // Should the open go through later, close that connection straight away.
            let late = raw.clone();
            let close_late = Closure::once_into_js(move || {
                if let Ok(db) = late.result() {
                    db.unchecked_into::<IdbDatabase>().close();
                }
            });
            raw.set_onsuccess(Some(close_late.unchecked_ref()));
            Err(Error::Store(format!(
                "IndexedDB open of {name:?} timed out after {OPEN_TIMEOUT_MS} ms: blocked by \
                 another connection (another tab?) that does not close, or queued behind its \
                 upgrade or delete"
            )))
        }
    }
}
