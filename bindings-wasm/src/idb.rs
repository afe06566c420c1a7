//! The few IndexedDB primitives the store needs, over `web-sys`: a request as a future, one
//! transaction run as a unit, and opening the database (schema version 1).
//!
//! # Why the store's steps are synchronous
//! An IndexedDB transaction commits by itself as soon as control returns to the event loop with
//! none of its requests pending. Awaiting anything else inside it (a timer, `fetch`, the clock of
//! another realm, a promise of another transaction) lets it commit half-way: the following request
//! then throws `TransactionInactiveError`, or, worse with a careless store, the write lands in a
//! second transaction and the read-decide-write is no longer atomic. So inside [`transaction`]
//! the store awaits only that transaction's own requests, and the decisions between them are the
//! core's synchronous step closures; the clock is read, the lease token drawn and the arguments
//! converted before the transaction opens. A request issued after the transaction went inactive
//! fails, and [`transaction`] reports it as a `store` error: nothing is written silently (the
//! `inactive_transaction` test shows it).

use std::cell::Cell;
use std::rc::Rc;

use deadletter::{Error, Result};
use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    DomException, IdbDatabase, IdbFactory, IdbIndexParameters, IdbObjectStore,
    IdbObjectStoreParameters, IdbOpenDbRequest, IdbRequest, IdbTransactionMode,
};

/// The one object store.
pub const STORE: &str = "messages";
/// Schema version.
pub const VERSION: u32 = 1;
/// Index `[queue, status, createdAt]`: claim order (ties in id order).
pub const BY_CREATED: &str = "claim";
/// Index `[queue, status, leaseExpiresAt]`: only `processing` messages have a non-null
/// `leaseExpiresAt`, so only they are in it.
pub const BY_EXPIRY: &str = "expiry";
/// Index `[queue, status]`: `list` with a status (id order within a key).
pub const BY_STATUS: &str = "list";
/// Index `queue`: `list` without a status (id order within a key).
pub const BY_QUEUE: &str = "queue";
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
        js_sys::Reflect::get(value, &JsValue::from_str(key))
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

fn dom_error(context: &str, error: Option<DomException>) -> Error {
    match error {
        Some(dom) => js_error(context, &dom.into()),
        None => Error::Store(format!("IndexedDB {context}: aborted")),
    }
}

