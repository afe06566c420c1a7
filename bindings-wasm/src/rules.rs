//! The checked options of a database ([`DatabaseRules`]: its name and open-time limits) and of a
//! queue ([`QueueRules`]: its name and backoff policy), and the entry of every operation: each
//! method of [`QueueRules`] checks the call's arguments with the time of the clock (and the jitter
//! sample) into one of the plans of [`crate::plans`], which `js/backend.js` then runs through the
//! IndexedDB store (`js/store/`) and finishes once the transaction has committed.
//!
//! JavaScript reads the clock (`options.clock`, else `Date.now()`) and the random source
//! (`options.random`, else `Math.random()`) and passes what they returned; this module judges it.

use deadletter::{
    Arg, Backoff, ClaimArgs, Context, EnqueueArgs, Error, ExtendArgs, FailArgs, FieldError, Item,
    Limits, MessageArgs, Millis, PurgeArgs, QueueRow, ReplayAllArgs, ReplayArgs, Result,
    SucceedArgs,
};
use js_sys::{Array, Date, Reflect};
use wasm_bindgen::prelude::*;

use crate::args::{OwnedArg, OwnedItem, function, kind};
use crate::claim::ClaimPlan;
use crate::errors;
use crate::plans::{BulkPlan, EnqueuePlan, ReadPlan, StatsPlan, Update, UpdatePlan, list_plan};
use crate::{keys, record};

