//! What the conformance cases cannot show about a store on its schema: the schema's life (reopen,
//! foreign and newer schemas, a role given only its schema), options, byte-exact payloads. The
//! failures of the server are in `sessions.rs`, racing producers in `races.rs`.

mod common;

use std::time::Duration;

use common::Schemas;
use common::store::{admin, item, open};
use common::url;
use deadletter::conformance::BASE;
use deadletter::conformance::kit::at;
use deadletter::{Engine, Error, Limits};
use deadletter_postgres::{Options, PostgresStore, SCHEMA_VERSION};

#[test]
fn a_schema_keeps_its_messages_and_foreign_or_newer_schemas_are_refused() {
    let schemas = Schemas::new("life");
    let name = schemas.name();
    let engine = Engine::new(open(&name).expect("create"), Limits::default());
    let m =
        pollster::block_on(engine.enqueue("q".into(), &item("hé ✓"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    drop(engine);
    let engine = Engine::new(open(&name).expect("reopen"), Limits::default());
    let again = pollster::block_on(engine.get("q".into(), m.id.into())).expect("get");
    assert_eq!(again, m);
    let next =
        pollster::block_on(engine.enqueue("q".into(), &item("b"), &at(BASE))).expect("enqueue");
    assert_eq!(next.id, 2);
    drop(engine);

    let mut admin = admin();
    let newer = SCHEMA_VERSION + 1;
    admin
        .batch_execute(&format!(
            "UPDATE \"{name}\".deadletter_schema SET version = {newer}"
        ))
        .expect("bump version");
    let refused = open(&name).expect_err("newer schema");
    assert_eq!(refused.code(), "store");
    assert!(
        refused.to_string().contains(&format!(
            "schema version {newer}; this deadletter reads version {SCHEMA_VERSION}"
        )),
        "{refused}"
    );

    let foreign = schemas.name();
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA \"{foreign}\"; CREATE TABLE \"{foreign}\".orders (id int)"
        ))
        .expect("another application's schema");
    let refused = open(&foreign).expect_err("foreign schema");
    assert_eq!(refused.code(), "store");
    assert!(
        refused.to_string().contains("not a deadletter schema")
            && refused.to_string().contains("orders"),
        "{refused}"
    );
    // Refusing changed nothing there.
    let tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
            &[&foreign],
        )
        .expect("count")
        .get(0);
    assert_eq!(tables, 1);

    // An existing, empty schema (made by a DBA, say) is filled.
    let empty = schemas.name();
    admin
        .batch_execute(&format!("CREATE SCHEMA \"{empty}\""))
        .expect("empty schema");
    open(&empty).expect("an empty schema is taken");
}

#[test]
fn a_schema_name_with_quotes_and_spaces_is_quoted() {
    let schemas = Schemas::new("odd");
    let name = format!("{} \"x\"; DROP", schemas.name());
    let engine = Engine::new(open(&name).expect("open"), Limits::default());
    let m = pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    let mut admin = admin();
    let found: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&name],
        )
        .expect("count")
        .get(0);
    assert_eq!(found, 1);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA \"{}\" CASCADE",
            name.replace('"', "\"\"")
        ))
        .expect("drop");
}