/// Waits for `request` (issued in the current transaction) and returns its `result`. An `error`
/// event aborts the transaction (its default action is left alone).
pub async fn request(request: &IdbRequest) -> Result<JsValue> {
    let settled = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    let outcome = JsFuture::from(settled).await;
    request.set_onsuccess(None);
    request.set_onerror(None);
    match outcome {
        Ok(_) => request.result().map_err(|e| js_error("request", &e)),
        Err(_) => Err(dom_error("request", request.error().ok().flatten())),
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
    // Listen before the first await: the outcome of the transaction is always awaited below, so
    // these callbacks are never left dangling.
    let done = JsFuture::from(Promise::new(&mut |resolve, reject| {
        tx.set_oncomplete(Some(&resolve));
        tx.set_onabort(Some(&reject));
    }));
    let outcome = match tx.object_store(STORE) {
        Ok(store) => body(&store).await,
        Err(e) => Err(js_error("objectStore", &e)),
    };
    match outcome {
        Ok(value) => {
            // No explicit commit(): the transaction commits once its last request is done.
            match done.await {
                Ok(_) => Ok(value),
                Err(_) => Err(dom_error("transaction aborted", tx.error())),
            }
        }
        Err(err) => {
            // Already finished (committed by itself, or aborted) when abort() fails: fine.
            let _ = tx.abort();
            let _ = done.await;
            Err(err)
        }
    }
}

fn create_schema(db: &IdbDatabase) -> std::result::Result<(), JsValue> {
    let params = IdbObjectStoreParameters::new();
    params.set_key_path(&"id".into());
    params.set_auto_increment(true);
    let store = db.create_object_store_with_optional_parameters(STORE, &params)?;
    let plain = IdbIndexParameters::new();
    let compound = |fields: &[&str]| -> JsValue {
        fields
            .iter()
            .map(|f| JsValue::from_str(f))
            .collect::<Array>()
            .into()
    };
    store.create_index_with_str_sequence_and_optional_parameters(
        BY_CREATED,
        &compound(&["queue", "status", "createdAt"]),
        &plain,
    )?;
    store.create_index_with_str_sequence_and_optional_parameters(
        BY_EXPIRY,
        &compound(&["queue", "status", "leaseExpiresAt"]),
        &plain,
    )?;
    store.create_index_with_str_sequence_and_optional_parameters(
        BY_STATUS,
        &compound(&["queue", "status"]),
        &plain,
    )?;
    store.create_index_with_str_and_optional_parameters(BY_QUEUE, "queue", &plain)?;
    Ok(())
}

/// Opens (creating at version [`VERSION`] when new) database `name` from `factory`.
///
/// An open that has not completed after [`OPEN_TIMEOUT_MS`] (blocked by another connection that
/// does not close, or queued behind another tab's upgrade or delete) fails with a `store` error
/// instead of hanging; should it go through later, that connection is closed at once.
pub async fn open(factory: &IdbFactory, name: &str) -> Result<IdbDatabase> {
    let req: IdbOpenDbRequest = factory
        .open_with_u32(name, VERSION)
        .map_err(|e| js_error("open", &e))?;
    let upgrade_failed: Rc<Cell<bool>> = Rc::default();
    let on_upgrade = {
        let (req, failed) = (req.clone(), upgrade_failed.clone());
        Closure::<dyn FnMut()>::new(move || {
            let created = req
                .result()
                .and_then(|db| create_schema(&db.unchecked_into()));
            if created.is_err() {
                failed.set(true);
                if let Some(tx) = req.transaction() {
                    let _ = tx.abort();
                }
            }
        })
    };
    req.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
    let timed_out: Rc<Cell<bool>> = Rc::default();
    let mut timer = JsValue::UNDEFINED;
    let settled = Promise::new(&mut |resolve, reject| {
        req.set_onsuccess(Some(&resolve));
        req.set_onerror(Some(&reject));
        let timed_out = timed_out.clone();
        // once_into_js: freed when it runs; it may run after this function returned, so it must
        // not be a Closure that is dropped here.
        let expire = Closure::once_into_js(move || {
            timed_out.set(true);
            let _ = reject.call0(&JsValue::UNDEFINED);
        });
        timer = set_timeout(expire.unchecked_ref(), OPEN_TIMEOUT_MS);
    });
    let outcome = JsFuture::from(settled).await;
    clear_timeout(&timer);
    req.set_onupgradeneeded(None);
    drop(on_upgrade);
    match outcome {
        Ok(_) => {
            let db: IdbDatabase = req
                .result()
                .map_err(|e| js_error("open", &e))?
                .unchecked_into();
            Ok(db)
        }
        Err(_) if timed_out.get() => {
            // Should the open go through later, close that connection straight away.
            let late = req.clone();
            let close_late = Closure::once_into_js(move || {
                if let Ok(db) = late.result() {
                    db.unchecked_into::<IdbDatabase>().close();
                }
            });
            req.set_onsuccess(Some(close_late.unchecked_ref()));
            req.set_onerror(None);
            Err(Error::Store(format!(
                "IndexedDB open of {name:?} timed out after {OPEN_TIMEOUT_MS} ms: blocked by \
                 another connection (another tab?) that does not close, or queued behind its \
                 upgrade or delete"
            )))
        }
        Err(_) if upgrade_failed.get() => Err(Error::Store(format!(
            "IndexedDB open of {name:?}: creating the schema failed"
        ))),
        Err(_) => Err(dom_error("open", req.error().ok().flatten())),
    }
}
