//! The queue handle ([`NativeQueue`]): one method per operation of the package's `Queue`, each
//! mapping its JavaScript arguments ([`OwnedArg`]) on the JavaScript thread and queuing the
//! engine's operation on the database's threads ([`Pool`]); it returns the call's id, with which
//! the reply's JSON text is delivered. The engine checks every argument; nothing here decides
//! anything about a message.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deadletter::{Action, Arg, Backoff, Call, FilterArgs, Outcome, Result, SettingsArgs};
use napi::bindgen_prelude::{Array, Unknown};
use napi_derive::napi;

use crate::args::{OwnedArg, OwnedItem};
use crate::pool::Pool;
use crate::reply::{self, Row};
use crate::work::{Db, Job};

/// One queue of an open database with its handle's backoff policy (internal: the package's
/// `Queue` holds one).
#[napi]
pub struct NativeQueue {
    pool: Arc<Pool>,
    name: Arc<str>,
    /// The handle's own policy (given in code), which wins over the queue's stored one.
    policy: Option<Backoff>,
    /// Whether this handle warned that its policy overrode a different stored one (once).
    warned: Arc<AtomicBool>,
}

/// A new lease token: a random version-4 UUID.
fn token() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The jitter sample of a call: what the user's `random` returned (checked by the core: a number
/// in `[0, 1)`), or one drawn here when there is no `random` option.
fn sample(drawn: &OwnedArg) -> Result<f64> {
    match drawn {
        OwnedArg::Null => Ok(fastrand::f64()),
        drawn => deadletter::validate::jitter_sample(&drawn.arg()),
    }
}

/// A policy in the package's terms, for the warning of [`NativeQueue::outcome`].
fn describe(policy: &Backoff) -> String {
    let jitter = policy
        .jitter
        .as_str()
        .map_or_else(|| "null".to_owned(), |j| format!("\"{j}\""));
    format!(
        "{{ initialMs: {}, multiplier: {}, capMs: {}, jitter: {jitter} }}",
        policy.initial_ms, policy.multiplier, policy.cap_ms
    )
}

/// The values of the filters of `list` and of the bulk actions, in `FilterArgs::NAMES` order
/// (missing ones are null).
fn filter_values(filters: &Array<'_>) -> napi::Result<Vec<OwnedArg>> {
    let mut values = Vec::with_capacity(FilterArgs::NAMES.len());
    for i in (0..).take(FilterArgs::NAMES.len()) {
        values.push(match filters.get::<Unknown<'_>>(i)? {
            Some(value) => OwnedArg::from_js(value)?,
            None => OwnedArg::Null,
        });
    }
    Ok(values)
}

/// The core's filters of `values` (see [`filter_values`]).
fn filter_args(values: &[OwnedArg]) -> FilterArgs<'_> {
    let mut args = FilterArgs::default();
    for (name, value) in FilterArgs::NAMES.iter().zip(values) {
        args.set(name, value.arg());
    }
    args
}

impl NativeQueue {
    /// A bulk action of the engine (`replay_all`, `delete_all`, `retry_now_all`).
    fn bulk(
        &self,
        action: Action,
        filters: &Array<'_>,
        limit: Unknown<'_>,
        dry_run: Unknown<'_>,
    ) -> napi::Result<u32> {
        let filters = filter_values(filters)?;
        let [limit, dry_run] = [OwnedArg::from_js(limit)?, OwnedArg::from_js(dry_run)?];
        Ok(self.work(move |db, clock, queue, _| {
            let filters = filter_args(&filters);
            let (limit, dry_run) = (limit.arg(), dry_run.arg());
            reply::of(match action {
                Action::Replay => {
                    pollster::block_on(db.replay_all(queue, &filters, limit, dry_run, clock))
                }
                Action::Delete => {
                    pollster::block_on(db.delete_all(queue, &filters, limit, dry_run, clock))
                }
                Action::RetryNow => {
                    pollster::block_on(db.retry_now_all(queue, &filters, limit, dry_run, clock))
                }
                // `move_all` has its own method (its target): `bulk` reports the missing
                // to_queue.
                Action::Move => {
                    pollster::block_on(db.bulk(action, queue, &filters, limit, dry_run, clock))
                }
            })
        }))
    }

