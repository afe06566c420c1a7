//! Every argument rule, applied to [`Arg`]s. All rejected fields of a call are reported together.

use crate::arg::Arg;
use crate::error::{Error, FieldError, Result};
use crate::message::{Id, Status};

/// Longest queue name, in characters.
pub const MAX_QUEUE_CHARS: usize = 255;
/// Allowed `max_retries`, and the default.
pub const MAX_RETRIES_RANGE: (i64, i64) = (1, 10);
/// Default `max_retries`.
pub const DEFAULT_MAX_RETRIES: i64 = 3;
/// Longest lease (visibility timeout): 12 hours, in milliseconds.
pub const MAX_LEASE_MS: i64 = 12 * 3600 * 1000;
/// Default lease: 30 s.
pub const DEFAULT_LEASE_MS: i64 = 30_000;
/// Default payload limit: 1 MiB of UTF-8.
pub const DEFAULT_MAX_PAYLOAD_BYTES: i64 = 1 << 20;
/// Largest payload limit a database may be opened with: 64 MiB.
pub const MAX_PAYLOAD_LIMIT: i64 = 64 << 20;
/// `list` page size: allowed range and default.
pub const LIST_LIMIT_RANGE: (i64, i64) = (1, 1000);
/// Default `list` page size.
pub const DEFAULT_LIST_LIMIT: i64 = 100;

/// Collects field errors while arguments are read.
#[derive(Default)]
pub(crate) struct Check {
    errors: Vec<FieldError>,
}

impl Check {
    fn reject(&mut self, field: &'static str, code: &'static str, message: String) {
        self.errors.push(FieldError {
            field,
            code,
            message,
        });
    }

    fn wrong_type(&mut self, field: &'static str, expected: &str, got: &Arg<'_>) {
        self.reject(
            field,
            "type",
            format!("must be {expected}, got {}", got.kind()),
        );
    }

    /// A payload over the open-time limit.
    pub(crate) fn reject_too_large(&mut self, len: usize, max: usize) {
        self.reject(
            "payload",
            "too_large",
            format!("is {len} bytes; the limit is {max}"),
        );
    }

    /// A required string.
    pub(crate) fn string<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        match *arg {
            Arg::Str(s) => Some(s),
            ref other => {
                self.wrong_type(field, "a string", other);
                None
            }
        }
    }

    /// An optional string (`Null` -> `None`).
    pub(crate) fn opt_string<'a>(&mut self, field: &'static str, arg: &Arg<'a>) -> Option<&'a str> {
        match arg {
            Arg::Null => None,
            other => self.string(field, other),
        }
    }

    /// An integer in `range`, or `default` when `Null` (required when `default` is `None`).
    pub(crate) fn int(
        &mut self,
        field: &'static str,
        arg: &Arg<'_>,
        (min, max): (i64, i64),
        default: Option<i64>,
    ) -> Option<i64> {
        let out_of_range = format!("must be between {min} and {max}");
        match (arg, default) {
            (Arg::Null, Some(default)) => Some(default),
            (Arg::Int(n), _) if (min..=max).contains(n) => Some(*n),
            (Arg::Int(_) | Arg::BigInt, _) => {
                self.reject(field, "out_of_range", out_of_range);
                None
            }
            (other, _) => {
                self.wrong_type(field, "an integer", other);
                None
            }
        }
    }

    /// A boolean, or `default` when `Null`.
    pub(crate) fn bool(&mut self, field: &'static str, arg: &Arg<'_>, default: bool) -> bool {
        match arg {
            Arg::Null => default,
            Arg::Bool(b) => *b,
            other => {
                self.wrong_type(field, "a bool", other);
                default
            }
        }
    }

    /// A queue name: a non-empty string of at most [`MAX_QUEUE_CHARS`] characters.
    pub(crate) fn queue<'a>(&mut self, arg: &Arg<'a>) -> Option<&'a str> {
        let name = self.string("queue", arg)?;
        if name.is_empty() {
            self.reject("queue", "empty", "must not be empty".into());
        } else if name.chars().count() > MAX_QUEUE_CHARS {
            self.reject(
                "queue",
                "too_long",
                format!("must be at most {MAX_QUEUE_CHARS} characters"),
            );
        } else {
            return Some(name);
        }
        None
    }

    /// A message id: an integer >= 1.
    pub(crate) fn id(&mut self, arg: &Arg<'_>) -> Option<Id> {
        self.int("id", arg, (1, i64::MAX), None)
    }

    /// An optional status filter.
    pub(crate) fn status(&mut self, arg: &Arg<'_>) -> Option<Status> {
        let name = self.opt_string("status", arg)?;
        let status = Status::parse(name);
        if status.is_none() {
            let message =
                format!("must be one of pending, processing, succeeded, dead; got {name:?}");
            self.reject("status", "invalid", message);
        }
        status
    }

    /// `Ok(value)` when no field was rejected, else the validation error with every field.
    pub(crate) fn finish<T>(self, value: impl FnOnce() -> T) -> Result<T> {
        if self.errors.is_empty() {
            Ok(value())
        } else {
            Err(Error::Validation(self.errors))
        }
    }
}

/// Checks a queue name alone (non-empty string, at most 255 characters), for bindings that make a
/// queue handle before any operation.
pub fn queue_name<'a>(arg: &Arg<'a>) -> Result<&'a str> {
    let mut check = Check::default();
    let name = check.queue(arg);
    check.finish(|| name.unwrap_or_default())
}

/// Settings fixed when a database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Lease given by `claim` when the caller names none, in milliseconds.
    pub default_lease_ms: i64,
    /// Largest accepted payload, in bytes of UTF-8.
    pub max_payload_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_lease_ms: DEFAULT_LEASE_MS,
            max_payload_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// Validates open-time options: `lease_ms` in 1..=12 h (default 30 s), `max_payload_bytes`
    /// in 1..=64 MiB (default 1 MiB).
    pub fn new(lease_ms: &Arg<'_>, max_payload_bytes: &Arg<'_>) -> Result<Self> {
        let mut check = Check::default();
        let lease = check.int(
            "lease_ms",
            lease_ms,
            (1, MAX_LEASE_MS),
            Some(DEFAULT_LEASE_MS),
        );
        let max = check.int(
            "max_payload_bytes",
            max_payload_bytes,
            (1, MAX_PAYLOAD_LIMIT),
            Some(DEFAULT_MAX_PAYLOAD_BYTES),
        );
        check.finish(|| Self {
            default_lease_ms: lease.unwrap_or(DEFAULT_LEASE_MS),
            max_payload_bytes: max.and_then(|m| usize::try_from(m).ok()).unwrap_or(1 << 20),
        })
    }
}
