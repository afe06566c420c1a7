//! One store kit: the shared cases as the tests of a store's test target, one test per case,
//! named after it, for every store crate (the memory store in `core`, `deadletter-sqlite`,
//! `deadletter-postgres`). A failure names its case, and a filter runs one:
//! `cargo test -p deadletter-sqlite --test conformance -- "claim.json: claim leases"`.
//!
//! The target is declared with `harness = false` and its `main` returns [`run`]'s exit code;
//! [libtest-mimic] gives it libtest's command line and output (filters, `--exact`, `--skip`,
//! `--list`, `--test-threads`, `--nocapture`), cases running in parallel as `cargo test`'s do.
//!
//! ```toml
//! [[test]]
//! name = "conformance"
//! harness = false
//! ```
//!
//! ```no_run
//! use deadletter::MemoryStore;
//! use deadletter::conformance::harness;
//!
//! fn main() -> std::process::ExitCode {
//!     harness::run(harness::trials("", MemoryStore::new))
//! }
//! ```
//!
//! [libtest-mimic]: https://docs.rs/libtest-mimic

use std::process::ExitCode;
use std::sync::Arc;

pub use libtest_mimic::Trial;
use libtest_mimic::{Arguments, Failed};

use super::{Case, cases_dir, limits, load, run as run_case};
use crate::{Engine, Store};

/// The fewest cases the shared directory holds: fewer means it was not found whole.
const MIN_CASES: usize = 60;

/// Every shared case as a test named after it (`claim.json: claim leases the message with the
/// default 30 s lease`), each on a fresh store from `open`, with the limits the case asks for.
/// `kind`, when not empty, tells the variants of one store apart (`[file, normal] claim.json:
/// ...`, and a filter matches it too); the memory and PostgreSQL stores run one variant and
/// leave it empty.
///
/// # Panics
/// When the case directory cannot be read whole (see [`load`]).
pub fn trials<S, F>(kind: &str, open: F) -> Vec<Trial>
where
    S: Store,
    F: Fn() -> S + Send + Sync + 'static,
{
    let cases = load(&cases_dir());
    assert!(
        cases.len() >= MIN_CASES,
        "only {} conformance cases in {}",
        cases.len(),
        cases_dir().display()
    );
    let open = Arc::new(open);
    cases
        .into_iter()
        .map(|case| {
            let open = Arc::clone(&open);
            Trial::test(case.name.clone(), move || check(&case, &*open)).with_kind(kind)
        })
        .collect()
}

/// Runs one case on a fresh store; the failure says which step went wrong and how.
fn check<S: Store>(case: &Case, open: &impl Fn() -> S) -> Result<(), Failed> {
    let limits = limits(case).map_err(|err| format!("bad options: {err}"))?;
    pollster::block_on(run_case(case, &Engine::new(open(), limits))).map_err(Failed::from)
}

/// Runs `trials` with the test binary's command line and returns its exit code (101 when a test
/// failed), as libtest does.
pub fn run(trials: Vec<Trial>) -> ExitCode {
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