    /// The handle of the checked queue `name`.
    pub fn new(pool: &Arc<Pool>, name: String, policy: Option<Backoff>) -> Self {
        Self {
            pool: Arc::clone(pool),
            name: name.into(),
            policy,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The reply of a call that may kill and reschedule messages: its value (`value` of the
    /// outcome's), its deaths, and, the first time on this handle only, the warning that the
    /// handle's policy was applied instead of a different one stored with the queue (as
    /// Python's `warnings.warn`).
    fn outcome<T, V: serde::Serialize>(
        policy: Option<Backoff>,
        warned: &AtomicBool,
        result: Result<Outcome<T>>,
        value: impl FnOnce(T) -> V,
    ) -> String {
        let result = result.map(|o| {
            let warning = o
                .overridden
                .filter(|_| !warned.swap(true, Ordering::Relaxed))
                .map(|stored| {
                    format!(
                        "this handle's backoff {} is applied instead of the one stored with the \
                         queue, {} (a handle's own backoff wins; give the handle none, or store \
                         the same, to agree with the other processes)",
                        describe(&policy.unwrap_or_default()),
                        describe(&stored)
                    )
                });
            (value(o.value), o.dead, warning)
        });
        reply::killing(result)
    }

    /// Queues `job`, given the queue's name and its handle's policy; the call's id.
    fn work(
        &self,
        job: impl FnOnce(&Db, deadletter::Clock<'_>, Arg<'_>, Option<&Backoff>) -> String
        + Send
        + 'static,
    ) -> u32 {
        self.pool.submit(self.job(job))
    }

    /// Queues `job` as [`NativeQueue::work`] does, a call that only reads ([`Pool::submit_read`]).
    fn read(
        &self,
        job: impl FnOnce(&Db, deadletter::Clock<'_>, Arg<'_>, Option<&Backoff>) -> String
        + Send
        + 'static,
    ) -> u32 {
        self.pool.submit_read(self.job(job))
    }

    /// `job` as the pool runs it: given the queue's name and its handle's policy.
    fn job(
        &self,
        job: impl FnOnce(&Db, deadletter::Clock<'_>, Arg<'_>, Option<&Backoff>) -> String
        + Send
        + 'static,
    ) -> Job {
        let (name, policy) = (Arc::clone(&self.name), self.policy);
        Box::new(move |db, clock| job(db, clock, Arg::Str(&name), policy.as_ref()))
    }

    /// Queues a call that may kill and reschedule messages (see [`NativeQueue::outcome`]):
    /// `run` with the call's clock, policy and jitter sample (`drawn`: the user's `random`).
    fn killing<T, V: serde::Serialize>(
        &self,
        run: impl FnOnce(&Db, &Call<'_>, Arg<'_>) -> Result<Outcome<T>> + Send + 'static,
        drawn: OwnedArg,
        value: impl FnOnce(T) -> V + Send + 'static,
    ) -> u32 {
        let warned = Arc::clone(&self.warned);
        self.work(move |db, clock, queue, backoff| {
            let result = sample(&drawn).and_then(|sample| {
                let call = Call {
                    clock,
                    backoff,
                    sample,
                };
                run(db, &call, queue)
            });
            Self::outcome(backoff.copied(), &warned, result, value)
        })
    }
}

#[napi]
impl NativeQueue {
    /// `Queue.enqueue`.
    #[napi]
    pub fn enqueue(
        &self,
        payload: Unknown<'_>,
        max_retries: Unknown<'_>,
        idempotency_key: Unknown<'_>,
        delay_ms: Unknown<'_>,
        group: Unknown<'_>,
        expires_in_ms: Unknown<'_>,
    ) -> napi::Result<u32> {
        let values = [
            payload,
            max_retries,
            idempotency_key,
            delay_ms,
            group,
            expires_in_ms,
        ];
        let item = OwnedItem::from_js(values)?;
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(pollster::block_on(db.enqueue(queue, &item.item(), clock)).map(Row))
        }))
    }

