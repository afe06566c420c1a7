//! The objects exported to JavaScript. `js/index.js` wraps them in the public `Database` and
//! `Queue` classes; this layer converts arguments, reads the clock, draws the jitter sample and the
//! lease tokens *before* calling the engine (so before any transaction opens), and maps every
//! error once. Calls that can make messages dead resolve to `{ value, dead }`: `dead` is the
//! engine's [`deadletter::Outcome::dead`], which `js/index.js` hands to the `onDead` callbacks.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use deadletter::{
    Arg, Backoff, Engine, Error, FieldError, Limits, Message, Millis, Moment, Result,
};
use js_sys::{Array, Date, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::IdbFactory;

use crate::args::{OwnedArg, OwnedItem, function, kind};
use crate::errors;
use crate::idb_store::IdbStore;
use crate::names::uuid_v4;
use crate::record::{stats_to_js, to_js};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(buffer: &Uint8Array) -> std::result::Result<JsValue, JsValue>;
}

/// `count` fresh lease tokens: version-4 UUIDs from one call of `crypto.getRandomValues`.
pub fn lease_tokens(count: usize) -> Result<Vec<String>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let buffer = Uint8Array::new_with_length(u32::try_from(16 * count).unwrap_or(u32::MAX));
    get_random_values(&buffer)
        .map_err(|e| crate::connection::js_error("crypto.getRandomValues", &e))?;
    let bytes = buffer.to_vec();
    Ok(bytes
        .chunks_exact(16)
        .map(|chunk| {
            let mut token = [0u8; 16];
            token.copy_from_slice(chunk);
            uuid_v4(token)
        })
        .collect())
}

fn type_error(field: &'static str, expected: &str, got: &JsValue) -> FieldError {
    FieldError::new(
        field,
        "type",
        format!("must be {expected}, got {}", kind(got)),
    )
}

/// The field errors of `errors` together, when they are all validation errors; else the first
/// other error.
fn combine(errors: impl IntoIterator<Item = Error>) -> Option<Error> {
    let mut fields = Vec::new();
    for error in errors {
        match error {
            Error::Validation(more) => fields.extend(more),
            other => return Some(other),
        }
    }
    (!fields.is_empty()).then_some(Error::Validation(fields))
}

/// The delay before the next attempt after the `retryCount`-th failure, in milliseconds:
/// `min(2^retryCount, 3600)` seconds. Throws a `validation_failed` `DeadLetterError` unless
/// `retryCount` is an integer >= 0 (of any size: `2**53` and `2**63 - 1` give 3600000; `2**64`
/// is `out_of_range`, as in Python).
#[wasm_bindgen(js_name = backoffMs)]
pub fn backoff_ms(retry_count: &JsValue) -> std::result::Result<f64, JsValue> {
    let delay = deadletter::backoff(&OwnedArg::from_js(retry_count).arg())
        .map_err(|e| errors::to_js(&e))?;
    // At most 3_600_000: exact as f64.
    #[allow(clippy::cast_precision_loss)]
    Ok(delay as f64)
}

/// An optional function option of `open`: `None` for undefined/null, a type error otherwise.
fn optional_function(
    field: &'static str,
    value: &JsValue,
    rejected: &mut Vec<FieldError>,
) -> Option<Function> {
    if value.is_undefined() || value.is_null() {
        None
    } else if let Some(f) = function(value) {
        Some(f)
    } else {
        rejected.push(type_error(field, "a function", value));
        None
    }
}

/// Opens the queue database `name` (an IndexedDB database of that name from `factory`, default
/// `globalThis.indexedDB`) with the open-time options. Used by `open()` in `js/index.js`.
#[wasm_bindgen(js_name = openDatabase)]
pub async fn open_database(
    name: JsValue,
    factory: JsValue,
    lease_ms: JsValue,
    max_payload_bytes: JsValue,
    clock: JsValue,
    random: JsValue,
) -> std::result::Result<Handle, JsValue> {
    open(name, factory, lease_ms, max_payload_bytes, clock, random)
        .await
        .map_err(|e| errors::to_js(&e))
}

