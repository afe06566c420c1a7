//! The checks of each operation's arguments into its request.

use super::*;

const NOW: Millis = 1_767_225_600_000;

fn fields(err: &crate::Error) -> Vec<(&'static str, &'static str, Option<usize>)> {
    err.field_errors()
        .iter()
        .map(|f| (f.field, f.code, f.index))
        .collect()
}

#[test]
fn claim_args_leave_the_lease_to_the_context_when_the_call_gives_none() {
    let policy = Backoff::default();
    let args = ClaimArgs::new(
        &"jobs".into(),
        &Arg::Int(3),
        &Arg::Null,
        Some(&policy),
        0.25,
        &Limits::default(),
    );
    assert_eq!(
        args,
        Ok(ClaimArgs {
            queue: "jobs".into(),
            n: 3,
            lease_ms: None,
            default_lease_ms: 30_000,
            backoff: Some(policy),
            sample: 0.25
        })
    );
    let bad = ClaimArgs::new(
        &"".into(),
        &Arg::Int(0),
        &Arg::Float(1.5),
        None,
        0.0,
        &Limits::default(),
    );
    assert_eq!(
        fields(&bad.unwrap_err()),
        [
            ("queue", "empty", None),
            ("n", "out_of_range", None),
            ("lease_ms", "type", None)
        ]
    );
}

#[test]
fn enqueue_args_tag_batch_items_and_check_the_new_fields() {
    let ok = Item {
        payload: "a".into(),
        delay_ms: Arg::Int(5),
        group: "g".into(),
        ..Item::default()
    };
    let bad = Item {
        payload: Arg::Int(1),
        max_retries: Arg::Int(11),
        group: "".into(),
        expires_in_ms: Arg::Int(0),
        ..Item::default()
    };
    let err = EnqueueArgs::new(&"q".into(), &[ok.clone(), bad], true, &Limits::default());
    assert_eq!(
        fields(&err.unwrap_err()),
        [
            ("payload", "type", Some(1)),
            ("max_retries", "out_of_range", Some(1)),
            ("group", "empty", Some(1)),
            ("expires_in_ms", "out_of_range", Some(1))
        ]
    );
    let args = EnqueueArgs::new(&"q".into(), &[ok], false, &Limits::default()).unwrap();
    assert_eq!(
        args.items,
        [EnqueueItem {
            payload: "a".into(),
            max_retries: None,
            idempotency_key: None,
            delay_ms: 5,
            group: Some("g".into()),
            expires_in_ms: None,
        }]
    );
}

#[test]
fn names_that_cannot_be_shown_safely_are_refused_where_messages_are_put() {
    let item = Item {
        payload: "a".into(),
        ..Item::default()
    };
    for name in [
        "a\u{1}b",
        "del\u{7f}",
        "c1\u{85}",
        "x\u{202e}y",
        "a\u{2066}b",
        " \u{3000}",
        // Finding N7 (session 7): format characters, and names with nothing visible.
        "emails\u{200b}",
        "\u{2060}",
        "\u{feff}",
        "\u{ad}",
        "\u{180e}",
        "lrm\u{200e}",
        "tag\u{e0041}",
        "\u{200d}",
        "\u{3164}",
        " \u{fe0f}\u{200c}",
        // Session 8: line and paragraph separators, and default-ignorable characters outside
        // Cf, inside names with something visible.
        "a\u{2028}b",
        "a\u{2029}b",
        "a\u{34f}b",
        "\u{115f}jobs",
        "jobs\u{1160}",
        "jobs\u{3164}",
        "jobs\u{ffa0}",
        "a\u{17b4}b\u{17b5}",
        "a\u{2065}b",
        "a\u{fff0}b",
        "a\u{e0000}b",
        "a\u{e01f0}b",
        // White space at either end reads as the name without it (session 9).
        " padded ",
        "emails\u{a0}",
        "\u{3000}emails",
        // Tag characters outside the flags of England, Scotland and Wales (session 9): any
        // other tags show as the black flag alone.
        "\u{1f3f4}\u{e0067}\u{e0062}",
        "\u{1f3f4}\u{e0061}\u{e0062}\u{e0063}\u{e007f}",
        "\u{1f3f4}\u{e0067}\u{e0062}\u{e0078}\u{e0079}\u{e007a}\u{e007f}",
        "\u{1f3f4}\u{e007f}",
        "\u{1f3f3}\u{e0067}\u{e007f}",
        // A joiner or variation selector at a loose end, U+2800 as white space (session 10).
        "jobs\u{200d}",
        "\u{200c}jobs",
        "\u{fe0f}\u{2764}",
        "jobs\u{fe0f}",
        "jobs \u{fe0f}",
        "jobs\u{200d}\u{fe0f}",
        "\u{1f469}\u{200d}",
        "\u{2800}",
        "jobs\u{2800}",
        // What joins, varies or spaces nothing, an accent after an ASCII letter (session 11).
        "a\u{200d}b",
        "ema\u{fe0f}ils",
        "a\u{2800}b",
        "cafe\u{301}",
    ] {
        let err = EnqueueArgs::new(
            &name.into(),
            std::slice::from_ref(&item),
            false,
            &Limits::default(),
        );
        assert_eq!(
            fields(&err.unwrap_err()),
            [("queue", "invalid", None)],
            "{name:?}"
        );
        assert!(
            crate::validate::queue_name(&name.into()).is_ok(),
            "{name:?}"
        );
    }
    for name in [
        "billing emails",
        // The flags of England and Scotland: emoji tag sequences (session 9).
        "\u{1f3f4}\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f}",
        "uk \u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f} jobs",
        "עברית",
        "\u{2764}\u{fe0f}",
        "\u{645}\u{6cc}\u{200c}\u{62e}",
        // Variation selectors stay: emoji, Mongolian and ideographic variants need them.
        "\u{1820}\u{180b}",
        "\u{845b}\u{e0100}",
        "\u{263a}\u{fe0e}",
        "#\u{fe0f}\u{20e3}",
        "\u{a9}\u{fe0f}",
        // Joiners where they join (session 11).
        "\u{1f469}\u{200d}\u{1f4bb}",
        "\u{2764}\u{fe0f}\u{200d}\u{1f525}",
    ] {
        assert!(
            EnqueueArgs::new(
                &name.into(),
                std::slice::from_ref(&item),
                false,
                &Limits::default()
            )
            .is_ok(),
            "{name:?}"
        );
    }
}

