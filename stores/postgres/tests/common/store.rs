//! What the tests of a store on one schema share: an item, an admin session, a store or an engine
//! on a schema, a message's row held locked.

use deadletter::{Arg, Engine, Item, Limits};
use deadletter_postgres::{Options, PostgresStore};

use super::url;

/// An item of `payload` with the defaults.
pub fn item(payload: &str) -> Item<'_> {
    Item {
        payload: Arg::Str(payload),
        ..Item::default()
    }
}

/// A session of its own on the test server, outside any store.
pub fn admin() -> postgres::Client {
    postgres::Client::connect(&url(), postgres::NoTls).expect("connect")
}

/// A store on `schema` with one session.
pub fn open(schema: &str) -> deadletter::Result<PostgresStore> {
    let options = Options {
        schema: schema.to_owned(),
        max_connections: 1,
        ..Options::default()
    };
    PostgresStore::open(&url(), &options)
}

/// An engine over a store opened on the test server with `options`.
pub fn engine(options: &Options) -> Engine<PostgresStore> {
    Engine::new(
        PostgresStore::open(&url(), options).expect("open"),
        Limits::default(),
    )
}

/// Locks message `id` of schema `schema` (`FOR UPDATE`) until the returned transaction ends.
pub fn hold<'a>(
    admin: &'a mut postgres::Client,
    schema: &str,
    id: i64,
) -> postgres::Transaction<'a> {
    let mut holder = admin.transaction().expect("begin");
    holder
        .execute(
            &format!("SELECT 1 FROM \"{schema}\".messages WHERE id = $1 FOR UPDATE"),
            &[&id],
        )
        .expect("hold the message");
    holder
}
