//! [`PostgresStore`]: the [`Store`] over one PostgreSQL schema.
//!
//! The `Store` trait's one impl and the transactions its methods run; `enqueue` and `claim` keep
//! their bodies in `insert.rs` and `claim.rs`, `move` in `moves.rs`.

use std::collections::HashMap;

use tokio_postgres::types::ToSql;

use deadletter::{
    Claimed, Claiming, Clock, Context, Counts, EnqueueArgs, Error, FieldError, Id, ListQuery,
    Message, Millis, QueueRow, Result, Store, apply_step,
};

use crate::cache::Cache;
use crate::claim::Reads;
use crate::moves;
use crate::options::Options;
use crate::pool::{
    self, Conn, Connector, LOCK_NOT_AVAILABLE, NOT_PREPARED, RELOCK, Sessions, db_error,
};
use crate::row::{self, Place, Settings};
use crate::schema;
use crate::sql::Sql;
use crate::write::{self, context, groups_changed, lock_names, put};

/// A [`Store`] on a PostgreSQL database, shared by any number of processes and machines.
///
/// Each call takes a session from the pool and, for writes, runs one transaction on it; its
/// future is ready when polled (drive it with `pollster::block_on`, as the SQLite store).
pub struct PostgresStore {
    sessions: Sessions,
    sql: Sql,
    schema: String,
    /// The queue rows and messages its calls read and wrote last: guesses that let an enqueue
    /// and an ack go in one round trip, which the database checks (`cache.rs`).
    pub(crate) cache: Cache,
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
            cache: Cache::default(),
        })
    }

    /// Closes the store: idle sessions now, busy ones when their call returns; every later call
    /// fails with a store error. Closing twice is fine. In a child made by `fork()` (see
    /// `fork.rs`), a store error that leaves the parent's sessions alone.
    pub fn close(&self) -> Result<()> {
        self.sessions.close()?;
        self.cache.clear();
        Ok(())
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
    pub fn with_client<T>(&self, f: impl FnMut(&mut crate::Client) -> Result<T>) -> Result<T> {
        let mut f = f;
        self.sessions.read(|conn| f(&mut conn.client))
    }

    /// The round trips to the server of the calls that returned so far: each request, or
    /// pipeline of requests, answered (a statement's first use on a session adds one, its
    /// preparation). For tests that hold the hot paths to their count.
    #[doc(hidden)]
    pub fn round_trips(&self) -> u64 {
        self.sessions.round_trips()
    }

    /// The statements the calls that returned so far sent to the server: each statement with
    /// parameters, and each of a simple query's (`BEGIN`, `LOCK TABLE`, `COMMIT`). For tests
    /// that hold the hot paths to their count (each costs the server more than it executes).
    #[doc(hidden)]
    pub fn statements_sent(&self) -> u64 {
        self.sessions.statements()
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

    /// An enqueue of messages without idempotency keys or groups in one round trip (issue 24),
    /// when this store remembers the queue's row (`cache.rs`): the clock read first, the core's
    /// messages built with that row, then `BEGIN` (the table's lock, `NOWAIT`), the insert and
    /// `COMMIT` sent together; the insert inserts only while the queue's stored settings are the
    /// remembered ones. Nothing waits once the clock is read (issue 23: a lock held elsewhere
    /// sends the call its usual way, which waits and then reads the clock). `None`: nothing was
    /// written (no row remembered, the settings changed, a lock was held, the statement was
    /// prepared on this session just now, the core refused the items with the remembered row):
    /// the caller takes the usual path, which reads the row and decides again.
    fn insert_as_remembered(
        &self,
        args: &EnqueueArgs,
        clock: Clock<'_>,
    ) -> Result<Option<Vec<Message>>> {
        // The session first: in a forked child it fails before the cache's mutex is touched,
        // which a thread of the parent may have held at the fork.
        let mut conn = self.sessions.get()?;
        let Some(remembered) = self.cache.queue(&args.queue) else {
            return Ok(None);
        };
        let sql = &self.sql;
        let Ok(ctx) = Context::new(clock()?, remembered) else {
            return Ok(None);
        };
        let Ok(messages) = args.messages(&ctx) else {
            return Ok(None);
        };
        // The store only assigns ids; every other field is the core's `with_id`.
        let templates: Vec<Message> = messages.into_iter().map(|m| m.with_id(0)).collect();
        let settings = Settings::new(&args.queue, &ctx.queue)?;
        let place = Place {
            head: true,
            group_at: None,
        };
        let rows = match templates.as_slice() {
            [one] => row::inserted(one, place, |values| {
                let params = [values, &settings.params()[..]].concat();
                conn.whole(
                    &sql.claim_begin_nowait,
                    &sql.insert_one_if_settings,
                    &params,
                )
            })?,
            many => row::inserted_many(many, &vec![place; many.len()], |values| {
                let params = [values, &settings.params()[..]].concat();
                conn.whole(
                    &sql.claim_begin_nowait,
                    &sql.insert_many_if_settings,
                    &params,
                )
            })?,
        };
        let Some(rows) = rows.filter(|rows| !rows.is_empty()) else {
            return Ok(None);
        };
        let ids = row::ids(&rows, templates.len())?;
        Ok(Some(
            templates
                .into_iter()
                .zip(ids)
                .map(|(m, id)| Message { id, ..m })
                .collect(),
        ))
    }

    /// An update in one round trip (issue 24) of a message as this store last wrote it (its
    /// claim, or an earlier update), when it remembers that and its queue's row (`cache.rs`):
    /// the clock read first, `step` run on the remembered message and row, then `BEGIN` (the
    /// table's lock, `NOWAIT`), the write and `COMMIT` sent together
    /// ([`row::write_if_unchanged`]: only while the row is that version and the settings the
    /// remembered ones; its row's lock not waited for). Only a write of one statement, with no
    /// group's bookkeeping ([`write::put_alone`]). `None`: nothing was written (nothing
    /// remembered, the step refused the remembered message, its write needs more, a lock was
    /// held, the row or settings changed): the caller takes the usual path, which reads the
    /// message and runs `step` again on it.
    fn update_as_remembered(
        &self,
        queue: &str,
        id: Id,
        clock: Clock<'_>,
        step: &mut impl FnMut(Message, &Context) -> Result<Message>,
    ) -> Result<Option<Message>> {
        // The session first (see `insert_as_remembered`).
        let mut conn = self.sessions.get()?;
        let (Some(remembered), Some(cached)) =
            (self.cache.queue(queue), self.cache.take(queue, id))
        else {
            return Ok(None);
        };
        let Ok(ctx) = Context::new(clock()?, remembered) else {
            return Ok(None);
        };
        let before = &cached.message;
        let Ok(after) = step(before.clone(), &ctx) else {
            return Ok(None);
        };
        if !groups_changed([(before, Some(&after))]).is_empty() || !write::put_alone(before, &after)
        {
            return Ok(None);
        }
        let place = Place {
            head: !cached.blocked,
            group_at: None,
        };
        let settings = Settings::new(queue, &ctx.queue)?;
        let written =
            row::write_if_unchanged(&mut conn, &self.sql, &cached, &after, place, &settings)?;
        let Some(written) = written else {
            return Ok(None);
        };
        self.cache.put([written.cached(&after)]);
        Ok(Some(after))
    }

    fn one(conn: &mut Conn, sql: &str, queue: &str, id: Id) -> Result<Option<Message>> {
        let row = conn.query_opt(sql, &[&id, &queue])?;
        row.as_ref().map(row::read).transpose()
    }

    pub(crate) fn by_key(
        &self,
        conn: &mut Conn,
        queue: &str,
        key: &str,
    ) -> Result<Option<Message>> {
        let row = conn.query_opt(&self.sql.find_key, &[&queue, &key])?;
        Ok(row
            .as_ref()
            .map(row::read)
            .transpose()?
            .map(|found| Message {
                deduplicated: true,
                ..found
            }))
    }

    /// The messages of `queue` among `ids`, locked with `sql` (`FOR UPDATE`, in id order), keyed
    /// by id, with their `blocked` flags.
    fn lock_rows(
        conn: &mut Conn,
        sql: &str,
        queue: &str,
        ids: &[Id],
    ) -> Result<HashMap<Id, (Message, bool)>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let rows = conn.query(sql, &[&queue, &ids])?;
        rows.iter()
            .map(|r| row::read_stored(r).map(|m| (m.0.id, m)))
            .collect()
    }

    /// The messages of `seen` (read from `queue` without a lock: their groups and keys never
    /// change once stored) locked in the order of `write.rs`, keyed by id, with their `blocked`
    /// flags; `advisory` takes the advisory locks of their groups (and keys), in one statement.
    ///
    /// First the rows read as not blocked behind their group's head (heads, dead and finished
    /// messages), in id order, waiting for them as any write does; then `advisory`; then the
    /// rest (the blocked members) with `rest`: [`Sql::many_for_update_skip`] skips any that
    /// another transaction holds (a blocked member is locked only under its group's lock, or
    /// briefly by a call that fails on it at once: one skipped is left as it is this time),
    /// [`Sql::many_for_update`] waits for that call. So no transaction waits for a group's lock
    /// while it holds the row of a blocked member, which the lock's holder may be unblocking
    /// (issue 24).
    ///
    /// A row read as its group's head may have been moved back behind a new head, or into
    /// another queue's group, by the time it is locked: `FOR UPDATE` then locks its newest
    /// version, and keeps the lock even when that version no longer meets the statement's
    /// conditions (PostgreSQL's re-check in `READ COMMITTED`). The move of issue 24 then waited
    /// for the group's lock while holding that blocked member, whose unblock the lock's holder,
    /// an ack, waited for: a deadlock, one of them ended by PostgreSQL. So when a row of the
    /// first lock comes back blocked, or does not come back, the call fails with [`RELOCK`]
    /// before it waits for anything else, and its transaction is run again from the start
    /// ([`pool::retry_deadlocks`]), reading the row as it is now.
    pub(crate) fn lock_in_order(
        &self,
        conn: &mut Conn,
        queue: &str,
        seen: &[(Message, bool)],
        advisory: impl FnOnce(&mut Conn) -> Result<()>,
        rest: &str,
    ) -> Result<HashMap<Id, (Message, bool)>> {
        let free: Vec<Id> = seen
            .iter()
            .filter(|(_, blocked)| !blocked)
            .map(|(m, _)| m.id)
            .collect();
        let mut found = Self::lock_rows(conn, &self.sql.many_for_update, queue, &free)?;
        if found.len() < free.len() || found.values().any(|(_, blocked)| *blocked) {
            return Err(Error::Store(RELOCK.into()));
        }
        advisory(conn)?;
        let others: Vec<Id> = seen
            .iter()
            .map(|(m, _)| m.id)
            .filter(|id| !found.contains_key(id))
            .collect();
        found.extend(Self::lock_rows(conn, rest, queue, &others)?);
        Ok(found)
    }

    /// The messages of `queue` among `ids`, unlocked, with their `blocked` flags, in id order.
    pub(crate) fn read_many(
        &self,
        conn: &mut Conn,
        queue: &str,
        ids: &[Id],
    ) -> Result<Vec<(Message, bool)>> {
        let rows = conn.query(&self.sql.many, &[&queue, &ids])?;
        rows.iter().map(row::read_stored).collect()
    }
}

