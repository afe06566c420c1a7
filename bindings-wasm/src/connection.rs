//! What the store needs on top of the [`idb`] crate: one transaction run as a unit, opening the
//! database (schema version 2, with the upgrade from 1) within a time limit, refusing another
//! application's database without changing it, and errors as `store`.
//!
//! # Why the store's steps are synchronous
//! An IndexedDB transaction commits by itself as soon as control returns to the event loop with
//! none of its requests pending. Awaiting anything else inside it (a timer, `fetch`, the clock of
//! another realm, a promise of another transaction) lets it commit half-way: the following request
//! then throws `TransactionInactiveError`, or, worse with a careless store, the write lands in a
//! second transaction and the read-decide-write is no longer atomic. So inside [`transaction`]
//! the store awaits only that transaction's own requests (an `idb` request future resumes in a
//! microtask of the request's `success` event, while the transaction is still active), and the
//! decisions between them are the core's synchronous step closures; the clock is read, the lease
//! token drawn and the arguments converted before the transaction opens. A request issued after
//! the transaction went inactive fails, and [`transaction`] reports it as a `store` error: nothing
//! is written silently (the `inactive_transaction` test shows it).

use std::cell::RefCell;
use std::future::{Future, IntoFuture, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use deadletter::{Error, Result};
use idb::{
    Database, DatabaseEvent, Event, Factory, KeyPath, ObjectStore, ObjectStoreParams, Request,
    TransactionMode, event::VersionChangeEvent,
};
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DomException, IdbDatabase, IdbOpenDbRequest, IdbTransaction};

use crate::record::NOT_DELAYED;

type IdbResult<T> = std::result::Result<T, idb::Error>;

/// The one object store.
pub const STORE: &str = "messages";
/// Schema version: 1 had `claim` on `[queue, status, createdAt]`; 2 adds `id` and `dueAt` to it.
pub const VERSION: u32 = 2;
/// Index `[queue, status, createdAt, id, dueAt]`: claim order (`id` before `dueAt`, so that ties
/// of `createdAt` come out in id order whatever their `dueAt`); a key cursor over it sees when
/// each message is due without loading it.
pub const BY_CREATED: &str = "claim";
/// Index `[queue, status, leaseExpiresAt]`: only `processing` messages have a non-null
/// `leaseExpiresAt`, so only they are in it.
pub const BY_EXPIRY: &str = "expiry";
/// Index `[queue, status]`: `list` with a status (id order within a key).
pub const BY_STATUS: &str = "list";
/// Index `queue`: `list` without a status (id order within a key).
pub const BY_QUEUE: &str = "queue";
/// The indexes of schema version 2 and their key paths.
const INDEXES: [(&str, &[&str]); 4] = [
    (BY_CREATED, &["queue", "status", "createdAt", "id", "dueAt"]),
    (BY_EXPIRY, &["queue", "status", "leaseExpiresAt"]),
    (BY_STATUS, &["queue", "status"]),
    (BY_QUEUE, &["queue"]),
];
/// The key path of the `claim` index in schema version 1 (the others were as in version 2).
const CLAIM_V1: &[&str] = &["queue", "status", "createdAt"];
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

/// A `store` error from an [`idb::Error`] (its text names the `DOMException`).
#[allow(clippy::needless_pass_by_value)] // used as `map_err(store_error)`
pub fn store_error(error: idb::Error) -> Error {
    Error::Store(format!("IndexedDB: {error}"))
}

fn aborted(error: Option<DomException>) -> Error {
    match error {
        Some(dom) => js_error("transaction aborted", &dom.into()),
        None => Error::Store("IndexedDB transaction aborted".into()),
    }
}

