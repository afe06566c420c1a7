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
//! [`Store`]. It reads no clock (every operation takes `now`), draws no random numbers (lease tokens
//! come from the caller) and does no I/O. [`MemoryStore`] is the reference store; the SQLite store
//! lives with the Python binding and the IndexedDB store with the WebAssembly binding.
//!
//! ## One trait for synchronous and asynchronous stores
//! [`Store`] methods return futures. SQLite answers synchronously, so its futures are ready at
//! once and the Python binding drives them with `pollster::block_on`; IndexedDB answers on the
//! event loop, so the WebAssembly binding awaits them. Because the transitions are pure step
//! functions passed into the store, each store runs read -> step -> write inside its own
//! transaction, and every rule exists once, in [`Engine`] and [`machine`], for both kinds
//! (rather than twin sync/async traits with duplicated bodies).
//!
//! ## Example
//! ```
//! use deadletter::{Arg, Engine, Limits, MemoryStore, Status};
//!
//! let db = Engine::new(MemoryStore::new(), Limits::default());
//! pollster::block_on(async {
//!     let now = 1_767_225_600_000; // 2026-01-01T00:00:00Z in ms
//!     let m = db.enqueue("emails".into(), r#"{"to":"alice"}"#.into(), Arg::Int(2), now).await?;
//!     let c = db.claim("emails".into(), Arg::Null, "token-1".into(), now).await?.unwrap();
//!     let f = db.fail("emails".into(), c.id.into(), "SMTP timeout".into(), "token-1".into(), Arg::Null, now).await?;
//!     assert_eq!((f.status, f.retry_after), (Status::Pending, Some(now + 2_000)));
//!     let c = db.claim("emails".into(), Arg::Null, "token-2".into(), now + 2_000).await?.unwrap();
//!     let dead = db.fail("emails".into(), c.id.into(), "SMTP timeout".into(), Arg::Null, Arg::Null, now + 2_000).await?;
//!     assert_eq!(dead.status, Status::Dead);
//!     let back = db.replay("emails".into(), m.id.into(), now + 3_000).await?;
//!     assert_eq!((back.status, back.retry_count), (Status::Pending, 0));
//!     Ok::<_, deadletter::Error>(())
//! })?;
//! # Ok::<_, deadletter::Error>(())
//! ```

mod arg;
mod engine;
mod error;
pub mod machine;
mod memory;
mod message;
mod store;
pub mod validate;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use arg::Arg;
pub use engine::{Engine, backoff};
pub use error::{CODES, Conflict, Error, FieldError, Result};
pub use memory::MemoryStore;
pub use message::{Id, Message, Millis, NewMessage, Status};
pub use store::{ListQuery, Store, apply_step};
pub use validate::Limits;
