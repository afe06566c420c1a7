//! Files of older schema versions upgraded in place: deadletter 0.1.0's (schema version 1, the
//! fixture `tests/fixtures/v0.1.0.sqlite`), version 2's (before the ready index), ids that stay
//! unique across the upgrade to version 4, version 4's (before groups, expiry and the queue
//! settings), version 5's (before `moved_from`), version 6's (its index of dead messages
//! carried their errors) and version 7's (an enqueue wrote four B-trees).

mod common;

use std::path::Path;

use common::{TempDb, engine, item, user_version};
use deadletter::conformance::BASE;
use deadletter::conformance::kit::{self, at, claim_at};
use deadletter::{
    Arg, Call, Engine, Error, FailedAttempt, FilterArgs, Item, Message, Stats, Status,
};
use deadletter_sqlite::{
    Durability, SCHEMA_V1, SCHEMA_VERSION, SqliteStore, UPGRADE_V2, UPGRADE_V3, UPGRADE_V4,
    UPGRADE_V5, UPGRADE_V6, UPGRADE_V7,
};
use rusqlite::params;
use rusqlite::types::Value;

/// A message of the 0.1.0 fixture as version 3 reads it: what 0.1.0 stored, with the failures it
/// counted as dropped history and no `retry_after` outside pending.
fn v1_message(id: i64, payload: &str, status: Status, counts: (u32, u32)) -> Message {
    let (retry_count, max_retries) = counts;
    Message {
        id,
        queue: "emails".into(),
        payload: payload.into(),
        status,
        retry_count,
        max_retries,
        retry_after: None,
        last_error: None,
        created_at: BASE,
        updated_at: BASE + 10_000,
        lease_token: None,
        lease_expires_at: None,
        idempotency_key: None,
        first_failed_at: None,
        dead_at: None,
        errors: Vec::new(),
        errors_dropped: retry_count,
        replay_count: 0,
        replayed_at: None,
        group: None,
        expires_at: None,
        moved_from: None,
        deduplicated: false,
    }
}

/// What `tests/fixtures/make_v1_sqlite.py` left in `tests/fixtures/v0.1.0.sqlite`.
fn fixture_messages() -> Vec<Message> {
    let processing = Status::Processing;
    vec![
        Message {
            last_error: Some("boom".into()),
            lease_token: Some("3af2372f-a438-4bdd-801f-f029843f632a".into()),
            lease_expires_at: Some(BASE + 70_000),
            ..v1_message(1, r#"{"to": "a@example.com"}"#, processing, (1, 3))
        },
        Message {
            updated_at: BASE,
            lease_token: Some("5d91d29d-6a48-48a9-9c57-90722f796f7d".into()),
            lease_expires_at: Some(BASE + 60_000),
            ..v1_message(2, "claimed", processing, (0, 5))
        },
        v1_message(3, "acked", Status::Succeeded, (0, 3)),
        Message {
            retry_after: Some(BASE + 12_000),
            last_error: Some("HTTP 503".into()),
            ..v1_message(4, "retried", Status::Pending, (1, 4))
        },
        Message {
            last_error: Some("malformed".into()),
            dead_at: Some(BASE + 10_000),
            ..v1_message(5, "poison", Status::Dead, (1, 1))
        },
        Message {
            updated_at: BASE + 15_000,
            ..v1_message(6, "replayed", Status::Pending, (0, 1))
        },
        Message {
            queue: "other queue/ü".into(),
            updated_at: BASE,
            ..v1_message(7, &"x".repeat(1000), Status::Pending, (0, 3))
        },
    ]
}

#[test]
fn a_file_written_by_0_1_0_is_upgraded_in_place() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/v0.1.0.sqlite");
    let file = TempDb::new();
    std::fs::copy(&fixture, &file.0).expect("copy the fixture");
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let read = |queue: &str| kit::list(&db, queue).expect("list");
    let mut all = read("emails");
    all.extend(read("other queue/ü"));
    assert_eq!(all, fixture_messages());

    // The upgraded file works: expired leases are reaped into the new history, claim takes the
    // oldest due message, fail records it, replay counts, ids continue.
    let now = BASE + 100_000;
    let clock = at(now);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let claimed = pollster::block_on(db.claim("emails".into(), Arg::Null, || "t".into(), &call))
        .expect("claim");
    let taken = claimed.value.expect("message 4 is due");
    assert_eq!((taken.id, taken.retry_after), (4, None));
    let one = pollster::block_on(db.get("emails".into(), 1_i64.into())).expect("get 1");
    assert_eq!(
        (
            one.status,
            one.retry_count,
            one.retry_after,
            one.errors_dropped
        ),
        (Status::Pending, 2, Some(now + 4_000), 1)
    );
    let lease_expired = FailedAttempt {
        attempt: 2,
        error: "lease expired".into(),
        at: now,
    };
    assert_eq!(one.errors, vec![lease_expired]);
    let failed = pollster::block_on(db.fail(
        "emails".into(),
        4_i64.into(),
        "HTTP 500".into(),
        "t".into(),
        Arg::Null,
        Arg::Null,
        &call,
    ))
    .expect("fail");
    assert_eq!(
        (
            failed.value.retry_count,
            failed.value.errors.len(),
            failed.value.errors[0].attempt
        ),
        (2, 1, 2)
    );
    let replayed = pollster::block_on(db.replay("emails".into(), 5_i64.into(), Arg::Null, &clock))
        .expect("replay");
    assert_eq!(
        (
            replayed.status,
            replayed.dead_at,
            replayed.replay_count,
            replayed.replayed_at
        ),
        (Status::Pending, None, 1, Some(now))
    );
    let next =
        pollster::block_on(db.enqueue("emails".into(), &item("new"), &clock)).expect("enqueue");
    assert_eq!(next.id, 8);
    drop(db);
    assert_eq!(
        user_version(engine(&file.0).store()),
        SCHEMA_VERSION,
        "reopening changes nothing"
    );
}

