//! The representable range of instants, at its lower end (the shared cases cover the upper end;
//! a clock before year 1 cannot be written as a Python `datetime`, so the bindings test it too).

use deadletter::validate::{MAX_TIME, MIN_TIME};
use deadletter::{Arg, Call, Engine, Error, FilterArgs, Item, Limits, MemoryStore, Millis, Result};

/// A clock stopped at `now`.
fn at(now: Millis) -> impl Fn() -> Result<Millis> {
    move || Ok(now)
}

fn item(payload: &str) -> Item<'_> {
    Item {
        payload: Arg::Str(payload),
        ..Item::default()
    }
}

fn fields(err: &Error) -> Vec<(&str, &str)> {
    err.field_errors()
        .iter()
        .map(|f| (f.field, f.code))
        .collect()
}

#[test]
fn a_clock_before_year_1_is_rejected_by_every_operation_and_writes_nothing() {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    pollster::block_on(async {
        let too_early = MIN_TIME - 1;
        let err = db
            .enqueue("q".into(), &item("a"), &at(too_early))
            .await
            .unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
        let clock = at(too_early);
        let call = Call {
            clock: &clock,
            backoff: None,
            sample: 0.0,
        };
        let err = db
            .claim("q".into(), Arg::Null, String::new, &call)
            .await
            .unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
        let err = db.stats("q".into(), &at(too_early)).await.unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
        // list reads the clock only for `delayed`.
        let none = FilterArgs::default();
        let clock = at(too_early);
        let page = db.list("q".into(), &none, Arg::Null, Arg::Null, &clock);
        assert!(page.await.unwrap().messages.is_empty());
        let delayed = FilterArgs {
            delayed: Arg::Bool(true),
            ..FilterArgs::default()
        };
        let page = db.list("q".into(), &delayed, Arg::Null, Arg::Null, &clock);
        assert_eq!(
            fields(&page.await.unwrap_err()),
            [("clock", "out_of_range")]
        );

        let first = db
            .enqueue("q".into(), &item("a"), &at(MIN_TIME))
            .await
            .unwrap();
        assert_eq!(first.created_at, MIN_TIME);
        let err = db
            .enqueue("q".into(), &item("b"), &at(MAX_TIME + 1))
            .await
            .unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
        let err = db
            .enqueue("q".into(), &item("b"), &at(i64::MIN))
            .await
            .unwrap_err();
        assert_eq!(fields(&err), [("clock", "out_of_range")]);
    });
}
