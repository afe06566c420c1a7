//! Every shared conformance case on PostgreSQL, one test per case (`harness = false`), each on a
//! fresh schema (so ids start at 1), dropped when the run ends.

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::Schemas;
use deadletter::conformance::harness;

fn main() -> ExitCode {
    let schemas = Arc::new(Schemas::new("conformance"));
    let fresh = Arc::clone(&schemas);
    let code = harness::run(harness::trials("", move || fresh.store(2)));
    // The trials (and their handle on the schemas) are gone: dropping drops every schema made.
    drop(schemas);
    code
}
