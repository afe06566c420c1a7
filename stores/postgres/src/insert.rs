//! `enqueue` in PostgreSQL: the messages of one call inserted in the transaction that
//! `PostgresStore::insert` opened (its locks held, its [`Context`] read), each at its place in
//! its ordering group, and the idempotency keys looked up first.

use std::collections::HashMap;

use deadletter::storage::{self, Position};
use deadletter::{Context, EnqueueArgs, Error, Id, Message, Millis, Result};

use crate::pool::Conn;
use crate::row::{self, Place};
use crate::sql::Sql;
use crate::store::PostgresStore;
use crate::write;

impl PostgresStore {
    /// Inserts the messages of `args` as of `ctx`, in the transaction open on `conn`; a message
    /// whose idempotency key its queue already carries is returned as stored (`deduplicated`).
    pub(crate) fn insert_in(
        &self,
        conn: &mut Conn,
        args: &EnqueueArgs,
        ctx: &Context,
    ) -> Result<Vec<Message>> {
        let sql = self.statements();
        // The store only assigns ids; every other field is the core's `with_id`.
        let templates: Vec<Message> = args
            .messages(ctx)?
            .into_iter()
            .map(|m| m.with_id(0))
            .collect();
        if templates.iter().all(|m| m.idempotency_key.is_none()) {
            // One statement for the whole batch: no key to look up. It is the transaction's
            // last: `COMMIT` goes with it.
            let places = places(conn, sql, &templates, ctx.now)?;
            conn.commit_with_next();
            let ids = if let ([one], [place]) = (templates.as_slice(), places.as_slice()) {
                // One message: `INSERT ... VALUES`, lighter for the server than the arrays.
                let id = row::insert(conn, &sql.insert_one, one, *place)?;
                vec![
                    id.ok_or_else(|| Error::Store("PostgreSQL: the insert returned no id".into()))?,
                ]
            } else {
                row::insert_many(conn, &sql.insert_many, &templates, &places)?
            };
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
            let place = places(conn, sql, std::slice::from_ref(template), ctx.now)?;
            let inserted = if let Some(id) = row::insert(conn, &sql.insert, template, place[0])? {
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
    }
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
