//! The hand-written PostgreSQL queue that `claim_throughput` measures deadletter against: a table
//! of `id` (identity primary key), `payload`, `status`, `lease_until` and one index besides its
//! key (the ready messages by id); `INSERT` to enqueue, claim by
//! `UPDATE ... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING`, ack by
//! `UPDATE`, each statement its own transaction. (A folder with `mod.rs`, so that Cargo does not
//! take it for a bench target of its own.)

use super::{MESSAGES, PAYLOAD, Schema, now, share, timed};
use std::time::Duration;

pub fn create(schema: &Schema) -> postgres::Client {
    let mut client = schema.client();
    let s = schema.quoted();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {s}; \
             CREATE TABLE {s}.jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
               payload text NOT NULL, status smallint NOT NULL, lease_until bigint); \
             CREATE INDEX jobs_ready ON {s}.jobs (id) WHERE status = 0"
        ))
        .expect("create the reference's table");
    client
}

pub fn insert_sql(schema: &Schema) -> String {
    format!(
        "INSERT INTO {}.jobs (payload, status) VALUES ($1, 0)",
        schema.quoted()
    )
}

pub fn claim_sql(schema: &Schema) -> String {
    let s = schema.quoted();
    format!(
        "UPDATE {s}.jobs SET status = 1, lease_until = $1 WHERE id = \
         (SELECT id FROM {s}.jobs WHERE status = 0 ORDER BY id \
          FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, payload"
    )
}

pub fn ack_sql(schema: &Schema) -> String {
    format!(
        "UPDATE {}.jobs SET status = 2 WHERE id = $1",
        schema.quoted()
    )
}

/// The generic plan of the claim, with 10 pending messages added to the table.
pub fn plan(schema: &Schema, client: &mut postgres::Client) -> Vec<String> {
    let s = schema.quoted();
    client
        .batch_execute(&format!(
            "INSERT INTO {s}.jobs (payload, status) SELECT 'x', 0 FROM generate_series(1, 10); \
             ANALYZE {s}.jobs; SET plan_cache_mode = force_generic_plan; \
             PREPARE reference_claim(bigint) AS {}",
            claim_sql(schema)
        ))
        .expect("prepare");
    let rows = client
        .query("EXPLAIN (COSTS OFF) EXECUTE reference_claim(0)", &[])
        .expect("explain");
    rows.iter().map(|row| row.get(0)).collect()
}

pub fn enqueue(schema: &Schema, workers: usize) -> Duration {
    drop(create(schema));
    let clients: Vec<_> = (0..workers)
        .map(|_| std::sync::Mutex::new(schema.client()))
        .collect();
    let sql = insert_sql(schema);
    timed(workers, |worker| {
        let mut client = clients[worker].lock().expect("one thread per client");
        let insert = client.prepare(&sql).expect("prepare");
        for _ in 0..share(worker, workers) {
            client.execute(&insert, &[&PAYLOAD]).expect("insert");
        }
    })
}

/// Fills the queue with `MESSAGES` messages in one statement (not timed).
pub fn fill(schema: &Schema) -> postgres::Client {
    let mut client = create(schema);
    client
        .execute(
            &format!(
                "INSERT INTO {}.jobs (payload, status) \
                 SELECT $1, 0 FROM generate_series(1, {MESSAGES})",
                schema.quoted()
            ),
            &[&PAYLOAD],
        )
        .expect("fill");
    client
}

pub fn claim_and_ack(schema: &Schema, workers: usize) -> Duration {
    drop(fill(schema));
    let clients: Vec<_> = (0..workers)
        .map(|_| std::sync::Mutex::new(schema.client()))
        .collect();
    let (claim, ack) = (claim_sql(schema), ack_sql(schema));
    let elapsed = timed(workers, |worker| {
        let mut client = clients[worker].lock().expect("one thread per client");
        let (claim, ack) = (
            client.prepare(&claim).expect("prepare"),
            client.prepare(&ack).expect("prepare"),
        );
        loop {
            let lease_until = now().expect("clock") + 30_000;
            let Some(row) = client.query_opt(&claim, &[&lease_until]).expect("claim") else {
                break;
            };
            let id: i64 = row.get(0);
            client.execute(&ack, &[&id]).expect("ack");
        }
    });
    let acked: i64 = schema
        .client()
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.jobs WHERE status = 2",
                schema.quoted()
            ),
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(
        usize::try_from(acked).ok(),
        Some(MESSAGES),
        "every message acked once"
    );
    elapsed
}
