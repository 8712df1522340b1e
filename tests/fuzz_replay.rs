//! The short, in-CI version of the `cargo fuzz` targets (`fuzz/`): every
//! kept crash case (`fuzz/regressions/{sql,decode}/`), every statement of
//! the sqllogic tests, and `RIPPLE_FUZZ_REPLAY_SECS` (10 by default) of
//! random mutations of them run through the same entry points the fuzz
//! targets call (`ripple::coord::fuzz_sql`, `ripple::server::fuzz_decode`).
//! A panic fails the test; a stack overflow or an input that takes the
//! process past 4 GiB or 20 s aborts it. The input being run is written to
//! `target/tmp/fuzz_replay_<target>.last` first, so an abort leaves it
//! behind to be kept as a regression.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Past this RSS or time for one input the process is aborted (a runaway
/// plan would otherwise take the machine).
const RSS_LIMIT_BYTES: u64 = 4 << 30;
const INPUT_LIMIT: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mutation_secs() -> u64 {
    std::env::var("RIPPLE_FUZZ_REPLAY_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(10)
}

/// A small deterministic generator (xorshift64*), seeded per run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Runs inputs with a watchdog: the current input is on disk and the
/// process aborts if one runs too long or the process grows too large.
struct Guard {
    last: PathBuf,
    started_ms: Arc<AtomicU64>,
    epoch: Instant,
    current: Arc<Mutex<String>>,
}

impl Guard {
    fn new(target: &str) -> Guard {
        let dir = root().join("target").join("tmp");
        std::fs::create_dir_all(&dir).expect("target/tmp");
        let guard = Guard {
            last: dir.join(format!("fuzz_replay_{target}.last")),
            started_ms: Arc::new(AtomicU64::new(u64::MAX)),
            epoch: Instant::now(),
            current: Arc::new(Mutex::new(String::new())),
        };
        let (started, epoch, current, last) = (guard.started_ms.clone(), guard.epoch, guard.current.clone(), guard.last.clone());
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(100));
                let since = started.load(Ordering::Relaxed);
                let running = since != u64::MAX && epoch.elapsed().as_millis() as u64 > since + INPUT_LIMIT.as_millis() as u64;
                let rss = rss_bytes();
                if running || rss > RSS_LIMIT_BYTES {
                    let what = current.lock().map(|c| c.clone()).unwrap_or_default();
                    eprintln!(
                        "fuzz_replay: input {what} {} (kept in {})",
                        if running { "ran past the time limit" } else { "took the process past 4 GiB" },
                        last.display()
                    );
                    std::process::abort();
                }
            }
        });
        guard
    }

    fn run<T>(&self, name: &str, bytes: &[u8], f: impl FnOnce() -> T) -> T {
        std::fs::write(&self.last, bytes).expect("write the current input");
        if let Ok(mut c) = self.current.lock() {
            *c = name.to_string();
        }
        self.started_ms.store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        let out = f();
        self.started_ms.store(u64::MAX, Ordering::Relaxed);
        out
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The SQL of every `statement` and `query` record of the sqllogic tests.
fn slt_statements() -> Vec<String> {
    let mut out = Vec::new();
    for file in files_in(&root().join("test").join("sqllogic")) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if !(line.starts_with("statement ") || line.starts_with("query ")) {
                continue;
            }
            let mut sql = String::new();
            for l in lines.by_ref() {
                if l.is_empty() || l == "----" {
                    break;
                }
                sql.push_str(l);
                sql.push('\n');
            }
            if !sql.is_empty() {
                out.push(sql);
            }
        }
    }
    out
}

/// One random change to `input`: flip, insert, delete or repeat bytes, or
/// splice in part of another seed.
fn mutate(rng: &mut Rng, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(6) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 => {
                const TOKENS: [&[u8]; 12] =
                    [b"(", b")", b"SELECT ", b",", b"'", b"::", b" (SELECT 1) ", b"\\", b" OR ", b"9999999999999999999", b"-", b"\0"];
                let t = TOKENS[rng.below(TOKENS.len())];
                out.splice(at..at, t.iter().copied());
            }
            2 if !out.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            3 if !out.is_empty() => {
                let from = rng.below(out.len());
                let end = (from + 1 + rng.below(32)).min(out.len());
                let part: Vec<u8> = out[from..end].to_vec();
                for _ in 0..1 + rng.below(8) {
                    out.splice(at..at, part.iter().copied());
                }
            }
            _ if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            _ => out.push(rng.next() as u8),
        }
    }
    out.truncate(1 << 16);
    out
}

