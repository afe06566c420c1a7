//! `claim` in PostgreSQL, inside the transaction that `PostgresStore::claim` opened (the table's
//! lock, the queue's row and the clock read): the reads that decide it, the expired leases given
//! back, the messages whose expiry came taken out, the head of the ready index taken, and its
//! write sent with `COMMIT`.
//!
//! Round trips of a claim of one message with nothing expired (`tests/round_trips.rs`): two.
//! The clock is read first; `BEGIN` (the table's lock, `NOWAIT`) goes with the three reads (the
//! first one with the queue's row), none of which waits for a lock; then the take's write with
//! `COMMIT`. A session that has not prepared the reads yet (preparing takes the table's locks,
//! and may wait), or that finds the table's lock held, takes three: `BEGIN` waiting for the
//! lock, then the clock and the reads, then the write.

use deadletter::{Claimed, Claiming, Context, Id, Message, Millis, QueueRow, Result};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::cache::Cached;
use crate::pool::{Conn, db_error};
use crate::row::{self, Place};
use crate::sql::Sql;
use crate::store::{PostgresStore, limit};
use crate::write::{groups_changed, lock_names, put, unblock_next};

/// What claim reads before it decides anything: the queue's row and the pending messages whose
/// expiry came (one row), the expired leases (the statement that also marks due messages ready)
/// and the head of the ready index, at most `room` messages.
pub(crate) struct Reads {
    /// The queue's row (the defaults when it has none).
    row: QueueRow,
    /// The ids and groups of the pending messages whose expiry came, in expiry order.
    expiring: Vec<(Id, Option<String>)>,
    expired: Vec<Row>,
    due: Vec<Row>,
    room: usize,
}

impl Reads {
    /// How many messages of the ready index's head claim reads before the core says how many it
    /// takes (sent with `BEGIN`, before the queue's row is read): one, what a worker's claim
    /// takes. A claim of more reads the head again; a reap takes none of it.
    pub(crate) const ROOM: usize = 1;

