//! Group commit: the calls of one process that queue while another holds the connection share
//! the next commit, each keeping its own outcome.

mod common;

use common::{TempDb, engine};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{at, enqueue_at};
use deadletter::{Error, Message, Millis, Result};

/// Calls that queue while another call holds the connection share its successor's commit; a
/// failing call among them (a step's error) changes nothing of the others, and each
/// gets exactly the result it would have got alone.
#[test]
fn concurrent_calls_share_commits_and_keep_their_own_outcomes() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let store = db.store();
    let ids: Vec<i64> = (0..9)
        .map(|i| enqueue_at(&db, &format!("m{i}"), 0, BASE + i).id)
        .collect();
    let before = store.commits();
    let first = ids[0];
    let start = std::sync::Barrier::new(ids.len());
    let outcomes: Vec<Result<Message, Error>> = std::thread::scope(|scope| {
        let calls: Vec<_> = ids
            .iter()
            .map(|&id| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    if id == first {
                        // Holds the connection long enough for the others to queue behind it.
                        pollster::block_on(deadletter::Store::update(
                            store,
                            "q",
                            id,
                            &at(BASE),
                            |m, _| {
                                std::thread::sleep(std::time::Duration::from_millis(300));
                                Ok(Message {
                                    last_error: Some("first".into()),
                                    ..m
                                })
                            },
                        ))
                    } else {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        pollster::block_on(deadletter::Store::update(
                            store,
                            "q",
                            id,
                            &at(BASE),
                            |m, _| {
                                if id % 2 == 0 {
                                    Err(Error::Store(format!("refused {id}")))
                                } else {
                                    Ok(Message {
                                        last_error: Some(format!("changed {id}")),
                                        ..m
                                    })
                                }
                            },
                        ))
                    }
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().expect("call")).collect()
    });
    let commits = store.commits() - before;
    assert!(
        commits <= 3,
        "{commits} commits for 9 calls: none was shared"
    );
    for (id, outcome) in ids.iter().zip(&outcomes) {
        let stored = pollster::block_on(db.get("q".into(), (*id).into())).expect("get");
        match outcome {
            Ok(written) => {
                assert!(*id == first || id % 2 == 1);
                assert_eq!(written, &stored);
            }
            Err(err) => {
                assert_eq!(err.to_string(), format!("store error: refused {id}"));
                assert_eq!(
                    stored.payload,
                    format!("m{}", id - 1),
                    "a refused call wrote"
                );
            }
        }
    }
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1 + ids
            .iter()
            .filter(|id| *id % 2 == 1 && **id != ids[0])
            .count()
    );
}

/// A call that joins a shared transaction reads the clock when it gets the connection, not when
/// it started to wait for it (issue 23, item 2): the calls queued behind one that holds the
/// connection for 300 ms read it after that call's step is over.
#[test]
fn calls_that_join_a_commit_read_the_clock_when_they_get_the_connection() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let store = db.store();
    let ids: Vec<i64> = (0..5)
        .map(|i| enqueue_at(&db, &format!("m{i}"), 0, BASE + i).id)
        .collect();
    let started = std::time::Instant::now();
    let first_done = std::sync::Mutex::new(None);
    let read_at = std::sync::Mutex::new(Vec::new());
    let start = std::sync::Barrier::new(ids.len());
    let first = ids[0];
    std::thread::scope(|scope| {
        for &id in &ids {
            let (start, first_done, read_at) = (&start, &first_done, &read_at);
            scope.spawn(move || {
                let clock = move || -> Result<Millis> {
                    read_at.lock().unwrap().push((id, started.elapsed()));
                    Ok(BASE + 1_000)
                };
                start.wait();
                if id != first {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                pollster::block_on(deadletter::Store::update(store, "q", id, &clock, |m, _| {
                    if id == first {
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        *first_done.lock().unwrap() = Some(started.elapsed());
                    }
                    Ok(Message {
                        last_error: Some("read".into()),
                        ..m
                    })
                }))
                .expect("update");
            });
        }
    });
    let first_done = first_done.lock().unwrap().expect("the first call ran");
    let read_at = read_at.lock().unwrap();
    assert_eq!(read_at.len(), ids.len(), "each call read the clock once");
    for (id, at) in read_at.iter().filter(|(id, _)| *id != first) {
        assert!(
            *at >= first_done,
            "call {id} read the clock at {at:?}, before the connection was free ({first_done:?})"
        );
    }
}

