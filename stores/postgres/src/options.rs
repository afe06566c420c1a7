//! [`Options`]: how a [`PostgresStore`](crate::PostgresStore) is opened besides its URL, from
//! typed fields or from a binding's untyped arguments, and their limits.

use std::time::Duration;

use deadletter::{Arg, Error, FieldError, Result, validate};

use crate::schema;

/// Most sessions one store may hold: [`Options::max_connections`] is in `1..=MAX_CONNECTIONS`.
pub const MAX_CONNECTIONS: u32 = 1000;

/// Longest [`Options::connect_timeout`] and [`Options::lock_timeout`], in milliseconds: one hour.
/// Both are at least one millisecond.
pub const MAX_TIMEOUT_MS: i64 = 3_600_000;

/// [`MAX_TIMEOUT_MS`] as a duration.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(MAX_TIMEOUT_MS.unsigned_abs());

/// How a [`PostgresStore`](crate::PostgresStore) is opened, besides its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The schema that holds the store's tables, created when missing. Default `deadletter`.
    /// Several stores (applications, test runs) can share a database under different schemas.
    pub schema: String,
    /// Most sessions the store holds open at once (1..=1000). Default 10. Sessions are opened on
    /// demand and kept for reuse; a worker process with one thread needs one.
    pub max_connections: u32,
    /// How long a call waits for a session (a free one, or a new connection) before failing
    /// with a store error (1 ms..=1 h). Default 10 s.
    pub connect_timeout: Duration,
    /// How long a call waits for a message another call holds (a worker acking it while an
    /// operator replays it) before failing with a store error (1 ms..=1 h). Claims never wait:
    /// they skip messages being claimed. Default 30 s, as SQLite's busy timeout.
    pub lock_timeout: Duration,
    /// Whether `open` creates the schema and its tables when they are missing. Default true.
    /// Off, a schema without deadletter's tables (missing, or empty) is a store error and nothing
    /// is created: for tools that only read, where a mistyped schema name must not look like an
    /// empty queue (the CLI's `stats`, `list` and `show`).
    pub create: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            schema: "deadletter".to_owned(),
            max_connections: 10,
            connect_timeout: Duration::from_secs(10),
            lock_timeout: Duration::from_secs(30),
            create: true,
        }
    }
}

impl Options {
    /// The options from untyped arguments, as a binding passes them (see [`deadletter::Arg`]):
    /// `schema` a string, `max_connections` an integer, the timeouts integers of milliseconds;
    /// `Null` for any of them means its default. Every rejected argument is reported at once:
    /// `validation_failed` with fields `schema` (`type`, `empty`, `too_long`, `invalid`),
    /// `max_connections`, `connect_timeout_ms`, `lock_timeout_ms` (`type`, `out_of_range`).
    pub fn from_args(
        schema: &Arg<'_>,
        max_connections: &Arg<'_>,
        connect_timeout_ms: &Arg<'_>,
        lock_timeout_ms: &Arg<'_>,
    ) -> Result<Self> {
        let defaults = Self::default();
        let mut rejected = Vec::new();
        let mut keep = |checked: Result<i64>| {
            checked
                .map_err(|err| rejected.extend(err.field_errors().iter().cloned()))
                .ok()
        };
        let max_connections = keep(validate::integer(
            "max_connections",
            max_connections,
            (1, MAX_CONNECTIONS.into()),
            defaults.max_connections.into(),
        ));
        let connect_timeout = keep(validate::integer(
            "connect_timeout_ms",
            connect_timeout_ms,
            (1, MAX_TIMEOUT_MS),
            millis(defaults.connect_timeout),
        ));
        let lock_timeout = keep(validate::integer(
            "lock_timeout_ms",
            lock_timeout_ms,
            (1, MAX_TIMEOUT_MS),
            millis(defaults.lock_timeout),
        ));
        let schema = match schema {
            Arg::Null => Some(defaults.schema),
            Arg::Str(name) => schema::quote_identifier(name)
                .map_err(|err| rejected.extend(err.field_errors().iter().cloned()))
                .ok()
                .map(|_| (*name).to_owned()),
            other => {
                let message = format!("must be a string, got {}", other.kind());
                rejected.push(FieldError::new("schema", "type", message));
                None
            }
        };
        match (schema, max_connections, connect_timeout, lock_timeout) {
            (Some(schema), Some(max), Some(connect), Some(lock)) if rejected.is_empty() => {
                Ok(Self {
                    schema,
                    max_connections: u32::try_from(max).map_err(Error::store)?,
                    connect_timeout: Duration::from_millis(connect.unsigned_abs()),
                    lock_timeout: Duration::from_millis(lock.unsigned_abs()),
                    create: defaults.create,
                })
            }
            _ => Err(Error::Validation(rejected)),
        }
    }

