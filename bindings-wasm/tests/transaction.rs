//! The store's transaction discipline, on the environment's IndexedDB (fake-indexeddb in Node via
//! `NODE_ARGS=--require=fake-indexeddb/auto`; the real one in Chromium with
//! `WASM_BINDGEN_USE_BROWSER=1`).
//!
//! Why it matters: an IndexedDB transaction commits as soon as none of its requests is pending
//! when control returns to the event loop. A transition that awaited anything foreign (a timer,
//! `fetch`, another transaction) between its read and its write would write outside the
//! transaction it read in. The store's steps are synchronous so that this cannot happen; these
//! tests show that if it did, the store would report a `store` error and write nothing.
#![cfg(target_arch = "wasm32")]

use deadletter::{Error, Message, NewMessage, Status, Store};
use deadletter_wasm::idb::{self, request};
use deadletter_wasm::idb_store::{IdbStore, KeyRanges};
use deadletter_wasm::record::to_record;
use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{IdbFactory, IdbTransactionMode};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &js_sys::Function, ms: i32) -> JsValue;
}

/// Something foreign to await: a timer.
async fn sleep(ms: i32) {
    let timer = Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    });
    JsFuture::from(timer).await.expect("timer");
}

fn global(name: &str) -> JsValue {
    Reflect::get(&js_sys::global(), &name.into()).expect("global")
}

async fn fresh(name: &str) -> IdbStore {
    let factory: IdbFactory = global("indexedDB").unchecked_into();
    let unique = format!("{name}-{}", js_sys::Math::random());
    IdbStore::open(
        &factory,
        global("IDBKeyRange").unchecked_into::<KeyRanges>(),
        &unique,
    )
    .await
    .expect("open")
}

fn message(id: i64) -> Message {
    NewMessage {
        queue: "q".into(),
        payload: "p".into(),
        max_retries: 3,
        now: 1_767_225_600_000,
    }
    .with_id(id)
}

#[wasm_bindgen_test]
async fn awaiting_something_foreign_inside_a_transaction_is_a_store_error_and_writes_nothing() {
    let store = fresh("inactive").await;
    let db = store.database().expect("open");
    let outcome = idb::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        sleep(20).await; // the transaction commits (empty) while we wait
        let req = objects
            .put(&to_record(&message(1), true))
            .map_err(|e| idb::js_error("put", &e))?;
        request(&req).await
    })
    .await;
    match outcome {
        Err(Error::Store(why)) => assert!(
            why.contains("TransactionInactiveError"),
            "unexpected store error: {why}"
        ),
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(store.get("q", 1).await, Ok(None), "nothing may be written");
}

#[wasm_bindgen_test]
async fn a_failing_step_after_a_write_rolls_the_write_back() {
    let store = fresh("rollback").await;
    let db = store.database().expect("open");
    let outcome: Result<(), Error> =
        idb::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
            let req = objects
                .put(&to_record(&message(1), true))
                .map_err(|e| idb::js_error("put", &e))?;
            request(&req).await?;
            Err(Error::Store("a later step failed".into()))
        })
        .await;
    assert_eq!(outcome, Err(Error::Store("a later step failed".into())));
    assert_eq!(
        store.get("q", 1).await,
        Ok(None),
        "the put must be rolled back"
    );
}

#[wasm_bindgen_test]
async fn the_same_write_without_a_foreign_await_commits() {
    let store = fresh("active").await;
    let db = store.database().expect("open");
    idb::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        let req = objects
            .put(&to_record(&message(1), true))
            .map_err(|e| idb::js_error("put", &e))?;
        request(&req).await
    })
    .await
    .expect("committed");
    let stored = store.get("q", 1).await.expect("get").expect("written");
    assert_eq!(stored.status, Status::Pending);
}

#[wasm_bindgen_test]
async fn claim_expires_overdue_leases_and_takes_in_created_order() {
    let store = fresh("claim").await;
    let now = 1_767_225_600_000;
    for (payload, at) in [("late", now + 10), ("early", now)] {
        let new = NewMessage {
            queue: "q".into(),
            payload: payload.into(),
            max_retries: 3,
            now: at,
        };
        store.insert(new).await.expect("insert");
    }
    let take = |m: Message| {
        Ok(Message {
            status: Status::Processing,
            lease_token: Some("t".into()),
            lease_expires_at: Some(now + 5),
            ..m
        })
    };
    let first = store
        .claim("q", now + 20, Ok, take)
        .await
        .expect("claim")
        .expect("a message");
    assert_eq!(first.payload, "early", "created_at order, not id order");
    let expired = |m: Message| {
        Ok(Message {
            status: Status::Dead,
            lease_token: None,
            lease_expires_at: None,
            ..m
        })
    };
    let second = store
        .claim("q", now + 20, expired, take)
        .await
        .expect("claim")
        .expect("a message");
    assert_eq!(second.payload, "late");
    let first_now = store.get("q", first.id).await.expect("get").expect("there");
    assert_eq!(
        first_now.status,
        Status::Dead,
        "its lease ran out at now + 5"
    );
    store.close();
    assert!(matches!(store.get("q", 1).await, Err(Error::Store(_))));
}
