//! Wire-protocol fuzzer: random and mutated PostgreSQL v3 frontend messages
//! on raw TCP connections, while the server must stay alive and healthy.
//!
//! `RIPPLE_FUZZ_TASKS` concurrent tasks (default 8) each open connection
//! after connection and send one *case* on each:
//! - start-up cases: valid and mutated StartupMessages (wrong protocol
//!   versions, missing terminators, huge, negative and short lengths,
//!   garbage and non-UTF-8 parameters), SSLRequest, GSSENCRequest,
//!   CancelRequest (random keys, or the key of another fuzzing session),
//!   direct-TLS bytes and random bytes;
//! - session cases, after a valid start-up (user and database `ripple`,
//!   trust auth): simple queries (valid, stress-sized, truncated, random
//!   bytes, NULs, invalid UTF-8), the extended protocol in and out of order
//!   (Bind without Parse, Execute without Bind, wrong parameter counts and
//!   format codes, 65,535 parameters, binary parameters of random or
//!   mutated bytes for int2/4/8, numeric, float4/8, text, date, timestamp,
//!   interval, bool, bytea, uuid, jsonb and arrays), COPY FROM STDIN in
//!   text, CSV and binary with mutated data (and CopyData, CopyDone,
//!   CopyFail outside COPY), FunctionCall, PasswordMessage, Terminate,
//!   unknown message types and broken length fields (negative, below 4,
//!   oversized). Any message may be mutated (bit flips, inserted, deleted
//!   or duplicated bytes, splices, a changed length field), and the socket
//!   is sometimes closed (or reset) in the middle of a message.
//!
//! Every answer is parsed: each backend message must be well framed, every
//! ErrorResponse and NoticeResponse must carry a severity, a message and a
//! 5-character SQLSTATE ('C'). A case made only of well-formed messages
//! ends with a query whose row must arrive within 20 s, and the server may
//! close such a session only after an ErrorResponse (or a Terminate); other
//! cases are read until the server closes the connection, or goes quiet.
//!
//! Every second while fuzzing, and at the end, a health check must pass
//! within 10 s: a fresh tokio-postgres session runs `SELECT 1`, writes a row
//! to `fuzz_t` and reads the table and its materialized view `fuzz_mv`
//! back; the server process has not exited; its stderr has no panic (in
//! any thread), stack overflow or failed allocation. At the end, 90
//! sessions must open at once (no leaked connection slots). The server
//! runs with `RUST_BACKTRACE=1`, so a panic's report names the code.
//!
//! A failure prints the seed and the case's bytes. At the end each distinct
//! failure is replayed on the quiet server, first with the case that showed
//! it, then with the cases that ended around then; the case that reproduces
//! it alone is minimized and printed as a byte string for `REGRESSIONS`,
//! the hand-made cases replayed first on every run (an entry that starts
//! with an ASCII letter is sent after a valid start-up; any other is the
//! very first bytes of a connection). Reproductions of open bugs wait in
//! `PENDING`, replayed by the ignored test `pending_reproductions`
//! (`cargo test --release --test wire_fuzz -- --ignored`).
//!
//! Knobs: `RIPPLE_FUZZ_SECS` (fuzzing time, default 15: about 17 s in all
//! with the server's start), `RIPPLE_FUZZ_SEED` (default from the clock;
//! printed: the same seed sends the same cases, not in the same
//! interleaving), `RIPPLE_FUZZ_TASKS`, `RIPPLE_FUZZ_KEEP_GOING=1` (record
//! every distinct failure and keep fuzzing instead of stopping at the
//! first; a crashed server is restarted on its data directory, and every
//! acknowledged write to `fuzz_t` must have survived), and, to reproduce
//! one report, `RIPPLE_FUZZ_CASE=<case seed>` (the case a report names) or
//! `RIPPLE_FUZZ_REPLAY=<hex bytes>` (bytes, as a `REGRESSIONS` entry). The
//! long run:
//!
//! `RIPPLE_FUZZ_SECS=3600 cargo test --release --test wire_fuzz -- --nocapture`
//!
//! with `RIPPLE_FUZZ_KEEP_GOING=1` to survey every distinct failure in one
//! run (triage of them all takes up to 5 more minutes).

