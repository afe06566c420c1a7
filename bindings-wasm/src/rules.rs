//! The checked options of a database ([`DatabaseRules`]: its name and open-time limits) and of a
//! queue ([`QueueRules`]: its name and its own backoff policy, if any), and the entry of every
//! operation: each method of [`QueueRules`] checks the call's arguments (and the jitter sample)
//! into one of the plans of [`crate::plans`], which `js/backend.js` then runs through the
//! IndexedDB store (`js/store/`) and finishes once the transaction has committed. A write's plan
//! decides at the context read inside its transaction (the clock and the queue's row: see
//! [`crate::plans::context`]); a read (statistics, `nextDueAt`) and `purge` are given the clock's
//! time when the call starts.
//!
//! JavaScript reads the clock (`options.clock`, else `Date.now()`) and the random source
//! (`options.random`, else `Math.random()`) and passes what they returned; this module judges it.

use deadletter::engine::{Action, BulkArgs, FilterArgs, ListArgs, Scan};
use deadletter::{
    Arg, Backoff, ClaimArgs, EnqueueArgs, Error, ExtendArgs, FailArgs, FieldError, Item, Limits,
    MessageArgs, Millis, MoveAllArgs, MoveArgs, PurgeArgs, ReplayArgs, Result, SettingsArgs,
    SucceedArgs,
};
use js_sys::{Array, Date, Reflect};
use wasm_bindgen::prelude::*;

use crate::args::{self, OwnedArg, OwnedItem, function, kind, owned_args};
use crate::bulk::BulkPlan;
use crate::bulk::ListPlan;
use crate::claim::{ClaimPlan, Claiming};
use crate::errors;
use crate::plans::{EnqueuePlan, ReadPlan, Update, UpdatePlan};
use crate::queue::{RowPlan, policy_to_js};
use crate::reads::StatsPlan;
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

#[wasm_bindgen]
extern "C" {
    /// JavaScript's `String(n)`: a number as JavaScript writes it (`-100000000000000000000`,
    /// `1e+21`), with no float formatting in this module, whose size has a budget.
    #[wasm_bindgen(js_name = String)]
    fn number_text(n: f64) -> String;
}

/// The clock's time: a `Date` or a number of milliseconds (floored). Any finite value goes to the
/// core, which rejects one outside its representable range (`clock`, `out_of_range`, naming the
/// value returned: `clock_millis`); a value
/// that is no time at all (NaN, an invalid `Date`, a string) is a `type` error on `clock`.
pub fn now(clock: &JsValue) -> Result<Millis> {
    let ms = match clock.dyn_ref::<Date>() {
        Some(date) => Some(date.get_time()),
        None => clock.as_f64(),
    };
    match ms {
        Some(ms) if ms.is_finite() => deadletter::validate::clock_millis(ms, || number_text(ms)),
        _ => Err(Error::Validation(vec![type_error(
            "clock",
            "a function returning a valid Date or a finite number of milliseconds",
            clock,
        )])),
    }
}

/// The clock's time (see [`now`]) within the range of instants the core represents
/// (`out_of_range` on field `clock` otherwise).
#[inline(never)]
fn checked_now(clock: &JsValue) -> Result<Millis> {
    let now = now(clock)?;
    deadletter::engine::clock_at(now)?;
    Ok(now)
}

