//! The storage contract: the rules about keeping messages that are not about one database, once,
//! for every store (SQLite, PostgreSQL, IndexedDB). Each store translates them into its own
//! query language; none restates them.
//!
//! - [`Lane`]: where a stored message waits for `claim` (the `ready` column of the SQL stores,
//!   the `lane` of an IndexedDB record).
//! - [`StoredMessage::check`]: the checks on a message read back, with one error text naming the
//!   message and the field ([`corrupt`]).
//! - [`Place::migration`]: what a store does with the schema it finds at open: create it, upgrade
//!   it from an older version, take it, or refuse it (another application's, a newer
//!   deadletter's).
//! - [`upgrade_v1`]: the fields a message stored by deadletter 0.1.0 (schema version 1) gets.

use std::fmt::Display;

use crate::error::{Error, Result};
use crate::message::{FailedAttempt, Id, Message, Millis, Status};
use crate::validate::{MAX_TIME, MIN_TIME};

/// Where a stored message waits for `claim`: the storage-only place a store's claim index gives
/// it, computed from the message alone whenever the store writes it.
///
/// `claim` reads two short ranges instead of walking the queue: first the messages whose time has
/// come (`Waiting` and `Leased` up to `now`: backoffs that are over move to `Ready`, leases that
/// ran out are expired), then the head of `Ready` in claim order, `(created_at, id)`. So messages
/// still in backoff are never walked (issue 10). A message moved to `Ready` keeps its
/// `retry_after` until it is claimed (moving changes no field): after a clock that went back it
/// may be later than `now` again, so a claim skips a ready message whose `retry_after` is still
/// to come ([`crate::machine::is_due`] is the definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// `pending` without `retry_after`: due whatever the clock says (enqueued without a delay,
    /// replayed), taken in claim order.
    Ready,
    /// `pending` until this instant, its `retry_after` (a backoff or an enqueue delay).
    Waiting(Millis),
    /// `processing` until this instant, when its lease runs out and a claim expires it.
    Leased(Millis),
}

impl Lane {
    /// The lane `message` is written into; `None` for a finished message (`succeeded`, `dead`),
    /// which no claim looks at, and for a `processing` one without a lease (which the core never
    /// writes).
    pub fn of(message: &Message) -> Option<Self> {
        match (message.status, message.retry_after) {
            (Status::Pending, Some(at)) => Some(Self::Waiting(at)),
            (Status::Pending, None) => Some(Self::Ready),
            (Status::Processing, _) => message.lease_expires_at.map(Self::Leased),
            (Status::Succeeded | Status::Dead, _) => None,
        }
    }
}

/// The lane as one flag, for the stores that keep it in a `ready` column (SQLite, PostgreSQL):
/// false exactly while the message is [`Lane::Waiting`]; true for every other message, and once a
/// claim has moved a waiting message whose `retry_after` came (a store's own `UPDATE`, which
/// changes no field of the message).
pub fn ready(message: &Message) -> bool {
    !matches!(Lane::of(message), Some(Lane::Waiting(_)))
}

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
        let count = |field: &str, n: i64| {
            u32::try_from(n).map_err(|_| corrupt(id, field, format_args!("holds {n}, not a count")))
        };
        let time = |field: &str, ms: i64| {
            if (MIN_TIME..=MAX_TIME).contains(&ms) {
                Ok(ms)
            } else {
                Err(corrupt(id, field, format_args!("holds {ms}, {TIME_RANGE}")))
            }
        };
        let opt_time = |field: &str, ms: Option<i64>| ms.map(|ms| time(field, ms)).transpose();
        let status = Status::parse(self.status).ok_or_else(|| {
            let why = format_args!("holds the unknown status {:?}", self.status);
            corrupt(id, "status", why)
        })?;
        if let Some(entry) = self.errors.iter().find(|e| time("errors", e.at).is_err()) {
            let at = entry.at;
            let why = format_args!("holds a failure at {at}, {TIME_RANGE}");
            return Err(corrupt(id, "errors", why));
        }
        Ok(Message {
            id,
            queue: self.queue,
            payload: self.payload,
            status,
            retry_count: count("retry_count", self.retry_count)?,
            max_retries: count("max_retries", self.max_retries)?,
            retry_after: opt_time("retry_after", self.retry_after)?,
            last_error: self.last_error,
            created_at: time("created_at", self.created_at)?,
            updated_at: time("updated_at", self.updated_at)?,
            lease_token: self.lease_token,
            lease_expires_at: opt_time("lease_expires_at", self.lease_expires_at)?,
            idempotency_key: self.idempotency_key,
            first_failed_at: opt_time("first_failed_at", self.first_failed_at)?,
            dead_at: opt_time("dead_at", self.dead_at)?,
            errors: self.errors,
            errors_dropped: count("errors_dropped", self.errors_dropped)?,
            replay_count: count("replay_count", self.replay_count)?,
            replayed_at: opt_time("replayed_at", self.replayed_at)?,
            deduplicated: false,
        })
    }
}

/// Where a store keeps its schema, as its messages name it: for [`Place::migration`] and
/// [`Place::not_ours`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<'a> {
    /// The place as a sentence's subject: `the database` (a SQLite file), `schema "jobs"`
    /// (PostgreSQL), `IndexedDB database "jobs"`.
    pub name: &'a str,
    /// What a place of deadletter's is called there: `database` or `schema`.
    pub kind: &'a str,
}

