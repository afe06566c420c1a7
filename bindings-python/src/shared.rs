//! What a `Database` and its `Queue`s share ([`Shared`]: the engine over the store, the clock,
//! the random source of jitter, the dead-letter callbacks), and [`Shared::run`], which makes one
//! engine call with the GIL released, handing it the database's clock (which the store reads
//! once it holds its write lock: issue 23, item 2).

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use deadletter::{Clock, Engine, Error, Message, Millis};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{Value, system_now, to_millis};
use crate::errors::to_py_err;
use crate::message::PyMessage;
use crate::store::AnyStore;

/// What a `Database` and its `Queue`s share.
pub struct Shared {
    /// The rules over the store (SQLite or PostgreSQL).
    pub engine: Engine<AnyStore>,
    /// The user's clock (zero-argument callable returning an aware datetime); `None`: the system
    /// clock.
    pub clock: Option<Py<PyAny>>,
    /// The user's random source for jitter (zero-argument callable returning a float in
    /// `[0, 1)`); `None`: `fastrand`.
    pub random: Option<Py<PyAny>>,
    /// The dead-letter callbacks, by subscription number, in subscription order.
    dead_letters: Mutex<Vec<(u64, Py<PyAny>)>>,
    /// The next subscription number.
    next_subscription: AtomicU64,
}

impl Shared {
    /// The shared state of a database just opened.
    pub fn new(
        engine: Engine<AnyStore>,
        clock: Option<Py<PyAny>>,
        random: Option<Py<PyAny>>,
    ) -> Self {
        Self {
            engine,
            clock,
            random,
            dead_letters: Mutex::new(Vec::new()),
            next_subscription: AtomicU64::new(0),
        }
    }

    /// The current instant, in UTC milliseconds, read with the GIL held.
    pub(crate) fn now(&self, py: Python<'_>) -> PyResult<Millis> {
        match &self.clock {
            Some(clock) => to_millis(&clock.bind(py).call0()?, "clock"),
            None => Ok(system_now()),
        }
    }

    /// The jitter sample of an operation that may reschedule messages (a policy without jitter
    /// ignores it), drawn with the GIL held, before the call.
    pub(crate) fn sample(&self, py: Python<'_>) -> PyResult<f64> {
        match &self.random {
            None => Ok(fastrand::f64()),
            Some(random) => {
                let drawn = Value::from_py(Some(&random.bind(py).call0()?));
                deadletter::validate::jitter_sample(&drawn.arg()).map_err(|err| to_py_err(py, &err))
            }
        }
    }

    /// Runs one engine call with the GIL released (the store may wait up to 30 s for a lock, or
    /// for a connection), handing it the database's clock, and maps its error to a `deadletter`
    /// exception. The store reads the clock once it holds its write lock (a read when it
    /// starts): the system clock without the GIL, or the user's `clock` with the GIL taken
    /// again; what the user's clock raises (or a naive datetime's `ValidationError`) is raised
    /// unchanged, the call having written nothing.
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        call: impl AsyncFnOnce(Clock<'_>) -> deadletter::Result<T> + Send,
    ) -> PyResult<T> {
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let clock = || -> deadletter::Result<Millis> {
            if self.clock.is_none() {
                return Ok(system_now());
            }
            Python::attach(|py| self.now(py)).map_err(|err| {
                let text = err.to_string();
                if let Ok(mut slot) = raised.lock() {
                    slot.get_or_insert(err);
                }
                Error::Store(format!("the clock raised: {text}"))
            })
        };
        let result = py.detach(|| pollster::block_on(call(&clock)));
        if let Some(err) = raised.into_inner().ok().flatten() {
            return Err(err);
        }
        result.map_err(|err| to_py_err(py, &err))
    }

    /// Registers `callback` as a dead-letter callback; its subscription number.
    pub(crate) fn subscribe(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        let id = self.next_subscription.fetch_add(1, Ordering::Relaxed);
        self.dead_letters
            .lock()
            .map_err(|_| to_py_err(py, &Error::Store("callbacks poisoned".into())))?
            .push((id, callback));
        Ok(id)
    }

    /// Unregisters the callback of subscription `id`, if it is still registered. The callback is
    /// dropped after the lock is released: dropping it may run Python code.
    pub(crate) fn unsubscribe(&self, id: u64) {
        let removed = self.dead_letters.lock().ok().and_then(|mut list| {
            let at = list
                .iter()
                .position(|(subscription, _)| *subscription == id)?;
            Some(list.remove(at))
        });
        drop(removed);
    }

    /// Lets go of every dead-letter callback (the database was closed), after the lock is
    /// released.
    pub(crate) fn forget_callbacks(&self) {
        let callbacks = self
            .dead_letters
            .lock()
            .map(|mut list| std::mem::take(&mut *list));
        drop(callbacks);
    }

    /// Calls every dead-letter callback with each message of `dead` (committed), in order, with
    /// the GIL held. An `Exception` a callback raises is logged on the `deadletter` logger and
    /// changes nothing; a `BaseException` that is not an `Exception` (`KeyboardInterrupt`,
    /// `SystemExit`) propagates.
    pub(crate) fn notify(&self, py: Python<'_>, dead: Vec<Message>) -> PyResult<()> {
        if dead.is_empty() {
            return Ok(());
        }
        let callbacks: Vec<Py<PyAny>> = match self.dead_letters.lock() {
            Ok(list) => list.iter().map(|(_, cb)| cb.clone_ref(py)).collect(),
            Err(_) => return Err(to_py_err(py, &Error::Store("callbacks poisoned".into()))),
        };
        for message in dead {
            for callback in &callbacks {
                let id = message.id;
                if let Err(err) = callback.call1(py, (PyMessage(message.clone()),)) {
                    if !err.is_instance_of::<PyException>(py) {
                        return Err(err);
                    }
                    report(py, callback, id, &err);
                }
            }
        }
        Ok(())
    }
}

/// Logs a dead-letter callback's exception with its traceback on the `deadletter` logger.
fn report(py: Python<'_>, callback: &Py<PyAny>, id: deadletter::Id, err: &PyErr) {
    let logged = (|| -> PyResult<()> {
        let logger = py
            .import("logging")?
            .call_method1("getLogger", ("deadletter",))?;
        let kwargs = PyDict::new(py);
        let exc_info = (err.get_type(py), err.value(py), err.traceback(py));
        kwargs.set_item("exc_info", exc_info)?;
        logger.call_method(
            "exception",
            ("on_dead callback %r raised for message %d", callback, id),
            Some(&kwargs),
        )?;
        Ok(())
    })();
    if let Err(failure) = logged {
        failure.write_unraisable(py, Some(callback.bind(py)));
    }
}

/// Runs one engine call that reads no clock with the GIL released and maps its error to a
/// `deadletter` exception.
pub fn run<T, F>(py: Python<'_>, call: impl FnOnce() -> F + Send) -> PyResult<T>
where
    T: Send,
    F: Future<Output = deadletter::Result<T>>,
{
    py.detach(|| pollster::block_on(call()))
        .map_err(|err| to_py_err(py, &err))
}
