//! The parts of a write transaction that every write shares: the advisory locks on idempotency
//! keys and ordering groups, the [`Context`] (the clock read once the locks are held, the queue's
//! row), and a message's group bookkeeping (its place at the group's end when it enters it, the
//! next member unblocked when it leaves).
//!
//! Lock order, so that writes never wait for each other in a cycle: a transaction takes all its
//! advisory locks in one statement, in the order of their hashes; it may hold row locks of heads
//! (processing or pending at the front of their group) or of dead messages before that (a claim's
//! expired leases, an ack, a replay), but the only row it locks while holding a group's lock is a
//! blocked member that it unblocks, and the only transactions that lock a blocked member are the
//! ones that hold its group's lock (a sweep of expired messages takes the locks of their groups
//! before it locks them) or a call that fails on it at once (an ack of a message that is not
//! processing). A move (`moves.rs`) and a bulk write lock the heads and dead messages first, then
//! the advisory locks of their groups (a move's in both queues, and its keys), then the blocked
//! members, skipping any that another transaction holds rather than waiting for it; one that finds
//! a message it locked first blocked by then lets it go before it waits for anything else
//! (`PostgresStore::lock_in_order`, issue 24).

use deadletter::storage::{self, Position};
use deadletter::{Clock, Context, Error, Message, Millis, QueueRow, Result};

use crate::pool::{Conn, db_error};
use crate::row::{self, Place, Written};
use crate::sql::Sql;

/// Locks, until the transaction ends, the idempotency `keys` and the ordering `groups` of `queue`,
/// all in one statement, in the order of their hashes (so two transactions never wait for each
/// other's in turn): transaction-level advisory locks on 64-bit hashes of the queue and the name
/// (a collision only makes two transactions wait for each other in turn). A group's lock makes
/// its tail and its next member read by one transaction at a time: two racing enqueues cannot
/// both become heads.
pub fn lock_names(conn: &mut Conn, queue: &str, keys: &[&str], groups: &[&str]) -> Result<()> {
    const LOCK: &str = "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT h FROM ( \
        SELECT hashtextextended(quote_literal($1::text) || quote_literal(k), 0) AS h \
        FROM unnest($2::text[]) AS k \
        UNION ALL \
        SELECT hashtextextended('group ' || quote_literal($1::text) || quote_literal(g), 0) \
        FROM unnest($3::text[]) AS g) AS hashes) AS locks ORDER BY h";
    if keys.is_empty() && groups.is_empty() {
        return Ok(());
    }
    conn.execute(LOCK, &[&queue, &keys, &groups]).map(drop)
}

/// [`lock_names`] across queues: the idempotency `keys` and the ordering `groups`, each a
/// (queue, name) pair, all in one statement, in the order of their hashes (the same hashes as
/// [`lock_names`]'s, so the two exclude each other). A move locks the groups it leaves in one
/// queue and those it enters, and the keys it takes, in another.
pub fn lock_pairs(conn: &mut Conn, keys: &[(&str, &str)], groups: &[(&str, &str)]) -> Result<()> {
    const LOCK: &str = "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT h FROM ( \
        SELECT hashtextextended(quote_literal(k.q) || quote_literal(k.n), 0) AS h \
        FROM unnest($1::text[], $2::text[]) AS k(q, n) \
        UNION ALL \
        SELECT hashtextextended('group ' || quote_literal(g.q) || quote_literal(g.n), 0) \
        FROM unnest($3::text[], $4::text[]) AS g(q, n)) AS hashes) AS locks ORDER BY h";
    if keys.is_empty() && groups.is_empty() {
        return Ok(());
    }
    let split = |pairs: &[(&str, &str)]| -> (Vec<String>, Vec<String>) {
        pairs
            .iter()
            .map(|(q, n)| ((*q).to_owned(), (*n).to_owned()))
            .unzip()
    };
    let ((key_queues, key_names), (group_queues, group_names)) = (split(keys), split(groups));
    conn.execute(
        LOCK,
        &[&key_queues, &key_names, &group_queues, &group_names],
    )
    .map(drop)
}

/// Locks the row of queue `name` (which may not exist yet) until the transaction ends: the
/// writes of its settings and pause, one at a time.
pub fn lock_queue(conn: &mut Conn, name: &str) -> Result<()> {
    const LOCK: &str =
        "SELECT pg_advisory_xact_lock(hashtextextended('queue ' || quote_literal($1::text), 0))";
    conn.execute(LOCK, &[&name]).map(drop)
}

