//! The filters of `list` and of the bulk actions (issue 22): as a binding receives them
//! ([`FilterArgs`], untyped, filled by name), checked ([`Selection`], owned, so that a request can
//! hold it across a store's awaits) and applied to one message ([`Filter::matches`], the one
//! definition: the engine reads id-ordered pages from the store and keeps what it selects, so no
//! store translates it).
//!
//! Every filter is optional and they combine with AND. Texts are searched case-sensitively, as
//! bytes of UTF-8; `group` and `idempotency_key` match exactly; the time ranges are half-open
//! (`after <= t < before`, UTC milliseconds), as `replay_all`'s `dead_after`/`dead_before` were.

use crate::arg::Arg;
use crate::machine;
use crate::message::{Message, Millis, Status};
use crate::validate::Check;

/// Every filter of `list` and of the bulk actions as untyped arguments, filled by name by a
/// binding ([`FilterArgs::set`]); [`Default`]: none set (every field [`Arg::Null`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterArgs<'a> {
    /// `pending`, `processing`, `succeeded` or `dead`. Which ones an action allows: see
    /// [`Action`].
    pub status: Arg<'a>,
    /// A bool (else `type`): true selects the `pending` messages waiting for a backoff or delay
    /// (`retry_after > now`, the clock read when the call starts), false the other `pending`
    /// ones (due, or blocked behind their group's head without a `retry_after` of their own).
    /// A member blocked behind its group's head with a `retry_after` still to come is delayed
    /// here but not in the stats' `delayed` count, which leaves blocked members out: a message
    /// alone does not say whether it is blocked. `invalid` with a status other than `pending`,
    /// and for an action that touches no pending message.
    pub delayed: Arg<'a>,
    /// A string that the payload contains (`empty` when empty: leaving it out selects every
    /// message; `invalid` with a NUL, which no stored text holds).
    pub payload_contains: Arg<'a>,
    /// A string that the `last_error` contains (rules of `payload_contains`).
    pub error_contains: Arg<'a>,
    /// The ordering group, exactly (the rules of an enqueue's `group`: non-empty, at most 255
    /// characters, no NUL).
    pub group: Arg<'a>,
    /// The idempotency key, exactly (the rules of an enqueue's key).
    pub idempotency_key: Arg<'a>,
    /// An instant (UTC ms, an integer within 0001-01-01..=9999-12-31 as every instant of the
    /// core; else `type` or `out_of_range`): `created_at >= created_after`.
    pub created_after: Arg<'a>,
    /// An instant (UTC ms): `created_at < created_before`.
    pub created_before: Arg<'a>,
    /// An instant (UTC ms): `updated_at >= updated_after`.
    pub updated_after: Arg<'a>,
    /// An instant (UTC ms): `updated_at < updated_before`.
    pub updated_before: Arg<'a>,
    /// An instant (UTC ms): `dead_at >= dead_after` (so only dead messages).
    pub dead_after: Arg<'a>,
    /// An instant (UTC ms): `dead_at < dead_before` (so only dead messages).
    pub dead_before: Arg<'a>,
}

impl<'a> FilterArgs<'a> {
    /// The filters that are instants (UTC milliseconds in the core): the time bounds, the last
    /// six of [`FilterArgs::NAMES`] (that slice of it, so the names are written once). Each
    /// binding restates their type errors in its own terms (an aware `datetime` in Python, a
    /// `Date` or milliseconds in JavaScript).
    pub const INSTANTS: [&'static str; 6] = match Self::NAMES.split_last_chunk::<6>() {
        Some((_, instants)) => *instants,
        None => unreachable!(),
    };

    /// The filters' snake_case names, in the order their errors are reported: the HTTP query and
    /// body keys and the Python keywords (JavaScript camelCases them).
    pub const NAMES: [&'static str; 12] = [
        "status",
        "delayed",
        "payload_contains",
        "error_contains",
        "group",
        "idempotency_key",
        "created_after",
        "created_before",
        "updated_after",
        "updated_before",
        "dead_after",
        "dead_before",
    ];

