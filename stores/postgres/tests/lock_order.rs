//! Issue 24: writes take their locks in the order of `src/write.rs` (the rows of heads, dead and
//! finished messages; then the advisory locks of groups and keys, in one statement; then blocked
//! members, only under their group's lock), so that none waits in a cycle. The interleaving is
//! made deterministic with sessions of the test that hold a row and a group's lock, and with the
//! server's own view of what each session waits for (`pg_stat_activity`), not with timing.

mod common;

use common::{Schemas, url};
use deadletter::conformance::kit::system_now;
use deadletter::{Arg, Engine, Item, Limits};
use deadletter_postgres::{Options, PostgresStore};

/// The application name of the store's sessions in this test, to find them in `pg_stat_activity`.
const APP: &str = "deadletter_lock_order";

/// Waits until a session of the store waits for a lock of type `event` (`transactionid`: a row
/// held by another transaction; `advisory`: an advisory lock).
fn wait_for(watcher: &mut postgres::Client, event: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
                 AND wait_event_type = 'Lock' AND wait_event = $2",
                &[&APP, &event],
            )
            .expect("pg_stat_activity")
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the move never waited for a lock of type {event}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A move reads its messages without a lock, then locks the rows of those it read as not blocked
/// (the group's head Y here), then takes the groups' advisory locks. Meanwhile another move put Y
/// back behind a new head (written here by hand, uncommitted, so that the move reads Y as the
/// head and then waits for its row), and an ack of that new head holds the group's lock and is
/// about to unblock Y. The old order locked Y once the other move committed (a blocked member,
/// without its group's lock) and waited for the group's lock, while the ack waited for Y: a
/// deadlock, which PostgreSQL broke by ending one of them. Now a move that finds a row it locked
/// blocked lets it go at once (its transaction is run again, reading Y as blocked) and waits for
/// the group's lock holding nothing: the ack's unblock of Y does not wait at all (its
/// `lock_timeout` would end it otherwise), and the move then takes Y under the group's lock.
#[test]
fn a_move_never_holds_a_blocked_member_while_it_waits_for_its_groups_lock() {
    let schemas = Schemas::new("lock_order");
    let name = schemas.name();
    let options = Options {
        schema: name.clone(),
        max_connections: 1,
        ..Options::default()
    };
    let store_url = format!("{}?application_name={APP}", url());
    let engine = Engine::new(
        PostgresStore::open(&store_url, &options).expect("open"),
        Limits::default(),
    );
    let item = Item {
        payload: Arg::Str("y"),
        group: Arg::Str("g"),
        ..Item::default()
    };
    let y = pollster::block_on(engine.enqueue("q".into(), &item, &system_now))
        .expect("enqueue")
        .id;
    let table = engine.store().qualified("messages");
    let connect = || postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
    let (mut other_move, mut ack, mut watcher) = (connect(), connect(), connect());
    other_move
        .batch_execute(&format!(
            "BEGIN; UPDATE {table} SET blocked = true, ready = false WHERE id = {y}"
        ))
        .expect("put Y behind a new head");
    ack.batch_execute(
        "BEGIN; SET LOCAL lock_timeout = '50ms'; SELECT pg_advisory_xact_lock( \
         hashtextextended('group ' || quote_literal('q'::text) || quote_literal('g'::text), 0))",
    )
    .expect("the group's lock");
    std::thread::scope(|scope| {
        let mover = scope.spawn(|| {
            pollster::block_on(engine.move_message("q".into(), y.into(), "q2".into(), &system_now))
        });
        wait_for(&mut watcher, "transactionid");
        other_move.batch_execute("COMMIT").expect("commit");
        wait_for(&mut watcher, "advisory");
        let unblocked = ack.execute(
            &format!(
                "UPDATE {table} SET blocked = false, ready = true \
                 WHERE id = $1 AND blocked AND status = 'pending'"
            ),
            &[&y],
        );
        let end = if unblocked.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        ack.batch_execute(end).expect("end the ack");
        let message = mover.join().expect("mover").expect("move");
        assert_eq!(
            unblocked.map_err(|e| format!(
                "{:?}",
                e.as_db_error().map(|d| (d.code().code(), d.message()))
            )),
            Ok(1),
            "the ack's unblock waited for the move"
        );
        assert_eq!((message.queue.as_str(), message.id), ("q2", y));
    });
    let heads: i64 = watcher
        .query_one(
            &format!("SELECT count(*) FROM {table} WHERE queue = 'q2' AND NOT blocked AND id = $1"),
            &[&y],
        )
        .expect("count")
        .get(0);
    assert_eq!(heads, 1, "Y is the head of its group in q2");
}
