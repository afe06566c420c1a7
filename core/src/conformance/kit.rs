//! What the store crates' own tests share beyond the cases: steps through the engine at a given
//! instant, and the scenarios every store must pass that no case can write (a case's clock never
//! goes back). Each store's tests call them on their store.

use std::time::Duration;

use super::BASE;
use crate::{Arg, Call, Engine, FilterArgs, Id, Item, Message, Millis, Result, Status, Store};

/// The queue the kit's steps use.
pub const QUEUE: &str = "q";

/// The lease token the kit's claims draw.
pub const TOKEN: &str = "tok";

/// A clock stopped at `now`.
pub fn at(now: Millis) -> impl Fn() -> Result<Millis> {
    move || Ok(now)
}

/// The first page (100 messages, no filter) of `queue`, in id order: what a test reads back.
pub fn list<S: Store>(db: &Engine<S>, queue: &str) -> Result<Vec<Message>> {
    let (none, clock) = (FilterArgs::default(), at(BASE));
    let page = db.list(queue.into(), &none, Arg::Null, Arg::Null, &clock);
    Ok(pollster::block_on(page)?.messages)
}

/// The system clock, UTC milliseconds: for the tests that need real time (a lock held by another
/// connection for seconds).
///
/// # Panics
/// When the system clock is before 1970 or past the range of `i64` milliseconds.
#[allow(clippy::unnecessary_wraps)] // an engine's clock may fail; this one does not
pub fn system_now() -> Result<Millis> {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    Ok(Millis::try_from(since.as_millis()).expect("in range"))
}

/// Enqueues `payload` on [`QUEUE`] at `now`, claimable `delay_ms` later.
///
/// # Panics
/// When the engine refuses it.
pub fn enqueue_at<S: Store>(
    db: &Engine<S>,
    payload: &str,
    delay_ms: Millis,
    now: Millis,
) -> Message {
    let item = Item {
        payload: Arg::Str(payload),
        delay_ms: Arg::Int(delay_ms),
        ..Item::default()
    };
    pollster::block_on(db.enqueue(QUEUE.into(), &item, &at(now))).expect("enqueue")
}

/// Claims from [`QUEUE`] at `now` with the default lease and backoff and jitter sample 0, under
/// [`TOKEN`]; the message taken, if one was due.
///
/// # Panics
/// When the engine fails.
pub fn claim_at<S: Store>(db: &Engine<S>, now: Millis) -> Option<Message> {
    let clock = at(now);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    pollster::block_on(db.claim(QUEUE.into(), Arg::Null, || TOKEN.into(), &call))
        .expect("claim")
        .value
}

/// A message that a claim moved to the ready lane ([`crate::storage::Lane`]) is not claimed when
/// the clock goes back before its `retry_after` (another worker's clock, say): it is delayed
/// again (counted as delayed, the next due), and claimed once its `retry_after` comes. `db` is a
/// fresh, empty store; `base` the instant the scenario starts at.
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn a_moved_message_is_not_claimed_when_the_clock_goes_back<S: Store>(
    db: &Engine<S>,
    base: Millis,
) {
    let delayed = enqueue_at(db, "delayed", 10_000, base);
    let due = enqueue_at(db, "due", 0, base + 1);
    // At base + 20 s both are due: the claim moves the delayed one to the ready lane and takes
    // the oldest (the delayed one); then ...
    let taken = claim_at(db, base + 20_000).expect("the delayed message");
    assert_eq!(taken.id, delayed.id);
    let other = enqueue_at(db, "again", 10_000, base + 2);
    let next = claim_at(db, base + 20_000).expect("the due message");
    assert_eq!(next.id, due.id);
    // ... `other` was moved by that claim (due at base + 10 s). With the clock back before its
    // retry_after, it is delayed again: not claimed, counted as delayed, next due.
    assert_eq!(claim_at(db, base + 5_000), None);
    let stats = pollster::block_on(db.stats(QUEUE.into(), &at(base + 5_000))).expect("stats");
    assert_eq!(
        (stats.delayed, stats.next_due_at, stats.oldest_due_age_ms),
        (1, Some(base + 10_002), None)
    );
    let next_due =
        pollster::block_on(db.next_due_at(QUEUE.into(), &at(base + 5_000))).expect("next");
    assert_eq!(next_due, Some(base + 10_002));
    assert_eq!(claim_at(db, base + 10_002).map(|m| m.id), Some(other.id));
}

