//! The plans of a store without a query language, through every shared conformance case: a store
//! of records laid out as the IndexedDB store of the npm package keeps them (each with its claim
//! lane, decided by `Lane::of` when it is written; a position in its group while it is live; the
//! members behind their group's head in no claim lane), whose every decision comes from the
//! core's plans as the IndexedDB store gets them through the WebAssembly module: `LaneClaim`
//! (leases, expiry, the groups that move on, the due messages taken), `Tails` (where an enqueue
//! or a replay puts a message in its group), `change` and `next_head` (the group's next member).
//! Its "indexes" are scans, sorted as IndexedDB's key ranges are, and its reads happen where the
//! IndexedDB store's requests do (a claim's head of the ready lane before its writes, read again
//! when the plan says it is stale; cursors that walk on past the key they stood on). So a case
//! that fails here fails in the plans, not in JavaScript. (`harness = false`.)

use std::collections::BTreeMap;
use std::sync::Mutex;

use deadletter::conformance::harness;
use deadletter::engine::TIMED_PAGE;
use deadletter::engine::groups::{Change, change};
use deadletter::storage::{Lane, Position, live, next_head};
use deadletter::{
    Claimed, Claiming, Clock, Context, Counts, EnqueueArgs, Id, LaneClaim, ListQuery, Message,
    Millis, QueueRow, Result, Status, Store, Tails, Write, count,
};

/// A message as stored, with its place: its claim lane (`None` when finished; `Blocked` behind
/// its group's head) and its position in its group while it is live.
#[derive(Debug, Clone)]
struct Record {
    message: Message,
    lane: Option<Lane>,
    group_at: Option<Millis>,
}

impl Record {
    fn blocked(&self) -> bool {
        self.lane == Some(Lane::Blocked)
    }

    /// The key of the claim index's lane it is in: (lane, at, id); `None` outside both.
    fn claim_key(&self) -> Option<(u8, Millis, Id)> {
        let id = self.message.id;
        match self.lane? {
            Lane::Waiting(at) | Lane::Leased(at) => Some((0, at, id)),
            Lane::Ready => Some((1, 0, id)),
            Lane::Blocked => None,
        }
    }
}

#[derive(Debug, Default, Clone)]
struct State {
    last_id: Id,
    records: BTreeMap<Id, Record>,
    queues: BTreeMap<String, QueueRow>,
}

impl State {
    fn row(&self, queue: &str) -> QueueRow {
        self.queues.get(queue).copied().unwrap_or_default()
    }

