//! The interface `validate`: each operation's arguments checked by the core into its request
//! (`deadletter::engine::request`), every rejected field together.

use deadletter::engine::{clock_at, queue_at};
use deadletter::{
    BulkArgs, ClaimArgs, Context, EnqueueArgs, ExtendArgs, FailArgs, Item, Limits, ListArgs,
    MessageArgs, Millis, MoveAllArgs, MoveArgs, PurgeArgs, ReplayArgs, SettingsArgs, SucceedArgs,
    validate,
};

use crate::Component;
use crate::convert::{arg, backoff, filters, result, row};
use crate::wit::types as w;

impl crate::wit::validate::Guest for Component {
    fn open_options(lease_ms: w::Arg, max_payload_bytes: w::Arg) -> Result<w::Limits, w::Error> {
        result(Limits::new(&arg(&lease_ms), &arg(&max_payload_bytes)))
    }

    fn queue_name(queue: w::Arg) -> Result<String, w::Error> {
        result(validate::queue_name(&arg(&queue)).map(str::to_owned))
    }

    fn backoff_policy(policy: w::BackoffArgs) -> Result<w::Backoff, w::Error> {
        result(backoff(&policy))
    }

    fn jitter_sample(sample: w::Arg) -> Result<f64, w::Error> {
        result(validate::jitter_sample(&arg(&sample)))
    }

    fn write_context(now: Millis, queue: Option<w::QueueRow>) -> Result<w::Context, w::Error> {
        result(Context::new(now, row(queue)))
    }

    fn clock(now: Millis) -> Result<(), w::Error> {
        result(clock_at(now))
    }

    fn queue_at(queue: w::Arg, now: Millis) -> Result<String, w::Error> {
        result(queue_at(&arg(&queue), now))
    }

    fn backoff_ms(retry_count: w::Arg) -> Result<Millis, w::Error> {
        result(deadletter::backoff(&arg(&retry_count)))
    }

    fn enqueue(
        queue: w::Arg,
        items: Vec<w::Item>,
        batch: bool,
        limits: w::Limits,
    ) -> Result<w::EnqueueArgs, w::Error> {
        let items: Vec<Item<'_>> = items
            .iter()
            .map(|i| Item {
                payload: arg(&i.payload),
                max_retries: arg(&i.max_retries),
                idempotency_key: arg(&i.idempotency_key),
                delay_ms: arg(&i.delay_ms),
                group: arg(&i.group),
                expires_in_ms: arg(&i.expires_in_ms),
            })
            .collect();
        result(EnqueueArgs::new(
            &arg(&queue),
            &items,
            batch,
            &limits.into(),
        ))
    }

    fn claim(
        queue: w::Arg,
        n: w::Arg,
        lease_ms: w::Arg,
        backoff: Option<w::Backoff>,
        sample: f64,
        limits: w::Limits,
    ) -> Result<w::ClaimArgs, w::Error> {
        let policy = backoff.map(Into::into);
        let args = ClaimArgs::new(
            &arg(&queue),
            &arg(&n),
            &arg(&lease_ms),
            policy.as_ref(),
            sample,
            &limits.into(),
        );
        result(validate::sampled(args, sample))
    }

    fn reap(
        queue: w::Arg,
        backoff: Option<w::Backoff>,
        sample: f64,
    ) -> Result<w::ClaimArgs, w::Error> {
        let policy = backoff.map(Into::into);
        let args = ClaimArgs::reap(&arg(&queue), policy.as_ref(), sample);
        result(validate::sampled(args, sample))
    }

    fn succeed(queue: w::Arg, id: w::Arg, lease_token: w::Arg) -> Result<w::SucceedArgs, w::Error> {
        result(SucceedArgs::new(
            &arg(&queue),
            &arg(&id),
            &arg(&lease_token),
        ))
    }

    fn fail(
        queue: w::Arg,
        id: w::Arg,
        error: w::Arg,
        lease_token: w::Arg,
        retryable: w::Arg,
        retry_in_ms: w::Arg,
        backoff: Option<w::Backoff>,
        sample: f64,
    ) -> Result<w::FailArgs, w::Error> {
        let policy = backoff.map(Into::into);
        let args = FailArgs::new(
            &arg(&queue),
            &arg(&id),
            &arg(&error),
            &arg(&lease_token),
            &arg(&retryable),
            &arg(&retry_in_ms),
            policy.as_ref(),
            sample,
        );
        result(validate::sampled(args, sample))
    }