fn seed() -> u64 {
    let s = std::env::var("RIPPLE_FUZZ_SEED").ok().and_then(|s| s.parse().ok());
    let s = s.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1));
    eprintln!("fuzz_replay: RIPPLE_FUZZ_SEED={s}");
    s | 1
}

#[test]
fn sql_regressions_statements_and_mutations_plan_without_panics() {
    let guard = Guard::new("sql");
    let plan = |name: &str, bytes: &[u8]| {
        guard.run(name, bytes, || match std::str::from_utf8(bytes) {
            Ok(sql) => ripple::coord::fuzz_sql::plan_sql_on_session_stack(sql).unwrap_or(0),
            Err(_) => 0,
        })
    };
    let regressions = files_in(&root().join("fuzz").join("regressions").join("sql"));
    for file in &regressions {
        let bytes = std::fs::read(file).expect("read a regression");
        plan(&file.display().to_string(), &bytes);
    }
    let statements = slt_statements();
    assert!(statements.len() > 1000, "the sqllogic tests hold {} statements", statements.len());
    // A starting corpus for `cargo fuzz run sql` (fuzz/README.md).
    if let Ok(dir) = std::env::var("RIPPLE_FUZZ_WRITE_CORPUS") {
        std::fs::create_dir_all(&dir).expect("corpus folder");
        for (i, sql) in statements.iter().enumerate() {
            std::fs::write(Path::new(&dir).join(format!("slt{i:05}")), sql).expect("write a corpus file");
        }
    }
    let mut bound = 0;
    for (i, sql) in statements.iter().enumerate() {
        bound += plan(&format!("sqllogic statement {i}"), sql.as_bytes());
    }
    // Most statements name tables the fixed catalog lacks; many bind.
    assert!(bound > 300, "{bound} of {} statements bound", statements.len());
    let seeds: Vec<Vec<u8>> = statements.into_iter().map(String::into_bytes).collect();
    let mut rng = Rng(seed());
    let deadline = Instant::now() + Duration::from_secs(mutation_secs());
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let pick = rng.below(seeds.len());
        let input = mutate(&mut rng, &seeds[pick], &seeds);
        plan(&format!("mutation {runs}"), &input);
        runs += 1;
    }
    eprintln!("fuzz_replay sql: {} regressions, {} statements ({bound} bound), {runs} mutations", regressions.len(), seeds.len());
}

#[test]
fn decode_regressions_and_mutations_decode_without_panics() {
    let guard = Guard::new("decode");
    let decode = |name: &str, bytes: &[u8]| guard.run(name, bytes, || ripple::server::fuzz_decode::decode(bytes));
    let regressions = files_in(&root().join("fuzz").join("regressions").join("decode"));
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for file in &regressions {
        let bytes = std::fs::read(file).expect("read a regression");
        decode(&file.display().to_string(), &bytes);
        seeds.push(bytes);
    }
    // Text seeds of every type: literals the sqllogic tests use.
    for text in ["1", "-0", "1.5e10", "NaN", "{1,NULL,\"a\"}", "2024-02-29 12:00:00+02", "1 day 2:00", "\\x00ff", "{\"a\": [1, 2.5]}", "t"] {
        for how in 0..4u8 {
            for pick in 0..=255u8 {
                let mut input = vec![pick, how];
                input.extend_from_slice(text.as_bytes());
                seeds.push(input);
            }
        }
    }
    let mut rng = Rng(seed());
    let deadline = Instant::now() + Duration::from_secs(mutation_secs());
    let (mut runs, mut decoded) = (0u64, 0u64);
    while Instant::now() < deadline {
        let pick = rng.below(seeds.len());
        let input = mutate(&mut rng, &seeds[pick], &seeds);
        decoded += u64::from(decode(&format!("mutation {runs}"), &input));
        runs += 1;
    }
    eprintln!("fuzz_replay decode: {} regressions, {runs} mutations, {decoded} decoded", regressions.len());
}
