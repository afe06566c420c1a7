//! `open` and the database handle ([`NativeDatabase`]) of the package's Node backend
//! (`node/backend.js`): the options of a SQLite file checked together, the file opened (created,
//! upgraded, or refused as another application's or a newer deadletter's) on a thread of libuv's
//! pool, and the queue handles, `queues`, the worker loop's plan, `hold` and `close`. The calls
//! of an open database run on its own threads ([`crate::pool`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use deadletter::{Backoff, Engine, Error, FieldError, Limits, Result};
use deadletter_sqlite::{Durability, SqliteStore};
use napi::bindgen_prelude::{AsyncTask, Either, FromNapiValue, Function, Unknown};
use napi::{Env, ScopedTask, ValueType};
use napi_derive::napi;

use crate::args::{OwnedArg, kind};
use crate::clock::Clock;
use crate::pool::{Deliver, Pool, Replies};
use crate::queue::NativeQueue;
use crate::reply;
use crate::work::{Db, Shared};
use crate::worker::NativeWorkerPlan;

/// The field errors of `errors` together, when they are all validation errors; else the first
/// other error.
pub fn combine(errors: impl IntoIterator<Item = Error>) -> Error {
    let mut fields = Vec::new();
    for error in errors {
        match error {
            Error::Validation(more) => fields.extend(more),
            other => return other,
        }
    }
    Error::Validation(fields)
}

/// Checks the arguments of `open(name, options)` in Node together and opens the SQLite file on a
/// thread of libuv's pool; resolves to the database, or to the JSON text of the error. `name`: a
/// non-empty path without NUL (`":memory:"`: a private in-memory database); `leaseMs` and
/// `maxPayloadBytes` as everywhere (`Limits`); `durability` `"full"` (default) or `"normal"`;
/// `clock` and `random` functions or nothing (`random` is called by the JavaScript side).
/// `deliver(ids, replies)` (internal) settles the database's calls: each call returns its id,
/// and its reply (a JSON text, or what the user's clock threw) comes with it in a batch.
#[napi]
#[allow(clippy::too_many_arguments)] // the options, one by one, and the callback
#[allow(clippy::needless_pass_by_value)] // napi-rs passes JavaScript values owned
pub fn open(
    name: Unknown<'_>,
    lease_ms: Unknown<'_>,
    max_payload_bytes: Unknown<'_>,
    durability: Unknown<'_>,
    clock: Unknown<'_>,
    random: Unknown<'_>,
    deliver: Deliver<'_>,
) -> napi::Result<AsyncTask<Opening>> {
    let mut rejected = Vec::new();
    let path = path_of(name, &mut rejected)?;
    let limits = Limits::new(
        &OwnedArg::from_js(lease_ms)?.arg(),
        &OwnedArg::from_js(max_payload_bytes)?.arg(),
    )
    .map_err(|err| rejected.extend_from_slice(err.field_errors()))
    .ok();
    let durability = durability_of(durability)?
        .map_err(|field| rejected.push(field))
        .ok();
    let clock = function("clock", clock, &mut rejected)?;
    function("random", random, &mut rejected)?;
    let checked = match (path, limits, durability) {
        (Some(path), Some(limits), Some(durability)) if rejected.is_empty() => Ok((
            path,
            limits,
            durability,
            Clock::new(clock)?,
            Replies::new(&deliver)?,
        )),
        _ => Err(Error::Validation(rejected)),
    };
    Ok(AsyncTask::new(Opening {
        checked: Some(checked),
    }))
}

