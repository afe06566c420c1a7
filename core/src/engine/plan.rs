//! Plan: what a store without a query language does for the operations that look at more than
//! one message, sans I/O. The store reads what the plan asks for, hands it over, and writes what
//! the plan answers; every decision (which message is due, which lease ran out, which messages a
//! claim takes and in what order, when a bulk operation is over) is made here.
//!
//! - [`LaneClaim`]: one `claim` over a claim index kept in lanes ([`crate::storage::Lane`]),
//!   read page by page (IndexedDB's store, whose transaction JavaScript drives; a host of the
//!   WebAssembly core with a sorted map): leases that ran out, messages whose expiry came, the
//!   groups they leave, and the due messages taken. The rest of a group's bookkeeping is in
//!   [`super::groups`].
//! - [`Batches`]: the batches of the bulk actions and `purge` for a store that selects ids from
//!   its own index (IndexedDB's `list` index); [`super::Engine`] reads the pages of
//!   [`crate::Store::list`] instead.

use crate::error::Result;
use crate::machine;
use crate::message::{Id, Message};
use crate::storage::{self, next_head};
use crate::store::Claimed;

use super::apply::Claiming;
use super::groups::{Change, change};

/// How many messages one transaction of a bulk action (`replay_all`, `delete_all`,
/// `retry_now_all`) or `purge` touches at most, so that other connections never wait long for
/// the write lock.
pub const BATCH: usize = 200;

/// The most messages of the timed part of a claim index that a [`LaneClaim`] is given at once
/// (one page): a claim after an outage may find many thousands come due, whose payloads must not
/// all be in memory together (a WebAssembly module has at most 4 GiB).
pub const TIMED_PAGE: usize = 100;

/// One write a [`LaneClaim`] asks the store for, in its transaction. Every message a claim
/// writes is its group's head, or has no group, or has left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Write the message as it is, in its own lane ([`crate::storage::Lane::of`], as its group's
    /// head).
    Put(Message),
    /// Write the message, unchanged, into the ready lane: its `retry_after` has come, and it now
    /// waits in claim order with the other due messages (it keeps its `retry_after` until it is
    /// claimed).
    Ready(Message),
    /// Delete the message (discarded at its expiry: the queue's `on_expiry` is `discard`).
    Delete(Message),
}

/// One `claim` (or `reap`: `n` 0) over a claim index kept in lanes, sans I/O.
///
/// Inside one write transaction the store:
/// 1. reads, at once, the timed part of the index up to `now` (the `Waiting` and `Leased` messages
///    whose instant is `<= now`, in (instant, id) order, at most [`TIMED_PAGE`]), the `pending`
///    messages whose expiry came (`expires_at <= now`, blocked ones too, in (`expires_at`, id)
///    order, at most [`TIMED_PAGE`]) and, when [`LaneClaim::wanted`] is not 0, that many messages
///    from the head of the ready lane (in claim order: [`crate::storage::claim_order`]);
/// 2. hands each timed message to [`LaneClaim::timed`] and writes what it answers (an expired
///    lease; a message whose `retry_after` came stays a candidate); when the timed page was full:
///    writes what [`LaneClaim::overflow`] answers and walks the rest of the timed part up to
///    `now` one message at a time through [`LaneClaim::timed`] (which then moves each due
///    message into the ready lane at once);
/// 3. hands each expired message to [`LaneClaim::expiring`] and writes what it answers (dead, or
///    deleted), walking the rest one at a time when the page was full, and counts them in the
///    queue's row ([`crate::QueueRow::count_expired`], by [`Claiming::on_expiry`]);
/// 4. for each group of [`LaneClaim::left`] (a member left it: it died, or expired), reads the
///    group's first live member in group order, hands it to [`LaneClaim::head`] with whether it
///    is blocked, and writes what it answers (the group's new head, out of the blocked lane);
/// 5. when [`LaneClaim::stale`] (steps 2 to 4 wrote into or out of the ready lane), reads the
///    head of the ready lane again; hands the ready page to [`LaneClaim::ready`] and writes what
///    it answers; while [`LaneClaim::wanted`] is not 0 (the clock went back and a message was
///    moved back to wait), reads that many from the head of the ready lane and goes on with it;
/// 6. once the transaction committed, [`LaneClaim::finish`] says what was expired, swept and
///    taken.
///
/// So messages still waiting for their backoff are never read (issue 10), nor are the members
/// of a group behind its head (in no claim lane: `Blocked`), and the work is bounded by what is
/// acted on. The claim is the one decided at the transaction's [`crate::Context`]
/// ([`crate::ClaimArgs::start`]: none on a paused queue).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneClaim {
    args: Claiming,
    expired: Vec<Message>,
    swept: Vec<Message>,
    /// Messages of the timed page whose `retry_after` came: candidates for this claim.
    due: Vec<Message>,
    /// Past a full timed page: due messages go to the ready lane at once.
    walking: bool,
    /// Whether the claim wrote into or out of the ready lane before taking.
    stale: bool,
    /// The groups a member left.
    left: Vec<String>,
    taken: Vec<Message>,
    wanted: usize,
}

