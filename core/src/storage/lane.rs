//! Where a stored message waits for `claim` ([`Lane`]: the `ready` and `blocked` columns of the SQL
//! stores, the `lane` of an IndexedDB record), and what a write does to a message's ordering group.

use crate::message::{Id, Message, Millis, Status};

/// Where a stored message waits for `claim`: the storage-only place a store's claim index gives
/// it, computed from the message and whether it is its group's head whenever the store writes it.
///
/// `claim` reads two short ranges instead of walking the queue: first the messages whose time has
/// come (`Waiting` and `Leased` up to `now`: backoffs that are over move to `Ready`, leases that
/// ran out are expired), then the head of `Ready` in claim order (by id: [`claim_order`]). So messages
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

/// Claim order, the order in which `claim` takes due messages: enqueue order, the id. Ids are
/// given in enqueue order and never change (a replay or a move keeps them), so a message back from
/// its backoff, or replayed, takes its old place in the line again. deadletter 0.1.0 ordered by
/// `created_at`, then id: the same order unless the clock went back between two enqueues, or the
/// producers' clocks disagree (machines sharing a PostgreSQL database), where it put the message
/// enqueued later first. Keying on the id alone also lets a store keep its ready lane in its
/// pending index, one B-tree less per enqueue (issue 24).
pub fn claim_order(message: &Message) -> Id {
    message.id
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::tests::pending;

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
}
