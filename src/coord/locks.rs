//! Key locks: what keeps two writers of the same row from both reading it
//! before either commits.
//!
//! An `UPDATE` or `DELETE` that finds its rows by key (`planner::fast_path`)
//! first takes an exclusive lock on each key value it looks up, named by the
//! table, the key's columns and the value, and holds it until its
//! transaction ends (an autocommit statement: until its write is durable).
//! A second writer of the same key waits instead of reading the row its
//! first writer is about to change — the wait PostgreSQL's row locks make —
//! and, once granted, reads the row as the first writer left it. Everything
//! else a transaction reads is checked at commit (`conflicts`), so the
//! locks are about throughput, not correctness: without them the second
//! writer would fail with 40001.
//!
//! Waiting transactions form a wait-for graph; a request that would close a
//! cycle is refused at once with 40P01 (PostgreSQL finds the cycle after
//! `deadlock_timeout`; the answer is the same).
//!
//! Owns: the lock table and the wait-for graph. Must not: know about
//! statements, sessions or storage.

use crate::repr::{Error, GlobalId, Row};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// A lock's name: the table, the key's columns and the key's value.
pub type LockKey = (GlobalId, Vec<usize>, Row);

/// Who holds or waits: a transaction id (`Txn::id`, or one drawn for an
/// autocommit statement).
pub type Owner = u64;

#[derive(Debug)]
struct Entry {
    owner: Owner,
    queue: VecDeque<(Owner, oneshot::Sender<()>)>,
}

#[derive(Debug, Default)]
struct Table {
    held: HashMap<LockKey, Entry>,
    /// Each waiting owner and the owner of the lock it waits for.
    waits_for: HashMap<Owner, Owner>,
}

/// The server's key locks; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct KeyLocks(Arc<Mutex<Table>>);

/// The locks one transaction holds (or waits for); released when dropped.
#[derive(Debug)]
pub struct LockSet {
    locks: KeyLocks,
    owner: Owner,
    keys: Vec<LockKey>,
}

/// How long a deadlock may name its members in the error's detail.
const DETAIL_MEMBERS: usize = 8;

impl KeyLocks {
    /// An empty set of locks for `owner`.
    pub fn set(&self, owner: Owner) -> LockSet {
        LockSet { locks: self.clone(), owner, keys: Vec::new() }
    }

    /// How many locks are held.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.0.lock().map(|t| t.held.len()).unwrap_or(0)
    }

    /// Takes every key in `keys` for `set`'s owner, waiting for holders to
    /// finish, in a fixed order (so that two statements locking the same
    /// keys cannot deadlock each other). Fails with 40P01, having waited
    /// for nothing more, if a wait would close a cycle.
    pub async fn acquire(&self, set: &mut LockSet, mut keys: Vec<LockKey>) -> Result<(), Error> {
        keys.sort();
        keys.dedup();
        for key in keys {
            let wait = {
                let mut t = self.0.lock().map_err(|_| Error::Internal("the lock table is poisoned".into()))?;
                let t = &mut *t;
                match t.held.get_mut(&key) {
                    None => {
                        t.held.insert(key.clone(), Entry { owner: set.owner, queue: VecDeque::new() });
                        set.keys.push(key);
                        None
                    }
                    Some(e) if e.owner == set.owner => None,
                    Some(e) => {
                        if let Some(cycle) = cycle_through(&t.waits_for, e.owner, set.owner) {
                            return Err(Error::DeadlockDetected { detail: describe(&cycle) });
                        }
                        let (tx, rx) = oneshot::channel();
                        e.queue.push_back((set.owner, tx));
                        t.waits_for.insert(set.owner, e.owner);
                        // Recorded before waiting: a wait given up (the
                        // statement canceled) still leaves the queue when
                        // the set is dropped.
                        set.keys.push(key);
                        Some(rx)
                    }
                }
            };
            if let Some(rx) = wait {
                rx.await.map_err(|_| Error::Internal("a key lock was dropped while waited for".into()))?;
            }
        }
        Ok(())
    }

    /// Releases `keys` held or waited for by `owner`: each held one goes to
    /// its first waiter still waiting.
    fn release(&self, owner: Owner, keys: &[LockKey]) {
        let Ok(mut t) = self.0.lock() else { return };
        let t = &mut *t;
        t.waits_for.remove(&owner);
        for key in keys {
            let Some(e) = t.held.get_mut(key) else { continue };
            if e.owner != owner {
                e.queue.retain(|(o, _)| *o != owner);
                continue;
            }
            loop {
                match e.queue.pop_front() {
                    Some((next, tx)) => {
                        if tx.send(()).is_ok() {
                            e.owner = next;
                            t.waits_for.remove(&next);
                            for (waiter, _) in &e.queue {
                                t.waits_for.insert(*waiter, next);
                            }
                            break;
                        }
                        t.waits_for.remove(&next);
                    }
                    None => {
                        t.held.remove(key);
                        break;
                    }
                }
            }
        }
    }
}

