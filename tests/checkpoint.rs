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

/// One text value of a query's first row.
async fn value(c: &tokio_postgres::Client, sql: &str) -> String {
    for m in c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap_or("NULL").to_string();
        }
    }
    panic!("{sql}: no rows")
}

/// `SHOW HYDRATION`'s state of `view`.
async fn hydration(c: &tokio_postgres::Client, view: &str) -> String {
    for m in c.simple_query("SHOW HYDRATION").await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            if r.get(0) == Some(view) {
                return r.get(1).unwrap().to_string();
            }
        }
    }
    panic!("{view} not in SHOW HYDRATION")
}

/// After a restart, a serializable session reads a view that is still
/// being rebuilt from its checkpoint (the view as of the checkpoint's
/// frontier), at once; a strict-serializable session waits and reads it
/// fresh. Run with and without seeding views from their checkpoints.
async fn checkpoints_are_served_while_views_rebuild(seed: &str) {
    use futures::SinkExt;
    let mut server = TestServer::start_with(1, &["--seed-from-checkpoints", seed]);
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (k int, v int);
         CREATE MATERIALIZED VIEW groups AS SELECT k % 100 AS g, count(*) AS n, sum(v) AS s FROM t GROUP BY k % 100;
         CREATE MATERIALIZED VIEW total AS SELECT count(*) AS groups, sum(n) AS n FROM groups;
         CREATE MATERIALIZED VIEW rows_of AS SELECT k, v FROM t WHERE v % 2 = 0;",
    )
    .await
    .unwrap();
    // Enough rows that the rebuild takes a while on one worker.
    let rows = 400_000;
    let mut data = String::new();
    for i in 0..rows {
        data.push_str(&format!("{i}\t{}\n", i % 1000));
    }
    let sink = c.copy_in::<_, std::io::Cursor<Vec<u8>>>("COPY t FROM STDIN").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(std::io::Cursor::new(data.into_bytes())).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), rows);
    wait_for(&c, "total", 1, 0).await;
    wait_for(&c, "groups", 100, 0).await;
    let f_rows = wait_for(&c, "rows_of", rows as i64 / 2, 0).await;
    // A write the checkpoints may not have seen: a 101st group (-1).
    c.batch_execute("INSERT INTO t VALUES (-1, 1)").await.unwrap();
    server.restart();
    let c = server.connect().await;
    c.batch_execute("SET transaction_isolation = 'serializable'").await.unwrap();
    let before = hydration(&c, "groups").await;
    let served = value(&c, "SELECT count(*) FROM groups").await;
    let total = value(&c, "SELECT groups FROM total").await;
    let evens = value(&c, "SELECT count(*) FROM rows_of WHERE k < 1000").await;
    let after = hydration(&c, "groups").await;
    let lineage = checkpoints(&c).await;
    let ckpt_groups = lineage.iter().find(|l| l.0 == "groups").unwrap().2;
    eprintln!("hydration before {before:?} after {after:?}; served {served} total {total}; checkpoint rows {ckpt_groups}");
    // The server accepts connections while checkpoints are still being
    // read (seeded views read theirs at start), so either state says the
    // rebuild is not done; reads in "loading checkpoint" wait for the load.
    assert!(
        before == "serving checkpoint" || before == "loading checkpoint",
        "the rebuild of 400,000 rows was already done: {before}\n{}",
        server.stderr_tail()
    );
    // Either both reads came from the checkpoints, which agree with each
    // other (the 101st group may or may not be in them), or the views were
    // hydrated in between and both are fresh.
    let fresh = "101".to_string();
    if after == "serving checkpoint" {
        assert_eq!(served, ckpt_groups.to_string());
        assert_eq!(total, ckpt_groups.to_string());
    } else {
        assert!(served == ckpt_groups.to_string() || served == fresh, "served {served}");
        assert!(total == ckpt_groups.to_string() || total == fresh, "total {total}");
    }
    assert_eq!(evens, "500");
    // Strict serializable: fresh, with the last write.
    c.batch_execute("SET transaction_isolation = 'strict serializable'").await.unwrap();
    assert_eq!(value(&c, "SELECT count(*) FROM groups").await, "101");
    assert_eq!(value(&c, "SELECT groups FROM total").await, "101");
    assert_eq!(value(&c, "SELECT count(*) FROM rows_of").await, (rows / 2).to_string());
    // SHOW HYDRATION follows the workers' frontiers by polling them (every
    // 10 ms), so it may say "hydrated" a moment after a fresh read.
    let mut state = hydration(&c, "groups").await;
    for _ in 0..500 {
        if state == "hydrated" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        state = hydration(&c, "groups").await;
    }
    assert_eq!(state, "hydrated");
    // Writes work after recovery, and the views keep up.
    c.batch_execute("DELETE FROM t WHERE k = -1").await.unwrap();
    assert_eq!(value(&c, "SELECT count(*) FROM groups").await, "100");
    assert!(f_rows > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_are_served_while_views_rebuild_seeded() {
    checkpoints_are_served_while_views_rebuild("true").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_are_served_while_views_rebuild_unseeded() {
    checkpoints_are_served_while_views_rebuild("false").await;
}

/// Many checkpoints in a row: the first, whole, is written in chunks of
/// about 4 KiB per worker (dozens of them); each later one writes only the
/// changes since the previous one (read from the arrangement's recent
/// batches), and the lineage's row count, the sum of every chunk and delta
/// written, keeps equal to the view's; after a restart the served
/// checkpoint is the view's contents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successive_deltas_add_up_to_the_view() {
    let mut server = TestServer::start_with(2, &["--seed-from-checkpoints", "false", "--checkpoint-chunk-bytes", "4096"]);
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (k int, v int);
         CREATE MATERIALIZED VIEW w AS SELECT k, v FROM t WHERE v % 3 <> 0;",
    )
    .await
    .unwrap();
    let values: Vec<String> = (0..20_000).map(|i| format!("({i}, {i})")).collect();
    c.batch_execute(&format!("INSERT INTO t VALUES {}", values.join(", "))).await.unwrap();
    let mut after = 0;
    for round in 0..4 {
        // Small changes to a large view: inserts, deletes and updates.
        c.batch_execute(&format!(
            "INSERT INTO t VALUES ({n}, 1), ({n1}, 2), ({n2}, 3);
             DELETE FROM t WHERE k < {d};
             UPDATE t SET v = v + 1 WHERE k BETWEEN 1000 AND 1010;",
            n = 100_000 + round * 3,
            n1 = 100_001 + round * 3,
            n2 = 100_002 + round * 3,
            d = (round + 1) * 50,
        ))
        .await
        .unwrap();
        let n: i64 = value(&c, "SELECT count(*) FROM w").await.parse().unwrap();
        after = wait_for(&c, "w", n, after).await;
    }
    let expect = common::query_sorted(&c, "SELECT k, v FROM w").await;
    server.restart();
    let c = server.connect().await;
    c.batch_execute("SET transaction_isolation = 'serializable'").await.unwrap();
    assert_eq!(common::query_sorted(&c, "SELECT k, v FROM w").await, expect);
    c.batch_execute("SET transaction_isolation = 'strict serializable'").await.unwrap();
    assert_eq!(common::query_sorted(&c, "SELECT k, v FROM w").await, expect);
}

