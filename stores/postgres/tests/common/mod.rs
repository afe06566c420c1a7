//! What the PostgreSQL tests share: the server's URL and fresh schemas, dropped afterwards.
#![allow(dead_code)] // each test file uses its own part

pub mod groups;
pub mod store;
pub mod workers;

use std::sync::atomic::{AtomicUsize, Ordering};

use deadletter_postgres::{Options, PostgresStore};

/// The URL of the test server: `DEADLETTER_POSTGRES_URL`, which `scripts/pg.sh run` sets (as
/// `make test-postgres` does).
///
/// # Panics
/// When it is not set: these tests need a real server and say how to get one.
pub fn url() -> String {
    std::env::var("DEADLETTER_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "DEADLETTER_POSTGRES_URL is not set: these tests need a PostgreSQL server. Run \
             `make test-postgres`, or `scripts/pg.sh run cargo test -p deadletter-postgres`."
        )
    })
}

/// Schema names unique to this process, dropped (with everything in them) when it is dropped.
pub struct Schemas {
    prefix: String,
    made: std::sync::Mutex<Vec<String>>,
}

impl Schemas {
    /// Names start with `prefix`, then the process id and a counter.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: format!("{prefix}_{}", std::process::id()),
            made: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// A new, unused schema name.
    pub fn name(&self) -> String {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "{}_{}",
            self.prefix,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        self.made.lock().unwrap().push(name.clone());
        name
    }

    /// A store on a new schema, with at most `max_connections` sessions.
    pub fn store(&self, max_connections: u32) -> PostgresStore {
        let options = Options {
            schema: self.name(),
            max_connections,
            ..Options::default()
        };
        PostgresStore::open(&url(), &options).expect("open a store on a fresh schema")
    }
}

impl Drop for Schemas {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.made.lock().unwrap());
        if names.is_empty() {
            return;
        }
        let mut client = postgres::Client::connect(&url(), postgres::NoTls).expect("connect");
        for name in names {
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .expect("drop schema");
        }
    }
}
