//! The core's names and limits as attributes of `deadletter._deadletter`, so that the Python
//! package shows them as the core has them and never retypes them: the status names, the limits
//! of the arguments it checks, and a few figures of its rules (history length, commit batches).
//! `deadletter.http` writes them into its API description (`/openapi.json`) and its metrics, the
//! dashboard reads them from that description, and the CLI writes them into its help. (The error
//! codes, `CODES`, are added by `lib.rs` with the module's other items.)
//!
//! Durations and instants keep the core's unit, milliseconds (names ending in `_MS`): the API
//! description derives exact bounds in seconds from them. A range is `(low, high)`, both included.
//! Where the core checks a range with a literal lower bound (`1..=MAX_LEASE_MS`), the range is
//! written here once, next to the constant it extends, with the check it mirrors named.

use deadletter::{Action, Id, Status, machine, validate};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Adds the constants to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let statuses = Status::ALL.map(Status::as_str);
    m.add("STATUSES", PyTuple::new(m.py(), statuses)?)?;
    // The statuses each bulk action may touch (`Action::allows`), by its method's name.
    let bulk = PyDict::new(m.py());
    for action in [
        Action::Replay,
        Action::Delete,
        Action::RetryNow,
        Action::Move,
    ] {
        let allowed = Status::ALL.into_iter().filter(|s| action.allows(*s));
        let names: Vec<&str> = allowed.map(Status::as_str).collect();
        bulk.set_item(action.name(), PyTuple::new(m.py(), names)?)?;
    }
    m.add("BULK_STATUSES", bulk)?;
    // Argument ranges, as `deadletter::validate` and the engine check them.
    m.add("MAX_QUEUE_CHARS", validate::MAX_QUEUE_CHARS)?;
    m.add(
        "MAX_IDEMPOTENCY_KEY_CHARS",
        validate::MAX_IDEMPOTENCY_KEY_CHARS,
    )?;
    m.add("MAX_RETRIES_RANGE", validate::MAX_RETRIES_RANGE)?;
    m.add("DEFAULT_MAX_RETRIES", validate::DEFAULT_MAX_RETRIES)?;
    // `Limits::new` and `claim`/`extend`: 1 ms..=MAX_LEASE_MS.
    m.add("LEASE_RANGE_MS", (1, validate::MAX_LEASE_MS))?;
    // `enqueue`'s `delay_ms`: 0..=MAX_DELAY_MS.
    m.add("DELAY_RANGE_MS", (0, validate::MAX_DELAY_MS))?;
    // `fail`'s `retry_in_ms`: 0..=MAX_DELAY_MS, a delay's range.
    m.add("RETRY_IN_RANGE_MS", (0, validate::MAX_DELAY_MS))?;
    // `expires_in_ms` of enqueue, replay and the queue's settings: 1..=MAX_EXPIRES_IN_MS.
    m.add("EXPIRES_IN_RANGE_MS", (1, validate::MAX_EXPIRES_IN_MS))?;
    m.add("MAX_GROUP_CHARS", validate::MAX_GROUP_CHARS)?;
    // `Backoff`'s `multiplier` (its `initial` and `cap` take a delay's range).
    m.add(
        "BACKOFF_MULTIPLIER_RANGE",
        deadletter::backoff::MULTIPLIER_RANGE,
    )?;
    // The queue's `on_expiry` settings, as the core names them.
    let outcomes = deadletter::OnExpiry::ALL.map(|(name, _)| name);
    m.add("ON_EXPIRY", PyTuple::new(m.py(), outcomes)?)?;
    // `Limits::new`: 1..=MAX_PAYLOAD_LIMIT bytes.
    m.add("MAX_PAYLOAD_BYTES_RANGE", (1, validate::MAX_PAYLOAD_LIMIT))?;
    m.add(
        "DEFAULT_MAX_PAYLOAD_BYTES",
        validate::DEFAULT_MAX_PAYLOAD_BYTES,
    )?;
    m.add("LIST_LIMIT_RANGE", validate::LIST_LIMIT_RANGE)?;
    m.add("DEFAULT_LIST_LIMIT", validate::DEFAULT_LIST_LIMIT)?;
    // The filters of `list` and the bulk actions, by name (`Queue.list`'s keywords).
    m.add(
        "FILTERS",
        PyTuple::new(m.py(), deadletter::FilterArgs::NAMES)?,
    )?;
    m.add("SCAN_BUDGET", deadletter::SCAN_BUDGET)?;
    m.add("MAX_BATCH", validate::MAX_BATCH)?;
    m.add("MAX_CLAIM_MANY", validate::MAX_CLAIM_MANY)?;
    m.add("MAX_ID", Id::MAX)?;
    m.add("TIME_RANGE_MS", (validate::MIN_TIME, validate::MAX_TIME))?;
    // Figures of the rules.
    m.add("BATCH", deadletter::BATCH)?;
    m.add("MAX_HISTORY", machine::MAX_HISTORY)?;
    m.add("MAX_ERROR_BYTES", machine::MAX_ERROR_BYTES)?;
    m.add("LEASE_EXPIRED", machine::LEASE_EXPIRED)
}
