//! SQL front end: sqlparser (PostgreSQL dialect) → name resolution →
//! Postgres typing and coercion → a `Plan` per statement, whose queries are
//! unoptimized MIR (`crate::expr::RelationExpr`).
//!
//! Owns: the meaning of SQL text. Must not: touch the catalog other than
//! through the read-only `SqlCatalog` trait, or do I/O.

mod alter;
mod alter_columns;
mod arrays;
mod binder;
mod catalog_funcs;
mod composite;
mod copy;
pub mod defaults;
pub mod ddl_text;
mod expr;
mod from;
mod functions;
mod grant;
pub mod origin;
mod parse;
pub mod parse_cluster;
pub mod parse_subscribe;
mod plan;
mod query;
mod set_operation;
mod recursive;
mod returning;
mod role;
mod schema;
mod scope;
mod subquery;
pub mod subscribe;
pub(crate) mod table_funcs;
mod types;
mod upsert;
mod window;

pub use binder::{bind_statement, Params};
pub use parse::{parse, FetchDirection, Stmt, PARSER_RECURSION_LIMIT};
pub use copy::{CopyFormat, CopyOptions};
pub use functions::finish_plan;
pub use plan::{ClusterMoves, MigrationSteps, ConflictUpdate, Finishing, ItemKind, OnConflict, Plan, Returning, ShowKind, UniqueKey, CONFLICT_PAIRS};
pub use binder::QualifiedName;
pub use role::RoleOptions;
pub use grant::{GrantObject, PrivilegeChange};
/// The schema names the binder knows.
pub mod binder_names {
    pub use super::binder::{ident, SYSTEM_SCHEMAS, USER_SCHEMA};
}
pub use types::{category as type_category, is_preferred as type_is_preferred};
pub use catalog_funcs::version_string;

use crate::repr::acl::Privs;
use crate::repr::{Error, GlobalId, RelationDesc};

/// A catalog item as the binder sees it.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    pub id: GlobalId,
    /// Its OID, as `pg_class.oid` shows it.
    pub oid: u32,
    /// The schema it is in.
    pub schema: String,
    pub name: String,
    pub kind: ItemKind,
    pub desc: RelationDesc,
    /// For a (non-materialized) view: its bound query, inlined where used.
    /// For a system relation: its rows as of the statement, a constant.
    pub view_plan: Option<crate::expr::RelationExpr>,
    /// A table's column `DEFAULT` expressions as SQL text (empty: none).
    pub defaults: Vec<Option<String>>,
    /// A relation of `pg_catalog` or `information_schema`, computed from
    /// the catalog: it can be read, not changed.
    pub system: bool,
}

/// What a statement knows of its session: who and where it is, and the
/// settings `current_setting` and the search path read.
#[derive(Clone, Debug, Default)]
pub struct SessionInfo {
    pub user: String,
    pub database: String,
    /// `pg_backend_pid()`.
    pub backend_pid: i32,
    /// The session's settings, with every known setting present.
    pub settings: Settings,
    /// The parameter types of the session's prepared statements (`PREPARE`).
    pub prepared: std::collections::BTreeMap<String, Vec<Option<crate::repr::ScalarType>>>,
    /// The session's open cursors, as `pg_cursors` lists them.
    pub cursors: Vec<CursorInfo>,
    /// The id of the transaction the statement runs in (`txid_current()`).
    pub txid: u64,
    /// When the server started (`pg_postmaster_start_time()`).
    pub server_started: Option<chrono::DateTime<chrono::Utc>>,
}

/// A session's settings: every known setting's default (one map, shared by
/// every session), overridden by what the session set.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    defaults: std::sync::Arc<std::collections::BTreeMap<String, String>>,
    set: std::collections::BTreeMap<String, String>,
}

impl Settings {
    pub fn new(
        defaults: std::sync::Arc<std::collections::BTreeMap<String, String>>,
        set: std::collections::BTreeMap<String, String>,
    ) -> Settings {
        Settings { defaults, set }
    }

    /// The value of setting `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&String> {
        self.set.get(name).or_else(|| self.defaults.get(name))
    }

    /// Whether `name` (lower case) is a known setting.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// One open cursor of a session (`pg_cursors`).
#[derive(Clone, Debug)]
pub struct CursorInfo {
    pub name: String,
    pub statement: String,
    pub holdable: bool,
    pub scrollable: bool,
    pub created: chrono::DateTime<chrono::Utc>,
}

