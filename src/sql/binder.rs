//! Binding statements: name resolution against the catalog, DDL and DML
//! into `Plan`s. Queries are bound by `query.rs` (blocks, joins, set
//! operations) and `subquery.rs` (decorrelation).

use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::acl::Privs;
use crate::repr::{ColumnType, Datum, Error, RelationDesc, Row, ScalarType};
use crate::sql::expr::ExprCtx;
use crate::sql::plan::{ClusterMoves, ItemKind, MigrationSteps, Plan, ShowKind, UniqueKey};
use crate::sql::query::Cte;
use crate::sql::scope::Scope;
use crate::sql::subquery::{self, CorrFrame};
use crate::sql::types::{assignable, scalar_type_from_sql};
use crate::sql::{CatalogEntry, SqlCatalog, Stmt};
use sqlparser::ast::{
    self, AssignmentTarget, ColumnOption, Expr, FromTable, Ident, ObjectName, ObjectType, SetExpr, Statement,
    TableConstraint, TableFactor, TableObject, Value,
};

/// Parameter types (declared or inferred) and, at execution, their values.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pub types: Vec<Option<ScalarType>>,
    pub values: Option<Vec<Datum>>,
    /// Without values: each parameter is bound as a placeholder for its
    /// value (`EvalError::UnboundParameter`), making a generic plan;
    /// otherwise as NULL (describing a statement).
    pub generic: bool,
}

impl Params {
    /// Parameter `index` of type `ty` where no value is given: its
    /// placeholder (generic), or NULL. `cast`: the value is cast to `ty`.
    pub(crate) fn unbound(&self, index: usize, ty: &ScalarType, cast: bool) -> ScalarExpr {
        if self.generic {
            ScalarExpr::Error(crate::repr::EvalError::UnboundParameter { index, ty: ty.clone(), cast })
        } else {
            ScalarExpr::Literal(Datum::Null, ty.clone())
        }
    }
}

pub struct Binder<'a> {
    pub catalog: &'a dyn SqlCatalog,
    pub params: &'a mut Params,
    /// Correlation frames of the subqueries being bound (innermost last).
    pub corr: Vec<CorrFrame>,
    /// Counter for placeholder ids.
    pub placeholders: u64,
    /// CTEs in scope (innermost last).
    pub ctes: Vec<Cte>,
    /// The statement's time: the value of `now()`, `current_date`... in
    /// this statement (see `sql::functions::finish_plan`).
    pub now: chrono::DateTime<chrono::Utc>,
    /// Settings the statement changes when it succeeds (`set_config`):
    /// name, value, and whether only for the transaction.
    pub settings: Vec<(String, String, bool)>,
    /// The next query bound is a FROM subquery's, whose select list may
    /// hold record-valued items (`composite.rs`); the query's own SELECT
    /// block takes it.
    pub record_outputs: bool,
    /// The placeholder of the prefix of the SELECT block whose FROM clause
    /// is being bound, if it is correlated: a WITH query whose relation
    /// starts with that prefix (`query::CtePrefix`) may be read there.
    pub block_outer: Option<crate::repr::GlobalId>,
    /// How many parameter references (`$n`) have been bound so far: an
    /// `INSERT`'s VALUES row that refers to one is kept as expressions,
    /// not folded to constants (`bind_insert`), so that its plan is the
    /// same whether bound with values or with placeholders (a generic
    /// plan, `coord/generic.rs`).
    pub params_bound: u64,
    /// How many expressions enclose the one being bound
    /// (`expr::MAX_EXPR_DEPTH` bounds it).
    pub expr_depth: usize,
    /// Operators copied so far into the plan by repeating a relation: a
    /// correlated subquery's keys, an outer join's inputs
    /// (`subquery::MAX_COPIED_NODES` bounds it).
    pub copied_nodes: usize,
    /// Above zero while a correlated block is bound only to learn which
    /// outer columns it reads (`subquery::bind_correlated_with`'s first
    /// pass): blocks nested in it are then bound once, not twice, so
    /// nesting costs binding work quadratic, not exponential, in depth.
    pub discovering: usize,
}

/// Postgres folds unquoted identifiers to lower case.
pub fn ident(id: &Ident) -> String {
    if id.quote_style.is_some() { id.value.clone() } else { id.value.to_lowercase() }
}

/// The last part of a possibly schema-qualified name.
pub fn object_name(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(id)) => ident(id),
        Some(other) => other.to_string().to_lowercase(),
        None => String::new(),
    }
}

/// A possibly schema-qualified object name, case-folded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualifiedName {
    pub schema: Option<String>,
    pub name: String,
}

