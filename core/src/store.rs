//! What a store must do atomically. Stores select and persist; they never decide a next state:
//! every write goes through a step function from [`crate::machine`] that the engine hands them.

use std::future::Future;

use crate::error::{Error, Result};
use crate::message::{Id, Message, Millis, NewMessage, Status};

/// One page of `list`: messages of `queue` (optionally of one `status`) with `id > after_id`,
/// ordered by id, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Only messages in this status, when set.
    pub status: Option<Status>,
    /// Page size, 1..=1000.
    pub limit: usize,
    /// Only ids greater than this (keyset pagination), when set.
    pub after_id: Option<Id>,
}

/// Persistence for messages.
///
/// The methods return futures so that one trait serves both synchronous stores (SQLite, memory:
/// their futures are ready at once and are driven by `pollster::block_on` or any executor) and
/// asynchronous ones (IndexedDB, whose requests complete on the event loop). Step functions are
/// plain synchronous closures, so an asynchronous store can run read -> step -> write inside one
/// transaction without awaiting anything foreign to it.
///
/// Every method is atomic: on `Err` (from the store or from a step) nothing was written.
/// Stores must pass the shared conformance cases in `tests/conformance/`.
pub trait Store {
    /// Inserts `message` and returns it with the id the store assigned: strictly greater than every
    /// id it assigned before, starting at 1.
    fn insert(&self, message: NewMessage) -> impl Future<Output = Result<Message>>;

    /// Reads message `id`; `None` when there is none in `queue` (an id of another queue is absent).
    fn get(&self, queue: &str, id: Id) -> impl Future<Output = Result<Option<Message>>>;

    /// Reads message `id` of `queue`, writes `step(message)` and returns it, atomically.
    /// `Error::NotFound` when [`Store::get`] would return `None`; nothing is written when `step` fails.
    fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> impl Future<Output = Result<Message>>;

    /// Atomically, in one transaction:
    /// 1. every `processing` message of `queue` whose `lease_expires_at <= now` is replaced by
    ///    `expire(message)`;
    /// 2. then the first `pending` message of `queue` whose `retry_after` is null or `<= now`,
    ///    ordered by `created_at` then `id`, is replaced by `take(message)` and returned.
    ///
    /// Returns `None` (after writing step 1) when no message is due. Stores find both sets through
    /// indexes, so the cost does not grow with succeeded, dead or delayed messages.
    fn claim(
        &self,
        queue: &str,
        now: Millis,
        expire: impl Fn(Message) -> Result<Message>,
        take: impl FnOnce(Message) -> Result<Message>,
    ) -> impl Future<Output = Result<Option<Message>>>;

    /// One page of messages, see [`ListQuery`].
    fn list(&self, query: &ListQuery<'_>) -> impl Future<Output = Result<Vec<Message>>>;
}

/// What every store's [`Store::update`] does once it has read: `step(message)`, or `not_found`
/// when the store found no message `id` in `queue`.
pub fn apply_step(
    found: Option<Message>,
    queue: &str,
    id: Id,
    step: impl FnOnce(Message) -> Result<Message>,
) -> Result<Message> {
    step(found.ok_or_else(|| Error::NotFound {
        queue: queue.to_owned(),
        id,
    })?)
}
