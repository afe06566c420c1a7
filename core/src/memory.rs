//! The reference store: everything in `BTreeMap`s behind a mutex. Simple enough to be obviously
//! right; the other stores must behave exactly like it (the conformance cases check that). It
//! keeps no lanes: a grouped message is claimable when it is, by definition, its group's head
//! (the first of the group's live members in group order), found by looking.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use crate::engine::{Claiming, EnqueueArgs};
use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis};
use crate::settings::{Clock, Context, QueueRow};
use crate::storage::{self, Position};
use crate::store::{Claimed, Counts, Filter, ListQuery, Store, apply_step, count};

/// An in-memory [`Store`]. Lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct State {
    last_id: Id,
    messages: BTreeMap<Id, Message>,
    /// The group position (`at`) of every grouped message ever written.
    group_at: BTreeMap<Id, Millis>,
    queues: BTreeMap<String, QueueRow>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| Error::Store("memory store poisoned by a panic".into()))
    }

    /// Runs a write on a copy of the state, kept only when it succeeds: all or nothing.
    fn transact<T>(&self, write: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        let mut state = self.lock()?;
        let mut work = state.clone();
        let value = write(&mut work)?;
        *state = work;
        Ok(value)
    }
}

impl State {
    fn find(&self, queue: &str, id: Id) -> Option<Message> {
        self.messages.get(&id).filter(|m| m.queue == queue).cloned()
    }

    fn row(&self, queue: &str) -> QueueRow {
        self.queues.get(queue).copied().unwrap_or_default()
    }

    /// The context of a write on `queue`: the clock, read now (the lock is held).
    fn context(&self, queue: &str, clock: Clock<'_>) -> Result<Context> {
        Context::read(clock, self.row(queue))
    }

    fn position(&self, message: &Message) -> Position {
        Position {
            at: self.group_at.get(&message.id).copied().unwrap_or_default(),
            id: message.id,
        }
    }

    /// The live members of `message`'s group other than itself, in group order.
    fn members<'a>(&'a self, message: &'a Message) -> impl Iterator<Item = &'a Message> {
        let mut members: Vec<&Message> = self
            .messages
            .values()
            .filter(|m| {
                m.id != message.id
                    && m.queue == message.queue
                    && m.group.is_some()
                    && m.group == message.group
                    && storage::live(m)
            })
            .collect();
        members.sort_by_key(|m| self.position(m));
        members.into_iter()
    }

    /// Whether `message` waits behind its group's head: a live grouped message with a live member
    /// before it in group order.
    fn blocked(&self, message: &Message) -> bool {
        message.group.is_some()
            && storage::live(message)
            && self
                .members(message)
                .next()
                .is_some_and(|first| self.position(first) < self.position(message))
    }

    /// Writes `after` over `before` (`None`: an insert); a message entering its group goes to
    /// its end.
    fn put(&mut self, before: Option<&Message>, after: Message, now: Millis) {
        let entering = match before {
            None => after.group.is_some(),
            Some(before) => storage::enters_group(before, &after),
        };
        if entering {
            let tail = self.members(&after).last().map(|m| self.position(m));
            let own = before.map(|m| m.id);
            let at = storage::group_at(now, tail, own);
            self.group_at.insert(after.id, at);
        }
        self.messages.insert(after.id, after);
    }
}

