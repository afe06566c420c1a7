//! # deadletter-py
//!
//! The Python binding of [`deadletter`] (native module `deadletter._deadletter`, wrapped by the
//! pure-Python package in `python/deadletter/`): `open` picks the store from its path or URL,
//! `deadletter_sqlite::SqliteStore` or `deadletter_postgres::PostgresStore`
//! ([`store::AnyStore`]), and registers the SQLite store's fork hooks ([`fork`]).
//!
//! The binding maps Python values to [`deadletter::Arg`] without judging them ([`convert`]),
//! draws the jitter sample with the GIL held, then releases the GIL and runs one engine call on
//! the store (lease tokens, uuid v4, are drawn inside it), driving its ready-at-once future with
//! `pollster::block_on`; it hands the call the clock, which the store reads once it holds its
//! write lock (taking the GIL again for a clock given to `open`). Messages the call made dead (the engine's
//! [`deadletter::Outcome::dead`]) then go to the dead-letter callbacks, with the GIL. Errors
//! become `deadletter` exceptions in one place ([`errors`]). It holds no queue rule: every rule is
//! in the core.
//!
//! ```python
//! import deadletter
//! with deadletter.open("jobs.db") as db:
//!     q = db.queue("emails")
//!     q.enqueue('{"to":"alice@example.com"}', max_retries=5)
//!     m = q.claim()
//!     q.succeed(m.id, lease_token=m.lease_token)
//! ```

// The crate docs are for whoever works on the binding (it is a native module, not a library
// to depend on): they link its private modules.
#![allow(rustdoc::private_intra_doc_links)]

pub mod constants;
pub mod convert;
pub mod database;
pub mod errors;
pub mod filters;
pub mod fork;
pub mod item;
pub mod message;
pub mod names;
pub mod policy;
pub mod queue;
pub mod settings;
pub mod shared;
pub mod stats;
pub mod store;
pub mod worker;

use std::path::{Path, PathBuf};

use deadletter::{Engine, Error, FieldError, Limits};
use deadletter_postgres::{Options as PostgresOptions, PostgresStore};
use deadletter_sqlite::{Durability, SqliteStore};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple};

use crate::convert::Value;
use crate::database::Database;
use crate::errors::to_py_err;
use crate::message::PyMessage;
use crate::policy::PyBackoff;
use crate::queue::Queue;
use crate::shared::Shared;
use crate::stats::PyQueueStats;
use crate::store::AnyStore;

