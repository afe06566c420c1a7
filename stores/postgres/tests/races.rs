//! Racing producers, beyond the conformance cases: the same idempotency keys stored once, batches
//! with the same keys in different orders never deadlocking, ascending ids in item order.

mod common;

use common::Schemas;
use common::store::{admin, item, open};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Arg, Engine, Item, Limits};

#[test]
fn racing_producers_with_the_same_idempotency_keys_store_each_key_once() {
    let schemas = Schemas::new("race");
    let name = schemas.name();
    open(&name).expect("create");
    let results: Vec<Vec<(i64, bool)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let engine = Engine::new(open(&name).expect("open"), Limits::default());
                    (0..200)
                        .map(|k| {
                            let key = format!("key-{k}");
                            let job = Item {
                                payload: Arg::Str("p"),
                                idempotency_key: Arg::Str(&key),
                                ..Item::default()
                            };
                            let m = pollster::block_on(engine.enqueue("q".into(), &job, &at(BASE)))
                                .expect("enqueue");
                            (m.id, m.deduplicated)
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    // Every producer got, for each key, the one stored message; exactly one of them inserted it.
    for k in 0..200 {
        let ids: Vec<i64> = results.iter().map(|r| r[k].0).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "key-{k}: {ids:?}");
        let inserted = results.iter().filter(|r| !r[k].1).count();
        assert_eq!(inserted, 1, "key-{k}");
    }
    let stored: i64 = admin()
        .query_one(&format!("SELECT count(*) FROM \"{name}\".messages"), &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, 200);
}

#[test]
fn racing_batches_with_the_same_keys_in_different_orders_never_deadlock() {
    // Each transaction inserts its keys in item order; two batches holding the same keys in
    // different orders waited for each other (PostgreSQL: "deadlock detected", 40P01).
    let schemas = Schemas::new("keyorder");
    let name = schemas.name();
    open(&name).expect("create");
    // Round r's batches hold keys 20r..20r+60: new keys in every round, most shared.
    let keys: Vec<String> = (0..260).map(|k| format!("key-{k}")).collect();
    let start = std::sync::Barrier::new(4);
    let results: Vec<deadletter::Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4_usize)
            .map(|worker| {
                let (keys, name, start) = (&keys, &name, &start);
                scope.spawn(move || {
                    let engine = Engine::new(open(name).expect("open"), Limits::default());
                    start.wait();
                    for round in 0..10_usize {
                        // A different order in every worker and round: rotated, every other one reversed.
                        let mut order: Vec<&String> =
                            keys[20 * round..20 * round + 60].iter().collect();
                        order.rotate_left((worker * 17 + round * 7) % 60);
                        if (worker + round) % 2 == 1 {
                            order.reverse();
                        }
                        let items: Vec<Item<'_>> = order
                            .iter()
                            .map(|key| Item {
                                payload: Arg::Str("p"),
                                idempotency_key: Arg::Str(key),
                                ..Item::default()
                            })
                            .collect();
                        pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE)))?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for result in &results {
        assert!(result.is_ok(), "{result:?}");
    }
    let stored: i64 = admin()
        .query_one(&format!("SELECT count(*) FROM \"{name}\".messages"), &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, 240);
}

#[test]
fn racing_batches_get_ascending_ids_in_item_order_and_each_id_its_own_payload() {
    let schemas = Schemas::new("batches");
    let name = schemas.name();
    open(&name).expect("create");
    std::thread::scope(|scope| {
        for producer in ["a", "b", "c"] {
            let name = &name;
            scope.spawn(move || {
                let engine = Engine::new(open(name).expect("open"), Limits::default());
                let payloads: Vec<String> = (0..1000).map(|i| format!("{producer}-{i}")).collect();
                let items: Vec<Item<'_>> = payloads.iter().map(|p| item(p)).collect();
                for _ in 0..5 {
                    let batch =
                        pollster::block_on(engine.enqueue_many("q".into(), &items, &at(BASE)))
                            .expect("enqueue_many");
                    assert!(batch.windows(2).all(|w| w[0].id < w[1].id), "ascending ids");
                    for (m, p) in batch.iter().zip(&payloads) {
                        assert_eq!(&m.payload, p);
                        let stored =
                            pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
                        assert_eq!(&stored.payload, p, "message {}", m.id);
                    }
                }
            });
        }
    });
}
