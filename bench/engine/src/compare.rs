//! The side-by-side runner: tpchlike (differential dataflow's hand-written
//! TPC-H dataflows, its `stream` binary) and ripple's engine (`run`), on
//! the same `.tbl` files, the same stream (tpchlike's, with L = P = B) and
//! the same number of workers. The `stream` binary is built from a
//! differential-dataflow checkout (`--dd-checkout`: upstream's
//! `tpchlike/` ported to ripple's differential and timely by the patch in
//! `bench/engine/tpchlike/`, see `tpchlike.rs`) or given ready-made
//! (`--tpchlike-bin`). Each query runs in a process of its own for each
//! system, so the peak resident set the kernel reports for the process
//! (`wait4`) is that query's, data included on both sides.
//!
//! Owns: the child processes and the report. Must not: measure anything
//! itself but the children's output and peak memory, or build tpchlike
//! itself (`tpchlike.rs` does).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use crate::drive::Tables;

#[derive(clap::Args, Debug)]
pub struct Options {
    /// Scale factor.
    #[arg(long, default_value = "1")]
    sf: String,
    /// Rows per timestamp: each B runs with tpchlike's logical batch and
    /// physical batch both B.
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 100_000])]
    batch: Vec<usize>,
    /// Queries (default: all 22).
    #[arg(long, value_delimiter = ',')]
    queries: Option<Vec<usize>>,
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// How ripple's view reads its tables: arranged as in the server,
    /// streamed into the view as tpchlike does, or both (one run each).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Tables::Arranged, Tables::Streamed])]
    tables: Vec<Tables>,
    /// A work tree of differential-dataflow (at commit e6c5a4d9): its
    /// `tpchlike/` is copied to target/tpchlike-port/, patched with
    /// bench/engine/tpchlike/port.patch and built there (`cargo build
    /// --release`; reused while the commit and the patch are the same).
    #[arg(long, value_name = "PATH", required_unless_present_any = ["ripple_only", "tpchlike_bin"])]
    dd_checkout: Option<PathBuf>,
    /// Instead of --dd-checkout: a `stream` binary of tpchlike built
    /// already (command line `stream <prefix> <L> <P> <query> -w
    /// <workers>`).
    #[arg(long, value_name = "PATH", conflicts_with = "dd_checkout")]
    tpchlike_bin: Option<PathBuf>,
    /// Run ripple's engine only.
    #[arg(long)]
    ripple_only: bool,
    /// Where the .tbl files are (written there first if missing).
    #[arg(long, value_name = "DIR")]
    tbl: Option<PathBuf>,
    /// A process still running after this many seconds is killed and its
    /// run reported as timed out.
    #[arg(long, default_value_t = 1800)]
    timeout_secs: u64,
    /// The JSON report.
    #[arg(long, default_value = "target/engine-report.json")]
    out: PathBuf,
}

/// One process's run.
#[derive(Clone, Debug, Serialize)]
struct Side {
    /// Tuples per second, if it finished.
    rate: Option<f64>,
    /// Peak resident set of the process, MB.
    peak_mb: f64,
    /// Why there is no rate.
    failure: Option<String>,
    /// ripple's view compared with the reference answer (where one exists).
    checked: Option<bool>,
}

#[derive(Clone, Debug, Serialize)]
struct Row {
    query: usize,
    batch: usize,
    tpchlike: Option<Side>,
    /// One run per way of reading the tables.
    ripple: Vec<(Tables, Side)>,
}

