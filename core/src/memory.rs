//! The reference store: everything in a `BTreeMap` behind a mutex. Simple enough to be obviously
//! right; the other stores must behave exactly like it (the conformance cases check that).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::machine;
use crate::message::{Id, Message, Millis, NewMessage};
use crate::store::{ListQuery, Store, apply_step};

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
    async fn insert(&self, message: NewMessage) -> Result<Message> {
        let mut state = self.lock()?;
        state.last_id += 1;
        let message = message.with_id(state.last_id);
        state.messages.insert(message.id, message.clone());
        Ok(message)
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        Ok(self
            .lock()?
            .messages
            .get(&id)
            .filter(|m| m.queue == queue)
            .cloned())
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        let mut state = self.lock()?;
        let current = state
            .messages
            .get(&id)
            .filter(|m| m.queue == queue)
            .cloned();
        let next = apply_step(current, queue, id, step)?;
        state.messages.insert(id, next.clone());
        Ok(next)
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        expire: impl Fn(Message) -> Result<Message>,
        take: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Option<Message>> {
        let mut state = self.lock()?;
        let in_queue = |m: &&Message| m.queue == queue;
        let expired: Vec<Message> = state
            .messages
            .values()
            .filter(in_queue)
            .filter(|m| machine::lease_expired(m, now))
            .map(|m| expire(m.clone()))
            .collect::<Result<_>>()?;
        let next = state
            .messages
            .values()
            .filter(in_queue)
            .filter(|m| machine::is_due(m, now) && !expired.iter().any(|e| e.id == m.id))
            .min_by_key(|m| (m.created_at, m.id))
            .cloned();
        let taken = next.map(take).transpose()?;
        for message in expired.into_iter().chain(taken.clone()) {
            state.messages.insert(message.id, message);
        }
        Ok(taken)
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
}
