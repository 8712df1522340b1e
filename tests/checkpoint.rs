//! Checkpoints of materialized views: the background checkpointer writes
//! each view's output with its lineage (inputs, frontier, rows), first whole
//! and then as the changes since the previous checkpoint; the lineage
//! survives a kill -9; a dropped view's checkpoint goes with it.

mod common;

use common::TestServer;
use std::time::{Duration, Instant};

/// `SHOW CHECKPOINTS` as (view, frontier, rows, inputs).
async fn checkpoints(c: &tokio_postgres::Client) -> Vec<(String, i64, i64, String)> {
    let mut out = Vec::new();
    for m in c.simple_query("SHOW CHECKPOINTS").await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            let num = |i| r.get(i).unwrap_or("0").parse::<i64>().unwrap();
            out.push((r.get(0).unwrap().to_string(), num(1), num(2), r.get(4).unwrap_or("").to_string()));
        }
    }
    out
}

/// Waits until `view`'s checkpoint holds `rows` rows with a frontier after
/// `after`; returns its frontier.
async fn wait_for(c: &tokio_postgres::Client, view: &str, rows: i64, after: i64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = checkpoints(c).await;
        if let Some((_, frontier, n, _)) = all.iter().find(|(v, ..)| v == view) {
            if *n == rows && *frontier > after {
                return *frontier;
            }
        }
        assert!(Instant::now() < deadline, "no checkpoint of {view} with {rows} rows after {after}: {all:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_are_checkpointed_with_lineage_and_survive_restart() {
    let mut server = TestServer::start(2);
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (k int, v int);
         CREATE MATERIALIZED VIEW by_k AS SELECT k, sum(v) AS s FROM t GROUP BY k;
         CREATE MATERIALIZED VIEW big AS SELECT k FROM by_k WHERE s > 10;",
    )
    .await
    .unwrap();
    let values: Vec<String> = (0..100).map(|i| format!("({}, {})", i % 20, i)).collect();
    c.batch_execute(&format!("INSERT INTO t VALUES {}", values.join(", "))).await.unwrap();
    let f1 = wait_for(&c, "by_k", 20, 0).await;
    // k = 0..19 with sums 0+20+40+60+80 + 5k: all but k = 0 exceed 10.
    let _ = wait_for(&c, "big", 20, 0).await;
    let all = checkpoints(&c).await;
    let by_k = all.iter().find(|(v, ..)| v == "by_k").unwrap();
    assert_eq!(by_k.3, "t", "lineage names the input");
    let big = all.iter().find(|(v, ..)| v == "big").unwrap();
    assert_eq!(big.3, "by_k");
    // Changes: the next checkpoint is a delta on top of the first.
    c.batch_execute("DELETE FROM t WHERE k >= 15").await.unwrap();
    let f2 = wait_for(&c, "by_k", 15, f1).await;
    assert!(f2 > f1);
    server.restart();
    let c = server.connect().await;
    let all = checkpoints(&c).await;
    let by_k = all.iter().find(|(v, ..)| v == "by_k").expect("lineage survives restart");
    assert_eq!((by_k.1, by_k.2), (f2, 15));
    // After restart the first checkpoint is whole again, and correct.
    c.batch_execute("INSERT INTO t VALUES (100, 1)").await.unwrap();
    wait_for(&c, "by_k", 16, f2).await;
    c.batch_execute("DROP MATERIALIZED VIEW big").await.unwrap();
    assert!(checkpoints(&c).await.iter().all(|(v, ..)| v != "big"));
    server.restart();
    let c = server.connect().await;
    assert!(checkpoints(&c).await.iter().all(|(v, ..)| v != "big"), "a dropped view's lineage came back");
}
