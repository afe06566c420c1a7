//! The runner for the shared conformance cases in `tests/conformance/` (format: `tests/README.md`).
//! Any [`Store`] is correct when it passes them. Every store crate runs them through [`harness`],
//! one test per case: `core` on [`crate::MemoryStore`], `deadletter-sqlite` and
//! `deadletter-postgres` on theirs. Their own tests share [`kit`]: steps at an instant, and the
//! scenarios no case can write.
//!
//! It is long (about 670 lines) because it is the one reader of the case format, from loading to
//! running each step to comparing outcomes; its parts share the format's private helpers.

pub mod harness;
pub mod kit;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::{
    Arg, Backoff, Call, Engine, Error, FilterArgs, Item, Limits, Message, Millis, QueueSettings,
    SettingsArgs, Stats, Store,
};

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

/// The open-time limits a case asks for.
pub fn limits(case: &Case) -> Result<Limits, Error> {
    let options = &case.body["options"];
    Limits::new(
        &arg(&options["lease_ms"]),
        &arg(&options["max_payload_bytes"]),
    )
}

/// The backoff policy of a step's queue handle: its own `args.backoff`, else the case's
/// `options.backoff`; `None` when neither gives one (the handle then has no policy of its own:
/// the queue's stored one applies, else the default). A `set_settings` step's `backoff` is the
/// policy to store, not the handle's.
pub fn policy(case: &Case, step: &Value) -> Option<Result<Backoff, Error>> {
    let own = match step["op"].as_str() {
        Some("set_settings") => &Value::Null,
        _ => &step["args"]["backoff"],
    };
    match own {
        Value::Null => backoff_of(&case.body["options"]["backoff"]),
        own => backoff_of(own),
    }
}

/// A backoff policy written as an object with `initial_ms`, `multiplier`, `cap_ms`, `jitter`
/// (each optional); `None` for null.
pub fn backoff_of(given: &Value) -> Option<Result<Backoff, Error>> {
    (!given.is_null()).then(|| {
        Backoff::new(
            &arg(&given["initial_ms"]),
            &arg(&given["multiplier"]),
            &arg(&given["cap_ms"]),
            &arg(&given["jitter"]),
        )
    })
}

/// The jitter sample every call of the case draws: `options.jitter_sample`, default 0.
pub fn jitter_sample(case: &Case) -> f64 {
    case.body["options"]["jitter_sample"]
        .as_f64()
        .unwrap_or(0.0)
}

/// One item of an `enqueue_many` step (a bare string is a payload), or the arguments of an
/// `enqueue` step.
pub fn item(value: &Value) -> Item<'_> {
    match value {
        Value::Object(_) => Item {
            payload: arg(&value["payload"]),
            max_retries: arg(&value["max_retries"]),
            idempotency_key: arg(&value["idempotency_key"]),
            delay_ms: arg(&value["delay_ms"]),
            group: arg(&value["group"]),
            expires_in_ms: arg(&value["expires_in_ms"]),
        },
        other => Item {
            payload: arg(other),
            ..Item::default()
        },
    }
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
        let op = step["op"].as_str().unwrap_or_default();
        let times = step
            .get("times")
            .map_or(Some(1), Value::as_u64)
            .ok_or("bad `times`")?;
        for _ in 0..times {
            run_step(case, engine, step, BASE + at, &mut tokens)
                .await
                .map_err(|why| format!("step {index} ({op}): {why}"))?;
        }
    }
    Ok(())
}

/// Runs one step at `now` and checks its `expect` and `died`.
async fn run_step<S: Store>(
    case: &Case,
    engine: &Engine<S>,
    step: &Value,
    now: Millis,
    tokens: &mut Vec<String>,
) -> Result<(), String> {
    let args = resolve(&step["args"], tokens)?;
    let op = step["op"].as_str().unwrap_or_default();
    let mut died: Vec<Message> = Vec::new();
    let drawn = tokens.len();
    let mut fresh = 0;
    let next_token = || {
        fresh += 1;
        format!("token-{}", drawn + fresh - 1)
    };
    let clock = move || Ok(now);
    let outcome = match policy(case, step).transpose() {
        Err(err) => Err(err),
        Ok(policy) => {
            let call = Call {
                clock: &clock,
                backoff: policy.as_ref(),
                sample: jitter_sample(case),
            };
            match step_outcome(engine, op, &args, next_token, &call, &mut died).await {
                Err(StepError::Unknown) => return Err(format!("unknown op {op:?}")),
                Err(StepError::Core(err)) => Err(err),
                Ok(value) => Ok(value),
            }
        }
    };
    if let (Ok(value), "claim" | "claim_many") = (&outcome, op) {
        let claimed = value
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![value.clone()]);
        for m in claimed.iter().filter(|m| !m.is_null()) {
            tokens.push(m["lease_token"].as_str().unwrap_or_default().to_owned());
        }
    }
    let expect = resolve(&step["expect"], tokens)?;
    check(&expect, outcome)?;
    if let Some(want) = step.get("died") {
        let got = Value::Array(died.iter().map(|m| json!(m.id)).collect());
        if want != &got {
            return Err(format!("expected deaths {want}, got {got}"));
        }
    }
    Ok(())
}

