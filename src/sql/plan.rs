//! Bound statements: what the coordinator executes.

use crate::expr::relation::ColumnOrder;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{GlobalId, RelationDesc};
use crate::sql::copy::CopyOptions;
use crate::sql::origin::Origins;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ItemKind {
    Table,
    View,
    MaterializedView,
    Index,
}

impl ItemKind {
    /// The kind with its indefinite article ("a table", "an index").
    pub fn with_article(&self) -> String {
        match self {
            ItemKind::Index => "an index".into(),
            other => format!("a {}", other.name()),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ItemKind::Table => "table",
            ItemKind::View => "view",
            ItemKind::MaterializedView => "materialized view",
            ItemKind::Index => "index",
        }
    }
}

/// What to do with a query's rows after reading them: order, offset, limit
/// and which leading columns the client sees.
#[derive(Clone, Debug, Default)]
pub struct Finishing {
    pub order: Vec<ColumnOrder>,
    pub limit: Option<usize>,
    pub offset: usize,
    /// Number of leading columns returned (the rest were only for ORDER BY).
    pub arity: usize,
}

#[derive(Clone, Debug)]
pub enum ShowKind {
    Tables,
    Views,
    MaterializedViews,
    Indexes,
    Arrangements,
    /// `SHOW CHECKPOINTS`: each materialized view's latest checkpoint.
    Checkpoints,
    /// `SHOW HYDRATION`: each materialized view's state after a restart.
    Hydration,
    /// `SHOW ARRANGEMENT_SIZES`: records and bytes of each item's arrangements.
    ArrangementSizes,
    Variable(String),
}

/// A statement's `RETURNING` list: `query` reads the statement's table
/// (`Get` of it), which the coordinator replaces by the rows written.
#[derive(Clone, Debug)]
pub struct Returning {
    pub query: RelationExpr,
    pub desc: RelationDesc,
}

/// What `INSERT ... ON CONFLICT` binds `DO UPDATE` over: the pairs of
/// conflicting rows, each the existing row followed by the proposed one
/// (`EXCLUDED`); the coordinator puts the pairs in its place. No item has
/// this id.
pub const CONFLICT_PAIRS: crate::repr::GlobalId = crate::repr::GlobalId::MAX;

/// `INSERT ... ON CONFLICT [target] DO NOTHING | DO UPDATE`.
#[derive(Clone, Debug)]
pub struct OnConflict {
    /// The columns of the unique key whose conflicts are handled (the
    /// conflict target); `None` (DO NOTHING only): every unique key of the
    /// table.
    pub key: Option<Vec<usize>>,
    /// `None`: DO NOTHING.
    pub update: Option<ConflictUpdate>,
}

/// `DO UPDATE SET ... [WHERE ...]`.
#[derive(Clone, Debug)]
pub struct ConflictUpdate {
    /// Over `Get(CONFLICT_PAIRS)`: the pairs the WHERE keeps, each
    /// followed by the new values of the `assignments` columns.
    pub selection: RelationExpr,
    pub assignments: Vec<usize>,
}

