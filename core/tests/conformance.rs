//! The shared conformance cases on the reference store, one test per case (`harness = false`).

use deadletter::MemoryStore;
use deadletter::conformance::harness;

fn main() -> std::process::ExitCode {
    harness::run(harness::trials("", MemoryStore::new))
}