/// A result for JavaScript: the error as a `DeadLetterError`.
pub fn js<T>(result: Result<T>) -> std::result::Result<T, JsValue> {
    result.map_err(|e| errors::to_js(&e))
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
fn combine(errors: impl IntoIterator<Item = Error>) -> Error {
    let mut fields = Vec::new();
    for error in errors {
        match error {
            Error::Validation(more) => fields.extend(more),
            other => return other,
        }
    }
    Error::Validation(fields)
}

/// The clock's time: a `Date` or a number of milliseconds (floored). Any finite value goes to the
/// core, which rejects one outside its representable range (`clock`, `out_of_range`); a value
/// that is no time at all (NaN, an invalid `Date`, a string) is a `type` error on `clock`.
pub fn now(clock: &JsValue) -> Result<Millis> {
    let ms = match clock.dyn_ref::<Date>() {
        Some(date) => Some(date.get_time()),
        None => clock.as_f64(),
    };
    match ms {
        // Saturates beyond the range of i64: the core rejects it then.
        #[allow(clippy::cast_possible_truncation)]
        Some(ms) if ms.is_finite() => Ok(ms.floor() as Millis),
        _ => Err(Error::Validation(vec![type_error(
            "clock",
            "a function returning a valid Date or a finite number of milliseconds",
            clock,
        )])),
    }
}

/// The clock's time and the jitter sample (checked by the core to be a number in `[0, 1)`,
/// field `random`), both judged, for a call that may reschedule messages.
fn moment(clock: &JsValue, random: &JsValue) -> Result<(Millis, f64)> {
    let sample = deadletter::validate::jitter_sample(&OwnedArg::from_js(random).arg());
    match (now(clock), sample) {
        (Ok(now), Ok(sample)) => Ok((now, sample)),
        (now, sample) => Err(combine([now.err(), sample.err()].into_iter().flatten())),
    }
}

/// An optional function option of `open`: a type error unless undefined, null or a function.
fn optional_function(field: &'static str, value: &JsValue, rejected: &mut Vec<FieldError>) {
    if !(value.is_undefined() || value.is_null() || function(value).is_some()) {
        rejected.push(type_error(field, "a function", value));
    }
}

/// Checks the arguments of `open(name, options)` together: `name` a non-empty string (without
/// an unpaired surrogate), `leaseMs` and `maxPayloadBytes` (see [`Limits::new`]), `clock` and
/// `random` functions, `indexedDB` an object with an `open` method (an `IDBFactory` as far as can
/// be told before using it). Throws a `validation_failed` `DeadLetterError` listing every
/// rejected field.
#[wasm_bindgen(js_name = openRules)]
pub fn open_rules(
    name: &JsValue,
    factory: &JsValue,
    lease_ms: &JsValue,
    max_payload_bytes: &JsValue,
    clock: &JsValue,
    random: &JsValue,
) -> std::result::Result<DatabaseRules, JsValue> {
    let mut rejected = Vec::new();
    let limits = Limits::new(
        &OwnedArg::from_js(lease_ms).arg(),
        &OwnedArg::from_js(max_payload_bytes).arg(),
    );
    if let Err(err) = &limits {
        rejected.extend_from_slice(err.field_errors());
    }
    let name = match OwnedArg::from_js(name) {
        // As Python rejects an empty path: most likely an unset setting, not a chosen name.
        OwnedArg::Str(s) if s.is_empty() => {
            rejected.push(FieldError::new("name", "empty", "must not be empty"));
            String::new()
        }
        OwnedArg::Str(s) => s,
        other => {
            rejected.push(FieldError::new(
                "name",
                "type",
                format!("must be a string, got {}", other.arg().kind()),
            ));
            String::new()
        }
    };
    optional_function("clock", clock, &mut rejected);
    optional_function("random", random, &mut rejected);
    let nothing = factory.is_undefined() || factory.is_null();
    if !nothing && !Reflect::get(factory, &"open".into()).is_ok_and(|open| open.is_function()) {
        rejected.push(type_error("indexedDB", "an IDBFactory", factory));
    }
    match limits {
        Ok(limits) if rejected.is_empty() => Ok(DatabaseRules { name, limits }),
        _ => Err(errors::to_js(&Error::Validation(rejected))),
    }
}

/// The checked options of one database (internal; see `js/backend.js`).
#[wasm_bindgen]
pub struct DatabaseRules {
    name: String,
    limits: Limits,
}

#[wasm_bindgen]
impl DatabaseRules {
    /// The database name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The default lease, in milliseconds.
    #[wasm_bindgen(getter, js_name = defaultLeaseMs)]
    #[allow(clippy::cast_precision_loss)] // at most 12 h
    pub fn default_lease_ms(&self) -> f64 {
        self.limits.default_lease_ms as f64
    }

    /// The rules of queue `name` with the backoff policy given field by field (null: the
    /// default). Throws a `validation_failed` `DeadLetterError` listing every rejected field
    /// unless `name` is a valid queue name and the policy valid.
    pub fn queue(
        &self,
        name: &JsValue,
        initial_ms: &JsValue,
        multiplier: &JsValue,
        cap_ms: &JsValue,
        jitter: &JsValue,
    ) -> std::result::Result<QueueRules, JsValue> {
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
            (Ok(name), Ok(policy)) => Ok(QueueRules {
                name,
                policy,
                limits: self.limits,
            }),
            (name, policy) => Err(errors::to_js(&combine(
                [name.err(), policy.err()].into_iter().flatten(),
            ))),
        }
    }

    /// `Database.queues`: the clock's time `clock`, checked, for [`crate::plans::stats_plan`].
    pub fn queues(&self, clock: &JsValue) -> std::result::Result<f64, JsValue> {
        let now = js(now(clock))?;
        js(deadletter::engine::clock_at(now))?;
        #[allow(clippy::cast_precision_loss)] // a checked instant, within ±2^53
        Ok(now as f64)
    }
}

/// The checked options of one queue (internal; see `js/backend.js`): each method checks one
/// call's arguments into its plan, or throws a `validation_failed` `DeadLetterError`.
#[wasm_bindgen]
pub struct QueueRules {
    name: String,
    policy: Backoff,
    limits: Limits,
}

impl QueueRules {
    fn queue(&self) -> Arg<'_> {
        Arg::Str(&self.name)
    }

    /// The context of a call at the clock's time, read by JavaScript before the transaction; no
    /// queue settings are stored in IndexedDB yet (issue 21's JavaScript side).
    fn context(now: Millis) -> Result<Context> {
        Context::new(now, QueueRow::default())
    }
}

