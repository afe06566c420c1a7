//! What the store crates' own tests share beyond the cases: steps through the engine at a given
//! instant, and the scenarios every store must pass that no case can write (a case's clock never
//! goes back). Each store's tests call them on their store.

use crate::{Arg, Call, Engine, Item, Message, Millis, Result, Store};

/// The queue the kit's steps use.
pub const QUEUE: &str = "q";

/// The lease token the kit's claims draw.
pub const TOKEN: &str = "tok";

/// A clock stopped at `now`.
pub fn at(now: Millis) -> impl Fn() -> Result<Millis> {
    move || Ok(now)
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
