//! Scan: the plans of a store that keeps its messages in a plain map and finds them by looking,
//! sans I/O: the reference [`crate::MemoryStore`], and a host of the WebAssembly component
//! (`bindings-component/`) with a dictionary. The store hands over the messages of one queue (or
//! of one ordering group), each with its place in its group ([`Stored`]), and persists what the
//! plan answers. Every decision is made here: which lease ran out, which message expired, which
//! member heads its group, which due messages a claim takes and in what order, where a message
//! entering a group goes.
//!
//! The cost is that of looking: a claim and a count read every stored message of the queue. A
//! store that keeps indexes uses [`crate::storage`]'s lanes and [`super::LaneClaim`] instead.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, Quoted, Result};
use crate::machine;
use crate::message::{Id, Message, Millis};
use crate::settings::QueueRow;
use crate::storage::{self, Position};
use crate::store::{Claimed, Counts, count};

use super::apply::Claiming;

/// A message as a scan store keeps it: with its place in its ordering group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The message.
    pub message: Message,
    /// The instant of its [`Position`] in its group (storage only), set when it entered the
    /// group ([`place`]); `None` for a message without a group.
    pub group_at: Option<Millis>,
}

impl Stored {
    /// Its position in its group.
    pub fn position(&self) -> Position {
        Position {
            at: self.group_at.unwrap_or_default(),
            id: self.message.id,
        }
    }
}

/// One write of a scan plan.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // a claim writes a few of them, each moved once
pub enum Change {
    /// Write the message (insert or replace, under its id).
    Put(Stored),
    /// Delete the message with this id.
    Delete(Id),
}

/// The heads of the ordering groups among some stored messages: for each group (of a queue) with
/// a live member ([`storage::live`]), the position of its first live member in group order.
struct Heads<'a>(HashMap<(&'a str, &'a str), Position>);

impl<'a> Heads<'a> {
    fn of(stored: impl IntoIterator<Item = &'a Stored>) -> Self {
        let mut heads: HashMap<(&str, &str), Position> = HashMap::new();
        for s in stored {
            if let Some(group) = s.message.group.as_deref()
                && storage::live(&s.message)
            {
                let head = heads
                    .entry((&s.message.queue, group))
                    .or_insert(s.position());
                *head = (*head).min(s.position());
            }
        }
        Self(heads)
    }

    /// Whether `stored` waits behind its group's head: a live grouped message with a live member
    /// before it in group order.
    fn blocked(&self, stored: &Stored) -> bool {
        let m = &stored.message;
        m.group.as_deref().is_some_and(|group| {
            storage::live(m)
                && self
                    .0
                    .get(&(m.queue.as_str(), group))
                    .is_some_and(|head| *head < stored.position())
        })
    }
}

/// `after` as the store writes it over `before` (`None`: an insert) at `now`. A message that
/// enters its group ([`storage::enters_group`]: an insert with a group, a replay; or a live
/// grouped message moved to another queue, which joins its group there) goes to its end:
/// [`storage::group_at`] behind the last live member among `group` (the stored messages of its
/// group, itself included or not; any other message is ignored). Any other write keeps the place
/// it had.
pub fn place(now: Millis, before: Option<&Stored>, after: Message, group: &[Stored]) -> Stored {
    let entering = match before {
        None => after.group.is_some(),
        Some(before) => {
            let moved = before.message.queue != after.queue;
            storage::enters_group(&before.message, &after)
                || (moved && after.group.is_some() && storage::live(&after))
        }
    };
    let group_at = if entering {
        let tail = group
            .iter()
            .filter(|s| {
                s.message.id != after.id
                    && s.message.queue == after.queue
                    && s.message.group == after.group
                    && storage::live(&s.message)
            })
            .map(Stored::position)
            .max();
        Some(storage::group_at(now, tail, before.map(|b| b.message.id)))
    } else {
        before.and_then(|b| b.group_at)
    };
    Stored {
        message: after,
        group_at,
    }
}