#[wasm_bindgen]
impl QueueRules {
    /// `Queue.enqueue` (`batch` false, one row) and `Queue.enqueueMany` (`batch` true): `rows`
    /// holds one `[payload, maxRetries, idempotencyKey, delayMs]` array per item (a value that is
    /// not an array is taken as a payload).
    pub fn enqueue(
        &self,
        clock: &JsValue,
        rows: &Array,
        batch: bool,
    ) -> std::result::Result<EnqueuePlan, JsValue> {
        let now = js(now(clock))?;
        let items: Vec<OwnedItem> = rows.iter().map(|row| OwnedItem::from_row(&row)).collect();
        let items: Vec<Item<'_>> = items.iter().map(OwnedItem::item).collect();
        let args = js(EnqueueArgs::new(&self.queue(), &items, batch, &self.limits))?;
        let ctx = js(Self::context(now))?;
        js(args.messages(&ctx)).map(EnqueuePlan::new)
    }

    /// `Queue.claimMany` (and `Queue.claim`, `n` 1), with `n` lease tokens drawn from
    /// `crypto.getRandomValues`.
    pub fn claim(
        &self,
        clock: &JsValue,
        random: &JsValue,
        n: &JsValue,
        lease_ms: &JsValue,
    ) -> std::result::Result<ClaimPlan, JsValue> {
        let [n, lease] = [n, lease_ms].map(OwnedArg::from_js);
        let (now, sample) = js(moment(clock, random))?;
        let args = js(ClaimArgs::new(
            &self.queue(),
            &n.arg(),
            &lease.arg(),
            Some(&self.policy),
            sample,
            &self.limits,
        ))?;
        ClaimPlan::new(args, &js(Self::context(now))?, false)
    }

    /// `Queue.reap`.
    pub fn reap(
        &self,
        clock: &JsValue,
        random: &JsValue,
    ) -> std::result::Result<ClaimPlan, JsValue> {
        let (now, sample) = js(moment(clock, random))?;
        let args = js(ClaimArgs::reap(&self.queue(), Some(&self.policy), sample))?;
        ClaimPlan::new(args, &js(Self::context(now))?, true)
    }

    /// `Queue.succeed`.
    pub fn succeed(
        &self,
        clock: &JsValue,
        id: &JsValue,
        lease_token: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let [id, token] = [id, lease_token].map(OwnedArg::from_js);
        let now = js(now(clock))?;
        let args = js(SucceedArgs::new(&self.queue(), &id.arg(), &token.arg()))?;
        let ctx = js(Self::context(now))?;
        Ok(UpdatePlan::new(Update::Succeed(args), ctx))
    }

    /// `Queue.fail`.
    pub fn fail(
        &self,
        clock: &JsValue,
        random: &JsValue,
        id: &JsValue,
        error: &JsValue,
        lease_token: &JsValue,
        retryable: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let [id, error, token, retryable] =
            [id, error, lease_token, retryable].map(OwnedArg::from_js);
        let (now, sample) = js(moment(clock, random))?;
        let args = js(FailArgs::new(
            &self.queue(),
            &id.arg(),
            &error.arg(),
            &token.arg(),
            &retryable.arg(),
            &Arg::Null,
            Some(&self.policy),
            sample,
        ))?;
        let ctx = js(Self::context(now))?;
        Ok(UpdatePlan::new(Update::Fail(args), ctx))
    }

    /// `Queue.extend`.
    pub fn extend(
        &self,
        clock: &JsValue,
        id: &JsValue,
        lease_token: &JsValue,
        lease_ms: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let [id, token, lease] = [id, lease_token, lease_ms].map(OwnedArg::from_js);
        let now = js(now(clock))?;
        let args = js(ExtendArgs::new(
            &self.queue(),
            &id.arg(),
            &token.arg(),
            &lease.arg(),
            &self.limits,
        ))?;
        let ctx = js(Self::context(now))?;
        Ok(UpdatePlan::new(Update::Extend(args), ctx))
    }

