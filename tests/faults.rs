//! Faults of the disk under a running server:
//! - a full disk (a small tmpfs the test mounts and fills): a write that
//!   adds data fails with 53100, reads go on, a `DELETE` still runs, and
//!   writes work again once space is freed; nothing acknowledged is lost
//!   across a restart;
//! - a failed fsync (a preloaded shim makes `fsync` and `fdatasync` fail
//!   with EIO while a trigger file exists): the write is not acknowledged,
//!   later writes are refused instead of acknowledged, reads go on, and a
//!   restart recovers every acknowledged row.
//!
//! Both need root (to mount) or a C compiler (for the shim); without them
//! the tests say so and pass, unless `RIPPLE_REQUIRE_FAULT_TESTS=1`.

mod common;

use common::{exec, query_text, TestServer};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Skips (or, under `RIPPLE_REQUIRE_FAULT_TESTS=1`, fails) a test whose
/// set-up this machine cannot do.
fn cannot(why: &str) {
    if std::env::var("RIPPLE_REQUIRE_FAULT_TESTS").as_deref() == Ok("1") {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
}

/// A tmpfs of a few megabytes, unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(megabytes: u64) -> Option<SmallFs> {
        let dir = tempfile::Builder::new().prefix("ripple-small-fs-").tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn free(&self) -> u64 {
        ripple::storage::space::free_bytes(self.path()).expect("statvfs")
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The SQLSTATE of a failed statement (panics if it succeeded).
async fn code_of(client: &tokio_postgres::Client, sql: &str) -> (String, String) {
    let e = client.simple_query(sql).await.expect_err(sql);
    let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
    (db.code().code().to_string(), db.message().to_string())
}

async fn keys(client: &tokio_postgres::Client) -> Vec<i64> {
    query_text(client, "SELECT k FROM t ORDER BY k").await.iter().map(|r| r[0].parse().unwrap()).collect()
}

#[tokio::test]
async fn a_full_disk_refuses_writes_until_space_returns() {
    let Some(fs) = SmallFs::mount(256) else {
        return cannot("mounting a tmpfs needs root");
    };
    let mut server = TestServer::start_in(1, fs.path(), &[]);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k bigint PRIMARY KEY, v text)").await;
    exec(&client, "INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 100) g").await;
    exec(&client, "CREATE MATERIALIZED VIEW n AS SELECT count(*) AS n FROM t").await;

    // Fill the filesystem to below the reserve ripple keeps.
    let filler = fs.path().join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![7u8; 1 << 20];
        while fs.free() > ripple::storage::space::RESERVE / 2 {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
    }

    let (code, message) = code_of(&client, "INSERT INTO t VALUES (1000, 'no room')").await;
    assert_eq!(code, "53100", "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    let (code, _) = code_of(&client, "CREATE TABLE u (x int)").await;
    assert_eq!(code, "53100");
    let sink = client.copy_in::<_, bytes::Bytes>("COPY t FROM STDIN").await;
    if let Ok(sink) = sink {
        use futures::SinkExt;
        let mut sink = Box::pin(sink);
        let rows: String = (2000..4000).map(|k| format!("{k}\tcopied\n")).collect();
        let sent = sink.send(bytes::Bytes::from(rows)).await;
        let finished = match sent {
            Ok(()) => sink.as_mut().finish().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let e = finished.expect_err("COPY on a full disk");
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("53100"), "{e}");
    }
    // Reads go on; a DELETE (it only removes) runs.
    assert_eq!(query_text(&client, "SELECT count(*) FROM t").await, vec![vec!["100".to_string()]]);
    exec(&client, "DELETE FROM t WHERE k = 1").await;
    assert_eq!(query_text(&client, "SELECT n FROM n").await, vec![vec!["99".to_string()]]);

    // Space returns: so do writes.
    std::fs::remove_file(&filler).unwrap();
    exec(&client, "INSERT INTO t VALUES (1000, 'room again')").await;
    exec(&client, "CREATE TABLE u (x int)").await;
    assert_eq!(query_text(&client, "SELECT n FROM n").await, vec![vec!["100".to_string()]]);

    // Everything acknowledged survives a restart.
    let expected: Vec<i64> = (2..=100).chain([1000]).collect();
    assert_eq!(keys(&client).await, expected);
    drop(client);
    server.restart();
    let client = server.connect().await;
    assert_eq!(keys(&client).await, expected);
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr_tail());
}

/// Builds the shim that fails `fsync` and `fdatasync` with EIO while the
/// file named by `RIPPLE_FAIL_FSYNC` exists.
fn build_fsync_shim(dir: &Path) -> Option<PathBuf> {
    let source = dir.join("fail_fsync.c");
    std::fs::write(
        &source,
        r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int failing(void) {
    const char *trigger = getenv("RIPPLE_FAIL_FSYNC");
    return trigger != NULL && access(trigger, F_OK) == 0;
}

int fsync(int fd) {
    static int (*real)(int);
    if (failing()) { errno = EIO; return -1; }
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (failing()) { errno = EIO; return -1; }
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real(fd);
}
"#,
    )
    .ok()?;
    let shim = dir.join("fail_fsync.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .status()
        .is_ok_and(|s| s.success());
    built.then_some(shim)
}

#[tokio::test]
async fn a_failed_fsync_stops_writes_instead_of_acknowledging_them() {
    let work = tempfile::tempdir().unwrap();
    let Some(shim) = build_fsync_shim(work.path()) else {
        return cannot("building the fsync shim needs a C compiler (cc)");
    };
    let trigger = work.path().join("fail-now");
    let shim = shim.to_string_lossy().to_string();
    let trigger_path = trigger.to_string_lossy().to_string();
    let mut server = TestServer::start_with_env(1, &[], &[("LD_PRELOAD", &shim), ("RIPPLE_FAIL_FSYNC", &trigger_path)]);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k bigint PRIMARY KEY, v text)").await;
    exec(&client, "INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 50) g").await;

    std::fs::write(&trigger, b"").unwrap();
    let (code, message) = code_of(&client, "INSERT INTO t VALUES (51, 'not durable')").await;
    assert_eq!(code, "58030", "{message}");
    assert!(message.contains("could not be made durable"), "{message}");
    // Later writes are refused, not acknowledged, even once fsync works.
    std::fs::remove_file(&trigger).unwrap();
    let (code, _) = code_of(&client, "INSERT INTO t VALUES (52, 'after')").await;
    assert_eq!(code, "58030");
    // Reads of what was durable go on.
    let read = query_text(&client, "SELECT count(*) FROM t WHERE k <= 50").await;
    assert_eq!(read, vec![vec!["50".to_string()]]);

    // A restart recovers every acknowledged row (the unacknowledged one
    // may or may not have reached the disk) and takes writes again.
    drop(client);
    server.restart();
    let client = server.connect().await;
    let found = keys(&client).await;
    assert_eq!(found.iter().filter(|k| **k <= 50).count(), 50, "{found:?}");
    assert!(!found.contains(&52), "{found:?}");
    exec(&client, "INSERT INTO t VALUES (53, 'after restart')").await;
    assert!(keys(&client).await.contains(&53));
}
