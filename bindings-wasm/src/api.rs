//! The objects exported to JavaScript. `js/index.js` wraps them in the public `Database` and
//! `Queue` classes; this layer converts arguments, reads the clock and draws lease tokens *before*
//! calling the engine (so before any transaction opens), and maps every error once.

use std::future::Future;
use std::rc::Rc;

use deadletter::{Engine, Error, FieldError, Limits, Millis, Result};
use idb::Factory;
use js_sys::{Array, Date, Function, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::IdbFactory;

use crate::args::{OwnedArg, function, kind};
use crate::errors;
use crate::idb_store::IdbStore;
use crate::names::uuid_v4;
use crate::record::to_js;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(buffer: &Uint8Array) -> std::result::Result<JsValue, JsValue>;
}

/// A fresh lease token: a version-4 UUID from `crypto.getRandomValues`.
pub fn lease_token() -> Result<String> {
    let buffer = Uint8Array::new_with_length(16);
    get_random_values(&buffer)
        .map_err(|e| crate::connection::js_error("crypto.getRandomValues", &e))?;
    let mut bytes = [0u8; 16];
    buffer.copy_to(&mut bytes);
    Ok(uuid_v4(bytes))
}

fn type_error(field: &'static str, expected: &str, got: &JsValue) -> FieldError {
    FieldError {
        field,
        code: "type",
        message: format!("must be {expected}, got {}", kind(got)),
    }
}

/// The delay before the next attempt after the `retryCount`-th failure, in milliseconds:
/// `min(2^retryCount, 3600)` seconds. Throws a `validation_failed` `DeadLetterError` unless
/// `retryCount` is an integer >= 0.
#[wasm_bindgen(js_name = backoffMs)]
pub fn backoff_ms(retry_count: &JsValue) -> std::result::Result<f64, JsValue> {
    let delay = deadletter::backoff(&OwnedArg::from_js(retry_count).arg())
        .map_err(|e| errors::to_js(&e))?;
    // At most 3_600_000: exact as f64.
    #[allow(clippy::cast_precision_loss)]
    Ok(delay as f64)
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
) -> std::result::Result<Handle, JsValue> {
    open(name, factory, lease_ms, max_payload_bytes, clock)
        .await
        .map_err(|e| errors::to_js(&e))
}

async fn open(
    name: JsValue,
    factory: JsValue,
    lease_ms: JsValue,
    max_payload_bytes: JsValue,
    clock: JsValue,
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
            rejected.push(FieldError {
                field: "name",
                code: "empty",
                message: "must not be empty".into(),
            });
            None
        }
        OwnedArg::Str(s) => Some(s),
        other => {
            rejected.push(FieldError {
                field: "name",
                code: "type",
                message: format!("must be a string, got {}", other.arg().kind()),
            });
            None
        }
    };
    let clock = if clock.is_undefined() || clock.is_null() {
        None
    } else if let Some(f) = function(&clock) {
        Some(f)
    } else {
        rejected.push(type_error("clock", "a function", &clock));
        None
    };
    let factory = if factory.is_undefined() || factory.is_null() {
        // idb finds `indexedDB` on window, worker and Node globals.
        Some(Factory::new().map_err(|_| {
            Error::Store(
                "no indexedDB in this environment: pass options.indexedDB (an IDBFactory)".into(),
            )
        })?)
    } else if factory.is_object() {
        Some(Factory::from(factory.unchecked_into::<IdbFactory>()))
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
        engine: Rc::new(Engine::new(store, limits)),
        clock,
        name: db_name,
    })
}

/// One open queue database (internal; see `Database` in `js/index.js`).
#[wasm_bindgen]
pub struct Handle {
    engine: Rc<Engine<IdbStore>>,
    clock: Option<Function>,
    name: String,
}

impl Handle {
    fn now(&self) -> Result<Millis> {
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
            Some(ms) if ms.is_finite() && ms.abs() < 8.64e15 => Ok(whole_ms(ms)),
            _ => Err(Error::Validation(vec![type_error(
                "clock",
                "a function returning a valid Date or a number of milliseconds",
                &value,
            )])),
        }
    }

    /// Runs one engine call: closed check, clock, then `call` (which converts its result), as a
    /// promise that rejects with a `DeadLetterError`.
    fn run<F>(&self, call: impl FnOnce(Rc<Engine<IdbStore>>, Millis) -> F) -> Promise
    where
        F: Future<Output = Result<JsValue>> + 'static,
    {
        let started = if self.engine.store().is_closed() {
            Err(Error::Store("the database is closed".into()))
        } else {
            self.now()
        };
        let future = started.map(|now| call(self.engine.clone(), now));
        future_to_promise(async move {
            match future {
                Ok(future) => future.await,
                Err(err) => Err(err),
            }
            .map_err(|e| errors::to_js(&e))
        })
    }
}

