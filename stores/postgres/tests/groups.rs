//! Ordering groups under concurrent sessions (issue 21): sessions that enqueue into one group at
//! once never make two heads (the group's advisory lock makes reading its tail and inserting one
//! step), and while producers keep enqueueing, consumers that claim and ack never hold two of the
//! group's messages at once and ack them in the order they entered the group. Moves (issue 22):
//! sessions moving a group's members between two queues while others claim and ack.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use common::Schemas;
use deadletter::conformance::kit::system_now;
use deadletter::{Arg, Call, Engine, Error, Item, Limits};
use deadletter_postgres::{Options, PostgresStore};

const SESSIONS: usize = 8;
const PER_SESSION: usize = 25;

fn open(schema: &str) -> Engine<PostgresStore> {
    let options = Options {
        schema: schema.to_owned(),
        max_connections: 1,
        ..Options::default()
    };
    Engine::new(
        PostgresStore::open(&common::url(), &options).expect("open"),
        Limits::default(),
    )
}

fn enqueue(engine: &Engine<PostgresStore>, group: &str, payload: &str) -> i64 {
    let item = Item {
        payload: Arg::Str(payload),
        group: Arg::Str(group),
        ..Item::default()
    };
    pollster::block_on(engine.enqueue("q".into(), &item, &system_now))
        .expect("enqueue")
        .id
}

/// How many pending members of `group` are not blocked (claimable heads, or a head in backoff).
fn heads(engine: &Engine<PostgresStore>, group: &str) -> i64 {
    let table = engine.store().qualified("messages");
    engine
        .store()
        .with_client(|client| {
            client
                .query_one(
                    &format!(
                        "SELECT count(*) FROM {table} WHERE group_name = $1 \
                         AND status IN ('pending', 'processing') AND NOT blocked"
                    ),
                    &[&group],
                )
                .map(|row| row.get(0))
                .map_err(Error::store)
        })
        .expect("count")
}

