//! What a call hands back to JavaScript: one JSON text, `{"ok": value}` (with `"dead"`, the
//! messages the call made dead, for the calls that may kill) or `{"error": {...}}`, which the
//! package's `node/backend.js` parses, turning instants into `Date`s and errors into
//! `DeadLetterError`s. One string per call crosses into JavaScript, whose `JSON.parse` makes the
//! objects faster than property-by-property N-API calls would.
//!
//! A message goes as an array of its fields in a fixed order ([`Row`]: `JSON.parse` builds an
//! array for less than it spends on an object's keys, issue 19); statistics as the core
//! serializes them (`Stats`: snake_case); instants in UTC milliseconds; errors in the package's
//! terms: the JavaScript field names and messages of the WebAssembly binding
//! (`deadletter_wasm::names`), and the structured details of a `not_found` or `conflict`
//! (`queue`, `id`, `reason`, `status`).

use deadletter::{Conflict, Error, FieldError, Message, QueueSettings, Result};
use deadletter_wasm::names::{js_field, js_message};
use serde::Serialize;
use serde_json::{Value, json};

/// A reply's value, serialized straight to text (not through a `serde_json::Value` tree: a
/// message's reply is made on every call, on the call's critical path).
#[derive(Serialize)]
struct Reply<'a, T> {
    ok: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    dead: Option<Rows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<&'a str>,
}

impl<T: Serialize> Reply<'_, T> {
    fn text(&self) -> String {
        // Serializing these values cannot fail: every key is a string.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// `{"ok": value}`, or the error.
pub fn of<T: Serialize>(result: Result<T>) -> String {
    match result {
        Ok(value) => Reply {
            ok: &value,
            dead: None,
            warning: None,
        }
        .text(),
        Err(err) => error(&err),
    }
}

/// `{"ok": value, "dead": [...]}` with `"warning"` when there is one (a handle's policy that
/// overrode a stored one), or the error.
pub fn killing<T: Serialize>(result: Result<(T, Vec<Message>, Option<String>)>) -> String {
    match result {
        Ok((value, dead, warning)) => Reply {
            ok: &value,
            dead: Some(Rows(&dead)),
            warning: warning.as_deref(),
        }
        .text(),
        Err(err) => error(&err),
    }
}

/// A message as a reply's value: the array `[id, queue, payload, status, retry_count,
/// max_retries, retry_after, last_error, created_at, updated_at, lease_token, lease_expires_at,
/// idempotency_key, first_failed_at, dead_at, errors, errors_dropped, replay_count, replayed_at,
/// group, expires_at, deduplicated, moved_from]`, each failed attempt of `errors` as `[attempt,
/// error, at]` (read in this order by `message` in node/backend.js). Measured with callgrind
/// (issue 19): parsing a message's keys was most of the JavaScript thread's `JSON.parse`.
pub struct Row(pub Message);

/// Messages as a reply's value: an array of [`Row`]s.
pub fn rows(messages: Vec<Message>) -> Vec<Row> {
    messages.into_iter().map(Row).collect()
}

impl Serialize for Row {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        RowRef(&self.0).serialize(serializer)
    }
}

/// A borrowed [`Row`].
struct RowRef<'a>(&'a Message);

impl Serialize for RowRef<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let m = self.0;
        let errors: Vec<_> = m
            .errors
            .iter()
            .map(|e| (e.attempt, &e.error, e.at))
            .collect();
        let mut t = serializer.serialize_tuple(23)?;
        t.serialize_element(&m.id)?;
        t.serialize_element(&m.queue)?;
        t.serialize_element(&m.payload)?;
        t.serialize_element(&m.status)?;
        t.serialize_element(&m.retry_count)?;
        t.serialize_element(&m.max_retries)?;
        t.serialize_element(&m.retry_after)?;
        t.serialize_element(&m.last_error)?;
        t.serialize_element(&m.created_at)?;
        t.serialize_element(&m.updated_at)?;
        t.serialize_element(&m.lease_token)?;
        t.serialize_element(&m.lease_expires_at)?;
        t.serialize_element(&m.idempotency_key)?;
        t.serialize_element(&m.first_failed_at)?;
        t.serialize_element(&m.dead_at)?;
        t.serialize_element(&errors)?;
        t.serialize_element(&m.errors_dropped)?;
        t.serialize_element(&m.replay_count)?;
        t.serialize_element(&m.replayed_at)?;
        t.serialize_element(&m.group)?;
        t.serialize_element(&m.expires_at)?;
        t.serialize_element(&m.deduplicated)?;
        t.serialize_element(&m.moved_from)?;
        t.end()
    }
}