async fn open(
    name: JsValue,
    factory: JsValue,
    lease_ms: JsValue,
    max_payload_bytes: JsValue,
    clock: JsValue,
    random: JsValue,
) -> Result<Handle> {
    let mut rejected = Vec::new();
    let limits = Limits::new(
        &OwnedArg::from_js(&lease_ms).arg(),
        &OwnedArg::from_js(&max_payload_bytes).arg(),
    );
    if let Err(err) = &limits {
        rejected.extend_from_slice(err.field_errors());
    }
    // Like every string argument, the name must convert exactly (no unpaired surrogate).
    let db_name = match OwnedArg::from_js(&name) {
        // As Python rejects an empty path: most likely an unset setting, not a chosen name.
        OwnedArg::Str(s) if s.is_empty() => {
            rejected.push(FieldError::new("name", "empty", "must not be empty"));
            None
        }
        OwnedArg::Str(s) => Some(s),
        other => {
            rejected.push(FieldError::new(
                "name",
                "type",
                format!("must be a string, got {}", other.arg().kind()),
            ));
            None
        }
    };
    let clock = optional_function("clock", &clock, &mut rejected);
    let random = optional_function("random", &random, &mut rejected);
    let factory = if factory.is_undefined() || factory.is_null() {
        // `indexedDB` of the global object: window, worker or Node (with fake-indexeddb/auto).
        let global = Reflect::get(&js_sys::global(), &"indexedDB".into()).ok();
        let found = global.filter(JsValue::is_object).ok_or_else(|| {
            Error::Store(
                "no indexedDB in this environment: pass options.indexedDB (an IDBFactory)".into(),
            )
        })?;
        Some(found.unchecked_into::<IdbFactory>())
    } else if Reflect::get(&factory, &"open".into()).is_ok_and(|open| open.is_function()) {
        // An object with an `open` method: an IDBFactory as far as can be told before using it.
        Some(factory.unchecked_into::<IdbFactory>())
    } else {
        rejected.push(type_error("indexedDB", "an IDBFactory", &factory));
        None
    };
    if !rejected.is_empty() {
        return Err(Error::Validation(rejected));
    }
    let (Ok(limits), Some(db_name), Some(factory)) = (limits, db_name, factory) else {
        return Err(Error::Store("unreachable: options checked above".into()));
    };
    let store = IdbStore::open(&factory, &db_name).await?;
    Ok(Handle {
        shared: Rc::new(Shared {
            engine: Engine::new(store, limits),
            clock,
            random,
            name: db_name,
        }),
    })
}

/// What a database's handles share: the engine over the store, and the user's clock and random
/// source.
struct Shared {
    engine: Engine<IdbStore>,
    clock: Option<Function>,
    random: Option<Function>,
    name: String,
}

impl Shared {
    /// A `store` error once the connection is closed (checked before anything else is done).
    fn open(&self) -> Result<()> {
        if self.engine.store().is_closed() {
            Err(Error::Store("the database is closed".into()))
        } else {
            Ok(())
        }
    }

    /// The time from the clock: a `Date` or a number of milliseconds (floored). Any finite value
    /// goes to the core, which rejects one outside its representable range (`clock`,
    /// `out_of_range`); a value that is no time at all (NaN, an invalid `Date`, a string) is a
    /// `type` error on `clock`.
    fn now(&self) -> Result<Millis> {
        self.open()?;
        let Some(clock) = &self.clock else {
            return Ok(whole_ms(Date::now()));
        };
        let value = clock
            .call0(&JsValue::UNDEFINED)
            .map_err(|e| crate::connection::js_error("clock", &e))?;
        let ms = match value.dyn_ref::<Date>() {
            Some(date) => Some(date.get_time()),
            None => value.as_f64(),
        };
        match ms {
            Some(ms) if ms.is_finite() => Ok(whole_ms(ms)),
            _ => Err(Error::Validation(vec![type_error(
                "clock",
                "a function returning a valid Date or a finite number of milliseconds",
                &value,
            )])),
        }
    }

    /// The jitter sample of one call: from the `random` option, else `Math.random()`; checked by
    /// the core to be a number in `[0, 1)` (field `random`).
    fn sample(&self) -> Result<f64> {
        let Some(random) = &self.random else {
            return Ok(js_sys::Math::random());
        };
        let value = random
            .call0(&JsValue::UNDEFINED)
            .map_err(|e| crate::connection::js_error("random", &e))?;
        deadletter::validate::jitter_sample(&OwnedArg::from_js(&value).arg())
    }

    /// The clock and the jitter sample, for a call that may reschedule messages.
    fn moment(&self) -> Result<(Millis, f64)> {
        self.open()?;
        match (self.now(), self.sample()) {
            (Ok(now), Ok(sample)) => Ok((now, sample)),
            (now, sample) => Err(combine([now.err(), sample.err()].into_iter().flatten())
                .unwrap_or_else(|| Error::Store("unreachable".into()))),
        }
    }
}

