//! [`PostgresStore`]: the [`Store`] over one PostgreSQL schema.
//!
//! It is long (about 620 lines) because it is the `Store` trait's one impl and the transactions
//! its methods run, kept together as `stores/sqlite/src/store.rs` keeps SQLite's.

use std::collections::HashMap;

use deadletter::storage::{self, Position};
use deadletter::{
    Claimed, Claiming, Clock, Context, Counts, EnqueueArgs, Error, FieldError, Id, ListQuery,
    Message, Millis, QueueRow, Result, Store, apply_step,
};

use crate::moves;
use crate::options::Options;
use crate::pool::{self, Conn, Connector, Sessions, db_error};
use crate::row::{self, Place};
use crate::schema;
use crate::sql::Sql;
use crate::write::{self, context, groups_changed, lock_names, put, unblock_next};

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

    /// Takes out the pending messages of `queue` among `candidates` (their groups already locked)
    /// whose expiry came at the claim's instant, skipping those another transaction holds, in
    /// expiry order, as `claim` says (dead, or deleted); counts them in the queue's row; returns
    /// them as written (or as they were, when deleted).
    fn sweep(
        &self,
        conn: &mut Conn,
        queue: &str,
        claim: &Claiming,
        candidates: &[(Id, Option<String>)],
    ) -> Result<Vec<Message>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let now = claim.now;
        let ids: Vec<Id> = candidates.iter().map(|(id, _)| *id).collect();
        let statement = conn.prepare(&self.sql.expiring_locked)?;
        let rows = conn
            .client
            .query(&statement, &[&ids, &now])
            .map_err(db_error)?;
        let mut swept = Vec::with_capacity(rows.len());
        for before in rows.iter().map(row::read_stored) {
            let before = before?;
            if let Some(dead) = claim.sweep(before.0.clone())? {
                put(conn, &self.sql, &before, &dead, now)?;
                swept.push(dead);
            } else {
                let statement = conn.prepare(&self.sql.delete)?;
                conn.client
                    .execute(&statement, &[&vec![before.0.id]])
                    .map_err(db_error)?;
                if let Some(group) = &before.0.group {
                    unblock_next(conn, &self.sql, queue, group)?;
                }
                swept.push(before.0);
            }
        }
        if !swept.is_empty() {
            let n = limit(swept.len())?;
            let (dead, discarded) = claim.expiry_counts(n);
            let statement = conn.prepare(&self.sql.count_expiry)?;
            conn.client
                .execute(&statement, &[&queue, &dead, &discarded])
                .map_err(db_error)?;
        }
        Ok(swept)
    }

    /// The messages of `queue` among `ids`, locked, keyed by id, with their `blocked` flags.
    pub(crate) fn lock_many(
        &self,
        conn: &mut Conn,
        queue: &str,
        ids: &[Id],
    ) -> Result<HashMap<Id, (Message, bool)>> {
        let statement = conn.prepare(&self.sql.many_for_update)?;
        let rows = conn
            .client
            .query(&statement, &[&queue, &ids])
            .map_err(db_error)?;
        rows.iter()
            .map(|r| row::read_stored(r).map(|m| (m.0.id, m)))
            .collect()
    }
}

fn limit(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(Error::store)
}

/// Where each new message of a batch goes, in order: a grouped one behind its group's tail (read
/// once per group, then the batch's own previous member), blocked unless the group had none.
fn places(conn: &mut Conn, sql: &Sql, templates: &[Message], now: Millis) -> Result<Vec<Place>> {
    let mut tails: HashMap<&str, Option<Position>> = HashMap::new();
    let mut places = Vec::with_capacity(templates.len());
    for message in templates {
        let Some(group) = message.group.as_deref() else {
            places.push(Place {
                head: true,
                group_at: None,
            });
            continue;
        };
        let tail = match tails.get(group) {
            Some(tail) => *tail,
            None => write::tail(conn, sql, &message.queue, group)?,
        };
        let at = storage::group_at(now, tail, None);
        places.push(Place {
            head: tail.is_none(),
            group_at: Some(at),
        });
        // The batch's next member of the group goes behind this one, whose id (not assigned
        // yet) is greater than every stored one.
        tails.insert(group, Some(Position { at, id: Id::MAX }));
    }
    Ok(places)
}