enum StepError {
    Unknown,
    Core(Error),
}

impl From<Error> for StepError {
    fn from(err: Error) -> Self {
        Self::Core(err)
    }
}

/// Runs one step's operation; the messages it made dead go to `died`.
async fn step_outcome<S: Store>(
    engine: &Engine<S>,
    op: &str,
    args: &Value,
    tokens: impl FnMut() -> String,
    at: &Call<'_>,
    died: &mut Vec<Message>,
) -> Result<Value, StepError> {
    let a = |name: &str| arg(&args[name]);
    let now = at.clock;
    let messages = |ms: Vec<Message>| Value::Array(ms.into_iter().map(to_json).collect());
    let value = match op {
        "queue" => crate::validate::queue_name(&a("queue")).map(|_| Value::Null)?,
        "enqueue" => to_json(engine.enqueue(a("queue"), &item(args), now).await?),
        "enqueue_many" => {
            let items: Vec<Item<'_>> = match &args["items"] {
                Value::Array(items) => items.iter().map(item).collect(),
                _ => return Err(StepError::Unknown),
            };
            messages(engine.enqueue_many(a("queue"), &items, now).await?)
        }
        "claim" => {
            let out = engine.claim(a("queue"), a("lease_ms"), tokens, at).await?;
            died.extend(out.dead);
            out.value.map_or(Value::Null, to_json)
        }
        "claim_many" => {
            let out = engine
                .claim_many(a("queue"), a("n"), a("lease_ms"), tokens, at)
                .await?;
            died.extend(out.dead);
            messages(out.value)
        }
        "reap" => {
            let out = engine.reap(a("queue"), at).await?;
            died.extend(out.dead);
            json!({ "count": out.value })
        }
        "succeed" => to_json(
            engine
                .succeed(a("queue"), a("id"), a("lease_token"), now)
                .await?,
        ),
        "fail" => {
            let out = engine
                .fail(
                    a("queue"),
                    a("id"),
                    a("error"),
                    a("lease_token"),
                    a("retryable"),
                    a("retry_in_ms"),
                    at,
                )
                .await?;
            died.extend(out.dead);
            to_json(out.value)
        }
        "extend" => to_json(
            engine
                .extend(a("queue"), a("id"), a("lease_token"), a("lease_ms"), now)
                .await?,
        ),
        "replay" => to_json(
            engine
                .replay(a("queue"), a("id"), a("expires_in_ms"), now)
                .await?,
        ),
        "replay_all" | "delete_all" | "retry_now_all" | "move_all" => {
            bulk_outcome(engine, op, args, now).await?
        }
        "move" => to_json(
            engine
                .move_message(a("queue"), a("id"), a("to_queue"), now)
                .await?,
        ),
        "retry_now" => to_json(engine.retry_now(a("queue"), a("id"), now).await?),
        "purge" => {
            let n = engine
                .purge(a("queue"), a("status"), a("older_than_ms"), now)
                .await?;
            json!({ "count": n })
        }
        "delete" => to_json(engine.delete(a("queue"), a("id")).await?),
        "stats" => stats_json(&engine.stats(a("queue"), now).await?),
        "queues" => Value::Array(engine.queues(now).await?.iter().map(stats_json).collect()),
        "next_due_at" => {
            let at = engine.next_due_at(a("queue"), now).await?;
            json!({ "next_due_at": at.map(|ms| ms - BASE) })
        }
        "get" => to_json(engine.get(a("queue"), a("id")).await?),
        "list" => {
            let page = engine
                .list(a("queue"), &filters(args), a("limit"), a("after_id"), now)
                .await?;
            json!({ "messages": messages(page.messages), "next_after_id": page.next_after_id })
        }
        "backoff" => json!({ "delay_ms": crate::backoff(&a("retry_count"))? }),
        _ => return settings_outcome(engine, op, args).await,
    };
    Ok(value)
}