impl std::fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(s) => write!(f, "{s}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The schemas that hold the system catalog's relations.
pub const SYSTEM_SCHEMAS: [&str; 3] = ["pg_catalog", "information_schema", "ripple_catalog"];

/// The schema every database starts with, where objects are created by
/// default.
pub const USER_SCHEMA: &str = "public";

/// Binds one statement.
pub fn bind_statement(catalog: &dyn SqlCatalog, stmt: &Stmt, params: &mut Params) -> Result<Plan, Error> {
    let now = chrono::Utc::now();
    let mut b = Binder {
        catalog,
        params,
        corr: Vec::new(),
        placeholders: 0,
        ctes: Vec::new(),
        now,
        settings: Vec::new(),
        record_outputs: false,
        block_outer: None,
        params_bound: 0,
        expr_depth: 0,
        copied_nodes: 0,
        discovering: 0,
    };
    let mut plan = match stmt {
        Stmt::Sql(s) => b.bind_statement(s)?,
        Stmt::Refresh { name, .. } => b.bind_refresh(name)?,
        Stmt::Checkpoint => Plan::Checkpoint,
        Stmt::AlterCluster(a) => bind_alter_cluster(&b, a)?,
        Stmt::Maintenance { verb, tables } => {
            for t in tables {
                b.resolve_object(t)?;
            }
            Plan::Maintenance { tag: verb.to_string() }
        }
        Stmt::Rename { kind, if_exists, name, new_name } => b.bind_rename(*kind, *if_exists, name, new_name)?,
        Stmt::SetSchema { kind, if_exists, name, schema } => b.bind_set_schema(*kind, *if_exists, name, schema)?,
        Stmt::Fetch { cursor, direction, move_only, timeout } => Plan::Fetch {
            name: cursor.clone(),
            direction: *direction,
            move_only: *move_only,
            timeout: timeout.as_deref().map(|t| crate::sql::subscribe::interval_duration(t, "FETCH timeout")).transpose()?,
        },
        Stmt::Subscribe { sub, output } => b.bind_subscribe(sub, output)?,
        Stmt::AsOf { query, as_of } => b.bind_as_of(query, as_of)?,
    };
    crate::sql::functions::finish_plan(&mut plan, now)?;
    Ok(plan)
}

/// `ALTER CLUSTER`: only the superuser moves state between workers; the
/// one cluster is `default`.
fn bind_alter_cluster(b: &Binder<'_>, a: &crate::sql::parse_cluster::AlterCluster) -> Result<Plan, Error> {
    use crate::dataflow::bins::BINS;
    use crate::sql::parse_cluster::ClusterAction;
    if !b.catalog.superuser() {
        return Err(Error::InsufficientPrivilege("must be superuser to alter a cluster".into()));
    }
    if !a.name.value.eq_ignore_ascii_case("default") {
        return Err(Error::UndefinedObject(format!("cluster \"{}\" does not exist (the one cluster is \"default\")", a.name.value)));
    }
    let mut strategy = None;
    let mut batch = None;
    for (key, value) in &a.options {
        match key.value.to_ascii_lowercase().as_str() {
            "strategy" => match value.to_ascii_lowercase().as_str() {
                "batched" => strategy = Some(true),
                "all_at_once" => strategy = Some(false),
                _ => {
                    return Err(Error::InvalidParameter(format!(
                        "invalid value for option \"strategy\": \"{value}\" (expected 'batched' or 'all_at_once')"
                    )))
                }
            },
            "batch" => match value.parse::<usize>() {
                Ok(n) if (1..=BINS).contains(&n) => batch = Some(n),
                _ => return Err(Error::InvalidParameter(format!("option \"batch\" must be a number of bins from 1 to {BINS}, not \"{value}\""))),
            },
            other => return Err(Error::InvalidParameter(format!("unrecognized ALTER CLUSTER option \"{other}\" (expected strategy or batch)"))),
        }
    }
    let steps = match (strategy, batch) {
        (Some(false), Some(_)) => {
            return Err(Error::InvalidParameter("option \"batch\" applies to the batched strategy, not all_at_once".into()))
        }
        (Some(false), None) => MigrationSteps::AllAtOnce,
        (_, Some(n)) => MigrationSteps::Bins(n),
        (_, None) => MigrationSteps::Paced,
    };
    let moves = match &a.action {
        ClusterAction::Rebalance => ClusterMoves::Balance,
        ClusterAction::MoveBins { bins, worker } => {
            if let Some(bad) = bins.iter().find(|b| **b >= BINS as u64) {
                return Err(Error::InvalidParameter(format!("bin {bad} does not exist: bins are numbered 0 to {}", BINS - 1)));
            }
            let worker = u32::try_from(*worker).map_err(|_| Error::InvalidParameter(format!("worker {worker} does not exist")))?;
            ClusterMoves::Bins { bins: bins.iter().map(|b| *b as u32).collect(), worker }
        }
    };
    Ok(Plan::AlterCluster { moves, steps })
}

impl Binder<'_> {
    /// `DECLARE name [BINARY] [INSENSITIVE] [[NO] SCROLL] CURSOR [WITH[OUT]
    /// HOLD] FOR query`: the query bound as a SELECT.
    fn bind_declare_cursor(&mut self, stmts: &[ast::Declare]) -> Result<Plan, Error> {
        let [d] = stmts else {
            return Err(Error::FeatureNotSupported("DECLARE of more than one cursor is not supported".into()));
        };
        let (Some(ast::DeclareType::Cursor), [name], Some(q)) = (&d.declare_type, d.names.as_slice(), &d.for_query) else {
            return Err(Error::FeatureNotSupported(format!("DECLARE {} is not supported", d)));
        };
        if d.binary == Some(true) {
            return Err(Error::FeatureNotSupported("binary cursors are not supported".into()));
        }
        let select = self.bind_statement(&Statement::Query(q.clone()))?;
        Ok(Plan::DeclareCursor {
            name: ident(name),
            select: Box::new(select),
            scroll: d.scroll,
            hold: d.hold == Some(true),
            sql: format!("DECLARE {d}"),
        })
    }

    /// `CREATE TABLE name [(columns)] AS query [WITH [NO] DATA]`: a table of
    /// the query's columns (named by the list, if given), all nullable.
    fn bind_create_table_as(&mut self, schema: String, name: String, ct: &ast::CreateTable, q: &ast::Query) -> Result<Plan, Error> {
        if !ct.constraints.is_empty() || ct.columns.iter().any(|c| !c.options.is_empty()) {
            return Err(Error::FeatureNotSupported("constraints in CREATE TABLE AS are not supported".into()));
        }
        let block = self.bind_query(q)?;
        let mut desc = block.desc.clone();
        if ct.columns.len() > desc.arity() {
            return Err(Error::Syntax("too many column names were specified".into()));
        }
        for (i, c) in ct.columns.iter().enumerate() {
            desc.names[i] = ident(&c.name);
        }
        check_unique_names(&desc)?;
        for t in &mut desc.types {
            t.nullable = true;
        }
        let create_sql = crate::sql::ddl_text::create_table(&schema, &name, &desc);
        let create = Plan::CreateTable { schema, name, desc, if_not_exists: ct.if_not_exists, unique: Vec::new(), defaults: Vec::new() };
        Ok(Plan::CreateTableAs {
            create: Box::new(create),
            create_sql,
            finishing: block.finishing.clone(),
            query: block.expr,
            with_data: ct.with_data.is_none_or(|w| w.data),
        })
    }

    pub(crate) fn bind_statement(&mut self, stmt: &Statement) -> Result<Plan, Error> {
        match stmt {
            Statement::Query(q) => {
                let block = self.bind_query(q)?;
                let (query, desc) = self.named_outputs(block.expr, block.desc);
                let settings = std::mem::take(&mut self.settings);
                Ok(Plan::Select { query, desc, origins: block.origins, finishing: block.finishing, settings })
            }
            Statement::CreateTable(ct) => {
                let (schema, name) = self.creation_name(&ct.name)?;
                if let Some(q) = &ct.query {
                    return self.bind_create_table_as(schema, name, ct, q);
                }
                let mut names = Vec::new();
                let mut types = Vec::new();
                let mut defaults = Vec::new();
                // (constraint name, column names, primary)
                let mut keys: Vec<(Option<String>, Vec<String>, bool)> = Vec::new();
                for col in &ct.columns {
                    let cname = ident(&col.name);
                    if names.contains(&cname) {
                        return Err(Error::DuplicateColumn(format!("column \"{cname}\" specified more than once")));
                    }
                    let scalar = scalar_type_from_sql(&col.data_type)?;
                    let mut nullable = true;
                    let mut default = None;
                    for opt in &col.options {
                        let cons = opt.name.as_ref().map(ident);
                        match &opt.option {
                            ColumnOption::Default(e) => {
                                if default.is_some() {
                                    return Err(Error::Syntax(format!(
                                        "multiple default values specified for column \"{cname}\" of table \"{name}\""
                                    )));
                                }
                                default = Some(self.check_default(e, &cname, &scalar)?);
                            }
                            ColumnOption::NotNull => nullable = false,
                            ColumnOption::Null => nullable = true,
                            ColumnOption::PrimaryKey(_) => keys.push((cons, vec![cname.clone()], true)),
                            ColumnOption::Unique(_) => keys.push((cons, vec![cname.clone()], false)),
                            other => {
                                return Err(Error::FeatureNotSupported(format!(
                                    "column option {other} is not supported yet"
                                )));
                            }
                        }
                    }
                    names.push(cname);
                    types.push(ColumnType::new(scalar, nullable));
                    defaults.push(default);
                }
                for c in &ct.constraints {
                    let (cons, cols, primary) = match c {
                        TableConstraint::PrimaryKey(pk) => (&pk.name, &pk.columns, true),
                        TableConstraint::Unique(u) => (&u.name, &u.columns, false),
                        other => {
                            return Err(Error::FeatureNotSupported(format!("table constraint {other} is not supported yet")));
                        }
                    };
                    let mut key = Vec::new();
                    for ic in cols {
                        match &ic.column.expr {
                            Expr::Identifier(id) => key.push(ident(id)),
                            other => {
                                return Err(Error::FeatureNotSupported(format!(
                                    "a constraint on the expression {other} is not supported yet"
                                )))
                            }
                        }
                    }
                    keys.push((cons.as_ref().map(ident), key, primary));
                }
                if names.is_empty() {
                    return Err(Error::FeatureNotSupported("tables without columns are not supported".into()));
                }
                let unique = unique_keys(&name, &names, &mut types, keys)?;
                Ok(Plan::CreateTable {
                    schema,
                    name,
                    desc: RelationDesc::new(names, types),
                    if_not_exists: ct.if_not_exists,
                    unique,
                    defaults,
                })
            }
            Statement::CreateView(cv) => {
                let (schema, name) = self.creation_name(&cv.name)?;
                let block = self.bind_query(&cv.query)?;
                let mut desc = block.desc.clone();
                if !cv.columns.is_empty() {
                    if cv.columns.len() > desc.arity() {
                        return Err(Error::Syntax("CREATE VIEW specifies more column names than columns".into()));
                    }
                    for (i, c) in cv.columns.iter().enumerate() {
                        desc.names[i] = ident(&c.name);
                    }
                }
                check_unique_names(&desc)?;
                // ORDER BY without LIMIT does not change a view's contents;
                // with LIMIT/OFFSET it is a maintained top-k.
                let query = block.into_relation();
                let retain_history = crate::sql::subscribe::retain_history(&cv.options)?;
                if retain_history.is_some() && !cv.materialized {
                    return Err(Error::InvalidParameter(
                        "RETAIN HISTORY applies to materialized views only: a view keeps nothing".into(),
                    ));
                }
                Ok(Plan::CreateView {
                    schema,
                    name,
                    query,
                    desc,
                    materialized: cv.materialized,
                    if_not_exists: cv.if_not_exists,
                    or_replace: cv.or_replace,
                    retain_history,
                })
            }
            Statement::CreateIndex(ci) => {
                let entry = self.resolve_object(&ci.table_name)?;
                self.owned(&entry)?;
                let on_name = entry.name.clone();
                if !matches!(entry.kind, ItemKind::Table | ItemKind::MaterializedView) {
                    return Err(Error::WrongObjectType(format!(
                        "cannot create index on relation \"{on_name}\": it is a {}",
                        entry.kind.name()
                    )));
                }
                let scope = scope_of(&entry, &on_name);
                let mut key = Vec::new();
                for c in &ci.columns {
                    let col = match &c.column.expr {
                        Expr::Identifier(id) => scope.resolve(None, &ident(id))?,
                        other => {
                            return Err(Error::FeatureNotSupported(format!("index on expression {other} is not supported yet")));
                        }
                    };
                    key.push(col);
                }
                if ci.unique && entry.kind != ItemKind::Table {
                    return Err(Error::WrongObjectType(format!(
                        "cannot create a unique index on \"{on_name}\": it is a {}",
                        entry.kind.name()
                    )));
                }
                let name = match &ci.name {
                    Some(n) => {
                        let q = self.qualified(n)?;
                        if q.schema.as_ref().is_some_and(|s| *s != entry.schema) {
                            return Err(Error::InvalidSchemaName(format!(
                                "an index is created in the schema of its table (\"{}\"), not \"{}\"",
                                entry.schema,
                                q.schema.unwrap_or_default()
                            )));
                        }
                        Some(q.name)
                    }
                    None => None,
                };
                Ok(Plan::CreateIndex {
                    schema: entry.schema.clone(),
                    name,
                    on: entry.id,
                    on_name,
                    key,
                    if_not_exists: ci.if_not_exists,
                    unique: ci.unique,
                })
            }
            Statement::Insert(ins) => self.bind_insert(ins),
            Statement::Copy { source, to, target, options, legacy_options, values } => {
                self.bind_copy(source, *to, target, options, legacy_options, values)
            }
            Statement::Update(up) => self.bind_update(up),
            Statement::Delete(del) => self.bind_delete(del),
            Statement::Drop { object_type, if_exists, names, cascade, .. } => {
                let kind = match object_type {
                    ObjectType::Table => ItemKind::Table,
                    ObjectType::View => ItemKind::View,
                    ObjectType::MaterializedView => ItemKind::MaterializedView,
                    ObjectType::Index => ItemKind::Index,
                    ObjectType::Role | ObjectType::User => return self.bind_drop_role(names, *if_exists),
                    ObjectType::Schema => {
                        let names: Vec<String> = names.iter().map(object_name).collect();
                        if let Some(s) = names.iter().find(|n| SYSTEM_SCHEMAS.contains(&n.as_str())) {
                            return Err(Error::RequiredBySystem(format!(
                                "cannot drop schema {s} because it is required by the database system"
                            )));
                        }
                        for n in names.iter().filter(|n| self.catalog.user_schema_exists(n)) {
                            self.catalog.require_schema_owner(n)?;
                        }
                        return Ok(Plan::DropSchema { names, if_exists: *if_exists, cascade: *cascade });
                    }
                    other => return Err(Error::FeatureNotSupported(format!("DROP {other} is not supported"))),
                };
                let mut targets = Vec::new();
                for n in names {
                    let q = self.user_object_schema(n, *if_exists)?;
                    if let Some(s) = &q.schema {
                        if let Some(entry) = self.catalog.resolve_in(Some(s), &q.name)? {
                            self.owned(&entry)?;
                        }
                    }
                    targets.push(q);
                }
                Ok(Plan::Drop { kind, names: targets, if_exists: *if_exists, cascade: *cascade })
            }
            Statement::ShowTables { .. } => Ok(Plan::Show(ShowKind::Tables)),
            Statement::ShowViews { materialized, .. } => {
                Ok(Plan::Show(if *materialized { ShowKind::MaterializedViews } else { ShowKind::Views }))
            }
            Statement::ShowVariable { variable } => {
                let words: Vec<String> = variable.iter().map(ident).collect();
                Ok(Plan::Show(match words.join(" ").as_str() {
                    "tables" => ShowKind::Tables,
                    "views" => ShowKind::Views,
                    "materialized views" => ShowKind::MaterializedViews,
                    "indexes" | "index" => ShowKind::Indexes,
                    "arrangements" => ShowKind::Arrangements,
                    "checkpoints" => ShowKind::Checkpoints,
                    "hydration" => ShowKind::Hydration,
                    "arrangement_sizes" => ShowKind::ArrangementSizes,
                    other => ShowKind::Variable(other.to_string()),
                }))
            }
            Statement::Explain { statement, options, .. } => {
                let transforms = explain_transforms(options.as_deref().unwrap_or_default())?;
                match statement.as_ref() {
                    Statement::Query(q) => Ok(Plan::Explain { query: self.bind_query(q)?.into_relation(), transforms }),
                    Statement::CreateView(cv) => Ok(Plan::Explain { query: self.bind_query(&cv.query)?.into_relation(), transforms }),
                    other => Err(Error::FeatureNotSupported(format!("EXPLAIN of {other} is not supported"))),
                }
            }
            Statement::Set(set) => match set {
                ast::Set::SingleAssignment { variable, values, .. } => {
                    let name = variable.to_string().to_lowercase();
                    // A search path keeps its quoted names quoted (`"App"`
                    // is not `app`), as PostgreSQL shows it.
                    let path = name == "search_path";
                    let value = values
                        .iter()
                        .map(|v| match v {
                            Expr::Value(v) => match &v.value {
                                Value::SingleQuotedString(s) => s.clone(),
                                other => other.to_string(),
                            },
                            Expr::Identifier(id) if path && id.quote_style.is_some() => {
                                crate::expr::func::catalog::quote_ident(&id.value)
                            }
                            Expr::Identifier(id) => id.value.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    Ok(Plan::SetVariable { name, value })
                }
                ast::Set::SetTimeZone { value, .. } => {
                    Ok(Plan::SetVariable { name: "timezone".into(), value: value.to_string().trim_matches('\'').to_string() })
                }
                ast::Set::SetNames { charset_name, .. } => {
                    Ok(Plan::SetVariable { name: "client_encoding".into(), value: charset_name.to_string() })
                }
                ast::Set::SetRole { role_name, .. } => Ok(Plan::SetVariable {
                    name: "role".into(),
                    value: role_name.as_ref().map_or_else(|| "none".to_string(), ident),
                }),
                // SET TRANSACTION ...: accepted; ripple has one isolation
                // level per session setting.
                _ => Ok(Plan::SessionCleanup { tag: "SET".into() }),
            },
            Statement::Truncate(t) => {
                let mut tables = Vec::new();
                for target in &t.table_names {
                    let entry = self.resolve_table(&target.name)?;
                    self.catalog.require(&entry, Privs::TRUNCATE, false)?;
                    let get = RelationExpr::Get { id: entry.id, name: entry.name.clone(), types: entry.desc.types.clone() };
                    if !tables.iter().any(|(id, _)| *id == entry.id) {
                        tables.push((entry.id, get));
                    }
                }
                Ok(Plan::Truncate { tables })
            }
            Statement::Reset(r) => Ok(Plan::ResetVariable {
                name: match &r.reset {
                    ast::Reset::ALL => None,
                    ast::Reset::SessionAuthorization => Some("session_authorization".into()),
                    ast::Reset::ConfigurationParameter(n) => Some(n.to_string().to_lowercase()),
                },
            }),
            Statement::StartTransaction { modes, .. } => Ok(Plan::StartTransaction {
                read_only: modes.iter().any(|m| {
                    matches!(m, ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly))
                }),
            }),
            Statement::Deallocate { name, .. } => Ok(Plan::Deallocate {
                name: (!(name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all"))).then(|| ident(name)),
            }),
            Statement::Prepare { name, data_types, statement } => {
                let mut types = Vec::new();
                for t in data_types {
                    types.push(Some(scalar_type_from_sql(t)?));
                }
                let stmt = Stmt::Sql(statement.as_ref().clone());
                let mut params = Params { types, values: None, generic: false };
                bind_statement(self.catalog, &stmt, &mut params)?;
                Ok(Plan::Prepare { name: ident(name), stmt: Box::new(stmt), types: params.types })
            }
            Statement::Execute { name: Some(name), parameters, immediate: false, into, using, .. }
                if into.is_empty() && using.is_empty() =>
            {
                let name = object_name(name);
                let Some(types) = self.catalog.session().prepared.get(&name).cloned() else {
                    return Err(Error::UndefinedPreparedStatement(format!("prepared statement \"{name}\" does not exist")));
                };
                if types.len() != parameters.len() {
                    return Err(Error::Syntax(format!(
                        "wrong number of parameters for prepared statement \"{name}\"\nDETAIL: Expected {} parameters but got {}.",
                        types.len(),
                        parameters.len()
                    )));
                }
                let mut params = Vec::new();
                for (e, t) in parameters.iter().zip(types) {
                    let empty = Scope::default();
                    let mut ctx = ExprCtx::new(&empty, "EXECUTE");
                    let b = self.bind_expr(e, &mut ctx)?;
                    let x = match &t {
                        Some(t) => self.coerce(b, t)?,
                        None => b.expr,
                    };
                    params.push(x.eval(&[])?);
                }
                Ok(Plan::ExecutePrepared { name, params })
            }
            Statement::Lock(lock) => {
                for target in &lock.tables {
                    let entry = self.resolve_table(&target.name)?;
                    let any = Privs::SELECT.union(Privs::INSERT).union(Privs::UPDATE).union(Privs::DELETE).union(Privs::TRUNCATE);
                    self.catalog.require(&entry, any, true)?;
                }
                Ok(Plan::Lock)
            }
            Statement::Discard { object_type } => Ok(match object_type {
                ast::DiscardObject::ALL => Plan::DiscardAll,
                // Ripple caches no plans, has no sequences or temporary
                // objects: nothing to discard.
                other => Plan::SessionCleanup { tag: format!("DISCARD {other}") },
            }),
            // Ripple has no notifications: what pools send on release is
            // accepted.
            Statement::Close { cursor: ast::CloseCursor::All } => Ok(Plan::CloseCursor { name: None }),
            Statement::Close { cursor: ast::CloseCursor::Specific { name } } => Ok(Plan::CloseCursor { name: Some(ident(name)) }),
            Statement::Declare { stmts } => self.bind_declare_cursor(stmts),
            Statement::UNLISTEN { .. } => Ok(Plan::SessionCleanup { tag: "UNLISTEN".into() }),
            Statement::Commit { .. } => Ok(Plan::Commit),
            Statement::Rollback { savepoint: Some(name), .. } => Ok(Plan::RollbackTo { name: ident(name) }),
            Statement::Rollback { .. } => Ok(Plan::Rollback),
            Statement::Savepoint { name } => Ok(Plan::Savepoint { name: ident(name) }),
            Statement::ReleaseSavepoint { name } => Ok(Plan::ReleaseSavepoint { name: ident(name) }),
            Statement::AlterTable(at) => self.bind_alter_table(at),
            Statement::AlterIndex { name, operation } => self.bind_alter_index(name, operation),
            Statement::CreateSchema { schema_name, if_not_exists, .. } => self.bind_create_schema(schema_name, *if_not_exists),
            Statement::AlterSchema(a) => self.bind_alter_schema(a),
            Statement::CreateRole(c) => self.bind_create_role(c),
            Statement::Grant(g) => self.bind_grant(g),
            Statement::Revoke(r) => self.bind_revoke(r),
            Statement::AlterRole { name, operation } => self.bind_alter_role(name, operation),
            Statement::Comment { object_type, object_name, comment, if_exists } => {
                self.bind_comment(object_type, object_name, comment, *if_exists)
            }
            other => Err(Error::FeatureNotSupported(format!(
                "statement not supported yet: {}",
                other.to_string().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
            ))),
        }
    }

    /// A result's OID alias columns (`regclass`...) as the names they
    /// print as: their text form needs the catalog, which the server that
    /// encodes rows does not have. They are sent as text.
    pub fn named_outputs(&self, expr: RelationExpr, mut desc: RelationDesc) -> (RelationExpr, RelationDesc) {
        if !desc.types.iter().any(|t| matches!(t.scalar, ScalarType::Reg(_))) {
            return (expr, desc);
        }
        // The relation may carry more columns than the result (ORDER BY
        // keys past `desc`): those are kept as they are.
        let n = expr.arity();
        let mut scalars: Vec<ScalarExpr> = (0..n).map(ScalarExpr::Column).collect();
        for (i, t) in desc.types.iter_mut().enumerate() {
            if let Ok(named) = self.reg_cast(ScalarExpr::Column(i), &t.scalar, &ScalarType::Text) {
                t.scalar = ScalarType::Text;
                scalars[i] = named;
            }
        }
        let map = RelationExpr::Map { input: Box::new(expr), scalars };
        (RelationExpr::Project { input: Box::new(map), outputs: (n..2 * n).collect() }, desc)
    }

    /// `[database.][schema.]name` as written: the schema's object, or the
    /// first on the search path; 42P01 naming it as written if none.
    pub fn qualified(&self, name: &ObjectName) -> Result<QualifiedName, Error> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p {
                ast::ObjectNamePart::Identifier(id) => ident(id),
                other => other.to_string().to_lowercase(),
            })
            .collect();
        match parts.as_slice() {
            [n] => Ok(QualifiedName { schema: None, name: n.clone() }),
            [s, n] => Ok(QualifiedName { schema: Some(s.clone()), name: n.clone() }),
            [db, s, n] => {
                if *db != self.catalog.session().database {
                    return Err(Error::FeatureNotSupported(format!(
                        "cross-database references are not implemented: \"{db}.{s}.{n}\""
                    )));
                }
                Ok(QualifiedName { schema: Some(s.clone()), name: n.clone() })
            }
            _ => Err(Error::Syntax(format!("improper qualified name (too many dotted names): {name}"))),
        }
    }

    /// The relation a (possibly qualified) name refers to.
    pub fn resolve_object(&self, name: &ObjectName) -> Result<CatalogEntry, Error> {
        let q = self.qualified(name)?;
        self.catalog.resolve_in(q.schema.as_deref(), &q.name)?.ok_or_else(|| Error::UndefinedTable(q.to_string()))
    }

    /// The schema and name of an object a DDL statement creates: the
    /// schema named, or the first existing one of the search path (3F000
    /// if there is none, or the one named does not exist); the system
    /// schemas cannot be written (42501).
    pub fn creation_name(&self, name: &ObjectName) -> Result<(String, String), Error> {
        let q = self.qualified(name)?;
        let schema = match q.schema.clone() {
            Some(s) => s,
            None => self
                .catalog
                .creation_schema()
                .ok_or_else(|| Error::InvalidSchemaName("no schema has been selected to create in".into()))?,
        };
        if SYSTEM_SCHEMAS.contains(&schema.as_str()) {
            return Err(Error::InsufficientPrivilege(format!("permission denied to create \"{schema}.{}\"", q.name)));
        }
        if !self.catalog.user_schema_exists(&schema) {
            return Err(Error::InvalidSchemaName(format!("schema \"{schema}\" does not exist")));
        }
        self.catalog.require_schema(&schema, Privs::CREATE)?;
        Ok((schema, q.name))
    }

    /// The schema that holds the user object `name` (an unqualified name:
    /// the first schema of the search path that holds one), `None` if none
    /// does; a system relation named so may not be changed (42501).
    pub fn user_object_schema(&self, name: &ObjectName, if_exists: bool) -> Result<QualifiedName, Error> {
        let q = self.qualified(name)?;
        match q.schema.as_deref() {
            Some(s) if SYSTEM_SCHEMAS.contains(&s) => match self.catalog.resolve_in(Some(s), &q.name)? {
                Some(e) => Self::check_writable(&e).map(|_| q),
                None if if_exists => Ok(QualifiedName { schema: None, name: q.name }),
                None => Err(Error::UndefinedTable(q.to_string())),
            },
            Some(s) if !self.catalog.user_schema_exists(s) => {
                if if_exists {
                    Ok(QualifiedName { schema: None, name: q.name })
                } else {
                    Err(Error::InvalidSchemaName(format!("schema \"{s}\" does not exist")))
                }
            }
            Some(_) => Ok(q),
            None => match self.catalog.resolve_in(None, &q.name)? {
                // An unqualified name that finds a system relation first
                // may not drop it.
                Some(e) => Self::check_writable(&e).map(|_| QualifiedName { schema: Some(e.schema), name: q.name }),
                None => Ok(q),
            },
        }
    }

    /// The target of DDL: not a system relation, and owned by the
    /// statement's role (42501).
    pub fn owned(&self, entry: &CatalogEntry) -> Result<(), Error> {
        Self::check_writable(entry)?;
        self.catalog.require_owner(entry)
    }

    /// Refuses to change a relation of the system catalog (42501).
    pub fn check_writable(entry: &CatalogEntry) -> Result<(), Error> {
        if entry.system {
            return Err(Error::InsufficientPrivilege(format!(
                "permission denied: \"{}\" is a system catalog",
                entry.name
            )));
        }
        Ok(())
    }

    fn resolve_table(&self, name: &ObjectName) -> Result<CatalogEntry, Error> {
        let entry = self.resolve_object(name)?;
        Self::check_writable(&entry)?;
        if entry.kind != ItemKind::Table {
            return Err(Error::WrongObjectType(format!("\"{}\" is not a table", entry.name)));
        }
        Ok(entry)
    }

    // ---- DML ----

    fn bind_insert(&mut self, ins: &ast::Insert) -> Result<Plan, Error> {
        let TableObject::TableName(tname) = &ins.table else {
            return Err(Error::FeatureNotSupported("INSERT into a table function is not supported".into()));
        };
        let entry = self.resolve_table(tname)?;
        self.catalog.require(&entry, Privs::INSERT, false)?;
        if matches!(&ins.on, Some(ast::OnInsert::OnConflict(ast::OnConflict { action: ast::OnConflictAction::DoUpdate(_), .. }))) {
            // DO UPDATE changes rows and reads the ones it meets.
            self.catalog.require(&entry, Privs::UPDATE.union(Privs::SELECT), false)?;
        }
        let label = ins.table_alias.as_ref().map(|a| ident(&a.alias)).unwrap_or_else(|| entry.name.clone());
        let on_conflict = match &ins.on {
            None => None,
            Some(ast::OnInsert::OnConflict(oc)) => Some(self.bind_on_conflict(oc, &entry, &label)?),
            Some(_) => {
                return Err(Error::FeatureNotSupported(
                    "ON DUPLICATE KEY UPDATE is not supported; use ON CONFLICT (key) DO UPDATE".into(),
                ))
            }
        };
        let returning = match &ins.returning {
            Some(items) => {
                let alias = ins.table_alias.as_ref().map(|a| format!(" AS {}", a.alias)).unwrap_or_default();
                let relation = table_factor(&format!("{tname}{alias}"))?;
                Some(self.bind_returning(items, &relation, entry.id)?)
            }
            None => None,
        };
        let desc = entry.desc.clone();
        let scope = scope_of(&entry, &entry.name);
        let targets: Vec<usize> = if ins.columns.is_empty() {
            (0..desc.arity()).collect()
        } else {
            let mut t = Vec::new();
            for c in &ins.columns {
                let n = object_name(c);
                let i = scope.resolve(None, &n).map_err(|_| {
                    Error::UndefinedColumn(format!("column \"{n}\" of relation \"{}\" does not exist", entry.name))
                })?;
                if t.contains(&i) {
                    return Err(Error::DuplicateColumn(format!("column \"{n}\" specified more than once")));
                }
                t.push(i);
            }
            t
        };
        let Some(source) = &ins.source else {
            // DEFAULT VALUES: one row of defaults.
            if !ins.columns.is_empty() {
                return Err(Error::Syntax("syntax error at or near \"DEFAULT\"".into()));
            }
            let one = RelationExpr::Constant { rows: vec![(Row::empty(), 1)], types: vec![] };
            let mut scalars = Vec::new();
            for col in 0..desc.arity() {
                scalars.push(self.column_default(&entry, col)?);
            }
            let source = RelationExpr::Map { input: Box::new(one), scalars };
            return Ok(Plan::Insert { table: entry.id, table_name: entry.name, desc, source, returning, on_conflict });
        };
        // Without a column list, the values fill the leading columns (the
        // rest get their defaults), as in Postgres.
        let mut targets = targets;
        if ins.columns.is_empty() {
            let given = match source.body.as_ref() {
                SetExpr::Values(values) => {
                    let first = values.rows.first().map_or(0, |r| r.content.len());
                    if values.rows.iter().any(|r| r.content.len() != first) {
                        return Err(Error::Syntax("VALUES lists must all be the same length".into()));
                    }
                    first
                }
                _ => targets.len(),
            };
            targets.truncate(given.max(1));
        }
        // VALUES are coerced to the target column types directly, as
        // Postgres does for unknown-typed literals.
        let (src, src_types) = match source.body.as_ref() {
            SetExpr::Values(values) if source.order_by.is_none() && source.limit_clause.is_none() => {
                let params_before = self.params_bound;
                let mut exprs_rows = Vec::with_capacity(values.rows.len());
                for row in &values.rows {
                    let row = &row.content;
                    if row.len() > targets.len() {
                        return Err(Error::Syntax("INSERT has more expressions than target columns".into()));
                    }
                    if row.len() < targets.len() {
                        return Err(Error::Syntax("INSERT has more target columns than expressions".into()));
                    }
                    let mut exprs = Vec::with_capacity(row.len());
                    for (e, &col) in row.iter().zip(&targets) {
                        if crate::sql::defaults::is_default_keyword(e) {
                            exprs.push(self.column_default(&entry, col)?);
                            continue;
                        }
                        let empty = Scope::default();
                        let mut ctx = ExprCtx::new(&empty, "VALUES");
                        let b = self.bind_expr(e, &mut ctx)?;
                        let target_ty = &desc.types[col].scalar;
                        if let Some(t) = &b.ty {
                            if !assignable(t, target_ty) {
                                return Err(Error::DatatypeMismatch(format!(
                                    "column \"{}\" is of type {} but expression is of type {}",
                                    desc.names[col],
                                    target_ty.name(),
                                    t.name()
                                )));
                            }
                        }
                        exprs.push(self.coerce(b, target_ty)?);
                    }
                    exprs_rows.push(exprs);
                }
                let types = targets.iter().map(|c| desc.types[*c].clone()).collect::<Vec<_>>();
                if self.params_bound == params_before {
                    // Constant rows, computed once here.
                    let mut rows = Vec::with_capacity(exprs_rows.len());
                    for exprs in exprs_rows {
                        let datums = exprs.iter().map(|x| x.eval(&[])).collect::<Result<Vec<_>, _>>()?;
                        rows.push((Row::from_datums(datums), 1));
                    }
                    (RelationExpr::Constant { rows, types: types.clone() }, types)
                } else {
                    // Rows with parameters stay expressions, computed when
                    // the statement runs: one plan serves every run of a
                    // prepared INSERT (its generic plan).
                    (subquery::expression_rows(exprs_rows), types)
                }
            }
            _ => {
                let block = self.bind_query(source)?;
                if ins.columns.is_empty() && block.desc.arity() < targets.len() {
                    targets.truncate(block.desc.arity());
                }
                if block.desc.arity() != targets.len() {
                    return Err(Error::Syntax(if block.desc.arity() > targets.len() {
                        "INSERT has more expressions than target columns".into()
                    } else {
                        "INSERT has more target columns than expressions".into()
                    }));
                }
                let types = block.desc.types.clone();
                (block.into_relation(), types)
            }
        };
        // Reorder into table columns, casting and filling missing with NULL.
        let n = src_types.len();
        let mut scalars = Vec::new();
        for (col, ct) in desc.types.iter().enumerate() {
            match targets.iter().position(|t| *t == col) {
                Some(i) => {
                    let from = &src_types[i].scalar;
                    if !assignable(from, &ct.scalar) {
                        return Err(Error::DatatypeMismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            desc.names[col],
                            ct.scalar.name(),
                            from.name()
                        )));
                    }
                    let e = ScalarExpr::Column(i);
                    scalars.push(if *from == ct.scalar {
                        e
                    } else {
                        e.call_unary(crate::expr::UnaryFunc::Cast { to: ct.scalar.clone(), explicit: false })
                    });
                }
                None => scalars.push(self.column_default(&entry, col)?),
            }
        }
        let outputs = (n..n + scalars.len()).collect();
        let source = RelationExpr::Project { input: Box::new(RelationExpr::Map { input: Box::new(src), scalars }), outputs };
        Ok(Plan::Insert { table: entry.id, table_name: entry.name, desc, source, returning, on_conflict })
    }

    fn bind_update(&mut self, up: &ast::Update) -> Result<Plan, Error> {
        if up.from.is_some() || !up.table.joins.is_empty() {
            return Err(Error::FeatureNotSupported("UPDATE ... FROM is not supported yet".into()));
        }
        let (entry, alias) = match &up.table.relation {
            TableFactor::Table { name, alias, .. } => (self.resolve_table(name)?, alias.as_ref().map(|a| ident(&a.name))),
            _ => return Err(Error::FeatureNotSupported("UPDATE of this target is not supported".into())),
        };
        self.catalog.require(&entry, Privs::UPDATE, false)?;
        if up.selection.is_some() || up.assignments.iter().any(|a| reads_columns(&a.value)) {
            self.catalog.require(&entry, Privs::SELECT, false)?;
        }
        let scope = scope_of(&entry, alias.as_deref().unwrap_or(&entry.name));
        let targets = assignment_targets(&scope, &up.assignments, &entry, "UPDATE")?;
        let get = RelationExpr::Get { id: entry.id, name: entry.name.clone(), types: entry.desc.types.clone() };
        let selection = self.bind_dml_selection(get, scope, up.selection.as_ref(), &targets, &entry)?;
        let assignments = targets.iter().map(|(c, _)| *c).collect();
        let returning = match &up.returning {
            Some(items) => Some(self.bind_returning(items, &up.table.relation, entry.id)?),
            None => None,
        };
        Ok(Plan::Update { table: entry.id, table_name: entry.name.clone(), desc: entry.desc, selection, assignments, returning })
    }

    fn bind_delete(&mut self, del: &ast::Delete) -> Result<Plan, Error> {
        let tables = match &del.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        if tables.len() != 1 || del.using.is_some() || !tables[0].joins.is_empty() {
            return Err(Error::FeatureNotSupported("DELETE with USING / several tables is not supported yet".into()));
        }
        let (entry, alias) = match &tables[0].relation {
            TableFactor::Table { name, alias, .. } => (self.resolve_table(name)?, alias.as_ref().map(|a| ident(&a.name))),
            _ => return Err(Error::FeatureNotSupported("DELETE of this target is not supported".into())),
        };
        self.catalog.require(&entry, Privs::DELETE, false)?;
        if del.selection.is_some() {
            self.catalog.require(&entry, Privs::SELECT, false)?;
        }
        let scope = scope_of(&entry, alias.as_deref().unwrap_or(&entry.name));
        let get = RelationExpr::Get { id: entry.id, name: entry.name.clone(), types: entry.desc.types.clone() };
        let selection = self.bind_dml_selection(get, scope, del.selection.as_ref(), &[], &entry)?;
        let returning = match &del.returning {
            Some(items) => Some(self.bind_returning(items, &tables[0].relation, entry.id)?),
            None => None,
        };
        Ok(Plan::Delete { table: entry.id, table_name: entry.name, selection, returning })
    }

}

