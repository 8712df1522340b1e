//! The server's log (panics) and process, and the health checks run
//! every second.

use super::*;

// ---------------------------------------------------------------------------
// The server's log and process
// ---------------------------------------------------------------------------

/// One panic (or stack overflow, or abort) the server reported on stderr.
#[derive(Clone, Debug)]
pub(crate) struct PanicReport {
    /// Where and why, with numbers masked: equal keys are the same bug.
    pub(crate) key: String,
    /// The report: first line, message and the relevant backtrace frames.
    pub(crate) text: String,
}

/// Follows the server's stderr for new panic reports.
pub(crate) struct PanicWatch {
    pub(crate) path: PathBuf,
    pub(crate) offset: tokio::sync::Mutex<u64>,
}

impl PanicWatch {
    pub(crate) fn new(path: PathBuf) -> PanicWatch {
        let offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        PanicWatch {
            path,
            offset: tokio::sync::Mutex::new(offset),
        }
    }

    /// Skips what is in the log now.
    pub(crate) async fn skip(&self) {
        let mut offset = self.offset.lock().await;
        *offset = std::fs::metadata(&self.path)
            .map(|m| m.len())
            .unwrap_or(*offset);
    }

    /// The panic reports written since the last call.
    pub(crate) async fn scan(&self) -> Vec<PanicReport> {
        let mut offset = self.offset.lock().await;
        let mut text = read_from(&self.path, *offset);
        // Let a panicking thread finish printing its backtrace (resolving
        // symbols the first time takes a while on a loaded machine).
        let deadline = Instant::now() + Duration::from_secs(20);
        while backtrace_unfinished(&String::from_utf8_lossy(&text)) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            text = read_from(&self.path, *offset);
        }
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        *offset += complete as u64;
        parse_panics(&String::from_utf8_lossy(&text[..complete]))
    }
}

/// A panic (or failed allocation) report whose backtrace has not reached
/// its closing "note:" line.
pub(crate) fn backtrace_unfinished(log: &str) -> bool {
    let start = ["panicked at ", "memory allocation of "]
        .iter()
        .filter_map(|p| log.rfind(p))
        .max();
    start.is_some_and(|start| !log[start..].lines().any(|l| l.starts_with("note: ")))
}

pub(crate) fn read_from(path: &Path, offset: u64) -> Vec<u8> {
    let mut out = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(offset)).is_ok()
    {
        let _ = f.read_to_end(&mut out);
    }
    out
}

/// The panic reports in a piece of the log: the "panicked at" line, the
/// message, and the frames of ripple, pgwire and bytes from the backtrace.
pub(crate) fn parse_panics(log: &str) -> Vec<PanicReport> {
    let lines: Vec<&str> = log.lines().collect();
    let mut reports = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !CRASH_PATTERNS.iter().any(|p| line.contains(p)) {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        // The message (one line after "panicked at"), then the backtrace.
        if line.contains("panicked") && i < lines.len() && !lines[i].starts_with(' ') {
            i += 1;
        }
        while i < lines.len()
            && (lines[i].starts_with(' ') || lines[i].starts_with("stack backtrace"))
        {
            i += 1;
        }
        // The closing "note: ... RUST_BACKTRACE=full ..." line.
        if i < lines.len() && lines[i].starts_with("note: ") {
            i += 1;
        }
        let block = &lines[start..i];
        let location = line
            .split("panicked at ")
            .nth(1)
            .unwrap_or(line)
            .trim_end_matches(':');
        let message = if line.contains("panicked") {
            block.get(1).copied().unwrap_or("")
        } else {
            ""
        };
        let frames: Vec<&str> = block
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                let l = l.trim_start();
                l.chars().next().is_some_and(|c| c.is_ascii_digit())
                    && (l.contains("ripple::") || l.contains("pgwire::") || l.contains("bytes::"))
            })
            .map(|(_, l)| l.trim())
            .collect();
        let first_frame = frames
            .iter()
            .find(|f| f.contains("ripple::") || f.contains("pgwire::"))
            .map(|f| f.split_once(": ").map_or(*f, |(_, name)| name))
            .unwrap_or("");
        let key = mask_digits(&format!("{location} | {message} | {first_frame}"));
        let mut text = String::new();
        let _ = writeln!(text, "{line}");
        if !message.is_empty() {
            let _ = writeln!(text, "{message}");
        }
        for f in frames.iter().take(12) {
            let _ = writeln!(text, "    {f}");
        }
        reports.push(PanicReport { key, text });
    }
    reports
}

/// Replaces every run of digits with `N`.
pub(crate) fn mask_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

pub(crate) fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses; Z: exited, not yet reaped.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------
// Health checks
// ---------------------------------------------------------------------------

pub(crate) const SETUP: &str = "
    CREATE TABLE fuzz_t (a int, b text);
    INSERT INTO fuzz_t VALUES (1, 'x'), (2, 'y'), (3, 'x');
    CREATE MATERIALIZED VIEW fuzz_mv AS SELECT b, count(*) AS n, sum(a) AS s FROM fuzz_t GROUP BY b;
    CREATE TABLE scratch (i int, b8 bigint, n numeric, f double precision, t text, d date, ts timestamp,
                          ok boolean, bin bytea, u uuid, j jsonb, arr int[]);
    CREATE MATERIALIZED VIEW scratch_mv AS SELECT t, count(*) AS n, sum(i) AS s, max(d) AS d FROM scratch GROUP BY t;
    CREATE TABLE scratch_k (k int PRIMARY KEY, v varchar(10));
";

