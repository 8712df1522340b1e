//! psql, the real client, against a real server: its meta-commands (`\d`,
//! `\dt`, `\dv`, `\dm`, `\di`, `\dn`, `\du`, `\l`, `\d t`, `\d+ t`) read
//! `pg_catalog` with the queries psql itself sends, and each must succeed
//! and list what the database holds. pg_dump, its sibling: a schema of
//! tables, a view, materialized views, indexes, keys and comments dumped
//! with `pg_dump --schema-only`, loaded by psql into a fresh server, dumps
//! the same again.
//!
//! Needs `psql` and `pg_dump` (Debian's `postgresql-client`, which `./check`
//! installs); where they are missing the tests fail, unless
//! `RIPPLE_SKIP_PSQL=1` is set.

mod common;

use common::TestServer;
use std::process::Command;

fn have_psql() -> bool {
    Command::new("psql").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

/// Runs a PostgreSQL client program connected to the server as `ripple`
/// (`args` follow the connection options), returning its standard output;
/// panics with its error output and the server log if it fails.
fn run_client(program: &str, server: &TestServer, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(["-h", "127.0.0.1", "-U", "ripple", "-p", &server.port().to_string()])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{stdout}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
    stdout
}

/// Runs psql with `args`, stopping at the first error.
fn psql_with(server: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "ripple"];
    all.extend_from_slice(args);
    run_client("psql", server, &all)
}

/// `pg_dump --schema-only` of the server's database. The restrict key is
/// fixed (pg_dump draws a random one otherwise), so that two dumps of the
/// same schema are the same text.
fn pg_dump_schema(server: &TestServer) -> String {
    run_client("pg_dump", server, &["--schema-only", "--restrict-key=ripple", "ripple"])
}

/// Runs one psql command (`-c`), returning what it prints.
fn psql(server: &TestServer, command: &str) -> String {
    run_client("psql", server, &["-X", "-v", "ON_ERROR_STOP=1", "-d", "ripple", "-P", "pager=off", "-c", command])
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
        "CREATE TABLE orders (id integer PRIMARY KEY, product varchar(20) NOT NULL, qty integer DEFAULT 1);\
         CREATE INDEX orders_product_idx ON orders (product);\
         INSERT INTO orders (id, product) SELECT g, 'p' || g FROM generate_series(1, 1000) AS g;\
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
    // ripple's introspection schema, and its relations as \dS lists pg_catalog's.
    assert!(has_row(&schemas, &["ripple_catalog"]), "\\dn:\n{schemas}");
    let introspection = psql(&server, "\\dvS ripple_catalog.*");
    for name in ["arrangement_sizes", "frontiers", "hydration", "operators", "sessions"] {
        assert!(has_row(&introspection, &["ripple_catalog", name, "view"]), "\\dvS ripple_catalog.*:\n{introspection}");
    }
    let sessions = psql(&server, "\\dS ripple_catalog.sessions");
    assert!(has_row(&sessions, &["query", "text"]), "\\dS ripple_catalog.sessions:\n{sessions}");
    let roles = psql(&server, "\\du");
    assert!(has_row(&roles, &["ripple"]), "\\du:\n{roles}");
    // Privileges: \dp shows the ACL as PostgreSQL prints it.
    psql(&server, "CREATE ROLE reader; GRANT SELECT ON orders TO reader WITH GRANT OPTION; GRANT SELECT ON big TO PUBLIC;");
    let privileges = psql(&server, "\\dp");
    assert!(has_row(&privileges, &["public", "orders", "table", "ripple=arwdDxt/ripple+"]), "\\dp:\n{privileges}");
    assert!(has_row(&privileges, &["", "", "", "reader=r*/ripple"]), "\\dp:\n{privileges}");
    assert!(has_row(&privileges, &["", "", "", "=r/ripple"]), "\\dp:\n{privileges}");
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
    assert!(has_row(&table, &["qty", "integer", "", "", "1"]), "\\d orders shows the default:\n{table}");
    // Sizes are the bytes the relations' arrangements hold.
    let sized = psql(&server, "\\dt+ orders");
    let size = |out: &str, name: &str| -> String {
        let line = out.lines().find(|l| l.split('|').nth(1).map(str::trim) == Some(name)).unwrap_or_default();
        line.split('|').map(str::trim).find(|c| c.ends_with(" kB") || c.ends_with(" bytes")).unwrap_or_default().to_string()
    };
    assert!(size(&sized, "orders").ends_with(" kB"), "\\dt+ shows the table's size:\n{sized}");
    let sized = psql(&server, "\\di+ orders_product_idx");
    assert!(size(&sized, "orders_product_idx").ends_with(" kB"), "\\di+ shows the index's size:\n{sized}");
    let sized = psql(&server, "\\dm+");
    assert!(!size(&sized, "sold").is_empty(), "\\dm+ shows the view's size:\n{sized}");
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

#[test]
fn pg_dump_schema_round_trips() {
    if !have_psql() || Command::new("pg_dump").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        if std::env::var("RIPPLE_SKIP_PSQL").is_ok() {
            eprintln!("psql or pg_dump is not installed; skipped (RIPPLE_SKIP_PSQL is set)");
            return;
        }
        panic!("psql and pg_dump are required (apt-get install postgresql-client), or set RIPPLE_SKIP_PSQL=1");
    }
    let schema = format!("{}/tests/drivers/dump_schema.sql", env!("CARGO_MANIFEST_DIR"));
    let first_server = TestServer::start(1);
    psql_with(&first_server, &["-f", &schema]);
    let first = pg_dump_schema(&first_server);
    for expected in [
        "CREATE TABLE public.customers (",
        "    email character varying(120) NOT NULL,",
        "    amount numeric(12,2) NOT NULL,",
        "CREATE VIEW public.active_customers AS",
        "CREATE MATERIALIZED VIEW public.customer_totals AS",
        "CREATE MATERIALIZED VIEW public.big_orders AS",
        "    ADD CONSTRAINT customers_pkey PRIMARY KEY (id);",
        "    ADD CONSTRAINT customers_email_key UNIQUE (email);",
        "    ADD CONSTRAINT products_pkey PRIMARY KEY (sku);",
        "CREATE INDEX orders_customer_idx ON public.orders USING btree (customer_id);",
        "CREATE INDEX customer_totals_total_idx ON public.customer_totals USING btree (total);",
        "COMMENT ON TABLE public.customers IS 'people who buy';",
        "COMMENT ON COLUMN public.customers.email IS 'unique login';",
        "COMMENT ON MATERIALIZED VIEW public.customer_totals IS 'orders per customer';",
    ] {
        assert!(first.contains(expected), "the dump lacks {expected:?}:\n{first}");
    }
    // Loaded into a fresh server, the dump makes the same schema.
    let dump_file = first_server.data_dir().join("schema-dump.sql");
    std::fs::write(&dump_file, &first).expect("write the dump");
    let second_server = TestServer::start(1);
    psql_with(&second_server, &["-f", &dump_file.to_string_lossy()]);
    let second = pg_dump_schema(&second_server);
    assert_eq!(first, second, "the dump of the reloaded schema differs");
    // And the reloaded views are maintained.
    psql_with(
        &second_server,
        &["-c", "INSERT INTO customers VALUES (1, 'a@x', 'A', NULL, true); INSERT INTO orders VALUES (10, 1, 1500, NULL, NULL)"],
    );
    let totals = psql_with(&second_server, &["-A", "-t", "-c", "SELECT n_orders, total FROM customer_totals; SELECT count(*) FROM big_orders"]);
    assert_eq!(totals, "1|1500.00\n1\n");
}

