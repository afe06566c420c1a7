//! The message state machine: pure functions from (message, event, now) to the next message.
//! Stores call them inside their atomic read-modify-write; nothing here does I/O or reads a clock.

use crate::backoff::Backoff;
use crate::error::{Conflict, Error, Result};
use crate::message::{FailedAttempt, Message, Millis, Status};
use crate::validate::later;

/// Longest stored `last_error`, in bytes; the rest is replaced by a marker (see [`truncate_error`]).
pub const MAX_ERROR_BYTES: usize = 64 * 1024;
/// The error recorded when a lease runs out before the worker acked or failed.
pub const LEASE_EXPIRED: &str = "lease expired";
/// The error recorded when a message still `pending` at its expiry dies (see [`expire`]).
pub const EXPIRED: &str = "expired";
/// How many failed attempts a message's history ([`Message::errors`]) keeps: the most recent.
pub const MAX_HISTORY: usize = 20;

/// Delay before the next attempt after the `retry_count`-th failure under the default policy:
/// `min(2^retry_count, 3600)` seconds, in milliseconds. Defined for every count.
pub fn backoff_ms(retry_count: u32) -> Millis {
    Backoff::default().delay_ms(retry_count, 0.0)
}

/// Whether a `pending` message may be claimed at `now`.
pub fn is_due(message: &Message, now: Millis) -> bool {
    message.status == Status::Pending && message.retry_after.is_none_or(|at| at <= now)
}

/// Whether a `pending` message is still waiting for its backoff or enqueue delay at `now`.
pub fn is_delayed(message: &Message, now: Millis) -> bool {
    message.status == Status::Pending && message.retry_after.is_some_and(|at| at > now)
}

/// Whether a `pending` message's expiry has come at `now` (`expires_at <= now`): it is never
/// delivered, and the next claim or reap takes it out.
pub fn is_expired(message: &Message, now: Millis) -> bool {
    message.status == Status::Pending && message.expires_at.is_some_and(|at| at <= now)
}

/// Whether a `processing` message's lease has run out at `now`.
pub fn lease_expired(message: &Message, now: Millis) -> bool {
    message.status == Status::Processing && message.lease_expires_at.is_some_and(|at| at <= now)
}

/// Keeps the first [`MAX_ERROR_BYTES`] of `error` (cut at a character boundary) and appends
/// `…[truncated N bytes]`, so an oversized error is stored visibly shortened instead of failing
/// the call that reports it.
pub fn truncate_error(error: &str) -> String {
    if error.len() <= MAX_ERROR_BYTES {
        return error.to_owned();
    }
    let mut end = MAX_ERROR_BYTES;
    while !error.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[truncated {} bytes]", &error[..end], error.len() - end)
}

fn require(message: &Message, allowed: &[Status], operation: &'static str) -> Result<()> {
    if allowed.contains(&message.status) {
        Ok(())
    } else {
        Err(Error::Conflict(Conflict::WrongStatus {
            id: message.id,
            status: message.status,
            operation,
        }))
    }
}

fn check_lease(message: &Message, lease_token: Option<&str>) -> Result<()> {
    match lease_token {
        Some(token) if message.lease_token.as_deref() != Some(token) => {
            Err(Error::Conflict(Conflict::LeaseLost { id: message.id }))
        }
        _ => Ok(()),
    }
}

/// `pending` (and due) -> `processing`, holding `lease_token` until `now + lease_ms`. Clears
/// `retry_after`: the backoff is over.
pub fn claim(
    mut message: Message,
    now: Millis,
    lease_ms: Millis,
    lease_token: String,
) -> Result<Message> {
    require(&message, &[Status::Pending], "claim")?;
    message.lease_expires_at = Some(later(now, lease_ms)?);
    message.status = Status::Processing;
    message.lease_token = Some(lease_token);
    message.retry_after = None;
    message.updated_at = now;
    Ok(message)
}

