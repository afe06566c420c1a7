//! Pure helpers shared by the WebAssembly API (compiled and tested natively too).

/// The JavaScript name of a core argument name: `max_retries` -> `maxRetries`, `lease_ms` ->
/// `leaseMs`, `lease_token` -> `leaseToken`, `after_id` -> `afterId`, `max_payload_bytes` ->
/// `maxPayloadBytes`, `retry_count` -> `retryCount`; every other name (`queue`, `payload`, `id`, `error`, `status`, `limit`,
/// `retryable`) is the same in both.
pub fn js_field(core: &str) -> &str {
    match core {
        "max_retries" => "maxRetries",
        "lease_ms" => "leaseMs",
        "lease_token" => "leaseToken",
        "after_id" => "afterId",
        "max_payload_bytes" => "maxPayloadBytes",
        "retry_count" => "retryCount",
        other => other,
    }
}

/// Formats 16 random bytes as a version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`), the form
/// of every lease token.
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    use std::fmt::Write;

    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut out = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        let _ = write!(out, "{byte:02x}"); // writing to a String cannot fail
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_names() {
        assert_eq!(js_field("max_retries"), "maxRetries");
        assert_eq!(js_field("max_payload_bytes"), "maxPayloadBytes");
        assert_eq!(js_field("queue"), "queue");
    }

    #[test]
    fn uuid_shape() {
        let token = uuid_v4([0xff; 16]);
        assert_eq!(token, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        assert_eq!(uuid_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
    }
}
