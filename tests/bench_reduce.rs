//! A reproducible measurement (not a test: it asserts results, never
//! timings) of what a change costs in a large group: over one group of
//! `RIPPLE_BENCH_ROWS` rows (default 200,000), the time to delete the
//! current minimum and then read a maintained `min(v)` view, and the same
//! for an `ORDER BY v LIMIT 10` view; a table without views gives the cost
//! of the DELETE alone (it reads the whole table to find its rows).
//!
//! ```text
//! cargo test --release --test bench_reduce -- --ignored --nocapture
//! ```
//!
//! `RIPPLE_BENCH_SERVER=<connection string>` measures a running server
//! instead of starting one (for example a build of another branch);
//! `RIPPLE_BENCH_WORKERS` sets the started server's workers (default 1).

mod common;

use common::TestServer;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

const DELETES: i64 = 15;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let msgs = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Loads `n` rows `(1, 0..n)` into a new table, creates `view` on it (if
/// any), then deletes the current minimum `DELETES` times, reading the view
/// after each delete and checking that `check(i)` is its first value.
async fn scenario(client: &Client, name: &str, n: i64, view: Option<&str>, check: fn(i64) -> String) {
    let table = format!("bench_{name}");
    client.batch_execute(&format!("CREATE TABLE {table} (g integer, v integer)")).await.expect("create table");
    let batch = 5_000;
    let mut start = 0;
    while start < n {
        let end = (start + batch).min(n);
        let values: Vec<String> = (start..end).map(|v| format!("(1, {v})")).collect();
        client.batch_execute(&format!("INSERT INTO {table} VALUES {}", values.join(","))).await.expect("insert");
        start = end;
    }
    let view_name = format!("{table}_view");
    if let Some(v) = view {
        let t = Instant::now();
        client.batch_execute(&format!("CREATE MATERIALIZED VIEW {view_name} AS {}", v.replace("$T", &table))).await.expect("view");
        let first = rows(client, &format!("SELECT * FROM {view_name}")).await;
        eprintln!("{name}: view built and read in {}", ms(t.elapsed()));
        assert!(!first.is_empty());
    }
    let (mut deletes, mut reads) = (Vec::new(), Vec::new());
    for i in 0..DELETES {
        let t0 = Instant::now();
        client.batch_execute(&format!("DELETE FROM {table} WHERE v = {i}")).await.expect("delete");
        let t1 = Instant::now();
        deletes.push(t1 - t0);
        if view.is_some() {
            let got = rows(client, &format!("SELECT * FROM {view_name}")).await;
            reads.push(t1.elapsed());
            let values: Vec<String> = got.iter().map(|r| r.last().cloned().flatten().unwrap_or_default()).collect();
            assert!(values.contains(&check(i)), "{name} after deleting {i}: {values:?}");
        }
    }
    // Inserting a new minimum: no table scan, so the read is the view's
    // maintenance (a plain reduce re-reads the group for inserts too).
    let (mut inserts, mut insert_reads) = (Vec::new(), Vec::new());
    for i in 1..=DELETES {
        let t0 = Instant::now();
        client.batch_execute(&format!("INSERT INTO {table} VALUES (1, {})", -i)).await.expect("insert");
        let t1 = Instant::now();
        inserts.push(t1 - t0);
        if view.is_some() {
            let got = rows(client, &format!("SELECT * FROM {view_name}")).await;
            insert_reads.push(t1.elapsed());
            let values: Vec<String> = got.iter().map(|r| r.last().cloned().flatten().unwrap_or_default()).collect();
            assert!(values.contains(&(-i).to_string()), "{name} after inserting {}: {values:?}", -i);
        }
    }
    let line = |op: &str, writes: Vec<Duration>, reads: Vec<Duration>| {
        if reads.is_empty() {
            format!("{op} {}", ms(median(writes)))
        } else {
            let (w, r) = (median(writes), median(reads));
            format!("{op} {} + read view {} = {}", ms(w), ms(r), ms(w + r))
        }
    };
    eprintln!("{name}: {n} rows in one group, median of {DELETES}: {}", line("delete the minimum:", deletes, reads));
    eprintln!("{name}: {n} rows in one group, median of {DELETES}: {}", line("insert a new minimum:", inserts, insert_reads));
    if view.is_some() {
        client.batch_execute(&format!("DROP MATERIALIZED VIEW {view_name}")).await.expect("drop view");
    }
    client.batch_execute(&format!("DROP TABLE {table}")).await.expect("drop table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn delete_the_minimum_of_a_large_group() {
    let n: i64 = env_or("RIPPLE_BENCH_ROWS", 200_000);
    let (conn_str, _server) = match std::env::var("RIPPLE_BENCH_SERVER") {
        Ok(s) => (s, None),
        Err(_) => {
            let workers = env_or("RIPPLE_BENCH_WORKERS", 1);
            let server = tokio::task::spawn_blocking(move || TestServer::start(workers)).await.expect("start server");
            (server.conn_str(), Some(server))
        }
    };
    let (client, connection) = tokio_postgres::connect(&conn_str, NoTls).await.expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    scenario(&client, "no_view", n, None, |_| String::new()).await;
    // After deleting 0..=i, the minimum is i + 1.
    scenario(&client, "min", n, Some("SELECT g, min(v) FROM $T GROUP BY g"), |i| (i + 1).to_string()).await;
    scenario(&client, "top10", n, Some("SELECT v FROM $T ORDER BY v LIMIT 10"), |i| (i + 1).to_string()).await;
}
