//! The fields a message stored by deadletter 0.1.0 (schema version 1) gets ([`upgrade_v1`]).

use crate::message::{Message, Status};

/// A message that deadletter 0.1.0 stored (schema version 1) as the current version holds it.
/// `message` is what 0.1.0 stored, read with the fields it did not have at their defaults; they
/// get what 0.1.0 knew:
/// - `errors` is empty and `errors_dropped` is `retry_count`: every failure is counted, none of
///   their entries is known;
/// - `dead_at` is `updated_at` for a dead message (exact: in 0.1.0 a dead message changed only by
///   replay, which made it pending), `None` otherwise;
/// - `retry_after` is kept only while `pending` (0.1.0 left it on claimed messages; now it is
///   set exactly while a message waits for its backoff or delay);
/// - no idempotency key, no first failure instant, no replays.
pub fn upgrade_v1(message: Message) -> Message {
    let pending = message.status == Status::Pending;
    let dead = message.status == Status::Dead;
    Message {
        retry_after: message.retry_after.filter(|_| pending),
        dead_at: dead.then_some(message.updated_at),
        errors: Vec::new(),
        errors_dropped: message.retry_count,
        idempotency_key: None,
        first_failed_at: None,
        replay_count: 0,
        replayed_at: None,
        ..message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::tests::pending;

    #[test]
    fn a_message_of_0_1_0_gets_what_0_1_0_knew() {
        let claimed = Message {
            status: Status::Processing,
            retry_count: 2,
            retry_after: Some(9_000),
            lease_token: Some("t".into()),
            lease_expires_at: Some(40_000),
            updated_at: 8_000,
            ..pending()
        };
        assert_eq!(
            upgrade_v1(claimed.clone()),
            Message {
                retry_after: None,
                errors_dropped: 2,
                ..claimed
            }
        );
        let dead = Message {
            status: Status::Dead,
            retry_count: 3,
            last_error: Some("boom".into()),
            updated_at: 8_000,
            ..pending()
        };
        assert_eq!(
            upgrade_v1(dead.clone()),
            Message {
                dead_at: Some(8_000),
                errors_dropped: 3,
                ..dead
            }
        );
        let retried = Message {
            retry_count: 1,
            retry_after: Some(9_000),
            ..pending()
        };
        assert_eq!(
            upgrade_v1(retried.clone()),
            Message {
                errors_dropped: 1,
                ..retried
            }
        );
    }
}