/// The ordering groups, sorted and each once, of the messages of `seen` (as
/// [`PostgresStore::read_many`] returns them) whose blocked flag `pick` takes: the advisory locks
/// a bulk action takes before the clock is read.
fn groups_of(seen: &[(Message, bool)], pick: impl Fn(bool) -> bool) -> Vec<&str> {
    let mut groups: Vec<&str> = seen
        .iter()
        .filter(|(_, blocked)| pick(*blocked))
        .filter_map(|(m, _)| m.group.as_deref())
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

pub(crate) fn limit(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(Error::store)
}

impl Store for PostgresStore {
    async fn insert(&self, args: &EnqueueArgs, clock: Clock<'_>) -> Result<Vec<Message>> {
        // The locks first, then the clock: a call that waited for another's group or keys
        // dates its messages (delays, expiries) from when it got them. One key alone cannot
        // close a cycle of waits: it is not locked (its unique index decides).
        let (keys, groups) = args.names();
        if keys.is_empty()
            && groups.is_empty()
            && let Some(inserted) = self.insert_as_remembered(args, clock)?
        {
            return Ok(inserted);
        }
        let keys = if keys.len() > 1 { keys } else { Vec::new() };
        if keys.is_empty() && groups.is_empty() {
            // No lock but the table's: `BEGIN` and the queue's row in one round trip.
            let queue = &args.queue;
            let first: &[(&str, &[&(dyn ToSql + Sync)])] = &[(&self.sql.queue, &[queue])];
            return self
                .sessions
                .write_first(&self.sql.begin, first, false, |conn, mut rows| {
                    let row = rows[0]
                        .pop()
                        .map_or(Ok(QueueRow::default()), |r| row::queue(&r, 0, queue))?;
                    self.cache.put_queue(queue, row);
                    self.insert_in(conn, args, &Context::new(clock()?, row)?)
                });
        }
        self.sessions.write_with(&self.sql.begin, |conn| {
            lock_names(conn, &args.queue, &keys, &groups)?;
            let ctx = context(conn, &self.sql, &args.queue, clock)?;
            self.insert_in(conn, args, &ctx)
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
        mut step: impl FnMut(Message, &Context) -> Result<Message>,
    ) -> Result<Message> {
        if let Some(after) = self.update_as_remembered(queue, id, clock, &mut step)? {
            return Ok(after);
        }
        // `BEGIN` with the message's row lock and its queue's row, in one round trip; then the
        // clock: a call that waited for another's lock decides with the instant it got it.
        let sql = &self.sql;
        let first: &[(&str, &[&(dyn ToSql + Sync)])] =
            &[(&sql.get_for_update_with_queue, &[&id, &queue])];
        let (after, written) =
            self.sessions
                .write_first(&sql.begin, first, false, |conn, found| {
                    let (before, row) = match found[0].first() {
                        Some(r) => (
                            Some(row::read_stored(r)?),
                            row::queue(r, row::MESSAGE_COLUMNS, queue)?,
                        ),
                        None => (None, QueueRow::default()),
                    };
                    self.cache.put_queue(queue, row);
                    let ctx = Context::new(clock()?, row)?;
                    let message = before.as_ref().map(|(m, _)| m.clone());
                    let after = apply_step(message, queue, id, |m| step(m, &ctx))?;
                    let mut written = None;
                    if let Some(before) = &before {
                        let groups = groups_changed([(&before.0, Some(&after))]);
                        if groups.is_empty() && write::put_alone(&before.0, &after) {
                            // One statement, the transaction's last: `COMMIT` goes with it.
                            conn.commit_with_next();
                        }
                        lock_names(conn, queue, &[], &groups)?;
                        written = put(conn, sql, before, &after, ctx.now)?;
                    }
                    Ok((after, written))
                })?;
        self.cache.put(written.map(|w| w.cached(&after)));
        Ok(after)
    }

    async fn claim(
        &self,
        queue: &str,
        clock: Clock<'_>,
        start: impl FnOnce(&Context) -> Option<Claiming>,
        tokens: impl FnMut() -> String,
    ) -> Result<Claimed> {
        // The clock first, then `BEGIN` (the table's lock, not waited for) and the reads that
        // decide the claim (the first with the queue's row), in one round trip (issue 24, see
        // `claim.rs`): none of them waits for a row. When another session holds the table's lock
        // (an upgrade of the schema), or this session has not prepared the reads yet (preparing
        // one takes its table's locks), nothing is decided: the call takes the table's lock
        // waiting for it, as the other writes do, and reads the clock once it has it, then the
        // reads (issue 23, item 2).
        let sql = &self.sql;
        let room = limit(Reads::ROOM)?;
        let now = clock()?;
        let params: [&(dyn ToSql + Sync); 3] = [&queue, &now, &room];
        let mut sent = false;
        let mut start = Some(start);
        let mut tokens = Some(tokens);
        let fast = self.sessions.write_first(
            &sql.claim_begin_nowait,
            &Reads::statements(sql, &params),
            true,
            |conn, rows| {
                sent = true;
                let (start, tokens) = (start.take().expect("once"), tokens.take().expect("once"));
                self.claim_from(conn, queue, now, rows, start, tokens)
            },
        );
        let claimed = match fast {
            Err(Error::Store(text))
                if !sent && (text.ends_with(LOCK_NOT_AVAILABLE) || text == NOT_PREPARED) =>
            {
                let (start, tokens) = (start.expect("not run"), tokens.expect("not run"));
                self.sessions.write_with(&sql.begin, |conn| {
                    let now = clock()?;
                    let params: [&(dyn ToSql + Sync); 3] = [&queue, &now, &room];
                    let rows = conn.query_many(&Reads::statements(sql, &params))?;
                    self.claim_from(conn, queue, now, rows, start, tokens)
                })
            }
            other => other,
        };
        // The messages taken, as written, remembered once the transaction committed.
        let (claimed, taken) = claimed?;
        self.cache.put(taken);
        Ok(claimed)
    }

    async fn list(&self, query: &ListQuery<'_>) -> Result<Vec<Message>> {
        let after = query.after_id.unwrap_or(0);
        let n = limit(query.limit)?;
        self.sessions.read(|conn| {
            let rows = match query.status {
                None => conn.query(&self.sql.list, &[&query.queue, &after, &n])?,
                Some(status) => conn.query(
                    &self.sql.list_status,
                    &[&query.queue, &status.as_str(), &after, &n],
                )?,
            };
            row::read_all(&rows)
        })
    }

    async fn update_many(
        &self,
        queue: &str,
        ids: &[Id],
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        pool::retry_deadlocks(|| {
            self.sessions.write_with(&self.sql.begin, |conn| {
                // The locks of every group among them, whether or not a step changes it: they
                // are taken before the clock is read, so before the steps run.
                let seen = self.read_many(conn, queue, ids)?;
                let groups = groups_of(&seen, |_| true);
                let advisory = |conn: &mut Conn| lock_names(conn, queue, &[], &groups);
                let skip = &self.sql.many_for_update_skip;
                let mut found = self.lock_in_order(conn, queue, &seen, advisory, skip)?;
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
                for (before, after) in &written {
                    put(conn, &self.sql, before, after, ctx.now)?;
                }
                Ok(written.into_iter().map(|(_, after)| after).collect())
            })
        })
    }

    async fn move_many(
        &self,
        queue: &str,
        ids: &[Id],
        to_queue: &str,
        clock: Clock<'_>,
        mut step: impl FnMut(Message, &Context, bool) -> Result<Option<Message>>,
    ) -> Result<Vec<Message>> {
        pool::retry_deadlocks(|| {
            self.sessions.write_with(&self.sql.begin, |conn| {
                self.move_in(conn, queue, ids, to_queue, clock, &mut step)
            })
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
        pool::retry_deadlocks(|| {
            self.sessions.write_with(&self.sql.begin, |conn| {
                // The blocked members among them (none can be deleted: they are pending) are locked
                // under their groups' locks, and waited for: only a call that fails on one at once
                // may hold it then.
                let seen = self.read_many(conn, queue, ids)?;
                let groups = groups_of(&seen, |blocked| blocked);
                let advisory = |conn: &mut Conn| lock_names(conn, queue, &[], &groups);
                let wait = &self.sql.many_for_update;
                let mut found = self.lock_in_order(conn, queue, &seen, advisory, wait)?;
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
                    conn.execute(&self.sql.delete, &[&doomed_ids])?;
                }
                Ok(doomed)
            })
        })
    }

    async fn counts(&self, queue: &str, now: Millis) -> Result<Counts> {
        self.sessions.read(|conn| {
            let row = conn.query_one(&self.sql.counts, &[&queue, &now])?;
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
                let rows = conn.query(sql, &[])?;
                for r in &rows {
                    names.insert(r.try_get::<_, String>(0).map_err(db_error)?);
                }
            }
            Ok(names.into_iter().collect())
        })
    }

    async fn queue_row(&self, queue: &str) -> Result<QueueRow> {
        let row = self
            .sessions
            .read(|conn| write::queue_row(conn, &self.sql, queue))?;
        self.cache.put_queue(queue, row);
        Ok(row)
    }

    async fn write_queue_row(
        &self,
        queue: &str,
        step: impl FnOnce(QueueRow) -> Result<QueueRow>,
    ) -> Result<QueueRow> {
        let next = self.sessions.write(|conn| {
            write::lock_queue(conn, queue)?;
            let stored = write::queue_row(conn, &self.sql, queue)?;
            let next = step(stored)?;
            if next != stored {
                row::put_queue(conn, &self.sql.put_queue, queue, &next)?;
                // Back to the defaults: no row (`QueueRow::worth_storing`; finding F5).
                if !next.worth_storing() {
                    conn.execute(&self.sql.delete_queue, &[&queue])?;
                }
            }
            Ok(next)
        })?;
        self.cache.put_queue(queue, next);
        Ok(next)
    }

    async fn next_due_at(&self, queue: &str, now: Millis) -> Result<Option<Millis>> {
        self.sessions.read(|conn| {
            let row = conn.query_one(&self.sql.next_due_at, &[&queue, &now])?;
            row.try_get(0).map_err(db_error)
        })
    }
}
