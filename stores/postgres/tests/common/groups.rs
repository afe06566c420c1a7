//! A queue of ordering groups whose heads are in backoff, with messages blocked behind them (issue
//! 21): what claim must not walk. The plans test asserts it reads no more pages for them; the
//! benchmark `claim_delayed` times it (it includes this file).

use deadletter::{Arg, Call, Engine, Item, Millis, Store};

/// Enqueues into `queue`, at `at`, `groups` groups of `1 + behind` messages each, then claims
/// every group's head and fails it with `retry_in` an hour, at `at` + 1 s: the heads wait in
/// backoff, the others blocked behind them.
///
/// # Panics
/// When a call fails, or a claim does not take one head per group.
pub fn heads_in_backoff<S: Store>(
    engine: &Engine<S>,
    queue: &str,
    groups: usize,
    behind: usize,
    at: Millis,
) {
    let names: Vec<String> = (0..groups).map(|g| format!("group-{g}")).collect();
    let items: Vec<Item> = names
        .iter()
        .flat_map(|name| {
            (0..=behind).map(move |_| Item {
                payload: Arg::Str("{\"to\": \"alice@example.com\"}"),
                group: Arg::Str(name),
                ..Item::default()
            })
        })
        .collect();
    let enqueued = move || Ok(at);
    for batch in items.chunks(1000) {
        pollster::block_on(engine.enqueue_many(queue.into(), batch, &enqueued)).expect("enqueue");
    }
    let later = move || Ok(at + 1000);
    let call = Call {
        clock: &later,
        backoff: None,
        sample: 0.0,
    };
    let mut failed = 0;
    while failed < groups {
        let n = (groups - failed).min(100);
        let heads = pollster::block_on(engine.claim_many(
            queue.into(),
            Arg::Int(i64::try_from(n).expect("n")),
            Arg::Int(7_200_000),
            || "t".into(),
            &call,
        ))
        .expect("claim");
        assert_eq!(heads.value.len(), n, "one head per group");
        for head in heads.value {
            pollster::block_on(engine.fail(
                queue.into(),
                Arg::Int(head.id),
                Arg::Str("later"),
                Arg::Null,
                Arg::Null,
                Arg::Int(3_600_000),
                &call,
            ))
            .expect("fail");
            failed += 1;
        }
    }
}
