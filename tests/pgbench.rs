//! pgbench, the real client: `pgbench -i -s 1` sets up its tables the way
//! it does on PostgreSQL (DROP, CREATE ... WITH (fillfactor), TRUNCATE,
//! COPY ... WITH (FREEZE on), VACUUM ANALYZE, ALTER TABLE ... ADD PRIMARY
//! KEY), then a short TPC-B run in both query modes must leave the four
//! tables consistent: every transaction's delta is in the history and in
//! the account, teller and branch balances alike.
//!
//! Needs `pgbench` (Debian's `postgresql-15`, which `./check` installs);
//! where it is missing the test fails, unless `RIPPLE_SKIP_PGBENCH=1` is set.

mod common;

use common::{query_text, TestServer};
use std::process::Command;

fn pgbench(server: &TestServer, args: &[&str]) -> String {
    let out = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-U", "ripple", "-p", &server.port().to_string()])
        .args(args)
        .arg("ripple")
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run pgbench");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pgbench {args:?} failed:\n{text}\n--- server ---\n{}", server.stderr_tail());
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initializes_and_runs() {
    if Command::new("pgbench").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        if std::env::var("RIPPLE_SKIP_PGBENCH").is_ok() {
            eprintln!("pgbench is not installed; skipped (RIPPLE_SKIP_PGBENCH is set)");
            return;
        }
        panic!("pgbench is required (apt-get install postgresql-15), or set RIPPLE_SKIP_PGBENCH=1");
    }
    let server = TestServer::start(1);
    let init = pgbench(&server, &["-i", "-s", "1"]);
    assert!(init.contains("creating primary keys"), "{init}");
    let client = server.connect().await;
    assert_eq!(
        query_text(&client, "SELECT count(*) FROM pgbench_accounts").await,
        vec![vec!["100000".to_string()]]
    );
    assert_eq!(
        query_text(
            &client,
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indisprimary ORDER BY 1"
        )
        .await,
        [["pgbench_accounts_pkey"], ["pgbench_branches_pkey"], ["pgbench_tellers_pkey"]].map(|r| vec![r[0].to_string()]).to_vec()
    );
    for mode in ["simple", "prepared"] {
        // -n: no vacuum, which would also empty the history.
        let run = pgbench(&server, &["-n", "-c", "2", "-j", "1", "-t", "25", "-M", mode]);
        assert!(run.contains("number of failed transactions: 0"), "{run}");
    }
    let sums = query_text(
        &client,
        "SELECT (SELECT sum(delta) FROM pgbench_history), (SELECT sum(abalance) FROM pgbench_accounts),
                (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches),
                (SELECT count(*) FROM pgbench_history)",
    )
    .await;
    let row = &sums[0];
    assert_eq!(row[4], "100", "two clients ran 25 transactions each in each mode: {row:?}");
    assert!(row[..4].iter().all(|s| *s == row[0]), "balances disagree with the history: {row:?}");
}
