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
/// as written; at `now` the counts see one delayed, one expired lease and the oldest due since
/// `BASE + 1`; claims take the due ones in FIFO order, the one whose backoff is over (not moved
/// to the ready lane yet) first; the expired lease is reaped into backoff, and the one still in
/// backoff stays.
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
        (3, 1, Some(now + 50_000), 1, Some(now - (BASE + 1)))
    );
    assert_eq!(claim_at(db, now).map(|m| m.payload), Some("over".into()));
    assert_eq!(claim_at(db, now).map(|m| m.payload), Some("due".into()));
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