#[path = "../common/mod.rs"]
mod common;
mod answers;
mod generate;
mod messages;
mod payloads;
mod regressions;
mod triage;
mod watch;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{TestServer, exec, proc_status_kib, try_query_text};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use answers::*;
use generate::*;
use messages::*;
use payloads::*;
use regressions::*;
use triage::*;
use watch::*;

// ---------------------------------------------------------------------------
// Knobs and limits
// ---------------------------------------------------------------------------

pub(crate) const DEFAULT_SECS: u64 = 15;
pub(crate) const DEFAULT_TASKS: usize = 8;
/// The health check (connect, SELECT 1, a write, two reads) must finish in this.
pub(crate) const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const HEALTH_EVERY: Duration = Duration::from_secs(1);
/// A well-formed case's closing query must be answered within this.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// Connecting, completing a start-up, or one write.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Another case is read until the server is quiet this long after the last write...
pub(crate) const QUIET: Duration = Duration::from_millis(300);
/// ...but for no longer than this.
pub(crate) const CASE_CAP: Duration = Duration::from_secs(5);
pub(crate) const TICK: Duration = Duration::from_millis(50);
/// Sessions that must open at once at the end (`max_connections` is 100).
pub(crate) const SLOT_CHECK_SESSIONS: usize = 90;
/// The longest backend message accepted as well framed.
pub(crate) const MAX_BACKEND_LEN: usize = 1 << 30;
/// Replays of one failing case while minimizing it.
pub(crate) const MINIMIZE_BUDGET: usize = 150;

pub(crate) const PROTOCOL_3_0: u32 = 0x0003_0000;
pub(crate) const SSL_REQUEST_CODE: u32 = 80_877_103;
pub(crate) const GSSENC_REQUEST_CODE: u32 = 80_877_104;
pub(crate) const CANCEL_REQUEST_CODE: u32 = 80_877_102;

/// What in the server's log means it panicked or died.
pub(crate) const CRASH_PATTERNS: &[&str] = &[
    "panicked",
    "overflowed its stack",
    "fatal runtime error",
    "memory allocation of",
];

pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub(crate) fn env_seed(name: &str) -> Option<u64> {
    let s = std::env::var(name).ok()?;
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub(crate) enum FailureKind {
    /// A panic report in the server's log.
    Panic(PanicReport),
    /// The server process exited.
    Crash,
    /// A case got a malformed answer or none.
    Case(Problem),
    /// A health check failed (process alive).
    Health(String),
    /// Connection slots leaked.
    Leak(String),
}

#[derive(Clone, Debug)]
pub(crate) struct Failure {
    pub(crate) kind: FailureKind,
    /// The case that showed it, if one did.
    pub(crate) case: Option<Case>,
    /// Occurrences (keep-going mode counts repeats).
    pub(crate) count: u64,
    /// The minimized reproduction, once triaged.
    pub(crate) reproduction: Option<Case>,
    /// When it was first seen.
    pub(crate) seen_at: Instant,
    /// The cases that ended just before it was seen (newest first), then
    /// those that ended within a second after: what triage replays.
    pub(crate) suspects: Vec<Case>,
}

impl Failure {
    pub(crate) fn key(&self) -> String {
        match &self.kind {
            FailureKind::Panic(p) => format!("panic: {}", p.key),
            FailureKind::Crash => "crash".into(),
            FailureKind::Case(p) => format!(
                "{}: {}",
                p.kind(),
                mask_digits(p.text()).chars().take(80).collect::<String>()
            ),
            FailureKind::Health(_) => "health".into(),
            FailureKind::Leak(_) => "leak".into(),
        }
    }

    pub(crate) fn title(&self) -> String {
        match &self.kind {
            FailureKind::Panic(p) => format!("the server panicked:\n{}", p.text.trim_end()),
            FailureKind::Crash => "the server process exited".into(),
            FailureKind::Case(p) => format!("{}: {}", p.kind(), p.text()),
            FailureKind::Health(e) => format!("health check failed: {e}"),
            FailureKind::Leak(e) => format!("connection slots leaked: {e}"),
        }
    }

    /// Failures after which fuzzing cannot go on, even in keep-going mode
    /// (there, a crash restarts the server).
    pub(crate) fn stops(&self) -> bool {
        matches!(self.kind, FailureKind::Health(_) | FailureKind::Leak(_))
    }
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) connections: AtomicU64,
    pub(crate) startup_cases: AtomicU64,
    pub(crate) session_cases: AtomicU64,
    pub(crate) strict_cases: AtomicU64,
    pub(crate) answered: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) cut: AtomicU64,
    pub(crate) closed_by_server: AtomicU64,
    pub(crate) closed_silently: AtomicU64,
    pub(crate) fatal: AtomicU64,
    pub(crate) messages: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) health_checks: AtomicU64,
    /// The largest VmRSS sampled (once a second), in KiB.
    pub(crate) peak_rss_kib: AtomicU64,
    pub(crate) classes: Mutex<BTreeMap<String, u64>>,
    pub(crate) codes: Mutex<BTreeMap<String, u64>>,
    pub(crate) internal: Mutex<BTreeMap<String, u64>>,
}