/// Messages written before the ready lane (a schema that had no `ready` column or index) keep
/// their order once upgraded. The store held, on [`QUEUE`], as its old schema wrote them (`now`
/// the test's instant): `due` (pending, created at [`BASE`] + 3), `over` (pending, failed once,
/// `retry_after` `now - 1`, created at `BASE + 1`), `later` (pending, failed once, `retry_after`
/// `now + 50 s`, created at `BASE`), `held` (processing under a lease that ran out at `now - 5`,
/// created at `BASE + 2`), and any others that are neither pending nor run out. They read back
/// as written; at `now` the counts see one delayed, one expired lease and the first due message
/// in claim order created at `BASE + 3`; claims take the due ones in claim order (by id: `due`,
/// then `over`, whose backoff is over but which no claim had moved to the ready lane yet); the
/// expired lease is reaped into backoff, and the one still in backoff stays. The fixtures give
/// `due` the lowest id: before claim order was by id, `over` (older) came first.
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn messages_written_before_the_ready_lane_keep_their_order<S: Store>(
    db: &Engine<S>,
    now: Millis,
) {
    let all = list(db, QUEUE).expect("list");
    let fields: Vec<(&str, Status, Option<Millis>)> = all
        .iter()
        .filter(|m| ["due", "over", "later", "held"].contains(&m.payload.as_str()))
        .map(|m| (m.payload.as_str(), m.status, m.retry_after))
        .collect();
    assert_eq!(
        fields,
        [
            ("due", Status::Pending, None),
            ("over", Status::Pending, Some(now - 1)),
            ("later", Status::Pending, Some(now + 50_000)),
            ("held", Status::Processing, None),
        ]
    );
    let stats = pollster::block_on(db.stats(QUEUE.into(), &at(now))).expect("stats");
    assert_eq!(
        (
            stats.pending,
            stats.delayed,
            stats.next_due_at,
            stats.expired,
            stats.oldest_due_age_ms,
        ),
        (3, 1, Some(now + 50_000), 1, Some(now - (BASE + 3)))
    );
    assert_eq!(claim_at(db, now).map(|m| m.payload), Some("due".into()));
    assert_eq!(claim_at(db, now).map(|m| m.payload), Some("over".into()));
    assert_eq!(claim_at(db, now), None);
    let held = all.iter().find(|m| m.payload == "held").expect("held");
    let held = pollster::block_on(db.get(QUEUE.into(), held.id.into())).expect("get");
    assert_eq!(held.status, Status::Pending);
    assert!(held.retry_after.is_some_and(|at| at > now), "{held:?}");
}

/// How long [`a_call_that_waited_for_a_lock_decides_with_the_instant_it_got_it`] has another
/// connection hold its lock.
pub const LOCK_HOLD: Duration = Duration::from_secs(3);

/// The least a call that waited for a lock held [`LOCK_HOLD`] counts as having waited: the hold
/// less the time it took to start the call.
const LOCK_WAITED_MS: Millis = 2_900;

/// What a call of [`a_call_that_waited_for_a_lock_decides_with_the_instant_it_got_it`] waits for a
/// lock to do: the store takes the lock that call needs (SQLite's write lock for both; for
/// PostgreSQL the table's lock for the claim, the message's row lock for the failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locked {
    /// A claim on [`QUEUE`].
    Claim,
    /// The failure of this message, claimed.
    Fail(Id),
}

/// A call that waits for a lock another connection holds decides with the instant it got the lock
/// (issue 23, item 2): a claim with a 2 s lease that waited [`LOCK_HOLD`] returns a lease valid for
/// its full length from the moment the call returned; so does the backoff of a failure that waited
/// the same way. (With the instant read before the wait, the lease came back already expired.)
///
/// `db` is a fresh, empty store on the system clock's time; `lock(what)` makes another connection
/// take the lock `what` waits for and returns what releases it (run [`LOCK_HOLD`] later on another
/// thread); `slack_ms` the granularity allowed between the instant the store read and the call's
/// return (the commit and the clock's resolution).
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn a_call_that_waited_for_a_lock_decides_with_the_instant_it_got_it<S, R>(
    db: &Engine<S>,
    slack_ms: Millis,
    lock: impl Fn(Locked) -> R,
) where
    S: Store,
    R: FnOnce() + Send,
{
    let item = Item {
        payload: Arg::Str("a"),
        ..Item::default()
    };
    pollster::block_on(db.enqueue(QUEUE.into(), &item, &system_now)).expect("enqueue");
    let call = Call {
        clock: &system_now,
        backoff: None,
        sample: 0.0,
    };

    let (claimed, waited, returned) = while_locked(lock(Locked::Claim), || {
        pollster::block_on(db.claim(QUEUE.into(), Arg::Int(2_000), || TOKEN.into(), &call))
    });
    let claimed = claimed.expect("claim").value.expect("the message");
    assert!(
        waited >= LOCK_WAITED_MS,
        "the claim did not wait for the lock ({waited} ms)"
    );
    let lease = claimed.lease_expires_at.expect("a lease");
    assert!(
        lease - returned >= 2_000 - slack_ms,
        "a 2 s lease handed out after a {waited} ms wait runs out {} ms after the call returned",
        lease - returned
    );

    let (failed, waited, returned) = while_locked(lock(Locked::Fail(claimed.id)), || {
        pollster::block_on(db.fail(
            QUEUE.into(),
            claimed.id.into(),
            "boom".into(),
            TOKEN.into(),
            Arg::Null,
            Arg::Null,
            &call,
        ))
    });
    assert!(
        waited >= LOCK_WAITED_MS,
        "the failure did not wait for the lock ({waited} ms)"
    );
    let retry_after = failed.expect("fail").value.retry_after.expect("a backoff");
    // The first failure's backoff is 2 s from the instant of the failure.
    assert!(
        retry_after - returned >= 2_000 - slack_ms,
        "a 2 s backoff ends {} ms after the call returned",
        retry_after - returned
    );
}

