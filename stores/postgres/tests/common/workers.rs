//! Worker threads that each open their own store (their own connection) and claim from one
//! queue with random outcomes, and the checks on what they did together.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use deadletter::{Arg, Backoff, Call, Engine, Error, Id, Item, Limits, Millis, Status};
use deadletter_postgres::PostgresStore;

/// What a worker does with a claimed message, per mille.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    /// Fails it (retryable): back to pending after a short backoff.
    pub fail: u32,
    /// Fails it as permanent: dead.
    pub fail_permanently: u32,
    /// Drops it without a word, as a crashed worker: its lease must run out.
    pub abandon: u32,
}

/// How one holder's claim ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `succeed` returned the message.
    Acked,
    /// `fail` returned the message (pending again, or dead).
    Failed,
    /// The worker dropped it.
    Abandoned,
    /// `succeed`/`fail` said `conflict`: the lease had run out and was reaped.
    LeaseLost,
    /// `succeed`/`fail` failed with a store error: it may or may not have committed.
    Unknown,
}

/// One claim by one holder.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The message.
    pub id: Id,
    /// The claim's `now` (the message's `updated_at` as claimed).
    pub at: Millis,
    /// Until when the holder held the lease.
    pub lease_expires_at: Millis,
    /// How it ended.
    pub end: End,
}

/// Everything one worker saw.
#[derive(Debug, Default)]
pub struct Log {
    /// Its claims, in order.
    pub claims: Vec<Claim>,
    /// Store errors from any call (claim, succeed, fail, stats).
    pub store_errors: usize,
    /// When each store error happened.
    pub store_error_times: Vec<Instant>,
    /// The first store error's text.
    pub first_store_error: Option<String>,
}

/// The wall clock in UTC ms: these tests run real workers against a real server.
pub fn wall_now() -> Millis {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    Millis::try_from(since.as_millis()).expect("fits")
}

/// A random number in 0..1000 (from the OS, through uuid's v4 generator).
fn per_mille() -> u32 {
    u32::try_from(uuid::Uuid::new_v4().as_u128() % 1000).expect("< 1000")
}

/// [`wall_now`] as the engine's clock.
#[allow(clippy::unnecessary_wraps)] // the engine's clock may fail
pub fn wall_clock() -> deadletter::Result<Millis> {
    Ok(wall_now())
}

/// Enqueues `total` messages (`max_retries` 10) in batches of 1000.
pub fn enqueue(store: PostgresStore, queue: &str, total: usize) {
    let engine = Engine::new(store, Limits::default());
    let items: Vec<Item<'_>> = (0..1000)
        .map(|_| Item {
            payload: Arg::Str("{\"job\": true}"),
            max_retries: Arg::Int(10),
            ..Item::default()
        })
        .collect();
    for start in (0..total).step_by(1000) {
        let n = (total - start).min(1000);
        pollster::block_on(engine.enqueue_many(queue.into(), &items[..n], &wall_clock))
            .expect("enqueue");
    }
}