#[test]
fn racing_enqueues_into_one_group_make_one_head() {
    let schemas = Schemas::new("groups");
    let name = schemas.name();
    let engines: Vec<_> = (0..SESSIONS).map(|_| open(&name)).collect();
    for round in 0..3 {
        let group = format!("g{round}");
        let start = std::sync::Barrier::new(SESSIONS);
        let ids: Vec<Vec<i64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = engines
                .iter()
                .enumerate()
                .map(|(session, engine)| {
                    let (start, group) = (&start, &group);
                    scope.spawn(move || {
                        start.wait();
                        (0..PER_SESSION)
                            .map(|n| enqueue(engine, group, &format!("{session}-{n}")))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("session"))
                .collect()
        });
        assert_eq!(heads(&engines[0], &group), 1, "round {round}: one head");
        // Claimed one at a time, in group order: each session's messages in its own order.
        let call = Call {
            clock: &system_now,
            backoff: None,
            sample: 0.0,
        };
        let mut taken = Vec::new();
        while let Some(m) =
            pollster::block_on(engines[0].claim("q".into(), Arg::Null, || "t".into(), &call))
                .expect("claim")
                .value
        {
            assert!(
                pollster::block_on(engines[0].claim("q".into(), Arg::Null, || "t".into(), &call))
                    .expect("claim")
                    .value
                    .is_none(),
                "two of the group claimable at once"
            );
            pollster::block_on(engines[0].succeed("q".into(), m.id.into(), Arg::Null, &system_now))
                .expect("succeed");
            taken.push(m.id);
        }
        assert_eq!(taken.len(), SESSIONS * PER_SESSION, "round {round}");
        for own in &ids {
            let order: Vec<usize> = own
                .iter()
                .map(|id| taken.iter().position(|t| t == id).expect("taken"))
                .collect();
            assert!(
                order.windows(2).all(|w| w[0] < w[1]),
                "round {round}: {order:?}"
            );
        }
    }
}

#[test]
fn producers_and_consumers_at_once_keep_a_group_one_at_a_time_and_in_order() {
    let schemas = Schemas::new("groups");
    let name = schemas.name();
    let producers: Vec<_> = (0..4).map(|_| open(&name)).collect();
    let consumers: Vec<_> = (0..4).map(|_| open(&name)).collect();
    let done = AtomicBool::new(false);
    let holding = Mutex::new(None::<i64>);
    let acked = Mutex::new(Vec::new());
    let enqueued: Vec<Vec<i64>> = std::thread::scope(|scope| {
        for engine in &consumers {
            let (done, holding, acked) = (&done, &holding, &acked);
            scope.spawn(move || {
                let call = Call {
                    clock: &system_now,
                    backoff: None,
                    sample: 0.0,
                };
                loop {
                    let claimed =
                        pollster::block_on(engine.claim("q".into(), Arg::Null, uuid_like, &call))
                            .expect("claim")
                            .value;
                    let Some(m) = claimed else {
                        if done.load(Ordering::SeqCst) {
                            // Drained only once the producers ended and nothing is left.
                            let stats = pollster::block_on(engine.stats("q".into(), &system_now))
                                .expect("stats");
                            if stats.pending == 0 && stats.processing == 0 {
                                return;
                            }
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        continue;
                    };
                    {
                        let mut held = holding.lock().unwrap();
                        assert_eq!(*held, None, "two of the group held at once: {m:?}");
                        *held = Some(m.id);
                    }
                    let token = m.lease_token.clone().unwrap_or_default();
                    std::thread::sleep(std::time::Duration::from_millis(1)); // the work
                    // Released before the ack: the group's next claim can only follow the ack.
                    *holding.lock().unwrap() = None;
                    acked.lock().unwrap().push(m.id);
                    pollster::block_on(engine.succeed(
                        "q".into(),
                        m.id.into(),
                        token.as_str().into(),
                        &system_now,
                    ))
                    .expect("succeed");
                }
            });
        }
        let handles: Vec<_> = producers
            .iter()
            .enumerate()
            .map(|(p, engine)| {
                scope.spawn(move || {
                    (0..PER_SESSION)
                        .map(|n| enqueue(engine, "shared", &format!("{p}-{n}")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let ids = handles
            .into_iter()
            .map(|h| h.join().expect("producer"))
            .collect();
        done.store(true, Ordering::SeqCst);
        ids
    });
    let acked = acked.into_inner().unwrap();
    assert_eq!(acked.len(), 4 * PER_SESSION);
    for own in &enqueued {
        let order: Vec<usize> = own
            .iter()
            .map(|id| acked.iter().position(|a| a == id).expect("acked"))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }
}

fn uuid_like() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("token-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[test]
fn a_bulk_move_keeps_every_group_in_order_across_batches() {
    let schemas = Schemas::new("bulk_move");
    deadletter::conformance::kit::a_bulk_move_keeps_every_group_in_order_across_batches(&open(
        &schemas.name(),
    ));
}

/// The live members of `group` of `queue` that are not blocked: its head (pending or processing),
/// or none.
fn heads_in(engine: &Engine<PostgresStore>, queue: &str, group: &str) -> i64 {
    let table = engine.store().qualified("messages");
    engine
        .store()
        .with_client(|client| {
            client
                .query_one(
                    &format!(
                        "SELECT count(*) FROM {table} WHERE queue = $1 AND group_name = $2 \
                         AND status IN ('pending', 'processing') AND NOT blocked"
                    ),
                    &[&queue, &group],
                )
                .map(|row| row.get(0))
                .map_err(Error::store)
        })
        .expect("count")
}

/// Claims from `q` and `q2` in turn (starting with the `n`-th) and acks, until the movers are
/// done (`moving` false) and both queues are empty; each message acked goes into `acked`. Fails
/// when members are left that no claim can take for a minute (blocked without a head).
fn consume(engine: &Engine<PostgresStore>, n: usize, moving: &AtomicBool, acked: &Mutex<Vec<i64>>) {
    let call = Call {
        clock: &system_now,
        backoff: None,
        sample: 0.0,
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for round in n.. {
        let queue = if round % 2 == 0 { "q" } else { "q2" };
        let claimed = pollster::block_on(engine.claim(queue.into(), Arg::Null, uuid_like, &call))
            .expect("claim")
            .value;
        let Some(m) = claimed else {
            if !moving.load(Ordering::SeqCst) {
                let left = ["q", "q2"].map(|q| {
                    let stats =
                        pollster::block_on(engine.stats(q.into(), &system_now)).expect("stats");
                    stats.pending + stats.processing
                });
                if left == [0, 0] {
                    return;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "members left without a head: {left:?}"
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        };
        let token = m.lease_token.clone().unwrap_or_default();
        pollster::block_on(engine.succeed(
            m.queue.as_str().into(),
            m.id.into(),
            token.as_str().into(),
            &system_now,
        ))
        .expect("succeed");
        acked.lock().unwrap().push(m.id);
    }
}

/// Moves messages between `q` and `q2` for 40 rounds, one way then the other (starting with the
/// `n`-th): `move_all` 5 at a time, or (`one_by_one`) one message of the `messages` at a time,
/// which may be elsewhere (`not_found`) or processing (`conflict`); any other error fails.
fn shuttle(engine: &Engine<PostgresStore>, n: usize, one_by_one: bool, messages: i64) {
    let none = deadletter::FilterArgs::default();
    for round in n..n + 40 {
        let (from, to) = if round % 2 == 0 {
            ("q", "q2")
        } else {
            ("q2", "q")
        };
        if one_by_one {
            let id = 1 + i64::try_from(round * 7).expect("small") % messages;
            let moved = db_move(engine, from, id, to);
            if let Err(err) = moved {
                assert!(matches!(err.code(), "not_found" | "conflict"), "{err}");
            }
        } else {
            let moved = engine.move_all(
                from.into(),
                to.into(),
                &none,
                Arg::Int(5),
                Arg::Null,
                &system_now,
            );
            pollster::block_on(moved).expect("move_all");
        }
    }
}

fn db_move(engine: &Engine<PostgresStore>, from: &str, id: i64, to: &str) -> Result<(), Error> {
    let moved = engine.move_message(from.into(), id.into(), to.into(), &system_now);
    pollster::block_on(moved).map(drop)
}

/// Sessions that move a group's members back and forth between two queues (in bulk and one by
/// one) while others claim and ack in both: no call fails (the advisory locks of the groups in
/// both queues and of the keys are taken in one statement, after the rows of heads and before
/// those of blocked members: `tests/lock_order.rs`; before issue 24 a move and an ack closed a
/// cycle here, in 23 deadlocks over 34 runs on a loaded 2-core machine), a group
/// has at most one head in each queue, none is left blocked without a head, and every message is
/// acked once.
#[test]
fn moves_back_and_forth_while_consumers_claim_keep_one_head_per_queue() {
    const MESSAGES: i64 = 60;
    let schemas = Schemas::new("moves");
    let name = schemas.name();
    let setup = open(&name);
    let keys: Vec<String> = (0..MESSAGES).map(|i| format!("k{i}")).collect();
    let items: Vec<Item<'_>> = keys
        .iter()
        .map(|key| Item {
            payload: Arg::Str(key),
            group: "g".into(),
            idempotency_key: Arg::Str(key),
            ..Item::default()
        })
        .collect();
    pollster::block_on(setup.enqueue_many("q".into(), &items, &system_now)).expect("enqueue");
    let movers: Vec<_> = (0..3).map(|_| open(&name)).collect();
    let consumers: Vec<_> = (0..2).map(|_| open(&name)).collect();
    let moving = AtomicBool::new(true);
    let acked = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for (n, engine) in consumers.iter().enumerate() {
            let (moving, acked) = (&moving, &acked);
            scope.spawn(move || consume(engine, n, moving, acked));
        }
        let handles: Vec<_> = movers
            .iter()
            .enumerate()
            .map(|(n, engine)| scope.spawn(move || shuttle(engine, n, n == 2, MESSAGES)))
            .collect();
        // The consumers stop only once the movers are done: a mover that failed must stop them
        // too, so that the test fails rather than hangs.
        let movers: Vec<_> = handles
            .into_iter()
            .map(std::thread::ScopedJoinHandle::join)
            .collect();
        moving.store(false, Ordering::SeqCst);
        for mover in movers {
            mover.expect("mover");
        }
        for queue in ["q", "q2"] {
            assert!(heads_in(&setup, queue, "g") <= 1, "two heads in {queue}");
        }
    });
    let mut acked = acked.into_inner().unwrap();
    acked.sort_unstable();
    assert_eq!(acked, (1..=MESSAGES).collect::<Vec<_>>());
}
