//! The shared conformance cases on the reference store.
#![cfg(feature = "conformance")]

use deadletter::MemoryStore;
use deadletter::conformance::run_all;

#[test]
fn every_case_passes_on_the_memory_store() {
    let passed = pollster::block_on(run_all(MemoryStore::new));
    println!("{passed} conformance cases passed on the memory store");
}
