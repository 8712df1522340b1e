//! Moving bins of keyed state between the workers while writes go on
//! (`dataflow/bins.rs`, Megaphone): `ALTER CLUSTER default REBALANCE`,
//! `ALTER CLUSTER default MOVE BINS (...) TO WORKER n`, and the automatic
//! response to skew (`--rebalance-above SHARE`).
//!
//! A migration is a list of moves (bin, new worker), divided into steps
//! (`MigrationSteps`). Each step is committed at a timestamp of its own
//! — the new bin map is written with it, so a restart keeps it — sent to
//! the workers before that timestamp's `Advance`, and the next step
//! starts once every arrangement is complete through it (every moved
//! bin's state has arrived). Batched (the default) is paced: the first
//! step moves one bin and the size doubles while steps take under half of
//! `STEP_TARGET` and halves while they take more, because what a bin costs
//! to move depends on its state and on the operators downstream of it;
//! `batch = n` fixes `n` bins per step. All at once, every move shares one
//! timestamp: the same work in one step, as systems that migrate all
//! state at once do.
//!
//! Which bins to move (`balance`): a bin's work over a second (since the
//! last rebalance if that second was quiet) is the updates routed to it
//! and the records its joins produced (`bins::BinWork`: a hot key joined
//! to eight rows costs its worker eight outputs per update); a worker's
//! load is the CPU time its thread used in that second, priced in work at
//! the highest cost per unit among the workers holding a fair part of the
//! work. Bins leave the most loaded worker for the least loaded one while
//! that lowers the maximum, the heaviest bins that do not overshoot
//! first. A single hot key's bin cannot be split, and it holds the most
//! state, so it stays and the others leave its worker. A balance goes in
//! rounds, each measuring anew, until the workers' CPU times are near
//! even.
//!
//! Owns: choosing moves, committing the steps, the bin map's record, the
//! progress and the rows of `ripple_catalog.cluster_bins` and
//! `cluster_rebalance`. Must not: move state (the workers' routers do).

use super::*;
use crate::dataflow::bins::{BinMap, BinStats, Move, BINS};
use crate::sql::{ClusterMoves, MigrationSteps};
use std::time::Duration;

/// The bin map's record in the storage's metadata.
pub(super) const META_BINS: &str = "bins";

/// How long a step may take to arrive everywhere before the next one
/// starts anyway (a view stopped by the memory limit never completes).
const STEP_LIMIT: Duration = Duration::from_secs(120);

/// How long `REBALANCE` watches the routers to weigh the bins.
const LOAD_WINDOW: Duration = Duration::from_secs(1);

/// Less work than this in the window (updates routed and join outputs):
/// weigh the bins by their work since the last rebalance instead.
const LOAD_WINDOW_MIN: u64 = 1_000;

/// At most this many rounds of measuring and moving in one balance.
const BALANCE_ROUNDS: usize = 4;

/// A round after the first moves nothing when the busiest worker's share
/// of the workers' CPU time is within this of an even share. Small: a
/// round measures while writes go on below what the workers can take,
/// where each worker's fixed cost (stepping every operator at every
/// timestamp) is in both CPU times and narrows their gap. In the skew
/// benchmark, balances stopped at 4 points left 58 % against 42 % when
/// the workers were saturated, and the throughput below what it was.
const BALANCE_SETTLED: f64 = 0.02;

/// A round after the first waits this long before it measures: the state
/// that just arrived is merged into its new worker's arrangements, and
/// updates held behind the last step catch up, both costs of the move
/// and not of the bins. Measured at once, the receiving worker looked
/// busier than it would be, and a batched balance stopped short in the
/// skew benchmark (61 % of the work on one worker against 58 % all at
/// once, and throughput after 13 % below its own window before).
const SETTLE_PAUSE: Duration = Duration::from_secs(2);

/// How long a round after the first measures (longer than the first
/// round's `LOAD_WINDOW`: the gap it looks for is smaller).
const SETTLE_WINDOW: Duration = Duration::from_secs(2);

/// How often the automatic response looks at the workers' loads.
const SKEW_INTERVAL: Duration = Duration::from_secs(5);

/// Less work than this in an interval (updates routed and join outputs)
/// is not a skew worth moving state for.
const SKEW_MIN_WORK: u64 = 10_000;

