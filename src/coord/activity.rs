//! What every session is doing, as `ripple_catalog.sessions` shows it: per
//! connection, who it is, its application name, whether it runs a
//! statement or waits idle (in a transaction block or not), the statement
//! it runs or ran last, and when that statement, its transaction and the
//! session started.
//!
//! Owns: the registry of sessions (shared by the coordinator and every
//! session) and the guard that takes a session out of it when its
//! connection ends, however it ends. Must not: decide what state a
//! session is in (`session::execute_once` reports it) or format anything
//! before it is read (a statement is kept as its syntax tree, shown as
//! text only when the relation is read).

use crate::sql::Stmt;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The sessions of the server. Clones share them.
#[derive(Clone, Debug, Default)]
pub struct Sessions(Arc<Mutex<BTreeMap<u64, Arc<Mutex<Activity>>>>>);

/// What one session is doing.
#[derive(Clone, Debug)]
pub struct Activity {
    /// The backend process id the client was given (0 until start-up ends).
    pub pid: i32,
    pub user: String,
    /// The session's settings as its last statement started (for
    /// `application_name`: shared with the session, not copied).
    pub vars: Arc<BTreeMap<String, String>>,
    pub state: State,
    /// The statement running, or the last one run.
    pub statement: Option<Arc<Stmt>>,
    pub backend_start: DateTime<Utc>,
    pub query_start: Option<DateTime<Utc>>,
    /// When the transaction the session is in started (a statement
    /// outside a block is a transaction of its own).
    pub xact_start: Option<DateTime<Utc>>,
}

/// A session's state, as PostgreSQL's `pg_stat_activity.state` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Active,
    Idle,
    IdleInTransaction,
    IdleInFailedTransaction,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Idle => "idle",
            State::IdleInTransaction => "idle in transaction",
            State::IdleInFailedTransaction => "idle in transaction (aborted)",
        }
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sessions {
    /// Registers session `id`; it is listed until the guard is dropped.
    pub fn register(&self, id: u64) -> SessionActivity {
        let entry = Arc::new(Mutex::new(Activity {
            pid: 0,
            user: String::new(),
            vars: Arc::default(),
            state: State::Idle,
            statement: None,
            backend_start: Utc::now(),
            query_start: None,
            xact_start: None,
        }));
        locked(&self.0).insert(id, Arc::clone(&entry));
        SessionActivity { sessions: self.clone(), id, entry }
    }

    /// Every session's activity, in the order the sessions started.
    pub fn list(&self) -> Vec<Activity> {
        let entries: Vec<_> = locked(&self.0).values().cloned().collect();
        entries.iter().map(|e| locked(e).clone()).collect()
    }
}

/// A session's place in the registry.
#[derive(Debug)]
pub struct SessionActivity {
    sessions: Sessions,
    id: u64,
    entry: Arc<Mutex<Activity>>,
}

impl SessionActivity {
    /// Who the session is, once its start-up has ended.
    pub fn identify(&self, pid: i32, user: &str) {
        let mut a = locked(&self.entry);
        a.pid = pid;
        a.user = user.to_string();
    }

    /// A statement starts (with the session's settings as they are).
    pub fn start(&self, stmt: &Arc<Stmt>, vars: &Arc<BTreeMap<String, String>>) {
        let now = Utc::now();
        let mut a = locked(&self.entry);
        a.state = State::Active;
        a.statement = Some(Arc::clone(stmt));
        if !Arc::ptr_eq(&a.vars, vars) {
            a.vars = Arc::clone(vars);
        }
        a.query_start = Some(now);
        a.xact_start.get_or_insert(now);
    }

    /// The statement ended; the session is in a transaction block (`failed`:
    /// an aborted one) or not.
    pub fn end(&self, in_block: bool, failed: bool) {
        let mut a = locked(&self.entry);
        a.state = match (in_block, failed) {
            (false, _) => State::Idle,
            (true, false) => State::IdleInTransaction,
            (true, true) => State::IdleInFailedTransaction,
        };
        if !in_block {
            a.xact_start = None;
        }
    }
}

impl Drop for SessionActivity {
    fn drop(&mut self) {
        locked(&self.sessions.0).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_listed_with_its_state_until_it_ends() {
        let sessions = Sessions::default();
        let a = sessions.register(1);
        a.identify(42, "alice");
        let stmt = Arc::new(crate::sql::parse("SELECT 1").unwrap().remove(0));
        a.start(&stmt, &Arc::default());
        let listed = sessions.list();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].pid, listed[0].user.as_str(), listed[0].state), (42, "alice", State::Active));
        assert!(listed[0].xact_start.is_some());
        a.end(true, false);
        assert_eq!(sessions.list()[0].state, State::IdleInTransaction);
        assert!(sessions.list()[0].xact_start.is_some());
        a.end(false, false);
        assert_eq!(sessions.list()[0].state, State::Idle);
        assert!(sessions.list()[0].xact_start.is_none());
        drop(a);
        assert!(sessions.list().is_empty());
    }
}
