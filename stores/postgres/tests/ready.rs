//! Schema version 2's ready index (issue 10) beyond the conformance cases: the upgrade of a
//! version-1 schema (to the current version: the same schema as a new one), messages in backoff
//! coming out in FIFO order once due, and a moved message that is not taken when the clock goes
//! back; version 3's (issue 21) upgrade of a version-2 schema, version 4's (issue 22:
//! `moved_from`) of a version-3 one, and version 5's (claim order by id) of a version-4 one.

mod common;

use common::{Schemas, url};
use deadletter::conformance::kit::{at, claim_at, enqueue_at};
use deadletter::conformance::{BASE, kit};
use deadletter::{Arg, Engine, Item, Limits, Status};
use deadletter_postgres::{Options, PostgresStore, SCHEMA_VERSION, ddl, ddl_v1};

fn admin() -> postgres::Client {
    postgres::Client::connect(&url(), postgres::NoTls).expect("connect")
}

fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

fn engine(schema: &str) -> Engine<PostgresStore> {
    let options = Options {
        schema: schema.to_owned(),
        max_connections: 1,
        ..Options::default()
    };
    Engine::new(
        PostgresStore::open(&url(), &options).expect("open"),
        Limits::default(),
    )
}

/// `(id, ready)` of every message of `schema`, by id (`ready` is storage only: SQL reads it).
fn ready(schema: &str) -> Vec<(i64, bool)> {
    admin()
        .query(
            &format!(
                "SELECT id, ready FROM {}.messages ORDER BY id",
                quoted(schema)
            ),
            &[],
        )
        .expect("ready")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// A schema as the version-1 store wrote it (`now`: the instant of the test), one message in
/// each state, ids 1 to 7: pending and due, pending whose backoff is over, pending in backoff,
/// processing with an expired lease, processing with a live lease, succeeded, dead.
fn write_version_1(schema: &str, now: i64) {
    let s = quoted(schema);
    let failed = r#"'[{"attempt":1,"error":"boom","at":1767225600000}]'"#;
    let (b, n) = (BASE, now);
    admin()
        .batch_execute(&format!(
            "CREATE SCHEMA {s}; {ddl} \
             INSERT INTO {s}.messages (queue, payload, status, retry_count, max_retries, \
               retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
               first_failed_at, dead_at, errors, errors_dropped, replay_count) VALUES \
             ('q', 'due', 'pending', 0, 3, NULL, NULL, {b}+3, {b}+3, NULL, NULL, \
               NULL, NULL, '[]', 0, 0), \
             ('q', 'over', 'pending', 1, 3, {n}-1, 'boom', {b}+1, {b}+1, NULL, NULL, \
               {b}+1, NULL, {failed}, 0, 0), \
             ('q', 'later', 'pending', 1, 3, {n}+50000, 'boom', {b}, {b}, NULL, NULL, \
               {b}, NULL, {failed}, 0, 0), \
             ('q', 'held', 'processing', 0, 3, NULL, NULL, {b}+2, {b}+2, 't', {n}-5, \
               NULL, NULL, '[]', 0, 0), \
             ('q', 'leased', 'processing', 0, 3, NULL, NULL, {b}+5, {b}+5, 'u', {n}+30000, \
               NULL, NULL, '[]', 0, 0), \
             ('q', 'done', 'succeeded', 0, 3, NULL, NULL, {b}+4, {b}+4, NULL, NULL, \
               NULL, NULL, '[]', 0, 0), \
             ('q', 'gone', 'dead', 1, 1, NULL, 'boom', {b}+6, {b}+6, NULL, NULL, \
               {b}+6, {b}+6, {failed}, 0, 0)",
            ddl = ddl_v1(&s)
        ))
        .expect("version 1");
}