/// The jitter sample (checked by the core to be a number in `[0, 1)`, field `random`) of a call
/// that may reschedule messages.
fn sample(random: &JsValue) -> Result<f64> {
    deadletter::validate::jitter_sample(&OwnedArg::from_js(random).arg())
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
    /// default), which is the handle's own when `custom` (it then wins over the policy stored
    /// with the queue; else the stored one applies, else the default). Throws a
    /// `validation_failed` `DeadLetterError` listing every rejected field unless `name` is a
    /// valid queue name and the policy valid.
    pub fn queue(
        &self,
        name: &JsValue,
        initial_ms: &JsValue,
        multiplier: &JsValue,
        cap_ms: &JsValue,
        jitter: &JsValue,
        custom: bool,
    ) -> std::result::Result<QueueRules, JsValue> {
        let name = OwnedArg::from_js(name);
        let [initial_ms, multiplier, cap_ms, jitter] =
            owned_args![initial_ms, multiplier, cap_ms, jitter];
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
                policy: custom.then_some(policy),
                limits: self.limits,
            }),
            (name, policy) => Err(errors::to_js(&combine(
                [name.err(), policy.err()].into_iter().flatten(),
            ))),
        }
    }

    /// `Database.queues`: the clock's time `clock`, checked, for [`crate::reads::stats_plan`].
    pub fn queues(&self, clock: &JsValue) -> std::result::Result<f64, JsValue> {
        #[allow(clippy::cast_precision_loss)] // a checked instant, within ±2^53
        Ok(js(checked_now(clock))? as f64)
    }
}

/// The checked options of one queue (internal; see `js/backend.js`): each method checks one
/// call's arguments into its plan, or throws a `validation_failed` `DeadLetterError`.
#[wasm_bindgen]
pub struct QueueRules {
    name: String,
    /// The handle's own policy, given in code.
    policy: Option<Backoff>,
    limits: Limits,
}

impl QueueRules {
    fn queue(&self) -> Arg<'_> {
        Arg::Str(&self.name)
    }
}

#[wasm_bindgen]
impl QueueRules {
    /// The queue's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The handle's own backoff policy (`{ initialMs, multiplier, capMs, jitter }`), or null.
    #[wasm_bindgen(getter)]
    pub fn policy(&self) -> JsValue {
        self.policy.as_ref().map_or(JsValue::NULL, policy_to_js)
    }

    /// `Queue.enqueue` (`batch` false, one row) and `Queue.enqueueMany` (`batch` true): `rows`
    /// holds one `[payload, maxRetries, idempotencyKey, delayMs, group, expiresInMs]` array per
    /// item (a value that is not an array is taken as a payload).
    pub fn enqueue(&self, rows: &Array, batch: bool) -> std::result::Result<EnqueuePlan, JsValue> {
        // Loops, not `collect`: a copy of it per iterator costs the module (issue 20).
        let mut given = Vec::new();
        for row in rows.iter() {
            given.push(OwnedItem::from_row(&row));
        }
        let mut items: Vec<Item<'_>> = Vec::new();
        for item in &given {
            items.push(item.item());
        }
        let args = js(EnqueueArgs::new(&self.queue(), &items, batch, &self.limits))?;
        Ok(EnqueuePlan::new(args, batch))
    }

    /// `Queue.claimMany` (and `Queue.claim`, `n` 1 and `single`: the plan's outcome holds the
    /// message itself or null, not an array); `random` is what the random source returned (the
    /// jitter sample of the leases it finds run out).
    pub fn claim(
        &self,
        random: &JsValue,
        n: &JsValue,
        lease_ms: &JsValue,
        single: bool,
    ) -> std::result::Result<ClaimPlan, JsValue> {
        let [n, lease] = owned_args![n, lease_ms];
        let sample = js(sample(random))?;
        let args = js(ClaimArgs::new(
            &self.queue(),
            &n.arg(),
            &lease.arg(),
            self.policy.as_ref(),
            sample,
            &self.limits,
        ))?;
        Ok(ClaimPlan::new(args, Claiming::Messages { single }))
    }

    /// `Queue.reap`.
    pub fn reap(&self, random: &JsValue) -> std::result::Result<ClaimPlan, JsValue> {
        let sample = js(sample(random))?;
        let args = js(ClaimArgs::reap(&self.queue(), self.policy.as_ref(), sample))?;
        Ok(ClaimPlan::new(args, Claiming::Reap))
    }

