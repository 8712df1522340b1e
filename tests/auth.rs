//! Who may connect, against a real server: SCRAM-SHA-256 passwords (right,
//! wrong and missing; roles made, changed and dropped with SQL; limits
//! and expiry; kept across a restart), the checks trust makes (the role
//! and the database must exist), the refusal to trust clients beyond
//! loopback, and TLS with a CA and certificate the test makes, from
//! tokio-postgres, psql (`sslmode=require`, `verify-full`, channel
//! binding) and psycopg.
//!
//! psql and psycopg are needed as in `tests/psql.rs` and `tests/drivers.rs`
//! (`./check` installs them); where they are missing those parts fail,
//! unless `RIPPLE_SKIP_PSQL=1` / `RIPPLE_SKIP_PYTHON_DRIVERS=1` is set.

mod common;

use std::path::Path;
use std::process::Command;

use common::TestServer;

const SUPERUSER_PASSWORD: &str = "first secret";

fn password_server() -> TestServer {
    TestServer::start_with_env(1, &["--auth", "password"], &[("RIPPLE_PASSWORD", SUPERUSER_PASSWORD)])
}

/// Connects as `user` with `password` (none if `None`); the error's
/// SQLSTATE (or its text, for an error of the client) on failure.
async fn try_connect(server: &TestServer, user: &str, password: Option<&str>) -> Result<tokio_postgres::Client, String> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(server.port()).user(user).dbname("ripple");
    if let Some(p) = password {
        config.password(p);
    }
    match config.connect(tokio_postgres::NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(client)
        }
        Err(e) => Err(e.code().map(|c| c.code().to_string()).unwrap_or_else(|| format!("{e:?}"))),
    }
}

async fn connect(server: &TestServer, user: &str, password: &str) -> tokio_postgres::Client {
    try_connect(server, user, Some(password))
        .await
        .unwrap_or_else(|e| panic!("{user} could not connect: {e}\n{}", server.stderr_tail()))
}

