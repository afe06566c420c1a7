//! `move` of one message to another queue (issue 22): [`MoveArgs`], checked, and its step inside
//! the store's [`crate::Store::move_many`]. `move_all` is a bulk action ([`super::MoveAllArgs`]).

use crate::arg::Arg;
use crate::error::{Conflict, Error, Result};
use crate::machine;
use crate::message::{Id, Message};
use crate::settings::Context;
use crate::store::apply_step;
use crate::validate::Check;

/// `move`: message `id` of `queue` to `to_queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveArgs {
    /// The queue it is in.
    pub queue: String,
    /// The message.
    pub id: Id,
    /// The queue it goes to.
    pub to_queue: String,
}

impl MoveArgs {
    /// Checks `queue`, `id` and `to_queue` (the rules of an enqueue's queue name, field
    /// `to_queue`; `queue` itself is `invalid`); every rejected field together, in this order.
    pub fn new(queue: &Arg<'_>, id: &Arg<'_>, to_queue: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let (queue, id) = (check.queue(queue), check.id(id));
        let to_queue = check.target_queue(to_queue, queue);
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            id: id.unwrap_or_default(),
            to_queue: to_queue.unwrap_or_default().to_owned(),
        })
    }

    /// Whether [`MoveArgs::step`] reads the queue's row ([`Context::queue`]; see
    /// [`crate::SucceedArgs::reads_queue`]): never.
    pub fn reads_queue(&self) -> bool {
        false
    }

    /// The step on the message read (`taken`: whether a message of `to_queue` carries its
    /// idempotency key): the message moved ([`machine::move_to`]); a `conflict` for a status
    /// other than pending or dead (checked first), then [`Conflict::KeyTaken`] when its key is
    /// taken.
    pub fn step(&self, message: Message, ctx: &Context, taken: bool) -> Result<Message> {
        let key = message.idempotency_key.clone();
        let moved = machine::move_to(message, &self.to_queue, ctx.now)?;
        match key {
            Some(idempotency_key) if taken => Err(Error::Conflict(Conflict::KeyTaken {
                id: moved.id,
                to_queue: self.to_queue.clone(),
                idempotency_key,
            })),
            _ => Ok(moved),
        }
    }

    /// What the store's write returned: the message moved, or `not_found` when `queue` had no
    /// message `id`.
    pub fn found(&self, moved: Option<Message>) -> Result<Message> {
        apply_step(moved, &self.queue, self.id, Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewMessage, QueueRow, Status};

    const NOW: i64 = 1_767_225_600_000;

    fn message(status: Status, key: Option<&str>) -> Message {
        let mut m = NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 3,
            idempotency_key: key.map(str::to_owned),
            retry_after: Some(NOW + 5),
            group: None,
            expires_at: None,
            now: NOW - 10,
        }
        .with_id(4);
        m.status = status;
        m
    }

    #[test]
    fn to_queue_is_checked_as_a_new_queue_name_other_than_the_queue() {
        let codes = |to: Arg<'_>| {
            MoveArgs::new(&"q".into(), &Arg::Int(1), &to)
                .unwrap_err()
                .field_errors()
                .iter()
                .map(|f| (f.field, f.code))
                .collect::<Vec<_>>()
        };
        assert_eq!(codes("q".into()), [("to_queue", "invalid")]);
        assert_eq!(codes("".into()), [("to_queue", "empty")]);
        assert_eq!(codes(" \t".into()), [("to_queue", "invalid")]);
        assert_eq!(codes("a\u{202e}b".into()), [("to_queue", "invalid")]);
        assert_eq!(codes(Arg::Int(7)), [("to_queue", "type")]);
        assert_eq!(codes(Arg::Null), [("to_queue", "type")]);
        // Issue 19: said of `move_all` too, where no one message is in question.
        let same = MoveArgs::new(&"q".into(), &Arg::Int(1), &"q".into()).unwrap_err();
        assert_eq!(
            same.field_errors()[0].message,
            "is the source queue too: the source and the target are the same queue"
        );
        let both = MoveArgs::new(&"".into(), &Arg::Int(0), &"".into()).unwrap_err();
        let fields: Vec<_> = both.field_errors().iter().map(|f| f.field).collect();
        assert_eq!(fields, ["queue", "id", "to_queue"]);
    }

    #[test]
    fn the_status_is_checked_before_the_key() {
        let args = MoveArgs::new(&"q".into(), &Arg::Int(4), &"q2".into()).unwrap();
        let ctx = Context::new(NOW, QueueRow::default()).unwrap();
        let moved = args
            .step(message(Status::Pending, Some("k")), &ctx, false)
            .unwrap();
        assert_eq!(
            (moved.queue.as_str(), moved.moved_from.as_deref()),
            ("q2", Some("q"))
        );
        assert_eq!((moved.updated_at, moved.retry_after), (NOW, Some(NOW + 5)));
        let taken = args.step(message(Status::Dead, Some("k")), &ctx, true);
        assert_eq!(
            taken.unwrap_err().to_string(),
            "cannot move message 4 to queue \"q2\": a message there already carries its \
             idempotency key \"k\""
        );
        let busy = args.step(message(Status::Processing, Some("k")), &ctx, true);
        assert_eq!(
            busy.unwrap_err().to_string(),
            "cannot move message 4: it is processing"
        );
        let done = args.step(message(Status::Succeeded, None), &ctx, false);
        assert!(matches!(
            done,
            Err(Error::Conflict(Conflict::WrongStatus {
                operation: "move",
                ..
            }))
        ));
    }
}
