//! psql, the real client, against a real server: its meta-commands (`\d`,
//! `\dt`, `\dv`, `\dm`, `\di`, `\dn`, `\du`, `\l`, `\d t`, `\d+ t`) read
//! `pg_catalog` with the queries psql itself sends, and each must succeed
//! and list what the database holds.
//!
//! Needs `psql` (Debian's `postgresql-client`, which `.ci/run` installs);
//! where it is missing the test fails, unless `RIPPLE_SKIP_PSQL=1` is set.

mod common;

use common::TestServer;
use std::process::Command;

fn have_psql() -> bool {
    Command::new("psql").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

/// Runs one psql command (`-c`), returning its standard output; panics with
/// psql's error output and the server log if it fails.
fn psql(server: &TestServer, command: &str) -> String {
    let out = Command::new("psql")
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "ripple", "-d", "ripple"])
        .args(["-p", &server.port().to_string()])
        .args(["-P", "pager=off", "-c", command])
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run psql");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "psql {command:?} failed:\n{stdout}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
    stdout
}

/// The lines of a psql table whose first columns are `cells` (as psql
/// aligns them, separated by `|`).
fn has_row(output: &str, cells: &[&str]) -> bool {
    output.lines().any(|line| {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        cols.len() >= cells.len() && cols.iter().zip(cells).all(|(c, want)| c == want)
    })
}

#[test]
fn psql_meta_commands() {
    if !have_psql() {
        if std::env::var("RIPPLE_SKIP_PSQL").is_ok() {
            eprintln!("psql is not installed; skipped (RIPPLE_SKIP_PSQL is set)");
            return;
        }
        panic!("psql is required (apt-get install postgresql-client), or set RIPPLE_SKIP_PSQL=1");
    }
    let server = TestServer::start(1);
    psql(
        &server,
        "CREATE TABLE orders (id integer PRIMARY KEY, product varchar(20) NOT NULL, qty integer);\
         CREATE INDEX orders_product_idx ON orders (product);\
         CREATE VIEW big AS SELECT id, qty FROM orders WHERE qty > 10;\
         CREATE MATERIALIZED VIEW sold AS SELECT product, sum(qty) AS total FROM orders GROUP BY product;",
    );

    let all = psql(&server, "\\d");
    for (name, kind) in [("orders", "table"), ("big", "view"), ("sold", "materialized view")] {
        assert!(has_row(&all, &["public", name, kind]), "\\d lacks {name}:\n{all}");
    }
    let tables = psql(&server, "\\dt");
    assert!(has_row(&tables, &["public", "orders", "table", "ripple"]), "\\dt:\n{tables}");
    assert!(!tables.contains("big"), "\\dt lists a view:\n{tables}");
    let views = psql(&server, "\\dv");
    assert!(has_row(&views, &["public", "big", "view"]), "\\dv:\n{views}");
    let matviews = psql(&server, "\\dm");
    assert!(has_row(&matviews, &["public", "sold", "materialized view"]), "\\dm:\n{matviews}");
    let indexes = psql(&server, "\\di");
    assert!(has_row(&indexes, &["public", "orders_pkey", "index", "ripple", "orders"]), "\\di:\n{indexes}");
    assert!(has_row(&indexes, &["public", "orders_product_idx", "index", "ripple", "orders"]), "\\di:\n{indexes}");
    let schemas = psql(&server, "\\dn");
    // As in PostgreSQL 15, `public` belongs to pg_database_owner.
    assert!(has_row(&schemas, &["public", "pg_database_owner"]), "\\dn:\n{schemas}");
    let roles = psql(&server, "\\du");
    assert!(has_row(&roles, &["ripple"]), "\\du:\n{roles}");
    let databases = psql(&server, "\\l");
    assert!(has_row(&databases, &["ripple", "ripple", "UTF8"]), "\\l:\n{databases}");
    let functions = psql(&server, "\\df");
    assert!(functions.contains("List of functions"), "\\df:\n{functions}");

    let table = psql(&server, "\\d orders");
    assert!(table.contains("Table \"public.orders\""), "\\d orders:\n{table}");
    assert!(has_row(&table, &["id", "integer", "", "not null"]), "\\d orders:\n{table}");
    assert!(has_row(&table, &["product", "character varying(20)", "", "not null"]), "\\d orders:\n{table}");
    assert!(table.contains("\"orders_pkey\" PRIMARY KEY, btree (id)"), "\\d orders:\n{table}");
    assert!(table.contains("\"orders_product_idx\" btree (product)"), "\\d orders:\n{table}");
    let plus = psql(&server, "\\d+ orders");
    assert!(plus.contains("Table \"public.orders\""), "\\d+ orders:\n{plus}");
    let view = psql(&server, "\\d+ big");
    assert!(view.contains("View definition:"), "\\d+ big:\n{view}");
    let mv = psql(&server, "\\d sold");
    assert!(mv.contains("Materialized view \"public.sold\""), "\\d sold:\n{mv}");

    // A missing relation is psql's own message, not a server error.
    let out = Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-U", "ripple", "-d", "ripple", "-p", &server.port().to_string()])
        .args(["-c", "\\d nosuch"])
        .output()
        .expect("run psql");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Did not find any relation named \"nosuch\""), "\\d nosuch: {err}");
}
