//! Triage: each failure reproduced on a quiet server, then minimized to
//! a regression case.

use super::*;

// ---------------------------------------------------------------------------
// Triage: reproduce each failure on a quiet server, then minimize
// ---------------------------------------------------------------------------

/// Replays cases one at a time.
pub(crate) struct Replayer<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) budget: usize,
    pub(crate) deadline: Instant,
}

impl Replayer<'_> {
    /// Runs `case` alone; whether it shows `kind` (the same panic, a crash,
    /// or the same kind of case problem). Restarts a dead server.
    pub(crate) async fn reproduces(&mut self, case: &Case, kind: &FailureKind) -> bool {
        if self.budget == 0 || Instant::now() > self.deadline {
            return false;
        }
        self.budget -= 1;
        let shared = self.shared;
        if shared.dead() {
            // Same data directory: the tables are there.
            let _ = shared.restart().await;
        }
        shared.watch.skip().await;
        let out = run_case(shared.port(), case, "wire-fuzz-end", None).await;
        shared.settle().await;
        let dead = shared.dead();
        let panics = shared.watch.scan().await;
        match kind {
            FailureKind::Panic(p) => panics.iter().any(|q| q.key == p.key),
            FailureKind::Crash => dead,
            FailureKind::Case(problem) => {
                !dead && out.problem.as_ref().is_some_and(|q| q.kind() == problem.kind())
            }
            FailureKind::Health(_) | FailureKind::Leak(_) => false,
        }
    }
}

pub(crate) async fn triage(shared: &Shared, failures: &mut [Failure]) {
    let mut replayer = Replayer {
        shared,
        budget: 0,
        deadline: Instant::now(),
    };
    let end = Instant::now() + TRIAGE_TOTAL;
    // Crashes first, then panics in ripple's own code, then the rest.
    let rank = |f: &Failure| match &f.kind {
        FailureKind::Crash => 0,
        FailureKind::Panic(p) if p.key.contains("ripple::") => 1,
        FailureKind::Case(_) => 2,
        _ => 3,
    };
    let mut order: Vec<usize> = (0..failures.len()).collect();
    order.sort_by_key(|&i| rank(&failures[i]));
    for i in order {
        let f = &mut failures[i];
        if Instant::now() > end {
            println!("wire_fuzz: no time left to triage: {}", f.key());
            continue;
        }
        if matches!(f.kind, FailureKind::Health(_) | FailureKind::Leak(_)) {
            continue;
        }
        println!("wire_fuzz: triage of: {}", f.key());
        replayer.budget = SUSPECTS + 1;
        replayer.deadline = (Instant::now() + TRIAGE_TIME).min(end);
        // The case that showed it first, then its suspects.
        let mut candidates: Vec<&Case> = f.case.iter().collect();
        candidates.extend(f.suspects.iter());
        let mut found = None;
        for c in candidates {
            if replayer.reproduces(c, &f.kind).await {
                found = Some(c.clone());
                break;
            }
        }
        let Some(case) = found else {
            println!("wire_fuzz: could not reproduce it with one case alone");
            continue;
        };
        replayer.budget = MINIMIZE_BUDGET;
        let minimal = minimize(&mut replayer, case, &f.kind).await;
        println!("wire_fuzz: minimized:\n{}", minimal.describe(4096));
        f.reproduction = Some(minimal);
    }
    if shared.dead() {
        let _ = shared.restart().await;
    }
}

/// Shrinks a case while it still reproduces: without the closing
/// messages; one chunk alone; without each chunk; each chunk's shortest
/// prefix; then without halves, quarters, ... of each chunk.
pub(crate) async fn minimize(replayer: &mut Replayer<'_>, mut case: Case, kind: &FailureKind) -> Case {
    case.origin = format!("{} (minimized)", case.origin);
    if let (Some(cut), Some(last)) = (case.cut, case.chunks.last_mut()) {
        // Bytes past the cut are never sent: drop them, and keep closing
        // right after the (now whole) last chunk, whichever it becomes.
        last.truncate(cut);
        case.cut = Some(usize::MAX);
    }
    if case.closing {
        let mut c = case.clone();
        c.closing = false;
        if replayer.reproduces(&c, kind).await {
            case = c;
        }
    }
    if case.chunks.len() > 1 {
        for i in (0..case.chunks.len()).rev() {
            let mut c = case.clone();
            c.chunks = vec![case.chunks[i].clone()];
            if replayer.reproduces(&c, kind).await {
                case = c;
                break;
            }
        }
    }
    let mut i = case.chunks.len();
    while i > 0 && case.chunks.len() > 1 && replayer.budget > 0 {
        i -= 1;
        let mut c = case.clone();
        c.chunks.remove(i);
        if replayer.reproduces(&c, kind).await {
            case = c;
        }
    }
    for i in 0..case.chunks.len() {
        // The shortest prefix that still reproduces (bisection).
        let (mut lo, mut hi) = (0, case.chunks[i].len());
        while lo < hi && replayer.budget > 0 {
            let mid = (lo + hi) / 2;
            let mut c = case.clone();
            c.chunks[i].truncate(mid);
            if replayer.reproduces(&c, kind).await {
                hi = mid;
                case = c;
            } else {
                lo = mid + 1;
            }
        }
        // Then windows of halves, quarters, ... from the end.
        let mut size = case.chunks[i].len() / 2;
        while size > 0 && replayer.budget > 0 {
            let mut shrunk = false;
            let mut start = case.chunks[i].len().saturating_sub(size);
            loop {
                let mut c = case.clone();
                let end = (start + size).min(c.chunks[i].len());
                c.chunks[i].drain(start..end);
                if replayer.reproduces(&c, kind).await {
                    case = c;
                    shrunk = true;
                    break;
                }
                if start == 0 || replayer.budget == 0 {
                    break;
                }
                start = start.saturating_sub(size);
            }
            if !shrunk {
                size /= 2;
            }
        }
    }
    case.chunks.retain(|c| !c.is_empty());
    case
}

/// The `PENDING` reproductions, each alone on one server: passes once none
/// makes the server panic (then move them to `REGRESSIONS`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "reproductions of open bugs (PENDING); run with --ignored"]
pub(crate) async fn pending_reproductions() {
    let server = start_server();
    setup(&server).await;
    let shared = Shared::new(server, 0, true, 0.0);
    let occurrences = |shared: &Shared| {
        shared
            .failures
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.count)
            .sum::<u64>()
    };
    let mut still = Vec::new();
    for (i, bytes) in PENDING.iter().enumerate() {
        if shared.dead() {
            shared
                .restart()
                .await
                .expect("restart after a pending case crashed it");
        }
        // Only these bytes: pgwire's decoders read past a message into
        // whatever follows, which can turn the panic into a desync.
        let mut case = Case::regression(i, bytes);
        case.origin = format!("PENDING[{i}]");
        case.closing = false;
        let before = occurrences(&shared);
        replay_one(&shared, &case).await;
        if occurrences(&shared) > before {
            still.push(format!("PENDING[{i}] {}", escape(bytes)));
        }
    }
    check_all(&shared).await;
    let failures = shared.failures.lock().unwrap().clone();
    let titles: Vec<String> = failures.iter().map(Failure::title).collect();
    assert!(
        still.is_empty() && failures.is_empty(),
        "{} pending reproduction(s) still fail:\n{}\n\n{}",
        still.len(),
        still.join("\n"),
        titles.join("\n\n")
    );
}