/// A 0.1.0 file with a row that 0.1.0 could not have written (an instant out of the range
/// deadletter writes) is refused by the upgrade, which reads every row through the core's checks:
/// the store error names the message and the column, and the file is left as it was. (Before the
/// core's mapping, the file was upgraded and only reading that message failed.)
#[test]
fn a_0_1_0_file_with_a_row_deadletter_never_writes_is_refused_unchanged() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/v0.1.0.sqlite");
    let file = TempDb::new();
    std::fs::copy(&fixture, &file.0).expect("copy the fixture");
    let conn = rusqlite::Connection::open(&file.0).expect("open");
    conn.execute(
        "UPDATE messages SET created_at = 253402300800000 WHERE id = 3",
        [],
    )
    .expect("corrupt");
    drop(conn);
    let before = std::fs::read(&file.0).expect("read");
    let err = SqliteStore::open(&file.0, Durability::Full).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "store error: message 3 is corrupt: column created_at: holds 253402300800000, outside \
         the time range deadletter writes (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in \
         UTC milliseconds)"
    );
    assert_eq!(std::fs::read(&file.0).expect("read"), before);
}

/// A file as this store wrote it at schema version 2 (`now`: the instant of the test): pending
/// due, pending whose backoff is over, pending in backoff, processing with an expired lease,
/// succeeded.
fn write_version_2(path: &Path, now: i64) {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(SCHEMA_V1).expect("v1");
    conn.execute_batch(UPGRADE_V2).expect("v2");
    conn.pragma_update(None, "user_version", 2)
        .expect("version");
    let mut insert = conn
        .prepare(
            "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
                 retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at, \
                 errors, errors_dropped) \
                 VALUES ('q', ?1, ?2, ?3, 3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, 0)",
        )
        .expect("insert");
    let failed = r#"[{"attempt":1,"error":"boom","at":1767225600000}]"#;
    let none = None::<i64>;
    let rows = [
        params![
            "due",
            "pending",
            0,
            none,
            None::<&str>,
            BASE + 3,
            None::<&str>,
            none,
            "[]"
        ],
        params![
            "over",
            "pending",
            1,
            Some(now - 1),
            Some("boom"),
            BASE + 1,
            None::<&str>,
            none,
            failed
        ],
        params![
            "later",
            "pending",
            1,
            Some(now + 50_000),
            Some("boom"),
            BASE,
            None::<&str>,
            none,
            failed
        ],
        params![
            "held",
            "processing",
            0,
            none,
            None::<&str>,
            BASE + 2,
            Some("t"),
            Some(now - 5),
            "[]"
        ],
        params![
            "done",
            "succeeded",
            0,
            none,
            None::<&str>,
            BASE + 4,
            None::<&str>,
            none,
            "[]"
        ],
    ];
    for row in rows {
        insert.execute(row).expect("row");
    }
}