/// What defines a schema's tables, with the schema's name taken out: columns (name, type,
/// nullability, default), constraints and indexes, sorted.
fn definition(schema: &str) -> Vec<String> {
    let mut admin = admin();
    let mut lines: Vec<String> = admin
        .query(
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable \
               || ' ' || coalesce(column_default, '') \
             FROM information_schema.columns WHERE table_schema = $1",
            &[&schema],
        )
        .expect("columns")
        .iter()
        .map(|row| row.get(0))
        .collect();
    for sql in [
        "SELECT conname || ' ' || pg_get_constraintdef(c.oid) FROM pg_constraint c \
         JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1",
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1",
    ] {
        let rows = admin.query(sql, &[&schema]).expect("definition");
        lines.extend(rows.iter().map(|row| row.get::<_, String>(0)));
    }
    let mut lines: Vec<String> = lines
        .into_iter()
        .map(|line| line.replace(&quoted(schema), "S").replace(schema, "S"))
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_version_1_schema_is_upgraded_in_place_by_the_first_of_racing_opens() {
    let schemas = Schemas::new("upgrade");
    let name = schemas.name();
    let now = BASE + 100_000;
    write_version_1(&name, now);

    // Four processes starting together: one upgrades, the others find version 2.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| engine(&name));
        }
    });
    let version: i32 = admin()
        .query_one(
            &format!("SELECT version FROM {}.deadletter_schema", quoted(&name)),
            &[],
        )
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    // The upgraded schema is the one a new store creates.
    let fresh = schemas.name();
    admin()
        .batch_execute(&format!(
            "CREATE SCHEMA {0}; {1}",
            quoted(&fresh),
            ddl(&quoted(&fresh))
        ))
        .expect("fresh");
    assert_eq!(definition(&name), definition(&fresh));
    assert!(
        definition(&name)
            .iter()
            .any(|line| line.contains("messages_ready ON S.messages")),
        "{:?}",
        definition(&name)
    );

    // `ready` from each message's state: false exactly for the pending ones in backoff.
    assert_eq!(
        ready(&name),
        [
            (1, true),
            (2, false),
            (3, false),
            (4, true),
            (5, true),
            (6, true),
            (7, true)
        ]
    );
    let db = engine(&name);
    // The messages neither pending nor run out read back as written; the rest is the kit's.
    let all = kit::list(&db, "q").expect("list");
    let others: Vec<(&str, Status, Option<i64>)> = all
        .iter()
        .filter(|m| ["leased", "done", "gone"].contains(&m.payload.as_str()))
        .map(|m| (m.payload.as_str(), m.status, m.lease_expires_at))
        .collect();
    assert_eq!(
        others,
        [
            ("leased", Status::Processing, Some(now + 30_000)),
            ("done", Status::Succeeded, None),
            ("gone", Status::Dead, None),
        ]
    );
    let stats = pollster::block_on(db.stats("q".into(), &at(now))).expect("stats");
    assert_eq!((stats.processing, stats.succeeded, stats.dead), (2, 1, 1));
    kit::messages_written_before_the_ready_lane_keep_their_order(&db, now);
    let moved = [
        (1, true),
        (2, true),
        (3, false),
        (4, false),
        (5, true),
        (6, true),
        (7, true),
    ];
    assert_eq!(ready(&name), moved);
    drop(db);
    engine(&name);
    assert_eq!(ready(&name), moved, "reopening changes nothing");
}

/// Schema version 6: the one check constraint left is the lanes' (the core checks the status
/// and the counters of every row read back); each write statement evaluated the five others.
#[test]
fn the_only_check_constraint_is_the_lanes() {
    let schemas = Schemas::new("checks");
    let name = schemas.name();
    drop(engine(&name));
    let checks: Vec<String> = admin()
        .query(
            "SELECT conname::text FROM pg_constraint c \
             JOIN pg_namespace n ON n.oid = c.connamespace \
             WHERE n.nspname = $1 AND c.contype = 'c' ORDER BY 1",
            &[&name],
        )
        .expect("constraints")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(checks, ["messages_ready_waiting_or_blocked"]);
}