/// What a paced step should take: commit to every moved bin's state
/// arrived (and the work downstream of it done). Moving a bin costs its
/// records twice (gone from one worker, arrived at another) and whatever
/// its operators downstream do with them: a join recomputes its moved
/// outputs on both workers, where they cancel.
const STEP_TARGET: Duration = Duration::from_millis(100);

/// How many bins the next step moves.
struct Pace {
    steps: MigrationSteps,
    size: usize,
}

impl Pace {
    fn new(steps: MigrationSteps) -> Pace {
        let size = match steps {
            MigrationSteps::AllAtOnce => BINS,
            MigrationSteps::Bins(n) => n.max(1),
            MigrationSteps::Paced => 1,
        };
        Pace { steps, size }
    }

    /// A step took `elapsed`: paced, the next one doubles while steps take
    /// under half the target and halves while they take more than it.
    fn took(&mut self, elapsed: Duration) {
        if self.steps == MigrationSteps::Paced {
            if elapsed < STEP_TARGET / 2 {
                self.size = (self.size * 2).min(BINS);
            } else if elapsed > STEP_TARGET {
                self.size = (self.size / 2).max(1);
            }
        }
    }

    /// The steps `bins` more moves take at the current size.
    fn steps_left(&self, bins: usize) -> usize {
        bins.div_ceil(self.size)
    }
}

/// The last (or running) migration, for `ripple_catalog.cluster_rebalance`.
#[derive(Clone, Debug)]
pub(super) struct Progress {
    pub reason: &'static str,
    pub strategy: &'static str,
    pub steps: usize,
    pub steps_done: usize,
    pub bins: usize,
    pub bins_moved: usize,
    pub records_moved: u64,
    pub started: chrono::DateTime<chrono::Utc>,
    pub finished: Option<chrono::DateTime<chrono::Utc>>,
    pub error: Option<String>,
}

/// The coordinator's side of rebalancing.
#[derive(Default)]
pub(super) struct Rebalancer {
    /// Held for a whole migration: one at a time.
    running: tokio::sync::Mutex<()>,
    progress: parking_lot::Mutex<Option<Progress>>,
    /// Work per bin (`Coordinator::load`, summed over the workers) when
    /// the last migration ended: loads are counted from there.
    baseline: parking_lot::Mutex<Vec<u64>>,
}

/// The map that evens out `load` (per bin) over `workers`, from `map`,
/// moving as few bins as it can: while some bin of the most loaded worker
/// is lighter than the gap to the least loaded one, the bin nearest half
/// the gap moves there (the maximum drops each time).
///
/// `cpu` (per worker, the CPU time used over the same window as `load`;
/// empty or any zero: unknown) says what a worker's work cost it. A unit
/// of work does not cost the same everywhere: a hot key's updates are
/// consolidated into a few records before its state is touched, while
/// the same count spread over many keys touches as many. Counted in work
/// alone, a worker holding the hot key looks busier than it is and gives
/// away too much (the workers' CPU split reversed in the skew benchmark).
/// So a worker's load is its CPU time, in work units at the highest cost
/// per unit among the workers holding at least a quarter of an even share
/// of the work (`cpu / rate`), and a bin moves its work at
/// that cost: moves err on the side of moving less, and the costliest
/// worker's load is its work exactly.
pub(super) fn balance(map: &BinMap, load: &[u64], cpu: &[u64], workers: usize) -> BinMap {
    let workers = workers.max(1);
    // A bin's updates, and a share of one for the bin itself: without
    // traffic the bins even out by count, with it the count only breaks
    // ties.
    let weight = |b: usize| load.get(b).copied().unwrap_or(0).saturating_mul(BINS as u64).saturating_add(1);
    let mut owners: Vec<u32> = map.owners().iter().map(|w| (*w).min(workers as u32 - 1)).collect();
    let mut per_worker = vec![0u64; workers];
    for (b, w) in owners.iter().enumerate() {
        per_worker[*w as usize] += weight(b);
    }
    if cpu.len() == workers && cpu.iter().all(|c| *c > 0) {
        // The highest CPU time per unit of work, of the workers with a
        // fair part of the work: a nearly idle worker's CPU time is its
        // fixed cost (stepping, progress), not its bins'.
        let total: u64 = per_worker.iter().sum();
        let rate = (0..workers)
            .filter(|w| per_worker[*w] > 0 && per_worker[*w] >= total / (4 * workers as u64))
            .map(|w| cpu[w] as f64 / per_worker[w] as f64)
            .fold(0.0, f64::max);
        if rate > 0.0 {
            for (w, load) in per_worker.iter_mut().enumerate() {
                *load = (cpu[w] as f64 / rate).round() as u64;
            }
        }
    }
    for _ in 0..BINS {
        let (hi, lo) = {
            let mut by_load: Vec<usize> = (0..workers).collect();
            by_load.sort_by_key(|w| (per_worker[*w], *w));
            (by_load[workers - 1], by_load[0])
        };
        let gap = per_worker[hi] - per_worker[lo];
        // A bin no heavier than half the gap lowers the maximum without
        // making its new worker the most loaded: the heaviest of those
        // goes first (fewest moves). A heavier bin (a hot key's, with the
        // most state to move) only when no such bin is left.
        let on_hi = || (0..BINS).filter(|b| owners[*b] as usize == hi);
        let best = on_hi().filter(|b| weight(*b) <= gap / 2).max_by_key(|b| (weight(*b), std::cmp::Reverse(*b))).or_else(|| {
            on_hi().filter(|b| weight(*b) < gap).min_by_key(|b| {
                let w = weight(*b);
                (w.max(gap / 2) - w.min(gap / 2), *b)
            })
        });
        let Some(b) = best else { break };
        owners[b] = lo as u32;
        per_worker[hi] -= weight(b).min(per_worker[hi]);
        per_worker[lo] += weight(b);
    }
    BinMap::from_owners(owners, workers).unwrap_or_else(|| map.clone())
}

