//! The coordinator's interface to the server: what a session can ask of the
//! database and what it gets back. The server only depends on these types.

use super::copy::CopyTarget;
use crate::repr::{Datum, RelationDesc, ScalarType};

pub use crate::sql::{CopyFormat, CopyOptions};
pub use crate::sql::origin::{ColumnOrigin, Origins};

/// What the extended protocol needs to know about a statement before it runs.
#[derive(Clone, Debug)]
pub struct StatementDesc {
    /// Types of `$1..$n`, from the client's declared types where given and
    /// otherwise inferred from the statement.
    pub params: Vec<ScalarType>,
    /// The result columns, `None` for statements that return no rows.
    pub columns: Option<RelationDesc>,
    /// The relation column each result column reads as is, if any (empty
    /// when none does).
    pub origins: Origins,
}

/// The outcome of one statement.
#[derive(Debug)]
pub enum ExecuteResponse {
    /// Rows for the client, with their description and the relation
    /// column each reads as is, if any (`origins` may be empty: none);
    /// `tag` is the command tag (`SELECT`, `FETCH`: sent with the row
    /// count; `SHOW`, `EXPLAIN`: without).
    Rows { desc: RelationDesc, origins: Origins, rows: Vec<Vec<Datum>>, tag: &'static str },
    /// A command completion: `tag` such as "INSERT", "CREATE TABLE",
    /// "DELETE"; `rows` the affected row count where the tag carries one
    /// (INSERT is sent as `INSERT 0 n`).
    Command { tag: String, rows: Option<u64> },
    /// `COPY ... FROM STDIN` is ready for data: the server reads the data
    /// into rows for `CopyTarget` and hands them to
    /// `Coordinator::copy_in_rows` / `copy_in_commit`.
    CopyIn(CopyTarget),
    /// `COPY ... TO STDOUT`: rows to send as COPY data in `options`' format.
    CopyOut { desc: RelationDesc, rows: Vec<Vec<Datum>>, options: CopyOptions },
    /// Rows streamed as they come: a `SELECT`'s read in parts
    /// (`streamed::ResultStream`) or a `SUBSCRIBE`'s changes, as the
    /// statement's rows or, with `copy`, as COPY data. `stop` ends it when
    /// the statement is canceled or times out.
    Stream {
        desc: RelationDesc,
        origins: Origins,
        stream: crate::coord::streamed::RowStream,
        stop: crate::coord::streamed::Stop,
        copy: Option<CopyOptions>,
    },
}

/// Per-connection state kept by the coordinator.
#[derive(Debug, Default)]
pub struct Session {
    pub id: u64,
    /// Inside an explicit `BEGIN` block.
    pub in_transaction: bool,
    /// The open transaction block, if any (its writes, read timestamp,
    /// write token).
    pub(crate) txn: Option<crate::coord::txn::Txn>,
    /// Session variables set with `SET` (shared until changed, so that
    /// a statement can keep the values it started with for nothing).
    pub vars: std::sync::Arc<std::collections::BTreeMap<String, String>>,
    /// The values `RESET` returns to: those the client gave at start-up.
    pub defaults: std::collections::BTreeMap<String, String>,
    /// SQL-level prepared statements (`PREPARE`), with their parameter types.
    pub prepared: std::collections::BTreeMap<String, (std::sync::Arc<crate::sql::Stmt>, Vec<Option<ScalarType>>)>,
    /// Who connected, to which database, under which process id (what
    /// `current_user`, `current_database()` and `pg_backend_pid()` say).
    pub user: String,
    pub database: String,
    pub backend_pid: i32,
    /// Fires when a CancelRequest arrives for the statement about to run
    /// (set by the server before each statement).
    pub cancel: Option<futures::channel::oneshot::Receiver<()>>,
    /// When the running statement's `statement_timeout` ends it (set by
    /// `execute_once` from the statement's start): its waits and a
    /// write's read of its rows end there.
    pub(crate) deadline: Option<tokio::time::Instant>,
    /// Open SQL cursors (`DECLARE`), by name.
    pub(crate) cursors: crate::coord::cursor::Cursors,
    /// The server's transaction id counter (shared by its sessions).
    pub(crate) txids: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// When the server started.
    pub(crate) server_started: Option<chrono::DateTime<chrono::Utc>>,
    /// The length of the SQL text the statement about to run came from
    /// (set by the server before each statement): a big one is bound and
    /// planned off the async runtime's worker (`run_heavy`).
    pub statement_len: usize,
    /// Generic plans of the session's prepared queries (`generic`).
    pub(crate) generic_plans: crate::coord::generic::GenericPlans,
    /// The session's entry in the registry of sessions (`activity`); none
    /// for the sessions the server makes for itself.
    pub(crate) activity: Option<crate::coord::activity::SessionActivity>,
}

impl Session {
    /// Sets who the session belongs to (from the start-up message).
    pub fn identify(&mut self, user: &str, database: &str, application_name: &str, backend_pid: i32) {
        self.user = if user.is_empty() { "ripple".into() } else { user.to_string() };
        self.database = if database.is_empty() { self.user.clone() } else { database.to_string() };
        self.backend_pid = backend_pid;
        if let Some(a) = &self.activity {
            a.identify(backend_pid, &self.user);
        }
        if !application_name.is_empty() {
            std::sync::Arc::make_mut(&mut self.vars).insert("application_name".into(), application_name.to_string());
        }
        self.defaults = (*self.vars).clone();
    }

    /// Settings the client gave at start-up: the session's values and its
    /// defaults.
    pub fn start_with(&mut self, settings: std::collections::BTreeMap<String, String>) {
        std::sync::Arc::make_mut(&mut self.vars).extend(settings);
        self.defaults = (*self.vars).clone();
    }

    /// A new transaction id.
    pub(crate) fn next_txid(&self) -> u64 {
        self.txids.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// What a statement of this session knows of it.
    pub fn info(&self) -> crate::sql::SessionInfo {
        let mut set = (*self.vars).clone();
        set.entry("session_authorization".into()).or_insert_with(|| self.user.clone());
        let settings = crate::sql::Settings::new(crate::coord::settings::defaults(), set);
        crate::sql::SessionInfo {
            user: if self.user.is_empty() { "ripple".into() } else { self.user.clone() },
            database: if self.database.is_empty() { "ripple".into() } else { self.database.clone() },
            backend_pid: self.backend_pid,
            settings,
            prepared: self.prepared.iter().map(|(k, (_, types))| (k.clone(), types.clone())).collect(),
            cursors: self.cursors.iter().map(|(name, c)| c.info(name)).collect(),
            // A statement outside a block is a transaction of its own.
            txid: self.txn.as_ref().map_or_else(|| self.next_txid(), |t| t.id),
            server_started: self.server_started,
        }
    }
}