#[test]
fn fail_args_bound_retry_in_like_a_delay() {
    let fail = |retry_in: Arg<'static>| {
        FailArgs::new(
            &"q".into(),
            &Arg::Int(1),
            &"e".into(),
            &Arg::Null,
            &Arg::Null,
            &retry_in,
            None,
            0.0,
        )
    };
    assert_eq!(fail(Arg::Int(0)).unwrap().retry_in_ms, Some(0));
    assert_eq!(fail(Arg::Null).unwrap().retry_in_ms, None);
    let err = fail(Arg::Int(MAX_DELAY_MS + 1)).unwrap_err();
    assert_eq!(fields(&err), [("retry_in_ms", "out_of_range", None)]);
}

#[test]
fn purge_selects_through_its_filter() {
    let purge = PurgeArgs::new(&"q".into(), &"succeeded".into(), &Arg::Int(1000), NOW).unwrap();
    assert_eq!(purge.filter().updated_until, Some(NOW - 1000));
    assert_eq!(purge.filter().status, Some(Status::Succeeded));
}

#[test]
fn a_jitter_sample_outside_zero_to_one_is_refused_with_the_other_fields() {
    // New-user finding F8 (session 6): a host of the component passed NaN, 5.0, -3 or infinity,
    // clamped into no backoff at all (or the full one).
    let limits = Limits::default();
    let policy = Backoff::default();
    for sample in [
        f64::NAN,
        5.0,
        1.0,
        -3.0,
        -0.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let claim = ClaimArgs::new(&"q".into(), &Arg::Int(1), &Arg::Null, None, sample, &limits);
        let reap = ClaimArgs::reap(&"q".into(), Some(&policy), sample);
        let fail = FailArgs::new(
            &"q".into(),
            &Arg::Int(1),
            &"boom".into(),
            &Arg::Null,
            &Arg::Null,
            &Arg::Null,
            None,
            sample,
        );
        for err in [claim.map(|_| ()), reap.map(|_| ()), fail.map(|_| ())] {
            let err = crate::validate::sampled(err, sample).expect_err("refused");
            assert_eq!(fields(&err), [("random", "out_of_range", None)], "{sample}");
        }
        // Reported with the call's other rejected fields.
        let claim = ClaimArgs::new(&"".into(), &Arg::Int(0), &Arg::Null, None, sample, &limits);
        let err = crate::validate::sampled(claim, sample).expect_err("refused");
        assert_eq!(
            fields(&err),
            [
                ("queue", "empty", None),
                ("n", "out_of_range", None),
                ("random", "out_of_range", None)
            ]
        );
    }
    for sample in [0.0, 0.5, 0.999_999] {
        let args = ClaimArgs::reap(&"q".into(), None, sample);
        let args = crate::validate::sampled(args, sample).expect("in [0, 1)");
        assert_eq!(args.sample.to_bits(), sample.to_bits());
    }
}

#[test]
fn lease_tokens_are_enough_nonempty_without_nul_and_all_different() {
    // New-user finding F8 (session 6): the component handed out "", "a\0b" and one token twice.
    let tokens = |list: &[&str]| list.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        crate::validate::lease_tokens(&tokens(&["a", "b"]), 2),
        Ok(())
    );
    assert_eq!(crate::validate::lease_tokens(&tokens(&[]), 0), Ok(()));
    let err = crate::validate::lease_tokens(&tokens(&["a"]), 2).expect_err("too few");
    assert_eq!(err.code(), "store");
    for (given, code) in [
        (&["a", ""][..], "empty"),
        (&["a\0b"][..], "invalid"),
        (&["same", "same"][..], "invalid"),
    ] {
        let err = crate::validate::lease_tokens(&tokens(given), 1).expect_err("refused");
        assert_eq!(fields(&err), [("lease_tokens", code, None)], "{given:?}");
    }
}
