//! [`PostgresStore`]: the [`Store`] over one PostgreSQL schema.

use std::collections::HashMap;

use deadletter::{
    Claimed, Counts, Error, FieldError, Filter, Id, ListQuery, Message, Millis, NewMessage, Result,
    Store, apply_step,
};

use crate::options::Options;
use crate::pool::{self, Conn, Connector, Sessions, db_error};
use crate::row;
use crate::schema;
use crate::sql::{self, Sql};

/// Locks the idempotency keys of a batch of one queue until its transaction ends, every batch
/// in one order (by the keys' hashes), when it holds more than one: each key is inserted in
/// item order (so that ids ascend in item order), and two batches holding the same new keys in
/// different orders would each wait for a key the other inserted ("deadlock detected"). One key
/// alone cannot close such a cycle. Transaction-level advisory locks, on 64-bit hashes of the
/// queue and key: a collision only makes two batches wait for each other in turn.
fn lock_keys(conn: &mut Conn, templates: &[Message]) -> Result<()> {
    const LOCK_KEYS: &str = "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT \
        hashtextextended(quote_literal($1::text) || quote_literal(k), 0) AS h \
        FROM unnest($2::text[]) AS k) AS keys ORDER BY h";
    let keys: Vec<&str> = templates
        .iter()
        .filter_map(|m| m.idempotency_key.as_deref())
        .collect();
    let (Some(first), true) = (templates.first(), keys.len() > 1) else {
        return Ok(());
    };
    let statement = conn.prepare(LOCK_KEYS)?;
    conn.client
        .execute(&statement, &[&first.queue, &keys])
        .map(drop)
        .map_err(db_error)
}

