//! Group commit: the one thread that makes write sets durable.
//!
//! Writers hand their write sets to `GroupCommit::submit` in timestamp order
//! (the coordinator's write token orders them) and then wait for
//! `wait(ts)`. The commit thread takes everything queued since its last
//! sync and writes it as one RocksDB batch with one fsync, so N concurrent
//! commits cost one sync, not N. Because batches are written in queue order,
//! a commit is never durable before one with a smaller timestamp.
//!
//! The durable timestamp it publishes is what strict-serializable reads use:
//! nothing a reader sees can be lost by a crash. If a sync fails, the
//! failure is sticky (as PostgreSQL's PANIC on fsync failure): every later
//! commit fails and the server must be restarted, which recovers exactly
//! what was durable.
//!
//! Owns: the queue, the commit thread, the durable timestamp.
//! Must not: decide timestamps, touch the catalog or the dataflows.

use crate::repr::{Error, Timestamp};
use crate::storage::{Compactor, Storage, WriteSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// What is durable: every write set with a timestamp up to `ts`, unless a
/// sync failed.
#[derive(Clone, Debug)]
struct Durable {
    ts: Timestamp,
    failed: Option<String>,
}

#[derive(Default)]
struct Queue {
    sets: Vec<WriteSet>,
    shutdown: bool,
}

/// Counters for SHOW and benchmarks.
#[derive(Default)]
pub struct CommitStats {
    /// Write sets made durable.
    pub commits: AtomicU64,
    /// Batches (fsyncs) they took.
    pub syncs: AtomicU64,
}

pub struct GroupCommit {
    queue: Mutex<Queue>,
    wake: Condvar,
    durable: tokio::sync::watch::Sender<Durable>,
    pub stats: CommitStats,
    /// Counts write sets that changed the catalog: a statement described
    /// at one count describes the same while the count stays.
    catalog_changes: std::sync::atomic::AtomicU64,
    /// Asked for free space before a write that adds data is queued.
    storage: Arc<Storage>,
}

impl GroupCommit {
    /// Starts the commit thread; `durable_ts` is what recovery found.
    pub fn start(storage: Arc<Storage>, durable_ts: Timestamp) -> Result<Arc<GroupCommit>, Error> {
        let (durable, _) = tokio::sync::watch::channel(Durable { ts: durable_ts, failed: None });
        let gc = Arc::new(GroupCommit {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            durable,
            stats: CommitStats::default(),
            catalog_changes: std::sync::atomic::AtomicU64::new(0),
            storage: storage.clone(),
        });
        let weak = Arc::downgrade(&gc);
        std::thread::Builder::new()
            .name("ripple-commit".into())
            .spawn(move || commit_loop(weak, storage))
            .map_err(|e| Error::Internal(format!("could not start the commit thread: {e}")))?;
        Ok(gc)
    }

    /// Queues `ws` for the next batch. Callers submit in timestamp order.
    pub fn submit(&self, ws: WriteSet) -> Result<(), Error> {
        self.check_failed()?;
        if !(ws.catalog_puts.is_empty() && ws.catalog_deletes.is_empty() && ws.meta_puts.is_empty() && ws.meta_deletes.is_empty()) {
            self.catalog_changes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let mut q = self.queue.lock().map_err(|_| Error::Internal("commit queue poisoned".into()))?;
        q.sets.push(ws);
        self.wake.notify_one();
        Ok(())
    }

    /// An error if a write should not take a timestamp now: an earlier
    /// commit failed, or (for a write that `adds` data) the data
    /// directory's filesystem is short of space (`storage::space`).
    pub fn check_writable(&self, adds: bool) -> Result<(), Error> {
        self.check_failed()?;
        if adds {
            self.storage.check_space()?;
        }
        Ok(())
    }

    /// How many catalog changes were submitted (`catalog_changes`).
    pub fn catalog_generation(&self) -> u64 {
        self.catalog_changes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A watch on the durable timestamp (`SUBSCRIBE` emits only durable
    /// times).
    pub fn watch_durable(&self) -> DurableWatch {
        DurableWatch(self.durable.subscribe())
    }

    /// Waits until everything up to `ts` is durable.
    pub async fn wait(&self, ts: Timestamp) -> Result<(), Error> {
        let mut rx = self.durable.subscribe();
        loop {
            {
                let d = rx.borrow_and_update();
                if let Some(e) = &d.failed {
                    return Err(failed_error(e));
                }
                if d.ts >= ts {
                    return Ok(());
                }
            }
            rx.changed().await.map_err(|_| Error::Internal("the commit thread stopped".into()))?;
        }
    }

    /// The largest timestamp through which every commit is durable.
    pub fn durable_ts(&self) -> Timestamp {
        self.durable.borrow().ts
    }

    fn check_failed(&self) -> Result<(), Error> {
        match &self.durable.borrow().failed {
            Some(e) => Err(failed_error(e)),
            None => Ok(()),
        }
    }
}

/// The durable timestamp as it moves (`GroupCommit::watch_durable`).
pub struct DurableWatch(tokio::sync::watch::Receiver<Durable>);

impl DurableWatch {
    /// Everything up to this timestamp is durable; an error once a sync
    /// failed.
    pub fn ts(&mut self) -> Result<Timestamp, Error> {
        let d = self.0.borrow_and_update();
        match &d.failed {
            Some(e) => Err(failed_error(e)),
            None => Ok(d.ts),
        }
    }

    /// Waits for the durable timestamp to move.
    pub async fn changed(&mut self) -> Result<(), Error> {
        self.0.changed().await.map_err(|_| Error::Internal("the commit thread stopped".into()))
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.shutdown = true;
        }
        self.wake.notify_one();
    }
}

fn failed_error(e: &str) -> Error {
    Error::Storage(format!("a commit could not be made durable ({e}); restart the server to recover"))
}

fn commit_loop(gc: std::sync::Weak<GroupCommit>, storage: Arc<Storage>) {
    let compactor = match Compactor::start(storage.clone()) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!(error = %e, "could not start the table log compactor; the log will only be folded on restart");
            None
        }
    };
    loop {
        let Some(gc) = gc.upgrade() else { return };
        let sets = {
            let Ok(mut q) = gc.queue.lock() else { return };
            while q.sets.is_empty() && !q.shutdown {
                // Wake up now and then so that a dropped coordinator ends
                // the thread.
                match gc.wake.wait_timeout(q, std::time::Duration::from_millis(500)) {
                    Ok((guard, _)) => q = guard,
                    Err(_) => return,
                }
                if Arc::strong_count(&gc) == 1 {
                    return;
                }
            }
            if q.sets.is_empty() {
                return;
            }
            std::mem::take(&mut q.sets)
        };
        let max = sets.iter().map(|ws| ws.timestamp).max().unwrap_or(0);
        match storage.commit_group(&sets) {
            Ok(()) => {
                gc.stats.commits.fetch_add(sets.len() as u64, Ordering::Relaxed);
                gc.stats.syncs.fetch_add(1, Ordering::Relaxed);
                gc.durable.send_modify(|d| d.ts = d.ts.max(max));
                if let Some(c) = &compactor {
                    let mut appended: std::collections::BTreeMap<u64, u64> = Default::default();
                    let mut dropped = Vec::new();
                    let mut loaded = Vec::new();
                    for ws in &sets {
                        loaded.extend(ws.loads.iter().map(|l| (l.table, l.bytes)));
                        for (table, rows) in ws.table_updates.iter() {
                            let bytes: usize = rows.iter().map(|(r, _)| r.byte_len() + 2).sum();
                            *appended.entry(*table).or_insert(0) += bytes as u64;
                        }
                        dropped.extend(ws.dropped_tables.iter().copied());
                    }
                    c.dropped(dropped);
                    c.loaded(loaded);
                    c.appended(appended.into_iter().collect(), max);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "group commit failed; no further writes are accepted");
                gc.durable.send_modify(|d| d.failed = Some(e.to_string()));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{Datum, Row};

    #[tokio::test]
    async fn commits_become_durable_in_order_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let storage = Arc::new(Storage::open(dir.path()).unwrap());
            storage.recover().unwrap();
            let gc = GroupCommit::start(storage, 0).unwrap();
            for ts in 1..=100u64 {
                let mut ws = WriteSet::new(ts);
                ws.table_updates = std::sync::Arc::new(vec![(1, vec![(Row::pack(&[Datum::Int64(ts as i64)]), 1)])]);
                gc.submit(ws).unwrap();
            }
            gc.wait(100).await.unwrap();
            assert_eq!(gc.durable_ts(), 100);
            let syncs = gc.stats.syncs.load(Ordering::Relaxed);
            assert!(syncs >= 1 && syncs <= 100);
            assert_eq!(gc.stats.commits.load(Ordering::Relaxed), 100);
        }
        // The commit and compaction threads let go of the database shortly
        // after the last handle is dropped.
        let mut tries = 0;
        let storage = loop {
            match Storage::open(dir.path()) {
                Ok(s) => break s,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => panic!("{e}"),
            }
        };
        let r = storage.recover().unwrap();
        assert_eq!(r.max_timestamp, 100);
        assert_eq!(r.tables[&1].len(), 100);
    }
}
