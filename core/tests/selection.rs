//! How `list` and the bulk actions select over many messages, beyond what a shared case can write
//! cheaply in every place: the scan budget of a filtered `list` at its real size
//! ([`SCAN_BUDGET`]), and bulk actions whose filter keeps a few messages of each batch read.

use deadletter::{
    Arg, Engine, FilterArgs, Item, Limits, MemoryStore, Millis, Page, Result, SCAN_BUDGET,
};

const NOW: Millis = 1_767_225_600_000;

/// The clock of the test: `NOW`.
#[allow(clippy::unnecessary_wraps)] // a clock
fn now() -> Result<Millis> {
    Ok(NOW)
}

/// A minute later: every lease of the test has run out.
#[allow(clippy::unnecessary_wraps)] // a clock
fn later() -> Result<Millis> {
    Ok(NOW + 60_000)
}

/// An engine whose queue `q` holds `n` messages, ids 1..=n, payload `match` where `matches(id)`
/// and `other` elsewhere; each made dead when `dead`.
fn queue(n: i64, matches: impl Fn(i64) -> bool, dead: bool) -> Engine<MemoryStore> {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    let payloads: Vec<&str> = (1..=n)
        .map(|id| if matches(id) { "match" } else { "other" })
        .collect();
    for chunk in payloads.chunks(1000) {
        let retries = if dead { Arg::Int(1) } else { Arg::Null };
        let items: Vec<Item<'_>> = chunk
            .iter()
            .map(|p| Item {
                payload: Arg::Str(p),
                max_retries: retries.clone(),
                ..Item::default()
            })
            .collect();
        pollster::block_on(db.enqueue_many("q".into(), &items, &now)).expect("enqueue");
    }
    if dead {
        // Every lease runs out and counts as the one attempt allowed.
        for _ in 0..(n + 99) / 100 {
            let call = deadletter::Call {
                clock: &now,
                backoff: None,
                sample: 0.0,
            };
            pollster::block_on(db.claim_many(
                "q".into(),
                Arg::Int(100),
                Arg::Null,
                String::new,
                &call,
            ))
            .expect("claim");
        }
        let call = deadletter::Call {
            clock: &later,
            backoff: None,
            sample: 0.0,
        };
        let reaped = pollster::block_on(db.reap("q".into(), &call)).expect("reap");
        assert_eq!(reaped.value, u64::try_from(n).unwrap());
    }
    db
}

fn search(db: &Engine<MemoryStore>, text: &str, limit: i64, after_id: Option<i64>) -> Page {
    let filters = FilterArgs {
        payload_contains: Arg::Str(text),
        ..FilterArgs::default()
    };
    let page = db.list("q".into(), &filters, Arg::Int(limit), after_id.into(), &now);
    pollster::block_on(page).expect("list")
}

fn ids(page: &Page) -> Vec<i64> {
    page.messages.iter().map(|m| m.id).collect()
}

#[test]
fn a_filtered_list_examines_at_most_the_scan_budget_and_says_where_to_go_on() {
    let budget = i64::try_from(SCAN_BUDGET).unwrap();
    // Matches at 2 and past the budget: the first page stops at the budget with one match.
    let db = queue(budget + 5, |id| id == 2 || id > budget + 2, false);
    let page = search(&db, "match", 10, None);
    assert_eq!((ids(&page), page.next_after_id), (vec![2], Some(budget)));
    let page = search(&db, "match", 10, page.next_after_id);
    let rest = vec![budget + 3, budget + 4, budget + 5];
    assert_eq!((ids(&page), page.next_after_id), (rest, None));
    // No match within the budget: an empty page that still says where to go on.
    let page = search(&db, "nothing", 10, None);
    assert_eq!((ids(&page), page.next_after_id), (vec![], Some(budget)));
    let page = search(&db, "nothing", 10, Some(budget));
    assert_eq!((ids(&page), page.next_after_id), (vec![], None));
    // Without a filter beyond the status a page is one read: no budget applies.
    let all = FilterArgs::default();
    let page = db.list("q".into(), &all, Arg::Int(3), Arg::Int(budget + 1), &now);
    let page = pollster::block_on(page).expect("list");
    let last = vec![budget + 2, budget + 3, budget + 4];
    assert_eq!((ids(&page), page.next_after_id), (last, Some(budget + 4)));
}

#[test]
fn a_bulk_action_with_a_sparse_filter_reads_on_until_its_limit_in_id_order() {
    // Every seventh of 1 000 dead messages matches: 142 of them, spread over five batches read.
    let db = queue(1000, |id| id % 7 == 0, true);
    let filters = FilterArgs {
        payload_contains: Arg::Str("match"),
        ..FilterArgs::default()
    };
    let replay = |limit: Arg<'static>, dry_run: bool| {
        let run = db.replay_all("q".into(), &filters, limit, dry_run.into(), &later);
        pollster::block_on(run).expect("replay_all")
    };
    assert_eq!(replay(Arg::Null, true), 142);
    assert_eq!(replay(Arg::Int(50), true), 50);
    assert_eq!(replay(Arg::Int(50), false), 50);
    let pending = FilterArgs {
        status: Arg::Str("pending"),
        ..FilterArgs::default()
    };
    let page = db.list("q".into(), &pending, Arg::Int(1000), Arg::Null, &now);
    let replayed = ids(&pollster::block_on(page).expect("list"));
    assert_eq!(replayed, (1..=50).map(|k| 7 * k).collect::<Vec<_>>());
    assert_eq!(replay(Arg::Null, true), 92);
    let deleted = db.delete_all("q".into(), &filters, Arg::Null, Arg::Null, &now);
    assert_eq!(pollster::block_on(deleted).expect("delete_all"), 92);
    let stats = pollster::block_on(db.stats("q".into(), &now)).expect("stats");
    assert_eq!((stats.pending, stats.dead), (50, 1000 - 142));
}
