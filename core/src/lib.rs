//! # deadletter
//!
//! A reliable message queue core: messages are enqueued on a named queue, claimed by a worker under
//! a lease (visibility timeout), then acked (`succeed`) or failed. A failure reschedules the
//! message with exponential backoff (`min(2^n, 3600)` s after the n-th failure) until
//! `max_retries` is used up; then the message is **dead**: kept with its last error, listable,
//! and replayable.
//!
//! This crate holds the rules and nothing else: the state machine ([`machine`]), argument
//! validation ([`validate`]), the error codes ([`Error`]) and the operations ([`Engine`]) over a
//! [`Store`]. It reads no clock (every operation takes the binding's [`Clock`], which the store
//! calls once it holds its write lock), draws no random numbers (lease tokens and jitter samples
//! come from the caller) and does no I/O. [`MemoryStore`] is the reference store; the other stores
//! live in their own crates (`deadletter-sqlite`, `deadletter-postgres`), and the IndexedDB store is
//! JavaScript in the npm package, which asks the WebAssembly build of the [`engine`]'s requests,
//! steps and plans what to write. What they share about storage (the claim lane of a message and
//! its ordering group, the checks on a message or a queue's row read back, the schema-version
//! decision, the upgrade of deadletter 0.1.0's messages) is decided once, in [`storage`]; the
//! shared cases every store must pass are run by the module `conformance` (feature
//! `conformance`), one test per case.
//!
//! ## Decided under the lock
//! A write decides with a [`Context`]: the instant and the queue's stored settings
//! ([`QueueSettings`]: backoff, `max_retries`, lease, expiry, pause), both read inside the store's
//! transaction once it holds the write lock. So a call that waited for another process's lock
//! hands out a lease valid for its full length from the moment it returns, and every process
//! applies the same stored settings. Arguments are checked before the store is called.
//!
//! ## Many messages at once: filters, pages, bulk actions
//! `list` and the bulk actions (`replay_all`, `delete_all`, `retry_now_all`, `purge`) share one
//! set of filters ([`FilterArgs`]; [`Filter::matches`] is their definition), applied by the engine
//! to the id-ordered pages of [`Store::list`], so a store only pages by queue and status. A
//! filtered `list` examines at most [`SCAN_BUDGET`] messages per call and says where to go on
//! ([`Page::next_after_id`]); a bulk action walks the queue in batches of [`BATCH`], each its own
//! write transaction that checks every message again, and a dry run gives the exact count it
//! would act on without writing.
//!
//! ## Moving messages to another queue
//! [`Engine::move_message`] (`move` in the bindings) and [`Engine::move_all`] (a bulk action over
//! the same filters, [`MoveAllArgs`]) send pending and dead messages to another queue with their
//! id, history and counters; [`Message::moved_from`] says which queue they left. Within a queue
//! at most one message carries an idempotency key, so a message whose key the target holds
//! stays: `move` is a conflict ([`Conflict::KeyTaken`], reason `key_taken`), `move_all` skips it
//! and does not count it (its dry run asks the store which keys the target holds,
//! [`Store::keys_taken`]). The write is [`Store::move_many`]: in one transaction the message
//! changes queue, and a grouped pending one leaves its group's order in the old queue and joins
//! the end of its group in the new one.
//!
//! ## One trait for synchronous and asynchronous stores
//! [`Store`] methods return futures. SQLite answers synchronously, so its futures are ready at
//! once and the Python binding drives them with `pollster::block_on`; PostgreSQL's too. Because
//! the transitions are pure step functions passed into the store, each store runs read -> step ->
//! write inside its own transaction, and every rule exists once, in [`Engine`] and [`machine`]
//! (rather than twin sync/async traits with duplicated bodies). A caller without a [`Store`] uses
//! the same halves the engine is made of ([`engine`]: each operation's checked request, its step
//! on one message, the plan of a claim over lanes): so does the IndexedDB store, whose JavaScript
//! drives the transactions.
//!
//! ## Example
//! ```
//! use deadletter::{Arg, Call, Engine, Item, Limits, MemoryStore, Status};
//!
//! let db = Engine::new(MemoryStore::new(), Limits::default());
//! let now = 1_767_225_600_000; // 2026-01-01T00:00:00Z in ms: the binding's clock
//! let clock = move || Ok(now);
//! let later = move || Ok(now + 2_000);
//! // The handle has no backoff of its own: the queue's stored one, else min(2^n, 3600) s.
//! let call = |clock| Call { clock, backoff: None, sample: 0.0 };
//! pollster::block_on(async {
//!     let job = Item { payload: r#"{"to":"alice"}"#.into(), max_retries: Arg::Int(2), ..Item::default() };
//!     let m = db.enqueue("emails".into(), &job, &clock).await?;
//!     let token = || "token-1".to_owned();
//!     let c = db.claim("emails".into(), Arg::Null, token, &call(&clock)).await?.value.unwrap();
//!     let (error, no) = ("SMTP timeout", Arg::Null); // no retryable, no retry_in: the defaults
//!     let f = db.fail("emails".into(), c.id.into(), error.into(), "token-1".into(), no.clone(), no.clone(), &call(&clock)).await?;
//!     assert_eq!((f.value.status, f.value.retry_after), (Status::Pending, Some(now + 2_000)));
//!     let c = db.claim("emails".into(), Arg::Null, || "token-2".into(), &call(&later)).await?.value.unwrap();
//!     let dead = db.fail("emails".into(), c.id.into(), error.into(), "token-2".into(), no.clone(), no, &call(&later)).await?;
//!     assert_eq!(dead.value.status, Status::Dead);
//!     assert_eq!(dead.dead.len(), 1); // what the dead-letter callbacks are told
//!     let back = db.replay("emails".into(), m.id.into(), Arg::Null, &later).await?;
//!     assert_eq!((back.status, back.retry_count, back.errors.len()), (Status::Pending, 0, 2));
//!     Ok::<_, deadletter::Error>(())
//! })?;
//! # Ok::<_, deadletter::Error>(())
//! ```

mod arg;
pub mod backoff;
pub mod engine;
mod error;
pub mod machine;
mod memory;
mod message;
mod settings;
pub mod shown;
pub mod storage;
mod store;
pub mod validate;
pub mod worker;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use arg::Arg;
pub use backoff::{Backoff, Jitter};
pub use engine::{
    Action, BATCH, Batches, BulkArgs, Call, ClaimArgs, Claiming, Engine, EnqueueArgs, EnqueueItem,
    ExtendArgs, FailArgs, Filter, FilterArgs, Item, LaneClaim, ListArgs, MessageArgs, MoveAllArgs,
    MoveArgs, Outcome, Page, PurgeArgs, ReplayArgs, SCAN_BUDGET, Selection, Stats, SucceedArgs,
    Tails, Write, backoff,
};
pub use error::{CODES, Conflict, Error, FieldError, Quoted, Result};
pub use machine::Moment;
pub use memory::MemoryStore;
pub use message::{FailedAttempt, Id, Message, Millis, NewMessage, Status};
pub use settings::{
    Clock, Context, OnExpiry, QueueRow, QueueSettings, SettingsArgs, pause_step, row_write,
};
pub use store::{Claimed, Counts, ListQuery, Store, apply_step, count};
pub use validate::Limits;
