//! `move` and `move_all` (issue 22) in PostgreSQL: the locks a move takes, in the order of
//! `write.rs` (the advisory locks of the groups it leaves and enters and of the keys it takes,
//! then the rows), the target's keys, and the write of one moved message with its ordering
//! groups' bookkeeping in both queues.

use deadletter::storage;
use deadletter::{Clock, Context, Id, Message, Millis, Result};

use crate::pool::{Conn, db_error};
use crate::row::{self, Place};
use crate::sql::Sql;
use crate::store::PostgresStore;
use crate::write::{context, lock_pairs, tail, unblock_next};

impl PostgresStore {
    /// [`deadletter::Store::move_many`] inside the write transaction `conn`, taking its locks in
    /// the order of `write.rs`: the messages are first read without a lock (their groups and
    /// keys never change once stored); the rows of those that were not blocked behind their
    /// group's head (heads, dead messages) are locked, waiting for them as any write does; then
    /// the advisory locks of their groups in both queues and of their keys in `to_queue`, in one
    /// statement; then the rows of the blocked members, skipping those another transaction holds
    /// (a blocked member is locked only under its group's lock, or briefly by a call that fails
    /// on it: one skipped is left where it is this time). So a move never waits for a row while
    /// it holds a group's lock that the row's holder waits for (an ack of the head it read as
    /// pending, a replay), nor for a group's lock while it holds a blocked member (one that was
    /// its group's head when read and is blocked when locked makes the move run again:
    /// `PostgresStore::lock_in_order`, issue 24). Only the messages that read found are moved.
    pub(crate) fn move_in(
        &self,
        conn: &mut Conn,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        let sql = self.statements();
        let seen = self.read_many(conn, queue, ids)?;
        let keys: Vec<&str> = seen
            .iter()
            .filter_map(|(m, _)| m.idempotency_key.as_deref())
            .collect();
        let key_locks: Vec<(&str, &str)> = keys.iter().map(|k| (to_queue, *k)).collect();
        let mut group_locks = Vec::new();
        for group in seen.iter().filter_map(|(m, _)| m.group.as_deref()) {
            group_locks.extend([(queue, group), (to_queue, group)]);
        }
        let advisory = |conn: &mut Conn| lock_pairs(conn, &key_locks, &group_locks);
        let skip = &sql.many_for_update_skip;
        let mut found = self.lock_in_order(conn, queue, &seen, advisory, skip)?;
        let ctx = context(conn, sql, queue, clock)?;
        let taken = keys_taken(conn, sql, to_queue, &keys)?;
        let mut written = Vec::new();
        for id in ids {
            let Some(before) = found.remove(id) else {
                continue;
            };
            let key = before.0.idempotency_key.as_ref();
            let taken = key.is_some_and(|k| taken.contains(k));
            if let Some(after) = step(before.0.clone(), &ctx, taken)? {
                write(conn, sql, &before, &after, ctx.now)?;
                written.push(after);
            }
        }
        Ok(written)
    }
}

/// The keys among `keys` that a message of `queue` carries (one probe of the unique index
/// `messages_idempotency` per key, in one statement).
pub fn keys_taken(conn: &mut Conn, sql: &Sql, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let rows = conn.query(&sql.keys_taken, &[&queue, &keys])?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(db_error))
        .collect()
}

/// Writes `after` (a step's result, in its new queue, with `moved_from`) over `before` (as read,
/// with its `blocked` flag) at `now`, the groups' locks held: a live grouped message goes to the
/// end of its group in the new queue (blocked unless that group has no live member) and its old
/// group's next member is unblocked; a dead one keeps no place (a replay gives it one).
fn write(
    conn: &mut Conn,
    sql: &Sql,
    before: &(Message, bool),
    after: &Message,
    now: Millis,
) -> Result<()> {
    let place = match after.group.as_deref() {
        Some(group) if storage::live(after) => {
            // Read before the write: the message is not a member of the new queue's group yet.
            let tail = tail(conn, sql, &after.queue, group)?;
            Place {
                head: tail.is_none(),
                group_at: Some(storage::group_at(now, tail, Some(after.id))),
            }
        }
        _ => Place {
            head: true,
            group_at: None,
        },
    };
    row::write(conn, &sql.messages, &before.0, after, place)?;
    match before.0.group.as_deref() {
        Some(group) if storage::live(&before.0) => unblock_next(conn, sql, &before.0.queue, group),
        _ => Ok(()),
    }
}