/// `processing` -> `succeeded` (the ack). A `lease_token` that is not the current one is a
/// lost lease; `None` skips the check.
pub fn succeed(mut message: Message, lease_token: Option<&str>, now: Millis) -> Result<Message> {
    require(&message, &[Status::Processing], "succeed")?;
    check_lease(&message, lease_token)?;
    message.status = Status::Succeeded;
    message.lease_token = None;
    message.lease_expires_at = None;
    message.updated_at = now;
    Ok(message)
}

/// The heartbeat: a `processing` message's lease now runs until `now + lease_ms`. The token must
/// be the current one (else the lease was lost). A lease that ran out but was not reaped yet can
/// still be extended, as it can still be acked.
pub fn extend(
    mut message: Message,
    lease_token: &str,
    lease_ms: Millis,
    now: Millis,
) -> Result<Message> {
    require(&message, &[Status::Processing], "extend")?;
    check_lease(&message, Some(lease_token))?;
    message.lease_expires_at = Some(later(now, lease_ms)?);
    message.updated_at = now;
    Ok(message)
}

/// The instant of an operation that may reschedule messages, with what a failure then needs:
/// the queue's backoff policy and the jitter sample the binding drew.
#[derive(Debug, Clone, Copy)]
pub struct Moment<'a> {
    /// The queue's backoff policy.
    pub policy: &'a Backoff,
    /// The jitter sample in `[0, 1)` (ignored by a policy without jitter).
    pub sample: f64,
    /// The instant, UTC milliseconds.
    pub now: Millis,
}

impl Moment<'_> {
    /// The same moment with the sample of the `index`-th message of a batch
    /// (see [`Backoff::spread`]).
    #[must_use]
    pub fn nth(self, index: usize) -> Self {
        Self {
            sample: Backoff::spread(self.sample, index),
            ..self
        }
    }
}

/// `processing` -> `pending` after the policy's backoff (or after `retry_in` milliseconds, this
/// failure's own delay, when given), or -> `dead` once `retry_count` reaches `max_retries`, when
/// `retryable` is false (a permanent failure), or when the message's expiry has come
/// (`expires_at <= now`: a failure after expiry does not retry). Records the attempt in the
/// history (at most [`MAX_HISTORY`] entries, the dropped ones counted) and the first failure time.
pub fn fail(
    mut message: Message,
    error: &str,
    lease_token: Option<&str>,
    retryable: bool,
    retry_in: Option<Millis>,
    at: Moment<'_>,
) -> Result<Message> {
    let Moment {
        policy,
        sample,
        now,
    } = at;
    require(&message, &[Status::Processing], "fail")?;
    check_lease(&message, lease_token)?;
    message.retry_count = message.retry_count.saturating_add(1);
    let expired = message.expires_at.is_some_and(|at| at <= now);
    let dead = !retryable || expired || message.retry_count >= message.max_retries;
    message.retry_after = if dead {
        None
    } else {
        let delay = retry_in.unwrap_or_else(|| policy.delay_ms(message.retry_count, sample));
        Some(later(now, delay)?)
    };
    let error = truncate_error(error);
    message.errors.push(FailedAttempt {
        attempt: message.attempts_failed().saturating_add(1),
        error: error.clone(),
        at: now,
    });
    if message.errors.len() > MAX_HISTORY {
        let excess = message.errors.len() - MAX_HISTORY;
        message.errors.drain(..excess);
        message.errors_dropped = message
            .errors_dropped
            .saturating_add(u32::try_from(excess).unwrap_or(u32::MAX));
    }
    message.first_failed_at.get_or_insert(now);
    message.last_error = Some(error);
    message.lease_token = None;
    message.lease_expires_at = None;
    message.updated_at = now;
    if dead {
        message.status = Status::Dead;
        message.dead_at = Some(now);
    } else {
        message.status = Status::Pending;
    }
    Ok(message)
}

/// A lease that ran out counts as a failed attempt with the error [`LEASE_EXPIRED`], under the
/// same rules as [`fail`], so a worker that crashes every time cannot loop past `max_retries`.
pub fn expire_lease(message: Message, at: Moment<'_>) -> Result<Message> {
    fail(message, LEASE_EXPIRED, None, true, None, at)
}

