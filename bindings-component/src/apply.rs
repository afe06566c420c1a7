//! The interface `apply`: each request's step on one message the host read inside its
//! transaction (`deadletter::engine::apply`, `deadletter::machine`), and the steps on a queue's
//! row.

use deadletter::{
    Backoff, BulkArgs, Context, EnqueueArgs, ExtendArgs, FailArgs, Id, Message, MessageArgs,
    Millis, MoveAllArgs, MoveArgs, NewMessage, Outcome, PurgeArgs, QueueRow, ReplayArgs,
    SettingsArgs, SucceedArgs, pause_step, row_write,
};

use crate::Component;
use crate::convert::{messages, result, row as stored_row};
use crate::wit::types as w;

/// The message a request on `queue`'s message `id` names, from what the store found under the
/// id: `not_found` when it found none, or one of another queue.
fn target(queue: &str, id: Id, found: Option<w::Message>) -> deadletter::Result<Message> {
    MessageArgs {
        queue: queue.to_owned(),
        id,
    }
    .found(found.map(Into::into))
}

impl crate::wit::apply::Guest for Component {
    fn enqueue(args: w::EnqueueArgs, ctx: w::Context) -> Result<Vec<w::NewMessage>, w::Error> {
        let made = EnqueueArgs::from(args).messages(&ctx.into());
        made.map(|list| list.into_iter().map(Into::into).collect())
            .map_err(Into::into)
    }

    fn inserted(new: w::NewMessage, id: Id) -> w::Message {
        NewMessage::from(new).with_id(id).into()
    }

    fn deduplicated(stored: w::Message) -> w::Message {
        w::Message {
            deduplicated: true,
            ..stored
        }
    }

    fn found(args: w::MessageArgs, found: Option<w::Message>) -> Result<w::Message, w::Error> {
        result(target(&args.queue, args.id, found))
    }

    fn succeed(
        args: w::SucceedArgs,
        found: Option<w::Message>,
        ctx: w::Context,
    ) -> Result<w::Message, w::Error> {
        let message = target(&args.queue, args.id, found);
        result(message.and_then(|m| SucceedArgs::from(args).step(m, &ctx.into())))
    }

    fn fail(
        args: w::FailArgs,
        found: Option<w::Message>,
        ctx: w::Context,
    ) -> Result<w::Message, w::Error> {
        let message = target(&args.queue, args.id, found);
        result(message.and_then(|m| FailArgs::from(args).step(m, &ctx.into())))
    }

    fn extend(
        args: w::ExtendArgs,
        found: Option<w::Message>,
        ctx: w::Context,
    ) -> Result<w::Message, w::Error> {
        let message = target(&args.queue, args.id, found);
        result(message.and_then(|m| ExtendArgs::from(args).step(m, &ctx.into())))
    }

    fn replay(
        args: w::ReplayArgs,
        found: Option<w::Message>,
        ctx: w::Context,
    ) -> Result<w::Message, w::Error> {
        let message = target(&args.queue, args.id, found);
        result(message.and_then(|m| ReplayArgs::from(args).step(m, &ctx.into())))
    }

    fn delete(args: w::MessageArgs, found: Option<w::Message>) -> Result<w::Message, w::Error> {
        let args = MessageArgs::from(args);
        let message = args.found(found.map(Into::into));
        result(message.and_then(|m| args.delete(&m).map(|()| m)))
    }

    fn retry_now(
        args: w::MessageArgs,
        found: Option<w::Message>,
        ctx: w::Context,
    ) -> Result<w::Message, w::Error> {
        let args = MessageArgs::from(args);
        let message = args.found(found.map(Into::into));
        result(message.and_then(|m| args.retry_now(m, &ctx.into())))
    }

    fn move_(
        args: w::MoveArgs,
        found: Option<w::Message>,
        ctx: w::Context,
        taken: bool,
    ) -> Result<w::Message, w::Error> {
        let message = target(&args.queue, args.id, found);
        result(message.and_then(|m| MoveArgs::from(args).step(m, &ctx.into(), taken)))
    }

    fn bulk_selects(args: w::BulkArgs, message: w::Message, now: Millis) -> bool {
        BulkArgs::from(args).selects(&message.into(), now)
    }

    fn bulk_step(
        args: w::BulkArgs,
        message: w::Message,
        ctx: w::Context,
    ) -> Result<Option<w::Message>, w::Error> {
        let next = BulkArgs::from(args).step(message.into(), &Context::from(ctx));
        next.map(|m| m.map(Into::into)).map_err(Into::into)
    }

    fn bulk_deletes(args: w::BulkArgs, message: w::Message, now: Millis) -> bool {
        BulkArgs::from(args).deletes(&message.into(), now)
    }

    fn bulk_touches(
        args: w::BulkArgs,
        message: w::Message,
        ctx: w::Context,
    ) -> Result<bool, w::Error> {
        result(BulkArgs::from(args).touches(&message.into(), &Context::from(ctx)))
    }

    fn move_all_step(
        args: w::MoveAllArgs,
        message: w::Message,
        ctx: w::Context,
        taken: bool,
    ) -> Result<Option<w::Message>, w::Error> {
        let next = MoveAllArgs::from(args).step(message.into(), &Context::from(ctx), taken);
        next.map(|m| m.map(Into::into)).map_err(Into::into)
    }

    fn purge_selects(args: w::PurgeArgs, message: w::Message) -> bool {
        PurgeArgs::from(args).selects(&message.into())
    }

    fn settings(
        args: w::SettingsArgs,
        row: Option<w::QueueRow>,
        holds_message: bool,
    ) -> Result<w::QueueRow, w::Error> {
        let (args, row) = (SettingsArgs::from(args), stored_row(row));
        result(row_write(&args.queue, &row, args.step(row), holds_message))
    }

    fn pause(
        queue: String,
        row: Option<w::QueueRow>,
        paused: bool,
        holds_message: bool,
    ) -> Result<w::QueueRow, w::Error> {
        let row = stored_row(row);
        result(row_write(
            &queue,
            &row,
            pause_step(row, paused),
            holds_message,
        ))
    }

    fn worth_storing(row: w::QueueRow) -> bool {
        QueueRow::from(row).worth_storing()
    }

    fn stored_settings(row: Option<w::QueueRow>) -> w::QueueSettings {
        stored_row(row).settings.into()
    }

    fn dead(written: Vec<w::Message>) -> Vec<w::Message> {
        let written: Vec<Message> = written.into_iter().map(Into::into).collect();
        messages(Outcome::new((), &written).dead)
    }

    fn overridden(ctx: w::Context, handle: Option<w::Backoff>) -> Option<w::Backoff> {
        let handle: Option<Backoff> = handle.map(Into::into);
        Context::from(ctx)
            .overridden(handle.as_ref())
            .map(Into::into)
    }

    fn delay(policy: w::Backoff, failures: u32, sample: f64) -> Millis {
        Backoff::from(policy).delay_ms(failures, sample)
    }
}