/// Runs `call` while a lock is held, `release` running [`LOCK_HOLD`] later on another thread;
/// returns what it returned, how long it took and the instant it returned at.
fn while_locked<T>(release: impl FnOnce() + Send, call: impl FnOnce() -> T) -> (T, Millis, Millis) {
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(LOCK_HOLD);
            release();
        });
        let started = system_now().expect("clock");
        let value = call();
        let returned = system_now().expect("clock");
        (value, returned - started, returned)
    })
}

/// Claims every message of `queue` at `now`, a batch of up to 100 at a time, acking each batch
/// before the next: the ids in the order claimed, with their groups. A batch never holds two
/// members of one group (the members behind a group's head are not claimable).
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn drain<S: Store>(db: &Engine<S>, queue: &str, now: Millis) -> Vec<(Id, Option<String>)> {
    let clock = at(now);
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    let mut order = Vec::new();
    loop {
        let claim = db.claim_many(queue.into(), Arg::Int(100), Arg::Null, String::new, &call);
        let batch = pollster::block_on(claim).expect("claim").value;
        if batch.is_empty() {
            return order;
        }
        let mut groups: Vec<&str> = batch.iter().filter_map(|m| m.group.as_deref()).collect();
        let grouped = groups.len();
        groups.sort_unstable();
        groups.dedup();
        assert_eq!(
            groups.len(),
            grouped,
            "two members of a group at once: {batch:?}"
        );
        for m in &batch {
            let done = db.succeed(queue.into(), m.id.into(), Arg::Null, &clock);
            pollster::block_on(done).expect("succeed");
            order.push((m.id, m.group.clone()));
        }
    }
}