/// A [`Store`] on a PostgreSQL database, shared by any number of processes and machines.
///
/// Each call takes a session from the pool and, for writes, runs one transaction on it; its
/// future is ready when polled (drive it with `pollster::block_on`, as the SQLite store).
pub struct PostgresStore {
    sessions: Sessions,
    sql: Sql,
    schema: String,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("PostgresStore")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgresql://user:password@host:5432/db?...`, or
    /// libpq's `key=value` form), creates the schema `options.schema` when it is missing or empty
    /// and checks its version (a schema of version 1 is upgraded to [`crate::SCHEMA_VERSION`] in
    /// one transaction, see [`crate::upgrade_v2`]).
    ///
    /// Errors: `validation_failed` listing every rejected argument: a URL that does not parse
    /// (field `url`, `invalid`; the message never quotes the URL, so no password shows), a bad
    /// schema name (field `schema`: `empty`, `too_long` past 63 bytes, `invalid` with NUL),
    /// `max_connections` outside 1..=1000, a timeout outside 1 ms..=1 h (fields
    /// `connect_timeout`, `lock_timeout`; all `out_of_range`); `store` when the server cannot be
    /// reached, the schema belongs to another application (it holds tables but no
    /// `deadletter_schema`) or was written by a newer deadletter. `sslmode=require` is refused
    /// for now (no TLS).
    pub fn open(url: &str, options: &Options) -> Result<Self> {
        let mut rejected = options.rejected();
        // The parser's messages name the option at fault, never its value, so no password
        // leaks into them.
        let config = url.parse::<tokio_postgres::Config>().map_err(|err| {
            rejected.push(FieldError::new(
                "url",
                "invalid",
                format!("not a PostgreSQL URL: {}", pool::ConnectError(err)),
            ));
        });
        let (Ok(mut config), Ok(quoted), true) = (
            config,
            schema::quote_identifier(&options.schema),
            rejected.is_empty(),
        ) else {
            return Err(Error::Validation(rejected));
        };
        if config.get_application_name().is_none() {
            config.application_name("deadletter");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        // The URL's `connect_timeout`, when it has one, bounds the login too.
        let login = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(options.connect_timeout);
        let connector = Connector::new(config, options.lock_timeout, login);
        // A refused login or a missing database fails here, with the server's reason.
        let mut first = connector
            .connect()
            .map_err(|err| Error::Store(format!("PostgreSQL: cannot connect: {err}")))?;
        schema::migrate(&mut first.client, &options.schema, &quoted, options.create)?;
        drop(first);
        let sessions = Sessions::new(connector, options.max_connections, options.connect_timeout);
        Ok(Self {
            sessions,
            sql: Sql::new(&quoted),
            schema: options.schema.clone(),
        })
    }

    /// Closes the store: idle sessions now, busy ones when their call returns; every later call
    /// fails with a store error. Closing twice is fine. In a child made by `fork()` (see
    /// `fork.rs`), a store error that leaves the parent's sessions alone.
    pub fn close(&self) -> Result<()> {
        self.sessions.close()
    }

    /// Whether [`PostgresStore::close`] was called; always true in a child made by `fork()`.
    pub fn is_closed(&self) -> bool {
        self.sessions.is_closed()
    }

    /// The schema it was opened on.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Runs `f` on a pooled session, outside any transaction (for tests and tools: `EXPLAIN`,
    /// bulk loads). Statements must qualify tables with [`PostgresStore::qualified`].
    pub fn with_client<T>(&self, f: impl FnMut(&mut postgres::Client) -> Result<T>) -> Result<T> {
        let mut f = f;
        self.sessions.read(|conn| f(&mut conn.client))
    }

    /// `table` of the store's schema, quoted for SQL (`"schema".table`).
    ///
    /// # Panics
    /// Never: the schema name was checked by [`PostgresStore::open`].
    pub fn qualified(&self, table: &str) -> String {
        let schema = schema::quote_identifier(&self.schema).expect("checked at open");
        format!("{schema}.{table}")
    }

    /// The statements this store runs (for `EXPLAIN` in tests and reports).
    pub fn statements(&self) -> &Sql {
        &self.sql
    }

    fn one(conn: &mut Conn, sql: &str, queue: &str, id: Id) -> Result<Option<Message>> {
        let statement = conn.prepare(sql)?;
        let row = conn
            .client
            .query_opt(&statement, &[&id, &queue])
            .map_err(db_error)?;
        row.as_ref().map(row::read).transpose()
    }

    fn by_key(&self, conn: &mut Conn, queue: &str, key: &str) -> Result<Option<Message>> {
        let statement = conn.prepare(&self.sql.find_key)?;
        let row = conn
            .client
            .query_opt(&statement, &[&queue, &key])
            .map_err(db_error)?;
        Ok(row
            .as_ref()
            .map(row::read)
            .transpose()?
            .map(|found| Message {
                deduplicated: true,
                ..found
            }))
    }

    /// The messages of `queue` among `ids`, locked, keyed by id.
    fn lock_many(&self, conn: &mut Conn, queue: &str, ids: &[Id]) -> Result<HashMap<Id, Message>> {
        let statement = conn.prepare(&self.sql.many_for_update)?;
        let rows = conn
            .client
            .query(&statement, &[&queue, &ids])
            .map_err(db_error)?;
        rows.iter()
            .map(|r| row::read(r).map(|m| (m.id, m)))
            .collect()
    }
}

fn limit(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(Error::store)
}

impl Store for PostgresStore {
    async fn insert(&self, messages: Vec<NewMessage>) -> Result<Vec<Message>> {
        // The store only assigns ids; every other field is the core's `with_id`.
        let templates: Vec<Message> = messages.into_iter().map(|m| m.with_id(0)).collect();
        self.sessions.write(|conn| {
            if templates.iter().all(|m| m.idempotency_key.is_none()) {
                // One statement for the whole batch: no key to look up.
                let ids = row::insert_many(conn, &self.sql.insert_many, &templates)?;
                let inserted = templates.iter().zip(ids);
                return Ok(inserted
                    .map(|(m, id)| Message { id, ..m.clone() })
                    .collect());
            }
            lock_keys(conn, &templates)?;
            let mut out = Vec::with_capacity(templates.len());
            for template in &templates {
                if let Some(key) = &template.idempotency_key {
                    // Looked up first, so that a duplicate consumes no identity value.
                    if let Some(found) = self.by_key(conn, &template.queue, key)? {
                        out.push(found);
                        continue;
                    }
                }
                let inserted = if let Some(id) = row::insert(conn, &self.sql.insert, template)? {
                    Message {
                        id,
                        ..template.clone()
                    }
                } else {
                    // Another connection inserted the key since the look-up, and committed.
                    let key = template.idempotency_key.as_deref().unwrap_or_default();
                    self.by_key(conn, &template.queue, key)?.ok_or_else(|| {
                        Error::Store("idempotency key conflict on a vanished message".into())
                    })?
                };
                out.push(inserted);
            }
            Ok(out)
        })
    }

    async fn get(&self, queue: &str, id: Id) -> Result<Option<Message>> {
        self.sessions
            .read(|conn| Self::one(conn, &self.sql.get, queue, id))
    }

