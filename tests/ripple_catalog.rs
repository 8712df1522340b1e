//! `ripple_catalog` with a workload running (the relations themselves are
//! checked in `test/sqllogic/ripple_catalog.slt`): another connection's
//! session, its statement and state as it runs, waits in a transaction
//! block and goes; the records and freshness of a materialized view and
//! its table after writes from several connections.

mod common;

use common::{exec, query_text, TestServer};
use std::time::{Duration, Instant};

/// `sql`'s rows, asked again until `done` holds of them (or 20 s pass).
async fn eventually(client: &tokio_postgres::Client, sql: &str, done: impl Fn(&[Vec<String>]) -> bool) -> Vec<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rows = query_text(client, sql).await;
        if done(&rows) || Instant::now() > deadline {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const OTHER: &str = "SELECT state, query, xact_start IS NOT NULL FROM ripple_catalog.sessions WHERE application_name = 'rc-other'";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_show_what_other_connections_run() {
    let server = TestServer::start(2);
    let watcher = server.connect().await;
    let other = server.connect().await;
    exec(&other, "SET application_name = 'rc-other'").await;
    exec(&watcher, "CREATE TABLE rc_k (id int PRIMARY KEY, v int); INSERT INTO rc_k VALUES (1, 1)").await;

    // Idle in a transaction block, with the last statement it ran.
    exec(&other, "BEGIN").await;
    query_text(&other, "SELECT 42 AS answer").await;
    let rows = query_text(&watcher, OTHER).await;
    assert_eq!(rows, vec![vec!["idle in transaction".to_string(), "SELECT 42 AS answer".into(), "t".into()]]);

    // Running: a write that waits for the key lock the block holds.
    exec(&other, "UPDATE rc_k SET v = 5 WHERE id = 1").await;
    let third = server.connect().await;
    exec(&third, "SET application_name = 'rc-third'").await;
    let waiting = tokio::spawn(async move {
        let r = third.batch_execute("UPDATE rc_k SET v = 6 WHERE id = 1").await;
        (third, r)
    });
    let sql = "SELECT state, query FROM ripple_catalog.sessions WHERE application_name = 'rc-third'";
    let rows = eventually(&watcher, sql, |r| r.first().is_some_and(|row| row[0] == "active")).await;
    assert_eq!(rows, vec![vec!["active".to_string(), "UPDATE rc_k SET v = 6 WHERE id = 1".into()]]);
    // Another connection's running statement joins with what it reads.
    let rows = query_text(
        &watcher,
        "SELECT s.state FROM ripple_catalog.sessions s WHERE s.application_name = 'rc-third' \
         AND EXISTS (SELECT 1 FROM pg_class c WHERE s.query LIKE '%' || c.relname || '%' AND c.relname = 'rc_k')",
    )
    .await;
    assert_eq!(rows, vec![vec!["active".to_string()]]);

    exec(&other, "ROLLBACK").await;
    let (third, r) = waiting.await.unwrap();
    r.unwrap();
    let rows = query_text(&watcher, OTHER).await;
    assert_eq!(rows, vec![vec!["idle".to_string(), "ROLLBACK".into(), "f".into()]]);
    let rows = query_text(&watcher, "SELECT state FROM ripple_catalog.sessions WHERE application_name = 'rc-third'").await;
    assert_eq!(rows, vec![vec!["idle".to_string()]]);

    // A connection that ends is no longer listed.
    drop(third);
    drop(other);
    let rows = eventually(&watcher, "SELECT count(*) FROM ripple_catalog.sessions", |r| r == [vec!["1".to_string()]]).await;
    assert_eq!(rows, vec![vec!["1".to_string()]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sizes_and_freshness_follow_writes() {
    let server = TestServer::start(2);
    let setup = server.connect().await;
    exec(
        &setup,
        "CREATE TABLE rc_w (k int, v int);
         CREATE MATERIALIZED VIEW rc_by_k AS SELECT k % 10 AS g, sum(v) AS total FROM rc_w GROUP BY k % 10;",
    )
    .await;
    let mut writers = Vec::new();
    for w in 0..3 {
        let c = server.connect().await;
        writers.push(tokio::spawn(async move {
            for i in 0..20 {
                let k = w * 100 + i;
                c.batch_execute(&format!("INSERT INTO rc_w VALUES ({k}, 1)")).await.unwrap();
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    // A read waits for the writes; what the relations report then holds them.
    assert_eq!(query_text(&setup, "SELECT sum(total) FROM rc_by_k").await, vec![vec!["60".to_string()]]);
    let rows = query_text(
        &setup,
        "SELECT records FROM ripple_catalog.arrangement_sizes WHERE object = 'rc_w' AND exported",
    )
    .await;
    assert_eq!(rows, vec![vec!["60".to_string()]]);
    // Prepared (extended protocol, parameters, run again and again): current
    // on every run, never a plan kept with the rows of an earlier one.
    let prepared = setup
        .prepare("SELECT records FROM ripple_catalog.arrangement_sizes WHERE object = $1 AND exported")
        .await
        .unwrap();
    for expected in [60i64, 60, 61, 62] {
        if expected > 60 {
            exec(&setup, &format!("INSERT INTO rc_w VALUES ({expected}, 1)")).await;
            query_text(&setup, "SELECT sum(total) FROM rc_by_k").await;
        }
        let rows = setup.query(&prepared, &[&"rc_w"]).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(), vec![expected]);
    }
    let rows = query_text(
        &setup,
        "SELECT records >= 10, bytes > 0 FROM ripple_catalog.arrangement_sizes WHERE object = 'rc_by_k' AND exported",
    )
    .await;
    assert_eq!(rows, vec![vec!["t".to_string(), "t".into()]]);
    // The view can be read at the durable timestamp: no lag once settled.
    let rows = eventually(
        &setup,
        "SELECT lag_ms, readable_at >= durable_at FROM ripple_catalog.frontiers WHERE object = 'rc_by_k'",
        |r| r.first().is_some_and(|row| row[0] == "0"),
    )
    .await;
    assert_eq!(rows, vec![vec!["0".to_string(), "t".into()]]);
    let rows = query_text(
        &setup,
        "SELECT h.state, h.rows >= 10, f.lag_ms = h.freshness_lag_ms FROM ripple_catalog.hydration h \
         JOIN ripple_catalog.frontiers f ON f.object = h.view WHERE h.view = 'rc_by_k'",
    )
    .await;
    assert_eq!(rows, vec![vec!["hydrated".to_string(), "t".into(), "t".into()]]);
}