impl Store for MemoryStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        self.transact(|state| {
            let ctx = state.context(&args.queue, clock)?;
            let messages = args.messages(&ctx)?;
            let mut out = Vec::with_capacity(messages.len());
            for message in messages {
                let existing = message.idempotency_key.as_ref().and_then(|key| {
                    state.messages.values().find(|m| {
                        m.queue == message.queue && m.idempotency_key.as_ref() == Some(key)
                    })
                });
                if let Some(existing) = existing {
                    out.push(Message {
                        deduplicated: true,
                        ..existing.clone()
                    });
                    continue;
                }
                state.last_id += 1;
                let message = message.with_id(state.last_id);
                state.put(None, message.clone(), ctx.now);
                out.push(message);
            }
            Ok(out)
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        Ok(self.lock()?.find(queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: impl FnOnce(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        self.transact(|state| {
            let ctx = state.context(queue, clock)?;
            let before = state.find(queue, id);
            let next = apply_step(before.clone(), queue, id, |m| step(m, &ctx))?;
            state.put(before.as_ref(), next.clone(), ctx.now);
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
            let ctx = state.context(queue, clock)?;
            let Some(claim) = start(&ctx) else {
                return Ok(Claimed::default());
            };
            let now = claim.now;
            let in_queue = |m: &&Message| m.queue == queue;
            let mut overdue: Vec<Message> = state
                .messages
                .values()
                .filter(in_queue)
                .filter(|m| machine::lease_expired(m, now))
                .cloned()
                .collect();
            overdue.sort_by_key(|m| (m.lease_expires_at, m.id));
            let mut expired = Vec::with_capacity(overdue.len());
            for (index, message) in overdue.into_iter().enumerate() {
                let next = claim.expire(message.clone(), index)?;
                state.put(Some(&message), next.clone(), now);
                expired.push(next);
            }
            let mut expiring: Vec<Message> = state
                .messages
                .values()
                .filter(in_queue)
                .filter(|m| machine::is_expired(m, now))
                .cloned()
                .collect();
            expiring.sort_by_key(|m| (m.expires_at, m.id));
            let mut swept = Vec::with_capacity(expiring.len());
            for message in expiring {
                if let Some(dead) = claim.sweep(message.clone())? {
                    state.put(Some(&message), dead.clone(), now);
                    swept.push(dead);
                } else {
                    state.messages.remove(&message.id);
                    swept.push(message);
                }
            }
            if !swept.is_empty() {
                let row = state
                    .row(queue)
                    .count_expired(claim.on_expiry, swept.len() as u64);
                state.queues.insert(queue.to_owned(), row);
            }
            let mut due: Vec<Message> = state
                .messages
                .values()
                .filter(in_queue)
                .filter(|m| machine::is_due(m, now) && !expired.iter().any(|e| e.id == m.id))
                .filter(|m| !state.blocked(m))
                .cloned()
                .collect();
            due.sort_by_key(|m| (m.created_at, m.id));
            let mut taken = Vec::new();
            for message in due.into_iter().take(claim.n) {
                let next = claim.take(message.clone(), tokens())?;
                state.put(Some(&message), next.clone(), now);
                taken.push(next);
            }
            Ok(Claimed {
                expired,
                swept,
                taken,
            })
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let state = self.lock()?;
        let after = query.after_id.map_or(0, |id| id.saturating_add(1));
        Ok(state
            .messages
            .range(after..)
            .map(|(_, m)| m)
            .filter(|m| m.queue == query.queue && query.status.is_none_or(|s| m.status == s))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn select(&self, filter: &Filter<'_>, after_id: Id, limit: usize) -> Result<Vec<Id>> {
        let state = self.lock()?;
        Ok(state
            .messages
            .range(after_id.saturating_add(1)..)
            .filter(|(_, m)| filter.matches(m))
            .map(|(id, _)| *id)
            .take(limit)
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
            let ctx = state.context(queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                if let Some(current) = state.find(queue, *id)
                    && let Some(next) = step(current.clone(), &ctx)?
                {
                    state.put(Some(&current), next.clone(), ctx.now);
                    written.push(next);
                }
            }
            Ok(written)
        })
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        let mut state = self.lock()?;
        let mut doomed = Vec::new();
        for id in ids {
            if let Some(current) = state.find(queue, *id)
                && check(&current)?
            {
                doomed.push(current);
            }
        }
        for message in &doomed {
            state.messages.remove(&message.id);
        }
        Ok(doomed)
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        let state = self.lock()?;
        let messages = state.messages.values().filter(|m| m.queue == queue);
        let counts = count(messages.map(|m| (m, state.blocked(m))), now);
        Ok(counts.with_row(&state.row(queue)))
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        let state = self.lock()?;
        Ok(state
            .messages
            .values()
            .filter(|m| m.queue == queue && machine::is_delayed(m, now) && !state.blocked(m))
            .filter_map(|m| m.retry_after)
            .min())
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let state = self.lock()?;
        let names: BTreeSet<&str> = state
            .messages
            .values()
            .map(|m| m.queue.as_str())
            .chain(state.queues.keys().map(String::as_str))
            .collect();
        Ok(names.into_iter().map(str::to_owned).collect())
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        Ok(self.lock()?.row(queue))
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        self.transact(|state| {
            let stored = state.queues.get(queue).copied();
            let row = step(stored.unwrap_or_default())?;
            if stored.is_some() || row.worth_storing() {
                state.queues.insert(queue.to_owned(), row);
            }
            Ok(row)
        })
    }
}