/// The row of `queue`, the default when it has none.
pub fn queue_row(conn: &mut Conn, sql: &Sql, queue: &str) -> Result<QueueRow> {
    let found = conn.query_opt(&sql.queue, &[&queue])?;
    found.map_or(Ok(QueueRow::default()), |r| row::queue(&r, 0, queue))
}

/// What a write decides with, once its locks are held: the clock, read now, and `queue`'s row.
pub fn context(conn: &mut Conn, sql: &Sql, queue: &str, clock: Clock<'_>) -> Result<Context> {
    let row = queue_row(conn, sql, queue)?;
    Context::new(clock()?, row)
}

/// The last live member of `group` of `queue` in group order (the group's tail).
pub fn tail(conn: &mut Conn, sql: &Sql, queue: &str, group: &str) -> Result<Option<Position>> {
    let found = conn.query_opt(&sql.tail, &[&queue, &group])?;
    found
        .map(|r| {
            Ok(Position {
                at: r.try_get(0).map_err(db_error)?,
                id: r.try_get(1).map_err(db_error)?,
            })
        })
        .transpose()
}

/// After a member of `group` of `queue` left it (its lock held): unblocks the group's first live
/// member when it is blocked (it is the head now), as the core says ([`storage::next_head`]).
/// The first member is read without a lock (a head that another transaction holds is left alone:
/// it is not blocked); a blocked one is locked by the update itself, which checks it again.
pub fn unblock_next(conn: &mut Conn, sql: &Sql, queue: &str, group: &str) -> Result<()> {
    // A blocked member is locked only by a transaction that holds the group's lock (this one) or
    // by a call that fails on it at once: a second look finds it, or the next one, unblockable.
    for _ in 0..3 {
        let found = conn.query_opt(&sql.head, &[&queue, &group])?;
        let Some(first) = found.as_ref().map(row::read_stored).transpose()? else {
            return Ok(());
        };
        let Some(lane) = storage::next_head(Some(&first.0), first.1) else {
            return Ok(());
        };
        let ready = !matches!(lane, storage::Lane::Waiting(_));
        let updated = conn.execute(&sql.unblock, &[&first.0.id, &ready])?;
        if updated == 1 {
            return Ok(());
        }
    }
    Err(Error::Store(format!(
        "PostgreSQL: the next member of group {group:?} of queue {queue:?} kept changing"
    )))
}

/// The groups whose locks a write from each `before` to its `after` needs: those a message
/// enters or leaves.
pub fn groups_changed<'a>(
    writes: impl IntoIterator<Item = (&'a Message, Option<&'a Message>)>,
) -> Vec<&'a str> {
    let mut groups: Vec<&str> = writes
        .into_iter()
        .filter(|(before, after)| {
            storage::leaves_group(before, *after)
                || after.is_some_and(|after| storage::enters_group(before, after))
        })
        .filter_map(|(before, _)| before.group.as_deref())
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Whether [`put`] of `after` over `before` is one statement, with no group bookkeeping (it can
/// then be the transaction's last, sent with `COMMIT`).
pub fn put_alone(before: &Message, after: &Message) -> bool {
    after.group.is_none()
        || !(storage::enters_group(before, after) || storage::leaves_group(before, Some(after)))
}

/// Writes `after` (a step's result) over `before` (as read, with its `blocked` flag) at `now`,
/// with its group's bookkeeping (the group's lock held, see [`groups_changed`]): a message
/// entering its group again (a replay) goes to its end, blocked unless the group has no live
/// member; one leaving it unblocks the group's next member. Returns what it left in the
/// message's row.
pub fn put(
    conn: &mut Conn,
    sql: &Sql,
    before: &(Message, bool),
    after: &Message,
    now: Millis,
) -> Result<Option<Written>> {
    let (before, blocked) = before;
    match after.group.as_deref() {
        Some(group) if storage::enters_group(before, after) => {
            let tail = tail(conn, sql, &after.queue, group)?;
            let place = Place {
                head: tail.is_none(),
                group_at: Some(storage::group_at(now, tail, Some(after.id))),
            };
            row::write(conn, &sql.messages, before, after, place)
        }
        Some(group) if storage::leaves_group(before, Some(after)) => {
            let place = Place {
                head: true,
                group_at: None,
            };
            let written = row::write(conn, &sql.messages, before, after, place)?;
            unblock_next(conn, sql, &after.queue, group)?;
            Ok(written)
        }
        _ => {
            let place = Place {
                head: !blocked,
                group_at: None,
            };
            row::write(conn, &sql.messages, before, after, place)
        }
    }
}
