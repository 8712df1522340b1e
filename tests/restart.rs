//! Crash recovery: kill -9 the server and start it again on the same data
//! directory. Every table with its rows, every view, materialized view and
//! index must be back, materialized views must keep updating, and a write
//! acknowledged to the client is never lost.

mod common;

use common::{TestServer, exec, query_text, rows};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SCHEMA: &str = "
    CREATE TABLE all_types (
        b boolean, i2 smallint, i4 integer NOT NULL, i8 bigint, f4 real, f8 double precision,
        n numeric(10,2), t text, vc varchar(8), c char(4), d date, ts timestamp
    );
    CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, city text);
    CREATE TABLE orders (id integer NOT NULL, customer_id integer NOT NULL, amount numeric(10,2), status text);
    CREATE INDEX orders_by_customer ON orders (customer_id);
    CREATE UNIQUE INDEX orders_id ON orders (id);
    CREATE VIEW open_orders AS SELECT id, customer_id, amount FROM orders WHERE status = 'open';
    CREATE MATERIALIZED VIEW customer_totals AS
        SELECT c.name, count(*) AS n, sum(o.amount) AS total, max(o.amount) AS biggest
        FROM customers c JOIN orders o ON o.customer_id = c.id
        GROUP BY c.name;
    CREATE MATERIALIZED VIEW big_spenders AS
        SELECT name, total FROM customer_totals WHERE total > 100;
";

const DATA: &str = "
    INSERT INTO all_types VALUES
        (true, 1, 10, 100, 1.5, 2.25, 12.34, 'text', 'varchar', 'ch', '2024-02-29', '2024-02-29 23:59:58.25'),
        (false, -32768, -2147483648, -9223372036854775808, -0.5, 1e100, -99999999.99, '', '', '', '1970-01-01', '1970-01-01 00:00:00'),
        (NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    INSERT INTO customers VALUES (1, 'ada', 'london'), (2, 'bob', 'paris'), (3, 'cy', NULL);
    INSERT INTO orders VALUES
        (10, 1, 50.00, 'open'), (11, 1, 75.50, 'shipped'), (12, 2, 20.00, 'open'), (13, 3, 5.25, 'open');
    UPDATE orders SET status = 'shipped' WHERE id = 12;
    DELETE FROM customers WHERE id = 3;
";

/// The state after `DATA`, as the queries of `check_state` render it.
struct Expected {
    tables: Vec<&'static str>,
    /// Contents of `later`, a table created after the first restart.
    later: Option<Vec<Vec<String>>>,
    all_types: Vec<Vec<String>>,
    customers: Vec<Vec<String>>,
    orders: Vec<Vec<String>>,
    open_orders: Vec<Vec<String>>,
    customer_totals: Vec<Vec<String>>,
    big_spenders: Vec<Vec<String>>,
}

fn expected_initial() -> Expected {
    Expected {
        tables: vec!["all_types", "customers", "orders"],
        later: None,
        all_types: rows(&[
            &[
                "f",
                "-32768",
                "-2147483648",
                "-9223372036854775808",
                "-0.5",
                "1e+100",
                "-99999999.99",
                "",
                "",
                "    ",
                "1970-01-01",
                "1970-01-01 00:00:00",
            ],
            &[
                "NULL", "NULL", "0", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
                "NULL", "NULL",
            ],
            &[
                "t",
                "1",
                "10",
                "100",
                "1.5",
                "2.25",
                "12.34",
                "text",
                "varchar",
                "ch  ",
                "2024-02-29",
                "2024-02-29 23:59:58.25",
            ],
        ]),
        customers: rows(&[&["1", "ada", "london"], &["2", "bob", "paris"]]),
        orders: rows(&[
            &["10", "1", "50.00", "open"],
            &["11", "1", "75.50", "shipped"],
            &["12", "2", "20.00", "shipped"],
            &["13", "3", "5.25", "open"],
        ]),
        open_orders: rows(&[&["10", "1", "50.00"], &["13", "3", "5.25"]]),
        customer_totals: rows(&[
            &["ada", "2", "125.50", "75.50"],
            &["bob", "1", "20.00", "20.00"],
        ]),
        big_spenders: rows(&[&["ada", "125.50"]]),
    }
}

async fn check_state(server: &TestServer, expected: &Expected, when: &str) {
    let client = server.connect().await;
    let check = |what: &'static str, got: Vec<Vec<String>>, want: &Vec<Vec<String>>| {
        assert_eq!(&got, want, "{what} {when}\n{}", server.stderr_tail());
    };
    check(
        "all_types",
        query_text(&client, "SELECT * FROM all_types ORDER BY i4").await,
        &expected.all_types,
    );
    check(
        "customers",
        query_text(&client, "SELECT * FROM customers ORDER BY id").await,
        &expected.customers,
    );
    check(
        "orders",
        query_text(&client, "SELECT * FROM orders ORDER BY id").await,
        &expected.orders,
    );
    check(
        "open_orders",
        query_text(&client, "SELECT * FROM open_orders ORDER BY id").await,
        &expected.open_orders,
    );
    check(
        "customer_totals",
        query_text(&client, "SELECT * FROM customer_totals ORDER BY name").await,
        &expected.customer_totals,
    );
    check(
        "big_spenders",
        query_text(&client, "SELECT * FROM big_spenders ORDER BY name").await,
        &expected.big_spenders,
    );

    let catalog = |sql: &'static str| {
        let client = &client;
        async move {
            query_text(client, sql)
                .await
                .into_iter()
                .map(|r| r[0].clone())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        catalog("SHOW TABLES").await,
        expected.tables,
        "SHOW TABLES {when}"
    );
    if let Some(later) = &expected.later {
        check(
            "later",
            query_text(&client, "SELECT x FROM later ORDER BY x").await,
            later,
        );
    }
    assert_eq!(
        catalog("SHOW VIEWS").await,
        ["open_orders"],
        "SHOW VIEWS {when}"
    );
    assert_eq!(
        catalog("SHOW MATERIALIZED VIEWS").await,
        ["big_spenders", "customer_totals"],
        "SHOW MATERIALIZED VIEWS {when}"
    );
    assert_eq!(
        catalog("SHOW INDEXES").await,
        ["orders_by_customer", "orders_id"],
        "SHOW INDEXES {when}"
    );
}

