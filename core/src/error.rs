//! The one error type, with stable codes that every binding exposes unchanged.

use std::fmt::{self, Write};

use crate::message::{Id, Status};

/// The stable, machine-readable error codes: part of the public API of every binding.
pub const CODES: [&str; 4] = ["validation_failed", "not_found", "conflict", "store"];

/// One rejected argument: which field, a stable snake_case code, and a message for humans.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    /// The argument's name in the core's terms (`queue`, `payload`, `max_retries`, `lease_ms`, ...).
    pub field: &'static str,
    /// `type`, `empty`, `too_long`, `too_large`, `out_of_range`, `invalid` or `unknown`.
    pub code: &'static str,
    /// What was wrong, for humans; not stable.
    pub message: String,
    /// For `enqueue_many`: the position of the rejected item in the batch (0-based).
    pub index: Option<usize>,
}

impl FieldError {
    /// A rejected argument that is not part of a batch item.
    pub fn new(field: &'static str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            code,
            message: message.into(),
            index: None,
        }
    }
}

/// Why a transition was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// The operation is not allowed from the message's current status.
    WrongStatus {
        /// The message.
        id: Id,
        /// Its current status.
        status: Status,
        /// The refused operation (`claim`, `succeed`, `fail`, `extend`, `replay`, `delete`,
        /// `retry_now`, `move`).
        operation: &'static str,
    },
    /// The lease token shown is not the one of the message's current lease (the message is
    /// `processing`): the token's lease expired and the message was claimed again, or the token
    /// was never this message's (a store keeps only the current token: it cannot tell which).
    LeaseLost {
        /// The message.
        id: Id,
    },
    /// `move` (issue 22): a message of the target queue already carries the moved message's
    /// idempotency key (within a queue, at most one message carries a key), so the message stays
    /// where it is. `move_all` skips such messages instead (they are not counted).
    KeyTaken {
        /// The message that was not moved.
        id: Id,
        /// The queue it was to go to.
        to_queue: String,
        /// Its idempotency key, which a message of `to_queue` carries.
        idempotency_key: String,
    },
}

impl Conflict {
    /// The reason as a stable snake_case name, for the bindings' errors: `wrong_status`,
    /// `lease_lost` or `key_taken`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::WrongStatus { .. } => "wrong_status",
            Self::LeaseLost { .. } => "lease_lost",
            Self::KeyTaken { .. } => "key_taken",
        }
    }

    /// The message the conflict is about.
    pub fn id(&self) -> Id {
        match self {
            Self::WrongStatus { id, .. } | Self::LeaseLost { id } | Self::KeyTaken { id, .. } => {
                *id
            }
        }
    }
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WrongStatus {
                id,
                status,
                operation,
            } => {
                write!(f, "cannot {operation} message {id}: it is {status}")
            }
            Self::LeaseLost { id } => write!(
                f,
                "lease lost on message {id}: the token is not its current lease's (that lease \
                 expired and it was claimed again, or the token was never this message's)"
            ),
            Self::KeyTaken {
                id,
                to_queue,
                idempotency_key,
            } => write!(
                f,
                "cannot move message {id} to queue {}: a message there already carries its \
                 idempotency key {}",
                Quoted(to_queue),
                Quoted(idempotency_key)
            ),
        }
    }
}

/// Everything that can go wrong. A call that returns an error has changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// One or more arguments were rejected; see [`FieldError`].
    #[error("validation failed: {}", describe(.0))]
    Validation(Vec<FieldError>),
    /// No message with this id in this queue (ids of other queues are invisible).
    #[error("message {id} not found in queue {}", Quoted(.queue))]
    NotFound {
        /// The queue searched.
        queue: String,
        /// The id asked for.
        id: Id,
    },
    /// The transition is not allowed now: wrong status, or a lost lease.
    #[error("{0}")]
    Conflict(Conflict),
    /// The store failed: I/O, corruption, locked past its timeout, quota.
    #[error("store error: {0}")]
    Store(String),
}