/// What a store found where its schema belongs, at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<'a> {
    /// Nothing: a new, empty (or missing) place.
    Empty,
    /// No schema of deadletter's, but other things, described for the refusal (`other tables`,
    /// `other tables (orders, users)`): another application's place.
    Foreign(&'a str),
    /// deadletter's schema at this version (SQLite's `user_version` when not 0, PostgreSQL's
    /// `deadletter_schema` row, IndexedDB's database version).
    Version(i64),
}

/// What a store does with the schema it found, decided by [`Place::migration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migration {
    /// Create the current schema (in the transaction that looked).
    Create,
    /// Upgrade from this older version (1 or more) to the current one, in the transaction that
    /// read it, once the store has checked that the place has the shape of that version.
    Upgrade {
        /// The version found.
        from: i64,
    },
    /// The current version: open it as it is, once the store has checked its shape.
    Current,
}

impl Place<'_> {
    /// The decision for what was `found`, given the store's own `current` version: create an
    /// empty place (unless `create` is false), upgrade an older version, take the current one.
    /// Refused with a store error, before anything is written: another application's place
    /// (`... is not a deadletter database: it holds other tables and none of deadletter's`), a
    /// version below 1, a newer version (`... has schema version 5; this deadletter reads version
    /// 4 (upgrade deadletter to open it)`), and an empty place when `create` is false (`... holds
    /// no deadletter queues (it is missing or empty); nothing was created`: for tools that only
    /// read, where a mistyped name must not look like an empty queue).
    pub fn migration(&self, found: Found<'_>, current: i64, create: bool) -> Result<Migration> {
        let name = self.name;
        match found {
            Found::Empty if create => Ok(Migration::Create),
            Found::Empty => Err(Error::Store(format!(
                "{name} holds no deadletter queues (it is missing or empty); nothing was created"
            ))),
            Found::Foreign(others) => {
                Err(self.not_ours(format_args!("it holds {others} and none of deadletter's")))
            }
            Found::Version(version) if version == current => Ok(Migration::Current),
            Found::Version(version) if (1..current).contains(&version) => {
                Ok(Migration::Upgrade { from: version })
            }
            Found::Version(newer) if newer > current => Err(Error::Store(format!(
                "{name} has schema version {newer}; this deadletter reads version {current} \
                 (upgrade deadletter to open it)"
            ))),
            Found::Version(other) => {
                Err(self.not_ours(format_args!("it has schema version {other}")))
            }
        }
    }

    /// The store error refusing another application's place: `{name} is not a deadletter
    /// {kind}: {why}` (also for a place at one of deadletter's versions that lacks its shape).
    pub fn not_ours(&self, why: impl Display) -> Error {
        Error::Store(format!(
            "{} is not a deadletter {}: {why}",
            self.name, self.kind
        ))
    }
}

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
    use crate::NewMessage;

    fn pending() -> Message {
        NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 3,
            idempotency_key: None,
            retry_after: None,
            now: 1_000,
        }
        .with_id(7)
    }

    fn stored(message: &Message) -> StoredMessage<'_> {
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
        }
    }

    #[test]
    fn the_lane_follows_status_retry_after_and_lease() {
        let ready = pending();
        let waiting = Message {
            retry_after: Some(5_000),
            ..pending()
        };
        let leased = Message {
            status: Status::Processing,
            lease_expires_at: Some(31_000),
            ..pending()
        };
        let done = Message {
            status: Status::Succeeded,
            ..pending()
        };
        let lanes = [&ready, &waiting, &leased, &done].map(Lane::of);
        assert_eq!(
            lanes,
            [
                Some(Lane::Ready),
                Some(Lane::Waiting(5_000)),
                Some(Lane::Leased(31_000)),
                None
            ]
        );
        let flags = [&ready, &waiting, &leased, &done].map(super::ready);
        assert_eq!(flags, [true, false, true, true]);
    }

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

    #[test]
    fn the_schema_found_is_created_upgraded_taken_or_refused() {
        let place = Place {
            name: "the database",
            kind: "database",
        };
        let decide = |found, create| place.migration(found, 4, create);
        assert_eq!(decide(Found::Empty, true), Ok(Migration::Create));
        assert_eq!(decide(Found::Version(4), false), Ok(Migration::Current));
        for from in 1..4 {
            assert_eq!(
                decide(Found::Version(from), true),
                Ok(Migration::Upgrade { from })
            );
        }
        let refusal = |found, create| decide(found, create).unwrap_err().to_string();
        assert_eq!(
            refusal(Found::Version(5), true),
            "store error: the database has schema version 5; this deadletter reads version 4 \
             (upgrade deadletter to open it)"
        );
        for other in [0, -3] {
            assert_eq!(
                refusal(Found::Version(other), true),
                format!(
                    "store error: the database is not a deadletter database: it has schema \
                     version {other}"
                )
            );
        }
        assert_eq!(
            refusal(Found::Foreign("other tables (orders)"), true),
            "store error: the database is not a deadletter database: it holds other tables \
             (orders) and none of deadletter's"
        );
        assert_eq!(
            refusal(Found::Empty, false),
            "store error: the database holds no deadletter queues (it is missing or empty); \
             nothing was created"
        );
    }

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