async fn one(client: &tokio_postgres::Client, sql: &str) -> String {
    let rows = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

async fn code_of(client: &tokio_postgres::Client, sql: &str) -> String {
    match client.simple_query(sql).await {
        Ok(_) => "ok".into(),
        Err(e) => e.code().map(|c| c.code().to_string()).unwrap_or_else(|| e.to_string()),
    }
}

#[tokio::test]
async fn scram_passwords_and_roles() {
    let mut server = password_server();
    let su = connect(&server, "ripple", SUPERUSER_PASSWORD).await;
    assert_eq!(one(&su, "SELECT current_user").await, "ripple");
    // Wrong password, no password, a role that does not exist: the same
    // answer for both server-side failures.
    assert_eq!(try_connect(&server, "ripple", Some("wrong")).await.err().as_deref(), Some("28P01"));
    let missing = try_connect(&server, "ripple", None).await.err().unwrap_or_default();
    assert!(missing.contains("password missing"), "{missing}");
    assert_eq!(try_connect(&server, "nobody", Some("x")).await.err().as_deref(), Some("28P01"));

    // Roles made with SQL log in with their passwords; the catalog keeps
    // verifiers only.
    for sql in [
        "CREATE ROLE alice LOGIN PASSWORD 'alice pw'",
        "CREATE USER bob WITH PASSWORD 'bob pw' CONNECTION LIMIT 1",
        "CREATE ROLE carol NOLOGIN PASSWORD 'carol pw'",
        "CREATE USER old PASSWORD 'old pw' VALID UNTIL '2001-01-01'",
        "CREATE ROLE admin LOGIN CREATEROLE PASSWORD 'admin pw'",
    ] {
        assert_eq!(code_of(&su, sql).await, "ok", "{sql}");
    }
    let stored = one(&su, "SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'").await;
    assert!(stored.starts_with("SCRAM-SHA-256$4096:") && !stored.contains("alice pw"), "{stored}");
    assert_eq!(one(&su, "SELECT rolpassword FROM pg_roles WHERE rolname = 'alice'").await, "********");
    let alice = connect(&server, "alice", "alice pw").await;
    assert_eq!(one(&alice, "SELECT session_user").await, "alice");
    // Verifiers are for superusers' eyes only.
    assert_eq!(one(&alice, "SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'").await, "NULL");
    assert_eq!(one(&alice, "SELECT usesysid <> 10 FROM pg_stat_activity").await, "t");
    assert_eq!(one(&alice, "SHOW is_superuser").await, "off");
    assert_eq!(one(&su, "SHOW is_superuser").await, "on");
    assert_eq!(one(&su, "SHOW ssl").await, "off");
    assert_eq!(try_connect(&server, "alice", Some("bob pw")).await.err().as_deref(), Some("28P01"));
    assert_eq!(try_connect(&server, "carol", Some("carol pw")).await.err().as_deref(), Some("28000"));
    assert_eq!(try_connect(&server, "old", Some("old pw")).await.err().as_deref(), Some("28P01"));
    // CONNECTION LIMIT 1: a second session of bob is refused until the
    // first ends.
    let bob = connect(&server, "bob", "bob pw").await;
    assert_eq!(try_connect(&server, "bob", Some("bob pw")).await.err().as_deref(), Some("53300"));
    drop(bob);
    let mut again = None;
    for _ in 0..50 {
        if let Ok(c) = try_connect(&server, "bob", Some("bob pw")).await {
            again = Some(c);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(again.is_some(), "bob's slot was not given back");

    // Who may do what: a plain role changes its own password only.
    assert_eq!(code_of(&alice, "CREATE ROLE eve").await, "42501");
    assert_eq!(code_of(&alice, "ALTER ROLE bob PASSWORD 'mine'").await, "42501");
    assert_eq!(code_of(&alice, "ALTER ROLE alice CREATEDB").await, "42501");
    assert_eq!(code_of(&alice, "ALTER ROLE alice PASSWORD 'alice new'").await, "ok");
    assert_eq!(try_connect(&server, "alice", Some("alice pw")).await.err().as_deref(), Some("28P01"));
    connect(&server, "alice", "alice new").await;
    // CREATEROLE manages roles that are not superusers.
    let admin = connect(&server, "admin", "admin pw").await;
    assert_eq!(code_of(&admin, "CREATE ROLE dave LOGIN PASSWORD 'dave pw'").await, "ok");
    assert_eq!(code_of(&admin, "CREATE ROLE root SUPERUSER").await, "42501");
    assert_eq!(code_of(&admin, "ALTER ROLE ripple PASSWORD 'taken'").await, "42501");
    assert_eq!(code_of(&admin, "DROP ROLE ripple").await, "55006");
    assert_eq!(code_of(&admin, "DROP ROLE admin").await, "55006");
    assert_eq!(code_of(&admin, "ALTER ROLE dave RENAME TO david").await, "ok");
    connect(&server, "david", "dave pw").await;

    // A verifier made by PostgreSQL 15 for the password 'foo' logs in.
    let pg_verifier = "SCRAM-SHA-256$4096:WnbJNOiVQ3Hx05G6RZp8ag==$cH8mm4yBVwk9DgVgrMTd6I8I/dQ4pQsvHdUetOphnz0=:TfCLQRwdl2Yf8tAhI65W8PmTRkszS/cLbFMiZ73/eiw=";
    assert_eq!(code_of(&su, &format!("CREATE ROLE frompg LOGIN PASSWORD '{pg_verifier}'")).await, "ok");
    connect(&server, "frompg", "foo").await;

    // Roles and passwords survive a restart; RIPPLE_PASSWORD only gives
    // the first password.
    drop((su, alice, admin, again));
    server.set_envs(&[("RIPPLE_PASSWORD", "another")]);
    server.restart();
    assert_eq!(try_connect(&server, "ripple", Some("another")).await.err().as_deref(), Some("28P01"));
    let su = connect(&server, "ripple", SUPERUSER_PASSWORD).await;
    connect(&server, "alice", "alice new").await;
    assert_eq!(code_of(&su, "DROP ROLE alice, david").await, "ok");
    assert_eq!(try_connect(&server, "alice", Some("alice new")).await.err().as_deref(), Some("28P01"));
}

#[tokio::test]
async fn trust_checks_the_role_and_the_database() {
    let server = TestServer::start(1);
    let su = server.connect().await;
    assert_eq!(code_of(&su, "CREATE ROLE viewer NOLOGIN").await, "ok");
    assert_eq!(code_of(&su, "CREATE USER reader").await, "ok");
    assert_eq!(try_connect(&server, "nobody", None).await.err().as_deref(), Some("28000"));
    assert_eq!(try_connect(&server, "viewer", None).await.err().as_deref(), Some("28000"));
    let reader = try_connect(&server, "reader", None).await.expect("reader connects");
    assert_eq!(one(&reader, "SELECT current_user").await, "reader");
    let err = tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=ripple dbname=postgres", server.port()), tokio_postgres::NoTls)
        .await
        .err()
        .expect("an unknown database is refused");
    assert_eq!(err.code().map(|c| c.code()), Some("3D000"), "{err}");
}

/// Privileges as a role that logged in sees them: extended-protocol
/// statements (a prepared statement run again is served from its generic
/// plan, which a REVOKE must not outlive), COPY FROM, SET ROLE from a
/// role that is no superuser, ownership of what it creates, and CONNECT.
#[tokio::test]
async fn privileges_of_a_logged_in_role() {
    let mut server = password_server();
    let su = connect(&server, "ripple", SUPERUSER_PASSWORD).await;
    for sql in [
        "CREATE ROLE app LOGIN PASSWORD 'app pw'",
        "CREATE ROLE other LOGIN PASSWORD 'other pw'",
        "CREATE TABLE accounts (id int PRIMARY KEY, balance int)",
        "INSERT INTO accounts VALUES (1, 10), (2, 20)",
    ] {
        assert_eq!(code_of(&su, sql).await, "ok", "{sql}");
    }
    let app = connect(&server, "app", "app pw").await;
    let err = app.query("SELECT balance FROM accounts WHERE id = $1", &[&1i32]).await.unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("42501"), "{err}");
    assert_eq!(err.as_db_error().map(|e| e.message()), Some("permission denied for table accounts"));

    assert_eq!(code_of(&su, "GRANT SELECT ON accounts TO app").await, "ok");
    let read = app.prepare("SELECT balance FROM accounts WHERE id = $1").await.unwrap();
    for _ in 0..3 {
        let rows = app.query(&read, &[&2i32]).await.unwrap();
        assert_eq!(rows[0].get::<_, i32>(0), 20);
    }
    assert_eq!(code_of(&su, "REVOKE SELECT ON accounts FROM app").await, "ok");
    let err = app.query(&read, &[&2i32]).await.unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("42501"), "a revoked privilege outlived a kept plan: {err}");

    // COPY FROM needs INSERT.
    let copy = app.copy_in::<_, bytes::Bytes>("COPY accounts FROM STDIN").await.err().expect("COPY FROM refused");
    assert_eq!(copy.code().map(|c| c.code()), Some("42501"), "{copy}");

    // Only a superuser's session takes another role.
    assert_eq!(code_of(&app, "SET ROLE other").await, "42501");
    assert_eq!(code_of(&app, "SET ROLE app").await, "ok");
    assert_eq!(code_of(&su, "SET ROLE app").await, "ok");
    assert_eq!(one(&su, "SELECT current_user").await, "app");
    assert_eq!(code_of(&su, "SELECT * FROM accounts").await, "42501");
    assert_eq!(code_of(&su, "RESET ROLE").await, "ok");

    // What a role creates it owns: it may grant on it and drop it.
    assert_eq!(code_of(&su, "GRANT CREATE ON SCHEMA public TO app").await, "ok");
    assert_eq!(code_of(&app, "CREATE TABLE app_notes (n text)").await, "ok");
    assert_eq!(one(&su, "SELECT tableowner FROM pg_tables WHERE tablename = 'app_notes'").await, "app");
    let other = connect(&server, "other", "other pw").await;
    assert_eq!(code_of(&other, "INSERT INTO app_notes VALUES ('x')").await, "42501");
    assert_eq!(code_of(&app, "GRANT INSERT ON app_notes TO other").await, "ok");
    assert_eq!(code_of(&other, "INSERT INTO app_notes VALUES ('x')").await, "ok");
    assert_eq!(code_of(&other, "DROP TABLE app_notes").await, "42501");

    // Privileges are kept across a restart.
    drop((app, other, su));
    server.restart();
    let other = connect(&server, "other", "other pw").await;
    assert_eq!(code_of(&other, "INSERT INTO app_notes VALUES ('y')").await, "ok");
    assert_eq!(code_of(&other, "SELECT * FROM accounts").await, "42501");

    // Without CONNECT on the database a role cannot log in.
    let su = connect(&server, "ripple", SUPERUSER_PASSWORD).await;
    assert_eq!(code_of(&su, "REVOKE CONNECT ON DATABASE ripple FROM PUBLIC").await, "ok");
    assert_eq!(try_connect(&server, "app", Some("app pw")).await.err().as_deref(), Some("42501"));
    assert_eq!(code_of(&su, "GRANT CONNECT ON DATABASE ripple TO app").await, "ok");
    assert!(try_connect(&server, "app", Some("app pw")).await.is_ok());
    drop(other);
}

/// Runs the server binary to its exit (it must not start) and returns
/// what it printed.
fn refused_start(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ripple"))
        .args(["--data-dir", dir.path().to_str().unwrap()])
        .args(args)
        .output()
        .expect("run ripple");
    assert!(!out.status.success(), "ripple started with {args:?}");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn trust_is_refused_beyond_loopback() {
    let port = common::free_port().to_string();
    let err = refused_start(&["--listen", &format!("0.0.0.0:{port}")]);
    assert!(err.contains("--auth trust") && err.contains("--auth password"), "{err}");
    // With passwords it serves there.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ripple"))
        .args(["--data-dir", dir.path().join("data").to_str().unwrap(), "--listen", &format!("0.0.0.0:{port}"), "--auth", "password"])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("run ripple");
    let deadline = std::time::Instant::now() + common::START_TIMEOUT;
    let listening = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("ripple listening on 0.0.0.0") {
            break true;
        }
        if child.try_wait().ok().flatten().is_some() || std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening, "{}", std::fs::read_to_string(&log).unwrap_or_default());
}

/// A CA called `ca_name`, and a certificate it signs for `localhost` and
/// 127.0.0.1, written as PEM files into `dir`: ca.pem, server.pem,
/// server.key.
fn make_certificates(dir: &Path, ca_name: &str) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
}