/// `move_all` over more than one batch ([`crate::BATCH`]) of grouped messages with idempotency
/// keys, some of which the target already holds: its dry run counts exactly what it then moves;
/// the messages whose key is taken stay (not counted), as does the head being processed; every
/// group, in the old queue and in the new one, is delivered one member at a time in the order
/// its members entered it (in the new queue behind the member it already had). `db` is a fresh,
/// empty store.
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn a_bulk_move_keeps_every_group_in_order_across_batches<S: Store>(db: &Engine<S>) {
    const N: usize = 450;
    let clock = at(BASE);
    let (keys, payloads): (Vec<String>, Vec<String>) =
        (0..N).map(|i| (format!("k{i}"), format!("m{i}"))).unzip();
    let groups = ["g0", "g1", "g2"];
    for chunk in (0..N).collect::<Vec<_>>().chunks(150) {
        let items: Vec<Item<'_>> = chunk
            .iter()
            .map(|&i| Item {
                payload: Arg::Str(&payloads[i]),
                idempotency_key: Arg::Str(&keys[i]),
                group: Arg::Str(groups[i % 3]),
                ..Item::default()
            })
            .collect();
        pollster::block_on(db.enqueue_many(QUEUE.into(), &items, &clock)).expect("enqueue");
    }
    // The target holds every seventh key, and a member of g1 that the moved ones go behind.
    let taken: Vec<Item<'_>> = (0..N)
        .step_by(7)
        .map(|i| Item {
            payload: "there".into(),
            idempotency_key: Arg::Str(&keys[i]),
            ..Item::default()
        })
        .chain([Item {
            payload: "first of g1".into(),
            group: "g1".into(),
            ..Item::default()
        }])
        .collect();
    let there = pollster::block_on(db.enqueue_many("q2".into(), &taken, &clock)).expect("there");
    let first_of_g1 = there.last().expect("g1's member").id;
    let head = claim_at(db, BASE).expect("the head of g0");
    let none = FilterArgs::default();
    let move_all = |dry_run: bool| {
        let moved = db.move_all(
            QUEUE.into(),
            "q2".into(),
            &none,
            Arg::Null,
            Arg::Bool(dry_run),
            &clock,
        );
        pollster::block_on(moved).expect("move_all")
    };
    let expected = (1..N).filter(|i| i % 7 != 0).count() as u64;
    assert_eq!(move_all(true), expected, "the dry run");
    assert_eq!(move_all(false), expected);
    assert_eq!(move_all(true), 0, "nothing is left to move");
    // The head (m0, processing) stays, and so does every message whose key q2 holds.
    let stayed: Vec<Id> = list(db, QUEUE)
        .expect("list")
        .iter()
        .map(|m| m.id)
        .collect();
    let ids = |i: usize| Id::try_from(i + 1).expect("an id");
    let want: Vec<Id> = (0..N).filter(|i| i % 7 == 0).map(ids).collect();
    assert_eq!((head.id, &stayed), (ids(0), &want));
    let done = db.succeed(QUEUE.into(), head.id.into(), Arg::Null, &clock);
    pollster::block_on(done).expect("ack the head");
    for queue in [QUEUE, "q2"] {
        let order = drain(db, queue, BASE);
        for group in groups {
            let members: Vec<Id> = order
                .iter()
                .filter(|(_, g)| g.as_deref() == Some(group))
                .map(|(id, _)| *id)
                .collect();
            // Entry order: ids ascending, behind the member q2's g1 had before the move.
            let mut entered = members.clone();
            entered.sort_unstable_by_key(|id| (*id != first_of_g1, *id));
            assert_eq!(members, entered, "{queue}, {group}: out of order");
        }
        let claimed = order.iter().filter(|(_, g)| g.is_some()).count();
        let grouped = if queue == QUEUE {
            want.len() - 1
        } else {
            usize::try_from(expected).expect("a count") + 1
        };
        assert_eq!(
            claimed, grouped,
            "{queue}: every grouped member claimed once"
        );
    }
    // The first page of q2 (ids 2..) holds moved messages only, each saying where it came from.
    let moved = list(db, "q2").expect("list");
    assert!(
        moved
            .iter()
            .all(|m| m.moved_from.as_deref() == Some(QUEUE) && m.id < first_of_g1),
        "{moved:?}"
    );
}

