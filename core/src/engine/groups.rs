//! Plan: the ordering-group bookkeeping of a store without a query language (IndexedDB's, whose
//! JavaScript drives the transaction), sans I/O, around the rules of [`crate::storage`]:
//!
//! - [`Change`]: what writing a message does to its place in its group ([`change`]): it keeps it,
//!   enters the group's end (a replay), or leaves (the store then looks at the group's next
//!   member: [`crate::storage::next_head`]);
//! - [`Tails`]: the tails of the groups one transaction puts messages into (an enqueue batch,
//!   a batch of replays), read once before its first write and followed as it places messages.
//!
//! [`super::LaneClaim`] keeps the groups a claim takes members out of.

use crate::error::{Error, Result};
use crate::message::{Id, Message, Millis};
use crate::storage::{Position, enters_group, group_at, leaves_group, live};

/// What writing a message does to its place in its ordering group (see [`change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It keeps its place (as stored: its position, and whether it waits behind its group's
    /// head), or has no group.
    Stays,
    /// It enters its group again (a replay): it goes to the group's end, behind its tail
    /// ([`Tails::enter`]), blocked unless the group has no other live member.
    Enters,
    /// It leaves its group (it succeeded, died, or was discarded): it keeps no position, and the
    /// store then reads the group's first live member, to unblock it when it is the head now
    /// ([`crate::storage::next_head`]).
    Leaves,
    /// It moves to another queue as a live member (a pending message's `move`, issue 22): it
    /// leaves its group in the queue it was in (the store then reads that group's first live
    /// member, as for [`Change::Leaves`]) and enters the group of the same name in its new queue
    /// at the end ([`Tails::enter`], with the tails read in the new queue), blocked unless that
    /// group has no other live member.
    Moves,
}

/// What writing `after` over `before` does to the message's place in its group (`after` `None`:
/// the message is deleted).
pub fn change(before: &Message, after: Option<&Message>) -> Change {
    match after {
        Some(after) if after.queue != before.queue => {
            if after.group.is_some() && live(after) {
                Change::Moves
            } else {
                Change::Stays
            }
        }
        _ if leaves_group(before, after) => Change::Leaves,
        Some(after) if enters_group(before, after) => Change::Enters,
        _ => Change::Stays,
    }
}

/// The tails of the ordering groups one transaction puts messages into, for a store that decides
/// every record before it writes one: it reads each group's tail (its last live member in group
/// order) once, before the transaction's first write ([`Tails::read`]), and each message placed
/// becomes its group's tail ([`Tails::enter`]). The places are those of a store that reads the
/// tail again before each write ([`group_at`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tails(Vec<(String, Option<Position>)>);

impl Tails {
    /// No group read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `group`'s tail as the store read it (`None`: the group has no live member).
    pub fn read(&mut self, group: &str, tail: Option<Position>) {
        match self.0.iter_mut().find(|(g, _)| g == group) {
            Some(entry) => entry.1 = tail,
            None => self.0.push((group.to_owned(), tail)),
        }
    }

    /// The place (`at`) of a message entering `group` at `now`, and whether it is the group's
    /// head (the group had no live member); it is the group's tail from now on. `own`: the id of
    /// a message stored already (a replay); `None` for a new one, whose id the store assigns,
    /// greater than every id before it. A store error when the group's tail was not read.
    pub fn enter(&mut self, group: &str, now: Millis, own: Option<Id>) -> Result<(Millis, bool)> {
        let Some((_, tail)) = self.0.iter_mut().find(|(g, _)| g == group) else {
            return Err(Error::Store("a group's tail was not read".into()));
        };
        let at = group_at(now, *tail, own);
        let head = tail.is_none();
        *tail = Some(Position {
            at,
            id: own.unwrap_or(Id::MAX),
        });
        Ok((at, head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewMessage, Status};

    fn member(id: Id, status: Status) -> Message {
        Message {
            status,
            ..NewMessage {
                queue: "q".into(),
                payload: "p".into(),
                max_retries: 3,
                idempotency_key: None,
                retry_after: None,
                group: Some("g".into()),
                expires_at: None,
                now: 0,
            }
            .with_id(id)
        }
    }

    #[test]
    fn a_write_keeps_enters_or_leaves_the_group() {
        let pending = member(1, Status::Pending);
        let taken = member(1, Status::Processing);
        let dead = member(1, Status::Dead);
        assert_eq!(change(&pending, Some(&taken)), Change::Stays);
        assert_eq!(change(&taken, Some(&dead)), Change::Leaves);
        assert_eq!(change(&pending, None), Change::Leaves);
        assert_eq!(change(&dead, Some(&pending)), Change::Enters);
        let loose = |m: &Message| Message {
            group: None,
            ..m.clone()
        };
        assert_eq!(change(&loose(&dead), Some(&loose(&pending))), Change::Stays);
        assert_eq!(change(&dead, None), Change::Stays);
        let elsewhere = |m: &Message| Message {
            queue: "q2".into(),
            ..m.clone()
        };
        assert_eq!(change(&pending, Some(&elsewhere(&pending))), Change::Moves);
        assert_eq!(change(&dead, Some(&elsewhere(&dead))), Change::Stays);
        assert_eq!(
            change(&loose(&pending), Some(&elsewhere(&loose(&pending)))),
            Change::Stays
        );
    }

    /// The places a batch gets from tails read once are those of a store that reads the tail
    /// again before each write (the memory store's `put`): new messages and replays, in one
    /// millisecond and after the clock went back.
    #[test]
    fn tails_read_once_place_a_batch_as_tails_read_before_each_write() {
        let stored = [Position { at: 50, id: 3 }, Position { at: 50, id: 7 }];
        // (group, now, own): new messages into g (tail 7 at 50) and h (empty), replays of 1 and 9.
        let batch = [
            ("g", 40, None),
            ("h", 60, None),
            ("g", 50, Some(1)),
            ("h", 60, None),
            ("g", 50, Some(9)),
        ];
        let mut tails = Tails::new();
        tails.read("g", stored.last().copied());
        tails.read("h", None);
        let mut live: Vec<(&str, Position)> = stored.iter().map(|p| ("g", *p)).collect();
        let mut next_id = 10;
        for (group, now, own) in batch {
            let tail = live
                .iter()
                .filter(|(g, _)| *g == group)
                .map(|(_, p)| *p)
                .max();
            let expected = group_at(now, tail, own);
            let placed = tails.enter(group, now, own).unwrap();
            assert_eq!(placed, (expected, tail.is_none()), "{group} {now} {own:?}");
            let id = own.unwrap_or_else(|| {
                next_id += 1;
                next_id
            });
            live.push((group, Position { at: expected, id }));
        }
        assert!(tails.enter("other", 0, None).is_err());
    }
}