/// What `fuzz_t` holds: only the health check writes it.
pub(crate) struct HealthModel {
    pub(crate) rows: Vec<(i64, String)>,
    pub(crate) next: i64,
}

impl HealthModel {
    pub(crate) fn new() -> HealthModel {
        HealthModel {
            rows: vec![(1, "x".into()), (2, "y".into()), (3, "x".into())],
            next: 100,
        }
    }

    pub(crate) fn totals(&self) -> Vec<Vec<String>> {
        let sum: i64 = self.rows.iter().map(|r| r.0).sum();
        vec![vec![self.rows.len().to_string(), sum.to_string()]]
    }

    pub(crate) fn view(&self) -> Vec<Vec<String>> {
        let mut groups: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for (a, b) in &self.rows {
            let g = groups.entry(b).or_default();
            g.0 += 1;
            g.1 += a;
        }
        groups
            .into_iter()
            .map(|(b, (n, s))| vec![b.to_string(), n.to_string(), s.to_string()])
            .collect()
    }

    /// After a restart: every acknowledged row must still be there; then
    /// the table's rows are the model (a write in flight at the crash may
    /// or may not have committed).
    pub(crate) async fn resync(&mut self, conn_str: &str) -> Result<(), String> {
        let (client, connection) = tokio_postgres::connect(conn_str, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("connect after a restart: {e}"))?;
        let conn = tokio::spawn(connection);
        let rows = try_query_text(&client, "SELECT a, b FROM fuzz_t").await;
        conn.abort();
        let rows = rows.map_err(|e| format!("SELECT FROM fuzz_t after a restart: {e}"))?;
        let table: Vec<(i64, String)> = rows
            .into_iter()
            .map(|r| (r[0].parse().unwrap_or(i64::MIN), r[1].clone()))
            .collect();
        if let Some(lost) = self.rows.iter().find(|r| !table.contains(r)) {
            return Err(format!(
                "acknowledged row {lost:?} of fuzz_t is gone after a crash"
            ));
        }
        let top = table.iter().map(|r| r.0).max().unwrap_or(0);
        self.next = self.next.max(top + 1);
        self.rows = table;
        Ok(())
    }
}

/// A fresh session answers `SELECT 1`, writes a row to `fuzz_t`, and reads
/// the table's totals and its view back, all within `HEALTH_TIMEOUT`.
pub(crate) async fn health_check(conn_str: &str, model: &mut HealthModel) -> Result<(), String> {
    let check = async {
        let (client, connection) = tokio_postgres::connect(conn_str, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let conn = tokio::spawn(connection);
        let result = async {
            let one = try_query_text(&client, "SELECT 1")
                .await
                .map_err(|e| format!("SELECT 1: {e}"))?;
            if one != vec![vec!["1".to_string()]] {
                return Err(format!("SELECT 1 answered {one:?}"));
            }
            let (a, b) = (model.next, ["x", "y", "z"][(model.next % 3) as usize]);
            client
                .batch_execute(&format!("INSERT INTO fuzz_t VALUES ({a}, '{b}')"))
                .await
                .map_err(|e| format!("INSERT INTO fuzz_t: {e}"))?;
            model.rows.push((a, b.to_string()));
            model.next += 1;
            let totals = try_query_text(&client, "SELECT count(*), sum(a) FROM fuzz_t")
                .await
                .map_err(|e| format!("SELECT FROM fuzz_t: {e}"))?;
            if totals != model.totals() {
                return Err(format!(
                    "fuzz_t holds (count, sum) {totals:?}, expected {:?}",
                    model.totals()
                ));
            }
            let view = try_query_text(&client, "SELECT b, n, s FROM fuzz_mv ORDER BY b")
                .await
                .map_err(|e| format!("SELECT FROM fuzz_mv: {e}"))?;
            if view != model.view() {
                return Err(format!(
                    "fuzz_mv holds {view:?}, expected {:?}",
                    model.view()
                ));
            }
            Ok(())
        }
        .await;
        drop(client);
        conn.abort();
        result
    };
    match timeout(HEALTH_TIMEOUT, check).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "the health check got no answer within {HEALTH_TIMEOUT:?}"
        )),
    }
}

/// `SLOT_CHECK_SESSIONS` sessions open at once: no connection slot leaked.
/// Closed connections may take a moment to give theirs back: retried.
pub(crate) async fn slot_check(conn_str: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..10 {
        let mut clients = Vec::new();
        let mut error = None;
        for _ in 0..SLOT_CHECK_SESSIONS {
            match timeout(
                HEALTH_TIMEOUT,
                tokio_postgres::connect(conn_str, tokio_postgres::NoTls),
            )
            .await
            {
                Ok(Ok((client, connection))) => {
                    tokio::spawn(connection);
                    clients.push(client);
                }
                Ok(Err(e)) => {
                    error = Some(e.to_string());
                    break;
                }
                Err(_) => {
                    error = Some(format!("no answer within {HEALTH_TIMEOUT:?}"));
                    break;
                }
            }
        }
        match error {
            None => {
                let last = clients.last().expect("sessions");
                return match timeout(HEALTH_TIMEOUT, try_query_text(last, "SELECT 1")).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(format!(
                        "SELECT 1 on the {SLOT_CHECK_SESSIONS}th session: {e}"
                    )),
                    Err(_) => Err(format!(
                        "SELECT 1 on the {SLOT_CHECK_SESSIONS}th session: no answer"
                    )),
                };
            }
            Some(e) => {
                last = format!(
                    "only {} of {SLOT_CHECK_SESSIONS} sessions could open: {e}",
                    clients.len()
                )
            }
        }
        drop(clients);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(last)
}
