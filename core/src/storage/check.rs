//! The checks on a message read back ([`StoredMessage::check`]), with one error text naming the
//! message and the field ([`corrupt`]).

use std::fmt::Display;

use crate::error::{Error, Quoted, Result};
use crate::message::{FailedAttempt, Id, Message, Status};
use crate::validate::{MAX_TIME, MIN_TIME};

/// The store error of a message read back with a value deadletter never writes: something else
/// changed its row or record. `field` is the message's field (a SQL column) as the core names it;
/// `why` says what it holds. The same text in every store: `message 7 is corrupt: column
/// created_at: holds 9223372036854775807, outside the time range ...`.
pub fn corrupt(id: Id, field: &str, why: impl Display) -> Error {
    Error::Store(format!("message {id} is corrupt: column {field}: {why}"))
}

/// A message as a store read it back, before the checks of [`StoredMessage::check`]: numbers as
/// wide as stores hold them, the status as its stored text. A store fills it from a row or a
/// record (reporting a value of the wrong type, or a missing one, with [`corrupt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage<'a> {
    /// See [`Message::id`].
    pub id: Id,
    /// See [`Message::queue`].
    pub queue: String,
    /// See [`Message::payload`].
    pub payload: String,
    /// The stored status text (see [`Status::as_str`]).
    pub status: &'a str,
    /// See [`Message::retry_count`].
    pub retry_count: i64,
    /// See [`Message::max_retries`].
    pub max_retries: i64,
    /// See [`Message::retry_after`].
    pub retry_after: Option<i64>,
    /// See [`Message::last_error`].
    pub last_error: Option<String>,
    /// See [`Message::created_at`].
    pub created_at: i64,
    /// See [`Message::updated_at`].
    pub updated_at: i64,
    /// See [`Message::lease_token`].
    pub lease_token: Option<String>,
    /// See [`Message::lease_expires_at`].
    pub lease_expires_at: Option<i64>,
    /// See [`Message::idempotency_key`].
    pub idempotency_key: Option<String>,
    /// See [`Message::first_failed_at`].
    pub first_failed_at: Option<i64>,
    /// See [`Message::dead_at`].
    pub dead_at: Option<i64>,
    /// See [`Message::errors`].
    pub errors: Vec<FailedAttempt>,
    /// See [`Message::errors_dropped`].
    pub errors_dropped: i64,
    /// See [`Message::replay_count`].
    pub replay_count: i64,
    /// See [`Message::replayed_at`].
    pub replayed_at: Option<i64>,
    /// See [`Message::group`].
    pub group: Option<String>,
    /// See [`Message::expires_at`].
    pub expires_at: Option<i64>,
    /// See [`Message::moved_from`].
    pub moved_from: Option<String>,
}

/// What the time-range error says after the value.
const TIME_RANGE: &str = "outside the time range deadletter writes (0001-01-01T00:00:00Z to \
                          9999-12-31T23:59:59.999Z, in UTC milliseconds)";

