//! The storage contract: the rules about keeping messages that are not about one database, once,
//! for every store (SQLite, PostgreSQL, IndexedDB). Each store translates them into its own
//! query language; none restates them.
//!
//! - [`Lane`]: where a stored message waits for `claim` (the `ready` and `blocked` columns of the
//!   SQL stores, the `lane` of an IndexedDB record), and what a write does to a message's ordering
//!   group: [`leaves_group`] (the store then unblocks the group's next member: [`next_head`]),
//!   [`enters_group`] (a replay: the message goes to the group's end, [`group_at`]).
//! - [`StoredMessage::check`]: the checks on a message read back, with one error text naming the
//!   message and the field ([`corrupt`]).
//! - [`Place::migration`]: what a store does with the schema it finds at open: create it, upgrade
//!   it from an older version, take it, or refuse it (another application's, a newer
//!   deadletter's).
//! - [`StoredQueue`]: a queue's row (settings, pause, expiry counters) as stores keep it, and its
//!   checks when read back.
//! - [`upgrade_v1`]: the fields a message stored by deadletter 0.1.0 (schema version 1) gets.

mod check;
mod lane;
mod queue;
mod schema;
mod upgrade;

pub use check::{StoredMessage, corrupt};
pub use lane::{
    Lane, Position, blocked, claim_order, enters_group, group_at, leaves_group, live, next_head,
    ready,
};
pub use queue::{QUEUE_COLUMNS, StoredQueue, queue_row};
pub use schema::{Found, Migration, Place};
pub use upgrade::upgrade_v1;

/// What the tests of the storage modules share: a message and it as a store reads it back.
#[cfg(test)]
mod tests {
    use super::StoredMessage;
    use crate::{Message, NewMessage};

    pub(super) fn pending() -> Message {
        NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 3,
            idempotency_key: None,
            retry_after: None,
            group: None,
            expires_at: None,
            now: 1_000,
        }
        .with_id(7)
    }

    pub(super) fn stored(message: &Message) -> StoredMessage<'_> {
        StoredMessage {
            id: message.id,
            queue: message.queue.clone(),
            payload: message.payload.clone(),
            status: message.status.as_str(),
            retry_count: message.retry_count.into(),
            max_retries: message.max_retries.into(),
            retry_after: message.retry_after,
            last_error: message.last_error.clone(),
            created_at: message.created_at,
            updated_at: message.updated_at,
            lease_token: message.lease_token.clone(),
            lease_expires_at: message.lease_expires_at,
            idempotency_key: message.idempotency_key.clone(),
            first_failed_at: message.first_failed_at,
            dead_at: message.dead_at,
            errors: message.errors.clone(),
            errors_dropped: message.errors_dropped.into(),
            replay_count: message.replay_count.into(),
            replayed_at: message.replayed_at,
            group: message.group.clone(),
            expires_at: message.expires_at,
            moved_from: message.moved_from.clone(),
        }
    }
}