impl LaneClaim {
    /// The plan of the claim `args` decided.
    pub fn new(args: Claiming) -> Self {
        let wanted = args.n;
        Self {
            args,
            expired: Vec::new(),
            swept: Vec::new(),
            due: Vec::new(),
            walking: false,
            stale: false,
            left: Vec::new(),
            taken: Vec::new(),
            wanted,
        }
    }

    /// The claim as decided.
    pub fn args(&self) -> &Claiming {
        &self.args
    }

    /// Notes that a member of `message`'s group left it.
    fn leave(&mut self, message: &Message) {
        if let Some(group) = &message.group
            && !self.left.contains(group)
        {
            self.left.push(group.clone());
        }
    }

    /// One message of the timed part up to `now`, in (instant, id) order: a lease that ran out is
    /// expired (the write is returned); a pending message whose `retry_after` came is kept as a
    /// candidate (after [`LaneClaim::overflow`]: moved into the ready lane at once); anything else
    /// is left alone.
    pub fn timed(&mut self, message: Message) -> Result<Option<Write>> {
        let now = self.args.now;
        if machine::lease_expired(&message, now) {
            let next = self.args.expire(message.clone(), self.expired.len())?;
            if change(&message, Some(&next)) == Change::Leaves {
                self.leave(&message);
            }
            self.expired.push(next.clone());
            return Ok(Some(Write::Put(next)));
        }
        if machine::is_due(&message, now) {
            if self.walking {
                return Ok(Some(Write::Ready(message)));
            }
            self.due.push(message);
        }
        Ok(None)
    }

    /// The timed page was full: the candidates so far move into the ready lane (the writes are
    /// returned), where the claim then finds them in claim order; from now on [`LaneClaim::timed`]
    /// moves each due message at once.
    pub fn overflow(&mut self) -> Vec<Write> {
        self.walking = true;
        self.stale = true;
        self.due.drain(..).map(Write::Ready).collect()
    }

    /// One `pending` message whose expiry came, in (`expires_at`, id) order: dead with the error
    /// `expired`, or deleted, as the queue's `on_expiry` says (the write is returned); it is no
    /// candidate any more, and its group, if any, moves on. `None` (left alone) for a message
    /// that is not pending or whose expiry has not come.
    pub fn expiring(&mut self, message: Message) -> Result<Option<Write>> {
        if !machine::is_expired(&message, self.args.now) {
            return Ok(None);
        }
        self.due.retain(|m| m.id != message.id);
        self.stale = true;
        self.leave(&message);
        let write = if let Some(dead) = self.args.sweep(message.clone())? {
            self.swept.push(dead.clone());
            Write::Put(dead)
        } else {
            self.swept.push(message.clone());
            Write::Delete(message)
        };
        Ok(Some(write))
    }

    /// How many messages the claim took out at their expiry so far (to count in the queue's row).
    pub fn swept(&self) -> usize {
        self.swept.len()
    }

    /// The groups a member left so far (it died, or expired), each once: the store reads each
    /// one's first live member for [`LaneClaim::head`].
    pub fn left(&self) -> &[String] {
        &self.left
    }

    /// The first live member of a group of [`LaneClaim::left`] (`None`: the group has none),
    /// with whether it is blocked: when it is, it is the group's head now, and the write that
    /// unblocks it is returned: into the ready lane when it is due (a candidate of this claim),
    /// else into its own lane (its delay or backoff runs on).
    pub fn head(&mut self, first: Option<Message>, blocked: bool) -> Option<Write> {
        next_head(first.as_ref(), blocked)?;
        let message = first?;
        Some(if machine::is_due(&message, self.args.now) {
            self.stale = true;
            Write::Ready(message)
        } else {
            Write::Put(message)
        })
    }