#[test]
fn the_database_refuses_a_message_neither_ready_nor_in_backoff() {
    // Whoever writes it: such a message would be invisible to claim.
    let schemas = Schemas::new("check");
    let name = schemas.name();
    let db = engine(&name);
    enqueue_at(&db, "due", 0, BASE);
    let err = admin()
        .execute(
            &format!(
                "UPDATE {}.messages SET ready = false WHERE id = 1",
                quoted(&name)
            ),
            &[],
        )
        .expect_err("check constraint");
    assert_eq!(
        err.as_db_error().map(|e| e.constraint()),
        Some(Some("messages_ready_waiting_or_blocked"))
    );
    // Nor a blocked message without a group: nothing would unblock it.
    let err = admin()
        .execute(
            &format!(
                "UPDATE {}.messages SET ready = false, blocked = true WHERE id = 1",
                quoted(&name)
            ),
            &[],
        )
        .expect_err("check constraint");
    assert_eq!(
        err.as_db_error().map(|e| e.constraint()),
        Some(Some("messages_ready_waiting_or_blocked"))
    );
    assert_eq!(ready(&name), [(1, true)]);
}

#[test]
fn ten_thousand_delayed_messages_come_out_in_fifo_order_once_due() {
    let schemas = Schemas::new("fifo");
    let name = schemas.name();
    let db = engine(&name);
    let later: Vec<Item<'_>> = (0..1000)
        .map(|_| Item {
            payload: Arg::Str("later"),
            delay_ms: Arg::Int(3_600_000),
            ..Item::default()
        })
        .collect();
    for start in (0..10_000).step_by(1000) {
        pollster::block_on(db.enqueue_many("q".into(), &later, &at(BASE + start)))
            .expect("enqueue");
    }
    let due = enqueue_at(&db, "now", 0, BASE + 20_000);
    let taken = claim_at(&db, BASE + 30_000).expect("the due message");
    assert_eq!(taken.id, due.id, "behind 10 000 delayed ones");
    pollster::block_on(db.succeed("q".into(), due.id.into(), "tok".into(), &at(BASE + 30_000)))
        .expect("ack");
    assert!(ready(&name).iter().take(10_000).all(|(_, r)| !r));

    // An hour later all 10 000 are due: one claim moves them all, then they come out in FIFO
    // order, each with its backoff cleared.
    let hour = BASE + 3_600_000 + 10_000;
    let first = claim_at(&db, hour).expect("the oldest delayed message");
    assert_eq!((first.id, first.retry_after), (1, None));
    let waiting: Vec<_> = ready(&name).into_iter().filter(|(_, r)| !r).collect();
    assert!(waiting.is_empty(), "every one moved once: {waiting:?}");
    let stats = pollster::block_on(db.stats("q".into(), &at(hour))).expect("stats");
    assert_eq!(
        (stats.pending, stats.delayed, stats.next_due_at),
        (9_999, 0, None)
    );
    assert_eq!(stats.oldest_due_age_ms, Some(hour - BASE));
    let ids: Vec<i64> = (0..5)
        .filter_map(|_| claim_at(&db, hour))
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, [2, 3, 4, 5, 6]);
}

#[test]
fn a_moved_message_is_not_claimed_when_the_clock_goes_back() {
    let schemas = Schemas::new("clock");
    kit::a_moved_message_is_not_claimed_when_the_clock_goes_back(&engine(&schemas.name()), BASE);
}

#[test]
fn a_version_2_schema_is_upgraded_to_version_3_in_place() {
    let schemas = Schemas::new("upgrade3");
    let name = schemas.name();
    let now = BASE + 100_000;
    write_version_1(&name, now);
    admin()
        .batch_execute(&deadletter_postgres::upgrade_v2(&quoted(&name)))
        .expect("version 2");
    let db = engine(&name);
    let version: i32 = admin()
        .query_one(
            &format!("SELECT version FROM {}.deadletter_schema", quoted(&name)),
            &[],
        )
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    let all = kit::list(&db, "q").expect("list");
    assert_eq!(all.len(), 7);
    assert!(
        all.iter()
            .all(|m| m.group.is_none() && m.expires_at.is_none())
    );
    let stats = pollster::block_on(db.stats("q".into(), &at(now))).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.delayed,
            stats.paused,
            stats.expired_dead
        ),
        (3, 1, false, 0)
    );
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("due".into()));
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("over".into()));
    let grouped = |payload| Item {
        payload: Arg::Str(payload),
        group: "g".into(),
        ..Item::default()
    };
    pollster::block_on(db.enqueue_many("q".into(), &[grouped("g1"), grouped("g2")], &at(now)))
        .expect("enqueue");
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("g1".into()));
    assert_eq!(claim_at(&db, now), None, "g2 waits behind g1");
}