    /// Every option outside its range, as field errors.
    pub(crate) fn rejected(&self) -> Vec<FieldError> {
        let mut rejected = schema::quote_identifier(&self.schema)
            .err()
            .map(|err| err.field_errors().to_vec())
            .unwrap_or_default();
        if !(1..=MAX_CONNECTIONS).contains(&self.max_connections) {
            rejected.push(FieldError::new(
                "max_connections",
                "out_of_range",
                format!(
                    "must be in 1..={MAX_CONNECTIONS}, got {}",
                    self.max_connections
                ),
            ));
        }
        let timeouts = [
            ("connect_timeout", self.connect_timeout),
            ("lock_timeout", self.lock_timeout),
        ];
        for (field, timeout) in timeouts {
            if !(Duration::from_millis(1)..=MAX_TIMEOUT).contains(&timeout) {
                rejected.push(FieldError::new(
                    field,
                    "out_of_range",
                    format!("must be between 1 ms and 1 hour, got {timeout:?}"),
                ));
            }
        }
        rejected
    }
}

/// A default timeout in whole milliseconds.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PostgresStore;

    fn rejected(err: &Error) -> Vec<(&'static str, &'static str)> {
        err.field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect()
    }

    #[test]
    fn options_from_args_default_what_is_null_and_report_every_rejected_field() {
        let null = Arg::Null;
        assert_eq!(
            Options::from_args(&null, &null, &null, &null).unwrap(),
            Options::default()
        );
        let given = Options::from_args(
            &Arg::Str("jobs"),
            &Arg::Int(3),
            &Arg::Int(1500),
            &Arg::Int(1),
        )
        .unwrap();
        assert_eq!(
            given,
            Options {
                schema: "jobs".into(),
                max_connections: 3,
                connect_timeout: Duration::from_millis(1500),
                lock_timeout: Duration::from_millis(1),
                create: true,
            }
        );
        let err = Options::from_args(
            &Arg::Int(1),
            &Arg::Bool(true),
            &Arg::Int(0),
            &Arg::Float(2.5),
        )
        .unwrap_err();
        assert_eq!(
            rejected(&err),
            [
                ("max_connections", "type"),
                ("connect_timeout_ms", "out_of_range"),
                ("lock_timeout_ms", "type"),
                ("schema", "type"),
            ]
        );
        let err = Options::from_args(
            &Arg::Str(""),
            &Arg::Int(1001),
            &Arg::Int(3_600_001),
            &Arg::BigInt,
        )
        .unwrap_err();
        assert_eq!(
            rejected(&err),
            [
                ("max_connections", "out_of_range"),
                ("connect_timeout_ms", "out_of_range"),
                ("lock_timeout_ms", "out_of_range"),
                ("schema", "empty"),
            ]
        );
    }

    #[test]
    fn open_reports_every_rejected_option_and_the_url_at_once_without_the_password() {
        let options = Options {
            schema: "s".repeat(64),
            max_connections: 0,
            connect_timeout: Duration::ZERO,
            lock_timeout: Duration::from_secs(3601),
            create: true,
        };
        let err =
            PostgresStore::open("postgresql://u:sekret@host:notaport/db", &options).unwrap_err();
        assert!(!err.to_string().contains("sekret"), "{err}");
        assert_eq!(
            rejected(&err),
            [
                ("schema", "too_long"),
                ("max_connections", "out_of_range"),
                ("connect_timeout", "out_of_range"),
                ("lock_timeout", "out_of_range"),
                ("url", "invalid"),
            ]
        );
    }
}