/// Opens (creating if needed) a queue database: a SQLite file, or a schema of a PostgreSQL
/// database.
///
/// `path`: a file path (str or os.PathLike; not empty), the str `":memory:"` (the default) for a
/// private in-memory SQLite database (`pathlib.Path(":memory:")` is the file of that name), or a str URL `postgresql://user:password@host:5432/dbname` (also
/// `postgres://`; optional query parameters as libpq's, such as `connect_timeout`,
/// `application_name` or `options`, or the host as `?host=/run/postgresql` for a Unix socket).
/// The scheme alone decides: any other str or os.PathLike is a SQLite path, always a file name
/// (never a SQLite URI: `"file:x.db?mode=ro"` is the file of that name in the working directory).
/// File databases use SQLite's WAL mode and may be shared by processes; a write waits up to 30 s
/// for another process's lock (reads, on a second connection, do not wait behind it). Each
/// process opens its own: in a child made by `fork()` the databases opened before the fork raise
/// `StoreError` (a fork waits until no thread is inside a SQLite call). A file written by
/// deadletter 0.1.0 (schema version 1) is upgraded in place, in one transaction. `clock`: a
/// zero-argument callable returning an aware `datetime` (called once per operation: by a write
/// once the store holds its write lock, so it must not call the database itself; by a read when
/// it starts; a naive datetime or another value raises
/// `ValidationError`, field `clock`, as does an instant outside 0001-01-01T00:00:00Z to
/// 9999-12-31T23:59:59.999Z or one that a lease, delay or backoff would push out of that range;
/// an exception it raises propagates unchanged); default: the system clock in UTC. `lease`: the
/// default lease of `Queue.claim`, in seconds (int or float) or a `datetime.timedelta`, rounded
/// to the millisecond, then 1 ms..=12 h. `max_payload_bytes`: the largest accepted payload, in
/// bytes of UTF-8 (1..=67108864). `random`: a zero-argument callable returning a float in
/// `[0, 1)`, the source of backoff jitter (called once per `claim`, `claim_many`, `reap` and
/// `fail`, before any work, as the JavaScript binding does; the messages one call reschedules get
/// samples spread from it; another value raises `ValidationError`, field `random`); default: a
/// fast non-cryptographic generator (`fastrand`). `durability`: `"full"` (the default: every
/// commit syncs SQLite's WAL to disk before the call returns, so nothing acknowledged is lost,
/// even on power loss) or `"normal"` (the WAL is synced at checkpoints only: safe against the
/// application's crash, but the last commits may be lost on power loss or an OS crash; many
/// times faster one call at a time); another value raises `ValidationError`, field
/// `durability` (SQLite only: `"normal"` with a PostgreSQL URL is a `ValidationError`, code
/// `invalid`; `"full"`, the default, is taken: PostgreSQL commits as its server is configured). With either, the calls that threads make
/// while another call of the same `Database` is committing share the next commit (group commit),
/// each keeping its own outcome. `None` for an option means its default.
///
/// PostgreSQL only (given with a SQLite path, each is a `ValidationError` naming it, code
/// `invalid`; but `create=True`, the default, is taken: a SQLite file is created when missing): `schema`, a str (1..=63 bytes, no NUL; default `"deadletter"`), the schema that
/// holds the queue's tables, created with them when missing; `max_connections`, an int
/// (1..=1000, default 10), the most connections this database holds open at once (opened when
/// needed, kept for reuse; a thread in a call holds one); `connect_timeout`, how long a call
/// waits for a connection (seconds or a `timedelta`, 0.001..=3600, default 10); `lock_timeout`,
/// how long a call waits for a message that another call is changing (same units and range,
/// default 30) before raising `StoreError`; `create`, a bool (default True): whether a missing
/// schema is created with its tables; False raises `StoreError` for a schema without
/// deadletter's tables and creates nothing (for tools that only read).
///
/// Raises `ValidationError` for a rejected argument (every one at once; an empty `path` is
/// rejected, field `path`, as is a path holding a NUL character (code `invalid`) or a URL that
/// does not parse), `StoreError` when the file cannot be
/// opened, is not a deadletter database, or was written by a newer deadletter (schema version),
/// and when the server cannot be reached in `connect_timeout`, refuses the login, or the schema
/// holds another application's tables or a newer deadletter's. A refused file or schema is left
/// as it was. No error message shows the URL's password.
#[pyfunction]
#[pyo3(
    signature = (
        path = None,
        *,
        clock = None,
        lease = None,
        max_payload_bytes = None,
        random = None,
        schema = None,
        max_connections = None,
        connect_timeout = None,
        lock_timeout = None,
        durability = None,
        create = None,
    ),
    text_signature = "(path=':memory:', *, clock=None, lease=30.0, max_payload_bytes=1048576, random=None, schema=None, max_connections=None, connect_timeout=None, lock_timeout=None, durability='full', create=True)"
)]
#[allow(clippy::too_many_arguments)] // one per keyword option
fn open(
    py: Python<'_>,
    path: Option<&Bound<'_, PyAny>>,
    clock: Option<Bound<'_, PyAny>>,
    lease: Option<&Bound<'_, PyAny>>,
    max_payload_bytes: Option<&Bound<'_, PyAny>>,
    random: Option<Bound<'_, PyAny>>,
    schema: Option<&Bound<'_, PyAny>>,
    max_connections: Option<&Bound<'_, PyAny>>,
    connect_timeout: Option<&Bound<'_, PyAny>>,
    lock_timeout: Option<&Bound<'_, PyAny>>,
    durability: Option<&Bound<'_, PyAny>>,
    create: Option<&Bound<'_, PyAny>>,
) -> PyResult<Database> {
    let mut rejected = Vec::new();
    // The options that apply to one kind of database only: given for the other kind, each is
    // rejected by name.
    let postgres_only = [
        ("schema", schema),
        ("max_connections", max_connections),
        ("connect_timeout", connect_timeout),
        ("lock_timeout", lock_timeout),
        ("create", create),
    ];
    let sqlite = |path: PathBuf, rejected: &mut Vec<FieldError>| {
        rejected.extend(only_for("a PostgreSQL URL", &postgres_only));
        Some(Target::Sqlite(path))
    };
    let target = match path.filter(|path| !path.is_none()) {
        None => sqlite(PathBuf::from(":memory:"), &mut rejected),
        Some(given) => match (given.extract::<PathBuf>(), postgres_url(given)) {
            (Ok(path), _) if path.as_os_str().is_empty() => {
                let message = "must not be empty (\":memory:\" opens a database in memory)";
                rejected.push(FieldError::new("path", "empty", message));
                None
            }
            (Ok(_), Some(url)) if url.contains('\0') => {
                let message = "must not contain a NUL character";
                rejected.push(FieldError::new("path", "invalid", message));
                None
            }
            (Ok(_), Some(url)) => {
                rejected.extend(only_for("a SQLite file", &[("durability", durability)]));
                postgres_options(&postgres_only, &mut rejected)?
                    .map(|options| Target::Postgres(url, options))
            }
            (Ok(path), None) if path.as_os_str().as_encoded_bytes().contains(&0) => {
                let message = "must not contain a NUL character";
                rejected.push(FieldError::new("path", "invalid", message));
                None
            }
            // Only the str ":memory:" is the in-memory database; an os.PathLike is a file name.
            (Ok(path), None)
                if path.as_os_str() == ":memory:" && !given.is_instance_of::<PyString>() =>
            {
                sqlite(Path::new(".").join(path), &mut rejected)
            }
            (Ok(path), None) => sqlite(path, &mut rejected),
            (Err(_), _) => {
                let kind = Value::from_py(Some(given)).arg().kind();
                let message = format!("must be a str or an os.PathLike, got {kind}");
                rejected.push(FieldError::new("path", "type", message));
                None
            }
        },
    };
    let lease = Value::duration(lease)?;
    let max_payload_bytes = Value::from_py(max_payload_bytes);
    let limits = match Limits::new(&lease.arg(), &max_payload_bytes.arg()) {
        Ok(limits) => Some(limits),
        Err(Error::Validation(fields)) => {
            rejected.extend(fields);
            None
        }
        Err(err) => return Err(to_py_err(py, &err)),
    };
    let (clock, random) = (callable(clock), callable(random));
    for (field, given, returning) in [
        ("clock", &clock, "an aware datetime"),
        ("random", &random, "a float in [0, 1)"),
    ] {
        if given.as_ref().is_some_and(|f| !f.is_callable()) {
            let message = format!("must be a zero-argument callable returning {returning}");
            rejected.push(FieldError::new(field, "type", message));
        }
    }
    let durability = durability_of(durability).map_err(|field| rejected.push(field));
    let (Some(target), Some(limits), Ok(durability), true) =
        (target, limits, durability, rejected.is_empty())
    else {
        return Err(to_py_err(py, &Error::Validation(rejected)));
    };
    let store = match target {
        Target::Sqlite(path) => py
            .detach(|| SqliteStore::open(&path, durability))
            .map(AnyStore::Sqlite),
        Target::Postgres(url, options) => py
            .detach(|| PostgresStore::open(&url, &options))
            .map(|store| AnyStore::Postgres(Box::new(store))),
    }
    .map_err(|err| to_py_err(py, &err))?;
    Ok(Database::new(Shared::new(
        Engine::new(store, limits),
        clock.map(Bound::unbind),
        random.map(Bound::unbind),
    )))
}

