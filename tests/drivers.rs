//! Drivers other than tokio-postgres against a real server: psycopg (Python).
//!
//! The test needs `python3` with `psycopg` installed (`.ci/run` installs it).
//! Where it is missing the test fails, unless `RIPPLE_SKIP_PSYCOPG=1` is set.

mod common;

use common::TestServer;
use std::process::Command;

#[test]
fn psycopg_works() {
    let have_psycopg = Command::new("python3")
        .args(["-c", "import psycopg"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have_psycopg {
        if std::env::var("RIPPLE_SKIP_PSYCOPG").is_ok() {
            eprintln!("psycopg is not installed; skipped (RIPPLE_SKIP_PSYCOPG is set)");
            return;
        }
        panic!("python3 with psycopg is required (pip install 'psycopg[binary]'), or set RIPPLE_SKIP_PSYCOPG=1");
    }
    let server = TestServer::start(1);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/drivers/psycopg_smoke.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(server.port().to_string())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "psycopg smoke test failed:\n{}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
}
