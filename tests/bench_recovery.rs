//! Restart measurements behind docs/recovery.md (ignored: they take a few
//! minutes and print numbers rather than assert timings):
//!
//! - `restart_to_readable`: a materialized view over 1,000,000 rows,
//!   checkpointed, then SIGKILL and restart: the time until a serializable
//!   session reads the view (from its checkpoint) and until a strict
//!   serializable session reads it fresh; and the same without checkpoints.
//! - `chain_restart_to_fresh`: chains of 5 materialized views, each reading
//!   the one before, over 1,000,000 rows: restart-to-fresh of the whole
//!   chain with checkpoints (resumed, seeded, neither) and without, beside the
//!   rebuild time of each view alone (a server holding only that view, its
//!   inputs as tables with the same contents).
//!
//! Run: `cargo test --release --test bench_recovery -- --ignored --nocapture`
//! (`RIPPLE_BENCH_ROWS`, default 1000000; `RIPPLE_BENCH_REPEAT`, default 3:
//! each figure is the median of that many restarts).

mod common;

use common::{TestServer, query_text, try_query_text};
use futures::SinkExt;
use std::time::{Duration, Instant};

fn rows_wanted() -> usize {
    std::env::var("RIPPLE_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn repeat() -> usize {
    std::env::var("RIPPLE_BENCH_REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(3).max(1)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// Loads `text` (COPY text format) into `table`.
async fn copy_in(c: &tokio_postgres::Client, table: &str, text: String) {
    let sink = c.copy_in::<_, std::io::Cursor<Vec<u8>>>(&format!("COPY {table} FROM STDIN")).await.unwrap();
    futures::pin_mut!(sink);
    sink.send(std::io::Cursor::new(text.into_bytes())).await.unwrap();
    sink.finish().await.unwrap();
}

/// The contents of `relation` in COPY text format.
async fn copy_out(c: &tokio_postgres::Client, relation: &str) -> String {
    use futures::TryStreamExt;
    let stream = c.copy_out(&format!("COPY (SELECT * FROM {relation}) TO STDOUT")).await.unwrap();
    let parts: Vec<_> = stream.try_collect().await.unwrap();
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&p);
    }
    String::from_utf8(out).unwrap()
}

/// `k, v` rows for the base table.
fn base_rows(n: usize) -> String {
    let mut data = String::with_capacity(n * 16);
    for i in 0..n {
        data.push_str(&format!("{i}\t{}\n", (i * 7919) % 100_003));
    }
    data
}

/// One scalar of a query, as text.
async fn scalar(c: &tokio_postgres::Client, sql: &str) -> String {
    query_text(c, sql).await[0][0].clone()
}

/// Waits until every view in `views` has a checkpoint with as many rows as
/// the view holds now.
async fn wait_checkpointed(c: &tokio_postgres::Client, views: &[&str]) {
    let mut want = Vec::new();
    for v in views {
        want.push((v.to_string(), scalar(c, &format!("SELECT count(*) FROM {v}")).await));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let have = query_text(c, "SHOW CHECKPOINTS").await;
        if want.iter().all(|(v, n)| have.iter().any(|r| &r[0] == v && &r[2] == n)) {
            return;
        }
        assert!(Instant::now() < deadline, "checkpoints never caught up: want {want:?}, have {have:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls `sql` until it succeeds; returns the time since `t0`.
async fn until_ok(c: &tokio_postgres::Client, sql: &str, t0: Instant) -> Duration {
    loop {
        if try_query_text(c, sql).await.is_ok() {
            return t0.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Server-side: the largest `hydration_ms` of `SHOW HYDRATION` once every
/// view is hydrated.
async fn hydrated_ms(c: &tokio_postgres::Client) -> i64 {
    loop {
        let rows = query_text(c, "SHOW HYDRATION").await;
        if rows.iter().all(|r| r[1] == "hydrated") {
            return rows.iter().filter_map(|r| r[5].parse::<i64>().ok()).max().unwrap_or(0);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn restart_to_readable() {
    let n = rows_wanted();
    for checkpoints in [true, false] {
        let args: &[&str] = if checkpoints { &[] } else { &["--no-checkpoints"] };
        let mut server = TestServer::start_with(1, args);
        let c = server.connect().await;
        c.batch_execute("CREATE TABLE t (k int, v int)").await.unwrap();
        copy_in(&c, "t", base_rows(n)).await;
        c.batch_execute(
            "CREATE MATERIALIZED VIEW by_group AS SELECT k % 1000 AS g, count(*) AS n, sum(v) AS s FROM t GROUP BY k % 1000;
             CREATE MATERIALIZED VIEW evens AS SELECT k, v FROM t WHERE v % 2 = 0;",
        )
        .await
        .unwrap();
        let evens = scalar(&c, "SELECT count(*) FROM evens").await;
        if checkpoints {
            wait_checkpointed(&c, &["by_group", "evens"]).await;
        }
        let (mut readable, mut readable_big, mut fresh, mut server_side) = (vec![], vec![], vec![], vec![]);
        for _ in 0..repeat() {
            let t0 = Instant::now();
            server.restart();
            let c = server.connect().await;
            c.batch_execute("SET transaction_isolation = 'serializable'").await.unwrap();
            readable.push(until_ok(&c, "SELECT count(*) FROM by_group", t0).await);
            let got = query_text(&c, "SELECT count(*) FROM evens").await;
            readable_big.push(t0.elapsed());
            assert_eq!(got[0][0], evens, "the checkpoint of evens is its contents");
            c.batch_execute("SET transaction_isolation = 'strict serializable'").await.unwrap();
            assert_eq!(scalar(&c, "SELECT count(*) FROM evens").await, evens);
            fresh.push(t0.elapsed());
            server_side.push(Duration::from_millis(hydrated_ms(&c).await as u64));
            if checkpoints {
                wait_checkpointed(&c, &["by_group", "evens"]).await;
            }
        }
        println!(
            "{n} rows, {}: readable (1,000-row view) {}, readable (count of the {evens}-row view) {}, fresh {} (server: hydrated {} after open)",
            if checkpoints { "with checkpoints" } else { "without checkpoints" },
            ms(median(readable)),
            ms(median(readable_big)),
            ms(median(fresh)),
            ms(median(server_side)),
        );
    }
}

/// A chain of materialized views: (name, query, the columns of its output
/// as a table definition, for the single-view servers).
type Chain = [(&'static str, &'static str, &'static str); 5];

/// A funnel, the shape of a reporting pipeline: a projection of every row,
/// an aggregate over it, an aggregate of that, a join of the two, a total.
const FUNNEL: Chain = [
    ("v1", "SELECT k, v, k % 10000 AS g FROM t", "k int, v int, g int"),
    ("v2", "SELECT g, count(*) AS n, sum(v) AS s FROM v1 GROUP BY g", "g int, n bigint, s bigint"),
    ("v3", "SELECT g % 100 AS h, sum(n) AS n, max(s) AS m FROM v2 GROUP BY g % 100", "h int, n numeric, m bigint"),
    ("v4", "SELECT v2.g, v2.s, v3.m FROM v2 JOIN v3 ON v2.g % 100 = v3.h", "g int, s bigint, m bigint"),
    ("v5", "SELECT count(*) AS c, sum(s) AS total FROM v4 WHERE s * 2 > m", "c bigint, total numeric"),
];

/// Five views of the same size: each a filter and projection of every row
/// of the one before (the worst case: every link costs as much as the first).
const COPIES: Chain = [
    ("v1", "SELECT k, v + 1 AS v FROM t WHERE k >= 0", "k int, v int"),
    ("v2", "SELECT k, v + 1 AS v FROM v1 WHERE k >= 0", "k int, v int"),
    ("v3", "SELECT k, v + 1 AS v FROM v2 WHERE k >= 0", "k int, v int"),
    ("v4", "SELECT k, v + 1 AS v FROM v3 WHERE k >= 0", "k int, v int"),
    ("v5", "SELECT k, v + 1 AS v FROM v4 WHERE k >= 0", "k int, v int"),
];

/// The inputs of view `i` of a chain: the base table or earlier views.
fn inputs(chain: &Chain, i: usize) -> Vec<usize> {
    // Word-wise, so that `v1` does not match inside `v10`.
    let words: Vec<&str> = chain[i].1.split(|c: char| !c.is_alphanumeric()).collect();
    (0..i).filter(|j| words.contains(&chain[*j].0)).collect()
}

/// Restart-to-fresh of `server`'s chain: until a strict read of the last
/// view succeeds, and the server's own time to hydrate every view.
async fn restart_fresh(server: &mut TestServer, last: &str, want: &str) -> (Duration, Duration, Duration) {
    let t0 = Instant::now();
    server.restart();
    let c = server.connect().await;
    c.batch_execute("SET transaction_isolation = 'serializable'").await.unwrap();
    let readable = until_ok(&c, &format!("SELECT count(*) FROM {last}"), t0).await;
    c.batch_execute("SET transaction_isolation = 'strict serializable'").await.unwrap();
    let got = scalar(&c, &format!("SELECT count(*) FROM {last}")).await;
    let fresh = t0.elapsed();
    assert_eq!(got, want);
    let server_side = Duration::from_millis(hydrated_ms(&c).await as u64);
    (readable, fresh, server_side)
}

async fn measure_chain(label: &str, chain: &Chain) {
    let n = rows_wanted();
    let base = base_rows(n);
    let names: Vec<&str> = chain.iter().map(|v| v.0).collect();
    let last = names[4];
    let mut report = Vec::new();

    // The chain, with checkpoints: seeded (the default) and not.
    let mut server = TestServer::start(1);
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE t (k int, v int)").await.unwrap();
    copy_in(&c, "t", base.clone()).await;
    for (name, sql, _) in chain {
        c.batch_execute(&format!("CREATE MATERIALIZED VIEW {name} AS {sql}")).await.unwrap();
    }
    let want = scalar(&c, &format!("SELECT count(*) FROM {last}")).await;
    let mut contents = Vec::new();
    for name in &names {
        contents.push(copy_out(&c, name).await);
    }
    wait_checkpointed(&c, &names).await;
    let configs = [
        ("chain, checkpoints, resumed (default)", "true", "true"),
        ("chain, checkpoints, seeded, not resumed", "false", "true"),
        ("chain, checkpoints, neither", "false", "false"),
    ];
    for (what, resume, seed) in configs {
        server.set_args(&["--resume-from-checkpoints", resume, "--seed-from-checkpoints", seed]);
        let (mut readable, mut fresh, mut hydrated) = (vec![], vec![], vec![]);
        for _ in 0..repeat() {
            let (r, f, h) = restart_fresh(&mut server, last, &want).await;
            readable.push(r);
            fresh.push(f);
            hydrated.push(h);
            let c = server.connect().await;
            wait_checkpointed(&c, &names).await;
        }
        report.push((
            what.to_string(),
            Some(median(readable)),
            median(fresh),
            median(hydrated),
        ));
    }
    drop(server);

    // The chain without checkpoints.
    let mut server = TestServer::start_with(1, &["--no-checkpoints"]);
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE t (k int, v int)").await.unwrap();
    copy_in(&c, "t", base.clone()).await;
    for (name, sql, _) in chain {
        c.batch_execute(&format!("CREATE MATERIALIZED VIEW {name} AS {sql}")).await.unwrap();
    }
    let (mut fresh, mut hydrated) = (vec![], vec![]);
    for _ in 0..repeat() {
        let (_, f, h) = restart_fresh(&mut server, last, &want).await;
        fresh.push(f);
        hydrated.push(h);
    }
    report.push(("chain, no checkpoints".to_string(), None, median(fresh), median(hydrated)));
    drop(server);

    // Each view alone, its inputs as tables holding the same contents.
    let mut slowest = (Duration::ZERO, Duration::ZERO);
    for (i, (name, sql, _)) in chain.iter().enumerate() {
        let mut server = TestServer::start_with(1, &["--no-checkpoints"]);
        let c = server.connect().await;
        let ins = inputs(chain, i);
        if ins.is_empty() {
            c.batch_execute("CREATE TABLE t (k int, v int)").await.unwrap();
            copy_in(&c, "t", base.clone()).await;
        }
        for j in ins {
            let (input, _, columns) = chain[j];
            c.batch_execute(&format!("CREATE TABLE {input} ({columns})")).await.unwrap();
            copy_in(&c, input, contents[j].clone()).await;
        }
        c.batch_execute(&format!("CREATE MATERIALIZED VIEW {name} AS {sql}")).await.unwrap();
        let want = scalar(&c, &format!("SELECT count(*) FROM {name}")).await;
        let (mut fresh, mut hydrated) = (vec![], vec![]);
        for _ in 0..repeat() {
            let (_, f, h) = restart_fresh(&mut server, name, &want).await;
            fresh.push(f);
            hydrated.push(h);
        }
        let (f, h) = (median(fresh), median(hydrated));
        slowest = (slowest.0.max(f), slowest.1.max(h));
        report.push((format!("{name} alone"), None, f, h));
    }

    println!("\n{label} ({n} rows in t; medians of {} restarts)", repeat());
    println!("{:<34} {:>12} {:>12} {:>14}", "", "readable", "fresh", "hydrated (srv)");
    for (what, readable, fresh, hydrated) in &report {
        println!(
            "{:<34} {:>12} {:>12} {:>14}",
            what,
            readable.map(ms).unwrap_or_else(|| "-".into()),
            ms(*fresh),
            ms(*hydrated)
        );
    }
    for (what, _, fresh, hydrated) in report.iter().filter(|r| r.0.starts_with("chain")) {
        println!(
            "{what}: fresh / slowest single = {:.2}x (server-side hydration: {:.2}x)",
            fresh.as_secs_f64() / slowest.0.as_secs_f64(),
            hydrated.as_secs_f64() / slowest.1.as_secs_f64().max(1e-3)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn chain_restart_to_fresh() {
    measure_chain("funnel: projection, aggregate, aggregate, join, total", &FUNNEL).await;
    measure_chain("copies: five filters of every row", &COPIES).await;
}
