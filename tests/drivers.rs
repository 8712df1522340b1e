//! Drivers other than tokio-postgres against a real server: psycopg 3
//! (Python), and SQLAlchemy 2 on psycopg (what Superset and most Python BI
//! stacks use).
//!
//! The tests need `python3` with `psycopg` and `sqlalchemy` installed
//! (`.ci/run` installs them). Where a module is missing its test fails,
//! unless `RIPPLE_SKIP_PYTHON_DRIVERS=1` (or the older
//! `RIPPLE_SKIP_PSYCOPG=1`) is set.

mod common;

use common::TestServer;
use std::process::Command;

/// Runs `tests/drivers/<script>` against a fresh server, if python3 has
/// `module`.
fn run_python(script: &str, module: &str) {
    let have = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have {
        if std::env::var("RIPPLE_SKIP_PYTHON_DRIVERS").is_ok() || std::env::var("RIPPLE_SKIP_PSYCOPG").is_ok() {
            eprintln!("python3 module {module} is not installed; skipped (RIPPLE_SKIP_PYTHON_DRIVERS is set)");
            return;
        }
        panic!("python3 with {module} is required (pip install 'psycopg[binary]' sqlalchemy), or set RIPPLE_SKIP_PYTHON_DRIVERS=1");
    }
    let server = TestServer::start(1);
    let path = format!("{}/tests/drivers/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3").arg(&path).arg(server.port().to_string()).output().expect("run python3");
    assert!(
        out.status.success(),
        "{script} failed:\n{}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
}

#[test]
fn psycopg_works() {
    run_python("psycopg_smoke.py", "psycopg");
}

#[test]
fn sqlalchemy_reflects_and_round_trips() {
    run_python("sqlalchemy_reflect.py", "sqlalchemy");
}