impl StoredMessage<'_> {
    /// The message, when every value is one deadletter writes: a known status, counts within
    /// `u32`, instants (also each history entry's `at`) within [`MIN_TIME`]..=[`MAX_TIME`] (what
    /// every binding can represent: Python's `datetime`, JavaScript's `Date`). Otherwise the
    /// store error of [`corrupt`] naming the message and the first field at fault, rather than a
    /// wrong message, or an untyped error later when a binding converts it.
    pub fn check(self) -> Result<Message> {
        let id = self.id;
        let status = Status::parse(self.status).ok_or_else(|| {
            let why = format_args!("holds the unknown status {}", Quoted(self.status));
            corrupt(id, "status", why)
        })?;
        if let Some(entry) = self.errors.iter().find(|e| !in_time_range(e.at)) {
            let at = entry.at;
            let why = format_args!("holds a failure at {at}, {TIME_RANGE}");
            return Err(corrupt(id, "errors", why));
        }
        // The numbers, in the order checked: (field, value, whether it is an instant, else a
        // count). One loop rather than a check per field: the WebAssembly module is smaller.
        let numbers = [
            ("retry_count", Some(self.retry_count), false),
            ("max_retries", Some(self.max_retries), false),
            ("retry_after", self.retry_after, true),
            ("created_at", Some(self.created_at), true),
            ("updated_at", Some(self.updated_at), true),
            ("lease_expires_at", self.lease_expires_at, true),
            ("first_failed_at", self.first_failed_at, true),
            ("dead_at", self.dead_at, true),
            ("errors_dropped", Some(self.errors_dropped), false),
            ("replay_count", Some(self.replay_count), false),
            ("replayed_at", self.replayed_at, true),
            ("expires_at", self.expires_at, true),
        ];
        for (field, value, instant) in numbers {
            match value {
                Some(ms) if instant && !in_time_range(ms) => {
                    return Err(corrupt(id, field, format_args!("holds {ms}, {TIME_RANGE}")));
                }
                Some(n) if !instant && u32::try_from(n).is_err() => {
                    return Err(corrupt(id, field, format_args!("holds {n}, not a count")));
                }
                _ => {}
            }
        }
        // Checked above: every count fits.
        let count = |n: i64| u32::try_from(n).unwrap_or_default();
        Ok(Message {
            id,
            queue: self.queue,
            payload: self.payload,
            status,
            retry_count: count(self.retry_count),
            max_retries: count(self.max_retries),
            retry_after: self.retry_after,
            last_error: self.last_error,
            created_at: self.created_at,
            updated_at: self.updated_at,
            lease_token: self.lease_token,
            lease_expires_at: self.lease_expires_at,
            idempotency_key: self.idempotency_key,
            first_failed_at: self.first_failed_at,
            dead_at: self.dead_at,
            errors: self.errors,
            errors_dropped: count(self.errors_dropped),
            replay_count: count(self.replay_count),
            replayed_at: self.replayed_at,
            group: self.group,
            expires_at: self.expires_at,
            moved_from: self.moved_from,
            deduplicated: false,
        })
    }
}

/// Whether `ms` is an instant every binding can represent ([`MIN_TIME`]..=[`MAX_TIME`]).
fn in_time_range(ms: i64) -> bool {
    (MIN_TIME..=MAX_TIME).contains(&ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::tests::pending;
    use crate::storage::tests::stored;

    #[test]
    fn a_message_read_back_is_checked_field_by_field() {
        let message = Message {
            errors: vec![FailedAttempt {
                attempt: 1,
                error: "boom".into(),
                at: MAX_TIME,
            }],
            dead_at: Some(MIN_TIME),
            ..pending()
        };
        assert_eq!(stored(&message).check(), Ok(message.clone()));
        let text = |s: StoredMessage<'_>| s.check().unwrap_err().to_string();
        assert_eq!(
            text(StoredMessage {
                created_at: MAX_TIME + 1,
                ..stored(&message)
            }),
            "store error: message 7 is corrupt: column created_at: holds 253402300800000, \
             outside the time range deadletter writes (0001-01-01T00:00:00Z to \
             9999-12-31T23:59:59.999Z, in UTC milliseconds)"
        );
        assert_eq!(
            text(StoredMessage {
                retry_count: -1,
                ..stored(&message)
            }),
            "store error: message 7 is corrupt: column retry_count: holds -1, not a count"
        );
        assert_eq!(
            text(StoredMessage {
                status: "zombie",
                ..stored(&message)
            }),
            "store error: message 7 is corrupt: column status: holds the unknown status \"zombie\""
        );
        let mut early = stored(&message);
        early.errors[0].at = MIN_TIME - 1;
        assert!(text(early).starts_with(
            "store error: message 7 is corrupt: column errors: holds a failure at \
                 -62135596800001, outside the time range"
        ));
        let late = StoredMessage {
            replayed_at: Some(i64::MAX),
            ..stored(&message)
        };
        assert!(text(late).contains("column replayed_at: holds 9223372036854775807"));
    }
}
