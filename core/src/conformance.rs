//! The runner for the shared conformance cases in `tests/conformance/` (format: `tests/README.md`).
//! Any [`Store`] is correct when it passes them; `core` runs them on [`crate::MemoryStore`], the
//! Python binding's Rust tests on SQLite.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::{Arg, Engine, Error, Limits, Message, Millis, Store};

/// The clock's origin for every case: 2026-01-01T00:00:00Z in milliseconds.
pub const BASE: Millis = 1_767_225_600_000;

/// One case, with the file it came from.
#[derive(Debug, Clone)]
pub struct Case {
    /// `file.json: case name`.
    pub name: String,
    /// The case object as written.
    pub body: Value,
}

/// The directory of the shared cases in this repository.
pub fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

/// Every case of every `*.json` file in `dir`, in file-name order.
///
/// # Panics
/// On an unreadable directory or file, or a file that is not a case file.
pub fn load(dir: &Path) -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file_name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for body in file["cases"]
            .as_array()
            .unwrap_or_else(|| panic!("{file_name}: no \"cases\" array"))
        {
            let name = format!("{file_name}: {}", body["name"].as_str().unwrap_or("?"));
            cases.push(Case {
                name,
                body: body.clone(),
            });
        }
    }
    cases
}

/// Runs every shared case, each on a fresh store from `open`, and panics with the list of
/// failures if any case fails. Returns how many cases passed.
///
/// # Panics
/// When a case fails, or when there are fewer than 60 cases (the directory was not found whole).
pub async fn run_all<S: Store>(open: impl Fn() -> S) -> usize {
    let cases = load(&cases_dir());
    assert!(cases.len() >= 60, "only {} conformance cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = match limits(case) {
            Ok(limits) => run(case, &Engine::new(open(), limits)).await,
            Err(err) => Err(format!("bad options: {err}")),
        };
        if let Err(why) = outcome {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    cases.len()
}

/// The open-time limits a case asks for.
pub fn limits(case: &Case) -> Result<Limits, Error> {
    let options = &case.body["options"];
    Limits::new(
        &arg(&options["lease_ms"]),
        &arg(&options["max_payload_bytes"]),
    )
}

/// Runs one case on the engine (fresh and empty, opened with [`limits`]); `Err` says which step
/// went wrong and how.
pub async fn run<S: Store>(case: &Case, engine: &Engine<S>) -> Result<(), String> {
    let mut tokens: Vec<String> = Vec::new();
    let mut at: Millis = 0;
    let steps = case.body["steps"].as_array().ok_or("no steps")?;
    for (index, step) in steps.iter().enumerate() {
        if let Some(next) = step.get("at") {
            at = next.as_i64().ok_or("`at` must be an integer")?;
        }
        let now = BASE + at;
        let args = resolve(&step["args"], &tokens)?;
        let a = |name: &str| arg(&args[name]);
        let token = format!("token-{}", tokens.len());
        let op = step["op"].as_str().unwrap_or_default();
        let outcome: Result<Value, Error> = match op {
            "enqueue" => engine
                .enqueue(a("queue"), a("payload"), a("max_retries"), now)
                .await
                .map(to_json),
            "claim" => engine
                .claim(a("queue"), a("lease_ms"), token, now)
                .await
                .map(|m| {
                    if let Some(m) = &m {
                        tokens.push(m.lease_token.clone().unwrap_or_default());
                    }
                    m.map_or(Value::Null, to_json)
                }),
            "succeed" => engine
                .succeed(a("queue"), a("id"), a("lease_token"), now)
                .await
                .map(to_json),
            "fail" => engine
                .fail(
                    a("queue"),
                    a("id"),
                    a("error"),
                    a("lease_token"),
                    a("retryable"),
                    now,
                )
                .await
                .map(to_json),
            "replay" => engine.replay(a("queue"), a("id"), now).await.map(to_json),
            "get" => engine.get(a("queue"), a("id")).await.map(to_json),
            "list" => engine
                .list(a("queue"), a("status"), a("limit"), a("after_id"))
                .await
                .map(|ms| Value::Array(ms.into_iter().map(to_json).collect())),
            "backoff" => crate::backoff(&a("retry_count")).map(|ms| json!({ "delay_ms": ms })),
            other => return Err(format!("step {index}: unknown op {other:?}")),
        };
        let expect = resolve(&step["expect"], &tokens)?;
        check(&expect, outcome).map_err(|why| format!("step {index} ({op}): {why}"))?;
    }
    Ok(())
}

/// A message as the cases write it: snake_case fields, timestamps relative to [`BASE`].
///
/// # Panics
/// Never: a [`Message`] always serializes.
pub fn to_json(message: Message) -> Value {
    let mut value = serde_json::to_value(message).expect("a message serializes");
    for field in [
        "retry_after",
        "created_at",
        "updated_at",
        "lease_expires_at",
    ] {
        if let Some(ms) = value[field].as_i64() {
            value[field] = json!(ms - BASE);
        }
    }
    value
}

/// Compares an outcome with an `expect` object (see `tests/README.md`).
pub fn check(expect: &Value, outcome: Result<Value, Error>) -> Result<(), String> {
    match (expect.get("error"), outcome) {
        (Some(code), Err(err)) => {
            if code != err.code() {
                return Err(format!("expected error {code}, got {}: {err}", err.code()));
            }
            match expect.get("fields") {
                Some(fields) => {
                    let mut want: Vec<(String, String)> = fields
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| {
                            (
                                f["field"].as_str().unwrap_or_default().into(),
                                f["code"].as_str().unwrap_or_default().into(),
                            )
                        })
                        .collect();
                    let mut got: Vec<(String, String)> = err
                        .field_errors()
                        .iter()
                        .map(|f| (f.field.into(), f.code.into()))
                        .collect();
                    want.sort();
                    got.sort();
                    if want == got {
                        Ok(())
                    } else {
                        Err(format!("expected fields {want:?}, got {got:?}: {err}"))
                    }
                }
                None => Ok(()),
            }
        }
        (Some(code), Ok(value)) => Err(format!("expected error {code}, got {value}")),
        (None, Err(err)) => Err(format!("unexpected error {}: {err}", err.code())),
        (None, Ok(value)) => {
            if let Some(want) = expect.get("message") {
                matches(want, &value)
            } else if let Some(want) = expect.get("messages") {
                let (want, got) = (
                    want.as_array().ok_or("`messages` must be a list")?,
                    value.as_array(),
                );
                let got = got.ok_or_else(|| format!("expected a list, got {value}"))?;
                if want.len() != got.len() {
                    return Err(format!(
                        "expected {} messages, got {}: {value}",
                        want.len(),
                        got.len()
                    ));
                }
                want.iter().zip(got).try_for_each(|(w, g)| matches(w, g))
            } else if let Some(want) = expect.get("delay_ms") {
                matches(&json!({ "delay_ms": want }), &value)
            } else {
                Ok(())
            }
        }
    }
}

