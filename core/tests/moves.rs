//! `move_all` over many batches of grouped messages with keys, on the reference store (the
//! scenario is the kit's, which every store's tests run).

use deadletter::conformance::kit;
use deadletter::{Engine, Limits, MemoryStore};

#[test]
fn a_bulk_move_keeps_every_group_in_order_across_batches() {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    kit::a_bulk_move_keeps_every_group_in_order_across_batches(&db);
}

#[test]
fn a_queue_under_a_name_now_refused_keeps_working() {
    let db = Engine::new(MemoryStore::new(), Limits::default());
    kit::a_queue_under_a_name_now_refused_keeps_working(&db);
}