#[test]
fn a_version_2_file_is_upgraded_in_place() {
    let file = TempDb::new();
    let now = BASE + 100_000;
    write_version_2(&file.0, now);
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let ready: Vec<(i64, i64)> = db
        .store()
        .with_connection(|conn| {
            let mut statement = conn
                .prepare("SELECT id, ready FROM messages ORDER BY id")
                .map_err(Error::store)?;
            let rows = statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(Error::store)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Error::store)
        })
        .expect("ready");
    assert_eq!(ready, [(1, 1), (2, 0), (3, 0), (4, 1), (5, 1)]);
    let done = pollster::block_on(db.get("q".into(), 5_i64.into())).expect("get");
    assert_eq!(
        (done.payload.as_str(), done.status),
        ("done", Status::Succeeded)
    );
    kit::messages_written_before_the_ready_lane_keep_their_order(&db, now);
    drop(db);
    assert_eq!(user_version(engine(&file.0).store()), SCHEMA_VERSION);
}

/// Schema version 4 gives ids without `AUTOINCREMENT`: an id that a message deleted before the
/// upgrade had is not given again, from a file of version 2 or 3; nor one deleted after it.
#[test]
fn ids_are_not_reused_across_the_upgrade_to_version_4() {
    for version in [2, 3] {
        let file = TempDb::new();
        let now = BASE + 100_000;
        write_version_2(&file.0, now);
        {
            let conn = rusqlite::Connection::open(&file.0).expect("open");
            if version == 3 {
                conn.execute_batch(UPGRADE_V3).expect("v3");
                conn.pragma_update(None, "user_version", 3)
                    .expect("version");
            }
            // The highest id: AUTOINCREMENT remembers 5, max(id) is now 4.
            conn.execute("DELETE FROM messages WHERE id = 5", [])
                .expect("delete");
        }
        let db = engine(&file.0);
        assert_eq!(user_version(db.store()), SCHEMA_VERSION, "from {version}");
        let enqueue = |payload: &str| {
            pollster::block_on(db.enqueue("q".into(), &item(payload), &at(now)))
                .expect("enqueue")
                .id
        };
        assert_eq!(enqueue("after the upgrade"), 6, "from {version}");
        // Finish the newest message, delete it, enqueue: 7, not 6.
        db.store()
            .with_connection(|conn| {
                conn.execute("UPDATE messages SET status = 'succeeded' WHERE id = 6", [])
                    .map(drop)
                    .map_err(Error::store)
            })
            .expect("finish 6");
        let deleted = pollster::block_on(db.delete("q".into(), 6_i64.into())).expect("delete");
        assert_eq!(deleted.id, 6);
        assert_eq!(enqueue("after a delete"), 7, "from {version}");
    }
}