/// How many of the latest cases are kept (suspects of the next failure).
pub(crate) const RECENT: usize = 64;
/// Cases that end this soon after a failure is seen are suspects too.
pub(crate) const SUSPECT_WINDOW: Duration = Duration::from_secs(1);
/// At most this many suspects are replayed for one failure.
pub(crate) const SUSPECTS: usize = 96;
/// The longest triage of one failure, and of all.
pub(crate) const TRIAGE_TIME: Duration = Duration::from_secs(60);
pub(crate) const TRIAGE_TOTAL: Duration = Duration::from_secs(300);

pub(crate) struct Shared {
    /// The server; restarted on its data directory after a crash (in
    /// keep-going mode, and to triage).
    pub(crate) server: tokio::sync::Mutex<TestServer>,
    pub(crate) port: AtomicU16,
    /// The server's process id (0: unknown).
    pub(crate) pid: AtomicU32,
    /// Restarts so far (a case that spans one saw the crash, not a bug of its own).
    pub(crate) generation: AtomicU64,
    pub(crate) seed: u64,
    pub(crate) keep_going: bool,
    pub(crate) deadline: Instant,
    pub(crate) stop: AtomicBool,
    pub(crate) stats: Stats,
    pub(crate) watch: PanicWatch,
    pub(crate) failures: Mutex<Vec<Failure>>,
    /// BackendKeyData of recent sessions, for CancelRequests.
    pub(crate) keys: KeyPool,
    /// The latest cases to end (suspects of a failure seen next).
    pub(crate) recent: Mutex<VecDeque<Case>>,
    /// When the latest new failure was seen.
    pub(crate) last_new_failure: Mutex<Option<Instant>>,
    pub(crate) health: tokio::sync::Mutex<HealthModel>,
}

impl Shared {
    pub(crate) fn new(server: TestServer, seed: u64, keep_going: bool, secs: f64) -> Shared {
        let startup_log = server.stderr();
        let shared = Shared {
            port: AtomicU16::new(server.port()),
            pid: AtomicU32::new(server.pid().unwrap_or(0)),
            generation: AtomicU64::new(0),
            watch: PanicWatch::new(server.log_path()),
            server: tokio::sync::Mutex::new(server),
            seed,
            keep_going,
            deadline: Instant::now() + Duration::from_secs_f64(secs),
            stop: AtomicBool::new(false),
            stats: Stats::default(),
            failures: Mutex::new(Vec::new()),
            keys: Mutex::new(VecDeque::new()),
            recent: Mutex::new(VecDeque::new()),
            last_new_failure: Mutex::new(None),
            health: tokio::sync::Mutex::new(HealthModel::new()),
        };
        // Anything the start-up itself logged.
        for p in parse_panics(&startup_log) {
            shared.fail(FailureKind::Panic(p), None);
        }
        shared
    }

    pub(crate) fn port(&self) -> u16 {
        self.port.load(Ordering::SeqCst)
    }

