//! The shared conformance cases on the reference store.
#![cfg(feature = "conformance")]

use deadletter::conformance::{cases_dir, limits, load, run};
use deadletter::{Engine, MemoryStore};

#[test]
fn every_case_passes_on_the_memory_store() {
    let cases = load(&cases_dir());
    assert!(cases.len() >= 60, "only {} conformance cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let engine = Engine::new(MemoryStore::new(), limits(case).expect("valid options"));
            pollster::block_on(run(case, &engine))
                .err()
                .map(|why| format!("{}: {why}", case.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!(
        "{} conformance cases passed on the memory store",
        cases.len()
    );
}