    fn of<'a>(&'a self, queue: &str) -> impl Iterator<Item = &'a Record> + use<'a> {
        let queue = queue.to_owned();
        self.records
            .values()
            .filter(move |r| r.message.queue == queue)
    }

    /// Index `group`: the live members of `group` of `queue` in group order.
    fn members(&self, queue: &str, group: &str) -> Vec<&Record> {
        let mut members: Vec<&Record> = self
            .of(queue)
            .filter(|r| r.group_at.is_some() && r.message.group.as_deref() == Some(group))
            .collect();
        members.sort_by_key(|r| (r.group_at, r.message.id));
        members
    }

    fn tail(&self, queue: &str, group: &str) -> Option<Position> {
        self.members(queue, group).last().map(|r| Position {
            at: r.group_at.unwrap_or_default(),
            id: r.message.id,
        })
    }

    /// Writes `message` in `lane` (a live message keeps `group_at`, a finished one none).
    fn put(&mut self, message: Message, lane: Option<Lane>, group_at: Option<Millis>) {
        let group_at = group_at.filter(|_| message.group.is_some() && live(&message));
        let record = Record {
            message,
            lane,
            group_at,
        };
        self.records.insert(record.message.id, record);
    }

    /// What a claim writes (every message it writes is its group's head, or left it).
    fn apply(&mut self, write: Write) {
        match write {
            Write::Put(m) => {
                let at = self.records.get(&m.id).and_then(|r| r.group_at);
                let lane = Lane::of(&m, true);
                self.put(m, lane, at);
            }
            Write::Ready(m) => {
                let at = self.records.get(&m.id).and_then(|r| r.group_at);
                self.put(m, Some(Lane::Ready), at);
            }
            Write::Delete(m) => {
                self.records.remove(&m.id);
            }
        }
    }

    /// Reads the first live member of each group a write took a member out of, and unblocks it
    /// when the core says it is the head now.
    fn unblock(&mut self, queue: &str, group: &str) {
        let first = self.members(queue, group).first().map(|r| (*r).clone());
        let blocked = first.as_ref().is_some_and(Record::blocked);
        let first = first.map(|r| r.message);
        if let (Some(m), Some(lane)) = (first.clone(), next_head(first.as_ref(), blocked)) {
            let at = self.records.get(&m.id).and_then(|r| r.group_at);
            self.put(m, Some(lane), at);
        }
    }

    /// A page of the claim index: lane `lane` of `queue`, keys above `after`, up to `upto` (an
    /// `at`), at most `limit`, in key order.
    fn lane(
        &self,
        queue: &str,
        lane: u8,
        after: Option<(Millis, Id)>,
        upto: Millis,
        limit: usize,
    ) -> Vec<Message> {
        let mut keyed: Vec<((Millis, Id), &Record)> = self
            .of(queue)
            .filter_map(|r| r.claim_key().map(|k| (k, r)))
            .filter(|((l, at, _), _)| *l == lane && *at <= upto)
            .map(|((_, at, id), r)| ((at, id), r))
            .filter(|(key, _)| after.is_none_or(|a| *key > a))
            .collect();
        keyed.sort_by_key(|(key, _)| *key);
        keyed
            .into_iter()
            .take(limit)
            .map(|(_, r)| r.message.clone())
            .collect()
    }

    /// Index `expiring`: the pending messages of `queue` whose expiry is at `now` or before, keys
    /// above `after`, at most `limit`.
    fn expiring(
        &self,
        queue: &str,
        after: Option<(Millis, Id)>,
        now: Millis,
        limit: usize,
    ) -> Vec<Message> {
        let mut found: Vec<&Message> = self
            .of(queue)
            .map(|r| &r.message)
            .filter(|m| m.status == Status::Pending && m.expires_at.is_some_and(|at| at <= now))
            .filter(|m| after.is_none_or(|a| (m.expires_at.unwrap_or_default(), m.id) > a))
            .collect();
        found.sort_by_key(|m| (m.expires_at, m.id));
        found.into_iter().take(limit).cloned().collect()
    }
}

/// The store.
#[derive(Debug, Default)]
struct LaneStore {
    state: Mutex<State>,
}

impl LaneStore {
    /// Runs a write on a copy of the state, kept only when it succeeds (a transaction).
    fn transact<T>(&self, write: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        let mut state = self.state.lock().unwrap();
        let mut work = state.clone();
        let value = write(&mut work)?;
        *state = work;
        Ok(value)
    }
}

/// The context of a write: the queue's row, then the clock.
fn context(state: &State, queue: &str, clock: Clock<'_>) -> Result<Context> {
    let row = state.row(queue);
    Context::read(clock, row)
}

/// Writes the steps' results of one transaction (`before`, `after` pairs, in order): a message
/// entering its group goes behind the tails read before the first write; the groups left move
/// on once everything is written.
fn write_all(state: &mut State, now: Millis, pairs: Vec<(Record, Message)>) -> Result<()> {
    let mut tails = Tails::new();
    for (before, after) in &pairs {
        if matches!(
            change(&before.message, Some(after)),
            Change::Enters | Change::Moves
        ) && let Some(group) = &after.group
        {
            tails.read(group, state.tail(&after.queue, group));
        }
    }
    let mut left = Vec::new();
    for (before, after) in pairs {
        match change(&before.message, Some(&after)) {
            Change::Stays => {
                let lane = Lane::of(&after, !before.blocked());
                state.put(after, lane, before.group_at);
            }
            Change::Enters => {
                let group = after.group.clone().unwrap_or_default();
                let (at, head) = tails.enter(&group, now, Some(after.id))?;
                let lane = Lane::of(&after, head);
                state.put(after, lane, Some(at));
            }
            Change::Moves => {
                let group = after.group.clone().unwrap_or_default();
                left.push((before.message.queue.clone(), group.clone()));
                let (at, head) = tails.enter(&group, now, Some(after.id))?;
                let lane = Lane::of(&after, head);
                state.put(after, lane, Some(at));
            }
            Change::Leaves => {
                left.push((after.queue.clone(), after.group.clone().unwrap_or_default()));
                let lane = Lane::of(&after, true);
                state.put(after, lane, None);
            }
        }
    }
    for (queue, group) in left {
        state.unblock(&queue, &group);
    }
    Ok(())
}

