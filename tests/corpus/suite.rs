//! Orchestration of corpus runs: where the corpus and the expectations
//! are, which files run (the environment's filter, the CI subset), running
//! (file, mode) pairs a few at a time, progress lines, and writing reports
//! under the target directory.

use super::run::{self, FileResult, Mode, RunConfig};
use futures::StreamExt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The corpus root: `RIPPLE_SLT_CORPUS`, or `../shared/sqllogictest/sqlite`
/// next to the repository.
pub fn corpus_root() -> PathBuf {
    match std::env::var_os("RIPPLE_SLT_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("shared")
            .join("sqllogictest")
            .join("sqlite"),
    }
}

/// The expectations file of the ripple runs.
pub fn expectations_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test")
        .join("corpus-expectations.txt")
}

/// The cargo target directory (where the `ripple` binary was built).
pub fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_ripple"));
    bin.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Every `.test` file under the root, relative with `/`, sorted.
pub fn all_files(root: &Path) -> Result<Vec<String>, String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("read {}: {e}", dir.display()))?
                .path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if path.extension().is_some_and(|e| e == "test") {
                let rel = path
                    .strip_prefix(root)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(root, root, &mut files)?;
    files.sort();
    Ok(files)
}

/// `RIPPLE_CORPUS_FILTER`: only files whose relative path contains it.
pub fn filter() -> Option<String> {
    std::env::var("RIPPLE_CORPUS_FILTER")
        .ok()
        .filter(|f| !f.is_empty())
}

/// `RIPPLE_CORPUS_MODE`: `direct`, `incremental` or `both` (the default).
pub fn modes() -> Vec<Mode> {
    match std::env::var("RIPPLE_CORPUS_MODE").as_deref() {
        Ok("direct") => vec![Mode::Direct],
        Ok("incremental") => vec![Mode::Incremental],
        Ok("both") | Ok("") | Err(_) => vec![Mode::Direct, Mode::Incremental],
        Ok(other) => panic!("RIPPLE_CORPUS_MODE must be direct, incremental or both, not {other:?}"),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")),
        Err(_) => default,
    }
}

/// `RIPPLE_CORPUS_JOBS`: how many files run at the same time (default 2).
pub fn jobs() -> usize {
    env_number("RIPPLE_CORPUS_JOBS", 2).max(1) as usize
}

/// `RIPPLE_CORPUS_WORKERS`: ripple's worker threads (default 1).
pub fn workers() -> usize {
    env_number("RIPPLE_CORPUS_WORKERS", 1).max(1) as usize
}

/// `RIPPLE_CORPUS_TIMEOUT`: seconds a statement may take (default 60).
pub fn record_timeout() -> Duration {
    Duration::from_secs(env_number("RIPPLE_CORPUS_TIMEOUT", 60).max(1))
}

/// `RIPPLE_CORPUS_BLESS=1`: rewrite the expectations with the run's
/// failures.
pub fn bless() -> bool {
    std::env::var("RIPPLE_CORPUS_BLESS").is_ok_and(|v| v == "1")
}

/// Writes straight to the process's stderr, past libtest's capture, so
/// progress and summaries show even when the test passes.
pub fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Writes a file under the target directory and returns its path.
pub fn write_target_file(name: &str, text: &str) -> PathBuf {
    let path = target_dir().join(name);
    if let Err(e) = std::fs::write(&path, text) {
        say(&format!("could not write {}: {e}\n", path.display()));
    }
    path
}

/// Runs every (file, line limit) of `plan` in every mode, `jobs()` at a
/// time, largest files first, and returns the results sorted by file and
/// mode. Prints a progress line per file run if `progress`.
pub async fn run_plan(
    config: &RunConfig,
    root: &Path,
    plan: &[(String, Option<usize>)],
    modes: &[Mode],
    progress: bool,
) -> Vec<FileResult> {
    let mut tasks: Vec<(u64, &str, Option<usize>, Mode)> = plan
        .iter()
        .flat_map(|(file, limit)| {
            let size = std::fs::metadata(root.join(file)).map(|m| m.len()).unwrap_or(0);
            modes.iter().map(move |m| (size, file.as_str(), *limit, *m))
        })
        .collect();
    tasks.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)).then(a.3.cmp(&b.3)));
    let total = tasks.len();
    let start = Instant::now();
    let mut done = 0;
    let mut results = Vec::with_capacity(total);
    let mut stream = futures::stream::iter(tasks)
        .map(|(_, file, limit, mode)| run::run_file(config, root, file, mode, limit))
        .buffer_unordered(jobs());
    while let Some(r) = stream.next().await {
        done += 1;
        if progress {
            let c = &r.counts;
            say(&format!(
                "[{done}/{total} {:>6.0}s] {:<11} {:<40} queries {}/{}, statements {}/{}, {} crashes, {:.1}s{}\n",
                start.elapsed().as_secs_f64(),
                r.mode.name(),
                r.file,
                c.queries_passed,
                c.queries,
                c.statements_passed,
                c.statements,
                r.crashes.len(),
                r.elapsed.as_secs_f64(),
                r.fatal.as_deref().map(|e| format!(" FATAL: {e}")).unwrap_or_default()
            ));
        }
        results.push(r);
    }
    results.sort_by(|a, b| a.file.cmp(&b.file).then(a.mode.cmp(&b.mode)));
    results
}