/// Claims from `queue` until every one of `total` messages is succeeded or dead (or `stop` is
/// set), acting on each as `mix` draws. Store errors are recorded and waited out (20 ms).
pub fn work(
    store: PostgresStore,
    queue: &str,
    total: u64,
    lease_ms: i64,
    mix: Mix,
    stop: &AtomicBool,
) -> Log {
    let engine = Engine::new(store, Limits::default());
    // Short backoffs (5 ms, doubling, at most 40 ms), so that retries come back during the test.
    let policy = Backoff::new(&Arg::Int(5), &Arg::Null, &Arg::Int(40), &Arg::Null).expect("policy");
    let mut log = Log::default();
    let store_error = |log: &mut Log, err: &Error| {
        assert_eq!(err.code(), "store", "{err}");
        log.store_errors += 1;
        log.store_error_times.push(Instant::now());
        log.first_store_error.get_or_insert_with(|| err.to_string());
        std::thread::sleep(Duration::from_millis(20));
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !stop.load(Ordering::Relaxed) {
        assert!(
            Instant::now() < deadline,
            "workers did not finish in 5 minutes"
        );
        let at = Call {
            clock: &wall_clock,
            backoff: Some(&policy),
            sample: 0.5,
        };
        let token = || uuid::Uuid::new_v4().to_string();
        let claimed =
            pollster::block_on(engine.claim(queue.into(), Arg::Int(lease_ms), token, &at));
        let message = match claimed {
            Err(err) => {
                store_error(&mut log, &err);
                continue;
            }
            Ok(out) => out.value,
        };
        let Some(message) = message else {
            match pollster::block_on(engine.stats(queue.into(), &wall_clock)) {
                Ok(stats) if stats.succeeded + stats.dead == total => break,
                Ok(_) => std::thread::sleep(Duration::from_millis(5)),
                Err(err) => store_error(&mut log, &err),
            }
            continue;
        };
        let token = message
            .lease_token
            .clone()
            .expect("a claimed message has a token");
        let draw = per_mille();
        let result = if draw < mix.abandon {
            None
        } else if draw < mix.abandon + mix.fail + mix.fail_permanently {
            let retryable = draw < mix.abandon + mix.fail;
            Some(
                pollster::block_on(engine.fail(
                    queue.into(),
                    message.id.into(),
                    "random failure".into(),
                    token.as_str().into(),
                    Arg::Bool(retryable),
                    Arg::Null,
                    &at,
                ))
                .map(|out| out.value),
            )
        } else {
            Some(pollster::block_on(engine.succeed(
                queue.into(),
                message.id.into(),
                token.as_str().into(),
                &wall_clock,
            )))
        };
        let end = match result {
            None => End::Abandoned,
            Some(Ok(m)) if m.status == Status::Succeeded => End::Acked,
            Some(Ok(_)) => End::Failed,
            Some(Err(err)) if err.code() == "conflict" => End::LeaseLost,
            Some(Err(err)) => {
                store_error(&mut log, &err);
                End::Unknown
            }
        };
        log.claims.push(Claim {
            id: message.id,
            at: message.updated_at,
            lease_expires_at: message.lease_expires_at.expect("a lease"),
            end,
        });
    }
    log
}

/// What the claims of all workers add up to.
#[derive(Debug)]
pub struct Summary {
    /// Claims made.
    pub claims: usize,
    /// Ids acked (each once).
    pub acked: HashSet<Id>,
    /// Claims per ending.
    pub ends: HashMap<String, usize>,
}

/// Checks that no message was held by two holders at once and none was acked twice: for each
/// id, in claim order, a claim after an ack is an error; a claim after one that ended without
/// releasing the message (abandoned, lease lost) happened only once that lease had run out. (A
/// claim whose ack or fail got a store error may have released it: the next one is not checked.)
///
/// # Panics
/// On any violation, naming the id.
pub fn check_holders(logs: &[Log]) -> Summary {
    let mut by_id: HashMap<Id, Vec<&Claim>> = HashMap::new();
    let mut ends = HashMap::new();
    for claim in logs.iter().flat_map(|log| &log.claims) {
        by_id.entry(claim.id).or_default().push(claim);
        *ends.entry(format!("{:?}", claim.end)).or_insert(0) += 1;
    }
    let mut acked = HashSet::new();
    for (id, claims) in &mut by_id {
        claims.sort_by_key(|c| c.at);
        for pair in claims.windows(2) {
            let (held, next) = (pair[0], pair[1]);
            assert!(
                next.at > held.at,
                "message {id}: two claims at the same instant"
            );
            match held.end {
                End::Acked => panic!("message {id} was claimed again after its ack: {claims:?}"),
                End::Abandoned | End::LeaseLost => assert!(
                    next.at >= held.lease_expires_at,
                    "message {id} was claimed by a second holder while the first held it: \
                     {claims:?}"
                ),
                End::Failed | End::Unknown => {}
            }
        }
        for claim in claims.iter() {
            if claim.end == End::Acked {
                assert!(acked.insert(*id), "message {id} acked twice");
            }
        }
    }
    Summary {
        claims: by_id.values().map(Vec::len).sum(),
        acked,
        ends,
    }
}
