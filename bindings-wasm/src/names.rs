//! Pure helpers of the npm package's errors, compiled and tested natively: the native module of
//! Node (`bindings-node`) names a rejected field and words its message with them. The WebAssembly
//! module's errors get the same from `js/store/record.js` (`fieldError`: the camelCase of the
//! core's name, which this table is, as its test checks; and the same wording of instants), so
//! that the module carries no table of names; the conformance runs of both backends compare the
//! field names.

/// Core argument names and their JavaScript names, where they differ: the one table the native
/// binding's errors use. Every other name (`queue`, `payload`, `id`, `error`, `status`, `limit`,
/// `retryable`, `n`, `items`, `multiplier`, `jitter`, `clock`, `random`) is the same in both.
pub const JS_NAMES: [(&str, &str); 26] = [
    ("max_retries", "maxRetries"),
    ("lease_ms", "leaseMs"),
    ("lease_token", "leaseToken"),
    ("after_id", "afterId"),
    ("max_payload_bytes", "maxPayloadBytes"),
    ("retry_count", "retryCount"),
    ("idempotency_key", "idempotencyKey"),
    ("delay_ms", "delayMs"),
    ("older_than_ms", "olderThanMs"),
    ("initial_ms", "initialMs"),
    ("cap_ms", "capMs"),
    ("error_contains", "errorContains"),
    ("dead_before", "deadBefore"),
    ("dead_after", "deadAfter"),
    ("poll_interval_ms", "pollIntervalMs"),
    ("shutdown_timeout_ms", "shutdownTimeoutMs"),
    ("expires_in_ms", "expiresInMs"),
    ("retry_in_ms", "retryInMs"),
    ("on_expiry", "onExpiry"),
    ("payload_contains", "payloadContains"),
    ("created_after", "createdAfter"),
    ("created_before", "createdBefore"),
    ("updated_after", "updatedAfter"),
    ("updated_before", "updatedBefore"),
    ("dry_run", "dryRun"),
    ("to_queue", "toQueue"),
];

/// The JavaScript name of a core argument name (see [`JS_NAMES`]): `max_retries` ->
/// `maxRetries`, `queue` -> `queue`.
pub fn js_field(core: &str) -> &str {
    JS_NAMES
        .iter()
        .find(|(name, _)| *name == core)
        .map_or(core, |(_, js)| js)
}

/// A field error's message in JavaScript's terms (the expected type of the core's instants,
/// `FilterArgs::INSTANTS`, the filters' time bounds: JavaScript passes a `Date` or a number of
/// milliseconds since the epoch, where the core, which sees the number, says "an integer"), as
/// Python's binding restates its own: `must be an integer, got a string` for `dead_after` becomes
/// `must be a Date or an integer number of milliseconds since the epoch, got a string`.
pub fn js_message(core: &str, message: &str) -> String {
    if deadletter::FilterArgs::INSTANTS.contains(&core) {
        message.replace(
            "an integer",
            "a Date or an integer number of milliseconds since the epoch",
        )
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_names() {
        assert_eq!(js_field("max_retries"), "maxRetries");
        assert_eq!(js_field("max_payload_bytes"), "maxPayloadBytes");
        assert_eq!(js_field("older_than_ms"), "olderThanMs");
        assert_eq!(js_field("queue"), "queue");
        // The JavaScript names are the camelCase of the core names.
        for (core, js) in JS_NAMES {
            let camel: String = core
                .split('_')
                .enumerate()
                .map(|(i, part)| {
                    let mut chars = part.chars();
                    match (i, chars.next()) {
                        (0, _) | (_, None) => part.to_owned(),
                        (_, Some(first)) => first.to_uppercase().chain(chars).collect(),
                    }
                })
                .collect();
            assert_eq!(camel, js);
        }
    }

    #[test]
    fn instants_are_dates_or_milliseconds() {
        let core = "must be an integer, got a string";
        let js =
            "must be a Date or an integer number of milliseconds since the epoch, got a string";
        assert_eq!(js_message("dead_after", core), js);
        assert_eq!(js_message("dead_before", core), js);
        assert_eq!(js_message("created_after", core), js);
        assert_eq!(js_message("limit", core), core);
    }
}