/// A file of schema version 4 (the messages of [`write_version_2`], upgraded to 4 by the
/// statements of that version) is upgraded to 5 in place: every message reads as it was (no
/// group, no expiry), the ready and delayed indexes keep their messages, the queue has no
/// settings, and the new features work on it.
#[test]
fn a_version_4_file_is_upgraded_to_version_5_in_place() {
    let file = TempDb::new();
    let now = BASE + 100_000;
    write_version_2(&file.0, now);
    {
        let conn = rusqlite::Connection::open(&file.0).expect("open");
        conn.execute_batch(UPGRADE_V3).expect("v3");
        conn.execute_batch(UPGRADE_V4).expect("v4");
        conn.pragma_update(None, "user_version", 4)
            .expect("version");
    }
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let all = kit::list(&db, "q").expect("list");
    let fields: Vec<_> = all
        .iter()
        .map(|m| (m.payload.as_str(), m.status, m.group.clone(), m.expires_at))
        .collect();
    assert_eq!(
        fields,
        [
            ("due", Status::Pending, None, None),
            ("over", Status::Pending, None, None),
            ("later", Status::Pending, None, None),
            ("held", Status::Processing, None, None),
            ("done", Status::Succeeded, None, None),
        ]
    );
    let clock = at(now);
    let stats = pollster::block_on(db.stats("q".into(), &clock)).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.delayed,
            stats.next_due_at,
            stats.paused,
            stats.expired_dead
        ),
        (3, 1, Some(now + 50_000), false, 0)
    );
    let settings = pollster::block_on(db.settings("q".into())).expect("settings");
    assert_eq!(settings, deadletter::QueueSettings::default());
    // Claim order is the id: `due` (1), then `over` (2), created before it.
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("due".into()));
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("over".into()));
    assert_eq!(claim_at(&db, now), None);
    // Groups and expiry on the upgraded file.
    let grouped = |payload| deadletter::Item {
        payload: Arg::Str(payload),
        group: "g".into(),
        expires_in_ms: Arg::Int(1_000),
        ..deadletter::Item::default()
    };
    let items = [grouped("g1"), grouped("g2")];
    let added = pollster::block_on(db.enqueue_many("q".into(), &items, &clock)).expect("enqueue");
    assert_eq!(added[1].expires_at, Some(now + 1_000));
    assert_eq!(claim_at(&db, now).map(|m| m.payload), Some("g1".into()));
    assert_eq!(claim_at(&db, now), None, "g2 waits behind g1");
    drop(db);
    assert_eq!(user_version(engine(&file.0).store()), SCHEMA_VERSION);
}

/// A file of schema version 5 (the messages of [`write_version_2`], upgraded to 5 by the
/// statements of those versions) is upgraded to 6 in place: every message reads as never moved,
/// and a move writes and keeps `moved_from`.
#[test]
fn a_version_5_file_is_upgraded_to_version_6_in_place() {
    let file = TempDb::new();
    let now = BASE + 100_000;
    write_version_2(&file.0, now);
    {
        let conn = rusqlite::Connection::open(&file.0).expect("open");
        for step in [UPGRADE_V3, UPGRADE_V4, UPGRADE_V5] {
            conn.execute_batch(step).expect("upgrade");
        }
        conn.pragma_update(None, "user_version", 5)
            .expect("version");
    }
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let all = kit::list(&db, "q").expect("list");
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|m| m.moved_from.is_none()), "{all:?}");
    let first = all[0].clone();
    let clock = at(now);
    let moved = pollster::block_on(db.move_message(
        "q".into(),
        first.id.into(),
        "elsewhere".into(),
        &clock,
    ))
    .expect("move");
    assert_eq!(
        (moved.queue.as_str(), moved.moved_from.as_deref()),
        ("elsewhere", Some("q"))
    );
    drop(db);
    let db = engine(&file.0);
    let read = pollster::block_on(db.get("elsewhere".into(), first.id.into())).expect("get");
    assert_eq!(
        read,
        Message {
            queue: "elsewhere".into(),
            moved_from: Some("q".into()),
            updated_at: now,
            ..first
        }
    );
}

/// Every row of `messages`, every column, in id order: what an upgrade must keep.
fn table(conn: &rusqlite::Connection) -> Vec<Vec<Value>> {
    let mut statement = conn
        .prepare("SELECT * FROM messages ORDER BY id")
        .expect("select");
    let width = statement.column_count();
    let rows = statement
        .query_map([], |row| (0..width).map(|i| row.get(i)).collect())
        .expect("rows");
    rows.collect::<rusqlite::Result<_>>().expect("read")
}

/// The name and SQL of every index of `messages`, by name.
fn indexes(conn: &rusqlite::Connection) -> Vec<(String, String)> {
    let mut statement = conn
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        .expect("schema");
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("rows");
    rows.collect::<rusqlite::Result<_>>().expect("read")
}

