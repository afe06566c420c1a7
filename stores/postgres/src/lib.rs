//! # deadletter-postgres
//!
//! The PostgreSQL [`deadletter::Store`]: the same queue, rules and conformance cases as the
//! SQLite and IndexedDB stores, on a database that many worker processes on many machines share.
//!
//! It selects and persists; it decides nothing. Every write is a step function from
//! `deadletter::machine` that the engine hands in, run inside one transaction, so a failing step,
//! a lost connection, a lock timeout or a server restart leaves nothing half-written and reaches
//! the caller as `Error::Store`. The next call takes another session (a new connection when the
//! old one died).
//!
//! **Claim** is one transaction: the queue's row (its settings: paused, lease, backoff, expiry),
//! then reads `FOR UPDATE SKIP LOCKED`: the first marks ready the messages whose backoff is over
//! (a storage-only `ready` column moves them from the index of waiting messages, by
//! `retry_after`, into the ready index, once each) and selects the expired leases; the pending
//! messages whose expiry came are taken out; the last read takes the head of the ready index
//! (in claim order: by id, enqueue order). It never walks the messages still in backoff, however many
//! wait ahead of the due ones, nor the members of ordering groups waiting behind their heads (a
//! storage-only `blocked` column keeps them out of every claim index). Workers skip the rows
//! others are claiming instead of waiting for them, so N workers do not serialize on each other.
//! Every other transition locks only its own row (`SELECT ... FOR UPDATE` by id), and a group's
//! tail and next member are read under a transaction-level advisory lock on the group
//! (`write.rs`, which also says the order locks are taken in). Every write takes the table's
//! `ROW EXCLUSIVE` lock first and its row and advisory locks next, then reads the caller's clock:
//! a call that waited for a lock decides with the instant it got it (issue 23, item 2). A claim,
//! whose reads wait for no row, reads the clock first and sends its reads with `BEGIN`, which
//! takes the table's lock without waiting (`NOWAIT`); when another session holds it, the claim
//! waits for it as the other writes do and reads the clock again (issue 24).
//! Timestamps are the core's UTC milliseconds (`bigint`); ids come from an
//! identity column; the schema (default `deadletter`) is created and versioned by the store
//! (table `deadletter_schema`), and a schema of another application or of a newer deadletter is
//! refused. Queue names and payloads are only ever bound parameters. The DDL is in `schema.rs`,
//! every statement in `sql.rs`, the row mapping in `row.rs`. What it shares with the other
//! stores (a message's claim lane, the checks on a row read back, the schema-version decision)
//! is the core's [`deadletter::storage`].
//!
//! **Forks**: a store belongs to the process that opened it. In a child made by `fork()`, every
//! call of a store opened before the fork fails with a store error and nothing is sent on the
//! parent's sessions, not even when the store is closed or dropped (`fork.rs`).
//!
//! ## Client and pool
//! Sessions are `tokio-postgres` clients (sfackler's `rust-postgres`, the maintained client)
//! behind a blocking interface of our own ([`Client`], in `client.rs`: a current-thread runtime
//! per session, run on the caller's thread inside each call, as the synchronous `postgres` crate
//! does), for one thing that crate cannot do: pipelining. A write sends `BEGIN` with its first
//! statement and `COMMIT` with its last write, and claim sends its reads with its `BEGIN`: an
//! enqueue of one message costs 2 round trips, an ack or a failure 2, a claim of one 2 (they
//! were 4, 4 and 6; `tests/round_trips.rs` holds them to it). Each of those waits for the answer
//! before: the clock is read once the locks are held, and the core decides what is written from
//! what was read. An enqueue without idempotency keys or groups, and an ack, failure or heartbeat
//! of a message the store wrote last (its claim), skip that read (issue 24): 1 round trip. The
//! store remembers the queue rows and messages its calls read and wrote (`cache.rs`); the clock
//! is read first, the core decides on what is remembered, and `BEGIN` (the table's lock,
//! `NOWAIT`), the write and `COMMIT` go together, the write guarded by what it was decided on
//! (the queue's settings, the message row's version) and waiting for no lock. When the guard
//! refuses (another process changed the row), a lock is held, or nothing is remembered, the call
//! takes the 2 round trips. A claim stays at 2: it takes the head of the queue it reads. Sessions are pooled by `pool.rs` (a mutex, a condition variable, no lasting
//! thread: r2d2, used at first, made forked children crash, see `pool::Sessions`). The store
//! trait's futures are then ready when polled, as the SQLite store's are, so the Python binding
//! drives both with `pollster::block_on` and no async runtime is exposed to it;
//! `deadpool-postgres` would have needed one. Each session keeps its prepared statements. TLS is
//! not built in yet: a URL that requires it fails to connect with a store error.
//!
//! What it does not do: decide any state (the core does), keep a clock of its own (it calls the
//! caller's once its locks are held), or retry a write whose connection died mid-transaction (the caller gets `Error::Store`; the transaction either
//! committed whole or not at all).
//!
//! ## Example
//! ```no_run
//! use deadletter::{Arg, Engine, Item, Limits};
//! use deadletter_postgres::{Options, PostgresStore};
//!
//! let store = PostgresStore::open("postgresql://app:secret@db.internal:5432/app", &Options::default())?;
//! let db = Engine::new(store, Limits::default());
//! let clock = || Ok(1_767_225_600_000); // the caller's clock, UTC ms, read under the locks
//! let job = Item { payload: r#"{"to":"alice"}"#.into(), ..Item::default() };
//! let m = pollster::block_on(db.enqueue("emails".into(), &job, &clock))?;
//! assert_eq!(m.status.as_str(), "pending");
//! # Ok::<_, deadletter::Error>(())
//! ```

mod cache;
mod claim;
mod client;
mod fork;
mod insert;
mod moves;
mod options;
mod pool;
mod row;
mod schema;
mod sql;
mod store;
mod write;

pub use client::Client;
pub use options::{MAX_CONNECTIONS, MAX_TIMEOUT, MAX_TIMEOUT_MS, Options};
pub use schema::{
    MAX_SCHEMA_BYTES, SCHEMA_VERSION, ddl, ddl_v1, quote_identifier, upgrade_v2, upgrade_v3,
    upgrade_v4, upgrade_v5, upgrade_v6,
};
pub use sql::{CLAIM_BEGIN, COLUMNS, Sql};
pub use store::PostgresStore;
