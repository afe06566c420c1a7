//! What a store does with the schema it finds at open ([`Place::migration`]): create it, upgrade
//! it from an older version, take it, or refuse it.

use std::fmt::Display;

use crate::error::{Error, Result};

/// Where a store keeps its schema, as its messages name it: for [`Place::migration`] and
/// [`Place::not_ours`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<'a> {
    /// The place as a sentence's subject: `the database` (a SQLite file), `schema "jobs"`
    /// (PostgreSQL), `IndexedDB database "jobs"`.
    pub name: &'a str,
    /// What a place of deadletter's is called there: `database` or `schema`.
    pub kind: &'a str,
}

/// What a store found where its schema belongs, at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<'a> {
    /// Nothing: a new, empty (or missing) place.
    Empty,
    /// No schema of deadletter's, but other things, described for the refusal (`other tables`,
    /// `other tables (orders, users)`): another application's place.
    Foreign(&'a str),
    /// deadletter's schema at this version (SQLite's `user_version` when not 0, PostgreSQL's
    /// `deadletter_schema` row, IndexedDB's database version).
    Version(i64),
}

/// What a store does with the schema it found, decided by [`Place::migration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migration {
    /// Create the current schema (in the transaction that looked).
    Create,
    /// Upgrade from this older version (1 or more) to the current one, in the transaction that
    /// read it, once the store has checked that the place has the shape of that version.
    Upgrade {
        /// The version found.
        from: i64,
    },
    /// The current version: open it as it is, once the store has checked its shape.
    Current,
}

impl Place<'_> {
    /// The decision for what was `found`, given the store's own `current` version: create an
    /// empty place (unless `create` is false), upgrade an older version, take the current one.
    /// Refused with a store error, before anything is written: another application's place
    /// (`... is not a deadletter database: it holds other tables and none of deadletter's`), a
    /// version below 1, a newer version (`... has schema version 5; this deadletter reads version
    /// 4 (upgrade deadletter to open it)`), and an empty place when `create` is false (`... holds
    /// no deadletter queues (it is missing or empty); nothing was created`: for tools that only
    /// read, where a mistyped name must not look like an empty queue).
    pub fn migration(&self, found: Found<'_>, current: i64, create: bool) -> Result<Migration> {
        let name = self.name;
        match found {
            Found::Empty if create => Ok(Migration::Create),
            Found::Empty => Err(Error::Store(format!(
                "{name} holds no deadletter queues (it is missing or empty); nothing was created"
            ))),
            Found::Foreign(others) => {
                Err(self.not_ours(format_args!("it holds {others} and none of deadletter's")))
            }
            Found::Version(version) if version == current => Ok(Migration::Current),
            Found::Version(version) if (1..current).contains(&version) => {
                Ok(Migration::Upgrade { from: version })
            }
            Found::Version(newer) if newer > current => Err(Error::Store(format!(
                "{name} has schema version {newer}; this deadletter reads version {current} \
                 (upgrade deadletter to open it)"
            ))),
            Found::Version(other) => {
                Err(self.not_ours(format_args!("it has schema version {other}")))
            }
        }
    }

    /// The store error refusing another application's place: `{name} is not a deadletter
    /// {kind}: {why}` (also for a place at one of deadletter's versions that lacks its shape).
    pub fn not_ours(&self, why: impl Display) -> Error {
        Error::Store(format!(
            "{} is not a deadletter {}: {why}",
            self.name, self.kind
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_found_is_created_upgraded_taken_or_refused() {
        let place = Place {
            name: "the database",
            kind: "database",
        };
        let decide = |found, create| place.migration(found, 4, create);
        assert_eq!(decide(Found::Empty, true), Ok(Migration::Create));
        assert_eq!(decide(Found::Version(4), false), Ok(Migration::Current));
        for from in 1..4 {
            assert_eq!(
                decide(Found::Version(from), true),
                Ok(Migration::Upgrade { from })
            );
        }
        let refusal = |found, create| decide(found, create).unwrap_err().to_string();
        assert_eq!(
            refusal(Found::Version(5), true),
            "store error: the database has schema version 5; this deadletter reads version 4 \
             (upgrade deadletter to open it)"
        );
        for other in [0, -3] {
            assert_eq!(
                refusal(Found::Version(other), true),
                format!(
                    "store error: the database is not a deadletter database: it has schema \
                     version {other}"
                )
            );
        }
        assert_eq!(
            refusal(Found::Foreign("other tables (orders)"), true),
            "store error: the database is not a deadletter database: it holds other tables \
             (orders) and none of deadletter's"
        );
        assert_eq!(
            refusal(Found::Empty, false),
            "store error: the database holds no deadletter queues (it is missing or empty); \
             nothing was created"
        );
    }
}