/// A queue stored under a name that an enqueue now refuses (one 0.1.0 accepted; its three
/// messages written here through the store, bypassing the engine's checks) keeps working: while
/// it holds messages it is paused (listed as paused, claims take nothing), given settings and
/// resumed (session 10: only the creation of a queue takes an enqueue's rules), read (settings,
/// `stats`, `list`), claimed and acked, and its messages moved out (`move`, `move_all`) to a
/// queue whose name is valid; with no message left but its row, it is paused and resumed again
/// and its settings cleared, which deletes the row. Before the messages and after the row, when
/// the queue does not exist, `pause` and `set_settings` with a field are `invalid` on `queue`
/// and create nothing; `set_settings` of nothing and `resume` store nothing and succeed. `db` is
/// a fresh, empty store.
///
/// # Panics
/// When the store does otherwise (this is a test's assertion).
pub fn a_queue_under_a_name_now_refused_keeps_working<S: Store>(db: &Engine<S>) {
    let clock = at(BASE);
    let run = |f: &dyn Fn() -> Result<Message>| f().expect("accepted");
    let call = Call {
        clock: &clock,
        backoff: None,
        sample: 0.0,
    };
    for (name, to) in [
        ("\u{3164}", "jobs"),
        ("..", "dots"),
        (" ", "blank"),
        ("emails ", "emails"),
        ("jobs\u{fe0f}", "selected jobs"),
        // Names that read as another (session 11, tester T3).
        ("ema\u{200d}ils", "joined emails"),
        ("a\u{a0}b", "a b"),
        ("cafe\u{301}", "caf\u{e9}"),
    ] {
        no_queue_named(db, name);
        let items = [Item::default(), Item::default(), Item::default()].map(|i| Item {
            payload: Arg::Str("x"),
            ..i
        });
        let mut args =
            crate::EnqueueArgs::new(&QUEUE.into(), &items, true, &crate::Limits::default())
                .expect("valid");
        args.queue = name.into();
        let ids: Vec<Id> = pollster::block_on(db.store().insert(&args, &clock))
            .expect("insert")
            .iter()
            .map(|m| m.id)
            .collect();
        assert!(
            pause(db, name, true)
                .expect("pause an existing queue")
                .paused
        );
        assert!(listed(db).contains(&(name.to_owned(), true)), "{name:?}");
        let claim = || {
            pollster::block_on(db.claim(name.into(), Arg::Null, || TOKEN.into(), &call))
                .expect("claim")
                .value
        };
        assert_eq!(claim(), None, "{name:?} is paused");
        let configured = set_retries(db, name, &Arg::Int(5)).expect("set_settings");
        assert_eq!((configured.max_retries, configured.paused), (Some(5), true));
        let stored = pollster::block_on(db.settings(name.into())).expect("settings");
        assert_eq!(stored, configured);
        assert!(!pause(db, name, false).expect("resume").paused);
        let claimed = claim().expect("due");
        assert_eq!((claimed.id, claimed.queue.as_str()), (ids[0], name));
        run(&|| pollster::block_on(db.succeed(name.into(), ids[0].into(), TOKEN.into(), &clock)));
        let moved = run(&|| {
            pollster::block_on(db.move_message(name.into(), ids[1].into(), to.into(), &clock))
        });
        assert_eq!(
            (moved.queue.as_str(), moved.moved_from.as_deref()),
            (to, Some(name))
        );
        let none = FilterArgs::default();
        let all = db.move_all(name.into(), to.into(), &none, Arg::Null, Arg::Null, &clock);
        assert_eq!(pollster::block_on(all).expect("move_all"), 1);
        let left: Vec<(Id, Status)> = list(db, name)
            .expect("list")
            .iter()
            .map(|m| (m.id, m.status))
            .collect();
        assert_eq!(left, [(ids[0], Status::Succeeded)]);
        let moved: Vec<Id> = list(db, to).expect("list").iter().map(|m| m.id).collect();
        assert_eq!(moved, ids[1..]);
        let stats = pollster::block_on(db.stats(name.into(), &clock)).expect("stats");
        assert_eq!(
            (stats.pending, stats.succeeded, stats.paused),
            (0, 1, false)
        );
        // No message left, the row (max_retries 5) still stored: the queue exists.
        run(&|| pollster::block_on(db.delete(name.into(), ids[0].into())));
        assert!(
            pause(db, name, true)
                .expect("pause a queue with a row")
                .paused
        );
        assert!(listed(db).contains(&(name.to_owned(), true)), "{name:?}");
        assert!(!pause(db, name, false).expect("resume").paused);
        let cleared = set_retries(db, name, &Arg::Null).expect("clear");
        assert_eq!(cleared, crate::QueueSettings::default());
        no_queue_named(db, name);
    }
}

/// `pause` (`paused` true) or `resume` of `name`.
fn pause<S: Store>(db: &Engine<S>, name: &str, paused: bool) -> Result<crate::QueueSettings> {
    pollster::block_on(db.pause(name.into(), paused))
}

/// `set_settings` of `name` with `max_retries` only.
fn set_retries<S: Store>(
    db: &Engine<S>,
    name: &str,
    max_retries: &Arg<'_>,
) -> Result<crate::QueueSettings> {
    let none = Arg::Null;
    let args = crate::SettingsArgs::new(&name.into(), None, max_retries, &none, &none, &none)
        .expect("valid fields");
    pollster::block_on(db.set_settings(&args))
}

/// Every queue listed, with whether it is paused.
fn listed<S: Store>(db: &Engine<S>) -> Vec<(String, bool)> {
    let all = pollster::block_on(db.queues(&at(BASE))).expect("queues");
    all.into_iter().map(|s| (s.queue, s.paused)).collect()
}

/// With no queue `name` (an enqueue refuses the name), `pause` and `set_settings` with a field
/// are `invalid` on `queue`, `resume` and `set_settings` of nothing store nothing and succeed,
/// and nothing is listed under `name`.
fn no_queue_named<S: Store>(db: &Engine<S>, name: &str) {
    let refused = |err: crate::Error| {
        let fields: Vec<_> = err
            .field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect();
        assert_eq!(fields, [("queue", "invalid")], "{name:?}");
    };
    refused(pause(db, name, true).expect_err("pause creates the queue"));
    refused(set_retries(db, name, &Arg::Int(5)).expect_err("set_settings creates the queue"));
    assert!(
        !pause(db, name, false)
            .expect("resume stores nothing")
            .paused
    );
    let cleared = set_retries(db, name, &Arg::Null).expect("set_settings of nothing");
    assert_eq!(cleared, crate::QueueSettings::default());
    assert!(listed(db).iter().all(|(q, _)| q != name), "{name:?}");
}