fn matches(want: &Value, got: &Value) -> Result<(), String> {
    match want {
        Value::Object(fields) => {
            if got.is_null() {
                return Err(format!("expected a message, got none (want {want})"));
            }
            for (field, value) in fields {
                if &got[field] != value {
                    return Err(format!(
                        "{field}: expected {value}, got {} (message {got})",
                        got[field]
                    ));
                }
            }
            Ok(())
        }
        _ if want == got => Ok(()),
        _ => Err(format!("expected {want}, got {got}")),
    }
}

/// Replaces `{"$token": k}` and `{"$repeat": [s, n]}` by the strings they stand for.
pub fn resolve(value: &Value, tokens: &[String]) -> Result<Value, String> {
    Ok(match value {
        Value::Object(map) if map.contains_key("$token") => {
            let k = map["$token"]
                .as_u64()
                .and_then(|k| usize::try_from(k).ok())
                .ok_or("bad $token")?;
            Value::String(
                tokens
                    .get(k)
                    .ok_or_else(|| format!("no claim #{k} yet"))?
                    .clone(),
            )
        }
        Value::Object(map) if map.contains_key("$repeat") => {
            let (s, n) = (&map["$repeat"][0], &map["$repeat"][1]);
            let n = n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("bad $repeat count")?;
            Value::String(s.as_str().ok_or("bad $repeat string")?.repeat(n))
        }
        Value::Object(map) => {
            let resolved: Result<Map<String, Value>, String> = map
                .iter()
                .map(|(k, v)| Ok((k.clone(), resolve(v, tokens)?)))
                .collect();
            Value::Object(resolved?)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve(v, tokens))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// A JSON value as a dynamically typed caller would pass it.
pub fn arg(value: &Value) -> Arg<'_> {
    match value {
        Value::Null => Arg::Null,
        Value::Bool(b) => Arg::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Arg::Int(i),
            (None, _) if n.is_u64() => Arg::BigInt,
            (None, f) => Arg::Float(f.unwrap_or(f64::NAN)),
        },
        Value::String(s) => Arg::Str(s),
        Value::Array(_) => Arg::Other("a list"),
        Value::Object(_) => Arg::Other("an object"),
    }
}
