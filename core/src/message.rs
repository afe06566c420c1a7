//! The message record and its status.

use serde::{Deserialize, Serialize};

/// A UTC instant in whole milliseconds since the Unix epoch. The core never reads a clock:
/// every operation takes `now` from its caller.
pub type Millis = i64;

/// A message id: assigned by the store on enqueue, strictly increasing, starting at 1.
pub type Id = i64;

/// Where a message is in its lifecycle.
///
/// `pending` -> (claim) -> `processing` -> (succeed) -> `succeeded`;
/// `processing` -> (fail, retries left) -> `pending` with a backoff;
/// `processing` -> (fail, retries used up or not retryable) -> `dead`; `dead` -> (replay) -> `pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting to be claimed, immediately or once `retry_after` has passed.
    Pending,
    /// Claimed by a worker that holds the lease.
    Processing,
    /// Acknowledged by a worker; final.
    Succeeded,
    /// Failed permanently or ran out of retries; kept with its last error until replayed.
    Dead,
}

impl Status {
    /// Every status, in lifecycle order.
    pub const ALL: [Status; 4] = [Self::Pending, Self::Processing, Self::Succeeded, Self::Dead];

    /// The status as stored and shown to users: `pending`, `processing`, `succeeded` or `dead`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Succeeded => "succeeded",
            Self::Dead => "dead",
        }
    }

    /// Parses the string form; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failed attempt in a message's history ([`Message::errors`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedAttempt {
    /// Which failed attempt this was, counting every failure of the message since it was
    /// enqueued, across replays: 1 for the first.
    pub attempt: u32,
    /// The error reported (truncated past 64 KiB), or `lease expired`.
    pub error: String,
    /// When the failure was recorded.
    pub at: Millis,
}

/// One message with everything the queue knows about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Assigned by the store, strictly increasing.
    pub id: Id,
    /// The queue it belongs to; ids of other queues are invisible here.
    pub queue: String,
    /// The user's payload, byte-exact and never parsed.
    pub payload: String,
    /// Lifecycle state.
    pub status: Status,
    /// Failed attempts since enqueue or the last replay (an expired lease counts as one).
    pub retry_count: u32,
    /// Attempts allowed before the message is dead (1..=10).
    pub max_retries: u32,
    /// Set exactly while the message is `pending` in backoff (after a failure, or enqueued with a
    /// delay): not claimable before this instant. Cleared by claim and replay.
    pub retry_after: Option<Millis>,
    /// The error of the last failed attempt (truncated past 64 KiB); cleared by replay.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
    /// While `processing`: the token the worker must show to ack, fail or extend.
    pub lease_token: Option<String>,
    /// While `processing`: when the lease (visibility timeout) runs out.
    pub lease_expires_at: Option<Millis>,
    /// The producer's idempotency key: within a queue, at most one stored message carries it.
    pub idempotency_key: Option<String>,
    /// When the first failed attempt was recorded; never changed afterwards (replay keeps it).
    pub first_failed_at: Option<Millis>,
    /// When it last became dead; `None` unless `dead`.
    pub dead_at: Option<Millis>,
    /// The failure history, oldest first: the last [`crate::machine::MAX_HISTORY`] failed
    /// attempts. Replay keeps it.
    pub errors: Vec<FailedAttempt>,
    /// How many older entries were dropped from `errors` to keep it bounded.
    pub errors_dropped: u32,
    /// How many times it was replayed from the dead-letter queue.
    pub replay_count: u32,
    /// When it was last replayed.
    pub replayed_at: Option<Millis>,
    /// Its ordering group within the queue, when it has one: the members of a group are
    /// delivered one at a time, in the order they entered the group (see
    /// [`crate::storage::Position`]).
    pub group: Option<String>,
    /// When it expires: still `pending` at this instant, it is never delivered (the next claim or
    /// reap takes it out, by the queue's [`crate::OnExpiry`]). `None`: it never expires.
    pub expires_at: Option<Millis>,
    /// The queue it was last moved from (`move`, `move_all`: issue 22); `None` until it is
    /// moved. Moving it again overwrites it.
    #[serde(default)]
    pub moved_from: Option<String>,
    /// Not stored: on the result of an enqueue, `true` when a stored message already carried the
    /// idempotency key and was returned instead of inserting a new one; `false` everywhere else.
    #[serde(default)]
    pub deduplicated: bool,
}

impl Message {
    /// Every failed attempt so far, across replays: the entries kept plus those dropped.
    pub fn attempts_failed(&self) -> u32 {
        let kept = u32::try_from(self.errors.len()).unwrap_or(u32::MAX);
        self.errors_dropped.saturating_add(kept)
    }
}

/// A message about to be inserted: everything but the id, which the store assigns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// See [`Message::queue`].
    pub queue: String,
    /// See [`Message::payload`].
    pub payload: String,
    /// See [`Message::max_retries`].
    pub max_retries: u32,
    /// See [`Message::idempotency_key`].
    pub idempotency_key: Option<String>,
    /// Not claimable before this instant (an enqueue delay), when set.
    pub retry_after: Option<Millis>,
    /// See [`Message::group`].
    pub group: Option<String>,
    /// See [`Message::expires_at`].
    pub expires_at: Option<Millis>,
    /// Enqueue instant; becomes both `created_at` and `updated_at`.
    pub now: Millis,
}

impl NewMessage {
    /// The stored message once the store has chosen its id.
    pub fn with_id(self, id: Id) -> Message {
        Message {
            id,
            queue: self.queue,
            payload: self.payload,
            status: Status::Pending,
            retry_count: 0,
            max_retries: self.max_retries,
            retry_after: self.retry_after,
            last_error: None,
            created_at: self.now,
            updated_at: self.now,
            lease_token: None,
            lease_expires_at: None,
            idempotency_key: self.idempotency_key,
            first_failed_at: None,
            dead_at: None,
            errors: Vec::new(),
            errors_dropped: 0,
            replay_count: 0,
            replayed_at: None,
            group: self.group,
            expires_at: self.expires_at,
            moved_from: None,
            deduplicated: false,
        }
    }
}