pub fn run(o: &Options) -> Result<()> {
    let (_, sf) = ripple_tpch::queries::scale_factor(&o.sf)?;
    let tbl = o.tbl.clone().unwrap_or_else(|| PathBuf::from(format!("target/tbl/sf{sf}")));
    if !tbl.join("lineitem.tbl").exists() {
        eprintln!("ripple-engine-bench: writing the tables at SF {sf} to {}", tbl.display());
        crate::write_tables(&sf, &tbl)?;
    }
    let tpchlike = match (&o.dd_checkout, &o.tpchlike_bin, o.ripple_only) {
        (_, _, true) => None,
        (Some(_), Some(_), false) => bail!("give --dd-checkout or --tpchlike-bin, not both"),
        (Some(checkout), None, false) => {
            Some(crate::tpchlike::build(checkout, std::path::Path::new(crate::tpchlike::WORK_DIR))?)
        }
        (None, Some(bin), false) => Some(bin.clone()),
        (None, None, false) => bail!("give --dd-checkout, --tpchlike-bin or --ripple-only"),
    };
    let me = std::env::current_exe().context("the path of this program")?;
    let queries = o.queries.clone().unwrap_or_else(|| (1..=22).collect());
    let timeout = Duration::from_secs(o.timeout_secs);
    let mut rows = Vec::new();
    for &batch in &o.batch {
        for &query in &queries {
            let tpchlike = tpchlike.as_ref().map(|bin| {
                let mut cmd = Command::new(bin);
                let mut prefix = tbl.as_os_str().to_owned();
                prefix.push("/");
                cmd.arg(prefix).arg(batch.to_string()).arg(batch.to_string()).arg(query.to_string());
                cmd.arg("-w").arg(o.workers.to_string());
                let side = measure(cmd, timeout, parse_tpchlike);
                eprintln!("q{query:02} B={batch} tpchlike: {}", describe(&side));
                side
            });
            let mut ripple = Vec::new();
            for &tables in &o.tables {
                let mut cmd = Command::new(&me);
                cmd.arg("run").arg("--tbl").arg(&tbl).arg("--sf").arg(&sf).arg("--query").arg(query.to_string());
                cmd.arg("--logical").arg(batch.to_string()).arg("--physical").arg(batch.to_string());
                cmd.arg("--workers").arg(o.workers.to_string()).arg("--tables").arg(mode_name(tables));
                let side = measure(cmd, timeout, parse_ripple);
                eprintln!("q{query:02} B={batch} ripple ({}): {}", mode_name(tables), describe(&side));
                ripple.push((tables, side));
            }
            rows.push(Row { query, batch, tpchlike, ripple });
        }
    }
    println!("{}", table(&rows, &sf, o.workers, &o.tables));
    if let Some(dir) = o.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&o.out, serde_json::to_string_pretty(&rows)?).with_context(|| format!("write {}", o.out.display()))?;
    println!("report: {}", o.out.display());
    Ok(())
}

/// Runs `cmd` to its end (or kills it at `timeout`), and reads its rate
/// from its output with `parse` and its peak memory from the kernel.
fn measure(mut cmd: Command, timeout: Duration, parse: fn(&str) -> Result<(f64, Option<bool>)>) -> Side {
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Side { rate: None, peak_mb: 0.0, failure: Some(format!("spawn: {e}")), checked: None },
    };
    let (status, peak_kb, stdout) = match wait_with_rusage(child, timeout) {
        Ok(r) => r,
        Err(e) => return Side { rate: None, peak_mb: 0.0, failure: Some(format!("{e:#}")), checked: None },
    };
    let peak_mb = peak_kb as f64 / 1024.0;
    let parsed = parse(&stdout);
    match (status, parsed) {
        (Ok(()), Ok((rate, checked))) => Side { rate: Some(rate), peak_mb, failure: None, checked },
        (Ok(()), Err(e)) => Side { rate: None, peak_mb, failure: Some(format!("{e:#}")), checked: None },
        (Err(why), parsed) => {
            Side { rate: None, peak_mb, failure: Some(why), checked: parsed.ok().and_then(|(_, c)| c) }
        }
    }
}

/// Waits for `child`, killing it at `timeout`; returns how it ended, its
/// peak resident set (kB, `ru_maxrss`) and its standard output.
fn wait_with_rusage(mut child: Child, timeout: Duration) -> Result<(Result<(), String>, u64, String)> {
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.take().context("child stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let start = Instant::now();
    let mut killed = false;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `rusage` is plain data the kernel fills in; `pid` is our
        // own child, not yet reaped (std's `Child` is not waited on).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r < 0 {
            return Err(anyhow!("wait4: {}", std::io::Error::last_os_error()));
        }
        if r == pid {
            let out = reader.join().unwrap_or_default();
            let ended = if killed {
                Err(format!("timed out after {} s", timeout.as_secs()))
            } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                Ok(())
            } else if libc::WIFSIGNALED(status) {
                Err(format!("killed by signal {}", libc::WTERMSIG(status)))
            } else {
                Err(format!("exit status {}", libc::WEXITSTATUS(status)))
            };
            return Ok((ended, usage.ru_maxrss.max(0) as u64, out));
        }
        if !killed && start.elapsed() > timeout {
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// tpchlike's line: `qNN\tL\tP\tworkers\trate\tnanos`.
fn parse_tpchlike(out: &str) -> Result<(f64, Option<bool>)> {
    let line = out.lines().find(|l| l.starts_with('q')).context("tpchlike printed no result line")?;
    let rate = line.split('\t').nth(4).context("tpchlike's line has no rate")?;
    Ok((rate.trim().parse().with_context(|| format!("tpchlike's rate {rate:?}"))?, None))
}

/// `run`'s JSON line.
fn parse_ripple(out: &str) -> Result<(f64, Option<bool>)> {
    let line = out.lines().find(|l| l.starts_with('{')).context("ripple printed no measurement")?;
    let m: serde_json::Value = serde_json::from_str(line)?;
    let rate = m["rate"].as_f64().context("no rate")?;
    let checked = m.get("check").and_then(|c| c.get("ok")).and_then(serde_json::Value::as_bool);
    Ok((rate, checked))
}

fn describe(s: &Side) -> String {
    match (&s.rate, &s.failure) {
        (Some(r), _) => format!("{} tuples/s, peak {:.0} MB{}", human(*r), s.peak_mb, check_note(s.checked)),
        (None, Some(f)) => format!("failed ({f}), peak {:.0} MB", s.peak_mb),
        (None, None) => "no result".into(),
    }
}

fn check_note(c: Option<bool>) -> &'static str {
    match c {
        Some(true) => ", answer checked",
        Some(false) => ", WRONG ANSWER",
        None => "",
    }
}

