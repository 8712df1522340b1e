//! Drivers other than tokio-postgres against a real server: psycopg 3
//! (Python), SQLAlchemy 2 on psycopg (what Superset and most Python BI
//! stacks use), asyncpg (Python's asyncio driver: binary results and
//! COPY, its pg_type introspection query), node-postgres with pg-cursor (Node.js), and pgjdbc (the
//! JDBC driver of DBeaver, DataGrip, Metabase and Tableau).
//!
//! The tests need `python3` with `psycopg`, `sqlalchemy` and `asyncpg` installed,
//! `node` with `npm`, and `java` (17 or later) with pgjdbc's jar at
//! `/usr/share/java/postgresql.jar` (Debian's `default-jdk-headless` and
//! `libpostgresql-jdbc-java`; `./check` installs them; the node test
//! installs its packages from `tests/drivers/node/package-lock.json` with
//! `npm ci`). Where one is missing its test fails, unless
//! `RIPPLE_SKIP_PYTHON_DRIVERS=1` (or the older `RIPPLE_SKIP_PSYCOPG=1`),
//! `RIPPLE_SKIP_NODE=1` or `RIPPLE_SKIP_JAVA=1` is set.

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
        panic!("python3 with {module} is required (pip install 'psycopg[binary]' sqlalchemy asyncpg), or set RIPPLE_SKIP_PYTHON_DRIVERS=1");
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

#[test]
fn asyncpg_works() {
    run_python("asyncpg_check.py", "asyncpg");
}

#[test]
fn node_postgres_and_pg_cursor() {
    let have = Command::new("npm").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !have {
        if std::env::var("RIPPLE_SKIP_NODE").is_ok() {
            eprintln!("node/npm is not installed; skipped (RIPPLE_SKIP_NODE is set)");
            return;
        }
        panic!("node and npm are required (apt-get install nodejs npm), or set RIPPLE_SKIP_NODE=1");
    }
    let dir = format!("{}/tests/drivers/node", env!("CARGO_MANIFEST_DIR"));
    if !std::path::Path::new(&format!("{dir}/node_modules/pg-cursor")).exists() {
        let out = Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir).output().expect("run npm ci");
        assert!(out.status.success(), "npm ci failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    let server = TestServer::start(1);
    let out = Command::new("node")
        .arg(format!("{dir}/check.js"))
        .args(["127.0.0.1", &server.port().to_string()])
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "node check.js failed:\n{}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
}

/// Where Debian's `libpostgresql-jdbc-java` puts pgjdbc.
const PGJDBC_JAR: &str = "/usr/share/java/postgresql.jar";

/// pgjdbc's DatabaseMetaData (getTables by type, getColumns, getPrimaryKeys,
/// getIndexInfo, getSchemas, getTypeInfo, ...) and ResultSetMetaData
/// (which read the table OID and column number of RowDescription), server
/// side prepared statements past `prepareThreshold`, batches,
/// transactions, a live materialized view and reads with a fetch size
/// (`tests/drivers/jdbc/JdbcCheck.java`, run as a single-file program).
#[test]
fn pgjdbc_metadata() {
    let have_java = Command::new("java").arg("-version").output().map(|o| o.status.success()).unwrap_or(false);
    if !have_java || !std::path::Path::new(PGJDBC_JAR).exists() {
        if std::env::var("RIPPLE_SKIP_JAVA").is_ok() {
            eprintln!("java or {PGJDBC_JAR} is missing; skipped (RIPPLE_SKIP_JAVA is set)");
            return;
        }
        panic!(
            "java and {PGJDBC_JAR} are required (apt-get install default-jdk-headless libpostgresql-jdbc-java), or set RIPPLE_SKIP_JAVA=1"
        );
    }
    let server = TestServer::start(1);
    let out = Command::new("java")
        .args(["-cp", PGJDBC_JAR])
        .arg(format!("{}/tests/drivers/jdbc/JdbcCheck.java", env!("CARGO_MANIFEST_DIR")))
        .args(["127.0.0.1", &server.port().to_string()])
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "JdbcCheck.java failed:\n{}\n{}\n--- server ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr_tail()
    );
}