#[test]
fn bad_options_are_validation_errors_that_never_show_the_password() {
    let fields = |err: Error| -> Vec<(&str, &str)> {
        assert_eq!(err.code(), "validation_failed");
        assert!(!err.to_string().contains("sekret"), "{err}");
        err.field_errors()
            .iter()
            .map(|f| (f.field, f.code))
            .collect()
    };
    let bad_url = PostgresStore::open(
        "postgresql://u:sekret@host:notaport/db",
        &Options::default(),
    )
    .expect_err("bad url");
    assert_eq!(fields(bad_url), [("url", "invalid")]);
    let options = |schema: &str, max_connections| Options {
        schema: schema.to_owned(),
        max_connections,
        ..Options::default()
    };
    let empty = PostgresStore::open(&url(), &options("", 1)).expect_err("empty schema");
    assert_eq!(fields(empty), [("schema", "empty")]);
    let long = PostgresStore::open(&url(), &options(&"s".repeat(64), 1)).expect_err("long");
    assert_eq!(fields(long), [("schema", "too_long")]);
    let none = PostgresStore::open(&url(), &options("deadletter", 0)).expect_err("no sessions");
    assert_eq!(fields(none), [("max_connections", "out_of_range")]);

    let unreachable = PostgresStore::open(
        "postgresql://u:sekret@127.0.0.1:1/db",
        &Options {
            connect_timeout: Duration::from_millis(300),
            ..Options::default()
        },
    )
    .expect_err("nobody listens on port 1");
    assert_eq!(unreachable.code(), "store");
    assert!(!unreachable.to_string().contains("sekret"), "{unreachable}");

    // A refused login fails at once with the server's reason, not after the pool's retries.
    let wrong = url().replacen("://deadletter:deadletter@", "://deadletter:sekret@", 1);
    assert_ne!(
        wrong,
        url(),
        "the test server's URL has the password of scripts/pg.sh"
    );
    let refused = PostgresStore::open(&wrong, &Options::default()).expect_err("wrong password");
    assert_eq!(
        refused.to_string(),
        "store error: PostgreSQL: cannot connect: password authentication failed for user \
         \"deadletter\" (SQLSTATE 28P01)"
    );
}

#[test]
fn payloads_round_trip_byte_for_byte_and_nul_in_a_queue_name_is_refused_before_the_store() {
    let schemas = Schemas::new("bytes");
    let engine = Engine::new(schemas.store(1), Limits::default());
    pollster::block_on(async {
        let odd = "nul \0 inside, emoji 🦀, CR\r\n, quote ' and \\";
        let m = engine
            .enqueue("q".into(), &item(odd), &at(BASE))
            .await
            .expect("enqueue");
        assert_eq!(
            engine.get("q".into(), m.id.into()).await.unwrap().payload,
            odd
        );

        let err = engine
            .enqueue("q\0".into(), &item("a"), &at(BASE))
            .await
            .expect_err("NUL in a queue name");
        assert_eq!(err.code(), "validation_failed");
        assert!(err.to_string().contains("U+0000"), "{err}");
        assert_eq!(engine.queues(&at(BASE)).await.unwrap().len(), 1);
    });
}

#[test]
fn a_role_given_only_an_empty_schema_made_for_it_can_open_it() {
    // The README's second way: a role without the right to create schemas in the database, and
    // an empty schema an administrator made for it.
    let schemas = Schemas::new("granted");
    let name = schemas.name();
    let role = format!("{name}_role");
    let mut admin = admin();
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw'; CREATE SCHEMA \"{name}\" AUTHORIZATION \"{role}\""
        ))
        .expect("role and schema");
    let can_create: bool = admin
        .query_one(
            "SELECT has_database_privilege($1, current_database(), 'CREATE')",
            &[&role],
        )
        .expect("privilege")
        .get(0);
    assert!(!can_create, "the role must not be able to create schemas");
    let url = url();
    let (_, host) = url.split_once('@').expect("user@host");
    let options = Options {
        schema: name.clone(),
        ..Options::default()
    };
    let opened = PostgresStore::open(&format!("postgresql://{role}:pw@{host}"), &options);
    let engine = Engine::new(opened.expect("open"), Limits::default());
    let m = pollster::block_on(engine.enqueue("q".into(), &item("a"), &at(BASE))).expect("enqueue");
    assert_eq!(m.id, 1);
    drop(engine);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA \"{name}\" CASCADE; DROP ROLE \"{role}\""
        ))
        .expect("clean up");
}

#[test]
fn a_queue_under_a_name_now_refused_keeps_working() {
    let schemas = Schemas::new("old_names");
    let engine = Engine::new(open(&schemas.name()).expect("create"), Limits::default());
    deadletter::conformance::kit::a_queue_under_a_name_now_refused_keeps_working(&engine);
}
