//! The unit tests of [`super`]: the names of the filters, their checks and what they select.

use super::*;
use crate::{Error, NewMessage};

#[test]
fn contains_finds_texts_as_str_contains_does() {
    let error = "HTTP 503: Überlastung, retry — später";
    for text in ["", "HTTP", "503", "Über", "später", "— s", "g, r", error] {
        assert!(contains(error, text), "{text}");
    }
    for text in [
        "http",
        "504",
        "Uber",
        "später!",
        "x",
        "HTTP 503: Überlastung, retry — später.",
    ] {
        assert!(!contains(error, text), "{text}");
    }
    // A text longer than the error, and the empty error.
    assert!(!contains("", "a"));
    assert!(contains("", ""));
}

#[test]
fn contains_agrees_with_str_contains_on_every_short_text_of_two_letters() {
    // Every haystack of up to 8 and text of up to 5 letters over {a, b}: every overlap and
    // border the search can meet.
    let words = |max: u32| {
        (0..=max).flat_map(|len| {
            (0..1_u32 << len).map(move |bits| {
                (0..len)
                    .map(|i| if bits >> i & 1 == 1 { 'b' } else { 'a' })
                    .collect::<String>()
            })
        })
    };
    let texts: Vec<String> = words(5).collect();
    for haystack in words(8) {
        for text in &texts {
            assert_eq!(
                contains(&haystack, text),
                haystack.contains(text.as_str()),
                "{haystack:?} {text:?}"
            );
        }
    }
}

#[test]
fn contains_finds_a_long_text_in_a_repetitive_payload() {
    // 4 MiB of `a` and a text of 64 KiB of `a` then `b`: the text's borders are as long as they
    // get (this takes milliseconds; the naive search it replaced compares about 2^38 bytes).
    let haystack = "a".repeat(4 << 20);
    let text = format!("{}b", "a".repeat(64 << 10));
    assert!(!contains(&haystack, &text));
    assert!(contains(&(haystack + "b"), &text));
}

#[test]
fn set_fills_every_named_filter_and_nothing_else() {
    let mut args = FilterArgs::default();
    for (n, name) in (0..).zip(FilterArgs::NAMES) {
        assert!(args.set(name, Arg::Int(n)), "{name}");
    }
    assert!(!args.set("limit", Arg::Int(1)));
    let all = [
        &args.status,
        &args.delayed,
        &args.payload_contains,
        &args.error_contains,
        &args.group,
        &args.idempotency_key,
        &args.created_after,
        &args.created_before,
        &args.updated_after,
        &args.updated_before,
        &args.dead_after,
        &args.dead_before,
    ];
    for (n, arg) in (0..).zip(all) {
        assert_eq!(arg, &Arg::Int(n));
    }
}

type Rejected = Vec<(&'static str, &'static str)>;

