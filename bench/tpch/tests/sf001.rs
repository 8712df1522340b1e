//! TPC-H at scale factor 0.01 on a real ripple server, as part of
//! `cargo test --release --workspace`: generate the data, load it, create
//! the 22 queries as materialized views and compare each with the
//! reference answer; then stream `orders` and `lineitem` from empty in
//! transactions of 1,000 rows with all 22 views maintained, retract the
//! first 10% of the orders with their line items, insert them again, and
//! compare every view with the answer once more. Once with the workers
//! in the server's process, once in a two-process compute cluster.
//!
//! Uses the `ripple` binary of the same target directory (built by the
//! workspace's test run; `RIPPLE_BIN` overrides) and `../shared/tpch`
//! (`RIPPLE_TPCH_DIR` overrides).

use ripple_tpch::stream::Mode;
use ripple_tpch::{Config, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_sf001_views_equal_the_answers_after_load_and_after_streaming() {
    check(None).await;
}

/// The same with the server's workers in two `ripple compute` processes
/// on loopback (one worker each): the answers are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_sf001_on_a_two_process_cluster() {
    check(Some(2)).await;
}

async fn check(cluster_processes: Option<usize>) {
    let mut config = Config::new("0.01");
    config.cluster_processes = cluster_processes;
    if let Some(dir) = std::env::var_os("RIPPLE_TPCH_DIR") {
        config.tpch_dir = dir.into();
    }
    config.batches = vec![1000];
    config.modes = vec![Mode::All];
    let report = match run(&config).await {
        Ok(r) => r,
        Err(e) => panic!("the TPC-H harness failed: {e:#}"),
    };
    println!("{}", report.table());
    // Every query has an answer at SF 0.01: 22 checks after load, 22 after
    // the stream.
    assert_eq!(report.checks(), 44, "every view is compared after load and after the stream");
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{} views differ from the reference answers:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|(when, o)| format!("q{:02} {when}:\n{}", o.query, o.diff.as_deref().unwrap_or("")))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let stream = &report.streams[0];
    assert!(stream.transactions > 0);
    let q1 = stream.queries.iter().find(|q| q.query == 1).expect("q01 streamed");
    assert!(q1.tuples_per_sec.is_some_and(|r| r > 0.0), "q01 has a rate");
    assert!(q1.latency.is_some(), "q01 has latencies");
}