/// A time in milliseconds, already checked finite; saturates beyond the range of `i64` (the
/// core rejects it then).
#[allow(clippy::cast_possible_truncation)]
fn whole_ms(ms: f64) -> Millis {
    ms.floor() as Millis
}

/// Runs a prepared engine call as a promise that rejects with a `DeadLetterError`.
fn promise<F>(prepared: Result<F>) -> Promise
where
    F: Future<Output = Result<JsValue>> + 'static,
{
    // Boxed, so that the promise machinery exists once rather than once per method.
    let call: Result<Pin<Box<dyn Future<Output = Result<JsValue>>>>> =
        prepared.map(|call| Box::pin(call) as _);
    settle(call)
}

fn settle(prepared: Result<Pin<Box<dyn Future<Output = Result<JsValue>>>>>) -> Promise {
    future_to_promise(async move {
        match prepared {
            Ok(call) => call.await,
            Err(err) => Err(err),
        }
        .map_err(|e| errors::to_js(&e))
    })
}

/// `{ value, dead }`: what a call that can make messages dead resolves to.
fn outcome(value: &JsValue, dead: &[Message]) -> JsValue {
    let object = Object::new();
    let _ = Reflect::set(&object, &"value".into(), value);
    let dead: Array = dead.iter().map(to_js).collect();
    let _ = Reflect::set(&object, &"dead".into(), &dead);
    object.into()
}

fn messages(list: &[Message]) -> JsValue {
    list.iter().map(to_js).collect::<Array>().into()
}

#[allow(clippy::cast_precision_loss)] // counts are far below 2^53
fn count(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// One open queue database (internal; see `Database` in `js/index.js`).
#[wasm_bindgen]
pub struct Handle {
    shared: Rc<Shared>,
}

#[wasm_bindgen]
impl Handle {
    /// The IndexedDB database name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.shared.name.clone()
    }

    /// The handle of queue `name` with the backoff policy given field by field (null: the
    /// default). Throws a `DeadLetterError` (`validation_failed`) listing every rejected field
    /// unless `name` is a valid queue name and the policy valid.
    pub fn queue(
        &self,
        name: &JsValue,
        initial_ms: &JsValue,
        multiplier: &JsValue,
        cap_ms: &JsValue,
        jitter: &JsValue,
    ) -> std::result::Result<QueueHandle, JsValue> {
        let name = OwnedArg::from_js(name);
        let [initial_ms, multiplier, cap_ms, jitter] =
            [initial_ms, multiplier, cap_ms, jitter].map(OwnedArg::from_js);
        let checked = deadletter::validate::queue_name(&name.arg()).map(str::to_owned);
        let policy = Backoff::new(
            &initial_ms.arg(),
            &multiplier.arg(),
            &cap_ms.arg(),
            &jitter.arg(),
        );
        match (checked, policy) {
            (Ok(name), Ok(policy)) => Ok(QueueHandle {
                shared: self.shared.clone(),
                name,
                policy,
            }),
            (name, policy) => {
                let errors = [name.err(), policy.err()].into_iter().flatten();
                let error = combine(errors).unwrap_or_else(|| Error::Store("unreachable".into()));
                Err(errors::to_js(&error))
            }
        }
    }

    /// See `Database.queues`.
    pub fn queues(&self) -> Promise {
        let shared = self.shared.clone();
        promise(self.shared.now().map(|now| async move {
            let all = shared.engine.queues(now).await?;
            Ok(all.iter().map(stats_to_js).collect::<Array>().into())
        }))
    }

    /// Closes the connection; later calls reject with a `store` error.
    pub fn close(&self) {
        self.shared.engine.store().close();
    }
}

/// One queue of an open database with its backoff policy (internal; see `Queue` in
/// `js/index.js`). Each method converts its arguments, reads what it needs of the clock, the
/// random source and `crypto`, then runs one engine call.
#[wasm_bindgen]
pub struct QueueHandle {
    shared: Rc<Shared>,
    name: String,
    policy: Backoff,
}

impl QueueHandle {
    /// The shared state, the queue name and the policy, to move into a call's future.
    fn parts(&self) -> (Rc<Shared>, String, Backoff) {
        (self.shared.clone(), self.name.clone(), self.policy)
    }

    /// The database's default lease, in milliseconds (for the worker loop's plan).
    pub(crate) fn default_lease_ms(&self) -> Millis {
        self.shared.engine.limits().default_lease_ms
    }

    /// The database clock's time (for the worker loop's idle wait).
    pub(crate) fn now(&self) -> Result<Millis> {
        self.shared.now()
    }
}

