//! The reference store: everything in `BTreeMap`s behind a mutex. Simple enough to be obviously
//! right; the other stores must behave exactly like it (the conformance cases check that). It
//! keeps no lanes: it hands the messages of a queue to the plans of [`scan`] (a grouped message
//! is claimable when it is, by definition, its group's head, found by looking), as a host of the
//! WebAssembly component with a dictionary does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use crate::engine::scan::{self, Change, Stored};
use crate::engine::{Claiming, EnqueueArgs};
use crate::error::{Error, Result};
use crate::message::{Id, Message, Millis};
use crate::settings::{Clock, Context, QueueRow};
use crate::store::{Claimed, Counts, ListQuery, Store, apply_step};

/// An in-memory [`Store`]. Lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct State {
    last_id: Id,
    /// Every message, with its place in its ordering group.
    messages: BTreeMap<Id, Stored>,
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
    fn find(&self, queue: &str, id: Id) -> Option<&Stored> {
        self.messages.get(&id).filter(|s| s.message.queue == queue)
    }

    fn row(&self, queue: &str) -> QueueRow {
        self.queues.get(queue).copied().unwrap_or_default()
    }

    /// The context of a write on `queue`: the clock, read now (the lock is held).
    fn context(&self, queue: &str, clock: Clock<'_>) -> Result<Context> {
        Context::read(clock, self.row(queue))
    }

    /// Whether a message of `queue` carries the idempotency key `key`.
    fn key_taken(&self, queue: &str, key: &str) -> bool {
        self.messages
            .values()
            .any(|s| s.message.queue == queue && s.message.idempotency_key.as_deref() == Some(key))
    }

    /// Every message of `queue`.
    fn queue(&self, queue: &str) -> Vec<Stored> {
        let of_queue = |s: &&Stored| s.message.queue == queue;
        self.messages.values().filter(of_queue).cloned().collect()
    }

    /// Writes `after` over `before` (`None`: an insert), placed in its group by [`scan::place`]
    /// among the messages of its group.
    fn put(&mut self, before: Option<&Stored>, after: Message, now: Millis) {
        let group: Vec<Stored> = match &after.group {
            Some(_) => self
                .messages
                .values()
                .filter(|s| s.message.queue == after.queue && s.message.group == after.group)
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        let stored = scan::place(now, before, after, &group);
        self.messages.insert(stored.message.id, stored);
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
                    state.messages.values().find(|s| {
                        s.message.queue == message.queue
                            && s.message.idempotency_key.as_ref() == Some(key)
                    })
                });
                if let Some(existing) = existing {
                    out.push(Message {
                        deduplicated: true,
                        ..existing.message.clone()
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
        Ok(self.lock()?.find(queue, id).map(|s| s.message.clone()))
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
            let before = state.find(queue, id).cloned();
            let found = before.as_ref().map(|s| s.message.clone());
            let next = apply_step(found, queue, id, |m| step(m, &ctx))?;
            state.put(before.as_ref(), next.clone(), ctx.now);
            Ok(next)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        self.transact(|state| {
            let ctx = state.context(queue, clock)?;
            let Some(claim) = start(&ctx) else {
                return Ok(Claimed::default());
            };
            let done = scan::claim(&claim, queue, ctx.queue, state.queue(queue), tokens)?;
            for change in done.changes {
                match change {
                    Change::Put(stored) => state.messages.insert(stored.message.id, stored),
                    Change::Delete(id) => state.messages.remove(&id),
                };
            }
            if let Some(row) = done.row {
                state.queues.insert(queue.to_owned(), row);
            }
            Ok(done.claimed)
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let state = self.lock()?;
        let after = query.after_id.map_or(0, |id| id.saturating_add(1));
        Ok(state
            .messages
            .range(after..)
            .map(|(_, s)| &s.message)
            .filter(|m| m.queue == query.queue && query.status.is_none_or(|s| m.status == s))
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
            let ctx = state.context(queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                if let Some(current) = state.find(queue, *id).cloned()
                    && let Some(next) = step(current.message.clone(), &ctx)?
                {
                    state.put(Some(&current), next.clone(), ctx.now);
                    written.push(next);
                }
            }
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
            let ctx = state.context(queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                let Some(current) = state.find(queue, *id).cloned() else {
                    continue;
                };
                let key = current.message.idempotency_key.as_deref();
                let taken = key.is_some_and(|k| state.key_taken(to_queue, k));
                if let Some(next) = step(current.message.clone(), &ctx, taken)? {
                    state.put(Some(&current), next.clone(), ctx.now);
                    written.push(next);
                }
            }
            Ok(written)
        })
    }

    async fn keys_taken(&self, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
        let state = self.lock()?;
        let taken = keys.iter().filter(|k| state.key_taken(queue, k));
        Ok(taken.map(|k| (*k).to_owned()).collect())
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
                && check(&current.message)?
            {
                doomed.push(current.message.clone());
            }
        }
        for message in &doomed {
            state.messages.remove(&message.id);
        }
        Ok(doomed)
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        let state = self.lock()?;
        Ok(scan::counts(&state.queue(queue), &state.row(queue), now))
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        let state = self.lock()?;
        Ok(scan::next_due_at(&state.queue(queue), now))
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let state = self.lock()?;
        let names: BTreeSet<&str> = state
            .messages
            .values()
            .map(|s| s.message.queue.as_str())
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
            if row.worth_storing() {
                state.queues.insert(queue.to_owned(), row);
            } else {
                state.queues.remove(queue);
            }
            Ok(row)
        })
    }
}