/// Whether an expression names a column (what `UPDATE ... SET c = e`
/// reads, needing SELECT on the table as PostgreSQL does); a subquery's
/// own columns count too, which asks for no more than PostgreSQL would
/// of a statement reading the table.
fn reads_columns(e: &Expr) -> bool {
    use std::ops::ControlFlow;
    let found = ast::visit_expressions(e, |x| match x {
        Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
        Expr::Identifier(id) if id.quote_style.is_some() || !id.value.eq_ignore_ascii_case("default") => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

/// The table factor of `name [AS alias]` (an INSERT's target, read by its
/// RETURNING list).
fn table_factor(text: &str) -> Result<TableFactor, Error> {
    use sqlparser::dialect::PostgreSqlDialect;
    let mut parser = sqlparser::parser::Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .map_err(|e| Error::Syntax(e.to_string()))?;
    parser.parse_table_factor().map_err(|e| Error::Syntax(e.to_string()))
}

/// The columns of `entry` that `SET col = value, ...` assigns (resolved in
/// `scope`, the table's columns), each with its value.
pub(super) fn assignment_targets<'a>(
    scope: &Scope,
    assignments: &'a [ast::Assignment],
    entry: &CatalogEntry,
    what: &str,
) -> Result<Vec<(usize, &'a Expr)>, Error> {
    let mut targets = Vec::new();
    for a in assignments {
        let AssignmentTarget::ColumnName(cn) = &a.target else {
            return Err(Error::FeatureNotSupported(format!("tuple assignment in {what} is not supported yet")));
        };
        let n = object_name(cn);
        let col = scope
            .resolve(None, &n)
            .map_err(|_| Error::UndefinedColumn(format!("column \"{n}\" of relation \"{}\" does not exist", entry.name)))?;
        if targets.iter().any(|(c, _)| *c == col) {
            return Err(Error::DuplicateColumn(format!("multiple assignments to same column \"{n}\"")));
        }
        targets.push((col, &a.value));
    }
    Ok(targets)
}

fn scope_of(entry: &CatalogEntry, label: &str) -> Scope {
    Scope::from_names(Some(label), &entry.desc.names, &entry.desc.types)
}

/// The unique keys of a new table, named as Postgres names them
/// (`t_pkey`, `t_a_key`, `t_a_b_key`, `t_a_key1` for a repeat); a primary
/// key's columns become NOT NULL.
fn unique_keys(
    table: &str,
    names: &[String],
    types: &mut [ColumnType],
    keys: Vec<(Option<String>, Vec<String>, bool)>,
) -> Result<Vec<UniqueKey>, Error> {
    let mut out: Vec<UniqueKey> = Vec::new();
    let mut has_primary = false;
    for (cons, cols, primary) in keys {
        if primary {
            if has_primary {
                return Err(Error::InvalidTableDefinition(format!(
                    "multiple primary keys for table \"{table}\" are not allowed"
                )));
            }
            has_primary = true;
        }
        let mut columns = Vec::new();
        for c in &cols {
            let Some(i) = names.iter().position(|n| n == c) else {
                return Err(Error::UndefinedColumn(format!("column \"{c}\" named in key does not exist")));
            };
            if columns.contains(&i) {
                return Err(Error::DuplicateColumn(format!("column \"{c}\" appears twice in {} constraint", if primary { "primary key" } else { "unique" })));
            }
            if primary {
                types[i].nullable = false;
            }
            columns.push(i);
        }
        // Postgres keeps one constraint per distinct column list.
        if out.iter().any(|k| k.columns == columns) {
            continue;
        }
        let name = cons.unwrap_or_else(|| {
            let base = if primary { format!("{table}_pkey") } else { format!("{table}_{}_key", cols.join("_")) };
            let mut candidate = base.clone();
            let mut n = 1;
            while out.iter().any(|k| k.name == candidate) {
                candidate = format!("{base}{n}");
                n += 1;
            }
            candidate
        });
        out.push(UniqueKey { name, columns, primary });
    }
    Ok(out)
}

fn check_unique_names(desc: &RelationDesc) -> Result<(), Error> {
    for (i, n) in desc.names.iter().enumerate() {
        if desc.names[..i].contains(n) {
            return Err(Error::DuplicateColumn(format!("column \"{n}\" specified more than once")));
        }
    }
    Ok(())
}

/// Whether `EXPLAIN (...)`'s options ask for the plan after each
/// transform (`TRANSFORMS [boolean]`). PostgreSQL's own options are
/// accepted and have no effect on ripple's plans; any other is refused as
/// PostgreSQL refuses it.
fn explain_transforms(options: &[ast::UtilityOption]) -> Result<bool, Error> {
    let mut transforms = false;
    for option in options {
        let name = option.name.value.to_lowercase();
        let on = match &option.arg {
            None => true,
            Some(arg) => match arg.to_string().to_lowercase().trim_matches('\'').as_ref() {
                "true" | "on" | "1" | "yes" => true,
                "false" | "off" | "0" | "no" => false,
                other if name == "format" && matches!(other, "text" | "json" | "xml" | "yaml") => true,
                other => {
                    return Err(Error::Syntax(format!("invalid value for EXPLAIN option \"{name}\": \"{other}\"")));
                }
            },
        };
        match name.as_str() {
            "transforms" => transforms = on,
            "analyze" | "verbose" | "costs" | "settings" | "generic_plan" | "buffers" | "wal" | "timing" | "summary" | "format" => {}
            _ => return Err(Error::Syntax(format!("unrecognized EXPLAIN option \"{name}\""))),
        }
    }
    Ok(transforms)
}