/// The `name` of `open` as a path (adding its rejection to `rejected` otherwise).
fn path_of(name: Unknown<'_>, rejected: &mut Vec<FieldError>) -> napi::Result<Option<PathBuf>> {
    let problem = match OwnedArg::from_js(name)? {
        OwnedArg::Str(s) if s.is_empty() => FieldError::new(
            "name",
            "empty",
            "must not be empty (\":memory:\" opens a database in memory)",
        ),
        OwnedArg::Str(s) if s.contains('\0') => {
            FieldError::new("name", "invalid", "must not contain a NUL character")
        }
        OwnedArg::Str(s) if is_postgres_url(&s) => FieldError::new(
            "name",
            "invalid",
            "is a PostgreSQL URL: PostgreSQL is opened by the Python package only; in Node, \
             open() takes a SQLite file path or \":memory:\"",
        ),
        OwnedArg::Str(s) => return Ok(Some(PathBuf::from(s))),
        other => FieldError::new(
            "name",
            "type",
            format!("must be a string (a file path), got {}", other.arg().kind()),
        ),
    };
    rejected.push(problem);
    Ok(None)
}

/// Whether `name` starts with a PostgreSQL URL's scheme, `postgresql://` or `postgres://`, in
/// any case (the Python package's rule, `store::postgres_url` there). Such a name was opened as a
/// SQLite file, and the error quoted it, password included (new-user finding N5, session 7): it
/// is refused without being quoted, as the Python package's errors never show a URL's password.
fn is_postgres_url(name: &str) -> bool {
    ["postgresql://", "postgres://"].iter().any(|scheme| {
        name.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// The `durability` option: `"full"` (also for nothing) or `"normal"` (Python's rule, with its
/// messages).
fn durability_of(given: Unknown<'_>) -> napi::Result<std::result::Result<Durability, FieldError>> {
    Ok(match OwnedArg::from_js(given)? {
        OwnedArg::Null => Ok(Durability::default()),
        OwnedArg::Str(name) => Durability::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, durability)| *durability)
            .ok_or_else(|| {
                let message = format!("must be \"full\" or \"normal\", got {name:?}");
                FieldError::new("durability", "invalid", message)
            }),
        other => {
            let message = format!("must be \"full\" or \"normal\", got {}", other.arg().kind());
            Err(FieldError::new("durability", "type", message))
        }
    })
}

/// An optional function option: the function, or nothing (a `type` error in `rejected` for
/// anything but a function, undefined or null).
fn function<'a>(
    field: &'static str,
    value: Unknown<'a>,
    rejected: &mut Vec<FieldError>,
) -> napi::Result<Option<Function<'a, (), Unknown<'static>>>> {
    match value.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::Function => Ok(Some(Function::from_unknown(value)?)),
        _ => {
            let message = format!("must be a function, got {}", kind(value)?);
            rejected.push(FieldError::new(field, "type", message));
            Ok(None)
        }
    }
}

/// The checked arguments of `open`.
type Checked = (PathBuf, Limits, Durability, Clock, Replies);

/// Opening a checked file on a thread of libuv's pool.
pub struct Opening {
    checked: Option<Result<Checked>>,
}

impl<'env> ScopedTask<'env> for Opening {
    type Output = std::result::Result<NativeDatabase, String>;
    type JsValue = Either<NativeDatabase, String>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let checked = self
            .checked
            .take()
            .ok_or_else(|| napi::Error::from_reason("deadletter: opened twice"))?;
        let opened = checked.and_then(|(path, limits, durability, clock, replies)| {
            let store = SqliteStore::open(&path, durability)?;
            let shared = Shared::new(Engine::new(store, limits), clock);
            Ok(NativeDatabase::new(&path, Pool::new(shared, replies)))
        });
        Ok(opened.map_err(|err| reply::error(&err)))
    }

    fn resolve(&mut self, _env: &'env Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(database) => Either::A(database),
            Err(error) => Either::B(error),
        })
    }
}

/// An open SQLite database (internal: the package's `Database` holds one).
#[napi]
pub struct NativeDatabase {
    pool: Arc<Pool>,
    channel: Option<String>,
}

impl NativeDatabase {
    fn new(path: &Path, pool: Pool) -> Self {
        // The file's own name, whatever path led to it: the Databases of this process on one file
        // share its deaths through a BroadcastChannel of that name. None for `:memory:`, private.
        let channel = (path.as_os_str() != ":memory:")
            .then(|| std::fs::canonicalize(path).ok())
            .flatten()
            .map(|file| format!("deadletter:file:{}", file.display()));
        Self {
            pool: Arc::new(pool),
            channel,
        }
    }