/// Runs one step of a bulk action (`replay_all`, `delete_all`, `retry_now_all`, `move_all`):
/// its count.
async fn bulk_outcome<S: Store>(
    engine: &Engine<S>,
    op: &str,
    args: &Value,
    now: crate::Clock<'_>,
) -> Result<Value, Error> {
    let a = |name: &str| arg(&args[name]);
    let (queue, filters, limit, dry_run) = (a("queue"), filters(args), a("limit"), a("dry_run"));
    let n = match op {
        "replay_all" => {
            engine
                .replay_all(queue, &filters, limit, dry_run, now)
                .await
        }
        "delete_all" => {
            engine
                .delete_all(queue, &filters, limit, dry_run, now)
                .await
        }
        "move_all" => {
            engine
                .move_all(queue, a("to_queue"), &filters, limit, dry_run, now)
                .await
        }
        _ => {
            engine
                .retry_now_all(queue, &filters, limit, dry_run, now)
                .await
        }
    };
    Ok(json!({ "count": n? }))
}

/// Runs one step on a queue's stored settings: `settings`, `set_settings`, `pause`, `resume`.
async fn settings_outcome<S: Store>(
    engine: &Engine<S>,
    op: &str,
    args: &Value,
) -> Result<Value, StepError> {
    let a = |name: &str| arg(&args[name]);
    let settings = match op {
        "settings" => engine.settings(a("queue")).await?,
        "set_settings" => {
            let settings = SettingsArgs::new(
                &a("queue"),
                backoff_of(&args["backoff"]),
                &a("max_retries"),
                &a("lease_ms"),
                &a("expires_in_ms"),
                &a("on_expiry"),
            )?;
            engine.set_settings(&settings).await?
        }
        "pause" => engine.pause(a("queue"), true).await?,
        "resume" => engine.pause(a("queue"), false).await?,
        _ => return Err(StepError::Unknown),
    };
    Ok(settings_json(&settings))
}

/// A queue's settings as the cases write them: `backoff` (an object with `initial_ms`,
/// `multiplier`, `cap_ms`, `jitter`, or null), `max_retries`, `lease_ms`, `expires_in_ms` (each
/// null when unset), `on_expiry`, `paused`; under the key `settings`.
pub fn settings_json(settings: &QueueSettings) -> Value {
    let backoff = settings.backoff.map(|b| {
        json!({
            "initial_ms": b.initial_ms,
            "multiplier": b.multiplier,
            "cap_ms": b.cap_ms,
            "jitter": b.jitter.as_str(),
        })
    });
    json!({ "settings": {
        "backoff": backoff,
        "max_retries": settings.max_retries,
        "lease_ms": settings.lease_ms,
        "expires_in_ms": settings.expires_in_ms,
        "on_expiry": settings.on_expiry.as_str(),
        "paused": settings.paused,
    }})
}

/// The filters of a `list` or bulk step, by their names ([`FilterArgs::NAMES`]); the six
/// instants written relative to [`BASE`].
fn filters(args: &Value) -> FilterArgs<'_> {
    let mut filters = FilterArgs::default();
    for name in FilterArgs::NAMES {
        let value = arg(&args[name]);
        let instant = name.ends_with("_after") || name.ends_with("_before");
        filters.set(name, if instant { relative(value) } else { value });
    }
    filters
}

