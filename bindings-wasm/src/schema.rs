//! What the IndexedDB store (`js/store/schema.js`) asks the core about its schema: what to do
//! with the version it found (`deadletter::storage`'s [`Place::migration`]) and the record of an
//! older version as version 9 writes it ([`record::upgrade_record`]: 7's and 8's records are
//! 6's; 9's have another `at` in the ready lane).

use deadletter::storage::{Found, Migration, Place};
use deadletter::{Error, Result};
use wasm_bindgen::prelude::*;

use crate::record;
use crate::rules::js;

/// The schema version of the IndexedDB store.
pub const VERSION: i64 = 9;

/// A refusal says that nothing was changed (the store aborted its upgrade, or closed the
/// connection without writing).
fn unchanged(error: Error) -> Error {
    match error {
        Error::Store(why) => Error::Store(format!("{why}; nothing was changed")),
        other => other,
    }
}

fn decide(
    name: &str,
    version: f64,
    others: Option<&str>,
    misshapen: Option<String>,
) -> Result<i64> {
    let place_name = format!("IndexedDB database {}", deadletter::Quoted(name));
    let place = Place {
        name: &place_name,
        kind: "database",
    };
    if let Some(why) = misshapen {
        return Err(place.not_ours(why));
    }
    #[allow(clippy::cast_possible_truncation)] // IndexedDB versions are whole numbers
    let found = match (others, version as i64) {
        (Some(others), _) => Found::Foreign(others),
        (None, 0) => Found::Empty,
        (None, version) => Found::Version(version),
    };
    Ok(match place.migration(found, VERSION, true)? {
        Migration::Create => 0,
        Migration::Upgrade { from } => from,
        Migration::Current => VERSION,
    })
}

/// What to do with database `name` found at `version` (0: new): 0 create the schema, 1 to 8
/// upgrade from that version, 9 take it as it is. `others` describes the database when it has no
/// `messages` store (another application's), `misshapen` says why its `messages` store is not
/// deadletter's. Throws a `store` `DeadLetterError` refusing it (another application's database,
/// a newer deadletter's), saying that nothing was changed.
#[wasm_bindgen(js_name = schemaDecision)]
#[allow(clippy::needless_pass_by_value)] // wasm-bindgen hands over owned strings
pub fn schema_decision(
    name: &str,
    version: f64,
    others: Option<String>,
    misshapen: Option<String>,
) -> std::result::Result<f64, JsValue> {
    #[allow(clippy::cast_precision_loss)] // 0 to 9
    js(decide(name, version, others.as_deref(), misshapen)
        .map_err(unchanged)
        .map(|d| d as f64))
}

/// The record of schema version 9 for `record`, written by schema version `from` (1 to 8):
/// see [`record::upgrade_record`]. Throws a `store` `DeadLetterError` for a corrupt record.
#[wasm_bindgen(js_name = upgradeRecord)]
pub fn upgrade_record(record: &JsValue, from: u32) -> std::result::Result<JsValue, JsValue> {
    js(record::upgrade_record(record, from).map(JsValue::from))
}
