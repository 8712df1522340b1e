//! Commit throughput and latency with 1, 8 and 64 concurrent clients, each
//! committing single-row INSERTs as fast as it can for a few seconds (group
//! commit gathers concurrent commits into one RocksDB batch and one fsync).
//! Two materialized views read the table (a count per client, and a copy
//! of every row, which the checkpointer writes as deltas every 2 s).
//!
//! Run: `cargo test --release --test bench_commit -- --ignored --nocapture`
//! (env `RIPPLE_BENCH_SECS`, default 5; `RIPPLE_BENCH_CLIENTS`, default
//! `1,8,64`; `RIPPLE_BENCH_ARGS="--no-checkpoints"` for the server without
//! the checkpointer). Prints commits/s and p50/p99 commit latency per
//! client count.

mod common;

use common::TestServer;
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn bench_commits() {
    let secs: u64 = std::env::var("RIPPLE_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let clients: Vec<usize> = std::env::var("RIPPLE_BENCH_CLIENTS")
        .unwrap_or_else(|_| "1,8,64".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    // `RIPPLE_BENCH_ARGS`: more server arguments, e.g. `--no-checkpoints`
    // to measure commits without the checkpointer.
    let args = std::env::var("RIPPLE_BENCH_ARGS").unwrap_or_default();
    let args: Vec<&str> = args.split_whitespace().collect();
    let server = TestServer::start_with(1, &args);
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE bench (client int, n int, payload text); CREATE MATERIALIZED VIEW bench_count AS SELECT client, count(*) FROM bench GROUP BY client; CREATE MATERIALIZED VIEW bench_rows AS SELECT client, n FROM bench")
        .await
        .unwrap();
    println!("{:>8} {:>10} {:>12} {:>10} {:>10}", "clients", "commits", "commits/s", "p50 ms", "p99 ms");
    for (round, &n) in clients.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for client in 0..n {
            let conn = server.connect().await;
            let id = (round * 1000 + client) as i64;
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut i = 0;
                while Instant::now() < deadline {
                    let t = Instant::now();
                    conn.batch_execute(&format!("INSERT INTO bench VALUES ({id}, {i}, 'x')")).await.unwrap();
                    lat.push(t.elapsed());
                    i += 1;
                }
                lat
            }));
        }
        let start = Instant::now();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        let elapsed = start.elapsed().as_secs_f64();
        all.sort();
        println!(
            "{:>8} {:>10} {:>12.0} {:>10.2} {:>10.2}",
            n,
            all.len(),
            all.len() as f64 / elapsed,
            percentile(&all, 0.5).as_secs_f64() * 1e3,
            percentile(&all, 0.99).as_secs_f64() * 1e3
        );
    }
}