/// A file of schema version 6 with messages of every status (those of [`write_version_2`], two
/// dead ones, one with a 3 000-byte error that spilled out of the old index's page) is upgraded to
/// 7 (and 8) in place: every row stays as it was, byte for byte; `messages_dead` changes to
/// `(queue, id)` (and version 8's indexes replace three: [`a_version_7_file_is_upgraded_to_version_8_in_place`]);
/// and the dead messages are listed, counted, dated and replayed as before.
#[test]
fn a_version_6_file_is_upgraded_to_version_7_in_place() {
    let file = TempDb::new();
    let now = BASE + 100_000;
    write_version_2(&file.0, now);
    let long = "x".repeat(3_000);
    let (before, old_indexes) = {
        let conn = rusqlite::Connection::open(&file.0).expect("open");
        for step in [UPGRADE_V3, UPGRADE_V4, UPGRADE_V5, UPGRADE_V6] {
            conn.execute_batch(step).expect("upgrade");
        }
        conn.pragma_update(None, "user_version", 6)
            .expect("version");
        let mut dead = conn
            .prepare(
                "INSERT INTO messages (queue, payload, status, retry_count, max_retries, \
                 last_error, created_at, updated_at, dead_at, first_failed_at, errors, \
                 errors_dropped) VALUES ('q', ?1, 'dead', 3, 3, ?2, ?3, ?4, ?4, ?3, ?5, 2)",
            )
            .expect("insert");
        for (payload, error, died) in [
            ("poison", long.as_str(), BASE + 20),
            ("bad", "HTTP 400", BASE + 10),
        ] {
            let errors = format!(r#"[{{"attempt":3,"error":"{error}","at":{died}}}]"#);
            dead.execute(params![payload, error, BASE + 5, died, errors])
                .expect("dead");
        }
        (table(&conn), indexes(&conn))
    };
    let db = engine(&file.0);
    assert_eq!(user_version(db.store()), SCHEMA_VERSION);
    let (after, new_indexes) = db
        .store()
        .with_connection(|conn| Ok((table(conn), indexes(conn))))
        .expect("read");
    assert_eq!(after, before);
    let changed: Vec<_> = new_indexes
        .iter()
        .filter(|index| !old_indexes.contains(index))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        changed,
        ["messages_dead", "messages_pending", "messages_succeeded"]
    );
    assert!(new_indexes.contains(&(
        "messages_dead".to_owned(),
        "CREATE INDEX messages_dead ON messages (queue, id) WHERE status = 'dead'".to_owned()
    )));
    assert_eq!(new_indexes.len(), old_indexes.len() - 1);

    let clock = at(now);
    let dead = FilterArgs {
        status: "dead".into(),
        ..FilterArgs::default()
    };
    let page =
        pollster::block_on(db.list("q".into(), &dead, Arg::Null, Arg::Null, &clock)).expect("list");
    let listed: Vec<_> = page
        .messages
        .iter()
        .map(|m| (m.id, m.payload.as_str(), m.last_error.as_deref(), m.dead_at))
        .collect();
    assert_eq!(
        listed,
        [
            (6, "poison", Some(long.as_str()), Some(BASE + 20)),
            (7, "bad", Some("HTTP 400"), Some(BASE + 10))
        ]
    );
    let stats = pollster::block_on(db.stats("q".into(), &clock)).expect("stats");
    assert_eq!(
        (stats.pending, stats.processing, stats.succeeded, stats.dead),
        (3, 1, 1, 2)
    );
    assert_eq!(stats.oldest_dead_age_ms, Some(now - (BASE + 10)));
    let big = FilterArgs {
        error_contains: "xxx".into(),
        ..dead.clone()
    };
    let replayed =
        pollster::block_on(db.replay_all("q".into(), &big, Arg::Null, Arg::Null, &clock))
            .expect("replay_all");
    assert_eq!(replayed, 1);
    let stats = pollster::block_on(db.stats("q".into(), &clock)).expect("stats");
    assert_eq!(
        (stats.pending, stats.dead, stats.oldest_dead_age_ms),
        (4, 1, Some(now - (BASE + 10)))
    );
    drop(db);
    assert_eq!(user_version(engine(&file.0).store()), SCHEMA_VERSION);
}

