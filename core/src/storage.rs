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

use std::fmt::Display;

use crate::arg::Arg;
use crate::backoff::Backoff;
use crate::error::{Error, Quoted, Result};
use crate::message::{FailedAttempt, Id, Message, Millis, Status};
use crate::settings::{QueueRow, QueueSettings};
use crate::validate::{MAX_TIME, MIN_TIME};

/// Where a stored message waits for `claim`: the storage-only place a store's claim index gives
/// it, computed from the message and whether it is its group's head whenever the store writes it.
///
/// `claim` reads two short ranges instead of walking the queue: first the messages whose time has
/// come (`Waiting` and `Leased` up to `now`: backoffs that are over move to `Ready`, leases that
/// ran out are expired), then the head of `Ready` in claim order, `(created_at, id)`. So messages
/// still in backoff are never walked (issue 10), and neither are the members of a group waiting
/// behind its head (`Blocked`: in no claim index at all), so 1 000 groups whose heads are in
/// backoff with 10 000 members behind them cost a claim no more than none. A message moved to
/// `Ready` keeps its `retry_after` until it is claimed (moving changes no field): after a clock
/// that went back it may be later than `now` again, so a claim skips a ready message whose
/// `retry_after` is still to come ([`crate::machine::is_due`] is the definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// `pending` without `retry_after`: due whatever the clock says (enqueued without a delay,
    /// replayed), taken in claim order.
    Ready,
    /// `pending` until this instant, its `retry_after` (a backoff or an enqueue delay).
    Waiting(Millis),
    /// `processing` until this instant, when its lease runs out and a claim expires it.
    Leased(Millis),
    /// `pending` behind its group's head: not claimable, whatever its `retry_after`, until the
    /// head leaves the group and the store unblocks it ([`next_head`]).
    Blocked,
}

impl Lane {
    /// The lane `message` is written into; `head` says whether it is its group's head (the first
    /// of the group's live members in group order: see [`Position`]), and is ignored for a message
    /// without a group. `None` for a finished message (`succeeded`, `dead`), which no claim looks
    /// at, and for a `processing` one without a lease (which the core never writes).
    pub fn of(message: &Message, head: bool) -> Option<Self> {
        let blocked = message.group.is_some() && !head;
        match (message.status, message.retry_after) {
            (Status::Pending, _) if blocked => Some(Self::Blocked),
            (Status::Pending, Some(at)) => Some(Self::Waiting(at)),
            (Status::Pending, None) => Some(Self::Ready),
            (Status::Processing, _) => message.lease_expires_at.map(Self::Leased),
            (Status::Succeeded | Status::Dead, _) => None,
        }
    }
}

/// The lane as the SQL stores keep it, in two flags: `ready` (false exactly while the message is
/// [`Lane::Waiting`] or [`Lane::Blocked`]; true for every other message, and once a claim has
/// moved a waiting message whose `retry_after` came, a store's own `UPDATE` that changes no field
/// of the message) and `blocked` ([`Lane::Blocked`]).
pub fn ready(message: &Message, head: bool) -> bool {
    !matches!(
        Lane::of(message, head),
        Some(Lane::Waiting(_) | Lane::Blocked)
    )
}

/// See [`ready`]: whether the message waits behind its group's head.
pub fn blocked(message: &Message, head: bool) -> bool {
    Lane::of(message, head) == Some(Lane::Blocked)
}

/// Whether `message` is a live member of its group, if it has one: `pending` (due, in backoff or
/// blocked) or `processing`. The group's head is its first live member in group order.
pub fn live(message: &Message) -> bool {
    matches!(message.status, Status::Pending | Status::Processing)
}

/// Whether a write from `before` to `after` takes a grouped message out of its group (it
/// succeeded, died, or was discarded at its expiry): the store then, in the same transaction,
/// unblocks the group's next member ([`next_head`]).
pub fn leaves_group(before: &Message, after: Option<&Message>) -> bool {
    before.group.is_some() && live(before) && !after.is_some_and(live)
}

/// Whether a write from `before` to `after` puts a grouped message back into its group (a
/// replay): the store then gives it its place at the group's end ([`group_at`]), blocked unless
/// the group has no other live member.
pub fn enters_group(before: &Message, after: &Message) -> bool {
    after.group.is_some() && !live(before) && live(after)
}

/// A grouped message's place in its group, stored with it (storage only): the group's order is
/// `(at, id)` ascending. The index of the live grouped messages by `(queue, group, at, id)`
/// answers "the group's tail" (its last live member: enqueue, replay) and "the group's next
/// member" (its first: [`next_head`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The position's instant-like key (milliseconds).
    pub at: Millis,
    /// The message's id, which breaks ties.
    pub id: Id,
}

