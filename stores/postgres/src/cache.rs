//! What a store remembers of the rows it read and wrote, so that an enqueue and an ack can skip
//! reading them again (issue 24): one round trip instead of two.
//!
//! A remembered row is only ever a guess. The statement that acts on it checks, in the
//! transaction that writes, that the database still holds exactly that: an enqueue that its
//! queue's settings are the remembered ones, an ack (any [`deadletter::Store::update`]) that its
//! message's row is the remembered version (`xmin` and `ctid`, see [`crate::sql::VERSION`]) and
//! its queue's settings too. When the guess is wrong, the statement writes nothing and the call
//! takes the usual path, which reads the rows, runs the core's step again on them and remembers
//! them. Another process, another store on the schema, a tool's `UPDATE`: whatever changed the
//! rows, the database tells. So what is remembered decides how fast a call is, never what it
//! writes.
//!
//! Bounded: at most [`Cache::QUEUES`] queue rows, and [`Cache::MESSAGES`] messages or
//! [`Cache::BYTES`] of them (payloads may be 1 MiB); past either, everything is forgotten. A
//! message is forgotten when a call takes it to act on it (the call remembers what it wrote).
//! Each store has its own (one schema); closing the store forgets everything.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use deadletter::{Id, Message, QueueRow};

/// A message as a write of this store left it: its row's version and lane.
#[derive(Debug, Clone)]
pub struct Cached {
    /// The message as stored.
    pub message: Message,
    /// Its storage-only `blocked` flag.
    pub blocked: bool,
    /// Its row's version ([`crate::sql::VERSION`]) when it was written.
    pub version: String,
}

impl Cached {
    /// About how many bytes it holds.
    fn weight(&self) -> usize {
        let m = &self.message;
        let errors: usize = m.errors.iter().map(|e| e.error.len() + 32).sum();
        let texts = [
            m.last_error.as_deref(),
            m.idempotency_key.as_deref(),
            m.group.as_deref(),
            m.lease_token.as_deref(),
            m.moved_from.as_deref(),
        ];
        let texts: usize = texts.iter().flatten().map(|t| t.len()).sum();
        std::mem::size_of::<Self>() + m.queue.len() + m.payload.len() + errors + texts
    }
}

#[derive(Default)]
struct Messages {
    rows: HashMap<Id, Cached>,
    bytes: usize,
}

/// The rows one store remembers (see the module's text).
#[derive(Default)]
pub struct Cache {
    queues: Mutex<HashMap<String, QueueRow>>,
    messages: Mutex<Messages>,
}

impl Cache {
    /// How many queue rows it keeps at most.
    pub const QUEUES: usize = 1_000;
    /// How many messages it keeps at most.
    pub const MESSAGES: usize = 4_096;
    /// How many bytes of messages it keeps at most (about).
    pub const BYTES: usize = 16 << 20;

    fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        // A panic while it was held left at worst a guess, which the database checks.
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The row of `queue` as last read or written here.
    pub fn queue(&self, queue: &str) -> Option<QueueRow> {
        Self::lock(&self.queues).get(queue).copied()
    }

    /// Remembers `row` as the row of `queue`.
    pub fn put_queue(&self, queue: &str, row: QueueRow) {
        let mut queues = Self::lock(&self.queues);
        if queues.len() >= Self::QUEUES && !queues.contains_key(queue) {
            queues.clear();
        }
        queues.insert(queue.to_owned(), row);
    }

    /// Message `id` of `queue` as last written here, forgotten (the caller remembers what it
    /// writes).
    pub fn take(&self, queue: &str, id: Id) -> Option<Cached> {
        let mut messages = Self::lock(&self.messages);
        let found = messages.rows.remove(&id)?;
        messages.bytes = messages.bytes.saturating_sub(found.weight());
        (found.message.queue == queue).then_some(found)
    }

    /// Remembers each of `written` (the newest version of its message).
    pub fn put(&self, written: impl IntoIterator<Item = Cached>) {
        let mut messages = Self::lock(&self.messages);
        for cached in written {
            let weight = cached.weight();
            if messages.rows.len() >= Self::MESSAGES || messages.bytes + weight > Self::BYTES {
                *messages = Messages::default();
            }
            if weight > Self::BYTES {
                continue;
            }
            messages.bytes += weight;
            if let Some(old) = messages.rows.insert(cached.message.id, cached) {
                messages.bytes = messages.bytes.saturating_sub(old.weight());
            }
        }
    }

    /// Forgets everything.
    pub fn clear(&self) {
        Self::lock(&self.queues).clear();
        *Self::lock(&self.messages) = Messages::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(id: Id, payload: usize) -> Cached {
        let message = deadletter::NewMessage {
            queue: "q".into(),
            payload: "x".repeat(payload),
            max_retries: 3,
            retry_after: None,
            idempotency_key: None,
            group: None,
            expires_at: None,
            now: 1_000,
        }
        .with_id(id);
        Cached {
            message,
            blocked: false,
            version: "1(0,1)".into(),
        }
    }

    #[test]
    fn a_message_is_taken_once_and_only_from_its_queue() {
        let cache = Cache::default();
        cache.put([cached(1, 10), cached(2, 10)]);
        assert_eq!(cache.take("q", 1).map(|c| c.message.id), Some(1));
        assert!(cache.take("q", 1).is_none(), "taken");
        assert!(cache.take("other", 2).is_none(), "another queue's id");
        assert!(
            cache.take("q", 2).is_none(),
            "forgotten by the wrong look-up too"
        );
    }

    #[test]
    fn it_stays_within_its_bounds() {
        let cache = Cache::default();
        cache.put((1..=5_000).map(|id| cached(id, 10)));
        let n = Cache::lock(&cache.messages).rows.len();
        assert!(n <= Cache::MESSAGES && n > 0, "{n}");
        let big = 1 << 20;
        cache.put((1..=40).map(|id| cached(id, big)));
        let bytes = Cache::lock(&cache.messages).bytes;
        assert!(bytes <= Cache::BYTES && bytes >= big, "{bytes}");
        for i in 0..=Cache::QUEUES {
            cache.put_queue(&format!("q{i}"), QueueRow::default());
        }
        assert!(Cache::lock(&cache.queues).len() <= Cache::QUEUES);
        cache.clear();
        assert!(cache.queue("q0").is_none() && cache.take("q", 40).is_none());
    }
}