    fn engine(&self) -> &Db {
        &self.pool.shared().engine
    }
}

#[napi]
impl NativeDatabase {
    /// The name of the `BroadcastChannel` of this file's deaths (null in memory).
    #[napi(getter)]
    pub fn channel(&self) -> Option<String> {
        self.channel.clone()
    }

    /// The default lease, in milliseconds.
    #[napi(getter)]
    #[allow(clippy::cast_precision_loss)] // at most 12 h
    pub fn default_lease_ms(&self) -> f64 {
        self.engine().limits().default_lease_ms as f64
    }

    /// The handle of queue `name` with the backoff policy given field by field, when `custom`
    /// (else the queue's stored policy, or the default); or the JSON text of the validation error
    /// listing every rejected field.
    #[napi]
    pub fn queue(
        &self,
        name: Unknown<'_>,
        custom: bool,
        initial_ms: Unknown<'_>,
        multiplier: Unknown<'_>,
        cap_ms: Unknown<'_>,
        jitter: Unknown<'_>,
    ) -> napi::Result<Either<NativeQueue, String>> {
        let name = OwnedArg::from_js(name)?;
        let [initial_ms, multiplier, cap_ms, jitter] = [
            OwnedArg::from_js(initial_ms)?,
            OwnedArg::from_js(multiplier)?,
            OwnedArg::from_js(cap_ms)?,
            OwnedArg::from_js(jitter)?,
        ];
        let checked = deadletter::validate::queue_name(&name.arg()).map(str::to_owned);
        let policy = if custom {
            Backoff::new(
                &initial_ms.arg(),
                &multiplier.arg(),
                &cap_ms.arg(),
                &jitter.arg(),
            )
            .map(Some)
        } else {
            Ok(None)
        };
        Ok(match (checked, policy) {
            (Ok(name), Ok(policy)) => Either::A(NativeQueue::new(&self.pool, name, policy)),
            (name, policy) => Either::B(reply::error(&combine(
                [name.err(), policy.err()].into_iter().flatten(),
            ))),
        })
    }

    /// `Database.queues`: the statistics of every queue that holds messages, by name (the
    /// call's id: see [`open`]).
    #[napi]
    pub fn queues(&self) -> u32 {
        self.pool.submit_read(Box::new(|db, clock| {
            reply::of(pollster::block_on(db.queues(clock)))
        }))
    }

    /// Starts the calls made since the last `flush` (the package calls it at the end of each
    /// JavaScript tick that made calls: they go to one thread as one batch).
    #[napi]
    pub fn flush(&self) {
        self.pool.flush();
    }

    /// Whether the process stays alive for the replies of this database's calls: the package
    /// holds it while calls are out.
    #[napi]
    pub fn hold(&self, env: Env, hold: bool) -> napi::Result<()> {
        self.pool.hold(env, hold)
    }

    /// The worker loop's plan (`Queue.process`), or the JSON text of its validation error.
    #[napi]
    pub fn worker_plan(
        &self,
        concurrency: Unknown<'_>,
        poll_interval_ms: Unknown<'_>,
        shutdown_timeout_ms: Unknown<'_>,
        lease_ms: Unknown<'_>,
    ) -> napi::Result<Either<NativeWorkerPlan, String>> {
        let default = self.engine().limits().default_lease_ms;
        Ok(
            match NativeWorkerPlan::new(
                default,
                [concurrency, poll_interval_ms, shutdown_timeout_ms, lease_ms],
            )? {
                Ok(plan) => Either::A(plan),
                Err(err) => Either::B(reply::error(&err)),
            },
        )
    }

    /// Closes the file (committing what waits for a commit) and ends the database's threads
    /// (the package calls it once every call made has settled); later calls fail with a store
    /// error. The JSON text of the outcome.
    #[napi]
    pub fn close(&self) -> String {
        let closed = self.engine().store().close();
        self.pool.close();
        reply::of(closed)
    }
}