    async fn update(
        &self,
        queue: &str,
        id: Id,
        step: impl FnOnce(Message) -> Result<Message>,
    ) -> Result<Message> {
        self.sessions.write(|conn| {
            let before = Self::one(conn, &self.sql.get_for_update, queue, id)?;
            let after = apply_step(before.clone(), queue, id, step)?;
            if let Some(before) = &before {
                row::write(conn, &self.sql.write, before, &after)?;
            }
            Ok(after)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        now: Millis,
        limit_n: usize,
        expire: impl FnMut(Message) -> Result<Message>,
        take: impl FnMut(Message) -> Result<Message>,
    ) -> Result<Claimed> {
        self.sessions.write_with(sql::CLAIM_BEGIN, |conn| {
            // Both sets are read before anything is written: a message whose lease expires here
            // is not taken in the same call, as in the reference store. The first statement
            // also moves the messages whose backoff is over into the ready index (no field
            // changes), which the second takes the head of.
            let statement = conn.prepare(&self.sql.expired)?;
            let rows = conn
                .client
                .query(&statement, &[&queue, &now])
                .map_err(db_error)?;
            let overdue = row::read_all(&rows)?;
            let due = if limit_n == 0 {
                Vec::new()
            } else {
                let statement = conn.prepare(&self.sql.due)?;
                let rows = conn
                    .client
                    .query(&statement, &[&queue, &now, &limit(limit_n)?])
                    .map_err(db_error)?;
                row::read_all(&rows)?
            };
            let expired: Vec<Message> =
                overdue.iter().cloned().map(expire).collect::<Result<_>>()?;
            let taken: Vec<Message> = due.iter().cloned().map(take).collect::<Result<_>>()?;
            for (before, after) in overdue.iter().zip(&expired).chain(due.iter().zip(&taken)) {
                row::write(conn, &self.sql.write, before, after)?;
            }
            Ok(Claimed { expired, taken })
        })
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let after = query.after_id.unwrap_or(0);
        let n = limit(query.limit)?;
        self.sessions.read(|conn| {
            let rows = match query.status {
                None => {
                    let statement = conn.prepare(&self.sql.list)?;
                    conn.client.query(&statement, &[&query.queue, &after, &n])
                }
                Some(status) => {
                    let statement = conn.prepare(&self.sql.list_status)?;
                    conn.client
                        .query(&statement, &[&query.queue, &status.as_str(), &after, &n])
                }
            };
            row::read_all(&rows.map_err(db_error)?)
        })
    }

    async fn select(&self, filter: &Filter<'_>, after_id: Id, limit_n: usize) -> Result<Vec<Id>> {
        let n = limit(limit_n)?;
        self.sessions.read(|conn| {
            let statement = conn.prepare(&self.sql.select)?;
            let rows = conn
                .client
                .query(
                    &statement,
                    &[
                        &filter.queue,
                        &filter.status.as_str(),
                        &after_id,
                        &filter.error_contains,
                        &filter.dead_after,
                        &filter.dead_before,
                        &filter.updated_until,
                        &n,
                    ],
                )
                .map_err(db_error)?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(db_error))
                .collect()
        })
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut step: impl FnMut(Message) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.sessions.write(|conn| {
            let mut found = self.lock_many(conn, queue, ids)?;
            let mut written = Vec::new();
            for id in ids {
                let Some(before) = found.remove(id) else {
                    continue;
                };
                if let Some(after) = step(before.clone())? {
                    written.push((before, after));
                }
            }
            for (before, after) in &written {
                row::write(conn, &self.sql.write, before, after)?;
            }
            Ok(written.into_iter().map(|(_, after)| after).collect())
        })
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.sessions.write(|conn| {
            let mut found = self.lock_many(conn, queue, ids)?;
            let mut doomed = Vec::new();
            for id in ids {
                if let Some(message) = found.remove(id)
                    && check(&message)?
                {
                    doomed.push(message);
                }
            }
            if !doomed.is_empty() {
                let doomed_ids: Vec<Id> = doomed.iter().map(|m| m.id).collect();
                let statement = conn.prepare(&self.sql.delete)?;
                conn.client
                    .execute(&statement, &[&doomed_ids])
                    .map_err(db_error)?;
            }
            Ok(doomed)
        })
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        self.sessions.read(|conn| {
            let statement = conn.prepare(&self.sql.counts)?;
            let row = conn
                .client
                .query_one(&statement, &[&queue, &now])
                .map_err(db_error)?;
            let n = |i: usize| -> Result<u64> {
                let value: i64 = row.try_get(i).map_err(db_error)?;
                u64::try_from(value).map_err(Error::store)
            };
            let at = |i: usize| -> Result<Option<Millis>> { row.try_get(i).map_err(db_error) };
            Ok(Counts {
                by_status: [n(0)?, n(1)?, n(2)?, n(3)?],
                expired: n(4)?,
                delayed: n(5)?,
                next_due_at: at(6)?,
                oldest_due_created_at: at(7)?,
                oldest_dead_at: at(8)?,
            })
        })
    }

    async fn queues(&self) -> Result<Vec<String>> {
        self.sessions.read(|conn| {
            let statement = conn.prepare(&self.sql.queues)?;
            let rows = conn.client.query(&statement, &[]).map_err(db_error)?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(db_error))
                .collect()
        })
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        self.sessions.read(|conn| {
            let statement = conn.prepare(&self.sql.next_due_at)?;
            let row = conn
                .client
                .query_one(&statement, &[&queue, &now])
                .map_err(db_error)?;
            row.try_get(0).map_err(db_error)
        })
    }
}