impl LockSet {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl Drop for LockSet {
    fn drop(&mut self) {
        if !self.keys.is_empty() {
            self.locks.release(self.owner, &self.keys);
        }
    }
}

/// The cycle `from` → ... → `to` in the wait-for graph that a wait of `to`
/// for `from` would close, if there is one.
fn cycle_through(waits_for: &HashMap<Owner, Owner>, from: Owner, to: Owner) -> Option<Vec<Owner>> {
    let mut path = vec![to, from];
    let mut at = from;
    // Each owner waits for at most one other, so the walk ends or repeats.
    for _ in 0..=waits_for.len() {
        if at == to {
            return Some(path);
        }
        match waits_for.get(&at) {
            Some(next) => {
                at = *next;
                path.push(at);
            }
            None => return None,
        }
    }
    None
}

/// `Transaction 7 waits for transaction 9; transaction 9 waits for ...`,
/// as PostgreSQL's detail names processes.
fn describe(cycle: &[Owner]) -> String {
    let parts: Vec<String> = cycle
        .windows(2)
        .take(DETAIL_MEMBERS)
        .map(|w| format!("Transaction {} waits for transaction {}.", w[0], w[1]))
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    fn key(t: GlobalId, v: i32) -> LockKey {
        (t, vec![0], Row::pack(&[Datum::Int32(v)]))
    }

    #[tokio::test]
    async fn a_second_writer_waits_for_the_first_to_finish() {
        let locks = KeyLocks::default();
        let mut a = locks.set(1);
        locks.acquire(&mut a, vec![key(1, 5)]).await.unwrap();
        // Taking it again is free.
        locks.acquire(&mut a, vec![key(1, 5)]).await.unwrap();
        let mut b = locks.set(2);
        let l2 = locks.clone();
        let waiter = tokio::spawn(async move {
            l2.acquire(&mut b, vec![key(1, 5), key(2, 5)]).await.unwrap();
            b
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "b must wait while a holds the key");
        // Other keys and tables are free.
        let mut c = locks.set(3);
        locks.acquire(&mut c, vec![key(1, 6), key(3, 5)]).await.unwrap();
        drop(a);
        let b = waiter.await.unwrap();
        assert_eq!(locks.held(), 4);
        drop(b);
        drop(c);
        assert_eq!(locks.held(), 0);
    }

    #[tokio::test]
    async fn a_wait_that_closes_a_cycle_is_refused() {
        let locks = KeyLocks::default();
        let (mut a, mut b) = (locks.set(1), locks.set(2));
        locks.acquire(&mut a, vec![key(1, 1)]).await.unwrap();
        locks.acquire(&mut b, vec![key(1, 2)]).await.unwrap();
        let l2 = locks.clone();
        let a_waits = tokio::spawn(async move {
            let r = l2.acquire(&mut a, vec![key(1, 2)]).await;
            (r, a)
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let err = locks.acquire(&mut b, vec![key(1, 1)]).await.unwrap_err();
        assert_eq!(err.to_string(), "deadlock detected");
        assert!(err.detail().unwrap().contains("Transaction 2 waits for transaction 1."));
        // The refused one ends (rolls back): the other goes on.
        drop(b);
        let (r, a) = a_waits.await.unwrap();
        r.unwrap();
        drop(a);
        assert_eq!(locks.held(), 0);
    }

    #[tokio::test]
    async fn a_waiter_that_gave_up_is_skipped() {
        let locks = KeyLocks::default();
        let mut a = locks.set(1);
        locks.acquire(&mut a, vec![key(1, 1)]).await.unwrap();
        let mut b = locks.set(2);
        // b's wait is abandoned (a canceled statement), its set kept.
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), locks.acquire(&mut b, vec![key(1, 1)])).await;
        assert!(gave_up.is_err());
        let mut c = locks.set(3);
        let l2 = locks.clone();
        let c_waits = tokio::spawn(async move {
            l2.acquire(&mut c, vec![key(1, 1)]).await.unwrap();
            c
        });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        drop(b);
        drop(a);
        let c = c_waits.await.unwrap();
        assert_eq!(locks.held(), 1);
        drop(c);
        assert_eq!(locks.held(), 0);
    }
}
