//! The reference store: everything in a `BTreeMap` behind a mutex. Simple enough to be obviously
//! right; the other stores must behave exactly like it (the conformance cases check that).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis, NewMessage};
use crate::store::{Claimed, Counts, Filter, ListQuery, Store, apply_step, count};

/// An in-memory [`Store`]. Lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last_id: Id,
    messages: BTreeMap<Id, Message>,
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
}

impl Store for MemoryStore {
    async fn insert(&self, messages: Vec<NewMessage>) -> Result<Vec<Message>> {
        let mut state = self.lock()?;
        let mut out = Vec::with_capacity(messages.len());
        for message in messages {
            let existing = message.idempotency_key.as_ref().and_then(|key| {
                state
                    .messages
                    .values()
                    .find(|m| m.queue == message.queue && m.idempotency_key.as_ref() == Some(key))
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
            state.messages.insert(message.id, message.clone());
            out.push(message);
        }
        Ok(out)
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        Ok(self.lock()?.find(queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        let mut state = self.lock()?;
        let next = apply_step(state.find(queue, id), queue, id, step)?;
        state.messages.insert(id, next.clone());
        Ok(next)
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        limit: usize,
        expire: impl FnMut(Message) -> Result<Message>,
        take: impl FnMut(Message) -> Result<Message>,
    ) -> Result<Claimed> {
        let mut state = self.lock()?;
        let in_queue = |m: &&Message| m.queue == queue;
        let mut overdue: Vec<&Message> = state
            .messages
            .values()
            .filter(in_queue)
            .filter(|m| machine::lease_expired(m, now))
            .collect();
        overdue.sort_by_key(|m| (m.lease_expires_at, m.id));
        let expired: Vec<Message> = overdue
            .into_iter()
            .cloned()
            .map(expire)
            .collect::<Result<_>>()?;
        let mut due: Vec<&Message> = state
            .messages
            .values()
            .filter(in_queue)
            .filter(|m| machine::is_due(m, now) && !expired.iter().any(|e| e.id == m.id))
            .collect();
        due.sort_by_key(|m| (m.created_at, m.id));
        let taken: Vec<Message> = due
            .into_iter()
            .take(limit)
            .cloned()
            .map(take)
            .collect::<Result<_>>()?;
        for message in expired.iter().chain(&taken) {
            state.messages.insert(message.id, message.clone());
        }
        Ok(Claimed { expired, taken })
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
        mut step: impl FnMut(Message) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        let mut state = self.lock()?;
        let mut written = Vec::new();
        for id in ids {
            if let Some(current) = state.find(queue, *id) {
                written.extend(step(current)?);
            }
        }
        for message in &written {
            state.messages.insert(message.id, message.clone());
        }
        Ok(written)
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
        Ok(count(
            state.messages.values().filter(|m| m.queue == queue),
            now,
        ))
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        let state = self.lock()?;
        Ok(state
            .messages
            .values()
            .filter(|m| m.queue == queue && machine::is_delayed(m, now))
            .filter_map(|m| m.retry_after)
            .min())
    }

    async fn queues(&self) -> Result<Vec<String>> {
        let state = self.lock()?;
        let names: BTreeSet<&str> = state.messages.values().map(|m| m.queue.as_str()).collect();
        Ok(names.into_iter().map(str::to_owned).collect())
    }
}

impl State {
    fn find(&self, queue: &str, id: Id) -> Option<Message> {
        self.messages.get(&id).filter(|m| m.queue == queue).cloned()
    }
}