    /// Sets the filter `name` (one of [`FilterArgs::NAMES`]) to `value`; false (and nothing
    /// set) when no filter has that name.
    pub fn set(&mut self, name: &str, value: Arg<'a>) -> bool {
        let slot = match name {
            "status" => &mut self.status,
            "delayed" => &mut self.delayed,
            "payload_contains" => &mut self.payload_contains,
            "error_contains" => &mut self.error_contains,
            "group" => &mut self.group,
            "idempotency_key" => &mut self.idempotency_key,
            "created_after" => &mut self.created_after,
            "created_before" => &mut self.created_before,
            "updated_after" => &mut self.updated_after,
            "updated_before" => &mut self.updated_before,
            "dead_after" => &mut self.dead_after,
            "dead_before" => &mut self.dead_before,
            _ => return false,
        };
        *slot = value;
        true
    }
}

/// What a bulk action does with the messages its filters select, and so which statuses it
/// allows (another `status` is `validation_failed`, field `status`, code `invalid`). `list`
/// allows every status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `replay_all`: `dead` only, the default.
    Replay,
    /// `delete_all`: `succeeded` or `dead` (the finished messages, as `delete` and `purge`);
    /// both by default.
    Delete,
    /// `retry_now_all`: `pending` only, the default; always `delayed` (true by default; false is
    /// `invalid`): it acts on messages waiting for a backoff or delay.
    RetryNow,
    /// `move_all` (issue 22): `pending` or `dead` (a processing message belongs to its worker, a
    /// succeeded one is done); both by default. It takes a target queue besides the filters
    /// ([`super::MoveAllArgs`]).
    Move,
}

impl Action {
    /// The operation's name in the core and in Python (errors do not say it: JavaScript names
    /// it otherwise, issue 19).
    pub fn name(self) -> &'static str {
        match self {
            Self::Replay => "replay_all",
            Self::Delete => "delete_all",
            Self::RetryNow => "retry_now_all",
            Self::Move => "move_all",
        }
    }

    /// Whether the action may touch a message in `status`.
    pub fn allows(self, status: Status) -> bool {
        match self {
            Self::Replay => status == Status::Dead,
            Self::Delete => matches!(status, Status::Succeeded | Status::Dead),
            Self::RetryNow => status == Status::Pending,
            Self::Move => matches!(status, Status::Pending | Status::Dead),
        }
    }

    /// The status it selects when the call names none (`None`: any it allows).
    fn default_status(self) -> Option<Status> {
        match self {
            Self::Delete | Self::Move => None,
            Self::Replay => Some(Status::Dead),
            Self::RetryNow => Some(Status::Pending),
        }
    }

    /// What `status` must be, for the error message.
    fn allowed(self) -> &'static str {
        match self {
            Self::Replay => "dead (only dead messages are replayed)",
            Self::Delete => "succeeded or dead (only finished messages are deleted)",
            Self::RetryNow => "pending (only pending messages wait for a retry)",
            Self::Move => {
                "pending or dead (a processing message belongs to its worker, a succeeded one is \
                 done)"
            }
        }
    }
}

/// The filters of one call, checked ([`super::ListArgs::new`], [`super::BulkArgs::new`]) and
/// owned. [`Selection::filter`] borrows them as the [`Filter`] of a queue at an instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only this status (for a bulk action: the call's, else its default, see [`Action`]).
    pub status: Option<Status>,
    /// Only delayed (`Some(true)`) or only not delayed (`Some(false)`) `pending` messages.
    pub delayed: Option<bool>,
    /// Only messages whose payload contains this text.
    pub payload_contains: Option<String>,
    /// Only messages whose `last_error` contains this text.
    pub error_contains: Option<String>,
    /// Only messages of this ordering group.
    pub group: Option<String>,
    /// Only the message with this idempotency key.
    pub idempotency_key: Option<String>,
    /// `created_at >= created_after`.
    pub created_after: Option<Millis>,
    /// `created_at < created_before`.
    pub created_before: Option<Millis>,
    /// `updated_at >= updated_after`.
    pub updated_after: Option<Millis>,
    /// `updated_at < updated_before`.
    pub updated_before: Option<Millis>,
    /// `dead_at >= dead_after`.
    pub dead_after: Option<Millis>,
    /// `dead_at < dead_before`.
    pub dead_before: Option<Millis>,
}

