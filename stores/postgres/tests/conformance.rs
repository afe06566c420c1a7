//! Every shared conformance case on PostgreSQL, each on a fresh schema (so ids start at 1).

mod common;

use common::Schemas;

#[test]
fn every_case_passes_on_postgres() {
    let schemas = Schemas::new("conformance");
    let passed = pollster::block_on(deadletter::conformance::run_all(|| schemas.store(2)));
    println!("{passed} conformance cases passed on PostgreSQL");
}