impl SessionInfo {
    /// The schemas of `search_path` that exist (`exists` says which user
    /// schemas do), in order, with `"$user"` standing for the schema named
    /// after the session's user; unknown ones are skipped, as Postgres
    /// does. This is the path as written: `pg_catalog` is not added.
    pub fn explicit_search_path(&self, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
        let path = self.settings.get("search_path").map(String::as_str).unwrap_or("");
        let mut out: Vec<String> = Vec::new();
        for part in path.split(',') {
            let part = part.trim();
            let name = match part {
                "\"$user\"" | "$user" => self.user.clone(),
                p if p.starts_with('"') && p.ends_with('"') && p.len() >= 2 => p[1..p.len() - 1].replace("\"\"", "\""),
                p => p.to_lowercase(),
            };
            let known = binder::SYSTEM_SCHEMAS.contains(&name.as_str()) || exists(&name);
            if known && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// The role the statement runs as: the one `SET ROLE` chose, else the
    /// session's (`current_user`).
    pub fn current_user(&self) -> String {
        match self.settings.get("role").map(String::as_str) {
            Some(r) if !r.is_empty() && !r.eq_ignore_ascii_case("none") => r.to_string(),
            _ => self.user.clone(),
        }
    }

    /// The schemas an unqualified name is looked up in, in order: those of
    /// the search path that exist, with `pg_catalog` first unless the path
    /// names it.
    pub fn search_path(&self, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
        let mut out = self.explicit_search_path(exists);
        if !out.iter().any(|s| s == "pg_catalog") {
            out.insert(0, "pg_catalog".into());
        }
        out
    }
}

/// Read-only access to the catalog for name resolution.
pub trait SqlCatalog {
    /// The relation or index `name` (already case-folded) in `schema`, or
    /// through the search path when `schema` is `None`. An unknown schema
    /// is an error (3F000 for DDL targets; a missing relation otherwise).
    fn resolve_in(&self, schema: Option<&str>, name: &str) -> Result<Option<CatalogEntry>, Error>;
    /// Whether a user schema called `name` exists.
    fn user_schema_exists(&self, name: &str) -> bool;
    /// The schemas unqualified names are looked up in (`pg_catalog`
    /// first unless the path places it).
    fn search_path(&self) -> Vec<String> {
        self.session().search_path(&|s| self.user_schema_exists(s))
    }
    /// The schema unqualified names are created in: the first existing
    /// schema of the path as written (`None`: there is none).
    fn creation_schema(&self) -> Option<String> {
        self.session().explicit_search_path(&|s| self.user_schema_exists(s)).into_iter().next()
    }
    /// The catalog as of this statement, for the catalog functions.
    fn snapshot(&self) -> std::sync::Arc<crate::expr::func::catalog::CatalogSnapshot>;
    /// The session the statement runs in. Reading it marks the statement
    /// as depending on its session, like reading the catalog does.
    fn session(&self) -> &SessionInfo;
    /// Records that the statement's result depends on its session or the
    /// catalog (so it cannot define a view).
    fn note_catalog_read(&self);
    /// The unique keys of table `id`: its PRIMARY KEY and UNIQUE
    /// constraints and its unique indexes (`ON CONFLICT`'s targets).
    fn unique_keys(&self, id: GlobalId) -> Vec<UniqueKey>;
    /// Records that the statement calls a size function: the coordinator
    /// then measures relation sizes into the snapshot before it runs.
    fn note_sizes(&self) {}
    /// Refuses the statement (42501) unless its role holds every privilege
    /// of `privs` (`any`: one of them) on the user relation `entry`;
    /// system relations are readable by every role. A view read also
    /// needs its owner to hold SELECT on what the view reads.
    fn require(&self, _entry: &CatalogEntry, _privs: Privs, _any: bool) -> Result<(), Error> {
        Ok(())
    }
    /// Refuses the statement (42501) unless its role owns the relation
    /// `entry` (or is a superuser).
    fn require_owner(&self, _entry: &CatalogEntry) -> Result<(), Error> {
        Ok(())
    }
    /// Refuses the statement (42501) unless its role holds `privs` on the
    /// user schema `name`.
    fn require_schema(&self, _name: &str, _privs: Privs) -> Result<(), Error> {
        Ok(())
    }
    /// Refuses the statement (42501) unless its role owns the user schema
    /// `name`.
    fn require_schema_owner(&self, _name: &str) -> Result<(), Error> {
        Ok(())
    }
    /// Refuses the statement (42501) unless its role holds `privs` on the
    /// database.
    fn require_database(&self, _privs: Privs) -> Result<(), Error> {
        Ok(())
    }
    /// Whether the statement's role is a superuser (or the statement is
    /// not checked: a stored statement bound again).
    fn superuser(&self) -> bool {
        true
    }
}