    fn extend(
        queue: w::Arg,
        id: w::Arg,
        lease_token: w::Arg,
        lease_ms: w::Arg,
        limits: w::Limits,
    ) -> Result<w::ExtendArgs, w::Error> {
        result(ExtendArgs::new(
            &arg(&queue),
            &arg(&id),
            &arg(&lease_token),
            &arg(&lease_ms),
            &limits.into(),
        ))
    }

    fn message(queue: w::Arg, id: w::Arg) -> Result<w::MessageArgs, w::Error> {
        result(MessageArgs::new(&arg(&queue), &arg(&id)))
    }

    fn replay(queue: w::Arg, id: w::Arg, expires_in_ms: w::Arg) -> Result<w::ReplayArgs, w::Error> {
        result(ReplayArgs::new(
            &arg(&queue),
            &arg(&id),
            &arg(&expires_in_ms),
        ))
    }

    fn move_(queue: w::Arg, id: w::Arg, to_queue: w::Arg) -> Result<w::MoveArgs, w::Error> {
        result(MoveArgs::new(&arg(&queue), &arg(&id), &arg(&to_queue)))
    }

    fn bulk(
        action: w::BulkAction,
        queue: w::Arg,
        given: w::FilterArgs,
        limit: w::Arg,
        dry_run: w::Arg,
        now: Millis,
    ) -> Result<w::BulkArgs, w::Error> {
        let args = BulkArgs::new(
            action.into(),
            &arg(&queue),
            &filters(&given),
            &arg(&limit),
            &arg(&dry_run),
        );
        // Then the clock the action starts at, as `deadletter::Engine`'s bulk actions read it.
        result(args.and_then(|args| clock_at(now).map(|()| args)))
    }

    fn move_all(
        queue: w::Arg,
        to_queue: w::Arg,
        given: w::FilterArgs,
        limit: w::Arg,
        dry_run: w::Arg,
        now: Millis,
    ) -> Result<w::MoveAllArgs, w::Error> {
        let args = MoveAllArgs::new(
            &arg(&queue),
            &arg(&to_queue),
            &filters(&given),
            &arg(&limit),
            &arg(&dry_run),
        );
        // Then the clock, as `deadletter::Engine::move_all` reads it.
        result(args.and_then(|args| clock_at(now).map(|()| args)))
    }

    fn purge(
        queue: w::Arg,
        status: w::Arg,
        older_than_ms: w::Arg,
        now: Millis,
    ) -> Result<w::PurgeArgs, w::Error> {
        result(PurgeArgs::new(
            &arg(&queue),
            &arg(&status),
            &arg(&older_than_ms),
            now,
        ))
    }

    fn list(
        queue: w::Arg,
        given: w::FilterArgs,
        limit: w::Arg,
        after_id: w::Arg,
        now: Millis,
    ) -> Result<w::ListArgs, w::Error> {
        let args = ListArgs::new(
            &arg(&queue),
            &filters(&given),
            &arg(&limit),
            &arg(&after_id),
        );
        // The clock only when the filters depend on it, as `deadletter::Engine::list` reads it.
        let args = args.and_then(|args| {
            if args.needs_clock() {
                clock_at(now)?;
            }
            Ok(args)
        });
        result(args)
    }

    fn settings(
        queue: w::Arg,
        backoff: Option<w::BackoffArgs>,
        max_retries: w::Arg,
        lease_ms: w::Arg,
        expires_in_ms: w::Arg,
        on_expiry: w::Arg,
    ) -> Result<w::SettingsArgs, w::Error> {
        result(SettingsArgs::new(
            &arg(&queue),
            backoff.as_ref().map(crate::convert::backoff),
            &arg(&max_retries),
            &arg(&lease_ms),
            &arg(&expires_in_ms),
            &arg(&on_expiry),
        ))
    }
}
