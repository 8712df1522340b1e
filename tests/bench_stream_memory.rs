//! The server's memory while large results and long subscriptions stream
//! to clients that read slowly, pause or leave (ignored: they take minutes
//! and print figures rather than assert them; docs/tpch-results.md and
//! the closing notes quote them):
//!
//! - `select_10m_rows`: a table of 10,000,000 rows (`RIPPLE_BENCH_ROWS`);
//!   the server's RSS before, and its peak while one client reads the
//!   whole `SELECT *` through the extended protocol, one through
//!   `COPY (SELECT *) TO STDOUT`, one reads 1,000 rows and pauses 10 s
//!   before reading the rest, and one reads 1,000 rows and disconnects.
//! - `subscribe_under_churn`: a `SUBSCRIBE` of a 100,000-row table while
//!   16 writers update 100 rows per transaction at 10,000 changes/s in
//!   all (`RIPPLE_BENCH_SECS`, default 600 s), the subscriber reading for
//!   50 s and pausing for 10 s in turn; the server's RSS every 10 s, its
//!   peak, and the changes received.
//!
//! Run: `cargo test --release --test bench_stream_memory -- --ignored --nocapture`

mod common;

use common::{exec, query_text, PeakRss, TestServer};
use futures::{pin_mut, StreamExt, TryStreamExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}