/// A PRIMARY KEY or UNIQUE constraint of a table, or a unique index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UniqueKey {
    /// The constraint's name (`t_pkey`, `t_a_key`) or the index's.
    pub name: String,
    pub columns: Vec<usize>,
    /// A PRIMARY KEY (else UNIQUE or a unique index).
    pub primary: bool,
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// `defaults`: each column's `DEFAULT` expression as SQL text (bound
    /// where a row needs it, so `now()` is the inserting statement's).
    CreateTable {
        schema: String,
        name: String,
        desc: RelationDesc,
        if_not_exists: bool,
        unique: Vec<UniqueKey>,
        defaults: Vec<Option<String>>,
    },
    /// `CREATE TABLE name AS query [WITH [NO] DATA]`: `create` is the
    /// `CreateTable` of the query's columns (`create_sql` the statement
    /// stored for it); the query's rows fill it unless `with_data` is false.
    CreateTableAs { create: Box<Plan>, create_sql: String, query: RelationExpr, finishing: Finishing, with_data: bool },
    CreateView {
        schema: String,
        name: String,
        query: RelationExpr,
        desc: RelationDesc,
        materialized: bool,
        if_not_exists: bool,
        or_replace: bool,
        /// `WITH (RETAIN HISTORY FOR 'interval')`: how many milliseconds
        /// of a materialized view's past stay readable (`AS OF`).
        retain_history: Option<u64>,
    },
    /// `schema`: the indexed relation's (an index is always in its relation's
    /// schema).
    CreateIndex { schema: String, name: Option<String>, on: GlobalId, on_name: String, key: Vec<usize>, if_not_exists: bool, unique: bool },
    /// `source` produces rows in the table's column order, already cast to
    /// the column types (typmods and NOT NULL are checked on write).
    Insert {
        table: GlobalId,
        table_name: String,
        desc: RelationDesc,
        source: RelationExpr,
        returning: Option<Returning>,
        on_conflict: Option<OnConflict>,
    },
    /// `selection` yields each row to change followed by the new values of
    /// the `assignments` columns (in that order).
    Update {
        table: GlobalId,
        table_name: String,
        desc: RelationDesc,
        selection: RelationExpr,
        assignments: Vec<usize>,
        returning: Option<Returning>,
    },
    /// `selection` yields the rows to delete.
    Delete { table: GlobalId, table_name: String, selection: RelationExpr, returning: Option<Returning> },
    /// `TRUNCATE t, ...`: every row of each table, in one write.
    Truncate { tables: Vec<(GlobalId, RelationExpr)> },
    /// A maintenance statement with nothing to do in ripple (`VACUUM`,
    /// `ANALYZE`: storage compacts itself and plans use no statistics);
    /// its tables were checked to exist.
    Maintenance { tag: String },
    /// `settings`: what `set_config` calls in it change once it succeeds
    /// (name, value, local to the transaction). `origins`: the relation
    /// column each result column reads as is, if any (RowDescription's
    /// table OID and column number).
    Select {
        query: RelationExpr,
        desc: RelationDesc,
        origins: Origins,
        finishing: Finishing,
        settings: Vec<(String, String, bool)>,
    },
    /// `COPY table [(columns)] FROM STDIN`: `columns` are the table columns
    /// the data holds, in the data's order; the others get their default
    /// (NULL).
    /// `defaults`: the value of each column the data omits.
    CopyFrom {
        table: GlobalId,
        table_name: String,
        desc: RelationDesc,
        columns: Vec<usize>,
        options: CopyOptions,
        defaults: Vec<(usize, ScalarExpr)>,
    },
    /// `COPY table [(columns)] TO STDOUT` or `COPY (query) TO STDOUT`: the
    /// rows of `query` as for a SELECT.
    CopyTo { query: RelationExpr, desc: RelationDesc, finishing: Finishing, options: CopyOptions },
    /// `transforms`: show the plan as bound and after each of the
    /// optimizer's transforms (`EXPLAIN (TRANSFORMS)`).
    Explain { query: RelationExpr, transforms: bool },
    /// `DROP kind name, ...`: each name with the schema that holds it
    /// (`None`: no schema on the search path does).
    Drop { kind: ItemKind, names: Vec<crate::sql::QualifiedName>, if_exists: bool, cascade: bool },
    /// `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]`:
    /// `owner`, the role named (`None`: the statement's role).
    CreateSchema { name: String, if_not_exists: bool, owner: Option<String> },
    /// `DROP SCHEMA [IF EXISTS] name, ... [CASCADE | RESTRICT]`.
    DropSchema { names: Vec<String>, if_exists: bool, cascade: bool },
    /// `ALTER SCHEMA name RENAME TO new`.
    RenameSchema { name: String, new_name: String },
    /// `CREATE ROLE | USER [IF NOT EXISTS] name [WITH] options`.
    CreateRole { name: String, if_not_exists: bool, options: crate::sql::RoleOptions },
    /// `ALTER ROLE | USER name [WITH] options`.
    AlterRole { name: String, options: crate::sql::RoleOptions },
    /// `ALTER ROLE | USER name RENAME TO new`.
    RenameRole { name: String, new_name: String },
    /// `GRANT` or `REVOKE` of privileges on objects.
    ChangePrivileges(crate::sql::PrivilegeChange),
    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW | SCHEMA ... OWNER TO role`
    /// (`object`: a relation or a schema).
    AlterOwner { object: crate::sql::GrantObject, owner: String, tag: &'static str },
    /// `DROP ROLE | USER [IF EXISTS] name, ...`.
    DropRole { names: Vec<String>, if_exists: bool },
    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX ... SET SCHEMA s`.
    SetSchema { id: GlobalId, schema: String, tag: &'static str },
    /// `COMMENT ON SCHEMA name IS 'text' | NULL`.
    CommentSchema { name: String, comment: Option<String> },
    Show(ShowKind),
    SetVariable { name: String, value: String },
    /// `RESET name` (`None`: `RESET ALL`).
    ResetVariable { name: Option<String> },
    /// `BEGIN` / `START TRANSACTION`, `read_only` for `READ ONLY`.
    StartTransaction { read_only: bool },
    /// `DEALLOCATE` / `DISCARD`: session-level cleanup a driver sends; the
    /// protocol layer owns prepared statements, so only the tag is returned.
    SessionCleanup { tag: String },
    Commit,
    Rollback,
    Savepoint { name: String },
    ReleaseSavepoint { name: String },
    /// `ROLLBACK TO [SAVEPOINT] name`.
    RollbackTo { name: String },
    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX ... RENAME TO`.
    Rename { id: GlobalId, kind: ItemKind, new_name: String, tag: &'static str },
    /// `ALTER TABLE ... RENAME COLUMN`: column `column` of `table`.
    RenameColumn { table: GlobalId, column: usize, new_name: String },
    /// `ALTER TABLE ... ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE (...)`,
    /// as written (the coordinator names it and adds it to the table's
    /// stored statement, which binds it like `CREATE TABLE` would).
    AddConstraint { table: GlobalId, constraint: Box<sqlparser::ast::TableConstraint> },
    /// `ALTER TABLE ... ADD COLUMN | DROP COLUMN [CASCADE] | ALTER COLUMN
    /// ...`: the table's stored statement changes by `edit`; `rows`, if
    /// the rows change, maps a row as it is to the row as it becomes.
    AlterColumns { table: GlobalId, edit: crate::sql::ddl_text::ColumnEdit, rows: Option<Vec<ScalarExpr>>, cascade: bool },
    /// `COMMENT ON ... IS 'text' | NULL`: a relation's comment (`column`
    /// `None`) or one column's (its index).
    Comment { id: GlobalId, column: Option<usize>, comment: Option<String> },
    /// `CHECKPOINT`: checkpoint every materialized view now.
    Checkpoint,
    /// `ALTER CLUSTER default REBALANCE | MOVE BINS ...`: bins of keyed
    /// state move between the workers, in `steps`.
    AlterCluster { moves: ClusterMoves, steps: MigrationSteps },
    /// `LOCK TABLE`: its tables exist; ripple's transactions read one
    /// snapshot and conflicting writes abort, so there is nothing to lock.
    Lock,
    /// `PREPARE name [(types)] AS statement`: the statement, checked to
    /// bind, with its parameter types.
    Prepare { name: String, stmt: Box<crate::sql::Stmt>, types: Vec<Option<crate::repr::ScalarType>> },
    /// `EXECUTE name [(values)]`, with the values cast to the parameter
    /// types.
    ExecutePrepared { name: String, params: Vec<crate::repr::Datum> },
    /// `DEALLOCATE [PREPARE] name | ALL` (`None`: all).
    Deallocate { name: Option<String> },
    /// `DECLARE name [NO] SCROLL CURSOR [WITH HOLD] FOR query`: `select`
    /// is the query's `Plan::Select`; `scroll` is `Some(false)` for `NO
    /// SCROLL`.
    DeclareCursor { name: String, select: Box<Plan>, scroll: Option<bool>, hold: bool, sql: String },
    /// `FETCH` or `MOVE` (`move_only`) on the session's cursor `name`.
    /// `timeout`: `WITH (timeout = ...)`, for a cursor over `SUBSCRIBE`.
    Fetch { name: String, direction: crate::sql::FetchDirection, move_only: bool, timeout: Option<std::time::Duration> },
    /// `query AS OF t`: `select` (a `Plan::Select`) read at `as_of`.
    SelectAsOf { select: Box<Plan>, as_of: crate::repr::Timestamp },
    /// `SUBSCRIBE` (`sql::subscribe`).
    Subscribe(Box<crate::sql::subscribe::SubscribePlan>),
    /// `CLOSE name | ALL` (`None`: all).
    CloseCursor { name: Option<String> },
    /// `DISCARD ALL`: the session as it was when it connected (cursors
    /// closed, SQL prepared statements gone, settings reset).
    DiscardAll,
}

