//! The fork hooks (`deadletter_sqlite::fork`), called in this process without a fork (forking a
//! test process, with its threads, is not safe): `before_fork` waits for the call in progress,
//! and `after_fork_in_child` closes every connection opened before, without a checkpoint, so that
//! the file stays as it was and a store opened afterwards reads it. The Python tests fork for
//! real (`test_threads_and_fork.py`). Its own test binary: the child hook closes every
//! connection of the process.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use common::{TempDb, engine};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{at, enqueue_at};
use deadletter::{Message, Store};
use deadletter_sqlite::fork;

#[test]
fn the_hooks_wait_for_calls_then_close_the_parents_connections_without_a_checkpoint() {
    let file = TempDb::new();
    let db = engine(&file.0);
    let first = enqueue_at(&db, "one", 0, BASE);
    let done = AtomicBool::new(false);
    let (entered, inside) = mpsc::channel();
    std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            pollster::block_on(db.store().update("q", first.id, &at(BASE), |m, _| {
                entered.send(()).expect("tell");
                std::thread::sleep(std::time::Duration::from_millis(200));
                done.store(true, Ordering::SeqCst);
                Ok(Message {
                    last_error: Some("during the fork".into()),
                    ..m
                })
            }))
        });
        inside.recv().expect("the call is inside the store");
        fork::before_fork();
        assert!(
            done.load(Ordering::SeqCst),
            "the fork did not wait for the call"
        );
        fork::after_fork_in_child();
        call.join().expect("call").expect("the call succeeded");
    });
    assert!(db.store().is_closed());
    let err = pollster::block_on(db.get("q".into(), first.id.into())).expect_err("closed");
    assert_eq!(err.to_string(), "store error: the database is closed");
    let mut wal = file.0.clone().into_os_string();
    wal.push("-wal");
    let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert!(wal_bytes > 0, "the WAL was checkpointed away");
    let again = engine(&file.0);
    let read = pollster::block_on(again.get("q".into(), first.id.into())).expect("get");
    assert_eq!(read.last_error.as_deref(), Some("during the fork"));
}