/// `dead` of a killing reply, as [`Row`]s.
struct Rows<'a>(&'a [Message]);

impl Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(RowRef))
    }
}

/// A queue's settings as a reply's value: `backoff` (`{ initial_ms, multiplier, cap_ms, jitter }`
/// or null), `max_retries`, `lease_ms`, `expires_in_ms` (null where unset), `on_expiry`,
/// `paused`.
pub struct Settings(pub QueueSettings);

impl Serialize for Settings {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let s = &self.0;
        let backoff = s.backoff.map(|b| {
            json!({
                "initial_ms": b.initial_ms,
                "multiplier": b.multiplier,
                "cap_ms": b.cap_ms,
                "jitter": b.jitter.as_str(),
            })
        });
        json!({
            "backoff": backoff,
            "max_retries": s.max_retries,
            "lease_ms": s.lease_ms,
            "expires_in_ms": s.expires_in_ms,
            "on_expiry": s.on_expiry.as_str(),
            "paused": s.paused,
        })
        .serialize(serializer)
    }
}

/// A page of `list` as a reply's value: `messages` and `next_after_id` (null at the end).
pub struct Page(pub deadletter::Page);

impl Serialize for Page {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("messages", &Rows(&self.0.messages))?;
        map.serialize_entry("next_after_id", &self.0.next_after_id)?;
        map.end()
    }
}

/// `{"error": {...}}`: `code` (the core's stable code), `message`, `errors` (the rejected
/// fields of a validation error, in JavaScript names, with `index` for an item of
/// `enqueueMany`), and where they apply `queue` and `id` (`not_found`), `reason`, `id` and
/// `status` (`conflict`).
pub fn error(err: &Error) -> String {
    let mut details = json!({ "code": err.code(), "errors": [] });
    let message = match err {
        Error::Validation(fields) => {
            details["errors"] = fields.iter().map(field_error).collect();
            let parts: Vec<String> = fields.iter().map(field_text).collect();
            format!("validation failed: {}", parts.join("; "))
        }
        Error::NotFound { queue, id } => {
            details["queue"] = json!(queue);
            details["id"] = json!(id);
            err.to_string()
        }
        Error::Conflict(Conflict::WrongStatus { id, status, .. }) => {
            details["reason"] = json!("wrong_status");
            details["id"] = json!(id);
            details["status"] = json!(status);
            err.to_string()
        }
        Error::Conflict(Conflict::LeaseLost { id }) => {
            details["reason"] = json!("lease_lost");
            details["id"] = json!(id);
            err.to_string()
        }
        Error::Conflict(Conflict::KeyTaken { id, .. }) => {
            details["reason"] = json!("key_taken");
            details["id"] = json!(id);
            err.to_string()
        }
        Error::Store(_) => err.to_string(),
    };
    details["message"] = json!(message);
    text(&json!({ "error": details }))
}

/// One rejected field: `{ field, code, message }`, with `index` for an item.
fn field_error(error: &FieldError) -> Value {
    let mut out = json!({
        "field": js_field(error.field),
        "code": error.code,
        "message": js_message(error.field, &error.message),
    });
    if let Some(index) = error.index {
        out["index"] = json!(index);
    }
    out
}

/// `maxRetries: must be ...`, or `items[2].maxRetries: must be ...` for an item.
fn field_text(error: &FieldError) -> String {
    let message = js_message(error.field, &error.message);
    match error.index {
        Some(i) => format!("items[{i}].{}: {message}", js_field(error.field)),
        None => format!("{}: {message}", js_field(error.field)),
    }
}