/// The instant [`fill_every_status`] writes at.
const FILLED_AT: i64 = BASE + 1_000;

/// Messages in every status and lane, written by the store at [`FILLED_AT`]: in queue `q`, 1 dead
/// (failed for good), 2 succeeded, 3 failed once (waiting for its backoff, which ends at
/// `FILLED_AT + 2 s`), 4 processing, 5 delayed by a minute, 6 to 8 an ordering group (6 its head,
/// 7 and 8 blocked behind it), 9 with an idempotency key, 10 expiring in 1 000 s; in queue
/// `other`, 11 succeeded and 12 pending.
fn fill_every_status(db: &Engine<SqliteStore>) {
    let clock = at(FILLED_AT);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let enqueue = |queue: &str, items: &[Item<'_>]| {
        pollster::block_on(db.enqueue_many(queue.into(), items, &clock)).expect("enqueue")
    };
    let claim = |queue: &str, n: i64| {
        let claimed = pollster::block_on(db.claim_many(
            queue.into(),
            Arg::Int(n),
            Arg::Null,
            || "t".into(),
            &call,
        ));
        let ids: Vec<i64> = claimed.expect("claim").value.iter().map(|m| m.id).collect();
        ids
    };
    let fail = |id: i64, retryable: bool| {
        pollster::block_on(db.fail(
            "q".into(),
            id.into(),
            "HTTP 503".into(),
            "t".into(),
            Arg::Bool(retryable),
            Arg::Null,
            &call,
        ))
        .expect("fail")
        .value
    };
    let succeed = |queue: &str, id: i64| {
        pollster::block_on(db.succeed(queue.into(), id.into(), "t".into(), &clock))
            .expect("succeed")
    };
    enqueue("q", &[item("poison")]);
    assert_eq!(claim("q", 1), [1]);
    assert_eq!(fail(1, false).status, Status::Dead);
    enqueue("q", &[item("a"), item("b"), item("c")]);
    assert_eq!(claim("q", 2), [2, 3]);
    succeed("q", 2);
    assert_eq!(fail(3, true).retry_after, Some(FILLED_AT + 2_000));
    assert_eq!(claim("q", 1), [4]);
    let grouped = |payload| Item {
        payload: Arg::Str(payload),
        group: "g".into(),
        ..Item::default()
    };
    enqueue(
        "q",
        &[
            Item {
                delay_ms: Arg::Int(60_000),
                ..item("later")
            },
            grouped("g1"),
            grouped("g2"),
            grouped("g3"),
            Item {
                idempotency_key: "k1".into(),
                ..item("keyed")
            },
            Item {
                expires_in_ms: Arg::Int(1_000_000),
                ..item("expiring")
            },
        ],
    );
    enqueue("other", &[item("x"), item("y")]);
    assert_eq!(claim("other", 1), [11]);
    succeed("other", 11);
}

/// What `list` (every page of 3 of every status, and of each status), `stats` and `queues`
/// answer at `now`.
fn answers(db: &Engine<SqliteStore>, now: i64) -> (Vec<Vec<Message>>, Vec<Stats>) {
    let clock = at(now);
    let mut pages = Vec::new();
    for queue in ["q", "other"] {
        for status in [
            None,
            Some("pending"),
            Some("processing"),
            Some("succeeded"),
            Some("dead"),
        ] {
            let filters = FilterArgs {
                status: status.map_or(Arg::Null, Arg::Str),
                ..FilterArgs::default()
            };
            let mut after = Arg::Null;
            loop {
                let page =
                    pollster::block_on(db.list(queue.into(), &filters, Arg::Int(3), after, &clock))
                        .expect("list");
                pages.push(page.messages);
                match page.next_after_id {
                    Some(id) => after = Arg::Int(id),
                    None => break,
                }
            }
        }
    }
    let stats = pollster::block_on(db.queues(&clock)).expect("queues");
    (pages, stats)
}

