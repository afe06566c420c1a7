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
use deadletter_wasm::connection;
use deadletter_wasm::idb_store::IdbStore;
use deadletter_wasm::record::{READY, TIMED, to_record};
use deadletter_wasm::request::{finished, open_request, request};
use js_sys::{Array, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{
    IdbDatabase, IdbFactory, IdbObjectStore, IdbObjectStoreParameters, IdbTransactionMode,
};

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

fn unique(name: &str) -> String {
    format!("{name}-{}", js_sys::Math::random())
}

/// The environment's `indexedDB`.
fn factory() -> IdbFactory {
    Reflect::get(&js_sys::global(), &"indexedDB".into())
        .expect("indexedDB")
        .unchecked_into()
}

async fn fresh(name: &str) -> IdbStore {
    IdbStore::open(&factory(), &unique(name))
        .await
        .expect("open")
}

fn new_message(payload: &str, now: i64) -> NewMessage {
    NewMessage {
        queue: "q".into(),
        payload: payload.into(),
        max_retries: 3,
        idempotency_key: None,
        retry_after: None,
        now,
    }
}

fn message(id: i64) -> Message {
    new_message("p", 1_767_225_600_000).with_id(id)
}

/// The `lane` and `at` of a stored record (its place in the claim index).
fn lane_and_at(record: &JsValue) -> [Option<f64>; 2] {
    ["lane", "at"].map(|k| {
        Reflect::get(record, &k.into())
            .ok()
            .and_then(|v| v.as_f64())
    })
}

/// Inserts one message; returns it as stored.
async fn insert(store: &IdbStore, new: NewMessage) -> Message {
    let mut inserted = store.insert(vec![new]).await.expect("insert");
    inserted.pop().expect("one message")
}

/// Claims up to one message at `now` with the given steps; returns the one taken.
async fn claim_one(
    store: &IdbStore,
    now: i64,
    expire: impl FnMut(Message) -> Result<Message, Error>,
    take: impl FnMut(Message) -> Result<Message, Error>,
) -> Option<Message> {
    let claimed = store.claim("q", now, 1, expire, take).await.expect("claim");
    claimed.taken.into_iter().next()
}

/// Puts message `id` inside the caller's transaction.
async fn put_message(objects: &IdbObjectStore, id: i64) -> Result<(), Error> {
    let record = to_record(&message(id), true);
    request(objects.put(&record), "put")?.await.map(drop)
}

#[wasm_bindgen_test]
async fn awaiting_something_foreign_inside_a_transaction_is_a_store_error_and_writes_nothing() {
    let store = fresh("inactive").await;
    let db = store.database().expect("open");
    let outcome = connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        sleep(20).await; // the transaction commits (empty) while we wait
        put_message(objects, 1).await
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
        connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
            put_message(objects, 1).await?;
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
    connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        put_message(objects, 1).await
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
        insert(&store, new_message(payload, at)).await;
    }
    let take = |m: Message| {
        Ok(Message {
            status: Status::Processing,
            lease_token: Some("t".into()),
            lease_expires_at: Some(now + 5),
            ..m
        })
    };
    let first = claim_one(&store, now + 20, Ok, take)
        .await
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
    let second = claim_one(&store, now + 20, expired, take)
        .await
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

#[wasm_bindgen_test]
async fn claim_skips_delayed_messages_by_their_key() {
    let store = fresh("delayed").await;
    let now = 1_767_225_600_000;
    for (payload, retry_after) in [
        ("delayed", Some(now + 1)),
        ("due", Some(now)),
        ("new", None),
    ] {
        let inserted = insert(&store, new_message(payload, now - 10)).await;
        store
            .update("q", inserted.id, |m| Ok(Message { retry_after, ..m }))
            .await
            .expect("update");
    }
    let take = |m: Message| {
        Ok(Message {
            status: Status::Processing,
            ..m
        })
    };
    let mut taken = Vec::new();
    while let Some(m) = claim_one(&store, now, Ok, take).await {
        taken.push(m.payload);
    }
    assert_eq!(taken, ["due", "new"], "the delayed one waits");
}

/// A message without `retryAfter` is due at every instant, also before 1970: it is in the ready
/// lane of the claim index, by its (negative) `createdAt`.
#[wasm_bindgen_test]
async fn claim_takes_messages_created_before_1970() {
    let store = fresh("negative").await;
    for now in [-1_000, -315_619_200_000] {
        let inserted = insert(&store, new_message(&format!("at {now}"), now)).await;
        #[allow(clippy::cast_precision_loss)]
        let id = JsValue::from_f64(inserted.id as f64);
        let db = store.database().expect("open");
        let record = connection::transaction(db, IdbTransactionMode::Readonly, async |objects| {
            request(objects.get(&id), "get")?.await
        })
        .await
        .expect("read");
        #[allow(clippy::cast_precision_loss)]
        let expected = [Some(READY), Some(now as f64)];
        assert_eq!(lane_and_at(&record), expected);
        let take = |m: Message| {
            Ok(Message {
                status: Status::Processing,
                ..m
            })
        };
        let taken = claim_one(&store, now, Ok, take).await;
        assert_eq!(taken.map(|m| m.id), Some(inserted.id), "claimable at {now}");
    }
}

/// A new database `name` of schema version 1, as 0.1.0's first release created it.
async fn open_version_1(name: &str) -> IdbDatabase {
    let open = factory().open_with_u32(name, 1).expect("open v1");
    let upgrade = {
        let open = open.clone();
        Closure::once_into_js(move || {
            let db: IdbDatabase = open.result().expect("db").unchecked_into();
            let params = IdbObjectStoreParameters::new();
            params.set_key_path(&"id".into());
            params.set_auto_increment(true);
            let store = db
                .create_object_store_with_optional_parameters("messages", &params)
                .expect("store");
            let path = |fields: &[&str]| -> JsValue {
                fields
                    .iter()
                    .map(|f| JsValue::from_str(f))
                    .collect::<Array>()
                    .into()
            };
            for (name, path) in [
                ("claim", path(&["queue", "status", "createdAt"])),
                ("expiry", path(&["queue", "status", "leaseExpiresAt"])),
                ("list", path(&["queue", "status"])),
                ("queue", "queue".into()),
            ] {
                store
                    .create_index_with_str_sequence(name, &path)
                    .expect("index");
            }
        })
    };
    open.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
    open_request(open)
        .await
        .expect("v1 opened")
        .unchecked_into()
}

/// A database of schema version 1 (`claim` on `[queue, status, createdAt]`, records without
/// `dueAt`) is upgraded on open: the pending records get their lane of the claim index and are
/// claimable, in order, delays respected.
#[wasm_bindgen_test]
async fn version_1_databases_are_upgraded() {
    let name = unique("v1");
    let factory = factory();
    let v1 = open_version_1(&name).await;
    let now = 1_767_225_600_000;
    let tx = v1
        .transaction_with_str_and_mode("messages", IdbTransactionMode::Readwrite)
        .expect("tx");
    let committed = finished(&tx);
    let objects = tx.object_store("messages").expect("store");
    for (id, retry_after) in [(1, Some(now + 1)), (2, None), (3, Some(now))] {
        // A record as version 1 wrote it: the fields of 0.1.0 (no lane and at).
        let record = to_record(
            &Message {
                retry_after,
                ..message(id)
            },
            true,
        );
        for added in [
            "lane",
            "at",
            "idempotencyKey",
            "firstFailedAt",
            "deadAt",
            "errors",
            "errorsDropped",
            "replayCount",
            "replayedAt",
        ] {
            Reflect::delete_property(&record, &added.into()).expect("delete");
        }
        request(objects.put(&record), "put")
            .expect("put")
            .await
            .expect("put");
    }
    committed.await.expect("committed");
    v1.close();

    let store = IdbStore::open(&factory, &name).await.expect("upgraded");
    let db = store.database().expect("open");
    let due = connection::transaction(db, IdbTransactionMode::Readonly, async |objects| {
        request(objects.get_all(), "getAll")?.await
    })
    .await
    .expect("read");
    let due: Vec<[Option<f64>; 2]> = due
        .unchecked_into::<Array>()
        .iter()
        .map(|r| lane_and_at(&r))
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let (now_f, created) = (now as f64, message(0).created_at as f64);
    let expected = [
        [Some(TIMED), Some(now_f + 1.0)],
        [Some(READY), Some(created)],
        [Some(TIMED), Some(now_f)],
    ];
    assert_eq!(
        due,
        expected.to_vec(),
        "delayed: timed by retryAfter; due: ready by createdAt"
    );
    let take = |m: Message| {
        Ok(Message {
            status: Status::Processing,
            ..m
        })
    };
    let mut taken = Vec::new();
    while let Some(m) = claim_one(&store, now, Ok, take).await {
        taken.push(m.id);
    }
    assert_eq!(taken, [2, 3], "1 is still delayed");
    let later = claim_one(&store, now + 1, Ok, take).await;
    assert_eq!(later.map(|m| m.id), Some(1));
}

#[wasm_bindgen_test]
async fn a_failing_request_aborts_the_transaction_and_is_a_store_error() {
    let store = fresh("constraint").await;
    let db = store.database().expect("open");
    connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        put_message(objects, 1).await
    })
    .await
    .expect("committed");
    let outcome = connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        put_message(objects, 2).await?;
        // id 1 exists: add fails with ConstraintError.
        request(objects.add(&to_record(&message(1), true)), "add")?.await
    })
    .await;
    match outcome {
        Err(Error::Store(why)) => assert!(why.contains("ConstraintError"), "{why}"),
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(
        store.get("q", 2).await,
        Ok(None),
        "the put must be rolled back"
    );
    // Let the abort event be delivered before the test ends.
    sleep(20).await;
}