/// A time in milliseconds, already checked finite and within the range of `Date`.
#[allow(clippy::cast_possible_truncation)]
fn whole_ms(ms: f64) -> Millis {
    ms.floor() as Millis
}

#[wasm_bindgen]
impl Handle {
    /// The IndexedDB database name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Throws a `DeadLetterError` (`validation_failed`) unless `name` is a valid queue name.
    #[wasm_bindgen(js_name = checkQueue)]
    pub fn check_queue(&self, name: &JsValue) -> std::result::Result<(), JsValue> {
        deadletter::validate::queue_name(&OwnedArg::from_js(name).arg())
            .map(drop)
            .map_err(|e| errors::to_js(&e))
    }

    /// See `Queue.enqueue`.
    pub fn enqueue(&self, queue: &JsValue, payload: &JsValue, max_retries: &JsValue) -> Promise {
        let args = [queue, payload, max_retries].map(OwnedArg::from_js);
        self.run(|engine, now| async move {
            let [q, p, m] = &args;
            let message = engine.enqueue(q.arg(), p.arg(), m.arg(), now).await?;
            Ok(to_js(&message))
        })
    }

    /// See `Queue.claim`.
    pub fn claim(&self, queue: &JsValue, lease_ms: &JsValue) -> Promise {
        let args = [queue, lease_ms].map(OwnedArg::from_js);
        let token = lease_token();
        self.run(|engine, now| async move {
            let [q, lease] = &args;
            let claimed = engine.claim(q.arg(), lease.arg(), token?, now).await?;
            Ok(claimed.as_ref().map_or(JsValue::NULL, to_js))
        })
    }

    /// See `Queue.succeed`.
    pub fn succeed(&self, queue: &JsValue, id: &JsValue, lease_token: &JsValue) -> Promise {
        let args = [queue, id, lease_token].map(OwnedArg::from_js);
        self.run(|engine, now| async move {
            let [q, id, token] = &args;
            let message = engine.succeed(q.arg(), id.arg(), token.arg(), now).await?;
            Ok(to_js(&message))
        })
    }

    /// See `Queue.fail`.
    pub fn fail(
        &self,
        queue: &JsValue,
        id: &JsValue,
        error: &JsValue,
        lease_token: &JsValue,
        retryable: &JsValue,
    ) -> Promise {
        let args = [queue, id, error, lease_token, retryable].map(OwnedArg::from_js);
        self.run(|engine, now| async move {
            let [q, id, error, token, retryable] = &args;
            let message = engine
                .fail(
                    q.arg(),
                    id.arg(),
                    error.arg(),
                    token.arg(),
                    retryable.arg(),
                    now,
                )
                .await?;
            Ok(to_js(&message))
        })
    }

    /// See `Queue.replay`.
    pub fn replay(&self, queue: &JsValue, id: &JsValue) -> Promise {
        let args = [queue, id].map(OwnedArg::from_js);
        self.run(|engine, now| async move {
            let [q, id] = &args;
            Ok(to_js(&engine.replay(q.arg(), id.arg(), now).await?))
        })
    }

    /// See `Queue.get`.
    pub fn get(&self, queue: &JsValue, id: &JsValue) -> Promise {
        let args = [queue, id].map(OwnedArg::from_js);
        self.run(|engine, _now| async move {
            let [q, id] = &args;
            Ok(to_js(&engine.get(q.arg(), id.arg()).await?))
        })
    }

    /// See `Queue.list`.
    pub fn list(
        &self,
        queue: &JsValue,
        status: &JsValue,
        limit: &JsValue,
        after_id: &JsValue,
    ) -> Promise {
        let args = [queue, status, limit, after_id].map(OwnedArg::from_js);
        self.run(|engine, _now| async move {
            let [q, status, limit, after] = &args;
            let page = engine
                .list(q.arg(), status.arg(), limit.arg(), after.arg())
                .await?;
            Ok(page.iter().map(to_js).collect::<Array>().into())
        })
    }

    /// Closes the connection; later calls reject with a `store` error.
    pub fn close(&self) {
        self.engine.store().close();
    }
}