impl Store for LaneStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        self.transact(|state| {
            let ctx = context(state, &args.queue, clock)?;
            let (_, groups) = args.names();
            let mut tails = Tails::new();
            for group in groups {
                tails.read(group, state.tail(&args.queue, group));
            }
            let mut out = Vec::new();
            for new in args.messages(&ctx)? {
                let existing = new.idempotency_key.as_ref().and_then(|key| {
                    state
                        .of(&args.queue)
                        .find(|r| r.message.idempotency_key.as_ref() == Some(key))
                });
                if let Some(existing) = existing {
                    out.push(Message {
                        deduplicated: true,
                        ..existing.message.clone()
                    });
                    continue;
                }
                state.last_id += 1;
                let message = new.with_id(state.last_id);
                let (at, head) = match &message.group {
                    Some(group) => {
                        let (at, head) = tails.enter(group, ctx.now, None)?;
                        (Some(at), head)
                    }
                    None => (None, true),
                };
                let lane = Lane::of(&message, head);
                state.put(message.clone(), lane, at);
                out.push(message);
            }
            Ok(out)
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        let state = self.state.lock().unwrap();
        let found = state.records.get(&id).map(|r| r.message.clone());
        Ok(found.filter(|m| m.queue == queue))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: impl FnOnce(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        self.transact(|state| {
            let ctx = context(state, queue, clock)?;
            let before = state
                .records
                .get(&id)
                .filter(|r| r.message.queue == queue)
                .cloned();
            let found = before.as_ref().map(|r| r.message.clone());
            let next = deadletter::apply_step(found, queue, id, |m| step(m, &ctx))?;
            if let Some(before) = before {
                write_all(state, ctx.now, vec![(before, next.clone())])?;
            }
            Ok(next)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        mut tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        self.transact(|state| {
            let ctx = context(state, queue, clock)?;
            let Some(claiming) = start(&ctx) else {
                return Ok(Claimed::default());
            };
            let now = claiming.now;
            let mut plan = LaneClaim::new(claiming);
            // Read at once, before any write: the head of the ready lane, the timed lane up to
            // now, the messages whose expiry came.
            let mut head = state.lane(queue, 1, None, Millis::MAX, plan.wanted());
            let timed = state.lane(queue, 0, None, now, TIMED_PAGE);
            let expiring = state.expiring(queue, None, now, TIMED_PAGE);
            let full = timed.len() == TIMED_PAGE;
            for message in timed {
                if let Some(write) = plan.timed(message)? {
                    state.apply(write);
                }
            }
            if full {
                for write in plan.overflow() {
                    state.apply(write);
                }
                // A cursor over the rest, one record at a time, from the key it stood on.
                let mut after = None;
                while let Some(message) = state.lane(queue, 0, after, now, 1).pop() {
                    let lane = state.records[&message.id].claim_key();
                    after = lane.map(|(_, at, id)| (at, id));
                    if let Some(write) = plan.timed(message)? {
                        state.apply(write);
                    }
                }
            }
            let full = expiring.len() == TIMED_PAGE;
            for message in expiring {
                if let Some(write) = plan.expiring(message)? {
                    state.apply(write);
                }
            }
            if full {
                let mut after = None;
                while let Some(message) = state.expiring(queue, after, now, 1).pop() {
                    after = Some((message.expires_at.unwrap_or_default(), message.id));
                    if let Some(write) = plan.expiring(message)? {
                        state.apply(write);
                    }
                }
            }
            if plan.swept() > 0 {
                let row = state
                    .row(queue)
                    .count_expired(plan.args().on_expiry, plan.swept() as u64);
                state.queues.insert(queue.to_owned(), row);
            }
            for group in plan.left().to_vec() {
                let first = state.members(queue, &group).first().map(|r| (*r).clone());
                let blocked = first.as_ref().is_some_and(Record::blocked);
                if let Some(write) = plan.head(first.map(|r| r.message), blocked) {
                    state.apply(write);
                }
            }
            if plan.stale() {
                head = state.lane(queue, 1, None, Millis::MAX, plan.wanted());
            }
            while plan.wanted() > 0 {
                for write in plan.ready(head, &mut tokens)? {
                    state.apply(write);
                }
                head = state.lane(queue, 1, None, Millis::MAX, plan.wanted());
            }
            Ok(plan.finish())
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let state = self.state.lock().unwrap();
        let after = query.after_id.unwrap_or(0);
        Ok(state
            .of(query.queue)
            .map(|r| &r.message)
            .filter(|m| m.id > after && query.status.is_none_or(|s| m.status == s))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.transact(|state| {
            let ctx = context(state, queue, clock)?;
            let mut pairs = Vec::new();
            for id in ids {
                if let Some(before) = state.records.get(id).filter(|r| r.message.queue == queue)
                    && let Some(next) = step(before.message.clone(), &ctx)?
                {
                    pairs.push((before.clone(), next));
                }
            }
            let written = pairs.iter().map(|(_, m)| m.clone()).collect();
            write_all(state, ctx.now, pairs)?;
            Ok(written)
        })
    }

    async fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.transact(|state| {
            let ctx = context(state, queue, clock)?;
            let mut pairs = Vec::new();
            for id in ids {
                let Some(before) = state.records.get(id).filter(|r| r.message.queue == queue)
                else {
                    continue;
                };
                let key = before.message.idempotency_key.as_ref();
                let taken = key.is_some_and(|key| {
                    state
                        .of(to_queue)
                        .any(|r| r.message.idempotency_key.as_ref() == Some(key))
                });
                if let Some(after) = step(before.message.clone(), &ctx, taken)? {
                    pairs.push((before.clone(), after));
                }
            }
            let moved: Vec<Message> = pairs.iter().map(|(_, after)| after.clone()).collect();
            write_all(state, ctx.now, pairs)?;
            Ok(moved)
        })
    }

    async fn keys_taken(&self, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
        let state = self.state.lock().unwrap();
        let taken = keys.iter().filter(|key| {
            state
                .of(queue)
                .any(|r| r.message.idempotency_key.as_deref() == Some(**key))
        });
        Ok(taken.map(|key| (*key).to_owned()).collect())
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.transact(|state| {
            let mut deleted = Vec::new();
            for id in ids {
                if let Some(r) = state.records.get(id).filter(|r| r.message.queue == queue)
                    && check(&r.message)?
                {
                    deleted.push(r.message.clone());
                }
            }
            for message in &deleted {
                state.records.remove(&message.id);
            }
            Ok(deleted)
        })
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        let state = self.state.lock().unwrap();
        let counts = count(state.of(queue).map(|r| (&r.message, r.blocked())), now);
        Ok(counts.with_row(&state.row(queue)))
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let state = self.state.lock().unwrap();
        let mut names: Vec<String> = state
            .records
            .values()
            .map(|r| r.message.queue.clone())
            .chain(state.queues.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        let state = self.state.lock().unwrap();
        Ok(state
            .of(queue)
            .filter(|r| !r.blocked() && r.message.status == Status::Pending)
            .filter_map(|r| r.message.retry_after)
            .filter(|at| *at > now)
            .min())
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        Ok(self.state.lock().unwrap().row(queue))
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        self.transact(|state| {
            let stored = state.queues.get(queue).copied();
            let row = step(stored.unwrap_or_default())?;
            if row.worth_storing() {
                state.queues.insert(queue.to_owned(), row);
            } else {
                state.queues.remove(queue);
            }
            Ok(row)
        })
    }
}

fn main() -> std::process::ExitCode {
    harness::run(harness::trials("lanes", LaneStore::default))
}