fn human(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2}M", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.0}K", rate / 1e3)
    } else {
        format!("{rate:.0}")
    }
}

fn mode_name(t: Tables) -> &'static str {
    match t {
        Tables::Arranged => "arranged",
        Tables::Streamed => "streamed",
    }
}

/// The Markdown table of the run: per query and B, tpchlike and each of
/// ripple's runs with its ratio to tpchlike, and the processes' peaks.
fn table(rows: &[Row], sf: &str, workers: usize, modes: &[Tables]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "SF {sf}, {workers} worker(s), L = P = B; rates in tuples/s; peak = the process's peak RSS in MB");
    let _ = writeln!(out);
    let mut header = "| query | B | tpchlike | peak".to_string();
    for m in modes {
        let _ = write!(header, " | ripple, tables {0} | ratio | peak", mode_name(*m));
    }
    let _ = writeln!(out, "{header} |");
    let _ = writeln!(out, "|---|---|---|---{} |", "|---|---|---".repeat(modes.len()));
    let rate = |s: &Side| match (s.rate, &s.failure) {
        (Some(x), _) => format!("{}{}", human(x), check_note(s.checked)),
        (None, Some(f)) => format!("failed: {f}"),
        (None, None) => "–".into(),
    };
    for r in rows {
        let _ = write!(out, "| q{:02} | {} | ", r.query, r.batch);
        let _ = match &r.tpchlike {
            Some(t) => write!(out, "{} | {:.0}", rate(t), t.peak_mb),
            None => write!(out, "– | –"),
        };
        for (_, side) in &r.ripple {
            let ratio = match (r.tpchlike.as_ref().and_then(|t| t.rate), side.rate) {
                (Some(t), Some(x)) if t > 0.0 => format!("{:.3}×", x / t),
                _ => "–".into(),
            };
            let _ = write!(out, " | {} | {ratio} | {:.0}", rate(side), side.peak_mb);
        }
        let _ = writeln!(out, " |");
    }
    for b in rows.iter().map(|r| r.batch).collect::<std::collections::BTreeSet<_>>() {
        for &m in modes {
            let ratios: Vec<f64> = rows
                .iter()
                .filter(|r| r.batch == b)
                .filter_map(|r| {
                    let t = r.tpchlike.as_ref()?.rate?;
                    let x = r.ripple.iter().find(|(mm, _)| *mm == m)?.1.rate?;
                    (t > 0.0).then_some(x / t)
                })
                .collect();
            if !ratios.is_empty() {
                let at_half = ratios.iter().filter(|r| **r >= 0.5).count();
                let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
                let _ = writeln!(
                    out,
                    "\nB = {b}, tables {}: ripple ≥ 0.5× tpchlike on {at_half} of {} queries; geometric mean of the ratios {geo:.3}×",
                    mode_name(m),
                    ratios.len()
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_outputs() -> Result<()> {
        assert_eq!(parse_tpchlike("noise\nq06\t1000\t1000\t1\t5960000.5\t123\n")?.0, 5960000.5);
        assert!(parse_tpchlike("").is_err());
        let line = r#"{"query":6,"rate":12.5,"check":{"ok":true}}"#;
        assert_eq!(parse_ripple(line)?, (12.5, Some(true)));
        Ok(())
    }

    #[test]
    fn a_child_is_measured_and_a_slow_one_killed() -> Result<()> {
        let mut sh = Command::new("sh");
        sh.arg("-c").arg("echo 'q01\t1\t1\t1\t42\t1'");
        let side = measure(sh, Duration::from_secs(10), parse_tpchlike);
        assert_eq!(side.rate, Some(42.0));
        assert!(side.peak_mb > 0.0);
        let mut slow = Command::new("sleep");
        slow.arg("30");
        let side = measure(slow, Duration::from_millis(200), parse_tpchlike);
        assert!(side.failure.as_deref().is_some_and(|f| f.contains("timed out")), "{side:?}");
        Ok(())
    }
}