#[test]
fn a_version_3_schema_is_upgraded_to_version_4_in_place() {
    let schemas = Schemas::new("upgrade4");
    let name = schemas.name();
    let now = BASE + 100_000;
    write_version_1(&name, now);
    for step in [
        deadletter_postgres::upgrade_v2,
        deadletter_postgres::upgrade_v3,
    ] {
        admin().batch_execute(&step(&quoted(&name))).expect("step");
    }
    let db = engine(&name);
    let version: i32 = admin()
        .query_one(
            &format!("SELECT version FROM {}.deadletter_schema", quoted(&name)),
            &[],
        )
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    let all = kit::list(&db, "q").expect("list");
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|m| m.moved_from.is_none()), "{all:?}");
    let dead = all.last().cloned().expect("the dead message");
    let moved =
        pollster::block_on(db.move_message("q".into(), dead.id.into(), "q2".into(), &at(now)))
            .expect("move");
    assert_eq!(
        (moved.queue.as_str(), moved.moved_from.as_deref()),
        ("q2", Some("q"))
    );
    drop(db);
    let db = engine(&name);
    let read = pollster::block_on(db.get("q2".into(), dead.id.into())).expect("get");
    assert_eq!(
        read,
        deadletter::Message {
            queue: "q2".into(),
            moved_from: Some("q".into()),
            updated_at: now,
            ..dead
        }
    );
}

/// Version 5: claim order is the id (enqueue order), not `created_at`. A version-4 schema whose
/// three due messages were enqueued while the clock went back (ids 1, 2, 3 created at `BASE` +
/// 10, + 5, + 7) is upgraded: its ready index is keyed by id, and they come out as 1, 2, 3, the
/// counts' first due message being id 1. On version 4's index they came out as 2, 3, 1.
#[test]
fn a_version_4_schema_is_upgraded_to_version_5_in_place() {
    let schemas = Schemas::new("upgrade5");
    let name = schemas.name();
    let s = quoted(&name);
    let now = BASE + 100_000;
    let steps: String = [
        deadletter_postgres::upgrade_v2,
        deadletter_postgres::upgrade_v3,
        deadletter_postgres::upgrade_v4,
    ]
    .iter()
    .map(|step| step(&s))
    .collect();
    let b = BASE;
    let v1 = ddl_v1(&s);
    let setup = format!(
        "CREATE SCHEMA {s}; {v1} {steps} \
         INSERT INTO {s}.messages (queue, payload, status, retry_count, max_retries, \
           created_at, updated_at, errors, errors_dropped, replay_count) VALUES \
         ('q', 'first', 'pending', 0, 3, {b}+10, {b}+10, '[]', 0, 0), \
         ('q', 'second', 'pending', 0, 3, {b}+5, {b}+5, '[]', 0, 0), \
         ('q', 'third', 'pending', 0, 3, {b}+7, {b}+7, '[]', 0, 0)"
    );
    admin().batch_execute(&setup).expect("version 4");
    let db = engine(&name);
    let version: i32 = admin()
        .query_one(&format!("SELECT version FROM {s}.deadletter_schema"), &[])
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    let index = definition(&name)
        .into_iter()
        .find(|line| line.contains("INDEX messages_ready "))
        .expect("the ready index");
    assert!(
        index.contains("(queue, id, COALESCE(retry_after"),
        "{index}"
    );
    let stats = pollster::block_on(db.stats("q".into(), &at(now))).expect("stats");
    assert_eq!(
        (stats.pending, stats.oldest_due_age_ms),
        (3, Some(now - (BASE + 10)))
    );
    let order: Vec<String> = (0..3)
        .filter_map(|_| claim_at(&db, now))
        .map(|m| m.payload)
        .collect();
    assert_eq!(order, ["first", "second", "third"]);
}

