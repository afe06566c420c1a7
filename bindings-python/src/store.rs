//! [`AnyStore`]: the store a `Database` runs on, SQLite or PostgreSQL, chosen by `open` from its
//! path or URL. One [`Engine`](deadletter::Engine) type serves both: every [`Store`] method is
//! passed on to the store inside, whose futures are ready at once. Each store keeps its own fork
//! rules (a store opened before a `fork()` fails every call in the child); this file only picks.

use deadletter::{
    Claimed, Claiming, Clock, Context, Counts, EnqueueArgs, Id, ListQuery, Message, Millis,
    QueueRow, Result, Store,
};
use deadletter_postgres::PostgresStore;
use deadletter_sqlite::SqliteStore;

/// The scheme prefixes that make `open`'s first argument a PostgreSQL URL (libpq's two).
pub const POSTGRES_SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// `path` (a str given to `open`) with its scheme in lower case when it is a PostgreSQL URL
/// (schemes are case-insensitive, RFC 3986; the driver reads only lower case), else `None`: a
/// SQLite path. (`POSTGRESQL://user:pw@host` was a file name, quoted with its password in the
/// error that it could not be opened.)
pub fn postgres_url(path: &str) -> Option<String> {
    POSTGRES_SCHEMES.iter().find_map(|scheme| {
        let head = path.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| format!("{scheme}{}", &path[scheme.len()..]))
    })
}

/// A SQLite or a PostgreSQL store.
#[derive(Debug)]
pub enum AnyStore {
    /// A SQLite file or `:memory:`.
    Sqlite(SqliteStore),
    /// A schema of a PostgreSQL database (boxed: its pool and statements are large).
    Postgres(Box<PostgresStore>),
}

impl AnyStore {
    /// Closes the store; later calls fail with a store error. Closing twice is fine. In a child
    /// made by `fork()`, a store error that leaves the parent's connections alone.
    pub fn close(&self) -> Result<()> {
        match self {
            Self::Sqlite(store) => store.close(),
            Self::Postgres(store) => store.close(),
        }
    }

    /// Whether [`AnyStore::close`] was called; always true in a forked child.
    pub fn is_closed(&self) -> bool {
        match self {
            Self::Sqlite(store) => store.is_closed(),
            Self::Postgres(store) => store.is_closed(),
        }
    }
}

/// `store.$call.await` on whichever store this is.
macro_rules! delegate {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            AnyStore::Sqlite($store) => $call.await,
            AnyStore::Postgres($store) => $call.await,
        }
    };
}

impl Store for AnyStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        delegate!(self, s => s.insert(args, clock))
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        delegate!(self, s => s.get(queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        delegate!(self, s => s.update(queue, id, clock, step))
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        delegate!(self, s => s.claim(queue, clock, start, tokens))
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        delegate!(self, s => s.list(query))
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        delegate!(self, s => s.update_many(queue, ids, clock, step))
    }

    async fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        delegate!(self, s => s.move_many(queue, ids, to_queue, clock, step))
    }

    async fn keys_taken(&self, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
        delegate!(self, s => s.keys_taken(queue, keys))
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        delegate!(self, s => s.delete_many(queue, ids, check))
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        delegate!(self, s => s.counts(queue, now))
    }

    async fn queues(&self) -> Result<Vec<String>> {
        delegate!(self, s => s.queues())
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        delegate!(self, s => s.next_due_at(queue, now))
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        delegate!(self, s => s.queue_row(queue))
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        delegate!(self, s => s.write_queue_row(queue, step))
    }
}
