//! The key ranges the IndexedDB store (`js/store/`) reads, as plain arrays
//! `[lower, upper, lowerOpen, upperOpen]` that `js/store/requests.js` turns into `IDBKeyRange`s:
//! which part of which index holds the messages an operation looks at (due, delayed, leased until
//! now, of one status) is decided here, with the record's `lane` and `at` ([`crate::record`]).
//! The indexes' key paths are those `js/store/schema.js` creates:
//!
//! | index | key path |
//! | --- | --- |
//! | `claim` | `[queue, lane, at, id]` |
//! | `list` | `[queue, status, id, updatedAt]` |
//! | `delayed` | `[queue, status, retryAfter, lane]` |
//! | `dead` | `[queue, status, deadAt]` |
//! | `group` | `[queue, group, groupAt, id]` |
//! | `expiring` | `[queue, status, expiresAt]` |

use deadletter::{Millis, Status};
use js_sys::Array;
use wasm_bindgen::{JsCast, JsValue};

use crate::record::{READY, TIMED};

const INF: f64 = f64::INFINITY;
const NEG_INF: f64 = f64::NEG_INFINITY;

/// An `Array` of `values`: the one way this module makes an array of a fixed list of values
/// (not `[a, b].into_iter().collect()`, of which each length and each iterator was a copy in the
/// module: issue 20, its size budget).
pub fn array(values: &[JsValue]) -> Array {
    let out = Array::new();
    for value in values {
        out.push(value);
    }
    out
}

fn key(parts: &[JsValue]) -> JsValue {
    array(parts).into()
}

/// The keys from `[..prefix, lower]` to `[..prefix, upper]` (a longer key under `[..prefix, x]`
/// sorts with `x`'s part); `lower_open` leaves out the keys whose next part is `lower`; `upper` is
/// included.
fn between(prefix: &[JsValue], lower: f64, lower_open: bool, upper: f64) -> JsValue {
    let part = |x: f64| [prefix, &[JsValue::from_f64(x)]].concat();
    // Every longer key under [..prefix, u] is below [..prefix, u, +inf], and no number is above
    // +inf, so [..prefix, +inf] bounds them all.
    let upper = if upper == INF {
        key(&part(INF))
    } else {
        key(&[part(upper).as_slice(), &[JsValue::from_f64(INF)]].concat())
    };
    let lower = if lower_open {
        key(&[part(lower).as_slice(), &[JsValue::from_f64(INF)]].concat())
    } else {
        key(&part(lower))
    };
    array(&[lower, upper, lower_open.into(), false.into()]).into()
}

#[allow(clippy::cast_precision_loss)] // instants and ids are far below 2^53
fn float(n: i64) -> f64 {
    n as f64
}

fn of(queue: &str, status: Status) -> [JsValue; 2] {
    [queue.into(), status.as_str().into()]
}

/// Index `claim`: the timed lane of `queue` up to `now` (leases that ran out, backoffs and delays
/// that are over), in `(at, id)` order.
pub fn timed(queue: &str, now: Millis) -> JsValue {
    between(&[queue.into(), TIMED.into()], NEG_INF, false, float(now))
}

/// Index `claim`: the whole timed lane of `queue` (a claim looks at its first key before it
/// knows the time: see [`crate::claim::ClaimPlan::due`]).
pub fn timed_lane(queue: &str) -> JsValue {
    between(&[queue.into(), TIMED.into()], NEG_INF, false, INF)
}

/// Index `expiring`: the `pending` messages of `queue` that expire, the earliest first, up to
/// `upto` (`+inf`: all).
pub fn expiring(queue: &str, upto: f64) -> JsValue {
    between(&of(queue, Status::Pending), NEG_INF, false, upto)
}

/// Index `group`: the live members of `group` of `queue`, in group order (`groupAt`, then id).
pub fn group(queue: &str, group: &str) -> JsValue {
    between(&[queue.into(), group.into()], NEG_INF, false, INF)
}

/// Index `group`: one range of [`group`] per group of `queue` in `groups`.
pub fn groups(queue: &str, groups: &[String]) -> Array {
    let out = Array::new();
    for name in groups {
        out.push(&group(queue, name));
    }
    out
}

/// The position of a key of index `group` (`[queue, group, groupAt, id]`; `undefined`: none).
pub fn position(group_key: &JsValue) -> Option<deadletter::storage::Position> {
    Some(deadletter::storage::Position {
        at: part(group_key, 2)?,
        id: part(group_key, 3)?,
    })
}

/// Index `claim`: the ready lane of `queue`, in claim order (by id: every record of the lane has
/// the same `at`, [`crate::record::READY_AT`]).
pub fn ready(queue: &str) -> JsValue {
    between(&[queue.into(), READY.into()], NEG_INF, false, INF)
}

/// Index `list`: the messages of `queue` with an id above `after`, in `status` or (`None`) in
/// any: one range per status, each in id order (the store merges them).
pub fn after(queue: &str, status: Option<Status>, after: i64) -> JsValue {
    let statuses = status
        .as_ref()
        .map_or(&Status::ALL[..], std::slice::from_ref);
    let out = Array::new();
    for s in statuses {
        out.push(&between(&of(queue, *s), float(after), true, INF));
    }
    out.into()
}

/// Index `list`: every message of `queue` (`[queue]` up to `[queue, []]`: an array sorts above
/// every status).
pub fn queue(queue: &str) -> JsValue {
    let name = JsValue::from(queue);
    let lower = key(std::slice::from_ref(&name));
    let upper = key(&[name, Array::new().into()]);
    array(&[lower, upper, false.into(), false.into()]).into()
}

/// Index `list`: every message of `queue` in `status`.
pub fn status(queue: &str, status: Status) -> JsValue {
    between(&of(queue, status), NEG_INF, false, INF)
}

/// Index `delayed`: the `pending` messages of `queue` whose `retryAfter` is after `now`, the
/// earliest first (not those blocked behind their group's head: without a lane, they are not
/// in the index).
pub fn delayed(queue: &str, now: Millis) -> JsValue {
    between(&of(queue, Status::Pending), float(now), true, INF)
}

/// Index `dead`: the dead messages of `queue`, by when they died.
pub fn dead(queue: &str) -> JsValue {
    between(&of(queue, Status::Dead), NEG_INF, false, INF)
}

/// Part `at` of an index key, as the whole number it was stored as (an id or an instant).
pub fn part(index_key: &JsValue, at: u32) -> Option<i64> {
    let part =
        js_sys::Array::is_array(index_key).then(|| index_key.unchecked_ref::<Array>().get(at))?;
    crate::record::whole(&part)
}