/// Runs `body` inside one transaction on [`STORE`] and waits for it to commit.
///
/// `body` must await only requests of this transaction (see the module docs). On `Err` from
/// `body` the transaction is aborted, so nothing it wrote stays; if the commit itself fails (quota,
/// I/O, a request issued after the transaction went inactive) the result is a `store` error.
pub async fn transaction<T>(
    db: &Database,
    mode: TransactionMode,
    body: impl AsyncFnOnce(&ObjectStore) -> Result<T>,
) -> Result<T> {
    let tx = db.transaction(&[STORE], mode).map_err(store_error)?;
    let store = tx.object_store(STORE).map_err(store_error)?;
    let tx = IdbTransaction::from(tx);
    // Listen for the outcome before the first await: `body` may let the transaction finish. With
    // the promise's own functions, not Rust closures (as idb's `TransactionFuture` has), so that
    // no event that comes after this function returned (a second `error` bubbling up from a
    // failed request, the `abort` after it) can call a dropped closure.
    let done = JsFuture::from(Promise::new(&mut |resolve, reject| {
        tx.set_oncomplete(Some(&resolve));
        tx.set_onabort(Some(&reject));
    }));
    let outcome = body(&store).await;
    match outcome {
        // No explicit commit(): the transaction commits once its last request is done.
        Ok(value) => match done.await {
            Ok(_) => Ok(value),
            Err(_) => Err(aborted(tx.error())),
        },
        Err(err) => {
            // Already finished (committed by itself, or aborted) when abort() fails: fine.
            let _ = tx.abort();
            let _ = done.await;
            Err(err)
        }
    }
}

fn key_path(fields: &[&str]) -> KeyPath {
    match fields {
        [one] => KeyPath::new_single(one),
        many => KeyPath::new_array(many.iter().copied()),
    }
}

fn create_indexes(store: &ObjectStore, claim_only: bool) -> IdbResult<()> {
    let count = if claim_only { 1 } else { INDEXES.len() };
    for (name, fields) in &INDEXES[..count] {
        store.create_index(name, key_path(fields), None)?;
    }
    Ok(())
}

/// Why `store` is not the `messages` store of schema `version` (1 or 2), if it is not: the key
/// path `id` with a key generator, and every index with its key path. Reads names only.
fn foreign_shape(store: &ObjectStore, version: u32) -> Option<String> {
    if store.key_path().ok().flatten() != Some(KeyPath::new_single("id")) || !store.auto_increment()
    {
        return Some(format!(
            "its {STORE:?} store is not keyed by an auto-incremented id"
        ));
    }
    INDEXES.iter().find_map(|&(name, fields)| {
        let fields = if version == 1 && name == BY_CREATED {
            CLAIM_V1
        } else {
            fields
        };
        let found = store
            .index(name)
            .ok()
            .and_then(|index| index.key_path().ok().flatten());
        (found != Some(key_path(fields)))
            .then(|| format!("its {STORE:?} store has no index {name:?} on {fields:?}"))
    })
}

/// The refusal of a database that is not a deadletter one.
fn not_ours(name: &str, why: &str) -> Error {
    Error::Store(format!(
        "IndexedDB database {name:?} is not a deadletter database: {why}; nothing was changed"
    ))
}

/// Checks an opened database against schema version 2 without writing (the shape is read from a
/// read-only transaction that makes no request).
fn check_shape(db: &Database) -> Option<String> {
    if !db.store_names().iter().any(|store| store == STORE) {
        return Some(format!("it has no object store {STORE:?}"));
    }
    let tx = db.transaction(&[STORE], TransactionMode::ReadOnly);
    match tx.and_then(|tx| tx.object_store(STORE)) {
        Ok(store) => foreign_shape(&store, VERSION),
        Err(err) => Some(err.to_string()),
    }
}

/// Version 1 -> 2, in the upgrade transaction: recreate `claim` with `dueAt` and give every record
/// its `dueAt` (`retryAfter`, or `-Infinity` when null), as `record::to_record` does.
async fn upgrade_from_1(store: ObjectStore) -> IdbResult<()> {
    store.delete_index(BY_CREATED)?;
    create_indexes(&store, true)?;
    let mut cursor = store
        .open_cursor(None, None)?
        .await?
        .map(idb::Cursor::into_managed);
    while let Some(current) = cursor.as_mut() {
        let Some(record) = current.value()? else {
            break;
        };
        let retry_after = Reflect::get(&record, &"retryAfter".into()).unwrap_or(JsValue::NULL);
        let due_at = if retry_after.is_null() {
            JsValue::from_f64(NOT_DELAYED)
        } else {
            retry_after
        };
        let _ = Reflect::set(&record, &"dueAt".into(), &due_at);
        current.update(&record).await?;
        current.next(None).await?;
    }
    Ok(())
}