    /// `Queue.succeed` (`kind` 0: `a` the lease token), `extend` (1: `a` the lease token, `b` the
    /// lease in ms), `replay` (2: `a` its `expiresInMs`), `retryNow` (3) and `move` (4: `a` the
    /// queue it goes to): one export for the five, as each export costs the module its glue.
    pub fn update(
        &self,
        kind: u8,
        id: &JsValue,
        a: &JsValue,
        b: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let [id, a, b] = owned_args![id, a, b];
        let (queue, id, a) = (self.queue(), id.arg(), a.arg());
        let update = match kind {
            0 => Update::Succeed(js(SucceedArgs::new(&queue, &id, &a))?),
            1 => Update::Extend(js(ExtendArgs::new(
                &queue,
                &id,
                &a,
                &b.arg(),
                &self.limits,
            ))?),
            2 => Update::Replay(js(ReplayArgs::new(&queue, &id, &a))?),
            3 => Update::RetryNow(js(MessageArgs::new(&queue, &id))?),
            _ => Update::Move(js(MoveArgs::new(&queue, &id, &a))?),
        };
        Ok(UpdatePlan::new(update, None))
    }

    /// `Queue.fail`.
    #[allow(clippy::too_many_arguments)] // one per argument of `fail`
    pub fn fail(
        &self,
        random: &JsValue,
        id: &JsValue,
        error: &JsValue,
        lease_token: &JsValue,
        retryable: &JsValue,
        retry_in_ms: &JsValue,
    ) -> std::result::Result<UpdatePlan, JsValue> {
        let [id, error, token, retryable, retry_in] =
            owned_args![id, error, lease_token, retryable, retry_in_ms];
        let sample = js(sample(random))?;
        let args = js(FailArgs::new(
            &self.queue(),
            &id.arg(),
            &error.arg(),
            &token.arg(),
            &retryable.arg(),
            &retry_in.arg(),
            self.policy.as_ref(),
            sample,
        ))?;
        Ok(UpdatePlan::new(Update::Fail(args), self.policy))
    }

    /// `Queue.replayAll` (`action` 0), `deleteAll` (1), `retryNowAll` (2) and `moveAll` (3, to
    /// the queue `to_queue`; ignored by the others): `clock` is what the clock returned when the
    /// call started (the instant the selection's `delayed` is judged at; each batch's write
    /// judges again at its own), `filters` the values of `FilterArgs::NAMES`, in that order. One
    /// export for the four (each costs the module its own glue).
    pub fn bulk(
        &self,
        action: u8,
        clock: &JsValue,
        filters: &Array,
        limit: &JsValue,
        dry_run: &JsValue,
        to_queue: &JsValue,
    ) -> std::result::Result<BulkPlan, JsValue> {
        let values = owned(filters);
        let [limit, dry_run, to_queue] = owned_args![limit, dry_run, to_queue];
        let (queue, filters) = (self.queue(), filter_args(&values));
        if action == 3 {
            let args = MoveAllArgs::new(
                &queue,
                &to_queue.arg(),
                &filters,
                &limit.arg(),
                &dry_run.arg(),
            );
            return Ok(BulkPlan::moving(js(args)?, js(checked_now(clock))?));
        }
        let action = [Action::Replay, Action::Delete, Action::RetryNow][usize::from(action.min(2))];
        let args = js(BulkArgs::new(
            action,
            &queue,
            &filters,
            &limit.arg(),
            &dry_run.arg(),
        ))?;
        Ok(BulkPlan::action(args, js(checked_now(clock))?))
    }