    /// The statements of the reads of `queue` at `now`, in [`Reads::new`]'s order, the head
    /// read up to [`Reads::ROOM`].
    pub(crate) fn statements<'a>(
        sql: &'a Sql,
        params: &'a [&'a (dyn ToSql + Sync); 3],
    ) -> [(&'a str, &'a [&'a (dyn ToSql + Sync)]); 3] {
        [
            (&sql.queue_and_expiring, &params[..2]),
            (&sql.expired, &params[..2]),
            (&sql.due, &params[..]),
        ]
    }

    /// The reads of `queue` from the results of [`Sql::queue_and_expiring`], [`Sql::expired`]
    /// and [`Sql::due`] (that read at most `room` messages), in that order.
    ///
    pub(crate) fn new(queue: &str, rows: Vec<Vec<Row>>, room: usize) -> Result<Self> {
        let mut rows = rows.into_iter();
        let first = rows.next().unwrap_or_default();
        let first = first.first().ok_or_else(|| {
            deadletter::Error::Store("PostgreSQL: no row where one was expected".into())
        })?;
        let ids: Option<Vec<Id>> = first.try_get(row::QUEUE_COLUMNS).map_err(db_error)?;
        let names: Option<Vec<Option<String>>> =
            first.try_get(row::QUEUE_COLUMNS + 1).map_err(db_error)?;
        Ok(Self {
            row: row::queue(first, 0, queue)?,
            expiring: ids
                .unwrap_or_default()
                .into_iter()
                .zip(names.unwrap_or_default())
                .collect(),
            expired: rows.next().unwrap_or_default(),
            due: rows.next().unwrap_or_default(),
            room,
        })
    }
}

impl PostgresStore {
    /// Claims from `queue` at `now` as `start` says given the queue's row, in the transaction
    /// open on `conn`, from the results of [`Reads::statements`]; with the messages it took as
    /// written, for the cache once the transaction committed (the queue's row goes to the cache
    /// now).
    pub(crate) fn claim_from(
        &self,
        conn: &mut Conn,
        queue: &str,
        now: Millis,
        rows: Vec<Vec<Row>>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        tokens: impl FnMut() -> String,
    ) -> Result<(Claimed, Vec<Cached>)> {
        let reads = Reads::new(queue, rows, Reads::ROOM)?;
        self.cache.put_queue(queue, reads.row);
        let Some(claim) = start(&Context::new(now, reads.row)?) else {
            return Ok((Claimed::default(), Vec::new()));
        };
        let mut taken = Vec::new();
        let claimed = self.claim_in(conn, queue, &claim, reads, tokens, &mut taken)?;
        Ok((claimed, taken))
    }

    /// Claims as `claim` says from `queue`, in the transaction open on `conn`, from `reads`.
    ///
    /// The reads go in one round trip, in this order: the queue's row with the pending messages
    /// whose expiry came (unlocked: their groups are locked before they are), the leases that
    /// ran out (locked; the statement first moves the messages whose backoff is over into the
    /// ready index), and the head of the ready index (locked). When nothing expired (the usual
    /// case), that head is what is taken. Otherwise the expired leases are given back and the
    /// expiring messages taken out first, which may unblock members of their groups, and the
    /// head is read again (rows of the first read that are not taken stay locked until the
    /// commit).
    fn claim_in(
        &self,
        conn: &mut Conn,
        queue: &str,
        claim: &Claiming,
        reads: Reads,
        mut tokens: impl FnMut() -> String,
        written: &mut Vec<Cached>,
    ) -> Result<Claimed> {
        let sql = self.statements();
        let now = claim.now;
        let Reads {
            expiring: candidates,
            expired: overdue,
            due,
            room,
            ..
        } = reads;
        let overdue = overdue
            .iter()
            .map(row::read_stored)
            .collect::<Result<Vec<_>>>()?;
        if candidates.is_empty() && overdue.is_empty() {
            let due = if room >= claim.n {
                due
            } else {
                conn.query(&sql.due, &[&queue, &now, &limit(claim.n)?])?
            };
            let taken = self.take(conn, claim, &due, &[], &mut tokens, written)?;
            return Ok(Claimed {
                taken,
                ..Claimed::default()
            });
        }
        let expired: Vec<Message> = overdue
            .iter()
            .enumerate()
            .map(|(index, (m, _))| claim.expire(m.clone(), index))
            .collect::<Result<_>>()?;
        let mut groups =
            groups_changed(overdue.iter().map(|(m, _)| m).zip(expired.iter().map(Some)));
        groups.extend(candidates.iter().filter_map(|(_, g)| g.as_deref()));
        groups.sort_unstable();
        groups.dedup();
        lock_names(conn, queue, &[], &groups)?;
        for (before, after) in overdue.iter().zip(&expired) {
            put(conn, sql, before, after, now)?;
        }
        let swept = self.sweep(conn, queue, claim, &candidates)?;
        let mut taken = Vec::new();
        if claim.n > 0 {
            // A message whose lease just expired is not taken in the same call (it may be due
            // again at once under a backoff of 0), as in the reference store.
            let room = limit(claim.n + expired.len())?;
            let rows = conn.query(&sql.due, &[&queue, &now, &room])?;
            taken = self.take(conn, claim, &rows, &expired, &mut tokens, written)?;
        }
        Ok(Claimed {
            expired,
            swept,
            taken,
        })
    }

    /// Takes the first `claim.n` messages of `rows` (the head of the ready index, locked) that
    /// are not among `expired`; the last write is the transaction's last statement, sent with
    /// `COMMIT`. Each is pushed to `written` as written.
    fn take(
        &self,
        conn: &mut Conn,
        claim: &Claiming,
        rows: &[Row],
        expired: &[Message],
        tokens: &mut impl FnMut() -> String,
        written: &mut Vec<Cached>,
    ) -> Result<Vec<Message>> {
        let mut taken = Vec::new();
        for before in rows.iter().map(row::read) {
            let before = before?;
            if taken.len() == claim.n || expired.iter().any(|e| e.id == before.id) {
                continue;
            }
            let after = claim.take(before.clone(), tokens())?;
            taken.push((before, after));
        }
        let place = Place {
            head: true,
            group_at: None,
        };
        for (index, (before, after)) in taken.iter().enumerate() {
            if index + 1 == taken.len() {
                conn.commit_with_next();
            }
            let done = row::write(conn, &self.statements().messages, before, after, place)?;
            written.extend(done.map(|done| done.cached(after)));
        }
        Ok(taken.into_iter().map(|(_, after)| after).collect())
    }

    /// Takes out the pending messages of `queue` among `candidates` (their groups already locked)
    /// whose expiry came at the claim's instant, skipping those another transaction holds, in
    /// expiry order, as `claim` says (dead, or deleted); counts them in the queue's row; returns
    /// them as written (or as they were, when deleted).
    fn sweep(
        &self,
        conn: &mut Conn,
        queue: &str,
        claim: &Claiming,
        candidates: &[(Id, Option<String>)],
    ) -> Result<Vec<Message>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let now = claim.now;
        let ids: Vec<Id> = candidates.iter().map(|(id, _)| *id).collect();
        let rows = conn.query(&self.statements().expiring_locked, &[&ids, &now])?;
        let mut swept = Vec::with_capacity(rows.len());
        for before in rows.iter().map(row::read_stored) {
            let before = before?;
            if let Some(dead) = claim.sweep(before.0.clone())? {
                put(conn, self.statements(), &before, &dead, now)?;
                swept.push(dead);
            } else {
                conn.execute(&self.statements().delete, &[&vec![before.0.id]])?;
                if let Some(group) = &before.0.group {
                    unblock_next(conn, self.statements(), queue, group)?;
                }
                swept.push(before.0);
            }
        }
        if !swept.is_empty() {
            let n = limit(swept.len())?;
            let (dead, discarded) = claim.expiry_counts(n);
            conn.execute(
                &self.statements().count_expiry,
                &[&queue, &dead, &discarded],
            )?;
        }
        Ok(swept)
    }
}