/// The JSON text of `value` (serializing these values cannot fail: every key is a string).
fn text(value: &Value) -> String {
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_errors_speak_javascript() {
        let mut field = FieldError::new("max_retries", "out_of_range", "must be 1..=10, got 11");
        field.index = Some(2);
        let reply: Value = serde_json::from_str(&error(&Error::Validation(vec![field]))).unwrap();
        assert_eq!(reply["error"]["code"], "validation_failed");
        assert_eq!(reply["error"]["errors"][0]["field"], "maxRetries");
        assert_eq!(reply["error"]["errors"][0]["index"], 2);
        assert_eq!(
            reply["error"]["message"],
            "validation failed: items[2].maxRetries: must be 1..=10, got 11"
        );
    }

    #[test]
    fn a_message_goes_as_the_array_of_its_fields_in_the_documented_order() {
        use deadletter::{FailedAttempt, NewMessage, Status};
        let mut m = NewMessage {
            queue: "q".into(),
            payload: "p".into(),
            max_retries: 3,
            idempotency_key: Some("k".into()),
            retry_after: Some(5),
            group: Some("g".into()),
            expires_at: Some(9),
            now: 1,
        }
        .with_id(7);
        m.status = Status::Processing;
        m.retry_count = 1;
        m.last_error = Some("e".into());
        m.updated_at = 2;
        m.lease_token = Some("t".into());
        m.lease_expires_at = Some(3);
        m.first_failed_at = Some(4);
        m.dead_at = Some(6);
        m.errors = vec![FailedAttempt {
            attempt: 1,
            error: "e".into(),
            at: 4,
        }];
        m.errors_dropped = 2;
        m.replay_count = 1;
        m.replayed_at = Some(8);
        m.moved_from = Some("from".into());
        m.deduplicated = true;
        let row = serde_json::to_value(Row(m.clone())).unwrap();
        let order = [
            "id",
            "queue",
            "payload",
            "status",
            "retry_count",
            "max_retries",
            "retry_after",
            "last_error",
            "created_at",
            "updated_at",
            "lease_token",
            "lease_expires_at",
            "idempotency_key",
            "first_failed_at",
            "dead_at",
            "errors",
            "errors_dropped",
            "replay_count",
            "replayed_at",
            "group",
            "expires_at",
            "deduplicated",
            "moved_from",
        ];
        let object = serde_json::to_value(&m).unwrap();
        assert_eq!(object.as_object().unwrap().len(), order.len()); // every field, once
        let mut expected: Vec<Value> = order.iter().map(|key| object[key].clone()).collect();
        expected[15] = json!([[1, "e", 4]]);
        assert_eq!(row, Value::Array(expected));
        let dead = killing(Ok((0_u64, vec![m], None)));
        let dead: Value = serde_json::from_str(&dead).unwrap();
        assert_eq!(dead["dead"][0], row);
    }

    #[test]
    fn conflicts_carry_their_details() {
        let err = Error::Conflict(Conflict::LeaseLost { id: 7 });
        let reply: Value = serde_json::from_str(&error(&err)).unwrap();
        assert_eq!(reply["error"]["reason"], "lease_lost");
        assert_eq!(reply["error"]["id"], 7);
        assert!(reply["error"].get("status").is_none());
        let ok: Value = serde_json::from_str(&of(Ok(3_u64))).unwrap();
        assert_eq!(ok, json!({ "ok": 3 }));
    }

    #[test]
    fn killing_replies_carry_the_dead_and_the_warning_only_when_there_is_one() {
        let plain: Value = serde_json::from_str(&killing(Ok((7_u64, vec![], None)))).unwrap();
        assert_eq!(plain, json!({ "ok": 7, "dead": [] }));
        let warned = killing(Ok((Some(1_u64), vec![], Some("careful".to_owned()))));
        let warned: Value = serde_json::from_str(&warned).unwrap();
        assert_eq!(warned, json!({ "ok": 1, "dead": [], "warning": "careful" }));
        let none: Value = serde_json::from_str(&of(Ok(None::<u64>))).unwrap();
        assert_eq!(none, json!({ "ok": null }));
    }
}