    /// `Queue.setSettings`: the policy to store field by field when `backoff` (else none), and
    /// the four other settings (null: unset); every rejected field is reported together.
    #[wasm_bindgen(js_name = setSettings)]
    #[allow(clippy::too_many_arguments)] // one per setting, and the policy's four
    pub fn set_settings(
        &self,
        backoff: bool,
        initial_ms: &JsValue,
        multiplier: &JsValue,
        cap_ms: &JsValue,
        jitter: &JsValue,
        max_retries: &JsValue,
        lease_ms: &JsValue,
        expires_in_ms: &JsValue,
        on_expiry: &JsValue,
    ) -> std::result::Result<RowPlan, JsValue> {
        let [
            initial,
            multiplier,
            cap,
            jitter,
            retries,
            lease,
            expires_in,
            on_expiry,
        ] = owned_args![
            initial_ms,
            multiplier,
            cap_ms,
            jitter,
            max_retries,
            lease_ms,
            expires_in_ms,
            on_expiry
        ];
        let policy = backoff
            .then(|| Backoff::new(&initial.arg(), &multiplier.arg(), &cap.arg(), &jitter.arg()));
        let args = js(SettingsArgs::new(
            &self.queue(),
            policy,
            &retries.arg(),
            &lease.arg(),
            &expires_in.arg(),
            &on_expiry.arg(),
        ))?;
        Ok(RowPlan::settings(args))
    }

    /// `Queue.pause` (`paused` true) and `Queue.resume` (false): any handle's name, but a pause
    /// that would create a queue under a name an enqueue refuses is refused by the plan's step.
    pub fn pause(&self, paused: bool) -> RowPlan {
        RowPlan::pause(self.name.clone(), paused)
    }

    /// `Queue.purge`.
    pub fn purge(
        &self,
        clock: &JsValue,
        status: &JsValue,
        older_than_ms: &JsValue,
    ) -> std::result::Result<BulkPlan, JsValue> {
        let [status, older] = owned_args![status, older_than_ms];
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

    /// `Queue.list`: `filters` are the values of `FilterArgs::NAMES`, in that order; `clock` is
    /// called only when a filter depends on the instant (`delayed`).
    pub fn list(
        &self,
        filters: &Array,
        limit: &JsValue,
        after_id: &JsValue,
        clock: &js_sys::Function,
    ) -> std::result::Result<ListPlan, JsValue> {
        let values = owned(filters);
        let [limit, after] = owned_args![limit, after_id];
        let args = js(ListArgs::new(
            &self.queue(),
            &filter_args(&values),
            &limit.arg(),
            &after.arg(),
        ))?;
        let at = if args.needs_clock() {
            js(checked_now(&clock.call0(&JsValue::UNDEFINED)?))?
        } else {
            0
        };
        Ok(ListPlan::new(Scan::new(args, at)))
    }
}

/// The values of the filters of `list` and of the bulk actions, in `FilterArgs::NAMES` order
/// (`js/api.js` puts them so, the instants already in milliseconds; a missing one is null).
fn owned(filters: &Array) -> [OwnedArg; 12] {
    let mut values = [const { OwnedArg::Null }; 12];
    args::fill(&mut values, filters);
    values
}

/// The core's filters of `values` (see [`owned`]), field by field: `FilterArgs::set` matches
/// names, which costs the module more.
fn filter_args(values: &[OwnedArg; 12]) -> FilterArgs<'_> {
    let [
        status,
        delayed,
        payload_contains,
        error_contains,
        group,
        idempotency_key,
        created_after,
        created_before,
        updated_after,
        updated_before,
        dead_after,
        dead_before,
    ] = values;
    FilterArgs {
        status: status.arg(),
        delayed: delayed.arg(),
        payload_contains: payload_contains.arg(),
        error_contains: error_contains.arg(),
        group: group.arg(),
        idempotency_key: idempotency_key.arg(),
        created_after: created_after.arg(),
        created_before: created_before.arg(),
        updated_after: updated_after.arg(),
        updated_before: updated_before.arg(),
        dead_after: dead_after.arg(),
        dead_before: dead_before.arg(),
    }
}

/// When the next delayed message is due, from the first key of the range
/// [`QueueRules::next_due_at`] gave (`[queue, status, retryAfter]`; undefined when none waits): a
/// `Date`, or null.
#[wasm_bindgen(js_name = dueAt)]
pub fn due_at(first_key: &JsValue) -> JsValue {
    keys::part(first_key, 2).map_or(JsValue::NULL, |ms| Date::new(&record::number(ms)).into())
}