/// Version 6 (issue 24): an index per status instead of indexes keyed by status. A version-5
/// schema holding a message in each state (ids 1 to 7, and two in another queue) is upgraded in
/// place: pages by id (of every status, of each, after an id) and `queues` read the new indexes
/// and find every message as before, and the counts are the same.
#[test]
fn a_version_5_schema_is_upgraded_to_version_6_in_place() {
    let schemas = Schemas::new("upgrade6");
    let name = schemas.name();
    let s = quoted(&name);
    let now = BASE + 100_000;
    write_version_1(&name, now);
    let steps: String = [
        deadletter_postgres::upgrade_v2,
        deadletter_postgres::upgrade_v3,
        deadletter_postgres::upgrade_v4,
        deadletter_postgres::upgrade_v5,
    ]
    .iter()
    .map(|step| step(&s))
    .collect();
    let other = format!(
        "INSERT INTO {s}.messages (queue, payload, status, retry_count, max_retries, \
           created_at, updated_at, errors, errors_dropped, replay_count) VALUES \
         ('a', 'x', 'pending', 0, 3, {BASE}, {BASE}, '[]', 0, 0), \
         ('z', 'y', 'succeeded', 0, 3, {BASE}, {BASE}, '[]', 0, 0)"
    );
    admin()
        .batch_execute(&format!("{steps} {other}"))
        .expect("version 5");
    let db = engine(&name);
    let version: i32 = admin()
        .query_one(&format!("SELECT version FROM {s}.deadletter_schema"), &[])
        .expect("version")
        .get(0);
    assert_eq!(version, SCHEMA_VERSION);
    let store = db.store();
    let page = |status: Option<Status>, after_id: Option<i64>| -> Vec<(i64, String)> {
        let query = deadletter::ListQuery {
            queue: "q",
            status,
            limit: 10,
            after_id,
        };
        pollster::block_on(deadletter::Store::list(store, &query))
            .expect("list")
            .into_iter()
            .map(|m| (m.id, m.payload))
            .collect()
    };
    let payloads = |ids: &[(i64, &str)]| -> Vec<(i64, String)> {
        ids.iter().map(|(id, p)| (*id, (*p).to_owned())).collect()
    };
    assert_eq!(
        page(None, None),
        payloads(&[
            (1, "due"),
            (2, "over"),
            (3, "later"),
            (4, "held"),
            (5, "leased"),
            (6, "done"),
            (7, "gone")
        ])
    );
    assert_eq!(
        page(None, Some(3)),
        payloads(&[(4, "held"), (5, "leased"), (6, "done"), (7, "gone")])
    );
    let pending = payloads(&[(1, "due"), (2, "over"), (3, "later")]);
    assert_eq!(page(Some(Status::Pending), None), pending);
    assert_eq!(
        page(Some(Status::Processing), None),
        payloads(&[(4, "held"), (5, "leased")])
    );
    assert_eq!(
        page(Some(Status::Succeeded), None),
        payloads(&[(6, "done")])
    );
    assert_eq!(page(Some(Status::Dead), None), payloads(&[(7, "gone")]));
    assert_eq!(page(Some(Status::Dead), Some(7)), []);
    let queues = pollster::block_on(deadletter::Store::queues(store)).expect("queues");
    assert_eq!(queues, ["a", "q", "z"]);
    let stats = pollster::block_on(db.stats("q".into(), &at(now))).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.processing,
            stats.succeeded,
            stats.dead,
            stats.delayed,
            stats.oldest_dead_age_ms
        ),
        (3, 2, 1, 1, 1, Some(now - (BASE + 6)))
    );
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("due".into()));
}
