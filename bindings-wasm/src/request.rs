//! IndexedDB requests and transactions as futures, on `web-sys` alone.
//!
//! Every request and transaction gets the same two event handlers, JavaScript functions made once
//! per thread: they wake the tasks that wait on IndexedDB, and each task then looks at its own
//! request (`readyState`, `error`, `result`) or transaction (the outcome the handler noted on it).
//! So awaiting a request costs no closure, no channel and no promise of its own, and there is no
//! callback that an event could find dropped. A woken task runs in a microtask of the event, while
//! the transaction is still active (see [`crate::connection`]).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use deadletter::{Error, Result};
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{Event, IdbOpenDbRequest, IdbRequest, IdbRequestReadyState, IdbTransaction};

use crate::connection::js_error;

thread_local! {
    /// The tasks waiting for a request or transaction of this thread.
    static WAITING: RefCell<Vec<Waker>> = const { RefCell::new(Vec::new()) };
    /// `onsuccess` / `onerror` of every request: wakes the waiting tasks.
    static ON_REQUEST: Closure<dyn Fn()> = Closure::new(wake_all);
    /// `oncomplete` / `onabort` of every transaction: notes the event's type on the transaction
    /// ([`OUTCOME`]), then wakes the waiting tasks.
    static ON_FINISH: Closure<dyn Fn(Event)> = Closure::new(|event: Event| {
        if let Some(target) = event.target() {
            let _ = OUTCOME.with(|key| Reflect::set(&target, key, &event.type_().into()));
        }
        wake_all();
    });
    /// The property of a transaction where [`ON_FINISH`] notes `"complete"` or `"abort"`.
    static OUTCOME: JsValue = JsValue::from_str("deadletterOutcome");
}

fn wake_all() {
    let wakers = WAITING.with(|waiting| std::mem::take(&mut *waiting.borrow_mut()));
    for waker in wakers {
        waker.wake();
    }
}

fn wait(cx: &Context<'_>) {
    WAITING.with(|waiting| waiting.borrow_mut().push(cx.waker().clone()));
}

/// A request in flight: resolves to its `result`, or to a `store` error naming its `DOMException`
/// (`what` says which request it was). Awaiting it again after the request was made pending again
/// (a cursor's `continue`) waits for the next result.
pub struct Request {
    inner: IdbRequest,
    what: &'static str,
    /// An open request: `readyState` is already `done` while its upgrade transaction runs.
    open: bool,
}

impl Future for Request {
    type Output = Result<JsValue>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let request = &self.inner;
        let upgrading = || self.open && request.transaction().is_some();
        if request.ready_state() != IdbRequestReadyState::Done || upgrading() {
            wait(cx);
            return Poll::Pending;
        }
        Poll::Ready(match request.error() {
            Ok(None) => request.result().map_err(|e| js_error(self.what, &e)),
            Ok(Some(dom)) => Err(js_error(self.what, &dom.into())),
            Err(e) => Err(js_error(self.what, &e)),
        })
    }
}

/// `request` (what an `IDBObjectStore` or `IDBIndex` method returned) as a [`Request`]; a method
/// that threw (a `DataError`, a `TransactionInactiveError`...) is a `store` error.
pub fn request(
    request: std::result::Result<IdbRequest, JsValue>,
    what: &'static str,
) -> Result<Request> {
    let request = request.map_err(|e| js_error(what, &e))?;
    Ok(watch(request, what, false))
}

/// An open request (`indexedDB.open`) as a [`Request`] that resolves to the connection once any
/// upgrade is over, or to the `store` error of the open.
pub fn open_request(open: IdbOpenDbRequest) -> Request {
    watch(open.into(), "open", true)
}

fn watch(request: IdbRequest, what: &'static str, open: bool) -> Request {
    ON_REQUEST.with(|handler| {
        let handler: &Function = handler.as_ref().unchecked_ref();
        request.set_onsuccess(Some(handler));
        request.set_onerror(Some(handler));
    });
    Request {
        inner: request,
        what,
        open,
    }
}

/// The end of a transaction: `Ok` once it committed, the `store` error of its abort otherwise.
pub struct Finished {
    transaction: IdbTransaction,
}

/// Watches `transaction` from now on (before anything can let it finish).
pub fn finished(transaction: &IdbTransaction) -> Finished {
    ON_FINISH.with(|handler| {
        let handler: &Function = handler.as_ref().unchecked_ref();
        transaction.set_oncomplete(Some(handler));
        transaction.set_onabort(Some(handler));
    });
    Finished {
        transaction: transaction.clone(),
    }
}

impl Future for Finished {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = OUTCOME.with(|key| Reflect::get(&self.transaction, key));
        match outcome.ok().and_then(|o| o.as_string()).as_deref() {
            Some("complete") => Poll::Ready(Ok(())),
            Some(_) => Poll::Ready(Err(match self.transaction.error() {
                Some(dom) => js_error("transaction aborted", &dom.into()),
                None => Error::Store("IndexedDB transaction aborted".into()),
            })),
            None => {
                wait(cx);
                Poll::Pending
            }
        }
    }
}