/// Why an upgrade was aborted (so that the open failed).
enum Refusal {
    /// The database at version 1 is another application's.
    NotOurs(String),
    /// Creating or upgrading the schema failed.
    Failed,
}

type Refused = Rc<RefCell<Option<Refusal>>>;

/// Creates or upgrades the schema; on failure, or when version 1 is not deadletter's, aborts the
/// upgrade, so the open fails and the database is left as it was.
fn upgrade(event: &VersionChangeEvent, refused: &Refused) {
    let refuse = |why: Refusal| *refused.borrow_mut() = Some(why);
    let (Ok(db), Ok(Some(tx))) = (event.database(), event.target().map(|r| r.transaction())) else {
        refuse(Refusal::Failed);
        return;
    };
    let foreign = match event.old_version() {
        Ok(1) => match tx.object_store(STORE) {
            Ok(store) => foreign_shape(&store, 1),
            Err(_) => Some(format!("it has version 1 and no object store {STORE:?}")),
        },
        _ => None,
    };
    if let Some(why) = foreign {
        refuse(Refusal::NotOurs(why));
        let _ = tx.abort();
        return;
    }
    let created = match event.old_version() {
        Ok(0) => {
            let mut params = ObjectStoreParams::new();
            params
                .key_path(Some(KeyPath::new_single("id")))
                .auto_increment(true);
            db.create_object_store(STORE, params)
                .and_then(|store| create_indexes(&store, false))
        }
        Ok(1) => tx.object_store(STORE).map(|store| {
            let (refused, tx) = (refused.clone(), store.transaction());
            wasm_bindgen_futures::spawn_local(async move {
                if upgrade_from_1(store).await.is_err() {
                    *refused.borrow_mut() = Some(Refusal::Failed);
                    let _ = tx.abort();
                }
            });
        }),
        _ => Err(idb::Error::NumberConversionError),
    };
    if created.is_err() {
        refuse(Refusal::Failed);
        let _ = tx.abort();
    }
}

/// Opens (creating at version [`VERSION`] when new, upgrading from 1) database `name` from
/// `factory`.
///
/// Another application's database of that name is refused with a `store` error and left as it
/// was: at version 1 without deadletter's store and indexes the upgrade is aborted; at version 2
/// it is checked after opening (without writing) and closed; above version 2 IndexedDB refuses
/// to open it at all.
///
/// An open that has not completed after [`OPEN_TIMEOUT_MS`] (blocked by another connection that
/// does not close, or queued behind another tab's upgrade or delete) fails with a `store` error
/// instead of hanging; should it go through later, that connection is closed at once.
pub async fn open(factory: &Factory, name: &str) -> Result<Database> {
    let mut req = factory.open(name, Some(VERSION)).map_err(store_error)?;
    let raw = IdbOpenDbRequest::from(req);
    req = raw.clone().into();
    let refused: Refused = Rc::default();
    let in_upgrade = refused.clone();
    req.on_upgrade_needed(move |event| upgrade(&event, &in_upgrade));
    let mut timer = JsValue::UNDEFINED;
    let expired = JsFuture::from(Promise::new(&mut |resolve, _| {
        timer = set_timeout(&resolve, OPEN_TIMEOUT_MS);
    }));
    let (mut opened, mut expired) = (pin!(req.into_future()), pin!(expired));
    let outcome = poll_fn(|cx| match opened.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(Some(result)),
        Poll::Pending => expired.as_mut().poll(cx).map(|_| None),
    })
    .await;
    clear_timeout(&timer);
    let refusal = refused.borrow_mut().take();
    let failure = raw.error().ok().flatten().map(|dom| dom.name());
    match outcome {
        Some(Ok(db)) => match check_shape(&db) {
            None => Ok(db),
            Some(why) => {
                db.close();
                Err(not_ours(name, &why))
            }
        },
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
            (None, _) => store_error(err),
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