impl Selection {
    /// Checks `args` for `action` (`None`: `list`) into `check` (every rejected field is recorded,
    /// in [`FilterArgs::NAMES`] order): `status` (one of the four, and one `action` allows),
    /// `delayed` (a bool; `invalid` with a status other than `pending`, or for an action that
    /// touches no pending message, or false for `retry_now_all`), the two texts
    /// (non-empty, no NUL), `group` and `idempotency_key` (their enqueue rules) and the six
    /// instants (integers within the representable range). `None` when one was rejected.
    pub(crate) fn check(
        check: &mut Check,
        args: &FilterArgs<'_>,
        action: Option<Action>,
    ) -> Option<Self> {
        let before = check.len();
        let status = match (check.status(&args.status), action) {
            (Some(status), Some(action)) if !action.allows(status) => {
                let message = format!("must be {}; got {status}", action.allowed());
                check.reject_invalid("status", message);
                None
            }
            (given, action) => given.or(action.and_then(Action::default_status)),
        };
        let retry_now = action == Some(Action::RetryNow);
        let delayed = match args.delayed {
            Arg::Null if retry_now => Some(true),
            Arg::Null => None,
            Arg::Bool(delayed) => Some(delayed),
            ref other => {
                check.bool("delayed", other, false); // a `type` error, and nothing more
                None
            }
        };
        if let Some(delayed) = delayed {
            let pending = action.is_none_or(|a| a.allows(Status::Pending));
            if !pending || status.is_some_and(|s| s != Status::Pending) {
                let message = "applies to pending messages only, and this call's status is not \
                               pending";
                check.reject_invalid("delayed", message.into());
            } else if !delayed && retry_now {
                let message = "must be true here (retrying now makes delayed messages due)";
                check.reject_invalid("delayed", message.into());
            }
        }
        let payload_contains = check.search("payload_contains", &args.payload_contains);
        let error_contains = check.search("error_contains", &args.error_contains);
        let group = check.group(&args.group);
        let idempotency_key = check.idempotency_key(&args.idempotency_key);
        let mut instant = |field, arg| check.opt_instant(field, arg);
        let created_after = instant("created_after", &args.created_after);
        let created_before = instant("created_before", &args.created_before);
        let updated_after = instant("updated_after", &args.updated_after);
        let updated_before = instant("updated_before", &args.updated_before);
        let dead_after = instant("dead_after", &args.dead_after);
        let dead_before = instant("dead_before", &args.dead_before);
        (check.len() == before).then(|| Self {
            status,
            delayed,
            payload_contains: payload_contains.map(str::to_owned),
            error_contains: error_contains.map(str::to_owned),
            group: group.map(str::to_owned),
            idempotency_key: idempotency_key.map(str::to_owned),
            created_after,
            created_before,
            updated_after,
            updated_before,
            dead_after,
            dead_before,
        })
    }

    /// The status of the store's page read: the filter's, or `pending` when only `delayed` is
    /// set (it selects nothing else).
    pub fn read_status(&self) -> Option<Status> {
        self.status.or(self.delayed.map(|_| Status::Pending))
    }

    /// Whether a filter beyond the status is set: then the messages of the page read must be
    /// looked at ([`Filter::matches`]); without one, the page read is the answer.
    pub fn scans(&self) -> bool {
        *self
            != Self {
                status: self.status,
                ..Self::default()
            }
    }

    /// The filter of `queue` at `now` (the instant `delayed` is judged at).
    pub fn filter<'a>(&'a self, queue: &'a str, now: Millis) -> Filter<'a> {
        Filter {
            queue,
            status: self.status,
            delayed: self.delayed,
            now,
            payload_contains: self.payload_contains.as_deref(),
            error_contains: self.error_contains.as_deref(),
            group: self.group.as_deref(),
            idempotency_key: self.idempotency_key.as_deref(),
            created_after: self.created_after,
            created_before: self.created_before,
            updated_after: self.updated_after,
            updated_before: self.updated_before,
            dead_after: self.dead_after,
            dead_before: self.dead_before,
            updated_until: None,
        }
    }
}

