//! `move` and `move_all` (issue 22) in SQLite: whether the target queue holds a key, and the
//! write of one moved message with its ordering groups' bookkeeping in both queues.

use deadletter::storage;
use deadletter::{Error, Message, Millis, Result};
use rusqlite::{Connection, params};

use crate::row;
use crate::sql::{KEY_TAKEN_SQL, MOVE_SQL};
use crate::store::{tail, unblock_next};

/// Whether a message of `queue` carries the idempotency key `key` (false without one): one seek
/// in the unique index `messages_idempotency`.
pub fn key_taken(conn: &Connection, queue: &str, key: Option<&str>) -> Result<bool> {
    let Some(key) = key else {
        return Ok(false);
    };
    conn.prepare_cached(KEY_TAKEN_SQL)
        .and_then(|mut taken| taken.query_row(params![queue, key], |row| row.get(0)))
        .map_err(Error::store)
}

/// Writes `after` (a step's result, in its new queue) over `before` (as read, in its old one) at
/// `now`: a live grouped message goes to the end of its group in the new queue (blocked unless
/// that group has no live member) and its old group's next member is unblocked; a dead one keeps
/// no place (a replay gives it one).
pub fn write(tx: &Connection, before: &Message, after: &Message, now: Millis) -> Result<()> {
    let (head, group_at) = match after.group.as_deref() {
        Some(group) if storage::live(after) => {
            // Read before the move: the message is not a member of the new queue's group yet.
            let tail = tail(tx, &after.queue, group)?;
            (
                tail.is_none(),
                Some(storage::group_at(now, tail, Some(after.id))),
            )
        }
        _ => (true, None),
    };
    row::write(tx, after, head, group_at)?;
    tx.prepare_cached(MOVE_SQL)
        .and_then(|mut moved| moved.execute(params![after.id, after.queue, after.moved_from]))
        .map_err(Error::store)?;
    match before.group.as_deref() {
        Some(group) if storage::live(before) => unblock_next(tx, &before.queue, group),
        _ => Ok(()),
    }
}