    /// `Queue.enqueueMany`: one row `[payload, maxRetries, idempotencyKey, delayMs, group,
    /// expiresInMs]` per item (a value that is not an array is a payload).
    #[napi]
    pub fn enqueue_many(&self, rows: Array<'_>) -> napi::Result<u32> {
        let mut items = Vec::with_capacity(rows.len() as usize);
        for i in 0..rows.len() {
            items.push(match rows.get::<Unknown<'_>>(i)? {
                Some(row) => OwnedItem::from_row(row)?,
                None => OwnedItem::default(),
            });
        }
        Ok(self.work(move |db, clock, queue, _| {
            let items: Vec<_> = items.iter().map(OwnedItem::item).collect();
            reply::of(pollster::block_on(db.enqueue_many(queue, &items, clock)).map(reply::rows))
        }))
    }

    /// `Queue.claimMany` (`n`), and `Queue.claim` (`n` 1, as the WebAssembly backend's): the
    /// messages claimed. (A null or undefined `n` is the core's to reject: issue 19, it claimed
    /// one message for a `claimMany` that then failed in JavaScript, leaving it leased.)
    #[napi]
    pub fn claim(
        &self,
        drawn: Unknown<'_>,
        n: Unknown<'_>,
        lease_ms: Unknown<'_>,
    ) -> napi::Result<u32> {
        let [drawn, n, lease] = [
            OwnedArg::from_js(drawn)?,
            OwnedArg::from_js(n)?,
            OwnedArg::from_js(lease_ms)?,
        ];
        let claim = move |db: &Db, call: &Call<'_>, queue: Arg<'_>| {
            pollster::block_on(db.claim_many(queue, n.arg(), lease.arg(), token, call))
        };
        Ok(self.killing(claim, drawn, reply::rows))
    }

    /// `Queue.reap`.
    #[napi]
    pub fn reap(&self, drawn: Unknown<'_>) -> napi::Result<u32> {
        let drawn = OwnedArg::from_js(drawn)?;
        let reap =
            |db: &Db, call: &Call<'_>, queue: Arg<'_>| pollster::block_on(db.reap(queue, call));
        Ok(self.killing(reap, drawn, |count| count))
    }

    /// `Queue.succeed`.
    #[napi]
    pub fn succeed(&self, id: Unknown<'_>, lease_token: Unknown<'_>) -> napi::Result<u32> {
        let [id, token] = [OwnedArg::from_js(id)?, OwnedArg::from_js(lease_token)?];
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(pollster::block_on(db.succeed(queue, id.arg(), token.arg(), clock)).map(Row))
        }))
    }

    /// `Queue.fail`.
    #[napi]
    pub fn fail(
        &self,
        drawn: Unknown<'_>,
        id: Unknown<'_>,
        error: Unknown<'_>,
        lease_token: Unknown<'_>,
        retryable: Unknown<'_>,
        retry_in_ms: Unknown<'_>,
    ) -> napi::Result<u32> {
        let [drawn, id, error, token, retryable, retry_in] = [
            OwnedArg::from_js(drawn)?,
            OwnedArg::from_js(id)?,
            OwnedArg::from_js(error)?,
            OwnedArg::from_js(lease_token)?,
            OwnedArg::from_js(retryable)?,
            OwnedArg::from_js(retry_in_ms)?,
        ];
        let fail = move |db: &Db, call: &Call<'_>, queue: Arg<'_>| {
            pollster::block_on(db.fail(
                queue,
                id.arg(),
                error.arg(),
                token.arg(),
                retryable.arg(),
                retry_in.arg(),
                call,
            ))
        };
        Ok(self.killing(fail, drawn, Row))
    }

    /// `Queue.extend`.
    #[napi]
    pub fn extend(
        &self,
        id: Unknown<'_>,
        lease_token: Unknown<'_>,
        lease_ms: Unknown<'_>,
    ) -> napi::Result<u32> {
        let [id, token, lease] = [
            OwnedArg::from_js(id)?,
            OwnedArg::from_js(lease_token)?,
            OwnedArg::from_js(lease_ms)?,
        ];
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(
                pollster::block_on(db.extend(queue, id.arg(), token.arg(), lease.arg(), clock))
                    .map(Row),
            )
        }))
    }

    /// `Queue.replay`.
    #[napi]
    pub fn replay(&self, id: Unknown<'_>, expires_in_ms: Unknown<'_>) -> napi::Result<u32> {
        let [id, expires_in] = [OwnedArg::from_js(id)?, OwnedArg::from_js(expires_in_ms)?];
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(
                pollster::block_on(db.replay(queue, id.arg(), expires_in.arg(), clock)).map(Row),
            )
        }))
    }

    /// `Queue.retryNow`.
    #[napi]
    pub fn retry_now(&self, id: Unknown<'_>) -> napi::Result<u32> {
        let id = OwnedArg::from_js(id)?;
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(pollster::block_on(db.retry_now(queue, id.arg(), clock)).map(Row))
        }))
    }

    /// `Queue.move`: the message `id` to the queue `to_queue`.
    #[napi(js_name = "move")]
    pub fn move_message(&self, id: Unknown<'_>, to_queue: Unknown<'_>) -> napi::Result<u32> {
        let [id, to_queue] = [OwnedArg::from_js(id)?, OwnedArg::from_js(to_queue)?];
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(
                pollster::block_on(db.move_message(queue, id.arg(), to_queue.arg(), clock))
                    .map(Row),
            )
        }))
    }

    /// `Queue.moveAll` (filters as [`NativeQueue::replay_all`]): the selected messages to the
    /// queue `to_queue`.
    #[napi]
    pub fn move_all(
        &self,
        to_queue: Unknown<'_>,
        filters: Array<'_>,
        limit: Unknown<'_>,
        dry_run: Unknown<'_>,
    ) -> napi::Result<u32> {
        let filters = filter_values(&filters)?;
        let [to_queue, limit, dry_run] = [
            OwnedArg::from_js(to_queue)?,
            OwnedArg::from_js(limit)?,
            OwnedArg::from_js(dry_run)?,
        ];
        Ok(self.work(move |db, clock, queue, _| {
            let filters = filter_args(&filters);
            reply::of(pollster::block_on(db.move_all(
                queue,
                to_queue.arg(),
                &filters,
                limit.arg(),
                dry_run.arg(),
                clock,
            )))
        }))
    }

    /// `Queue.replayAll`: `filters` are the values of the core's `FilterArgs::NAMES`, in that
    /// order (instants in milliseconds: `api.js` turns `Date`s into them).
    #[napi]
    pub fn replay_all(
        &self,
        filters: Array<'_>,
        limit: Unknown<'_>,
        dry_run: Unknown<'_>,
    ) -> napi::Result<u32> {
        self.bulk(Action::Replay, &filters, limit, dry_run)
    }

    /// `Queue.deleteAll` (filters as [`NativeQueue::replay_all`]).
    #[napi]
    pub fn delete_all(
        &self,
        filters: Array<'_>,
        limit: Unknown<'_>,
        dry_run: Unknown<'_>,
    ) -> napi::Result<u32> {
        self.bulk(Action::Delete, &filters, limit, dry_run)
    }

    /// `Queue.retryNowAll` (filters as [`NativeQueue::replay_all`]).
    #[napi]
    pub fn retry_now_all(
        &self,
        filters: Array<'_>,
        limit: Unknown<'_>,
        dry_run: Unknown<'_>,
    ) -> napi::Result<u32> {
        self.bulk(Action::RetryNow, &filters, limit, dry_run)
    }

    /// `Queue.purge`.
    #[napi]
    pub fn purge(&self, status: Unknown<'_>, older_than_ms: Unknown<'_>) -> napi::Result<u32> {
        let [status, older] = [
            OwnedArg::from_js(status)?,
            OwnedArg::from_js(older_than_ms)?,
        ];
        Ok(self.work(move |db, clock, queue, _| {
            reply::of(pollster::block_on(db.purge(
                queue,
                status.arg(),
                older.arg(),
                clock,
            )))
        }))
    }

    /// `Queue.delete`.
    #[napi]
    pub fn delete(&self, id: Unknown<'_>) -> napi::Result<u32> {
        let id = OwnedArg::from_js(id)?;
        Ok(self.work(move |db, _, queue, _| {
            reply::of(pollster::block_on(db.delete(queue, id.arg())).map(Row))
        }))
    }

    /// `Queue.get`.
    #[napi]
    pub fn get(&self, id: Unknown<'_>) -> napi::Result<u32> {
        let id = OwnedArg::from_js(id)?;
        Ok(self.read(move |db, _, queue, _| {
            reply::of(pollster::block_on(db.get(queue, id.arg())).map(Row))
        }))
    }

    /// `Queue.list` (filters as [`NativeQueue::replay_all`]): the page is `{ messages,
    /// next_after_id }`.
    #[napi]
    pub fn list(
        &self,
        filters: Array<'_>,
        limit: Unknown<'_>,
        after_id: Unknown<'_>,
    ) -> napi::Result<u32> {
        let filters = filter_values(&filters)?;
        let [limit, after] = [OwnedArg::from_js(limit)?, OwnedArg::from_js(after_id)?];
        Ok(self.read(move |db, clock, queue, _| {
            let page = pollster::block_on(db.list(
                queue,
                &filter_args(&filters),
                limit.arg(),
                after.arg(),
                clock,
            ));
            reply::of(page.map(reply::Page))
        }))
    }

    /// `Queue.stats`.
    #[napi]
    pub fn stats(&self) -> u32 {
        self.read(|db, clock, queue, _| reply::of(pollster::block_on(db.stats(queue, clock))))
    }

    /// `Queue.settings`: the settings stored with the queue (nulls where unset) and `paused`.
    #[napi]
    pub fn settings(&self) -> u32 {
        self.read(|db, _, queue, _| {
            reply::of(pollster::block_on(db.settings(queue)).map(reply::Settings))
        })
    }

    /// `Queue.setSettings`: replaces the five settings (the backoff given field by field when
    /// `custom`, else unset) and resolves to them.
    #[napi]
    #[allow(clippy::too_many_arguments)] // one per setting and backoff field
    pub fn set_settings(
        &self,
        custom: bool,
        initial_ms: Unknown<'_>,
        multiplier: Unknown<'_>,
        cap_ms: Unknown<'_>,
        jitter: Unknown<'_>,
        max_retries: Unknown<'_>,
        lease_ms: Unknown<'_>,
        expires_in_ms: Unknown<'_>,
        on_expiry: Unknown<'_>,
    ) -> napi::Result<u32> {
        let [
            initial,
            multiplier,
            cap,
            jitter,
            retries,
            lease,
            expires_in,
            on_expiry,
        ] = [
            OwnedArg::from_js(initial_ms)?,
            OwnedArg::from_js(multiplier)?,
            OwnedArg::from_js(cap_ms)?,
            OwnedArg::from_js(jitter)?,
            OwnedArg::from_js(max_retries)?,
            OwnedArg::from_js(lease_ms)?,
            OwnedArg::from_js(expires_in_ms)?,
            OwnedArg::from_js(on_expiry)?,
        ];
        Ok(self.work(move |db, _, queue, _| {
            let policy = custom.then(|| {
                Backoff::new(&initial.arg(), &multiplier.arg(), &cap.arg(), &jitter.arg())
            });
            let checked = SettingsArgs::new(
                &queue,
                policy,
                &retries.arg(),
                &lease.arg(),
                &expires_in.arg(),
                &on_expiry.arg(),
            );
            let stored = checked.and_then(|args| pollster::block_on(db.set_settings(&args)));
            reply::of(stored.map(reply::Settings))
        }))
    }

    /// `Queue.pause`: the queue claims nothing until resumed (every process sees it); resolves to
    /// the settings.
    #[napi]
    pub fn pause(&self) -> u32 {
        self.work(|db, _, queue, _| {
            reply::of(pollster::block_on(db.pause(queue, true)).map(reply::Settings))
        })
    }

    /// `Queue.resume`.
    #[napi]
    pub fn resume(&self) -> u32 {
        self.work(|db, _, queue, _| {
            reply::of(pollster::block_on(db.pause(queue, false)).map(reply::Settings))
        })
    }

    /// `Queue.nextDueAt`.
    #[napi]
    pub fn next_due_at(&self) -> u32 {
        self.read(|db, clock, queue, _| reply::of(pollster::block_on(db.next_due_at(queue, clock))))
    }
}