/// The share of `load` on its most loaded worker under `map`.
pub(super) fn top_share(map: &BinMap, load: &[u64], workers: usize) -> f64 {
    let mut per_worker = vec![0u64; workers.max(1)];
    for (b, l) in load.iter().enumerate().take(BINS) {
        if let Some(w) = per_worker.get_mut(map.owner(b)) {
            *w += l;
        }
    }
    let total: u64 = per_worker.iter().sum();
    if total == 0 {
        return 0.0;
    }
    per_worker.iter().copied().max().unwrap_or(0) as f64 / total as f64
}

/// The bin map recorded in the storage's metadata, if it suits `workers`.
pub(super) fn recorded_map(meta: &HashMap<String, Vec<u8>>, workers: usize) -> Option<BinMap> {
    let owners: Vec<u32> = serde_json::from_slice(meta.get(META_BINS)?).ok()?;
    BinMap::from_owners(owners, workers)
}

impl Coordinator {
    /// The workers' bins: per worker, what it reports.
    async fn bin_stats(&self) -> Vec<BinStats> {
        let mut rx = self.dataflow.router().bin_stats();
        self.dataflow.broadcast(Command::BinStats { request: rx.request() });
        let mut out = vec![BinStats::default(); self.dataflow.workers()];
        for _ in 0..self.dataflow.workers() {
            let Some((worker, stats)) = rx.recv().await else { break };
            if let Some(slot) = out.get_mut(worker) {
                *slot = stats;
            }
        }
        out
    }

    /// Updates routed per bin, summed over the workers.
    fn routed(stats: &[BinStats]) -> Vec<u64> {
        Self::per_bin(stats, |s| &s.routed)
    }

    /// The work per bin, summed over the workers: the updates routed to
    /// it and the records its joins produced (a key joined to many rows
    /// costs more than its updates).
    fn load(stats: &[BinStats]) -> Vec<u64> {
        let produced = Self::per_bin(stats, |s| &s.produced);
        Self::routed(stats).iter().zip(produced).map(|(r, p)| r + p).collect()
    }

    /// Per worker, the CPU time its thread used between two reports.
    fn cpu_between(before: &[BinStats], after: &[BinStats]) -> Vec<u64> {
        before.iter().zip(after).map(|(b, a)| a.cpu_ns.saturating_sub(b.cpu_ns)).collect()
    }

    fn per_bin(stats: &[BinStats], counts: impl Fn(&BinStats) -> &Vec<u64>) -> Vec<u64> {
        let mut sum = vec![0u64; BINS];
        for s in stats {
            for (b, n) in counts(s).iter().enumerate().take(BINS) {
                sum[b] += n;
            }
        }
        sum
    }