/// The SQL of every index a file of schema version 7 has, as its statements create them.
fn version_7_indexes() -> Vec<String> {
    let conn = rusqlite::Connection::open_in_memory().expect("open");
    for step in [
        SCHEMA_V1, UPGRADE_V2, UPGRADE_V3, UPGRADE_V4, UPGRADE_V5, UPGRADE_V6, UPGRADE_V7,
    ] {
        conn.execute_batch(step).expect("upgrade");
    }
    indexes(&conn).into_iter().map(|(_, sql)| sql).collect()
}

/// A file of schema version 7 with messages in every status and lane ([`fill_every_status`]:
/// version 7 and 8 store the same rows, so the file is written by this store and given version
/// 7's indexes) is upgraded to 8 in place: every row stays as it was, byte for byte; the indexes
/// are those of a new file; and `list` (every page, of every status), `stats`, `queues` and
/// claims answer as on the file written at version 8.
#[test]
fn a_version_7_file_is_upgraded_to_version_8_in_place() {
    let (old, new) = (TempDb::new(), TempDb::new());
    for file in [&old, &new] {
        fill_every_status(&engine(&file.0));
    }
    let before = {
        let mut conn = rusqlite::Connection::open(&old.0).expect("open");
        let tx = conn.transaction().expect("begin");
        for (name, _) in indexes(&tx) {
            tx.execute_batch(&format!("DROP INDEX {name}"))
                .expect("drop");
        }
        for sql in version_7_indexes() {
            tx.execute_batch(&sql).expect("create");
        }
        tx.pragma_update(None, "user_version", 7).expect("version");
        tx.commit().expect("commit");
        table(&conn)
    };
    let (upgraded, reference) = (engine(&old.0), engine(&new.0));
    assert_eq!(user_version(upgraded.store()), SCHEMA_VERSION);
    let read = |db: &Engine<SqliteStore>| {
        db.store()
            .with_connection(|conn| Ok((table(conn), indexes(conn))))
            .expect("read")
    };
    let ((rows, indexes_after), (reference_rows, reference_indexes)) =
        (read(&upgraded), read(&reference));
    assert_eq!(rows, before);
    assert_eq!(rows, reference_rows);
    assert_eq!(indexes_after, reference_indexes);

    // 3 s later: message 3's backoff is over, and no claim has moved it to the ready lane yet.
    let now = FILLED_AT + 3_000;
    let answered = answers(&upgraded, now);
    assert_eq!(answered, answers(&reference, now));
    let (pages, stats) = answered;
    let ids: Vec<Vec<i64>> = pages
        .iter()
        .map(|page| page.iter().map(|m| m.id).collect())
        .collect();
    assert_eq!(
        ids,
        [
            // q: every status, then pending, processing, succeeded, dead
            vec![1, 2, 3],
            vec![4, 5, 6],
            vec![7, 8, 9],
            vec![10],
            vec![3, 5, 6],
            vec![7, 8, 9],
            vec![10],
            vec![4],
            vec![2],
            vec![1],
            // other
            vec![11, 12],
            vec![12],
            vec![],
            vec![11],
            vec![],
        ]
    );
    let q = &stats[1];
    assert_eq!(
        (
            q.queue.as_str(),
            q.pending,
            q.processing,
            q.succeeded,
            q.dead,
            q.delayed,
            q.oldest_due_age_ms
        ),
        ("q", 7, 1, 1, 1, 1, Some(3_000))
    );
    let names: Vec<&str> = stats.iter().map(|s| s.queue.as_str()).collect();
    assert_eq!(names, ["other", "q"]);
    for db in [&upgraded, &reference] {
        let clock = at(now);
        let call = Call {
            clock: &clock,
            backoff: None,
            sample: 0.0,
        };
        let claimed = pollster::block_on(db.claim_many(
            "q".into(),
            Arg::Int(10),
            Arg::Null,
            || "t2".into(),
            &call,
        ))
        .expect("claim");
        let ids: Vec<i64> = claimed.value.iter().map(|m| m.id).collect();
        // In claim order: 3 (its backoff over), the group's head, the keyed and expiring ones.
        assert_eq!(ids, [3, 6, 9, 10]);
    }
}