/// A batch (the Node binding's calls made in one JavaScript tick, issue 19) runs its calls on one
/// thread in one transaction, committed once at its end: each call keeps its own outcome (a
/// refused call rolled back alone, the others written), nothing is committed before the batch
/// ends, and a read of another connection sees all of it after.
#[test]
fn a_batch_commits_its_calls_once_and_each_keeps_its_outcome() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let store = db.store();
    let ids: Vec<i64> = (0..6)
        .map(|i| enqueue_at(&db, &format!("m{i}"), 0, BASE + i).id)
        .collect();
    let before = store.commits();
    let other = engine(&file.0);
    let seen_during = std::sync::Mutex::new(Vec::new());
    let refused = ids[3];
    let steps = ids.iter().map(|&id| {
        let (db, other, seen_during) = (&db, &other, &seen_during);
        move || {
            // What another connection reads meanwhile: the batch's writes are not committed yet.
            let stored = pollster::block_on(other.get("q".into(), id.into())).expect("get");
            seen_during.lock().unwrap().push(stored.last_error);
            pollster::block_on(deadletter::Store::update(
                db.store(),
                "q",
                id,
                &at(BASE),
                |m, _| {
                    if id == refused {
                        Err(Error::Store(format!("refused {id}")))
                    } else {
                        Ok(Message {
                            last_error: Some(format!("changed {id}")),
                            ..m
                        })
                    }
                },
            ))
        }
    });
    let done = store.batch(steps, |_| panic!("every step wrote"));
    assert_eq!(store.commits() - before, 1, "one commit for the batch");
    assert_eq!(*seen_during.lock().unwrap(), vec![None; ids.len()]);
    assert_eq!(done.len(), ids.len());
    for (id, (outcome, committed)) in ids.iter().zip(&done) {
        committed.as_ref().expect("committed");
        let stored = pollster::block_on(other.get("q".into(), (*id).into())).expect("get");
        if *id == refused {
            let err = outcome.as_ref().expect_err("refused");
            assert_eq!(err.to_string(), format!("store error: refused {id}"));
            assert_eq!(stored.last_error, None, "the refused call wrote");
        } else {
            assert_eq!(outcome.as_ref().expect("written"), &stored);
            assert_eq!(stored.last_error, Some(format!("changed {id}")));
        }
    }
}

/// A batch answers each call as soon as its outcome is final (issue 19: a read made in the same
/// JavaScript tick as a write waited for that write's commit, which waits for another process's
/// lock): a read, and a call refused in a transaction it began itself (it saw only committed
/// state), at once; a write after the batch's commit; a call refused inside the transaction that
/// earlier calls of the batch left open (it saw their writes) after that commit too.
#[test]
fn a_batch_answers_reads_and_refusals_of_committed_state_before_its_commit() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let store = db.store();
    let ids: Vec<i64> = (0..4)
        .map(|i| enqueue_at(&db, &format!("m{i}"), 0, BASE + i).id)
        .collect();
    let before = store.commits();
    let update = |id: i64, refuse: bool| {
        let db = &db;
        Box::new(move || {
            pollster::block_on(deadletter::Store::update(
                db.store(),
                "q",
                id,
                &at(BASE),
                |m, _| {
                    if refuse {
                        Err(Error::Store(format!("refused {id}")))
                    } else {
                        Ok(Message {
                            last_error: Some(format!("changed {id}")),
                            ..m
                        })
                    }
                },
            ))
        }) as Box<dyn FnOnce() -> Result<Message>>
    };
    let get = |id: i64| {
        let db = &db;
        Box::new(move || pollster::block_on(db.get("q".into(), id.into())))
            as Box<dyn FnOnce() -> Result<Message>>
    };
    let steps = vec![
        update(ids[0], true), // refused in the transaction it began: at once
        get(ids[1]),          // a read: at once
        update(ids[1], false),
        get(ids[1]),          // a read: at once, without the write above (not committed)
        update(ids[2], true), // refused inside the batch's open transaction: after the commit
        update(ids[3], false),
    ];
    let mut answers = Vec::new();
    let numbered = steps.into_iter().enumerate().map(|(n, f)| move || (n, f()));
    let rest = store.batch(numbered, |(n, outcome)| {
        answers.push((n, store.commits() - before, outcome, Ok(())));
    });
    for ((n, outcome), committed) in rest {
        answers.push((n, store.commits() - before, outcome, committed));
    }
    let order: Vec<(usize, u64)> = answers.iter().map(|a| (a.0, a.1)).collect();
    assert_eq!(
        order,
        vec![(0, 0), (1, 0), (3, 0), (2, 1), (4, 1), (5, 1)],
        "(step, commits when it was answered)"
    );
    for (n, _, outcome, committed) in &answers {
        committed.as_ref().expect("committed");
        match n {
            0 | 4 => assert!(
                outcome
                    .as_ref()
                    .expect_err("refused")
                    .to_string()
                    .contains("refused")
            ),
            1 | 3 => assert_eq!(outcome.as_ref().expect("read").last_error, None),
            _ => assert!(outcome.as_ref().expect("written").last_error.is_some()),
        }
    }
}