/// An instant argument written relative to [`BASE`] (as every timestamp of the cases is), made
/// absolute; other values pass unchanged.
fn relative(value: Arg<'_>) -> Arg<'_> {
    match value {
        Arg::Int(ms) => ms.checked_add(BASE).map_or(Arg::BigInt, Arg::Int),
        other => other,
    }
}

/// The fields of a message that are instants (written relative to [`BASE`] in the cases).
pub const INSTANTS: [&str; 8] = [
    "retry_after",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "first_failed_at",
    "dead_at",
    "replayed_at",
    "expires_at",
];

/// A message as the cases write it: snake_case fields, timestamps relative to [`BASE`] (also the
/// `at` of each `errors` entry).
///
/// # Panics
/// Never: a [`Message`] always serializes.
pub fn to_json(message: Message) -> Value {
    let mut value = serde_json::to_value(message).expect("a message serializes");
    for field in INSTANTS {
        if let Some(ms) = value[field].as_i64() {
            value[field] = json!(ms - BASE);
        }
    }
    if let Some(errors) = value["errors"].as_array_mut() {
        for entry in errors {
            if let Some(ms) = entry["at"].as_i64() {
                entry["at"] = json!(ms - BASE);
            }
        }
    }
    value
}

/// Queue statistics as the cases write them (`next_due_at` relative to [`BASE`], ages in ms).
///
/// # Panics
/// Never: [`Stats`] always serializes.
pub fn stats_json(stats: &Stats) -> Value {
    let mut value = serde_json::to_value(stats).expect("stats serialize");
    if let Some(ms) = value["next_due_at"].as_i64() {
        value["next_due_at"] = json!(ms - BASE);
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
                    let mut want: Vec<(String, String, Option<u64>)> = fields
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| {
                            (
                                f["field"].as_str().unwrap_or_default().into(),
                                f["code"].as_str().unwrap_or_default().into(),
                                f["index"].as_u64(),
                            )
                        })
                        .collect();
                    let mut got: Vec<(String, String, Option<u64>)> = err
                        .field_errors()
                        .iter()
                        .map(|f| {
                            (
                                f.field.into(),
                                f.code.into(),
                                f.index.and_then(|i| u64::try_from(i).ok()),
                            )
                        })
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
                // A list's page answers with its messages.
                let value = value.get("messages").unwrap_or(&value);
                all_match(want, value, "messages")
            } else if let Some(want) = expect.get("page") {
                all_match(&want["messages"], &value["messages"], "messages")?;
                let (want, got) = (&want["next_after_id"], &value["next_after_id"]);
                if same(want, got) {
                    Ok(())
                } else {
                    Err(format!("next_after_id: expected {want}, got {got}"))
                }
            } else if let Some(want) = expect.get("delay_ms") {
                matches(&json!({ "delay_ms": want }), &value)
            } else if let Some(want) = expect.get("next_due_at") {
                matches(&json!({ "next_due_at": want }), &value)
            } else if let Some(want) = expect.get("count") {
                matches(&json!({ "count": want }), &value)
            } else if let Some(want) = expect.get("stats") {
                matches(want, &value)
            } else if let Some(want) = expect.get("settings") {
                matches(want, &value["settings"])
            } else if let Some(want) = expect.get("queues") {
                all_match(want, &value, "queues")
            } else {
                Ok(())
            }
        }
    }
}

/// Whether the list `got` has as many entries as the list `want` (of `what`), each [`matches`]
/// its own.
fn all_match(want: &Value, got: &Value, what: &str) -> Result<(), String> {
    let want = want
        .as_array()
        .ok_or_else(|| format!("`{what}` must be a list"))?;
    let got = got
        .as_array()
        .ok_or_else(|| format!("expected a list, got {got}"))?;
    if want.len() != got.len() {
        let all = Value::Array(got.clone());
        return Err(format!(
            "expected {} {what}, got {}: {all}",
            want.len(),
            got.len()
        ));
    }
    want.iter().zip(got).try_for_each(|(w, g)| matches(w, g))
}

/// Whether `got` has every field of the object `want` (one level: the fields not listed are not
/// checked), each [`same`] as written.
fn matches(want: &Value, got: &Value) -> Result<(), String> {
    match want {
        Value::Object(fields) => {
            if got.is_null() {
                return Err(format!("expected a message, got none (want {want})"));
            }
            for (field, value) in fields {
                if !same(value, &got[field]) {
                    return Err(format!(
                        "{field}: expected {value}, got {} (message {got})",
                        got[field]
                    ));
                }
            }
            Ok(())
        }
        _ if same(want, got) => Ok(()),
        _ => Err(format!("expected {want}, got {got}")),
    }
}

/// JSON equality where numbers compare by value (a multiplier stored as `3.0` equals `3`).
pub fn same(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a == b,
            _ => a.as_f64() == b.as_f64(),
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        (a, b) => a == b,
    }
}

/// Replaces `{"$token": k}` and `{"$repeat": [s, n]}` by the strings they stand for, and
/// `{"$list": [v, n]}` by a list of `n` copies of `v`.
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
        Value::Object(map) if map.contains_key("$list") => {
            let (item, n) = (&map["$list"][0], &map["$list"][1]);
            let n = n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("bad $list count")?;
            Value::Array(vec![resolve(item, tokens)?; n])
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