fn mb(kib: u64) -> String {
    format!("{:.0} MB", kib as f64 / 1024.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn select_10m_rows() {
    let rows = env_or("RIPPLE_BENCH_ROWS", 10_000_000) as i64;
    let server = TestServer::start(1);
    let pid = server.pid().expect("pid");
    let rss = || common::proc_status_kib(pid, "VmRSS").expect("VmRSS");
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k bigint, v text)").await;
    let loading = Instant::now();
    let step = 1_000_000i64;
    let mut at = 1;
    while at <= rows {
        let end = (at + step - 1).min(rows);
        exec(&client, &format!("INSERT INTO t SELECT g, 'row number ' || g FROM generate_series({at}, {end}) g")).await;
        at = end + 1;
    }
    assert_eq!(query_text(&client, "SELECT count(*) FROM t").await, vec![vec![rows.to_string()]]);
    eprintln!("loaded {rows} rows in {:.1} s", loading.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = rss();
    eprintln!("RSS before any read: {}", mb(before));
    // The whole result, extended protocol.
    let peak = PeakRss::start(pid);
    let started = Instant::now();
    let stream = client.query_raw("SELECT k, v FROM t", std::iter::empty::<i64>()).await.expect("query");
    pin_mut!(stream);
    let mut n = 0i64;
    while stream.try_next().await.expect("row").is_some() {
        n += 1;
    }
    let p = peak.finish();
    assert_eq!(n, rows);
    eprintln!("SELECT * (extended protocol): {n} rows in {:.1} s, peak RSS {} (+{})", started.elapsed().as_secs_f64(), mb(p), mb(p.saturating_sub(before)));
    // COPY.
    let peak = PeakRss::start(pid);
    let started = Instant::now();
    let stream = client.copy_out("COPY (SELECT * FROM t) TO STDOUT").await.expect("COPY");
    pin_mut!(stream);
    let mut n = 0usize;
    while let Some(chunk) = stream.try_next().await.expect("copy data") {
        n += chunk.iter().filter(|b| **b == b'\n').count();
    }
    let p = peak.finish();
    assert_eq!(n as i64, rows);
    eprintln!("COPY (SELECT *) TO STDOUT: {n} rows in {:.1} s, peak RSS {} (+{})", started.elapsed().as_secs_f64(), mb(p), mb(p.saturating_sub(before)));
    // A reader that pauses.
    let peak = PeakRss::start(pid);
    let stream = client.query_raw("SELECT k, v FROM t", std::iter::empty::<i64>()).await.expect("query");
    pin_mut!(stream);
    let mut n = 0i64;
    while n < 1000 && stream.try_next().await.expect("row").is_some() {
        n += 1;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let paused = rss();
    while stream.try_next().await.expect("row").is_some() {
        n += 1;
    }
    let p = peak.finish();
    assert_eq!(n, rows);
    eprintln!("a reader pausing 10 s after 1,000 rows: RSS while paused {} (+{}), peak {} (+{})", mb(paused), mb(paused.saturating_sub(before)), mb(p), mb(p.saturating_sub(before)));
    // A reader that leaves.
    let peak = PeakRss::start(pid);
    {
        let leaving = server.connect().await;
        let stream = leaving.query_raw("SELECT k, v FROM t", std::iter::empty::<i64>()).await.expect("query");
        pin_mut!(stream);
        let mut n = 0;
        while n < 1000 && stream.try_next().await.expect("row").is_some() {
            n += 1;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let p = peak.finish();
    let after = rss();
    eprintln!("a reader leaving after 1,000 rows: peak {} (+{}), RSS 2 s later {} (+{})", mb(p), mb(p.saturating_sub(before)), mb(after), mb(after.saturating_sub(before)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn subscribe_under_churn() {
    let secs = env_or("RIPPLE_BENCH_SECS", 600);
    let changes_per_sec = env_or("RIPPLE_BENCH_RATE", 10_000);
    let table_rows = 100_000i64;
    let server = TestServer::start(1);
    let pid = server.pid().expect("pid");
    let rss = || common::proc_status_kib(pid, "VmRSS").expect("VmRSS");
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k bigint PRIMARY KEY, v bigint)").await;
    exec(&client, &format!("INSERT INTO t SELECT g, 0 FROM generate_series(1, {table_rows}) g")).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = rss();
    eprintln!("RSS before the subscription: {}", mb(before));
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    // Writers: each transaction updates 100 rows (200 changes).
    let writers = 16u64;
    let tx_per_sec = changes_per_sec as f64 / 200.0;
    let interval = Duration::from_secs_f64(writers as f64 / tx_per_sec);
    let mut handles = Vec::new();
    for w in 0..writers {
        let c = server.connect().await;
        let (stop, committed) = (stop.clone(), committed.clone());
        handles.push(tokio::spawn(async move {
            let statement = c.prepare("UPDATE t SET v = v + 1 WHERE k = ANY($1)").await.expect("prepare");
            let mut next = Instant::now();
            let mut round = 0i64;
            while !stop.load(Ordering::SeqCst) {
                let first = ((round * writers as i64 + w as i64) * 100) % table_rows;
                let keys: Vec<i64> = (first + 1..=first + 100).collect();
                c.execute(&statement, &[&keys]).await.expect("update");
                committed.fetch_add(200, Ordering::SeqCst);
                round += 1;
                next += interval;
                tokio::time::sleep_until(next.into()).await;
            }
        }));
    }
    // The subscriber: reads for 50 s, pauses for 10 s.
    let sub = server.connect().await;
    let stream = sub.copy_out("COPY (SUBSCRIBE t WITH (SNAPSHOT = false)) TO STDOUT").await.expect("SUBSCRIBE");
    pin_mut!(stream);
    let started = Instant::now();
    let mut received = 0u64;
    let mut peak = before;
    let mut last_report = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        let in_minute = started.elapsed().as_secs() % 60;
        if in_minute >= 50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        } else {
            match tokio::time::timeout(Duration::from_millis(100), stream.next()).await {
                Ok(Some(chunk)) => received += chunk.expect("changes").iter().filter(|b| **b == b'\n').count() as u64,
                Ok(None) => panic!("the subscription ended"),
                Err(_) => {}
            }
        }
        let now = rss();
        peak = peak.max(now);
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            eprintln!(
                "{:>4} s: RSS {} (+{}), {} changes committed, {} received{}",
                started.elapsed().as_secs(),
                mb(now),
                mb(now.saturating_sub(before)),
                committed.load(Ordering::SeqCst),
                received,
                if in_minute >= 50 { " (paused)" } else { "" }
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    for h in handles {
        let _ = h.await;
    }
    eprintln!(
        "{} s at {} changes/s: {} committed, {} received; RSS before {}, peak {} (+{}), at the end {} (+{})",
        secs,
        changes_per_sec,
        committed.load(Ordering::SeqCst),
        received,
        mb(before),
        mb(peak),
        mb(peak.saturating_sub(before)),
        mb(rss()),
        mb(rss().saturating_sub(before))
    );
}