/// What `open`'s first argument names.
enum Target {
    /// A SQLite file, or `:memory:`.
    Sqlite(PathBuf),
    /// A PostgreSQL URL and the options of its store.
    Postgres(String, PostgresOptions),
}

/// `path` when it is a str that starts with a PostgreSQL scheme (in any case; given back in
/// lower case).
fn postgres_url(path: &Bound<'_, PyAny>) -> Option<String> {
    let text = path.cast::<PyString>().ok()?.to_cow().ok()?;
    store::postgres_url(&text)
}

/// A PostgreSQL URL's options (`schema`, `max_connections`, `connect_timeout`, `lock_timeout`,
/// `create`, in that order), or `None` with their rejections added to `rejected`.
fn postgres_options(
    given: &[(&'static str, Option<&Bound<'_, PyAny>>); 5],
    rejected: &mut Vec<FieldError>,
) -> PyResult<Option<PostgresOptions>> {
    let [schema, max_connections, connect, lock, create] = given.map(|(_, value)| value);
    let create = match create.filter(|c| !c.is_none()) {
        None => Some(true),
        Some(given) => given
            .cast::<PyBool>()
            .map(PyBoolMethods::is_true)
            .ok()
            .or_else(|| {
                let kind = Value::from_py(Some(given)).arg().kind();
                let message = format!("must be a bool, got {kind}");
                rejected.push(FieldError::new("create", "type", message));
                None
            }),
    };
    let (schema, max_connections) = (Value::from_py(schema), Value::from_py(max_connections));
    let (connect, lock) = (Value::duration(connect)?, Value::duration(lock)?);
    let options = PostgresOptions::from_args(
        &schema.arg(),
        &max_connections.arg(),
        &connect.arg(),
        &lock.arg(),
    );
    let options = options
        .map_err(|err| rejected.extend(err.field_errors().iter().cloned()))
        .ok();
    Ok(options
        .zip(create)
        .map(|(options, create)| PostgresOptions { create, ..options }))
}