fn checked(args: &FilterArgs<'_>, action: Option<Action>) -> Result<Selection, Rejected> {
    let mut check = Check::default();
    let selection = Selection::check(&mut check, args, action);
    match check.finish(|| selection) {
        Ok(selection) => Ok(selection.expect("a selection when nothing was rejected")),
        Err(Error::Validation(fields)) => Err(fields.iter().map(|f| (f.field, f.code)).collect()),
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn each_action_takes_its_statuses_and_its_default() {
    let status = |name: &'static str| FilterArgs {
        status: Arg::Str(name),
        ..FilterArgs::default()
    };
    let none = FilterArgs::default();
    assert_eq!(checked(&none, None).unwrap().status, None);
    assert_eq!(checked(&none, Some(Action::Delete)).unwrap().status, None);
    let replay = checked(&none, Some(Action::Replay)).unwrap();
    assert_eq!(replay.status, Some(Status::Dead));
    let retry = checked(&none, Some(Action::RetryNow)).unwrap();
    assert_eq!(
        (retry.status, retry.delayed),
        (Some(Status::Pending), Some(true))
    );
    for (action, allowed) in [
        (
            None,
            ["pending", "processing", "succeeded", "dead"].as_slice(),
        ),
        (Some(Action::Replay), &["dead"]),
        (Some(Action::Delete), &["succeeded", "dead"]),
        (Some(Action::RetryNow), &["pending"]),
    ] {
        for name in ["pending", "processing", "succeeded", "dead"] {
            let got = checked(&status(name), action).map(|s| s.status);
            if allowed.contains(&name) {
                assert_eq!(got, Ok(Status::parse(name)), "{action:?} {name}");
            } else {
                assert_eq!(got, Err(vec![("status", "invalid")]), "{action:?} {name}");
            }
        }
    }
    let not_delayed = FilterArgs {
        delayed: Arg::Bool(false),
        ..FilterArgs::default()
    };
    let invalid = Err(vec![("delayed", "invalid")]);
    assert_eq!(checked(&not_delayed, Some(Action::RetryNow)), invalid);
    assert_eq!(checked(&not_delayed, Some(Action::Replay)), invalid);
    assert_eq!(checked(&not_delayed, None).unwrap().delayed, Some(false));
    assert_eq!(checked(&not_delayed, Some(Action::Delete)), invalid);
    let wrong = FilterArgs {
        delayed: Arg::Str("yes"),
        ..FilterArgs::default()
    };
    assert_eq!(
        checked(&wrong, Some(Action::RetryNow)),
        Err(vec![("delayed", "type")])
    );
}

#[test]
fn every_rejected_filter_is_reported_in_the_order_of_the_names() {
    let args = FilterArgs {
        status: Arg::Str("gone"),
        delayed: Arg::Int(1),
        payload_contains: Arg::Str(""),
        error_contains: Arg::Str("a\0"),
        group: Arg::Str(""),
        idempotency_key: Arg::Int(5),
        created_after: Arg::Str("yesterday"),
        created_before: Arg::Float(2.5),
        updated_after: Arg::Bool(true),
        updated_before: Arg::BigInt,
        dead_after: Arg::Int(crate::validate::MAX_TIME + 1),
        dead_before: Arg::Other("a list"),
    };
    assert_eq!(
        checked(&args, None).unwrap_err(),
        [
            ("status", "invalid"),
            ("delayed", "type"),
            ("payload_contains", "empty"),
            ("error_contains", "invalid"),
            ("group", "empty"),
            ("idempotency_key", "type"),
            ("created_after", "type"),
            ("created_before", "type"),
            ("updated_after", "type"),
            ("updated_before", "out_of_range"),
            ("dead_after", "out_of_range"),
            ("dead_before", "type"),
        ]
    );
}

#[test]
fn a_filter_selects_by_every_field_with_half_open_ranges() {
    type Edit = fn(&mut Filter<'static>);
    let now = 1_000;
    let mut m = NewMessage {
        queue: "q".into(),
        payload: r#"{"to": "a@example.com"}"#.into(),
        max_retries: 3,
        idempotency_key: Some("k1".into()),
        retry_after: Some(now + 1),
        group: Some("g".into()),
        expires_at: None,
        now: 100,
    }
    .with_id(1);
    let pending: [(Edit, bool); 18] = [
        (|_| {}, true),
        (|f| f.queue = "r", false),
        (|f| f.delayed = Some(true), true),
        (|f| f.delayed = Some(false), false),
        (|f| (f.delayed, f.now) = (Some(true), 1_001), false),
        (|f| f.payload_contains = Some("example.com"), true),
        (|f| f.payload_contains = Some("Example"), false),
        (|f| f.error_contains = Some("e"), false),
        (
            |f| (f.group, f.idempotency_key) = (Some("g"), Some("k1")),
            true,
        ),
        (|f| f.group = Some("g1"), false),
        (|f| f.idempotency_key = Some("k"), false),
        (
            |f| (f.created_after, f.created_before) = (Some(100), Some(101)),
            true,
        ),
        (|f| f.created_after = Some(101), false),
        (|f| f.created_before = Some(100), false),
        (
            |f| (f.updated_after, f.updated_until) = (Some(100), Some(100)),
            true,
        ),
        (|f| f.updated_before = Some(100), false),
        (|f| f.updated_until = Some(99), false),
        // dead_at is null until the message dies: a dead range selects only dead messages.
        (|f| f.dead_before = Some(i64::MAX), false),
    ];
    let dead: [(Edit, bool); 5] = [
        (
            |f| (f.dead_after, f.dead_before) = (Some(500), Some(501)),
            true,
        ),
        (|f| f.dead_after = Some(501), false),
        (|f| f.error_contains = Some("503"), true),
        (|f| f.delayed = Some(false), false),
        (|f| f.status = Some(Status::Pending), false),
    ];
    let run = |cases: &[(Edit, bool)], m: &Message| {
        for (n, (edit, want)) in cases.iter().enumerate() {
            let mut filter = Filter {
                queue: "q",
                now,
                ..Filter::default()
            };
            edit(&mut filter);
            assert_eq!(filter.matches(m), *want, "case {n}: {filter:?}");
        }
    };
    run(&pending, &m);
    m.status = Status::Dead;
    m.dead_at = Some(500);
    m.last_error = Some("HTTP 503".into());
    run(&dead, &m);
}

#[test]
fn the_instants_are_the_last_six_names() {
    assert_eq!(
        FilterArgs::INSTANTS,
        [
            "created_after",
            "created_before",
            "updated_after",
            "updated_before",
            "dead_after",
            "dead_before"
        ]
    );
    assert_eq!(FilterArgs::INSTANTS, FilterArgs::NAMES[6..]);
}

/// The messages of a refused status or `delayed`, which every binding shows as they are: they
/// name no method (issue 19: `delete_all` in a JavaScript message, where it is `deleteAll`).
#[test]
fn refusals_name_no_method() {
    let messages = |args: &FilterArgs<'_>, action| {
        let mut check = Check::default();
        let selection = Selection::check(&mut check, args, Some(action));
        match check.finish(|| selection) {
            Err(Error::Validation(fields)) => fields
                .into_iter()
                .map(|f| format!("{}: {}", f.field, f.message))
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        }
    };
    let status = |name| FilterArgs {
        status: Arg::Str(name),
        ..FilterArgs::default()
    };
    let said = [
        (Action::Delete, "pending"),
        (Action::Replay, "pending"),
        (Action::RetryNow, "dead"),
        (Action::Move, "processing"),
    ]
    .map(|(action, name)| messages(&status(name), action).join("; "));
    assert_eq!(
        said,
        [
            "status: must be succeeded or dead (only finished messages are deleted); got pending",
            "status: must be dead (only dead messages are replayed); got pending",
            "status: must be pending (only pending messages wait for a retry); got dead",
            "status: must be pending or dead (a processing message belongs to its worker, a \
             succeeded one is done); got processing",
        ]
    );
    let not_delayed = FilterArgs {
        delayed: Arg::Bool(false),
        ..FilterArgs::default()
    };
    assert_eq!(
        messages(&not_delayed, Action::RetryNow),
        ["delayed: must be true here (retrying now makes delayed messages due)"]
    );
}