/// The idempotency index is unique per queue: a second message with the same key in the same
/// queue cannot be stored, even by a write that skipped the store's own lookup; in another
/// queue, or without a key, it can.
#[wasm_bindgen_test]
async fn the_idempotency_index_is_unique_per_queue() {
    let store = fresh("unique").await;
    let keyed = |queue: &str, key: Option<&str>| NewMessage {
        queue: queue.into(),
        idempotency_key: key.map(str::to_owned),
        ..new_message("p", 1_767_225_600_000)
    };
    let first = insert(&store, keyed("q", Some("k"))).await;
    let again = insert(&store, keyed("q", Some("k"))).await;
    assert_eq!((again.id, again.deduplicated), (first.id, true));
    assert!(!insert(&store, keyed("other", Some("k"))).await.deduplicated);
    for _ in 0..2 {
        assert!(!insert(&store, keyed("q", None)).await.deduplicated);
    }
    let db = store.database().expect("open");
    let outcome = connection::transaction(db, IdbTransactionMode::Readwrite, async |objects| {
        let twin = to_record(&keyed("q", Some("k")).with_id(0), false);
        request(objects.add(&twin), "add")?.await
    })
    .await;
    match outcome {
        Err(Error::Store(why)) => assert!(why.contains("ConstraintError"), "{why}"),
        other => panic!("expected a store error, got {other:?}"),
    }
    sleep(20).await;
}