/// The messages of a claim as it goes, and its writes (the last one of each message).
struct Work {
    state: BTreeMap<Id, Stored>,
    changes: BTreeMap<Id, Change>,
}

impl Work {
    /// `message` written over `stored`, in its place.
    fn put(&mut self, stored: &Stored, message: Message) {
        let next = Stored {
            message,
            group_at: stored.group_at,
        };
        self.changes
            .insert(next.message.id, Change::Put(next.clone()));
        self.state.insert(next.message.id, next);
    }

    fn delete(&mut self, id: Id) {
        self.state.remove(&id);
        self.changes.insert(id, Change::Delete(id));
    }
}

/// What a [`claim`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanClaim {
    /// The writes, one per message changed (its last state), in id order.
    pub changes: Vec<Change>,
    /// The expired leases, the messages taken out at their expiry and the messages taken.
    pub claimed: Claimed,
    /// The queue's row with the messages taken out at their expiry counted, when there were any
    /// (write it); `None` when it is unchanged.
    pub row: Option<QueueRow>,
}

/// One claim (or reap: `n` 0) on the queue `name`, as decided at its context
/// ([`crate::ClaimArgs::start`]), over `queue`, the stored messages of that queue in any order
/// (only the live ones matter, `pending` and `processing`: [`storage::live`]), with the queue's
/// `row` as it was read: what [`crate::Store::claim`] does, in its order. A message of another
/// queue among them is a `store` error and nothing is decided (a host of the component handed the
/// messages of every queue, and a claim on `emails` leased an `sms` message: new-user finding F6,
/// session 6). The leases that ran out are
/// expired, in `(lease_expires_at, id)` order; the pending messages whose expiry came are taken
/// out by the queue's outcome, in `(expires_at, id)` order (dead, or deleted); then up to `n` due
/// messages, each the head of its group if it has one and none that was just expired, are taken
/// in claim order (id: [`crate::storage::claim_order`]), each under a token from `tokens`.
pub fn claim(
    claim: &Claiming,
    name: &str,
    row: QueueRow,
    queue: Vec<Stored>,
    mut tokens: impl FnMut() -> String,
) -> Result<ScanClaim> {
    if let Some(other) = queue.iter().find(|s| s.message.queue != name) {
        return Err(Error::Store(format!(
            "a claim on queue {} was handed message {} of queue {}: it takes only the messages of \
             its own queue",
            Quoted(name),
            other.message.id,
            Quoted(&other.message.queue)
        )));
    }
    let now = claim.now;
    let mut work = Work {
        state: queue.into_iter().map(|s| (s.message.id, s)).collect(),
        changes: BTreeMap::new(),
    };
    let mut overdue: Vec<Stored> = work
        .state
        .values()
        .filter(|s| machine::lease_expired(&s.message, now))
        .cloned()
        .collect();
    overdue.sort_by_key(|s| (s.message.lease_expires_at, s.message.id));
    let mut expired = Vec::with_capacity(overdue.len());
    for (index, stored) in overdue.iter().enumerate() {
        let next = claim.expire(stored.message.clone(), index)?;
        work.put(stored, next.clone());
        expired.push(next);
    }

    let mut expiring: Vec<Stored> = work
        .state
        .values()
        .filter(|s| machine::is_expired(&s.message, now))
        .cloned()
        .collect();
    expiring.sort_by_key(|s| (s.message.expires_at, s.message.id));
    let mut swept = Vec::with_capacity(expiring.len());
    for stored in &expiring {
        if let Some(dead) = claim.sweep(stored.message.clone())? {
            work.put(stored, dead.clone());
            swept.push(dead);
        } else {
            work.delete(stored.message.id);
            swept.push(stored.message.clone());
        }
    }
    let row = (!swept.is_empty()).then(|| row.count_expired(claim.on_expiry, swept.len() as u64));

    let heads = Heads::of(work.state.values());
    let mut due: Vec<Stored> = work
        .state
        .values()
        .filter(|s| machine::is_due(&s.message, now) && !heads.blocked(s))
        .filter(|s| !expired.iter().any(|e| e.id == s.message.id))
        .cloned()
        .collect();
    due.sort_by_key(|s| storage::claim_order(&s.message));
    let mut taken = Vec::new();
    for stored in due.iter().take(claim.n) {
        let next = claim.take(stored.message.clone(), tokens())?;
        work.put(stored, next.clone());
        taken.push(next);
    }
    Ok(ScanClaim {
        changes: work.changes.into_values().collect(),
        claimed: Claimed {
            expired,
            swept,
            taken,
        },
        row,
    })
}

