//! The message state machine: pure functions from (message, event, now) to the next message.
//! Stores call them inside their atomic read-modify-write; nothing here does I/O or reads a clock.

use crate::error::{Conflict, Error, Result};
use crate::message::{Message, Millis, Status};

/// Longest backoff: one hour.
pub const MAX_BACKOFF_MS: Millis = 3_600_000;
/// Longest stored `last_error`, in bytes; the rest is replaced by a marker (see [`truncate_error`]).
pub const MAX_ERROR_BYTES: usize = 64 * 1024;
/// The error recorded when a lease runs out before the worker acked or failed.
pub const LEASE_EXPIRED: &str = "lease expired";

/// Delay before the next attempt after the `retry_count`-th failure: `min(2^retry_count, 3600)`
/// seconds, in milliseconds. Defined for every count (no shift overflow: `2^12 s` already exceeds
/// the cap).
pub fn backoff_ms(retry_count: u32) -> Millis {
    if retry_count >= 12 {
        MAX_BACKOFF_MS
    } else {
        (1_000 << retry_count).min(MAX_BACKOFF_MS)
    }
}

/// Whether a `pending` message may be claimed at `now`.
pub fn is_due(message: &Message, now: Millis) -> bool {
    message.status == Status::Pending && message.retry_after.is_none_or(|at| at <= now)
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

fn require(message: &Message, status: Status, operation: &'static str) -> Result<()> {
    if message.status == status {
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

/// `pending` (and due) -> `processing`, holding `lease_token` until `now + lease_ms`.
pub fn claim(
    mut message: Message,
    now: Millis,
    lease_ms: Millis,
    lease_token: String,
) -> Result<Message> {
    require(&message, Status::Pending, "claim")?;
    message.status = Status::Processing;
    message.lease_token = Some(lease_token);
    message.lease_expires_at = Some(now + lease_ms);
    message.updated_at = now;
    Ok(message)
}

/// `processing` -> `succeeded` (the ack). A `lease_token` that is not the current one is a
/// lost lease; `None` skips the check.
pub fn succeed(mut message: Message, lease_token: Option<&str>, now: Millis) -> Result<Message> {
    require(&message, Status::Processing, "succeed")?;
    check_lease(&message, lease_token)?;
    message.status = Status::Succeeded;
    message.lease_token = None;
    message.lease_expires_at = None;
    message.updated_at = now;
    Ok(message)
}

/// `processing` -> `pending` after [`backoff_ms`], or -> `dead` once `retry_count` reaches
/// `max_retries` or when `retryable` is false (a permanent failure).
pub fn fail(
    mut message: Message,
    error: &str,
    lease_token: Option<&str>,
    retryable: bool,
    now: Millis,
) -> Result<Message> {
    require(&message, Status::Processing, "fail")?;
    check_lease(&message, lease_token)?;
    message.retry_count = message.retry_count.saturating_add(1);
    message.last_error = Some(truncate_error(error));
    message.lease_token = None;
    message.lease_expires_at = None;
    message.updated_at = now;
    if !retryable || message.retry_count >= message.max_retries {
        message.status = Status::Dead;
        message.retry_after = None;
    } else {
        message.status = Status::Pending;
        message.retry_after = Some(now + backoff_ms(message.retry_count));
    }
    Ok(message)
}

/// A lease that ran out counts as a failed attempt with the error [`LEASE_EXPIRED`], under the
/// same rules as [`fail`], so a worker that crashes every time cannot loop past `max_retries`.
pub fn expire_lease(message: Message, now: Millis) -> Result<Message> {
    fail(message, LEASE_EXPIRED, None, true, now)
}

/// `dead` -> `pending` (redrive): `retry_count` 0, no error, no backoff; `max_retries` kept.
pub fn replay(mut message: Message, now: Millis) -> Result<Message> {
    require(&message, Status::Dead, "replay")?;
    message.status = Status::Pending;
    message.retry_count = 0;
    message.last_error = None;
    message.retry_after = None;
    message.updated_at = now;
    Ok(message)
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
            assert_eq!(backoff_ms(huge), MAX_BACKOFF_MS, "count {huge}");
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