/// Which messages of one queue `list`, a bulk action or `purge` selects. [`Filter::matches`] is
/// the definition; the engine checks it on each message read, and again inside each write.
/// [`Default`]: every message of the queue `""` (fill in `queue`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Only messages in this status, when set.
    pub status: Option<Status>,
    /// Only `pending` messages with `retry_after > now` (true) or without (false), when set.
    pub delayed: Option<bool>,
    /// The instant `delayed` is judged at, UTC ms (unused without `delayed`).
    pub now: Millis,
    /// Only messages whose payload contains this text (case-sensitive), when set.
    pub payload_contains: Option<&'a str>,
    /// Only messages whose `last_error` contains this text (case-sensitive), when set.
    pub error_contains: Option<&'a str>,
    /// Only messages of this ordering group, when set.
    pub group: Option<&'a str>,
    /// Only messages with this idempotency key, when set.
    pub idempotency_key: Option<&'a str>,
    /// Only messages with `created_at >= created_after`, when set.
    pub created_after: Option<Millis>,
    /// Only messages with `created_at < created_before`, when set.
    pub created_before: Option<Millis>,
    /// Only messages with `updated_at >= updated_after`, when set.
    pub updated_after: Option<Millis>,
    /// Only messages with `updated_at < updated_before`, when set.
    pub updated_before: Option<Millis>,
    /// Only messages with `dead_at >= dead_after`, when set.
    pub dead_after: Option<Millis>,
    /// Only messages with `dead_at < dead_before`, when set.
    pub dead_before: Option<Millis>,
    /// Only messages with `updated_at <= updated_until`, when set (`purge`'s `older_than_ms`).
    pub updated_until: Option<Millis>,
}

impl Filter<'_> {
    /// Whether `message` is selected.
    pub fn matches(&self, message: &Message) -> bool {
        let m = message;
        let text = |text: Option<&str>, within: Option<&str>| {
            text.is_none_or(|text| within.is_some_and(|w| contains(w, text)))
        };
        let exact = |want: Option<&str>, got: Option<&str>| want.is_none_or(|w| got == Some(w));
        m.queue == self.queue
            && self.status.is_none_or(|s| m.status == s)
            && self.delayed.is_none_or(|delayed| {
                m.status == Status::Pending && machine::is_delayed(m, self.now) == delayed
            })
            && text(self.payload_contains, Some(&m.payload))
            && text(self.error_contains, m.last_error.as_deref())
            && exact(self.group, m.group.as_deref())
            && exact(self.idempotency_key, m.idempotency_key.as_deref())
            && within(Some(m.created_at), self.created_after, self.created_before)
            && within(Some(m.updated_at), self.updated_after, self.updated_before)
            && within(m.dead_at, self.dead_after, self.dead_before)
            && self.updated_until.is_none_or(|until| m.updated_at <= until)
    }
}

/// Whether the instant `at` is in the half-open range `after <= at < before` (each bound only
/// when set); an absent instant (`dead_at` of a message that is not dead) is in no bounded range.
fn within(at: Option<Millis>, after: Option<Millis>, before: Option<Millis>) -> bool {
    if after.is_none() && before.is_none() {
        return true;
    }
    at.is_some_and(|at| after.is_none_or(|a| at >= a) && before.is_none_or(|b| at < b))
}

/// Whether `text` occurs in `haystack` (`payload_contains`, `error_contains`), in time linear in
/// their lengths whatever they hold (Knuth-Morris-Pratt over bytes, exact for UTF-8 texts): a
/// payload may be 64 MiB, and the naive search costs its length times the text's on a
/// repetitive text and payload. Written here rather than `str::contains` (also linear), whose
/// two-way searcher and its panic messages weigh about 2 kB gzipped in the WebAssembly module
/// (its budget: bindings-wasm/size.mjs).
fn contains(haystack: &str, text: &str) -> bool {
    let (haystack, text) = (haystack.as_bytes(), text.as_bytes());
    if text.len() > haystack.len() {
        return false;
    }
    // border[i]: the length of the longest proper prefix of text[..=i] that is also its suffix.
    let mut border = vec![0; text.len()];
    let mut k = 0;
    for (i, &byte) in text.iter().enumerate().skip(1) {
        while k > 0 && byte != text[k] {
            k = border[k - 1];
        }
        if byte == text[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut k = 0;
    for &byte in haystack {
        if k == text.len() {
            return true;
        }
        while k > 0 && byte != text[k] {
            k = border[k - 1];
        }
        if byte == text[k] {
            k += 1;
        }
    }
    k == text.len()
}

#[cfg(test)]
mod tests;