/// The `at` of a message entering its group at `now` behind `tail`, the group's last live member
/// at that moment (`None`: the group has none, and the message is its head): a new message
/// (`own` `None`: its id is greater than every stored one) goes to `max(now, tail.at)`; a
/// replayed one (`own` its id) to `max(now, tail.at + 1)` when the tail's id is greater than its
/// own, else `max(now, tail.at)`. So a message always goes behind every member that is pending or
/// processing when it enters, also when the clock went back: a group's order is the order its
/// messages entered it.
pub fn group_at(now: Millis, tail: Option<Position>, own: Option<Id>) -> Millis {
    let Some(tail) = tail else {
        return now;
    };
    let behind = match own {
        Some(id) if tail.id > id => tail.at.saturating_add(1),
        _ => tail.at,
    };
    now.max(behind)
}

/// What the store does with its group's first live member (in group order) after a member left:
/// `Some` lane to write it in when it is blocked (it is the head now: [`Lane::Ready`], or
/// [`Lane::Waiting`] while its `retry_after` is set); `None` when it already is in a claim lane
/// (it was the head) or there is none.
pub fn next_head(first: Option<&Message>, blocked: bool) -> Option<Lane> {
    first.filter(|_| blocked).and_then(|m| Lane::of(m, true))
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
    /// See [`Message::group`].
    pub group: Option<String>,
    /// See [`Message::expires_at`].
    pub expires_at: Option<i64>,
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
            deduplicated: false,
        })
    }
}

/// Whether `ms` is an instant every binding can represent ([`MIN_TIME`]..=[`MAX_TIME`]).
fn in_time_range(ms: i64) -> bool {
    (MIN_TIME..=MAX_TIME).contains(&ms)
}

/// A queue's row as a store keeps it, column by column (SQLite and PostgreSQL: the table
/// `queues`; IndexedDB: a record of the object store `queues`): [`StoredQueue::new`] from a
/// [`QueueRow`] to write, [`StoredQueue::check`] back when read. The backoff policy is four
/// columns, all set or all null (`backoff_jitter` is null also for a policy without jitter).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredQueue<'a> {
    /// The queue's name.
    pub name: &'a str,
    /// See [`Backoff::initial_ms`].
    pub backoff_initial_ms: Option<i64>,
    /// See [`Backoff::multiplier`].
    pub backoff_multiplier: Option<f64>,
    /// See [`Backoff::cap_ms`].
    pub backoff_cap_ms: Option<i64>,
    /// See [`Backoff::jitter`]: `full`, `equal` or null.
    pub backoff_jitter: Option<&'a str>,
    /// See [`QueueSettings::max_retries`].
    pub max_retries: Option<i64>,
    /// See [`QueueSettings::lease_ms`].
    pub lease_ms: Option<i64>,
    /// See [`QueueSettings::expires_in_ms`].
    pub expires_in_ms: Option<i64>,
    /// See [`QueueSettings::on_expiry`]: `dead` or `discard`.
    pub on_expiry: &'a str,
    /// See [`QueueSettings::paused`].
    pub paused: bool,
    /// See [`QueueRow::expired_dead`].
    pub expired_dead: i64,
    /// See [`QueueRow::expired_discarded`].
    pub expired_discarded: i64,
}

impl<'a> StoredQueue<'a> {
    /// The columns of `row`, the row of queue `name`.
    pub fn new(name: &'a str, row: &QueueRow) -> Self {
        let settings = &row.settings;
        let backoff = settings.backoff.as_ref();
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Self {
            name,
            backoff_initial_ms: backoff.map(|b| b.initial_ms),
            backoff_multiplier: backoff.map(|b| b.multiplier),
            backoff_cap_ms: backoff.map(|b| b.cap_ms),
            backoff_jitter: backoff.and_then(|b| b.jitter.as_str()),
            max_retries: settings.max_retries.map(i64::from),
            lease_ms: settings.lease_ms,
            expires_in_ms: settings.expires_in_ms,
            on_expiry: settings.on_expiry.as_str(),
            paused: settings.paused,
            expired_dead: count(row.expired_dead),
            expired_discarded: count(row.expired_discarded),
        }
    }

    /// The row, when every value is one deadletter writes (see [`queue_row`]).
    pub fn check(self) -> Result<QueueRow> {
        let int = |n: Option<i64>| n.map_or(Arg::Null, Arg::Int);
        queue_row(
            self.name,
            &[
                int(self.backoff_initial_ms),
                self.backoff_multiplier.map_or(Arg::Null, Arg::Float),
                int(self.backoff_cap_ms),
                self.backoff_jitter.map_or(Arg::Null, Arg::Str),
                int(self.max_retries),
                int(self.lease_ms),
                int(self.expires_in_ms),
                Arg::Str(self.on_expiry),
                Arg::Bool(self.paused),
                Arg::Int(self.expired_dead),
                Arg::Int(self.expired_discarded),
            ],
        )
    }
}

/// The columns of a queue's row, in [`StoredQueue`]'s order (what [`queue_row`] takes).
pub const QUEUE_COLUMNS: [&str; 11] = [
    "backoff_initial_ms",
    "backoff_multiplier",
    "backoff_cap_ms",
    "backoff_jitter",
    "max_retries",
    "lease_ms",
    "expires_in_ms",
    "on_expiry",
    "paused",
    "expired_dead",
    "expired_discarded",
];