/// `pending` -> `dead` at its expiry (the queue's outcome [`crate::OnExpiry::Dead`]), with the
/// error [`EXPIRED`]: `dead_at` now, no `retry_after`. Expiry is not an attempt: `retry_count`,
/// the failure history and `first_failed_at` are unchanged.
pub fn expire(mut message: Message, now: Millis) -> Result<Message> {
    require(&message, &[Status::Pending], "expire")?;
    message.status = Status::Dead;
    message.last_error = Some(EXPIRED.to_owned());
    message.retry_after = None;
    message.dead_at = Some(now);
    message.updated_at = now;
    Ok(message)
}

/// `dead` -> `pending` (redrive): `retry_count` 0, no last error, no backoff, claimable now (once
/// it is its group's head); `max_retries` and the failure history are kept, `replay_count` grows;
/// it expires at `expires_at` (`None`: never).
pub fn replay(mut message: Message, now: Millis, expires_at: Option<Millis>) -> Result<Message> {
    require(&message, &[Status::Dead], "replay")?;
    message.expires_at = expires_at;
    message.status = Status::Pending;
    message.retry_count = 0;
    message.last_error = None;
    message.retry_after = None;
    message.dead_at = None;
    message.replay_count = message.replay_count.saturating_add(1);
    message.replayed_at = Some(now);
    message.updated_at = now;
    Ok(message)
}

/// Retry now: a `pending` message waiting for its backoff or delay (`retry_after > now`) is due
/// now (`retry_after` cleared, `updated_at` now; a grouped one still waits behind its group's
/// head); one already due is returned unchanged. The attempt counts and the history stay as they
/// are. Another status is a `conflict` (operation `retry now`: words, not the method's name,
/// which is `retryNow` in JavaScript; issue 19).
pub fn retry_now(mut message: Message, now: Millis) -> Result<Message> {
    require(&message, &[Status::Pending], "retry now")?;
    if is_delayed(&message, now) {
        message.retry_after = None;
        message.updated_at = now;
    }
    Ok(message)
}

/// Move (issue 22): a `pending` or `dead` message goes to queue `to_queue` with everything it
/// carries (id, payload, status, counters, history, `retry_after`, expiry, idempotency key,
/// group); `moved_from` is the queue it leaves, `updated_at` now. Another status is a `conflict`
/// (operation `move`): a processing message belongs to its worker, a succeeded one is done.
/// Whether `to_queue` may take it (its idempotency key) is the store's read and the engine's
/// decision ([`crate::Conflict::KeyTaken`]).
pub fn move_to(mut message: Message, to_queue: &str, now: Millis) -> Result<Message> {
    require(&message, &[Status::Pending, Status::Dead], "move")?;
    let from = std::mem::replace(&mut message.queue, to_queue.to_owned());
    message.moved_from = Some(from);
    message.updated_at = now;
    Ok(message)
}

/// Whether `message` may be deleted: only finished messages (`succeeded` or `dead`); anything
/// else is a `conflict` (a live message is never deleted from under its worker).
pub fn deletable(message: &Message) -> Result<()> {
    require(message, &[Status::Succeeded, Status::Dead], "delete")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_then_caps_at_an_hour_for_any_count() {
        let secs: Vec<Millis> = (0..=13).map(|n| backoff_ms(n) / 1000).collect();
        assert_eq!(
            secs,
            [
                1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600
            ]
        );
        for huge in [63, 64, 65, 1000, u32::MAX] {
            assert_eq!(backoff_ms(huge), 3_600_000, "count {huge}");
        }
    }

    #[test]
    fn truncation_keeps_64_kib_at_a_char_boundary_and_says_how_much_was_cut() {
        assert_eq!(
            truncate_error(&"x".repeat(MAX_ERROR_BYTES)),
            "x".repeat(MAX_ERROR_BYTES)
        );
        let long = format!("{}é{}", "x".repeat(MAX_ERROR_BYTES - 1), "y".repeat(10));
        let cut = truncate_error(&long);
        assert_eq!(
            cut,
            format!("{}…[truncated 12 bytes]", "x".repeat(MAX_ERROR_BYTES - 1))
        );
    }
}