/// The counters of one queue at `now` ([`crate::Store::counts`]) from every stored message of it
/// (in any order) and its `row`.
pub fn counts(queue: &[Stored], row: &QueueRow, now: Millis) -> Counts {
    let heads = Heads::of(queue);
    count(queue.iter().map(|s| (&s.message, heads.blocked(s))), now).with_row(row)
}

/// When the next delayed message of a queue becomes due ([`crate::Store::next_due_at`]), from
/// every stored message of it (in any order).
pub fn next_due_at(queue: &[Stored], now: Millis) -> Option<Millis> {
    let heads = Heads::of(queue);
    queue
        .iter()
        .filter(|s| machine::is_delayed(&s.message, now) && !heads.blocked(s))
        .filter_map(|s| s.message.retry_after)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arg, ClaimArgs, Context, Limits, NewMessage, OnExpiry, Status};

    const NOW: Millis = 1_767_225_600_000;

    fn stored(id: Id, group: Option<&str>, group_at: Option<Millis>) -> Stored {
        let message = NewMessage {
            queue: "q".into(),
            payload: format!("m{id}"),
            max_retries: 1,
            idempotency_key: None,
            retry_after: None,
            group: group.map(str::to_owned),
            expires_at: None,
            now: NOW - 100 + id,
        }
        .with_id(id);
        Stored { message, group_at }
    }

    fn claiming(n: i64, row: QueueRow) -> Claiming {
        let args = ClaimArgs::new(
            &"q".into(),
            &Arg::Int(n),
            &Arg::Null,
            None,
            0.0,
            &Limits::default(),
        )
        .unwrap();
        args.start(&Context::new(NOW, row).unwrap()).unwrap()
    }

    fn token() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("t{n}")
        }
    }

    #[test]
    fn a_message_entering_its_group_goes_behind_its_live_members() {
        let head = stored(1, Some("g"), Some(NOW - 50));
        let dead = Stored {
            message: Message {
                status: Status::Dead,
                ..stored(2, Some("g"), Some(NOW + 10)).message
            },
            ..stored(2, Some("g"), Some(NOW + 10))
        };
        let other = stored(3, Some("h"), Some(NOW + 99));
        let group = [head.clone(), dead.clone(), other];
        let new = stored(4, Some("g"), None).message;
        assert_eq!(place(NOW, None, new.clone(), &group).group_at, Some(NOW));
        assert_eq!(place(NOW - 80, None, new, &group).group_at, Some(NOW - 50));
        // A replay of the dead member (id 2 > the tail's id 1): at the tail's instant, or now.
        let replayed = Message {
            status: Status::Pending,
            ..dead.message.clone()
        };
        let back = place(NOW - 80, Some(&dead), replayed, &group);
        assert_eq!(back.group_at, Some(NOW - 50));
        // Any other write keeps its place; an ungrouped message has none.
        let taken = Message {
            status: Status::Processing,
            ..head.message.clone()
        };
        assert_eq!(
            place(NOW, Some(&head), taken, &group).group_at,
            head.group_at
        );
        assert_eq!(
            place(NOW, None, stored(5, None, None).message, &group).group_at,
            None
        );
    }

    #[test]
    fn a_claim_expires_sweeps_then_takes_the_heads_in_claim_order() {
        let mut leased = stored(1, Some("g"), Some(NOW - 90));
        leased.message.status = Status::Processing;
        leased.message.lease_token = Some("old".into());
        leased.message.lease_expires_at = Some(NOW);
        let behind = stored(2, Some("g"), Some(NOW - 80));
        let mut expiring = stored(3, None, None);
        expiring.message.expires_at = Some(NOW);
        let plain = stored(4, None, None);
        let mut row = QueueRow::default();
        row.settings.on_expiry = OnExpiry::Discard;
        let queue = vec![plain, behind, expiring, leased];
        let done = claim(&claiming(5, row), "q", row, queue, token()).unwrap();
        // Lease 1 died (max_retries 1), so its group moved on to 2; 3 was discarded.
        assert_eq!(
            done.claimed
                .expired
                .iter()
                .map(|m| m.status)
                .collect::<Vec<_>>(),
            [Status::Dead]
        );
        assert_eq!(
            done.claimed.swept.iter().map(|m| m.id).collect::<Vec<_>>(),
            [3]
        );
        let taken: Vec<_> = done
            .claimed
            .taken
            .iter()
            .map(|m| (m.id, m.lease_token.clone().unwrap()))
            .collect();
        assert_eq!(taken, [(2, "t1".into()), (4, "t2".into())]);
        let writes: Vec<String> = done
            .changes
            .iter()
            .map(|c| match c {
                Change::Put(s) => format!("put {} {}", s.message.id, s.message.status),
                Change::Delete(id) => format!("delete {id}"),
            })
            .collect();
        assert_eq!(
            writes,
            [
                "put 1 dead",
                "put 2 processing",
                "delete 3",
                "put 4 processing"
            ]
        );
        assert_eq!(done.row.map(|r| r.expired_discarded), Some(1));
    }

    #[test]
    fn a_lease_expired_into_a_due_retry_is_not_taken_by_the_same_claim() {
        let mut leased = stored(1, None, None);
        leased.message.max_retries = 3;
        leased.message.status = Status::Processing;
        leased.message.lease_expires_at = Some(NOW - 10_000);
        let done = claim(
            &claiming(1, QueueRow::default()),
            "q",
            QueueRow::default(),
            vec![leased],
            token(),
        )
        .unwrap();
        assert_eq!(done.claimed.expired[0].status, Status::Pending);
        assert!(done.claimed.taken.is_empty());
        assert_eq!(done.row, None);
    }

    #[test]
    fn a_claim_handed_a_message_of_another_queue_decides_nothing() {
        // New-user finding F6 (session 6): a claim on `emails` leased an `sms` message.
        let mut sms = stored(1, None, None);
        sms.message.queue = "sms".into();
        let err = claim(
            &claiming(1, QueueRow::default()),
            "q",
            QueueRow::default(),
            vec![stored(2, None, None), sms],
            token(),
        )
        .expect_err("another queue's message");
        assert_eq!(
            err.to_string(),
            "store error: a claim on queue \"q\" was handed message 1 of queue \"sms\": it \
             takes only the messages of its own queue"
        );
    }

    #[test]
    fn counts_and_next_due_at_leave_out_the_members_behind_their_head() {
        let mut head = stored(1, Some("g"), Some(NOW - 90));
        head.message.retry_after = Some(NOW + 5_000);
        let mut behind = stored(2, Some("g"), Some(NOW - 80));
        behind.message.retry_after = Some(NOW + 1_000);
        let queue = [head, behind, stored(3, None, None)];
        let counts = counts(&queue, &QueueRow::default(), NOW);
        assert_eq!(
            (counts.by_status[0], counts.delayed, counts.next_due_at),
            (3, 1, Some(NOW + 5_000))
        );
        assert_eq!(next_due_at(&queue, NOW), Some(NOW + 5_000));
    }
}