    /// Whether the claim wrote into or out of the ready lane before taking anything (a walk past
    /// a full timed page, an expired message taken out, a group's head unblocked): a head of the
    /// ready lane read before those writes must be read again.
    pub fn stale(&self) -> bool {
        self.stale
    }

    /// How many messages the store reads from the head of the ready lane next: 0 when the claim
    /// takes nothing more.
    pub fn wanted(&self) -> usize {
        self.wanted
    }

    /// The head of the ready lane, at most [`LaneClaim::wanted`] messages in claim order: the
    /// first due messages among them and the candidates of the timed part are taken, in claim
    /// order, each under a token drawn from `tokens`; a candidate left over moves into the ready
    /// lane; a ready message that is not due (the clock went back since it was moved there) is
    /// written back to wait in its own lane, and then the ready lane is read again past it
    /// ([`LaneClaim::wanted`]). Returns the writes.
    pub fn ready(
        &mut self,
        page: Vec<Message>,
        mut tokens: impl FnMut() -> String,
    ) -> Result<Vec<Write>> {
        let room = self.wanted;
        let full = page.len() == room;
        let mut candidates: Vec<(Message, bool)> = page.into_iter().map(|m| (m, false)).collect();
        let mut left = Vec::new();
        for message in self.due.drain(..) {
            let key = storage::claim_order(&message);
            let at = candidates.partition_point(|(m, _)| storage::claim_order(m) < key);
            if at < room {
                candidates.insert(at, (message, true));
            } else {
                left.push(Write::Ready(message));
            }
            // Over the room: the last candidate waits. One of the ready lane stays where it is.
            if candidates.len() > room
                && let Some((last, true)) = candidates.pop()
            {
                left.push(Write::Ready(last));
            }
        }
        let mut writes = Vec::with_capacity(candidates.len() + left.len());
        let mut moved_back = false;
        for (message, _) in candidates {
            if machine::is_due(&message, self.args.now) {
                let next = self.args.take(message, tokens())?;
                self.taken.push(next.clone());
                writes.push(Write::Put(next));
            } else {
                writes.push(Write::Put(message));
                moved_back = true;
            }
        }
        writes.append(&mut left);
        let short = self.args.n - self.taken.len();
        self.wanted = if moved_back && full { short } else { 0 };
        Ok(writes)
    }

    /// What the claim wrote: the expired leases as the claim left them, the messages taken out at
    /// their expiry (dead, or as they were when deleted), and the messages taken, in claim order.
    pub fn finish(self) -> Claimed {
        Claimed {
            expired: self.expired,
            swept: self.swept,
            taken: self.taken,
        }
    }
}

/// The batches of a bulk operation (`replay_all`, `delete_all`, `retry_now_all`, `purge`): ids
/// selected in ascending order, at most [`BATCH`] at a time, each batch applied in its own write
/// transaction, until `limit` messages were applied or none is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batches {
    limit: u64,
    done: u64,
    after: Id,
    over: bool,
}