impl Error {
    /// The stable code: one of [`CODES`].
    pub fn code(&self) -> &'static str {
        match self {
            Self::Validation(_) => CODES[0],
            Self::NotFound { .. } => CODES[1],
            Self::Conflict(_) => CODES[2],
            Self::Store(_) => CODES[3],
        }
    }

    /// The rejected fields of a validation error; empty for the other kinds.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            Self::Validation(errors) => errors,
            _ => &[],
        }
    }

    /// A store error from anything displayable (a driver's error).
    pub fn store(err: impl std::fmt::Display) -> Self {
        Self::Store(err.to_string())
    }
}

/// `field: message; ...` (written out rather than joined: `join` is a large generic function in
/// the npm package's WebAssembly, which has a size budget).
fn describe(errors: &[FieldError]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (n, e) in errors.iter().enumerate() {
        let sep = if n == 0 { "" } else { "; " };
        let _ = match e.index {
            Some(i) => write!(out, "{sep}items[{i}].{}: {}", e.field, e.message),
            None => write!(out, "{sep}{}: {}", e.field, e.message),
        };
    }
    out
}

/// The core's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A text quoted in a message (`queue "jobs"`): `"` and `\` escaped with `\`, the characters
/// that a new queue name refuses as control or invisible ones ([`crate::shown::shown`]) escaped
/// as the CLI's tables, the HTTP API's details and the console write them
/// ([`crate::shown::escape`]: `\n`, `\x00`, `\u200b`, `\U000e0041`), so that an operator finds
/// in a log the name a table showed (session 11, tester T3: the core wrote Rust's `\u{200b}`);
/// every other character as it is, the tags of a flag of England, Scotland or Wales too. Not
/// `str`'s `Debug`, which also escapes Unicode's non-printable characters, whose tables weigh
/// about 4 kB gzipped in the WebAssembly module (its budget: bindings-wasm/size.mjs). A name
/// stored before the rules of names reads as it is in an error (finding N7, session 7).
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for (c, hidden) in crate::shown::shown(self.0) {
            if hidden || c == '"' || c == '\\' {
                crate::shown::escape(f, c)?;
            } else {
                f.write_char(c)?;
            }
        }
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::Quoted;

    #[test]
    fn quoted_escapes_as_the_cli_tables_and_the_console_do() {
        for (text, quoted) in [
            ("jobs", r#""jobs""#),
            ("", r#""""#),
            ("billing emails", r#""billing emails""#),
            ("say \"hi\"", r#""say \"hi\"""#),
            ("back\\slash", r#""back\\slash""#),
            ("tab\tnew\nline\rnul\0", r#""tab\tnew\nline\rnul\x00""#),
            ("bell\u{7}del\u{7f}c1\u{85}", r#""bell\x07del\x7fc1\x85""#),
            ("עברית", "\"עברית\""),
            ("it's", r#""it's""#),
            ("invoices\u{202e}exe.", r#""invoices\u202eexe.""#),
            (
                "emails\u{200b}\u{feff}\u{ad}",
                r#""emails\u200b\ufeff\xad""#,
            ),
            ("jobs\u{2028}\u{3164}", r#""jobs\u2028\u3164""#),
            ("tag\u{e0041}", r#""tag\U000e0041""#),
            // The joiners stay, as names keep them; so do the tags of the flags names allow
            // (session 10), not others.
            (
                "\u{1f469}\u{200d}\u{1f4bb} jobs",
                "\"\u{1f469}\u{200d}\u{1f4bb} jobs\"",
            ),
            (
                "\u{1f3f4}\u{e0061}\u{e007f}",
                "\"\u{1f3f4}\\U000e0061\\U000e007f\"",
            ),
        ] {
            assert_eq!(Quoted(text).to_string(), quoted, "{text:?}");
        }
        let wales = "\u{1f3f4}\u{e0067}\u{e0062}\u{e0077}\u{e006c}\u{e0073}\u{e007f}";
        assert_eq!(Quoted(wales).to_string(), format!("\"{wales}\""));
    }
}