    /// `ALTER CLUSTER`: the moves, committed step by step.
    pub(super) async fn alter_cluster(&self, moves: ClusterMoves, steps: MigrationSteps) -> Result<ExecuteResponse, Error> {
        let workers = self.dataflow.workers();
        if let ClusterMoves::Bins { worker, .. } = &moves {
            if *worker as usize >= workers {
                return Err(Error::InvalidParameter(format!(
                    "worker {worker} does not exist: the cluster has {workers} worker{} (0 to {})",
                    if workers == 1 { "" } else { "s" },
                    workers - 1
                )));
            }
        }
        let moved = self.migrate(moves, steps, "requested").await?;
        Ok(ExecuteResponse::Command { tag: "ALTER CLUSTER".into(), rows: Some(moved as u64) })
    }

    /// Moves bins as `moves` asks, in `steps`; the bins moved. A balance
    /// goes in rounds (`BALANCE_ROUNDS`): each measures the workers again
    /// and moves what is still uneven, until their CPU times are within
    /// `BALANCE_SETTLED` of an even share. The weights price moves at the
    /// highest cost per unit of work, which counts a worker's fixed cost
    /// as its bins' and so moves too little rather than too much; the next
    /// round sees what the last one did.
    async fn migrate(&self, moves: ClusterMoves, steps: MigrationSteps, reason: &'static str) -> Result<usize, Error> {
        let Ok(_running) = self.rebalancer.running.try_lock() else {
            return Err(Error::ObjectInUse("a rebalance of cluster \"default\" is already running".into()));
        };
        self.wait_ready().await?;
        let workers = self.dataflow.workers();
        let stats = self.bin_stats().await;
        let migrated_before: u64 = stats.iter().map(|s| s.migrated).sum();
        *self.rebalancer.progress.lock() = Some(Progress {
            reason,
            strategy: if steps == MigrationSteps::AllAtOnce { "all_at_once" } else { "batched" },
            steps: 0,
            steps_done: 0,
            bins: 0,
            bins_moved: 0,
            records_moved: 0,
            started: chrono::Utc::now(),
            finished: None,
            error: None,
        });
        let result = async {
            let mut moved = 0;
            for round in 0..BALANCE_ROUNDS {
                let current = self.state.lock().await.bins.clone();
                let target = match &moves {
                    ClusterMoves::Balance => match self.balanced(&current, workers, round > 0).await {
                        Some(target) => target,
                        None => break,
                    },
                    ClusterMoves::Bins { bins, worker } => {
                        let moves: Vec<Move> = bins.iter().map(|bin| Move { bin: *bin, to: *worker }).collect();
                        current.with_moves(&moves)
                    }
                };
                let all = current.moves_to(&target);
                if all.is_empty() {
                    break;
                }
                let mut pace = Pace::new(steps);
                if let Some(p) = self.rebalancer.progress.lock().as_mut() {
                    p.bins = moved + all.len();
                    p.steps = p.steps_done + pace.steps_left(all.len());
                }
                tracing::info!(round, bins = all.len(), "a balance round moves bins");
                self.run_steps(&all, &mut pace, moved, migrated_before).await?;
                moved += all.len();
                if matches!(moves, ClusterMoves::Bins { .. }) {
                    break;
                }
            }
            Ok(moved)
        }
        .await;
        let end = self.bin_stats().await;
        *self.rebalancer.baseline.lock() = Self::load(&end);
        if let Some(p) = self.rebalancer.progress.lock().as_mut() {
            p.finished = Some(chrono::Utc::now());
            p.records_moved = end.iter().map(|s| s.migrated).sum::<u64>().saturating_sub(migrated_before);
            p.error = result.as_ref().err().map(|e: &Error| e.to_string());
        }
        result
    }