impl Batches {
    /// Batches until `limit` messages were applied (`u64::MAX`: all).
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            done: 0,
            after: 0,
            over: false,
        }
    }

    /// The next selection: ids above the first number, at most the second; `None` when the
    /// operation is over.
    pub fn next(&self) -> Option<(Id, usize)> {
        if self.over || self.done >= self.limit {
            return None;
        }
        let room = usize::try_from(self.limit - self.done)
            .unwrap_or(usize::MAX)
            .min(BATCH);
        Some((self.after, room))
    }

    /// What the last selection found (`ids`, ascending) and how many of them its write applied.
    /// No id: the operation is over.
    pub fn record(&mut self, ids: &[Id], applied: u64) {
        match ids.last() {
            Some(&last) => {
                self.done = self.done.saturating_add(applied);
                self.after = last;
            }
            None => self.over = true,
        }
    }

    /// How many messages were applied so far.
    pub fn done(&self) -> u64 {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arg, ClaimArgs, Context, Limits, Millis, NewMessage, QueueRow, Status};

    const NOW: Millis = 1_767_225_600_000;

    fn ctx() -> Context {
        Context::new(NOW, QueueRow::default()).unwrap()
    }

    fn plan(n: i64) -> LaneClaim {
        let args = ClaimArgs::new(
            &"q".into(),
            &Arg::Int(n),
            &Arg::Null,
            None,
            0.0,
            &Limits::default(),
        )
        .unwrap();
        LaneClaim::new(args.start(&ctx()).unwrap())
    }

    fn message(id: Id, created_at: Millis, retry_after: Option<Millis>) -> Message {
        NewMessage {
            queue: "q".into(),
            payload: format!("m{id}"),
            max_retries: 1,
            idempotency_key: None,
            retry_after,
            group: None,
            expires_at: None,
            now: created_at,
        }
        .with_id(id)
    }

    fn leased(id: Id, until: Millis) -> Message {
        Message {
            status: Status::Processing,
            lease_token: Some("old".into()),
            lease_expires_at: Some(until),
            ..message(id, NOW - 100, None)
        }
    }

    fn ids(writes: &[Write]) -> Vec<String> {
        writes
            .iter()
            .map(|w| match w {
                Write::Put(m) => format!("put {} {}", m.id, m.status),
                Write::Ready(m) => format!("ready {}", m.id),
                Write::Delete(m) => format!("delete {}", m.id),
            })
            .collect()
    }

    #[test]
    fn candidates_of_the_timed_lane_are_taken_in_claim_order_with_the_ready_ones() {
        let mut claim = plan(2);
        assert_eq!(
            claim.timed(leased(1, NOW)).unwrap().map(|w| ids(&[w])),
            Some(vec!["put 1 dead".into()])
        );
        assert_eq!(claim.timed(message(2, NOW - 50, Some(NOW))).unwrap(), None);
        assert_eq!(claim.timed(message(5, NOW - 5, Some(NOW))).unwrap(), None);
        let mut tokens = ["a", "b"].into_iter().map(str::to_owned);
        let page = vec![message(3, NOW - 60, None), message(4, NOW - 40, None)];
        let writes = claim.ready(page, || tokens.next().unwrap()).unwrap();
        assert_eq!(
            ids(&writes),
            ["put 2 processing", "put 3 processing", "ready 5"]
        );
        assert_eq!(claim.wanted(), 0);
        let done = claim.finish();
        assert_eq!(done.expired.iter().map(|m| m.id).collect::<Vec<_>>(), [1]);
        let taken: Vec<_> = done
            .taken
            .iter()
            .map(|m| (m.id, m.lease_token.clone()))
            .collect();
        // Claim order is the id: 2 before 3, although 3 was created earlier (the clock went back).
        assert_eq!(taken, [(2, Some("a".into())), (3, Some("b".into()))]);
    }

    #[test]
    fn a_ready_message_that_is_not_due_after_the_clock_went_back_waits_and_the_lane_is_read_again()
    {
        let mut claim = plan(1);
        let early = message(1, NOW - 60, Some(NOW + 1_000));
        let writes = claim.ready(vec![early], || "t".into()).unwrap();
        assert_eq!(ids(&writes), ["put 1 pending"]);
        assert_eq!(claim.wanted(), 1);
        let writes = claim
            .ready(vec![message(2, NOW - 50, None)], || "t".into())
            .unwrap();
        assert_eq!(ids(&writes), ["put 2 processing"]);
        assert_eq!(claim.wanted(), 0);
    }

    #[test]
    fn past_a_full_page_due_messages_move_to_the_ready_lane_at_once() {
        let mut claim = plan(1);
        assert_eq!(claim.timed(message(1, NOW - 1, Some(NOW))).unwrap(), None);
        assert_eq!(ids(&claim.overflow()), ["ready 1"]);
        let moved = claim.timed(message(2, NOW - 2, Some(NOW - 1))).unwrap();
        assert_eq!(moved.map(|w| ids(&[w])), Some(vec!["ready 2".into()]));
        // A reap (n 0) reads no ready page.
        let reap = ClaimArgs::reap(&"q".into(), None, 0.0).unwrap();
        let reap = LaneClaim::new(reap.start(&ctx()).unwrap());
        assert_eq!(reap.wanted(), 0);
    }

    fn grouped(id: Id, created_at: Millis, retry_after: Option<Millis>) -> Message {
        Message {
            group: Some("g".into()),
            ..message(id, created_at, retry_after)
        }
    }

    #[test]
    fn expired_messages_are_taken_out_before_the_claim_takes_and_their_groups_move_on() {
        let mut claim = plan(2);
        // 2 is due from the timed lane, but its expiry came too: it is swept, not taken.
        let expiring = Message {
            expires_at: Some(NOW),
            ..grouped(2, NOW - 50, Some(NOW - 1))
        };
        assert_eq!(claim.timed(expiring.clone()).unwrap(), None);
        assert!(!claim.stale());
        let swept = claim.expiring(expiring).unwrap().map(|w| ids(&[w]));
        assert_eq!(swept, Some(vec!["put 2 dead".into()]));
        // Not expired (yet): left alone.
        let later = Message {
            expires_at: Some(NOW + 1),
            ..message(3, NOW - 40, None)
        };
        assert_eq!(claim.expiring(later).unwrap(), None);
        assert_eq!((claim.swept(), claim.left()), (1, &["g".to_owned()][..]));
        assert!(claim.stale());
        // The group's next member: unblocked into the ready lane when due, else into its own.
        assert_eq!(
            claim
                .head(Some(grouped(4, NOW - 30, None)), true)
                .map(|w| ids(&[w])),
            Some(vec!["ready 4".into()])
        );
        assert_eq!(
            claim
                .head(Some(grouped(5, NOW - 30, Some(NOW + 9))), true)
                .map(|w| ids(&[w])),
            Some(vec!["put 5 pending".into()])
        );
        // Already the head, or no member left: nothing to write.
        assert_eq!(claim.head(Some(grouped(6, NOW, None)), false), None);
        assert_eq!(claim.head(None, true), None);
        let writes = claim
            .ready(vec![grouped(4, NOW - 30, None)], || "t".into())
            .unwrap();
        assert_eq!(ids(&writes), ["put 4 processing"]);
        let done = claim.finish();
        assert_eq!(done.swept.iter().map(|m| m.id).collect::<Vec<_>>(), [2]);
        assert_eq!(done.taken.iter().map(|m| m.id).collect::<Vec<_>>(), [4]);
    }

    #[test]
    fn a_discarded_message_is_deleted_and_a_dead_lease_leaves_its_group() {
        let ctx = Context::new(
            NOW,
            QueueRow {
                settings: crate::QueueSettings {
                    on_expiry: crate::OnExpiry::Discard,
                    ..crate::QueueSettings::default()
                },
                ..QueueRow::default()
            },
        )
        .unwrap();
        let reap = ClaimArgs::reap(&"q".into(), None, 0.0).unwrap();
        let mut claim = LaneClaim::new(reap.start(&ctx).unwrap());
        let gone = Message {
            expires_at: Some(NOW - 5),
            ..message(1, NOW - 50, None)
        };
        let write = claim.expiring(gone).unwrap().map(|w| ids(&[w]));
        assert_eq!(write, Some(vec!["delete 1".into()]));
        // A lease that ran out on its last attempt: dead, so its group moves on.
        let last = Message {
            max_retries: 1,
            ..Message {
                group: Some("h".into()),
                ..leased(2, NOW)
            }
        };
        let write = claim.timed(last).unwrap().map(|w| ids(&[w]));
        assert_eq!(write, Some(vec!["put 2 dead".into()]));
        assert_eq!(claim.left(), ["h".to_owned()]);
        let done = claim.finish();
        assert_eq!((done.swept.len(), done.expired.len()), (1, 1));
    }

    #[test]
    fn batches_stop_at_the_limit_or_when_nothing_is_left() {
        let mut batches = Batches::new(250);
        assert_eq!(batches.next(), Some((0, BATCH)));
        batches.record(&[3, 9], 2);
        assert_eq!(batches.next(), Some((9, 200)));
        batches.record(&(10..210).collect::<Vec<_>>(), 200);
        assert_eq!(batches.next(), Some((209, 48)));
        batches.record(&[300], 0);
        batches.record(&[], 0);
        assert_eq!((batches.next(), batches.done()), (None, 202));
        let mut two = Batches::new(2);
        two.record(&[1, 2], 2);
        assert_eq!(two.next(), None);
    }
}
