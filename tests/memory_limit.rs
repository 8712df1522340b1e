//! The memory limit (`--memory-limit`, `ripple::memory`): a statement or a
//! view that would take the server past it fails with 53200 and the server
//! goes on serving, instead of growing until the kernel kills it.
//!
//! Each test starts its own server with a small limit; none measures time.

mod common;

use common::{exec, query_text, TestServer};
use std::time::{Duration, Instant};

/// The limit the tests run under: far above what the server holds idle,
/// far below what the statements below would take.
const LIMIT: &str = "512MB";

fn start() -> TestServer {
    TestServer::start_with(1, &["--memory-limit", LIMIT])
}

/// The SQLSTATE and message of a failed statement.
async fn error_of(client: &tokio_postgres::Client, sql: &str) -> Option<(String, String)> {
    match client.simple_query(sql).await {
        Ok(_) => None,
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: not a server error: {e}"));
            Some((db.code().code().to_string(), db.message().to_string()))
        }
    }
}

/// Retries `sql` until it succeeds: reads fail while the server is over
/// its limit, and succeed again once what was stopped has been freed.
async fn eventually(client: &tokio_postgres::Client, sql: &str) -> Vec<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.simple_query(sql).await {
            Ok(_) => return query_text(client, sql).await,
            Err(e) if Instant::now() < deadline => {
                let code = e.as_db_error().map(|d| d.code().code().to_string());
                assert_eq!(code.as_deref(), Some("53200"), "{sql}: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{sql} still fails after 60 s: {e}"),
        }
    }
}

#[tokio::test]
async fn a_value_larger_than_the_limit_is_refused() {
    let server = start();
    let client = server.connect().await;
    let shown = query_text(&client, "SHOW memory_limit").await;
    assert_eq!(shown, vec![vec!["512MB".to_string()]]);

    let (code, message) = error_of(&client, "SELECT length(repeat('x', 900000000))").await.expect("refused");
    assert_eq!((code.as_str(), message.as_str()), ("53200", "out of memory"));
    let (code, _) = error_of(&client, "SELECT length(lpad('', 200000000, 'abc'))").await.expect("refused");
    assert_eq!(code, "53200");
    // Below the limit the same functions work, and the session goes on.
    assert_eq!(query_text(&client, "SELECT length(repeat('x', 1000000))").await, vec![vec!["1000000".to_string()]]);
    // Past Postgres's 1 GB limit for one value it stays 54000.
    let (code, _) = error_of(&client, "SELECT repeat('x', 2000000000)").await.expect("refused");
    assert_eq!(code, "54000");
}

/// A table `big` of 20,000 rows and a view `total` counting them, built
/// before the test goes over the limit (a view still being built then is
/// stopped).
async fn big_table_with_total(client: &tokio_postgres::Client) {
    exec(&client, "CREATE TABLE big (x int)").await;
    exec(&client, "INSERT INTO big SELECT g FROM generate_series(1, 20000) g").await;
    exec(&client, "CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n FROM big").await;
    assert_eq!(eventually(client, "SELECT n FROM total").await, vec![vec!["20000".to_string()]]);
}

#[tokio::test]
async fn a_query_that_outgrows_the_limit_fails_and_the_server_serves_on() {
    let server = start();
    let client = server.connect().await;
    big_table_with_total(&client).await;
    // 400 million distinct pairs: gigabytes in the dataflow's arrangements.
    let (code, message) = error_of(&client, "SELECT count(*) FROM (SELECT DISTINCT a.x, b.x FROM big a, big b) s")
        .await
        .expect("a query past the limit fails");
    assert_eq!((code.as_str(), message.as_str()), ("53200", "out of memory"));
    // The server is alive, its view intact and maintained.
    assert_eq!(eventually(&client, "SELECT n FROM total").await, vec![vec!["20000".to_string()]]);
    exec(&client, "INSERT INTO big VALUES (0)").await;
    assert_eq!(eventually(&client, "SELECT n FROM total").await, vec![vec!["20001".to_string()]]);
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

#[tokio::test]
async fn a_view_that_outgrows_the_limit_is_stopped_and_can_be_dropped() {
    let server = start();
    let client = server.connect().await;
    big_table_with_total(&client).await;

    exec(&client, "CREATE MATERIALIZED VIEW pairs AS SELECT a.x AS ax, b.x AS bx FROM big a, big b").await;
    exec(&client, "CREATE VIEW pair_count AS SELECT count(*) FROM pairs").await;
    // Read until the view is reported stopped (a read in flight while the
    // server is over its limit fails with 53200 too).
    let deadline = Instant::now() + Duration::from_secs(120);
    let stopped = loop {
        let (code, message) = error_of(&client, "SELECT count(*) FROM pairs").await.expect("pairs cannot be read");
        assert_eq!(code, "53200", "{message}");
        if message.contains("was stopped") {
            break message;
        }
        assert!(Instant::now() < deadline, "pairs was never stopped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        stopped,
        "materialized view \"pairs\" was stopped: the server reached its memory limit while it was being built"
    );
    // What reads it, and new views over it, fail the same way.
    let (code, message) = error_of(&client, "SELECT * FROM pair_count").await.expect("refused");
    assert_eq!((code.as_str(), message.contains("\"pairs\" was stopped")), ("53200", true), "{message}");
    let (code, _) = error_of(&client, "CREATE MATERIALIZED VIEW more AS SELECT ax FROM pairs").await.expect("refused");
    assert_eq!(code, "53200");

    // The complete view was not stopped, and is still maintained.
    exec(&client, "INSERT INTO big VALUES (0)").await;
    assert_eq!(eventually(&client, "SELECT n FROM total").await, vec![vec!["20001".to_string()]]);
    // The stopped view can be dropped (with what is built on it).
    exec(&client, "DROP MATERIALIZED VIEW pairs CASCADE").await;
    assert!(query_text(&client, "SELECT 1 FROM pg_matviews WHERE matviewname = 'pairs'").await.is_empty());
    // A view that fits is built as before.
    exec(&client, "CREATE MATERIALIZED VIEW small AS SELECT x % 10 AS k, count(*) AS n FROM big GROUP BY 1").await;
    assert_eq!(eventually(&client, "SELECT n FROM small WHERE k = 1").await, vec![vec!["2000".to_string()]]);
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

#[tokio::test]
async fn the_limit_is_read_as_a_size_a_share_or_none() {
    let server = TestServer::start_with(1, &["--memory-limit", "none"]);
    let client = server.connect().await;
    assert_eq!(query_text(&client, "SHOW memory_limit").await, vec![vec!["0".to_string()]]);
    drop(client);
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_ripple"))
        .args(["--memory-limit", "lots", "--data-dir"])
        .arg(server.data_dir())
        .output()
        .expect("run ripple");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid size \"lots\""), "{}", String::from_utf8_lossy(&bad.stderr));
}