    /// `Queue.replay`.
    pub fn replay(
        &self,
        clock: &JsValue,
        id: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let id = OwnedArg::from_js(id);
        let now = js(now(clock))?;
        let args = js(ReplayArgs::new(&self.queue(), &id.arg(), &Arg::Null))?;
        let ctx = js(Self::context(now))?;
        Ok(UpdatePlan::new(Update::Replay(args), ctx))
    }

    /// `Queue.replayAll`: `deadBefore` and `deadAfter` are `Date`s or milliseconds.
    #[wasm_bindgen(js_name = replayAll)]
    pub fn replay_all(
        &self,
        clock: &JsValue,
        error_contains: &JsValue,
        dead_before: &JsValue,
        dead_after: &JsValue,
        limit: &JsValue,
    ) -> std::result::Result<BulkPlan, JsValue> {
        let [text, limit] = [error_contains, limit].map(OwnedArg::from_js);
        let [before, after] = [dead_before, dead_after].map(OwnedArg::instant);
        let now = js(now(clock))?;
        let args = js(ReplayAllArgs::new(
            &self.queue(),
            &text.arg(),
            &before.arg(),
            &after.arg(),
            &limit.arg(),
        ))?;
        let ctx = js(Self::context(now))?;
        Ok(BulkPlan::replay(args, ctx))
    }

    /// `Queue.purge`.
    pub fn purge(
        &self,
        clock: &JsValue,
        status: &JsValue,
        older_than_ms: &JsValue,
    ) -> std::result::Result<BulkPlan, JsValue> {
        let [status, older] = [status, older_than_ms].map(OwnedArg::from_js);
        let now = js(now(clock))?;
        let args = PurgeArgs::new(&self.queue(), &status.arg(), &older.arg(), now);
        js(args.map(BulkPlan::purge))
    }

    /// `Queue.get` and `Queue.delete`.
    pub fn message(&self, id: &JsValue) -> std::result::Result<ReadPlan, JsValue> {
        let id = OwnedArg::from_js(id);
        js(MessageArgs::new(&self.queue(), &id.arg()).map(ReadPlan::new))
    }

    /// `Queue.stats`.
    pub fn stats(&self, clock: &JsValue) -> std::result::Result<StatsPlan, JsValue> {
        let now = js(now(clock))?;
        let queue = js(deadletter::engine::queue_at(&self.queue(), now))?;
        Ok(StatsPlan::new(queue, now))
    }

    /// `Queue.nextDueAt`: the range of the `delayed` index whose first key says when the next
    /// delayed message is due (see [`due_at`]).
    #[wasm_bindgen(js_name = nextDueAt)]
    pub fn next_due_at(&self, clock: &JsValue) -> std::result::Result<JsValue, JsValue> {
        let now = js(now(clock))?;
        let queue = js(deadletter::engine::queue_at(&self.queue(), now))?;
        Ok(keys::delayed(&queue, now))
    }

    /// `Queue.list`.
    pub fn list(
        &self,
        status: &JsValue,
        limit: &JsValue,
        after_id: &JsValue,
    ) -> std::result::Result<JsValue, JsValue> {
        let [status, limit, after] = [status, limit, after_id].map(OwnedArg::from_js);
        let query = deadletter::engine::list_query(
            &self.queue(),
            &status.arg(),
            &limit.arg(),
            &after.arg(),
        );
        js(query.map(|q| list_plan(&q)))
    }
}

/// When the next delayed message is due, from the first key of the range
/// [`QueueRules::next_due_at`] gave (`[queue, status, retryAfter]`; undefined when none waits): a
/// `Date`, or null.
#[wasm_bindgen(js_name = dueAt)]
pub fn due_at(first_key: &JsValue) -> JsValue {
    keys::part(first_key, 2).map_or(JsValue::NULL, |ms| Date::new(&record::number(ms)).into())
}