/// Every text cell of `SHOW ARRANGEMENTS`, one string per row.
async fn arrangements(c: &tokio_postgres::Client) -> Vec<String> {
    common::query_text(c, "SHOW ARRANGEMENTS").await.into_iter().map(|r| r.join(" | ")).collect()
}

/// Views with linear queries resume from their checkpoints after a restart
/// (their output starts as the checkpoint; their dataflows read only what
/// changed since), through chains of such views and beside views that are
/// rebuilt; writes made after the checkpoints, and after the restart, show
/// up exactly once; turning resumption off gives the same contents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_views_resume_from_their_checkpoints() {
    let mut server = TestServer::start_with(1, &["--checkpoint-chunk-bytes", "8192"]);
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE t (k int, v int);
         CREATE TABLE u (k int);
         CREATE MATERIALIZED VIEW v1 AS SELECT k, v + 1 AS v FROM t WHERE k >= 0;
         CREATE MATERIALIZED VIEW v2 AS SELECT k, v * 2 AS v FROM v1 WHERE v % 3 <> 0;
         CREATE MATERIALIZED VIEW v3 AS SELECT k, v FROM v2 UNION ALL SELECT k, 0 - k FROM u;
         CREATE MATERIALIZED VIEW agg AS SELECT count(*) AS n, sum(v) AS s FROM v2;
         CREATE MATERIALIZED VIEW v4 AS SELECT n, s FROM agg WHERE n > 0;",
    )
    .await
    .unwrap();
    let values: Vec<String> = (-50..5000).map(|i| format!("({i}, {})", i % 97)).collect();
    c.batch_execute(&format!("INSERT INTO t VALUES {}", values.join(", "))).await.unwrap();
    c.batch_execute("INSERT INTO u SELECT k FROM t WHERE k < 10").await.unwrap();
    for v in ["v1", "v2", "v3"] {
        let n: i64 = value(&c, &format!("SELECT count(*) FROM {v}")).await.parse().unwrap();
        wait_for(&c, v, n, 0).await;
    }
    // Writes the checkpoints do not hold: no checkpointer from here on.
    server.set_args(&["--no-checkpoints", "--checkpoint-chunk-bytes", "8192"]);
    server.restart();
    let c = server.connect().await;
    c.batch_execute(
        "INSERT INTO t VALUES (7000, 1), (7001, 2), (-7, 3);
         DELETE FROM t WHERE k BETWEEN 100 AND 199;
         UPDATE t SET v = v + 1 WHERE k BETWEEN 300 AND 320;
         INSERT INTO u VALUES (42);",
    )
    .await
    .unwrap();
    server.restart();
    let c = server.connect().await;
    let state = hydration(&c, "v2").await;
    assert!(state == "resuming" || state == "hydrated", "v2 is {state}");
    let built = arrangements(&c).await;
    // v4 resumes over agg, a reduction rebuilt from v2's checkpoint and
    // changes: its history after that checkpoint is as real as v2's.
    for v in ["v1", "v2", "v3", "v4"] {
        let needle = format!("resumed from the checkpoint of {v} at");
        assert!(built.iter().any(|a| a.contains(&needle)), "{v} was not resumed:\n{}", built.join("\n"));
    }
    assert!(!built.iter().any(|a| a.contains("resumed from the checkpoint of agg")), "{}", built.join("\n"));
    let same = |view: &'static str, query: &'static str| {
        let c = &c;
        async move {
            assert_eq!(
                common::query_sorted(c, &format!("SELECT * FROM {view}")).await,
                common::query_sorted(c, query).await,
                "{view} differs from its query recomputed"
            );
        }
    };
    let q1 = "SELECT k, v + 1 FROM t WHERE k >= 0";
    let q2 = "SELECT k, (v + 1) * 2 FROM t WHERE k >= 0 AND (v + 1) % 3 <> 0";
    let q3 = "SELECT k, (v + 1) * 2 FROM t WHERE k >= 0 AND (v + 1) % 3 <> 0 UNION ALL SELECT k, 0 - k FROM u";
    let q4 = "SELECT count(*), sum((v + 1) * 2) FROM t WHERE k >= 0 AND (v + 1) % 3 <> 0";
    same("v1", q1).await;
    same("v2", q2).await;
    same("v3", q3).await;
    same("agg", q4).await;
    same("v4", q4).await;
    // The views keep up with writes after the restart.
    c.batch_execute("DELETE FROM t WHERE k < 50; INSERT INTO t VALUES (9000, 9); DELETE FROM u WHERE k = 42")
        .await
        .unwrap();
    same("v1", q1).await;
    same("v3", q3).await;
    same("v4", q4).await;
    // Rebuilt instead of resumed: the same contents.
    server.set_args(&["--no-checkpoints", "--resume-from-checkpoints", "false"]);
    server.restart();
    let c = server.connect().await;
    assert!(!arrangements(&c).await.iter().any(|a| a.contains("resumed from")));
    for (view, query) in [("v1", q1), ("v2", q2), ("v3", q3), ("v4", q4)] {
        assert_eq!(
            common::query_sorted(&c, &format!("SELECT * FROM {view}")).await,
            common::query_sorted(&c, query).await,
            "{view} differs after a rebuild"
        );
    }
}