/// psql reads a subscription: `COPY (SUBSCRIBE ...) TO STDOUT` until its
/// `UP TO`, with a commit arriving while it runs, and a cursor over one.
#[test]
fn psql_reads_subscriptions() {
    if !have_psql() {
        if std::env::var("RIPPLE_SKIP_PSQL").is_ok() {
            eprintln!("psql is not installed; skipped (RIPPLE_SKIP_PSQL is set)");
            return;
        }
        panic!("psql is not installed (apt-get install postgresql-client), or set RIPPLE_SKIP_PSQL=1");
    }
    let server = TestServer::start(1);
    psql(&server, "CREATE TABLE t (k int, v text)");
    psql(&server, "INSERT INTO t VALUES (1, 'one')");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as u64;
    let up_to = now + 2_000;
    // A commit made while the COPY runs.
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(500));
            psql(&server, "INSERT INTO t VALUES (2, 'two')")
        });
        psql(&server, &format!("COPY (SUBSCRIBE t WITH (PROGRESS) UP TO {up_to}) TO STDOUT"))
    });
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    // timestamp, progressed, diff, k, v.
    assert!(lines.iter().any(|l| l[1..] == ["f", "1", "1", "one"]), "the snapshot:\n{out}");
    assert!(lines.iter().any(|l| l[1..] == ["f", "1", "2", "two"]), "the commit while it ran:\n{out}");
    let last = lines.last().expect("lines");
    assert_eq!(last[..2], [up_to.to_string().as_str(), "t"], "ends with progress to UP TO:\n{out}");

    let out = psql_with(&server, &["-A", "-t", "-c", "BEGIN", "-c", "DECLARE c CURSOR FOR SUBSCRIBE (SELECT v FROM t)", "-c", "FETCH ALL c", "-c", "COMMIT"]);
    let mut rows: Vec<&str> = out.lines().filter_map(|l| l.split_once('|').map(|(_, rest)| rest)).collect();
    rows.sort();
    assert_eq!(rows, ["1|one", "1|two"], "{out}");
}