    /// The map that evens out the workers' load now: their work and CPU
    /// time over the next second, or, if that is quiet, the work since
    /// the last rebalance. `settling` (a round after the first): `None`
    /// when the second is quiet or the workers' CPU times are already
    /// within `BALANCE_SETTLED` of an even share.
    async fn balanced(&self, current: &BinMap, workers: usize, settling: bool) -> Option<BinMap> {
        if settling {
            tokio::time::sleep(SETTLE_PAUSE).await;
        }
        let stats = self.bin_stats().await;
        tokio::time::sleep(if settling { SETTLE_WINDOW } else { LOAD_WINDOW }).await;
        let later = self.bin_stats().await;
        let now = Self::load(&later);
        let recent: Vec<u64> = now.iter().zip(Self::load(&stats)).map(|(n, r)| n.saturating_sub(r)).collect();
        if recent.iter().sum::<u64>() >= LOAD_WINDOW_MIN {
            let cpu = Self::cpu_between(&stats, &later);
            let total: u64 = cpu.iter().sum();
            let busiest = cpu.iter().copied().max().unwrap_or(0);
            let settled = total == 0 || busiest as f64 <= total as f64 * (1.0 / workers as f64 + BALANCE_SETTLED);
            tracing::info!(settling, settled, cpu_ns = ?cpu, work = recent.iter().sum::<u64>(), "a balance round measured the workers");
            if settling && settled {
                return None;
            }
            Some(balance(current, &recent, &cpu, workers))
        } else if settling {
            None
        } else {
            // Quiet: the work since the last rebalance, whose CPU cost is
            // not known (idle time is in it).
            let baseline = self.rebalancer.baseline.lock().clone();
            let load: Vec<u64> = now.iter().enumerate().map(|(b, n)| n.saturating_sub(baseline.get(b).copied().unwrap_or(0))).collect();
            Some(balance(current, &load, &[], workers))
        }
    }