impl Plan {
    /// The schema and name of what a `CREATE TABLE | VIEW | MATERIALIZED
    /// VIEW | INDEX` plan creates (an index's name may be left to the
    /// coordinator).
    pub fn created(&self) -> Option<(&str, Option<&str>)> {
        match self {
            Plan::CreateTable { schema, name, .. } | Plan::CreateView { schema, name, .. } => {
                Some((schema.as_str(), Some(name.as_str())))
            }
            Plan::CreateIndex { schema, name, .. } => Some((schema.as_str(), name.as_deref())),
            Plan::CreateTableAs { create, .. } => create.created(),
            _ => None,
        }
    }
}

/// How an `ALTER CLUSTER` divides its moves into steps, each committed at
/// a timestamp of its own (`coord/rebalance.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationSteps {
    /// `strategy = 'all_at_once'`: one step.
    AllAtOnce,
    /// `batch = n`: `n` bins per step.
    Bins(usize),
    /// `strategy = 'batched'` (the default) without `batch`: steps sized
    /// as they go so that each takes about as long as a target, since a
    /// bin's cost depends on its state and on the work downstream of it.
    Paced,
}

/// Which bins an `ALTER CLUSTER` moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterMoves {
    /// Those that even out the workers' loads (`coord/rebalance.rs`).
    Balance,
    /// These, to this worker.
    Bins { bins: Vec<u32>, worker: u32 },
}
