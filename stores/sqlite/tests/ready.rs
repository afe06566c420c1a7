//! Schema version 3's ready index (issue 10) beyond the conformance cases: a message moved to it
//! is not taken when the clock goes back before its `retry_after` (the kit's scenario).

mod common;

use common::{TempDb, engine};
use deadletter::conformance::{BASE, kit};

#[test]
fn a_promoted_message_is_not_claimed_when_the_clock_goes_back() {
    let file = TempDb::new();
    kit::a_moved_message_is_not_claimed_when_the_clock_goes_back(&engine(&file.0), BASE);
}