    pub(crate) fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=ripple dbname=ripple",
            self.port()
        )
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::SeqCst)).filter(|&pid| pid != 0)
    }

    /// The server process has exited (false while its pid is unknown).
    pub(crate) fn dead(&self) -> bool {
        self.pid().is_some_and(|pid| !process_alive(pid))
    }

    /// Waits until what a case did has shown: the process is dead, or its
    /// log holds no half-written report (a failed allocation prints its
    /// backtrace before the process aborts, which can take seconds).
    pub(crate) async fn settle(&self) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.dead() && Instant::now() < deadline {
            let offset = *self.watch.offset.lock().await;
            let log = read_from(&self.watch.path, offset);
            if !backtrace_unfinished(&String::from_utf8_lossy(&log)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the server again on its data directory, then checks that
    /// every acknowledged write of the health check survived.
    pub(crate) async fn restart(&self) -> Result<(), String> {
        {
            let mut server = self.server.lock().await;
            tokio::task::block_in_place(|| server.restart());
            self.port.store(server.port(), Ordering::SeqCst);
            self.pid.store(server.pid().unwrap_or(0), Ordering::SeqCst);
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        let mut model = self.health.lock().await;
        match timeout(HEALTH_TIMEOUT, model.resync(&self.conn_str())).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "fuzz_t unreadable {HEALTH_TIMEOUT:?} after a restart"
            )),
        }
    }

    /// The server died: record it (with its last words), and in keep-going
    /// mode start it again.
    pub(crate) async fn crashed(&self, case: Option<&Case>) {
        self.fail(FailureKind::Crash, case);
        for p in self.watch.scan().await {
            self.fail(FailureKind::Panic(p), case);
        }
        if self.keep_going
            && let Err(e) = self.restart().await
        {
            self.fail(FailureKind::Health(e), None);
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || Instant::now() >= self.deadline
    }

    pub(crate) fn fail(&self, kind: FailureKind, case: Option<&Case>) {
        let failure = Failure {
            kind,
            case: case.cloned(),
            count: 1,
            reproduction: None,
            seen_at: Instant::now(),
            suspects: self.recent.lock().unwrap().iter().rev().take(SUSPECTS / 2).cloned().collect(),
        };
        let key = failure.key();
        let mut failures = self.failures.lock().unwrap();
        if let Some(f) = failures.iter_mut().find(|f| f.key() == key) {
            f.count += 1;
            if f.case.is_none() {
                f.case = case.cloned();
            }
            return;
        }
        println!(
            "wire_fuzz: FAILURE (seed {:#x}): {}",
            self.seed,
            failure.title()
        );
        if let Some(case) = case {
            println!("{}", case.describe(512));
        }
        if !self.keep_going || failure.stops() {
            self.stop.store(true, Ordering::SeqCst);
        }
        failures.push(failure);
        *self.last_new_failure.lock().unwrap() = Some(Instant::now());
    }

    pub(crate) fn remember(&self, case: &Case) {
        {
            let mut q = self.recent.lock().unwrap();
            if q.len() == RECENT {
                q.pop_front();
            }
            q.push_back(case.clone());
        }
        // A failure seen less than a second ago also suspects the cases
        // that end after it (another connection may have noticed it first).
        let recent_failure = self.last_new_failure.lock().unwrap().is_some_and(|t| t.elapsed() < SUSPECT_WINDOW);
        if recent_failure {
            for f in self.failures.lock().unwrap().iter_mut() {
                if f.seen_at.elapsed() < SUSPECT_WINDOW && f.suspects.len() < SUSPECTS {
                    f.suspects.push(case.clone());
                }
            }
        }
    }

    /// Counts a case's outcome and records its failures.
    pub(crate) async fn record(&self, case: &Case, out: &Outcome) {
        let s = &self.stats;
        if out.connected {
            s.connections.fetch_add(1, Ordering::Relaxed);
        }
        if case.session {
            s.session_cases.fetch_add(1, Ordering::Relaxed);
        } else {
            s.startup_cases.fetch_add(1, Ordering::Relaxed);
        }
        if case.strict && case.closing {
            s.strict_cases.fetch_add(1, Ordering::Relaxed);
        }
        if out.answered {
            s.answered.fetch_add(1, Ordering::Relaxed);
        }
        if case.session && out.refused.is_some() {
            s.refused.fetch_add(1, Ordering::Relaxed);
        }
        if case.cut.is_some() {
            s.cut.fetch_add(1, Ordering::Relaxed);
        }
        if out.fatal {
            s.fatal.fetch_add(1, Ordering::Relaxed);
        }
        s.messages.fetch_add(out.messages_sent, Ordering::Relaxed);
        s.bytes.fetch_add(out.bytes_sent, Ordering::Relaxed);
        s.received
            .fetch_add(out.messages_received, Ordering::Relaxed);
        {
            let mut classes = s.classes.lock().unwrap();
            let mut codes = s.codes.lock().unwrap();
            for code in &out.sqlstates {
                *classes.entry(code[..2].to_string()).or_default() += 1;
                *codes.entry(code.clone()).or_default() += 1;
            }
        }
        if !out.internal.is_empty() {
            let mut internal = s.internal.lock().unwrap();
            for m in &out.internal {
                let key = mask_digits(m).chars().take(160).collect::<String>();
                if internal.len() < 100 || internal.contains_key(&key) {
                    *internal.entry(key).or_default() += 1;
                }
            }
        }
        self.remember(case);
        if let Some(problem) = &out.problem {
            self.fail(FailureKind::Case(problem.clone()), Some(case));
        }
        if out.closed_by_server {
            s.closed_by_server.fetch_add(1, Ordering::Relaxed);
            if out.sqlstates.is_empty() {
                s.closed_silently.fetch_add(1, Ordering::Relaxed);
            }
            // A panic in the connection's task closes it: look right away,
            // so the report names this case.
            for p in self.watch.scan().await {
                self.fail(FailureKind::Panic(p), Some(case));
            }
        }
    }

    pub(crate) fn summary(&self, secs: f64) -> String {
        let s = &self.stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let classes = s.classes.lock().unwrap();
        let class_list: Vec<String> = classes.iter().map(|(c, n)| format!("{c}:{n}")).collect();
        let rss = self.pid().and_then(|p| proc_status_kib(p, "VmRSS"));
        let peak = get(&s.peak_rss_kib);
        format!(
            "wire_fuzz summary: {secs:.1} s, seed {:#x}: {} connections ({} start-up cases, {} session cases, {} of \
             them well-formed and {} answered, {} start-ups refused, {} cut), {} messages sent ({:.1} MB), {} received; \
             {} FATAL errors; the server closed {} connections ({} without an error); errors by SQLSTATE class: \
             {} ({} in all); \
             {} health checks; {} restarts after a crash; server RSS {} (peak sampled {})",
            self.seed,
            get(&s.connections),
            get(&s.startup_cases),
            get(&s.session_cases),
            get(&s.strict_cases),
            get(&s.answered),
            get(&s.refused),
            get(&s.cut),
            get(&s.messages),
            get(&s.bytes) as f64 / 1e6,
            get(&s.received),
            get(&s.fatal),
            get(&s.closed_by_server),
            get(&s.closed_silently),
            if class_list.is_empty() {
                "none".to_string()
            } else {
                class_list.join(" ")
            },
            classes.values().sum::<u64>(),
            get(&s.health_checks),
            self.generation.load(Ordering::SeqCst),
            rss.map_or("unknown".to_string(), mib),
            if peak == 0 { "unknown".to_string() } else { mib(peak) },
        )
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

/// One fuzzing task: cases until the deadline or a stop.
pub(crate) async fn fuzz_task(shared: Arc<Shared>, task: usize) {
    let mut rng = Rng::new(shared.seed ^ (task as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93));
    let mut n = 0u64;
    while !shared.stopped() {
        let case_seed = rng.next_u64();
        let keys: Vec<(u32, Vec<u8>)> = shared.keys.lock().unwrap().iter().cloned().collect();
        let origin = format!("task {task} #{n} (RIPPLE_FUZZ_CASE={case_seed:#x})");
        let case = gen_case(&mut Rng::new(case_seed), origin, &keys);
        let marker = format!("wire-fuzz-end-{task}-{n}");
        n += 1;
        let generation = shared.generation.load(Ordering::SeqCst);
        let mut out = run_case(shared.port(), &case, &marker, Some(&shared.keys)).await;
        if matches!(out.problem, Some(Problem::SilentClose(_) | Problem::Hang(_))) {
            // Did the whole server die under it (another case's crash)?
            shared.settle().await;
            if shared.dead() || shared.generation.load(Ordering::SeqCst) != generation {
                out.problem = None;
            }
        }
        if !out.connected {
            // The server is down (it crashed; the health task notices, and
            // restarts it in keep-going mode).
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        shared.record(&case, &out).await;
    }
}

/// Health checks every `HEALTH_EVERY` while fuzzing; also watches the log.
pub(crate) async fn health_task(shared: Arc<Shared>, started: Instant) {
    let mut last_progress = Instant::now();
    while !shared.stopped() {
        let next = Instant::now() + HEALTH_EVERY;
        while Instant::now() < next && !shared.stopped() {
            tokio::time::sleep(TICK).await;
        }
        if shared.stopped() {
            break;
        }
        check_all(&shared).await;
        if last_progress.elapsed() >= Duration::from_secs(60) {
            last_progress = Instant::now();
            println!("{}", shared.summary(started.elapsed().as_secs_f64()));
        }
    }
}

/// Process alive, health check, new panics in the log.
pub(crate) async fn check_all(shared: &Shared) {
    if shared.dead() {
        shared.crashed(None).await;
        return;
    }
    if let Some(rss) = shared.pid().and_then(|pid| proc_status_kib(pid, "VmRSS")) {
        shared.stats.peak_rss_kib.fetch_max(rss, Ordering::Relaxed);
    }
    let result = {
        let mut model = shared.health.lock().await;
        health_check(&shared.conn_str(), &mut model).await
    };
    shared.stats.health_checks.fetch_add(1, Ordering::Relaxed);
    if shared.dead() {
        shared.crashed(None).await;
        return;
    }
    for p in shared.watch.scan().await {
        shared.fail(FailureKind::Panic(p), None);
    }
    if let Err(e) = result {
        shared.fail(FailureKind::Health(e), None);
    }
}

pub(crate) async fn setup(server: &TestServer) {
    let client = server.connect().await;
    exec(&client, SETUP).await;
}

pub(crate) fn start_server() -> TestServer {
    TestServer::start_with_env(
        2,
        &[],
        &[("RUST_BACKTRACE", "1"), ("RUST_LIB_BACKTRACE", "0")],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
pub(crate) async fn wire_fuzz() {
    let secs: f64 = env_or("RIPPLE_FUZZ_SECS", DEFAULT_SECS as f64);
    let tasks: usize = env_or("RIPPLE_FUZZ_TASKS", DEFAULT_TASKS).max(1);
    let keep_going =
        std::env::var("RIPPLE_FUZZ_KEEP_GOING").is_ok_and(|v| v != "0" && !v.is_empty());
    let seed = env_seed("RIPPLE_FUZZ_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let only_case = env_seed("RIPPLE_FUZZ_CASE");
    let replay = std::env::var("RIPPLE_FUZZ_REPLAY").ok().map(|hex| {
        let hex: String = hex.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    });
    println!(
        "wire_fuzz: seed {seed:#x} ({secs} s, {tasks} tasks{}); replay with RIPPLE_FUZZ_SEED={seed:#x}",
        if keep_going { ", keep going" } else { "" }
    );
    let started = Instant::now();
    let server = start_server();
    setup(&server).await;
    let shared = Arc::new(Shared::new(server, seed, keep_going, secs));

    if let Some(case_seed) = only_case {
        // One case, as a report named it.
        let case = gen_case(
            &mut Rng::new(case_seed),
            format!("RIPPLE_FUZZ_CASE={case_seed:#x}"),
            &[],
        );
        println!("{}", case.describe(4096));
        println!("outcome: {:?}", replay_one(&shared, &case).await);
    } else if let Some(bytes) = replay {
        // Given bytes, as REGRESSIONS would send them.
        let case = Case::regression(0, &bytes);
        println!("{}", case.describe(4096));
        println!("outcome: {:?}", replay_one(&shared, &case).await);
    } else {
        // The regressions, one at a time, each checked on its own.
        for (i, bytes) in REGRESSIONS.iter().enumerate() {
            replay_one(&shared, &Case::regression(i, bytes)).await;
            if shared.dead() || shared.stop.load(Ordering::SeqCst) {
                break;
            }
        }
        check_all(&shared).await;
        println!(
            "wire_fuzz: {} regressions replayed ({:.1} s since start)",
            REGRESSIONS.len(),
            started.elapsed().as_secs_f64()
        );

        // Fuzz.
        let fuzz_started = Instant::now();
        let mut handles = Vec::new();
        for task in 0..tasks {
            handles.push(tokio::spawn(fuzz_task(shared.clone(), task)));
        }
        handles.push(tokio::spawn(health_task(shared.clone(), fuzz_started)));
        for h in handles {
            if let Err(e) = h.await {
                shared.fail(
                    FailureKind::Health(format!("a fuzzing task failed: {e}")),
                    None,
                );
            }
        }
    }

    // The end: healthy, and no connection slot leaked.
    if shared.dead() {
        shared.crashed(None).await;
    } else {
        check_all(&shared).await;
        if let Err(e) = slot_check(&shared.conn_str()).await {
            shared.fail(FailureKind::Leak(e), None);
        }
        for p in shared.watch.scan().await {
            shared.fail(FailureKind::Panic(p), None);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let summary = shared.summary(elapsed);

    let mut failures = shared.failures.lock().unwrap().clone();
    if !failures.is_empty() {
        triage(&shared, &mut failures).await;
    }

    println!("{summary}");
    print_sqlstates(&shared.stats);
    if failures.is_empty() {
        println!("wire_fuzz: no failures");
        return;
    }
    let mut report = format!(
        "wire_fuzz: {} distinct failure(s), seed {seed:#x} (RIPPLE_FUZZ_SEED={seed:#x}):\n",
        failures.len()
    );
    for (i, f) in failures.iter().enumerate() {
        let _ = writeln!(
            report,
            "\n#{} ({} occurrence(s)) {}",
            i + 1,
            f.count,
            f.title()
        );
        match (&f.reproduction, &f.case) {
            (Some(r), _) => {
                let _ = writeln!(
                    report,
                    "reproduced alone and minimized:\n{}",
                    r.describe(8192)
                );
                let _ = writeln!(
                    report,
                    "as one REGRESSIONS entry: {}",
                    escape_limited(&regression_bytes(r), 8192)
                );
            }
            (None, Some(c)) => {
                let _ = writeln!(
                    report,
                    "seen on (not reproduced alone):\n{}",
                    c.describe(2048)
                );
            }
            (None, None) => {}
        }
    }
    let _ = writeln!(report, "\n{}", shared.server.lock().await.stderr_tail());
    panic!("{report}");
}

/// Runs one case alone (nothing else runs): a panic in the log is its, a
/// crash is its.
pub(crate) async fn replay_one(shared: &Shared, case: &Case) -> Outcome {
    let out = run_case(shared.port(), case, "wire-fuzz-end", None).await;
    shared.settle().await;
    shared.record(case, &out).await;
    if shared.dead() {
        shared.crashed(Some(case)).await;
    }
    for p in shared.watch.scan().await {
        shared.fail(FailureKind::Panic(p), Some(case));
    }
    out
}

/// A case as one REGRESSIONS entry (its start-up implied by a leading letter).
pub(crate) fn regression_bytes(case: &Case) -> Vec<u8> {
    let mut out = case.sent();
    if case.closing && case.cut.is_none() {
        out.extend(closing("wire-fuzz-end"));
    }
    out
}

pub(crate) fn print_sqlstates(stats: &Stats) {
    let codes = stats.codes.lock().unwrap();
    let mut top: Vec<(&String, &u64)> = codes.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = top
        .iter()
        .take(30)
        .map(|(c, n)| format!("{c}:{n}"))
        .collect();
    println!("wire_fuzz: most frequent SQLSTATEs: {}", list.join(" "));
    let internal = stats.internal.lock().unwrap();
    if !internal.is_empty() {
        println!("wire_fuzz: internal errors (XX, worth a look):");
        for (m, n) in internal.iter() {
            println!("  {n:>6} x {m}");
        }
    }
}

// ---------------------------------------------------------------------------
// Unit tests of the fuzzer's own pieces
// ---------------------------------------------------------------------------

#[test]
fn regressions_are_what_they_say() {
    // The hand-written length fields of the start-up packets match their bodies.
    let valid = startup_message(
        PROTOCOL_3_0,
        &[(b"user", b"ripple"), (b"database", b"ripple")],
    );
    assert_eq!(&valid[..4], b"\x00\x00\x00\x25");
    assert_eq!(
        &REGRESSIONS[5][4..],
        &startup_message(
            0x0002_0000,
            &[(b"user", b"ripple"), (b"database", b"ripple")]
        )[4..]
    );
    // The 65,535-parameter messages parse as what they claim.
    assert_eq!(PARSE_BIND_65535[0], b'P');
    let parse_len = u32::from_be_bytes(PARSE_BIND_65535[1..5].try_into().unwrap()) as usize;
    assert_eq!(parse_len + 1, PARSE_65535_LEN);
    assert_eq!(PARSE_BIND_65535[PARSE_65535_LEN], b'B');
    assert_eq!(
        &PARSE_BIND_65535[PARSE_BIND_65535.len() - EXECUTE_SYNC.len()..],
        EXECUTE_SYNC
    );
    let expected = bind(b"", b"", &[], &vec![None; N_65535], &[]);
    assert_eq!(&BIND_65535[..BIND_65535_MSG_LEN], &expected[..]);
    assert_eq!(
        &PARSE_BIND_65535[PARSE_65535_LEN..PARSE_65535_LEN + BIND_65535_MSG_LEN],
        &expected[..]
    );
    let parse_msg = parse(b"", b"SELECT $1::int IS NULL", &[23; N_65535]);
    assert_eq!(&PARSE_BIND_65535[..PARSE_65535_LEN], &parse_msg[..]);
    // The array case (the last of REGRESSIONS) is what its comment says.
    let header = [1i32, 0, 25, i32::MAX, 1]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect::<Vec<u8>>();
    let array_case = [
        parse(b"", b"SELECT $1::text[]", &[1009]),
        bind(b"", b"", &[1], &[Some(header)], &[]),
        execute(b"", 0),
        sync(),
    ]
    .concat();
    assert_eq!(REGRESSIONS.last().copied(), Some(&array_case[..]));
    // Every typed regression frames its messages: lengths add up (except
    // the ones about broken lengths, which say so).
    for (i, r) in REGRESSIONS.iter().enumerate() {
        assert!(!r.is_empty(), "REGRESSIONS[{i}] is empty");
    }
}

#[test]
fn error_fields_are_checked() {
    assert!(notice_fields(b'E', b"SERROR\0C42601\0Msyntax error\0\0").is_ok());
    assert!(notice_fields(b'E', b"SERROR\0C4260\0Mx\0\0").is_err());
    assert!(notice_fields(b'E', b"SERROR\0Mx\0\0").is_err());
    assert!(notice_fields(b'E', b"SERROR\0C42601\0Mx\0").is_err());
    assert!(notice_fields(b'E', b"SNOTICE\0C42601\0Mx\0\0").is_err());
    assert!(notice_fields(b'N', b"SWARNING\0C25P01\0Mx\0\0").is_ok());
    assert_eq!(
        negotiation_answers(
            &[
                code_packet(SSL_REQUEST_CODE),
                code_packet(GSSENC_REQUEST_CODE)
            ]
            .concat()
        ),
        2
    );
    assert_eq!(
        negotiation_answers(
            &[code_packet(SSL_REQUEST_CODE), code_packet(SSL_REQUEST_CODE)].concat()
        ),
        2
    );
    assert_eq!(negotiation_answers(&session_startup()), 0);
    let reports = parse_panics(
        "2026 INFO x\nthread 'tokio-runtime-worker' panicked at /x/bytes-1.0/src/buf/buf_impl.rs:290:5:\n\
         advance out of bounds: the len is 0 but advancing by 2\nstack backtrace:\n   \
         3: bytes::buf::buf_impl::Buf::get_u16\n             at /x/buf_impl.rs:290:5\n   \
         4: pgwire::messages::extendedquery::Parse::decode_body\n             at /x/extendedquery.rs:54:35\n\
         2026 INFO y\n",
    );
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0]
            .key
            .contains("pgwire::messages::extendedquery::Parse::decode_body"),
        "{}",
        reports[0].key
    );
    assert!(reports[0].text.contains("advance out of bounds"));
}