    /// Commits each step and waits for its state to arrive and for its
    /// map to be durable (a step reported done survives a crash right
    /// after; a restarted server found the last steps of a just-finished
    /// `ALTER CLUSTER` undone when their commit had not been synced).
    /// `moved_before`: bins moved by earlier rounds of this migration.
    async fn run_steps(&self, all: &[Move], pace: &mut Pace, moved_before: usize, migrated_before: u64) -> Result<(), Error> {
        let mut done = 0;
        while done < all.len() {
            let moves = &all[done..(done + pace.size).min(all.len())];
            let began = std::time::Instant::now();
            let (ts, commits) = {
                // As DDL: alone among writers, so that no write is at the
                // step's timestamp before its moves reach the workers.
                let _token = self.write_token.write().await;
                let mut st = self.state.lock().await;
                st.commits.check_writable(false)?;
                let next = st.bins.with_moves(moves);
                let ts = st.next_ts();
                let mut ws = WriteSet::new(ts);
                let owners = serde_json::to_vec(next.owners()).map_err(|e| Error::Internal(e.to_string()))?;
                ws.meta_puts.push((META_BINS.into(), owners));
                st.commits.submit(ws)?;
                self.dataflow.broadcast(Command::Rebalance { time: ts, moves: moves.to_vec() });
                self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(Vec::new()) });
                st.bins = next;
                st.allow_compaction();
                (ts, st.commits.clone())
            };
            self.settle(ts, STEP_LIMIT).await;
            commits.wait(ts).await?;
            done += moves.len();
            pace.took(began.elapsed());
            let migrated: u64 = self.bin_stats().await.iter().map(|s| s.migrated).sum();
            if let Some(p) = self.rebalancer.progress.lock().as_mut() {
                p.steps_done += 1;
                p.steps = p.steps_done + pace.steps_left(all.len() - done);
                p.bins_moved = moved_before + done;
                p.records_moved = migrated.saturating_sub(migrated_before);
            }
        }
        Ok(())
    }

    /// The automatic response to skew: every few seconds, if one worker
    /// took more than `share` of the work since the last look
    /// (and enough of them), a batched rebalance.
    pub(super) async fn watch_skew(&self, share: f64) {
        let mut last = self.bin_stats().await;
        loop {
            tokio::time::sleep(SKEW_INTERVAL).await;
            let now = self.bin_stats().await;
            let load: Vec<u64> = Self::load(&now).iter().zip(Self::load(&last)).map(|(n, l)| n.saturating_sub(l)).collect();
            let cpu = Self::cpu_between(&last, &now);
            last = now;
            if load.iter().sum::<u64>() < SKEW_MIN_WORK {
                continue;
            }
            let map = self.state.lock().await.bins.clone();
            let top = top_share(&map, &load, self.dataflow.workers());
            if top <= share || balance(&map, &load, &cpu, self.dataflow.workers()) == map {
                continue;
            }
            tracing::info!(share = top, threshold = share, "a worker takes more than its share of the work: rebalancing");
            if let Err(e) = self.migrate(ClusterMoves::Balance, MigrationSteps::Paced, "skew").await {
                tracing::warn!(error = %e, "the automatic rebalance failed");
            }
            last = self.bin_stats().await;
        }
    }

    /// `ripple_catalog.cluster_bins`: each bin's worker, the updates
    /// routed to it and the records its joins produced since the server
    /// started.
    pub(super) async fn cluster_bin_rows(&self) -> Vec<Vec<Datum>> {
        let map = self.state.lock().await.bins.clone();
        let stats = self.bin_stats().await;
        let (routed, produced) = (Self::routed(&stats), Self::per_bin(&stats, |s| &s.produced));
        (0..BINS)
            .map(|b| {
                let owner = Datum::Int32(map.owner(b) as i32);
                vec![Datum::Int32(b as i32), owner, Datum::Int64(routed[b] as i64), Datum::Int64(produced[b] as i64)]
            })
            .collect()
    }

    /// `ripple_catalog.cluster_rebalance`: the last or running migration.
    pub(super) fn cluster_rebalance_rows(&self) -> Vec<Vec<Datum>> {
        let Some(p) = self.rebalancer.progress.lock().clone() else { return Vec::new() };
        let state = match (&p.finished, &p.error) {
            (None, _) => "running",
            (Some(_), None) => "done",
            (Some(_), Some(_)) => "failed",
        };
        let elapsed = p.finished.unwrap_or_else(chrono::Utc::now) - p.started;
        vec![vec![
            Datum::Text(state.into()),
            Datum::Text(p.reason.into()),
            Datum::Text(p.strategy.into()),
            Datum::Int32(p.steps as i32),
            Datum::Int32(p.steps_done as i32),
            Datum::Int32(p.bins as i32),
            Datum::Int32(p.bins_moved as i32),
            Datum::Int64(p.records_moved as i64),
            Datum::TimestampTz(p.started),
            p.finished.map_or(Datum::Null, Datum::TimestampTz),
            Datum::Int64(elapsed.num_milliseconds()),
            p.error.map_or(Datum::Null, Datum::Text),
        ]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bins_load_is_its_routed_updates_and_its_join_outputs() {
        let mut a = BinStats { routed: vec![0; BINS], produced: vec![0; BINS], ..BinStats::default() };
        a.routed[3] = 5;
        a.produced[3] = 40;
        let mut b = a.clone();
        b.produced[7] = 2;
        let load = Coordinator::load(&[a, b]);
        assert_eq!((load[3], load[7], load[0]), (90, 2, 0));
        // A worker that reported nothing (no slot filled) counts nothing.
        assert_eq!(Coordinator::load(&[BinStats::default()]), vec![0; BINS]);
    }

    #[test]
    fn a_hot_bin_keeps_its_worker_and_the_others_leave_it() {
        let map = BinMap::spread(2);
        // Bin 0 (worker 0) takes half the updates; the rest are even.
        let mut load = vec![10u64; BINS];
        load[0] = 10 * BINS as u64;
        assert!(top_share(&map, &load, 2) > 0.7);
        let balanced = balance(&map, &load, &[], 2);
        assert_eq!(balanced.owner(0), 0, "the hot bin stays");
        let share = top_share(&balanced, &load, 2);
        assert!(share < 0.52, "evened out to {share}");
        // Only bins of worker 0 moved, to worker 1.
        for m in map.moves_to(&balanced) {
            assert_eq!((map.owner(m.bin as usize), m.to), (0, 1));
        }
    }

    #[test]
    fn a_hot_bin_lighter_than_the_gap_stays_too() {
        // Worker 0 has the hot bin and busier cold bins: the hot bin alone
        // is lighter than the gap, and moving it would only swap the
        // workers' roles while moving the most state.
        let owners: Vec<u32> = (0..BINS).map(|b| u32::from(b >= BINS / 2)).collect();
        let map = BinMap::from_owners(owners, 2).unwrap();
        let mut load: Vec<u64> = (0..BINS).map(|b| if b < BINS / 2 { 12 } else { 10 }).collect();
        load[0] = 1200;
        let balanced = balance(&map, &load, &[], 2);
        assert_eq!(balanced.owner(0), 0, "the hot bin stays");
        assert!(top_share(&balanced, &load, 2) < 0.51);
        for m in map.moves_to(&balanced) {
            assert_eq!((map.owner(m.bin as usize), m.to), (0, 1));
        }
    }

    #[test]
    fn the_workers_cpu_time_weighs_their_work() {
        // Bin 0 (worker 0) takes half the updates, but a unit of its work
        // costs a sixth of the others' (its updates consolidate): worker 0
        // is busier, though far less than its work says.
        let map = BinMap::spread(2);
        let mut load = vec![10u64; BINS];
        load[0] = 10 * BINS as u64;
        let cost = |b: usize| if b == 0 { load[b] as f64 / 6.0 } else { load[b] as f64 };
        let cpu_of = |m: &BinMap| {
            let mut cpu = [0.0f64; 2];
            for b in 0..BINS {
                cpu[m.owner(b)] += cost(b);
            }
            cpu
        };
        let before = cpu_of(&map);
        assert!(before[0] > before[1] * 1.3);
        // Weighed by work alone, worker 0 gives away so much that worker
        // 1 becomes the busier by far.
        let by_work = cpu_of(&balance(&map, &load, &[], 2));
        assert!(by_work[1] > by_work[0] * 1.5, "{by_work:?}");
        // Weighed by what the work cost (in ns), the two end up even.
        let ns: Vec<u64> = before.iter().map(|c| (*c * 1e6) as u64).collect();
        let balanced = balance(&map, &load, &ns, 2);
        assert_eq!(balanced.owner(0), 0, "the hot bin stays");
        let after = cpu_of(&balanced);
        assert!((after[0] - after[1]).abs() < 0.05 * after[0], "{after:?}");
        // What the CPU time shows balanced moves nothing.
        assert_eq!(balance(&map, &load, &[1_000_000, 1_000_000], 2), map);
        // Unknown CPU time (a worker reported none): work alone.
        assert_eq!(balance(&map, &load, &[5, 0], 2), balance(&map, &load, &[], 2));
        // A worker with no bins spends a little CPU time all the same; it
        // does not make the others' work look cheap: half the bins go to
        // it, less what its 1 % of the CPU time counts for.
        let all_on_one = BinMap::from_owners(vec![0; BINS], 2).unwrap();
        let even = vec![10u64; BINS];
        let spread = balance(&all_on_one, &even, &[1_000_000_000, 10_000_000], 2);
        let on_1 = (0..BINS).filter(|b| spread.owner(*b) == 1).count();
        assert!((BINS / 2 - BINS / 100 - 1..=BINS / 2).contains(&on_1), "{on_1} bins moved");
    }

    #[test]
    fn paced_steps_grow_while_fast_and_shrink_while_slow() {
        let mut pace = Pace::new(MigrationSteps::Paced);
        assert_eq!(pace.size, 1);
        pace.took(STEP_TARGET / 10);
        pace.took(STEP_TARGET / 10);
        assert_eq!(pace.size, 4);
        pace.took(STEP_TARGET * 3 / 4);
        assert_eq!(pace.size, 4, "near the target: the same size");
        pace.took(STEP_TARGET * 2);
        assert_eq!(pace.size, 2);
        assert_eq!(pace.steps_left(5), 3);
        let mut fixed = Pace::new(MigrationSteps::Bins(16));
        fixed.took(Duration::from_secs(5));
        assert_eq!(fixed.size, 16);
        assert_eq!(Pace::new(MigrationSteps::AllAtOnce).steps_left(200), 1);
    }

    #[test]
    fn an_even_load_moves_nothing_and_no_traffic_evens_the_counts() {
        let map = BinMap::spread(4);
        assert_eq!(balance(&map, &vec![5u64; BINS], &[], 4), map);
        let all_on_one = BinMap::from_owners(vec![0; BINS], 4).unwrap();
        let spread = balance(&all_on_one, &vec![0u64; BINS], &[], 4);
        let mut counts = [0usize; 4];
        for b in 0..BINS {
            counts[spread.owner(b)] += 1;
        }
        assert_eq!(counts, [BINS / 4; 4]);
    }

    #[test]
    fn the_recorded_map_must_suit_the_workers() {
        let mut meta = HashMap::new();
        meta.insert(META_BINS.to_string(), serde_json::to_vec(BinMap::spread(4).owners()).unwrap());
        assert_eq!(recorded_map(&meta, 4), Some(BinMap::spread(4)));
        assert_eq!(recorded_map(&meta, 2), None, "a map over more workers than there are");
        assert_eq!(recorded_map(&HashMap::new(), 2), None);
    }
}