/// Another application's database of the same name is refused with a `store` error saying so, and
/// left as it was: at versions 1 to 3 (the upgrade is aborted) and at version 4, ours (checked
/// read-only).
#[wasm_bindgen_test]
async fn another_applications_database_is_refused_and_left_as_it_was() {
    let factory = factory();
    for version in [1, 2, 3, 4] {
        let name = unique("foreign");
        let open = factory.open_with_u32(&name, version).expect("open");
        let upgrade = {
            let open = open.clone();
            Closure::once_into_js(move || {
                let db: IdbDatabase = open.result().expect("db").unchecked_into();
                db.create_object_store_with_optional_parameters(
                    "todos",
                    &IdbObjectStoreParameters::new(),
                )
                .expect("store");
            })
        };
        open.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
        let created: IdbDatabase = open_request(open).await.expect("created").unchecked_into();
        created.close();

        let refused = IdbStore::open(&factory, &name).await.expect_err("refused");
        let Error::Store(text) = refused else {
            panic!("not a store error: {refused:?}");
        };
        assert!(text.contains("is not a deadletter database"), "{text}");

        let after: IdbDatabase = open_request(factory.open(&name).expect("reopen"))
            .await
            .expect("reopened")
            .unchecked_into();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let found = after.version() as u32; // a whole number: versions are integers
        assert_eq!(found, version);
        let names = after.object_store_names();
        assert_eq!((names.length(), names.get(0)), (1, Some("todos".into())));
        after.close();
    }
}