async fn restart_recovers_everything(workers: usize) {
    let mut server = TestServer::start(workers);
    {
        let client = server.connect().await;
        exec(&client, SCHEMA).await;
        exec(&client, DATA).await;
    }
    let mut expected = expected_initial();
    check_state(&server, &expected, "before the first kill").await;

    // kill -9 and restart on the same data directory.
    server.restart();
    check_state(&server, &expected, "after the first restart").await;

    // Unique keys are enforced after recovery, over the recovered rows.
    {
        let client = server.connect().await;
        for sql in ["INSERT INTO customers VALUES (1, 'again', NULL)", "INSERT INTO orders VALUES (10, 1, 1.00, 'open')"] {
            let err = client.simple_query(sql).await.expect_err(sql);
            assert_eq!(err.code(), Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION), "{sql}: {err:?}");
        }
    }
    // The materialized views keep updating after recovery.
    {
        let client = server.connect().await;
        exec(&client, "INSERT INTO customers VALUES (3, 'cy', 'rome')").await;
        exec(&client, "INSERT INTO orders VALUES (14, 2, 200.00, 'open')").await;
        exec(&client, "UPDATE orders SET amount = 80.00 WHERE id = 10").await;
        exec(&client, "DELETE FROM orders WHERE id = 11").await;
        exec(
            &client,
            "INSERT INTO all_types (i4, t) VALUES (20, 'after restart')",
        )
        .await;
        // A table created after the restart survives the next one.
        exec(&client, "CREATE TABLE later (x integer)").await;
        exec(&client, "INSERT INTO later VALUES (1), (2)").await;
    }
    expected.customers = rows(&[
        &["1", "ada", "london"],
        &["2", "bob", "paris"],
        &["3", "cy", "rome"],
    ]);
    expected.orders = rows(&[
        &["10", "1", "80.00", "open"],
        &["12", "2", "20.00", "shipped"],
        &["13", "3", "5.25", "open"],
        &["14", "2", "200.00", "open"],
    ]);
    expected.open_orders = rows(&[
        &["10", "1", "80.00"],
        &["13", "3", "5.25"],
        &["14", "2", "200.00"],
    ]);
    expected.customer_totals = rows(&[
        &["ada", "1", "80.00", "80.00"],
        &["bob", "2", "220.00", "200.00"],
        &["cy", "1", "5.25", "5.25"],
    ]);
    expected.big_spenders = rows(&[&["bob", "220.00"]]);
    expected.all_types.push(
        [
            "NULL",
            "NULL",
            "20",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "after restart",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
        ]
        .map(String::from)
        .to_vec(),
    );

    expected.tables = vec!["all_types", "customers", "later", "orders"];
    expected.later = Some(rows(&[&["1"], &["2"]]));
    check_state(
        &server,
        &expected,
        "after writes following the first restart",
    )
    .await;

    // Second kill -9 and restart.
    server.restart();
    check_state(&server, &expected, "after the second restart").await;

    // Still maintained after the second restart; a drop survives a restart too.
    {
        let client = server.connect().await;
        exec(&client, "DELETE FROM orders WHERE customer_id = 2").await;
        assert_eq!(
            query_text(&client, "SELECT * FROM customer_totals ORDER BY name").await,
            rows(&[
                &["ada", "1", "80.00", "80.00"],
                &["cy", "1", "5.25", "5.25"]
            ])
        );
        assert_eq!(
            query_text(&client, "SELECT * FROM big_spenders").await,
            Vec::<Vec<String>>::new()
        );
        exec(&client, "DROP TABLE later").await;
        exec(&client, "DROP INDEX orders_by_customer").await;
        exec(&client, "DROP INDEX orders_id").await;
    }
    server.restart();
    let client = server.connect().await;
    let tables: Vec<String> = query_text(&client, "SHOW TABLES")
        .await
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        tables,
        ["all_types", "customers", "orders"],
        "SHOW TABLES after the third restart"
    );
    assert!(
        query_text(&client, "SHOW INDEXES").await.is_empty(),
        "the dropped index came back"
    );
    assert_eq!(
        query_text(&client, "SELECT * FROM customer_totals ORDER BY name").await,
        rows(&[
            &["ada", "1", "80.00", "80.00"],
            &["cy", "1", "5.25", "5.25"]
        ])
    );
    exec(
        &client,
        "INSERT INTO orders VALUES (15, 1, 1000.00, 'open')",
    )
    .await;
    assert_eq!(
        query_text(&client, "SELECT * FROM big_spenders").await,
        rows(&[&["ada", "1080.00"]])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovers_everything_workers_1() {
    restart_recovers_everything(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovers_everything_workers_2() {
    restart_recovers_everything(2).await;
}

/// Writes acknowledged just before a SIGKILL are present after restart.
/// Two sessions insert (and one also updates) as fast as they can; the
/// server is killed while statements are in flight. Every acknowledged
/// write must be there afterwards; unacknowledged ones may or may not be.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill() {
    let mut server = TestServer::start(2);
    {
        let client = server.connect().await;
        exec(
            &client,
            "CREATE TABLE acked (session integer NOT NULL, seq integer NOT NULL)",
        )
        .await;
        exec(
            &client,
            "CREATE TABLE counter (id integer NOT NULL, v integer NOT NULL)",
        )
        .await;
        exec(&client, "INSERT INTO counter VALUES (1, 0)").await;
        exec(&client, "CREATE MATERIALIZED VIEW acked_count AS SELECT session, count(*) AS n FROM acked GROUP BY session").await;
    }

    // Highest acknowledged sequence number per session, and counter value.
    let acked: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(vec![-1, -1]));
    let counter_acked = Arc::new(Mutex::new(0i64));
    let mut tasks = Vec::new();
    for session in 0..2usize {
        let client = server.connect().await;
        let acked = acked.clone();
        let counter_acked = counter_acked.clone();
        tasks.push(tokio::spawn(async move {
            for seq in 0i64.. {
                if client
                    .simple_query(&format!("INSERT INTO acked VALUES ({session}, {seq})"))
                    .await
                    .is_err()
                {
                    return;
                }
                acked.lock().unwrap()[session] = seq;
                if session == 0 {
                    if client
                        .simple_query("UPDATE counter SET v = v + 1 WHERE id = 1")
                        .await
                        .is_err()
                    {
                        return;
                    }
                    *counter_acked.lock().unwrap() += 1;
                }
            }
        }));
    }

    // Let both sessions get some writes acknowledged, then kill mid-stream.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let a = acked.lock().unwrap().clone();
        if a.iter().all(|&s| s >= 20) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes too slow: {a:?}\n{}",
            server.stderr_tail()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    for t in tasks {
        t.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let counter_acked = *counter_acked.lock().unwrap();

    server.restart();
    let client = server.connect().await;
    for (session, &max_acked) in acked.iter().enumerate() {
        let seqs: Vec<i64> = query_text(
            &client,
            &format!("SELECT seq FROM acked WHERE session = {session} ORDER BY seq"),
        )
        .await
        .into_iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
        // Statements of a session are sequential, so what is there must be
        // 0..=k with k >= the last acknowledged (at most one unacknowledged
        // write may have made it).
        let n = seqs.len() as i64;
        assert!(
            n > max_acked,
            "session {session}: acknowledged up to {max_acked}, recovered {n} rows"
        );
        assert!(
            n <= max_acked + 2,
            "session {session}: recovered {n} rows, acknowledged {max_acked}"
        );
        assert_eq!(
            seqs,
            (0..n).collect::<Vec<_>>(),
            "session {session}: rows are not a prefix"
        );
        // The materialized view agrees with its input after recovery.
        let mv = query_text(
            &client,
            &format!("SELECT n FROM acked_count WHERE session = {session}"),
        )
        .await;
        assert_eq!(
            mv,
            rows(&[&[n.to_string().as_str()]]),
            "acked_count for session {session}"
        );
    }
    let v: i64 = query_text(&client, "SELECT v FROM counter WHERE id = 1").await[0][0]
        .parse()
        .unwrap();
    assert!(
        v == counter_acked || v == counter_acked + 1,
        "counter is {v}, acknowledged updates {counter_acked}"
    );
    assert_eq!(
        query_text(&client, "SELECT count(*) FROM counter").await,
        rows(&[&["1"]]),
        "UPDATE lost or duplicated a row"
    );
}

/// Array values (NULL elements, quoted text, numeric typmods) round-trip
/// through the table log and recovery, and a materialized view with
/// array_agg is rebuilt from its stored definition and keeps updating.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_survive_restart() {
    async fn check(server: &TestServer, table: &[Vec<String>], view: &[Vec<String>], when: &str) {
        let client = server.connect().await;
        assert_eq!(query_text(&client, "SELECT * FROM arr ORDER BY id").await, table, "arr {when}");
        assert_eq!(query_text(&client, "SELECT * FROM arr_agg ORDER BY first").await, view, "arr_agg {when}");
    }
    let mut server = TestServer::start(2);
    {
        let client = server.connect().await;
        exec(
            &client,
            r#"CREATE TABLE arr (id integer NOT NULL, a integer[], t text[], n numeric(5,2)[]);
               CREATE MATERIALIZED VIEW arr_agg AS
                   SELECT a[1] AS first, array_agg(id ORDER BY id) AS ids, array_agg(t[1] ORDER BY id) AS firsts
                   FROM arr GROUP BY a[1];
               INSERT INTO arr VALUES
                   (1, '{1,NULL,3}', '{"a b","",NULL,"x\"y"}', '{1.5,NULL}'),
                   (2, ARRAY[1], ARRAY['NULL'], ARRAY[2.345]),
                   (3, '{}', '{}', NULL);"#,
        )
        .await;
    }
    let mut table = rows(&[
        &["1", "{1,NULL,3}", r#"{"a b","",NULL,"x\"y"}"#, "{1.50,NULL}"],
        &["2", "{1}", r#"{"NULL"}"#, "{2.35}"],
        &["3", "{}", "{}", "NULL"],
    ]);
    let view = rows(&[&["1", "{1,2}", r#"{"a b","NULL"}"#], &["NULL", "{3}", "{NULL}"]]);
    check(&server, &table, &view, "before the restart").await;
    server.restart();
    check(&server, &table, &view, "after the restart").await;
    {
        let client = server.connect().await;
        exec(&client, "UPDATE arr SET a = a || 4, t = '{z}' WHERE id = 3").await;
    }
    table[2] = ["3", "{4}", "{z}", "NULL"].map(String::from).to_vec();
    let view = rows(&[&["1", "{1,2}", r#"{"a b","NULL"}"#], &["4", "{3}", "{z}"]]);
    check(&server, &table, &view, "after an update").await;
    server.restart();
    check(&server, &table, &view, "after the second restart").await;
}

/// What ALTER and COMMENT ON change is stored with the items: renamed
/// tables, views, materialized views and indexes (and what reads them), a
/// renamed column, a key added to a table with rows, and comments are all
/// back after a restart, and the key is still enforced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_items_survive_restart() {
    async fn check(server: &TestServer, when: &str) {
        let client = server.connect().await;
        let q = |sql: &'static str| {
            let client = &client;
            async move { query_text(client, sql).await }
        };
        assert_eq!(q("SELECT * FROM ledger ORDER BY entry_id").await, rows(&[&["1", "10"], &["2", "20"]]), "ledger {when}");
        assert_eq!(q("SELECT * FROM big_entries").await, rows(&[&["2", "20"]]), "view {when}");
        assert_eq!(q("SELECT total FROM ledger_total").await, rows(&[&["30"]]), "materialized view {when}");
        assert_eq!(
            q("SELECT c.relname, d.objsubid::text, d.description FROM pg_description d JOIN pg_class c ON c.oid = d.objoid ORDER BY 1, 2").await,
            rows(&[&["ledger", "0", "entries"], &["ledger", "1", "the id"]]),
            "comments {when}"
        );
        assert_eq!(
            q("SELECT indexname FROM pg_indexes WHERE tablename = 'ledger' ORDER BY 1").await,
            rows(&[&["entries_pkey"], &["ledger_amount"]]),
            "indexes {when}"
        );
        let dup = client.simple_query("INSERT INTO ledger VALUES (1, 99)").await.expect_err("duplicate key");
        assert_eq!(dup.code().map(|c| c.code()), Some("23505"), "key enforced {when}");
    }
    let mut server = TestServer::start(1);
    {
        let client = server.connect().await;
        exec(
            &client,
            "CREATE TABLE entries (id integer, amount integer);
             INSERT INTO entries VALUES (1, 10), (2, 20);
             CREATE INDEX by_amount ON entries (amount);
             ALTER TABLE entries ADD PRIMARY KEY (id);
             ALTER TABLE entries RENAME COLUMN id TO entry_id;
             CREATE VIEW big AS SELECT entries.entry_id, entries.amount FROM entries WHERE entries.amount > 15;
             CREATE MATERIALIZED VIEW total AS SELECT sum(amount) AS total FROM entries;
             ALTER TABLE entries RENAME TO ledger;
             ALTER VIEW big RENAME TO big_entries;
             ALTER MATERIALIZED VIEW total RENAME TO ledger_total;
             ALTER INDEX by_amount RENAME TO ledger_amount;
             COMMENT ON TABLE ledger IS 'entries';
             COMMENT ON COLUMN ledger.entry_id IS 'the id';",
        )
        .await;
    }
    check(&server, "before the restart").await;
    server.restart();
    check(&server, "after the restart").await;
}

/// Schemas are stored with the catalog: created schemas (with their
/// comments and OIDs), the items in them, views that bound unqualified
/// names through a search path, moved relations and a renamed schema are
/// all back after a restart, and a dropped schema stays dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_survive_restart() {
    async fn check(server: &TestServer, when: &str, oids: Option<&Vec<Vec<String>>>) -> Vec<Vec<String>> {
        let client = server.connect().await;
        let q = |sql: &'static str| {
            let client = &client;
            async move { query_text(client, sql).await }
        };
        let schemas = q("SELECT nspname, oid::text, coalesce(obj_description(oid, 'pg_namespace'), '-') FROM pg_namespace \
                         WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'ripple_catalog') ORDER BY 1")
            .await;
        assert_eq!(
            schemas.iter().map(|r| (r[0].as_str(), r[2].as_str())).collect::<Vec<_>>(),
            vec![("public", "standard public schema"), ("sales", "-"), ("warehouse", "stock")],
            "schemas {when}"
        );
        if let Some(oids) = oids {
            assert_eq!(&schemas, oids, "schema OIDs are stable {when}");
        }
        assert_eq!(q("SELECT * FROM warehouse.items ORDER BY id").await, rows(&[&["1", "bolt"], &["2", "nut"]]), "{when}");
        assert_eq!(q("SELECT * FROM public.items").await, rows(&[&["public item"]]), "{when}");
        // Bound through `search_path = warehouse, public` when created.
        assert_eq!(q("SELECT * FROM sales.item_names ORDER BY 1").await, rows(&[&["bolt"], &["nut"]]), "view {when}");
        assert_eq!(q("SELECT n FROM sales.item_count").await, rows(&[&["2"]]), "materialized view {when}");
        assert_eq!(q("SELECT label FROM sales.moved").await, rows(&[&["moved"]]), "moved table {when}");
        assert_eq!(
            q("SELECT schemaname, indexname FROM pg_indexes WHERE indexname IN ('items_pkey', 'moved_label') ORDER BY 2").await,
            rows(&[&["warehouse", "items_pkey"], &["sales", "moved_label"]]),
            "indexes {when}"
        );
        assert!(client.simple_query("SELECT * FROM gone.t").await.is_err(), "dropped schema {when}");
        schemas
    }
    let mut server = TestServer::start(1);
    {
        let client = server.connect().await;
        exec(
            &client,
            "CREATE SCHEMA stock;
             CREATE SCHEMA sales;
             CREATE SCHEMA gone;
             CREATE TABLE gone.t (a int);
             CREATE TABLE stock.items (id int PRIMARY KEY, name text);
             CREATE TABLE items (label text);
             INSERT INTO items VALUES ('public item');
             INSERT INTO stock.items VALUES (1, 'bolt'), (2, 'nut');
             SET search_path = stock, public;
             CREATE VIEW sales.item_names AS SELECT name FROM items;
             CREATE MATERIALIZED VIEW sales.item_count AS SELECT count(*) AS n FROM items;
             CREATE TABLE moved (label text);
             CREATE INDEX moved_label ON moved (label);
             INSERT INTO moved VALUES ('moved');
             ALTER TABLE moved SET SCHEMA sales;
             RESET search_path;
             ALTER SCHEMA stock RENAME TO warehouse;
             COMMENT ON SCHEMA warehouse IS 'stock';
             DROP SCHEMA gone CASCADE;",
        )
        .await;
    }
    let oids = check(&server, "before the restart", None).await;
    server.restart();
    check(&server, "after the restart", Some(&oids)).await;
}

/// A table whose columns changed (ADD / DROP / ALTER COLUMN), with a
/// default, an index and the materialized view built again over it,
/// reads the same after a restart, and the view is still maintained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_columns_survive_restart() {
    // (The last changes commit together from a transaction block.)
    async fn check(server: &TestServer, when: &str, total: &str) {
        let client = server.connect().await;
        assert_eq!(
            query_text(&client, "SELECT * FROM acct ORDER BY id").await,
            rows(&[&["1", "10", "eu", "x"], &["2", "20", "eu", "x"], &["3", "30", "us", "y"]]),
            "rows {when}"
        );
        assert_eq!(query_text(&client, "SELECT * FROM total").await, rows(&[&[total]]), "view {when}");
        assert_eq!(
            query_text(&client, "SELECT indexname FROM pg_indexes WHERE tablename = 'acct' ORDER BY 1").await,
            rows(&[&["acct_pkey"], &["acct_region"]]),
            "indexes {when}"
        );
    }
    let mut server = TestServer::start(1);
    {
        let client = server.connect().await;
        exec(
            &client,
            "CREATE TABLE acct (id int PRIMARY KEY, owner text, balance int);
             INSERT INTO acct VALUES (1, 'ann', 10), (2, 'bob', 20);
             CREATE MATERIALIZED VIEW total AS SELECT sum(balance) AS s FROM acct;
             ALTER TABLE acct ADD COLUMN region text DEFAULT 'eu';
             CREATE INDEX acct_region ON acct (region);
             BEGIN;
             ALTER TABLE acct DROP COLUMN owner;
             ALTER TABLE acct ADD COLUMN tag text DEFAULT 'x';
             INSERT INTO acct VALUES (3, 30, 'us', 'y');
             COMMIT;",
        )
        .await;
    }
    check(&server, "before the restart", "60").await;
    server.restart();
    check(&server, "after the restart", "60").await;
    let client = server.connect().await;
    exec(&client, "INSERT INTO acct (id, balance) VALUES (4, 40)").await;
    assert_eq!(query_text(&client, "SELECT region, tag FROM acct WHERE id = 4").await, rows(&[&["eu", "x"]]));
    assert_eq!(query_text(&client, "SELECT * FROM total").await, rows(&[&["100"]]));
}

/// A unique key that is not the table's leading columns (or is numeric)
/// is an arrangement built from the table's rows: after a restart it is
/// built again, still refuses duplicates, serves lookups by the key, and
/// a materialized view that joins through it is maintained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_arrangements_are_built_again_on_restart() {
    async fn check(server: &TestServer, when: &str) {
        let client = server.connect().await;
        for (sql, constraint) in [
            ("INSERT INTO members VALUES ('x', 2, 'new@x')", "members_pkey"),
            ("INSERT INTO members VALUES ('x', 9, 'ann@x')", "members_email_key"),
            ("INSERT INTO fees VALUES (1.50)", "fees_pkey"),
        ] {
            let err = client.simple_query(sql).await.expect_err("duplicate key");
            assert_eq!(err.code().map(|c| c.code()), Some("23505"), "{sql} {when}");
            let message = err.as_db_error().map(|e| e.message().to_string()).unwrap_or_default();
            assert!(message.contains(constraint), "{message} {when}");
        }
        let plan = query_text(&client, "EXPLAIN SELECT email FROM members WHERE id = 2").await;
        assert_eq!(plan[0][0], "Fast path: lookup index members_pkey on members (id = 2)", "{when}");
        assert_eq!(query_text(&client, "SELECT email FROM members WHERE id = 2").await, rows(&[&["bob@x"]]), "{when}");
        exec(&client, "INSERT INTO members VALUES ('z', 100, 'z@x'); DELETE FROM members WHERE id = 100").await;
    }
    let mut server = TestServer::start(2);
    {
        let client = server.connect().await;
        exec(
            &client,
            "CREATE TABLE members (team text, id integer PRIMARY KEY, email text UNIQUE);
             INSERT INTO members VALUES ('a', 1, 'ann@x'), ('b', 2, 'bob@x');
             CREATE TABLE fees (amount numeric PRIMARY KEY);
             INSERT INTO fees VALUES (1.5);
             CREATE TABLE visits (member_id integer, at integer);
             INSERT INTO visits VALUES (1, 10), (2, 20), (2, 30);
             CREATE MATERIALIZED VIEW visits_by_email AS
               SELECT m.email, count(*) AS n FROM visits v JOIN members m ON m.id = v.member_id GROUP BY m.email;",
        )
        .await;
    }
    check(&server, "before the restart").await;
    server.restart();
    check(&server, "after the restart").await;
    let client = server.connect().await;
    exec(&client, "INSERT INTO visits VALUES (1, 40); UPDATE members SET email = 'ann@y' WHERE id = 1").await;
    assert_eq!(
        query_text(&client, "SELECT email, n::text FROM visits_by_email ORDER BY 1").await,
        rows(&[&["ann@y", "2"], &["bob@x", "2"]])
    );
}