/// A rejection (code `invalid`) for each of `options` that was given (neither `None` nor its
/// documented default) although it applies only to `kind` of database, which the path does not
/// name. The defaults hold for either kind, so a wrapper may forward them: `create=True` (a
/// SQLite file is created when missing) and `durability="full"` (a PostgreSQL commit is
/// acknowledged once the server made it durable).
fn only_for(kind: &str, options: &[(&'static str, Option<&Bound<'_, PyAny>>)]) -> Vec<FieldError> {
    let default = |name: &str, value: &Bound<'_, PyAny>| match name {
        "create" => value.cast::<PyBool>().is_ok_and(PyBoolMethods::is_true),
        "durability" => value.extract::<String>().is_ok_and(|d| d == "full"),
        _ => false,
    };
    options
        .iter()
        .filter(|(name, value)| value.is_some_and(|v| !v.is_none() && !default(name, v)))
        .map(|(name, _)| FieldError::new(name, "invalid", format!("applies only to {kind}")))
        .collect()
}

/// The `durability` option: `"full"` (also for `None`) or `"normal"`.
fn durability_of(given: Option<&Bound<'_, PyAny>>) -> Result<Durability, FieldError> {
    let Some(given) = given.filter(|d| !d.is_none()) else {
        return Ok(Durability::default());
    };
    let Ok(name) = given.extract::<String>() else {
        let kind = Value::from_py(Some(given)).arg().kind();
        let message = format!("must be \"full\" or \"normal\", got {kind}");
        return Err(FieldError::new("durability", "type", message));
    };
    Durability::ALL
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, durability)| *durability)
        .ok_or_else(|| {
            let message = format!("must be \"full\" or \"normal\", got {name:?}");
            FieldError::new("durability", "invalid", message)
        })
}

/// An optional callable argument: `None` when omitted or `None`.
fn callable(value: Option<Bound<'_, PyAny>>) -> Option<Bound<'_, PyAny>> {
    value.filter(|v| !v.is_none())
}

/// The delay before the next attempt after the `retry_count`-th failure, as a
/// `datetime.timedelta`: `min(2**retry_count, 3600)` seconds, the backoff of the project's
/// contract (the same function the core applies in `Queue.fail` and when a lease expires).
/// `retry_count`: an int from 0 to 2**63 - 1 (the cap applies from 12 on). Raises `ValidationError` (field `retry_count`) for a
/// negative count or a value that is not an int (a bool, a float or a str is rejected).
#[pyfunction]
fn backoff<'py>(
    py: Python<'py>,
    retry_count: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, pyo3::types::PyDelta>> {
    let retry_count = Value::from_py(Some(retry_count));
    let ms = deadletter::backoff(&retry_count.arg()).map_err(|err| to_py_err(py, &err))?;
    convert::to_timedelta(py, ms)
}

/// The native part of the `deadletter` package; import `deadletter` instead.
#[pymodule]
#[pyo3(name = "_deadletter")]
fn deadletter_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(backoff, m)?)?;
    m.add_class::<Database>()?;
    m.add_class::<Queue>()?;
    m.add_class::<PyMessage>()?;
    m.add_class::<PyQueueStats>()?;
    m.add_class::<crate::settings::PyQueueSettings>()?;
    m.add_class::<PyBackoff>()?;
    worker::register(m)?;
    names::register(m)?;
    constants::register(m)?;
    m.add("CODES", PyTuple::new(m.py(), deadletter::CODES)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SQLITE_VERSION", deadletter_sqlite::rusqlite::version())?;
    m.add("SQLITE_BUNDLED", cfg!(feature = "bundled-sqlite"))?;
    fork::install(m)
}
