//! `claim` in PostgreSQL, inside the transaction that `PostgresStore::claim` opened (the table's
//! lock, the queue's row and the clock read): the reads that decide it, the expired leases given
//! back, the messages whose expiry came taken out, the head of the ready index taken, and its
//! write sent with `COMMIT`.
//!
//! Round trips of a claim of one message with nothing expired (`tests/round_trips.rs`): two.
//! The clock is read first; `BEGIN` (the table's lock, `NOWAIT`) goes with the queue's row and
//! the three reads, none of which waits for a lock; then the take's write with `COMMIT`. They
//! were three until issue 24's note of 2026-12-02: `BEGIN` with the queue's row, then the clock,
//! then the reads. A session that has not prepared the reads yet (preparing takes the table's
//! locks, and may wait), or that finds the table's lock held, takes those three.

use deadletter::{Claimed, Claiming, Id, Message, Result};
use tokio_postgres::Row;

use crate::pool::{Conn, db_error};
use crate::row::{self, Place};
use crate::store::{PostgresStore, limit};
use crate::write::{groups_changed, lock_names, put, unblock_next};

/// What claim reads before it decides anything: the pending messages whose expiry came (one row
/// of two arrays), the expired leases (the statement that also marks due messages ready) and the
/// head of the ready index, at most `room` messages.
pub(crate) struct Reads {
    expiring: Vec<Row>,
    expired: Vec<Row>,
    due: Vec<Row>,
    room: usize,
}

impl Reads {
    /// How many messages of the ready index's head claim reads before the core says how many it
    /// takes (sent with `BEGIN`, before the queue's row is read): one, what a worker's claim
    /// takes. A claim of more reads the head again; a reap takes none of it.
    pub(crate) const ROOM: usize = 1;

    /// The reads from the results of [`Sql::expiring`], [`Sql::expired`] and [`Sql::due`] (that
    /// read at most `room` messages), in that order.
    ///
    /// [`Sql::expiring`]: crate::Sql::expiring
    /// [`Sql::expired`]: crate::Sql::expired
    /// [`Sql::due`]: crate::Sql::due
    pub(crate) fn new(mut rows: impl Iterator<Item = Vec<Row>>, room: usize) -> Self {
        let (expiring, expired, due) = (
            rows.next().unwrap_or_default(),
            rows.next().unwrap_or_default(),
            rows.next().unwrap_or_default(),
        );
        Self {
            expiring,
            expired,
            due,
            room,
        }
    }
}

impl PostgresStore {
    /// Claims as `claim` says from `queue`, in the transaction open on `conn`, from `reads` when
    /// they were sent with `BEGIN` (else it reads them first).
    ///
    /// The three reads go in one round trip, in this order: the pending messages whose expiry
    /// came (unlocked: their groups are locked before they are), the leases that ran out
    /// (locked; the statement first moves the messages whose backoff is over into the ready
    /// index), and the head of the ready index (locked). When nothing expired (the usual case),
    /// that head is what is taken. Otherwise the expired leases are given back and the expiring
    /// messages taken out first, which may unblock members of their groups, and the head is
    /// read again (rows of the first read that are not taken stay locked until the commit).
    pub(crate) fn claim_in(
        &self,
        conn: &mut Conn,
        queue: &str,
        claim: &Claiming,
        reads: Option<Reads>,
        mut tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        let sql = self.statements();
        let now = claim.now;
        let reads = if let Some(reads) = reads {
            reads
        } else {
            let room = limit(claim.n)?;
            let rows = conn.query_many(&[
                (&sql.expiring, &[&queue, &now]),
                (&sql.expired, &[&queue, &now]),
                (&sql.due, &[&queue, &now, &room]),
            ])?;
            Reads::new(rows.into_iter(), claim.n)
        };
        let Reads {
            expiring: found,
            expired: overdue,
            due,
            room,
        } = reads;
        let found = found.first().ok_or_else(|| {
            deadletter::Error::Store("PostgreSQL: no row where one was expected".into())
        })?;
        let ids: Option<Vec<Id>> = found.try_get(0).map_err(db_error)?;
        let names: Option<Vec<Option<String>>> = found.try_get(1).map_err(db_error)?;
        let candidates: Vec<(Id, Option<String>)> = ids
            .unwrap_or_default()
            .into_iter()
            .zip(names.unwrap_or_default())
            .collect();
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
            let taken = self.take(conn, claim, &due, &[], &mut tokens)?;
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
            taken = self.take(conn, claim, &rows, &expired, &mut tokens)?;
        }
        Ok(Claimed {
            expired,
            swept,
            taken,
        })
    }

    /// Takes the first `claim.n` messages of `rows` (the head of the ready index, locked) that
    /// are not among `expired`; the last write is the transaction's last statement, sent with
    /// `COMMIT`.
    fn take(
        &self,
        conn: &mut Conn,
        claim: &Claiming,
        rows: &[Row],
        expired: &[Message],
        tokens: &mut impl FnMut() -> String,
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
            row::write(conn, &self.statements().write, before, after, place)?;
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