impl Store for PostgresStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        self.sessions.write_with(&self.sql.begin, |conn| {
            // The locks first, then the clock: a call that waited for another's group or keys
            // dates its messages (delays, expiries) from when it got them. One key alone
            // cannot close a cycle of waits: it is not locked (its unique index decides).
            let (keys, groups) = args.names();
            let keys = if keys.len() > 1 { keys } else { Vec::new() };
            lock_names(conn, &args.queue, &keys, &groups)?;
            let ctx = context(conn, &self.sql, &args.queue, clock)?;
            // The store only assigns ids; every other field is the core's `with_id`.
            let templates: Vec<Message> = args
                .messages(&ctx)?
                .into_iter()
                .map(|m| m.with_id(0))
                .collect();
            if templates.iter().all(|m| m.idempotency_key.is_none()) {
                // One statement for the whole batch: no key to look up.
                let places = places(conn, &self.sql, &templates, ctx.now)?;
                let ids = row::insert_many(conn, &self.sql.insert_many, &templates, &places)?;
                let inserted = templates.iter().zip(ids);
                return Ok(inserted
                    .map(|(m, id)| Message { id, ..m.clone() })
                    .collect());
            }
            let mut out = Vec::with_capacity(templates.len());
            for template in &templates {
                if let Some(key) = &template.idempotency_key {
                    // Looked up first, so that a duplicate consumes no identity value.
                    if let Some(found) = self.by_key(conn, &template.queue, key)? {
                        out.push(found);
                        continue;
                    }
                }
                let place = places(conn, &self.sql, std::slice::from_ref(template), ctx.now)?;
                let inserted =
                    if let Some(id) = row::insert(conn, &self.sql.insert, template, place[0])? {
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
        clock: Clock<'_>,
        step: impl FnOnce(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        self.sessions.write_with(&self.sql.begin, |conn| {
            // The message's row lock (and its queue's row, in the same round trip), then the
            // clock: a call that waited for another's lock decides with the instant it got it.
            let statement = conn.prepare(&self.sql.get_for_update_with_queue)?;
            let found = conn
                .client
                .query_opt(&statement, &[&id, &queue])
                .map_err(db_error)?;
            let (before, row) = match &found {
                Some(r) => (
                    Some(row::read_stored(r)?),
                    row::queue(r, row::MESSAGE_COLUMNS, queue)?,
                ),
                None => (None, QueueRow::default()),
            };
            let ctx = Context::new(clock()?, row)?;
            let message = before.as_ref().map(|(m, _)| m.clone());
            let after = apply_step(message, queue, id, |m| step(m, &ctx))?;
            if let Some(before) = &before {
                let groups = groups_changed([(&before.0, Some(&after))]);
                lock_names(conn, queue, &[], &groups)?;
                put(conn, &self.sql, before, &after, ctx.now)?;
            }
            Ok(after)
        })
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        mut tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        self.sessions.write_with(&self.sql.claim_begin, |conn| {
            // The clock, then the queue's row and the messages whose expiry came, unlocked
            // (their groups are locked first), in one round trip.
            let now = clock()?;
            let statement = conn.prepare(&self.sql.claim_context)?;
            let found = conn
                .client
                .query_one(&statement, &[&queue, &now])
                .map_err(db_error)?;
            let ctx = Context::new(now, row::queue(&found, 0, queue)?)?;
            let ids: Option<Vec<Id>> = found.try_get(row::QUEUE_FIELDS).map_err(db_error)?;
            let names: Option<Vec<Option<String>>> =
                found.try_get(row::QUEUE_FIELDS + 1).map_err(db_error)?;
            let candidates: Vec<(Id, Option<String>)> = ids
                .unwrap_or_default()
                .into_iter()
                .zip(names.unwrap_or_default())
                .collect();
            let Some(claim) = start(&ctx) else {
                return Ok(Claimed::default());
            };
            let now = claim.now;
            // The leases that ran out, locked (the statement also moves the messages whose
            // backoff is over into the ready index: no field changes).
            let statement = conn.prepare(&self.sql.expired)?;
            let rows = conn
                .client
                .query(&statement, &[&queue, &now])
                .map_err(db_error)?;
            let overdue = rows
                .iter()
                .map(row::read_stored)
                .collect::<Result<Vec<_>>>()?;
            let expired: Vec<Message> = overdue
                .iter()
                .enumerate()
                .map(|(index, (m, _))| claim.expire(m.clone(), index))
                .collect::<Result<_>>()?;
            let mut groups =
                groups_changed(overdue.iter().map(|(m, _)| m).zip(expired.iter().map(Some)));
            groups.extend(candidates.iter().filter_map(|(_, g)| g.as_deref()));
            groups.sort_unstable();
            groups.dedup();
            lock_names(conn, queue, &[], &groups)?;
            for (before, after) in overdue.iter().zip(&expired) {
                put(conn, &self.sql, before, after, now)?;
            }
            let swept = self.sweep(conn, queue, &claim, &candidates)?;
            let mut taken = Vec::new();
            if claim.n > 0 {
                // A message whose lease just expired is not taken in the same call (it may be
                // due again at once under a backoff of 0), as in the reference store.
                let statement = conn.prepare(&self.sql.due)?;
                let room = limit(claim.n + expired.len())?;
                let rows = conn
                    .client
                    .query(&statement, &[&queue, &now, &room])
                    .map_err(db_error)?;
                for before in rows.iter().map(row::read) {
                    let before = before?;
                    if taken.len() == claim.n || expired.iter().any(|e| e.id == before.id) {
                        continue;
                    }
                    let after = claim.take(before.clone(), tokens())?;
                    let place = Place {
                        head: true,
                        group_at: None,
                    };
                    row::write(conn, &self.sql.write, &before, &after, place)?;
                    taken.push(after);
                }
            }
            Ok(Claimed {
                expired,
                swept,
                taken,
            })
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

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.sessions.write_with(&self.sql.begin, |conn| {
            let mut found = self.lock_many(conn, queue, ids)?;
            let ctx = context(conn, &self.sql, queue, clock)?;
            let mut written = Vec::new();
            for id in ids {
                let Some(before) = found.remove(id) else {
                    continue;
                };
                if let Some(after) = step(before.0.clone(), &ctx)? {
                    written.push((before, after));
                }
            }
            let groups = groups_changed(
                written
                    .iter()
                    .map(|(before, after)| (&before.0, Some(after))),
            );
            lock_names(conn, queue, &[], &groups)?;
            for (before, after) in &written {
                put(conn, &self.sql, before, after, ctx.now)?;
            }
            Ok(written.into_iter().map(|(_, after)| after).collect())
        })
    }

    async fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        self.sessions.write_with(&self.sql.begin, |conn| {
            self.move_in(conn, queue, ids, to_queue, clock, step)
        })
    }

    async fn keys_taken(&self, queue: &str, keys: &[&str]) -> Result<Vec<String>> {
        self.sessions
            .read(|conn| moves::keys_taken(conn, &self.sql, queue, keys))
    }

    async fn delete_many(
        &self,
        queue: &str,
        ids: &[Id],
        mut check: impl FnMut(&Message) -> Result<bool>,
    ) -> Result<Vec<Message>> {
        self.sessions.write_with(&self.sql.begin, |conn| {
            let mut found = self.lock_many(conn, queue, ids)?;
            let mut doomed = Vec::new();
            for id in ids {
                if let Some((message, _)) = found.remove(id)
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
                paused: row.try_get(9).map_err(db_error)?,
                expired_dead: n(10)?,
                expired_discarded: n(11)?,
            })
        })
    }

    async fn queues(&self) -> Result<Vec<String>> {
        self.sessions.read(|conn| {
            let mut names = std::collections::BTreeSet::new();
            for sql in [&self.sql.queues, &self.sql.queue_names] {
                let statement = conn.prepare(sql)?;
                let rows = conn.client.query(&statement, &[]).map_err(db_error)?;
                for r in &rows {
                    names.insert(r.try_get::<_, String>(0).map_err(db_error)?);
                }
            }
            Ok(names.into_iter().collect())
        })
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        self.sessions
            .read(|conn| write::queue_row(conn, &self.sql, queue))
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        self.sessions.write(|conn| {
            write::lock_queue(conn, queue)?;
            let stored = write::queue_row(conn, &self.sql, queue)?;
            let next = step(stored)?;
            if next != stored {
                row::put_queue(conn, &self.sql.put_queue, queue, &next)?;
            }
            Ok(next)
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
