//! Progress of the COPY commands in progress, as PostgreSQL's
//! `pg_stat_progress_copy` shows it: per COPY, the session's process id,
//! the table, and the bytes and rows processed so far.
//!
//! Owns: the registry (shared by every copy of the catalog, like the table
//! counters of `stats`) and the guard that removes a COPY from it when the
//! COPY ends, however it ends. Must not: decide what counts as processed
//! (the COPY reports it).

use crate::repr::GlobalId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One COPY's counters.
#[derive(Debug)]
pub struct CopyEntry {
    pub pid: i32,
    pub table: GlobalId,
    /// COPY FROM (true) or COPY TO.
    pub from: bool,
    bytes: AtomicU64,
    tuples: AtomicU64,
}

impl CopyEntry {
    /// Counts data received (COPY FROM) or sent.
    pub fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_tuples(&self, n: u64) {
        self.tuples.fetch_add(n, Ordering::Relaxed);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn tuples(&self) -> u64 {
        self.tuples.load(Ordering::Relaxed)
    }
}

/// The COPYs in progress. Clones share them.
#[derive(Clone, Debug, Default)]
pub struct Copies(Arc<Mutex<Registry>>);

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    running: BTreeMap<u64, Arc<CopyEntry>>,
}

impl Copies {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a COPY; it is listed until the guard is dropped.
    pub fn start(&self, pid: i32, table: GlobalId, from: bool) -> CopyGuard {
        let entry = Arc::new(CopyEntry { pid, table, from, bytes: AtomicU64::new(0), tuples: AtomicU64::new(0) });
        let mut r = self.registry();
        let key = r.next;
        r.next += 1;
        r.running.insert(key, Arc::clone(&entry));
        CopyGuard { copies: self.clone(), key, entry }
    }

    /// The COPYs in progress, in the order they started.
    pub fn list(&self) -> Vec<Arc<CopyEntry>> {
        self.registry().running.values().cloned().collect()
    }
}

/// A COPY's place in the registry.
#[derive(Debug)]
pub struct CopyGuard {
    copies: Copies,
    key: u64,
    entry: Arc<CopyEntry>,
}

impl std::ops::Deref for CopyGuard {
    type Target = CopyEntry;

    fn deref(&self) -> &CopyEntry {
        &self.entry
    }
}

impl Drop for CopyGuard {
    fn drop(&mut self) {
        self.copies.registry().running.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_listed_until_its_guard_goes() {
        let copies = Copies::default();
        let a = copies.start(7, 100, true);
        let b = copies.clone().start(8, 101, true);
        a.add_bytes(10);
        a.add_tuples(2);
        let listed = copies.list();
        assert_eq!(listed.iter().map(|e| (e.pid, e.table, e.bytes(), e.tuples())).collect::<Vec<_>>(), vec![(7, 100, 10, 2), (8, 101, 0, 0)]);
        drop(a);
        assert_eq!(copies.list().iter().map(|e| e.pid).collect::<Vec<_>>(), vec![8]);
        drop(b);
        assert!(copies.list().is_empty());
    }
}