#[wasm_bindgen]
impl QueueHandle {
    /// See `Queue.enqueue`.
    pub fn enqueue(
        &self,
        payload: &JsValue,
        max_retries: &JsValue,
        idempotency_key: &JsValue,
        delay_ms: &JsValue,
    ) -> Promise {
        let item = OwnedItem::from_js([payload, max_retries, idempotency_key, delay_ms]);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let message = shared
                .engine
                .enqueue(Arg::Str(&queue), &item.item(), now)
                .await?;
            Ok(to_js(&message))
        }))
    }

    /// See `Queue.enqueueMany`; `rows` holds one `[payload, maxRetries, idempotencyKey, delayMs]`
    /// array per item.
    #[wasm_bindgen(js_name = enqueueMany)]
    pub fn enqueue_many(&self, rows: &Array) -> Promise {
        let items: Vec<OwnedItem> = rows.iter().map(|row| OwnedItem::from_row(&row)).collect();
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let items: Vec<_> = items.iter().map(OwnedItem::item).collect();
            let added = shared
                .engine
                .enqueue_many(Arg::Str(&queue), &items, now)
                .await?;
            Ok(messages(&added))
        }))
    }

    /// See `Queue.claim`; resolves to `{ value: message or null, dead }`.
    pub fn claim(&self, lease_ms: &JsValue) -> Promise {
        let lease = OwnedArg::from_js(lease_ms);
        let (shared, queue, policy) = self.parts();
        let prepared = self.shared.moment().and_then(|m| Ok((m, lease_tokens(1)?)));
        promise(prepared.map(|((now, sample), tokens)| async move {
            let at = Moment {
                policy: &policy,
                sample,
                now,
            };
            let mut tokens = tokens.into_iter();
            let claimed = shared
                .engine
                .claim(
                    Arg::Str(&queue),
                    lease.arg(),
                    || tokens.next().unwrap_or_default(),
                    at,
                )
                .await?;
            let value = claimed.value.as_ref().map_or(JsValue::NULL, to_js);
            Ok(outcome(&value, &claimed.dead))
        }))
    }

    /// See `Queue.claimMany`; resolves to `{ value: messages, dead }`.
    #[wasm_bindgen(js_name = claimMany)]
    pub fn claim_many(&self, n: &JsValue, lease_ms: &JsValue) -> Promise {
        let [n, lease] = [n, lease_ms].map(OwnedArg::from_js);
        // As many tokens as messages may be taken (the core rejects an `n` outside 1..=100).
        let wanted = match n {
            OwnedArg::Int(n) => usize::try_from(n.clamp(0, 100)).unwrap_or_default(),
            _ => 0,
        };
        let (shared, queue, policy) = self.parts();
        let prepared = self
            .shared
            .moment()
            .and_then(|m| Ok((m, lease_tokens(wanted)?)));
        promise(prepared.map(|((now, sample), tokens)| async move {
            let at = Moment {
                policy: &policy,
                sample,
                now,
            };
            let mut tokens = tokens.into_iter();
            let claimed = shared
                .engine
                .claim_many(
                    Arg::Str(&queue),
                    n.arg(),
                    lease.arg(),
                    || tokens.next().unwrap_or_default(),
                    at,
                )
                .await?;
            Ok(outcome(&messages(&claimed.value), &claimed.dead))
        }))
    }

    /// See `Queue.reap`; resolves to `{ value: count, dead }`.
    pub fn reap(&self) -> Promise {
        let (shared, queue, policy) = self.parts();
        promise(self.shared.moment().map(|(now, sample)| async move {
            let at = Moment {
                policy: &policy,
                sample,
                now,
            };
            let reaped = shared.engine.reap(Arg::Str(&queue), at).await?;
            Ok(outcome(&count(reaped.value), &reaped.dead))
        }))
    }

    /// See `Queue.succeed`.
    pub fn succeed(&self, id: &JsValue, lease_token: &JsValue) -> Promise {
        let [id, token] = [id, lease_token].map(OwnedArg::from_js);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let engine = &shared.engine;
            let message = engine
                .succeed(Arg::Str(&queue), id.arg(), token.arg(), now)
                .await?;
            Ok(to_js(&message))
        }))
    }

    /// See `Queue.fail`; resolves to `{ value: message, dead }`.
    pub fn fail(
        &self,
        id: &JsValue,
        error: &JsValue,
        lease_token: &JsValue,
        retryable: &JsValue,
    ) -> Promise {
        let [id, error, token, retryable] =
            [id, error, lease_token, retryable].map(OwnedArg::from_js);
        let (shared, queue, policy) = self.parts();
        promise(self.shared.moment().map(|(now, sample)| async move {
            let at = Moment {
                policy: &policy,
                sample,
                now,
            };
            let failed = shared
                .engine
                .fail(
                    Arg::Str(&queue),
                    id.arg(),
                    error.arg(),
                    token.arg(),
                    retryable.arg(),
                    at,
                )
                .await?;
            Ok(outcome(&to_js(&failed.value), &failed.dead))
        }))
    }

    /// See `Queue.extend`.
    pub fn extend(&self, id: &JsValue, lease_token: &JsValue, lease_ms: &JsValue) -> Promise {
        let [id, token, lease] = [id, lease_token, lease_ms].map(OwnedArg::from_js);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let message = shared
                .engine
                .extend(Arg::Str(&queue), id.arg(), token.arg(), lease.arg(), now)
                .await?;
            Ok(to_js(&message))
        }))
    }

    /// See `Queue.replay`.
    pub fn replay(&self, id: &JsValue) -> Promise {
        let id = OwnedArg::from_js(id);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            Ok(to_js(
                &shared
                    .engine
                    .replay(Arg::Str(&queue), id.arg(), now)
                    .await?,
            ))
        }))
    }

    /// See `Queue.replayAll`; resolves to the number replayed.
    #[wasm_bindgen(js_name = replayAll)]
    pub fn replay_all(
        &self,
        error_contains: &JsValue,
        dead_before: &JsValue,
        dead_after: &JsValue,
        limit: &JsValue,
    ) -> Promise {
        let [text, limit] = [error_contains, limit].map(OwnedArg::from_js);
        let [before, after] = [dead_before, dead_after].map(OwnedArg::instant);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let replayed = shared
                .engine
                .replay_all(
                    Arg::Str(&queue),
                    text.arg(),
                    before.arg(),
                    after.arg(),
                    limit.arg(),
                    now,
                )
                .await?;
            Ok(count(replayed))
        }))
    }

    /// See `Queue.purge`; resolves to the number deleted.
    pub fn purge(&self, status: &JsValue, older_than_ms: &JsValue) -> Promise {
        let [status, older] = [status, older_than_ms].map(OwnedArg::from_js);
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let purged = shared
                .engine
                .purge(Arg::Str(&queue), status.arg(), older.arg(), now)
                .await?;
            Ok(count(purged))
        }))
    }

    /// See `Queue.delete`.
    pub fn delete(&self, id: &JsValue) -> Promise {
        let id = OwnedArg::from_js(id);
        let (shared, queue, _) = self.parts();
        promise(self.shared.open().map(|()| async move {
            Ok(to_js(
                &shared.engine.delete(Arg::Str(&queue), id.arg()).await?,
            ))
        }))
    }

    /// See `Queue.stats`.
    pub fn stats(&self) -> Promise {
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            Ok(stats_to_js(
                &shared.engine.stats(Arg::Str(&queue), now).await?,
            ))
        }))
    }

    /// See `Queue.nextDueAt`; resolves to a `Date` or null.
    #[wasm_bindgen(js_name = nextDueAt)]
    pub fn next_due_at(&self) -> Promise {
        let (shared, queue, _) = self.parts();
        promise(self.shared.now().map(|now| async move {
            let at = shared.engine.next_due_at(Arg::Str(&queue), now).await?;
            #[allow(clippy::cast_precision_loss)]
            Ok(at.map_or(JsValue::NULL, |ms| {
                Date::new(&JsValue::from_f64(ms as f64)).into()
            }))
        }))
    }

    /// See `Queue.get`.
    pub fn get(&self, id: &JsValue) -> Promise {
        let id = OwnedArg::from_js(id);
        let (shared, queue, _) = self.parts();
        promise(self.shared.open().map(|()| async move {
            Ok(to_js(&shared.engine.get(Arg::Str(&queue), id.arg()).await?))
        }))
    }

    /// See `Queue.list`.
    pub fn list(&self, status: &JsValue, limit: &JsValue, after_id: &JsValue) -> Promise {
        let [status, limit, after] = [status, limit, after_id].map(OwnedArg::from_js);
        let (shared, queue, _) = self.parts();
        promise(self.shared.open().map(|()| async move {
            let page = shared
                .engine
                .list(Arg::Str(&queue), status.arg(), limit.arg(), after.arg())
                .await?;
            Ok(messages(&page))
        }))
    }
}