/// The row of queue `name` from its columns ([`QUEUE_COLUMNS`]' order) as values of any type (a
/// typed store's [`StoredQueue::check`]; a store whose records are untyped, IndexedDB's, hands
/// over what it read), when every value is one deadletter writes: each setting of the type and
/// within the range `set_settings` accepts, a policy whole or absent, `paused` a bool, counters
/// integers >= 0. Otherwise a store error naming the queue and the column: `queue "jobs" is
/// corrupt: column lease_ms: ...`.
pub fn queue_row(name: &str, columns: &[Arg<'_>; 11]) -> Result<QueueRow> {
    let corrupt = |column: &str, why: &dyn Display| {
        Error::Store(format!(
            "queue {} is corrupt: column {column}: {why}",
            Quoted(name)
        ))
    };
    let [
        initial,
        multiplier,
        cap,
        jitter,
        max_retries,
        lease,
        expires_in,
        on_expiry,
        paused,
        dead,
        discarded,
    ] = columns;
    let set = [initial, multiplier, cap].map(|a| *a != Arg::Null);
    let backoff = match set {
        [false, false, false] if *jitter == Arg::Null => None,
        [true, true, true] => Some(Backoff::new(initial, multiplier, cap, jitter)),
        _ => {
            let why = "holds part of a backoff policy (its four columns are set together)";
            return Err(corrupt("backoff_initial_ms", &why));
        }
    };
    let settings =
        QueueSettings::new(backoff, max_retries, lease, expires_in, on_expiry).map_err(|err| {
            match err.field_errors().first() {
                Some(field) => corrupt(field.field, &field.message),
                None => err,
            }
        })?;
    let Arg::Bool(paused) = *paused else {
        return Err(corrupt(
            "paused",
            &format_args!("holds {}, not a bool", paused.kind()),
        ));
    };
    let count = |column: &str, arg: &Arg<'_>| match arg {
        Arg::Int(n) if *n >= 0 => Ok(n.unsigned_abs()),
        Arg::Int(n) => Err(corrupt(column, &format_args!("holds {n}, not a count"))),
        other => Err(corrupt(
            column,
            &format_args!("holds {}, not a count", other.kind()),
        )),
    };
    Ok(QueueRow {
        settings: QueueSettings { paused, ..settings },
        expired_dead: count("expired_dead", dead)?,
        expired_discarded: count("expired_discarded", discarded)?,
    })
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
            group: None,
            expires_at: None,
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
            group: message.group.clone(),
            expires_at: message.expires_at,
        }
    }

    #[test]
    fn the_lane_follows_status_retry_after_lease_and_group() {
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
        let member = Message {
            group: Some("g".into()),
            ..waiting.clone()
        };
        let lanes = [&ready, &waiting, &leased, &done, &member].map(|m| Lane::of(m, false));
        assert_eq!(
            lanes,
            [
                Some(Lane::Ready),
                Some(Lane::Waiting(5_000)),
                Some(Lane::Leased(31_000)),
                None,
                Some(Lane::Blocked)
            ]
        );
        assert_eq!(Lane::of(&member, true), Some(Lane::Waiting(5_000)));
        let flags = [&ready, &waiting, &leased, &done, &member].map(|m| super::ready(m, false));
        assert_eq!(flags, [true, false, true, true, false]);
        assert!(blocked(&member, false) && !blocked(&member, true) && !blocked(&ready, false));
        assert_eq!(next_head(Some(&member), true), Some(Lane::Waiting(5_000)));
        assert_eq!(next_head(Some(&member), false), None);
        assert_eq!(next_head(None, true), None);
    }

    #[test]
    fn a_group_is_left_and_entered_by_its_live_members() {
        let member = Message {
            group: Some("g".into()),
            ..pending()
        };
        let taken = Message {
            status: Status::Processing,
            ..member.clone()
        };
        let dead = Message {
            status: Status::Dead,
            ..member.clone()
        };
        assert!(!leaves_group(&member, Some(&taken)));
        assert!(leaves_group(&taken, Some(&dead)));
        assert!(leaves_group(&member, None));
        assert!(!leaves_group(&pending(), None));
        assert!(enters_group(&dead, &member));
        assert!(!enters_group(&member, &taken));
    }

    #[test]
    fn an_entering_message_goes_behind_the_tail_even_when_the_clock_went_back() {
        let tail = Position { at: 50, id: 3 };
        assert_eq!(group_at(100, None, None), 100);
        assert_eq!(group_at(100, Some(tail), None), 100);
        assert_eq!(group_at(10, Some(tail), None), 50);
        // A replayed message with a smaller id than the tail's, in the tail's millisecond.
        assert_eq!(group_at(50, Some(tail), Some(1)), 51);
        assert_eq!(group_at(50, Some(tail), Some(4)), 50);
        assert_eq!(
            group_at(
                0,
                Some(Position {
                    at: i64::MAX,
                    id: 9
                }),
                Some(1)
            ),
            i64::MAX
        );
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