fn have(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().map(|o| o.status.success()).unwrap_or(false)
}

/// psql with the connection string `conn`, running `command`: its output,
/// or its error output if it fails.
fn psql(conn: &str, password: &str, command: &str) -> Result<String, String> {
    let out = Command::new("psql")
        .args(["-X", "-A", "-t", "-d", conn, "-c", command])
        .env("PGPASSWORD", password)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run psql");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

#[test]
fn tls_with_verification() {
    let certs = tempfile::tempdir().unwrap();
    make_certificates(certs.path(), "ripple test CA");
    let path = |f: &str| certs.path().join(f).to_str().unwrap().to_string();
    let server = TestServer::start_with_env(
        1,
        &["--auth", "password", "--tls-cert", &path("server.pem"), "--tls-key", &path("server.key")],
        &[("RIPPLE_PASSWORD", SUPERUSER_PASSWORD)],
    );
    let port = server.port();

    // A certificate that does not match its key, or a file that is not
    // one, stops the server before it serves.
    let err = refused_start(&["--listen", &format!("127.0.0.1:{}", common::free_port()), "--tls-cert", &path("ca.pem"), "--tls-key", &path("server.key")]);
    assert!(err.contains("does not go with"), "{err}");

    if !have("psql", "--version") {
        if std::env::var("RIPPLE_SKIP_PSQL").is_ok() {
            eprintln!("psql is not installed; its part skipped (RIPPLE_SKIP_PSQL is set)");
        } else {
            panic!("psql is required (apt-get install postgresql-client), or set RIPPLE_SKIP_PSQL=1");
        }
    } else {
        let base = format!("host=localhost port={port} user=ripple dbname=ripple");
        // verify-full: the CA signs the certificate and it names the host.
        let info = psql(&format!("{base} sslmode=verify-full sslrootcert={}", path("ca.pem")), SUPERUSER_PASSWORD, "\\conninfo")
            .unwrap_or_else(|e| panic!("verify-full: {e}\n{}", server.stderr_tail()));
        assert!(info.contains("SSL connection"), "{info}");
        // Channel binding (SCRAM-SHA-256-PLUS) over TLS.
        psql(&format!("{base} sslmode=require channel_binding=require"), SUPERUSER_PASSWORD, "SELECT 1")
            .unwrap_or_else(|e| panic!("channel binding: {e}"));
        // A wrong password over TLS is still refused.
        let err = psql(&format!("{base} sslmode=require"), "wrong", "SELECT 1").unwrap_err();
        assert!(err.contains("password authentication failed"), "{err}");
        // verify-full against another CA fails; so does a host name the
        // certificate does not name.
        let other = tempfile::tempdir().unwrap();
        make_certificates(other.path(), "another CA");
        let err = psql(
            &format!("{base} sslmode=verify-full sslrootcert={}", other.path().join("ca.pem").display()),
            SUPERUSER_PASSWORD,
            "SELECT 1",
        )
        .unwrap_err();
        assert!(err.contains("certificate verify failed"), "{err}");
        let err = psql(
            &format!("host=127.0.0.2 port={port} user=ripple dbname=ripple sslmode=verify-full sslrootcert={}", path("ca.pem")),
            SUPERUSER_PASSWORD,
            "SELECT 1",
        );
        assert!(err.is_err(), "a host the certificate does not name was accepted");
    }

    let have_psycopg = Command::new("python3").args(["-c", "import psycopg"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !have_psycopg {
        if std::env::var("RIPPLE_SKIP_PYTHON_DRIVERS").is_ok() {
            eprintln!("psycopg is not installed; its part skipped (RIPPLE_SKIP_PYTHON_DRIVERS is set)");
            return;
        }
        panic!("python3 with psycopg is required, or set RIPPLE_SKIP_PYTHON_DRIVERS=1");
    }
    let script = r#"
import sys, psycopg
port, ca, password = sys.argv[1], sys.argv[2], sys.argv[3]
with psycopg.connect(host="localhost", port=port, user="ripple", dbname="ripple", password=password,
                     sslmode="verify-full", sslrootcert=ca) as c:
    assert c.pgconn.ssl_in_use, "no TLS"
    assert c.execute("SHOW ssl").fetchone()[0] == "on"
    # What psql's \password does: libpq reads password_encryption and
    # makes the verifier on the client; the server keeps it as given.
    verifier = c.pgconn.encrypt_password(b"libpq pw", b"viakeys").decode()
    assert verifier.startswith("SCRAM-SHA-256$"), verifier
    c.execute(f"CREATE ROLE viakeys LOGIN PASSWORD '{verifier}'")
    c.commit()
    print(c.execute("SELECT current_user").fetchone()[0])
with psycopg.connect(host="localhost", port=port, user="viakeys", dbname="ripple", password="libpq pw",
                     sslmode="verify-full", sslrootcert=ca) as c:
    assert c.execute("SELECT current_user").fetchone()[0] == "viakeys"
"#;
    let out = Command::new("python3")
        .args(["-c", script, &port.to_string(), &path("ca.pem"), SUPERUSER_PASSWORD])
        .output()
        .expect("run python3");
    assert!(out.status.success(), "psycopg verify-full: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ripple");
}
