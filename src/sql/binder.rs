//! Binding statements: name resolution against the catalog, query blocks
//! (FROM, WHERE, GROUP BY, HAVING, SELECT, DISTINCT, ORDER BY, LIMIT) into
//! MIR, DDL and DML into `Plan`s.

use crate::expr::relation::ColumnOrder;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Error, RelationDesc, Row, ScalarType};
use crate::sql::expr::{contains_aggregate, ExprCtx, Grouping};
use crate::sql::plan::{Finishing, ItemKind, Plan, ShowKind};
use crate::sql::scope::{Scope, ScopeItem};
use crate::sql::types::{assignable, scalar_type_from_sql};
use crate::sql::{CatalogEntry, SqlCatalog};
use sqlparser::ast::{
    self, AssignmentTarget, ColumnOption, Expr, FromTable, GroupByExpr, Ident, JoinConstraint, JoinOperator,
    LimitClause, ObjectName, ObjectType, OrderByKind, Query, Select, SelectItem, SetExpr, Statement, TableFactor,
    TableObject, TableWithJoins, Value,
};

/// Parameter types (declared or inferred) and, at execution, their values.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pub types: Vec<Option<ScalarType>>,
    pub values: Option<Vec<Datum>>,
}

pub struct Binder<'a> {
    pub catalog: &'a dyn SqlCatalog,
    pub params: &'a mut Params,
    /// The statement's time: the value of `now()`, `current_date`... in
    /// this statement (see `sql::functions::finish_plan`).
    pub now: chrono::DateTime<chrono::Utc>,
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

/// Binds one statement.
pub fn bind_statement(catalog: &dyn SqlCatalog, stmt: &Statement, params: &mut Params) -> Result<Plan, Error> {
    let now = chrono::Utc::now();
    let mut b = Binder { catalog, params, now };
    let mut plan = b.bind_statement(stmt)?;
    crate::sql::functions::finish_plan(&mut plan, now)?;
    Ok(plan)
}

struct Block {
    expr: RelationExpr,
    desc: RelationDesc,
    finishing: Finishing,
}

impl Binder<'_> {
    fn bind_statement(&mut self, stmt: &Statement) -> Result<Plan, Error> {
        match stmt {
            Statement::Query(q) => {
                let block = self.bind_query(q)?;
                Ok(Plan::Select { query: block.expr, desc: block.desc, finishing: block.finishing })
            }
            Statement::CreateTable(ct) => {
                let name = object_name(&ct.name);
                if ct.query.is_some() {
                    return Err(Error::FeatureNotSupported("CREATE TABLE AS is not supported yet".into()));
                }
                let mut names = Vec::new();
                let mut types = Vec::new();
                for col in &ct.columns {
                    let cname = ident(&col.name);
                    if names.contains(&cname) {
                        return Err(Error::DuplicateColumn(format!("column \"{cname}\" specified more than once")));
                    }
                    let scalar = scalar_type_from_sql(&col.data_type)?;
                    let mut nullable = true;
                    for opt in &col.options {
                        match &opt.option {
                            ColumnOption::NotNull => nullable = false,
                            ColumnOption::Null => nullable = true,
                            ColumnOption::PrimaryKey(_) => nullable = false,
                            other => {
                                return Err(Error::FeatureNotSupported(format!(
                                    "column option {other} is not supported yet"
                                )));
                            }
                        }
                    }
                    names.push(cname);
                    types.push(ColumnType::new(scalar, nullable));
                }
                if names.is_empty() {
                    return Err(Error::FeatureNotSupported("tables without columns are not supported".into()));
                }
                Ok(Plan::CreateTable { name, desc: RelationDesc::new(names, types), if_not_exists: ct.if_not_exists })
            }
            Statement::CreateView(cv) => {
                let name = object_name(&cv.name);
                let block = self.bind_query(&cv.query)?;
                let mut desc = block.desc;
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
                let f = block.finishing;
                let mut query = block.expr;
                if f.limit.is_some() || f.offset > 0 {
                    query = RelationExpr::TopK {
                        input: Box::new(query),
                        group_key: vec![],
                        order: f.order.clone(),
                        limit: f.limit,
                        offset: f.offset,
                    };
                }
                if f.arity < query.arity() {
                    query = RelationExpr::Project { input: Box::new(query), outputs: (0..f.arity).collect() };
                }
                Ok(Plan::CreateView {
                    name,
                    query,
                    desc,
                    materialized: cv.materialized,
                    if_not_exists: cv.if_not_exists,
                    or_replace: cv.or_replace,
                })
            }
            Statement::CreateIndex(ci) => {
                let on_name = object_name(&ci.table_name);
                let entry = self.resolve(&on_name)?;
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
                if ci.unique {
                    return Err(Error::FeatureNotSupported("UNIQUE indexes are not supported".into()));
                }
                Ok(Plan::CreateIndex {
                    name: ci.name.as_ref().map(object_name),
                    on: entry.id,
                    on_name,
                    key,
                    if_not_exists: ci.if_not_exists,
                })
            }
            Statement::Insert(ins) => self.bind_insert(ins),
            Statement::Update(up) => self.bind_update(up),
            Statement::Delete(del) => self.bind_delete(del),
            Statement::Drop { object_type, if_exists, names, cascade, .. } => {
                let kind = match object_type {
                    ObjectType::Table => ItemKind::Table,
                    ObjectType::View => ItemKind::View,
                    ObjectType::MaterializedView => ItemKind::MaterializedView,
                    ObjectType::Index => ItemKind::Index,
                    other => return Err(Error::FeatureNotSupported(format!("DROP {other} is not supported"))),
                };
                Ok(Plan::Drop { kind, names: names.iter().map(object_name).collect(), if_exists: *if_exists, cascade: *cascade })
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
                    other => ShowKind::Variable(other.to_string()),
                }))
            }
            Statement::Explain { statement, .. } => match statement.as_ref() {
                Statement::Query(q) => Ok(Plan::Explain { query: self.bind_query(q)?.expr }),
                Statement::CreateView(cv) => Ok(Plan::Explain { query: self.bind_query(&cv.query)?.expr }),
                other => Err(Error::FeatureNotSupported(format!("EXPLAIN of {other} is not supported"))),
            },
            Statement::Set(set) => match set {
                ast::Set::SingleAssignment { variable, values, .. } => {
                    let value = values
                        .iter()
                        .map(|v| match v {
                            Expr::Value(v) => match &v.value {
                                Value::SingleQuotedString(s) => s.clone(),
                                other => other.to_string(),
                            },
                            Expr::Identifier(id) => id.value.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    Ok(Plan::SetVariable { name: variable.to_string().to_lowercase(), value })
                }
                ast::Set::SetTimeZone { value, .. } => {
                    Ok(Plan::SetVariable { name: "timezone".into(), value: value.to_string().trim_matches('\'').to_string() })
                }
                ast::Set::SetNames { charset_name, .. } => {
                    Ok(Plan::SetVariable { name: "client_encoding".into(), value: charset_name.to_string() })
                }
                other => Ok(Plan::SetVariable { name: other.to_string(), value: String::new() }),
            },
            Statement::StartTransaction { .. } => Ok(Plan::StartTransaction),
            Statement::Deallocate { name, .. } => Ok(Plan::SessionCleanup {
                tag: if name.value.eq_ignore_ascii_case("all") { "DEALLOCATE ALL".into() } else { "DEALLOCATE".into() },
            }),
            Statement::Discard { .. } => Ok(Plan::SessionCleanup { tag: "DISCARD ALL".into() }),
            Statement::Commit { .. } => Ok(Plan::Commit),
            Statement::Rollback { .. } => Ok(Plan::Rollback),
            other => Err(Error::FeatureNotSupported(format!(
                "statement not supported yet: {}",
                other.to_string().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
            ))),
        }
    }

    fn resolve(&self, name: &str) -> Result<CatalogEntry, Error> {
        self.catalog.resolve(name).ok_or_else(|| Error::UndefinedTable(name.to_string()))
    }

    fn resolve_table(&self, name: &ObjectName) -> Result<CatalogEntry, Error> {
        let n = object_name(name);
        let entry = self.resolve(&n)?;
        if entry.kind != ItemKind::Table {
            return Err(Error::WrongObjectType(format!("\"{n}\" is not a table")));
        }
        Ok(entry)
    }

    // ---- DML ----

    fn bind_insert(&mut self, ins: &ast::Insert) -> Result<Plan, Error> {
        let TableObject::TableName(tname) = &ins.table else {
            return Err(Error::FeatureNotSupported("INSERT into a table function is not supported".into()));
        };
        if ins.returning.is_some() || ins.on.is_some() {
            return Err(Error::FeatureNotSupported("INSERT ... RETURNING / ON CONFLICT is not supported yet".into()));
        }
        let entry = self.resolve_table(tname)?;
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
            return Err(Error::FeatureNotSupported("INSERT ... DEFAULT VALUES is not supported yet".into()));
        };
        // VALUES are coerced to the target column types directly, as
        // Postgres does for unknown-typed literals.
        let (src, src_types) = match source.body.as_ref() {
            SetExpr::Values(values) if source.order_by.is_none() && source.limit_clause.is_none() => {
                let mut rows = Vec::new();
                for row in &values.rows {
                    let row = &row.content;
                    if row.len() > targets.len() {
                        return Err(Error::Syntax("INSERT has more expressions than target columns".into()));
                    }
                    if row.len() < targets.len() {
                        return Err(Error::Syntax("INSERT has more target columns than expressions".into()));
                    }
                    let mut datums = Vec::new();
                    for (e, &col) in row.iter().zip(&targets) {
                        let empty = Scope::default();
                        let mut ctx = ExprCtx { scope: &empty, clause: "VALUES", grouping: None };
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
                        let x = self.coerce(b, target_ty)?;
                        datums.push(x.eval(&[])?);
                    }
                    rows.push((Row::from_datums(datums), 1));
                }
                let types = targets.iter().map(|c| desc.types[*c].clone()).collect::<Vec<_>>();
                (RelationExpr::Constant { rows, types: types.clone() }, types)
            }
            _ => {
                let block = self.bind_query(source)?;
                if block.finishing.limit.is_some() || block.finishing.offset > 0 {
                    return Err(Error::FeatureNotSupported("INSERT ... SELECT with LIMIT/OFFSET is not supported yet".into()));
                }
                if block.desc.arity() != targets.len() {
                    return Err(Error::Syntax(if block.desc.arity() > targets.len() {
                        "INSERT has more expressions than target columns".into()
                    } else {
                        "INSERT has more target columns than expressions".into()
                    }));
                }
                let mut expr = block.expr;
                if block.finishing.arity < expr.arity() {
                    expr = RelationExpr::Project { input: Box::new(expr), outputs: (0..block.finishing.arity).collect() };
                }
                (expr, block.desc.types)
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
                None => scalars.push(ScalarExpr::null(ct.scalar.clone())),
            }
        }
        let outputs = (n..n + scalars.len()).collect();
        let source = RelationExpr::Project { input: Box::new(RelationExpr::Map { input: Box::new(src), scalars }), outputs };
        Ok(Plan::Insert { table: entry.id, table_name: entry.name, desc, source })
    }

    fn bind_update(&mut self, up: &ast::Update) -> Result<Plan, Error> {
        if up.from.is_some() || up.returning.is_some() || !up.table.joins.is_empty() {
            return Err(Error::FeatureNotSupported("UPDATE ... FROM / RETURNING is not supported yet".into()));
        }
        let (entry, alias) = match &up.table.relation {
            TableFactor::Table { name, alias, .. } => (self.resolve_table(name)?, alias.as_ref().map(|a| ident(&a.name))),
            _ => return Err(Error::FeatureNotSupported("UPDATE of this target is not supported".into())),
        };
        let scope = scope_of(&entry, alias.as_deref().unwrap_or(&entry.name));
        let predicates = match &up.selection {
            Some(e) => {
                let mut ctx = ExprCtx { scope: &scope, clause: "WHERE", grouping: None };
                vec![self.bind_condition(e, &mut ctx)?]
            }
            None => vec![],
        };
        let mut assignments = Vec::new();
        for a in &up.assignments {
            let AssignmentTarget::ColumnName(cn) = &a.target else {
                return Err(Error::FeatureNotSupported("tuple assignment in UPDATE is not supported yet".into()));
            };
            let n = object_name(cn);
            let col = scope
                .resolve(None, &n)
                .map_err(|_| Error::UndefinedColumn(format!("column \"{n}\" of relation \"{}\" does not exist", entry.name)))?;
            let mut ctx = ExprCtx { scope: &scope, clause: "UPDATE", grouping: None };
            let b = self.bind_expr(&a.value, &mut ctx)?;
            let target = entry.desc.types[col].scalar.clone();
            if let Some(t) = &b.ty {
                if !assignable(t, &target) {
                    return Err(Error::DatatypeMismatch(format!(
                        "column \"{n}\" is of type {} but expression is of type {}",
                        target.name(),
                        t.name()
                    )));
                }
            }
            let x = self.coerce(b, &target)?;
            assignments.push((col, x));
        }
        Ok(Plan::Update { table: entry.id, table_name: entry.name.clone(), desc: entry.desc, predicates, assignments })
    }

    fn bind_delete(&mut self, del: &ast::Delete) -> Result<Plan, Error> {
        let tables = match &del.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        if tables.len() != 1 || del.using.is_some() || del.returning.is_some() || !tables[0].joins.is_empty() {
            return Err(Error::FeatureNotSupported("DELETE with USING / RETURNING / several tables is not supported yet".into()));
        }
        let (entry, alias) = match &tables[0].relation {
            TableFactor::Table { name, alias, .. } => (self.resolve_table(name)?, alias.as_ref().map(|a| ident(&a.name))),
            _ => return Err(Error::FeatureNotSupported("DELETE of this target is not supported".into())),
        };
        let scope = scope_of(&entry, alias.as_deref().unwrap_or(&entry.name));
        let predicates = match &del.selection {
            Some(e) => {
                let mut ctx = ExprCtx { scope: &scope, clause: "WHERE", grouping: None };
                vec![self.bind_condition(e, &mut ctx)?]
            }
            None => vec![],
        };
        Ok(Plan::Delete { table: entry.id, table_name: entry.name, predicates })
    }

    // ---- queries ----

    fn bind_query(&mut self, q: &Query) -> Result<Block, Error> {
        if q.with.is_some() {
            return Err(Error::FeatureNotSupported("WITH is not supported yet".into()));
        }
        let (expr, scope, desc, select) = match q.body.as_ref() {
            SetExpr::Select(s) => {
                let (expr, scope, desc) = self.bind_select(s, q)?;
                return Ok(Block { expr, desc: desc.clone(), finishing: scope_finishing(scope, desc, q, self)? });
            }
            SetExpr::Values(v) => {
                let (expr, desc) = self.bind_values(v)?;
                let scope = Scope {
                    items: desc.iter().map(|(n, t)| ScopeItem { table: None, name: n.clone(), typ: t.clone() }).collect(),
                };
                (expr, scope, desc, ())
            }
            SetExpr::Query(inner) => {
                let b = self.bind_query(inner)?;
                let scope = Scope {
                    items: b.desc.iter().map(|(n, t)| ScopeItem { table: None, name: n.clone(), typ: t.clone() }).collect(),
                };
                let mut expr = b.expr;
                if b.finishing.limit.is_some() || b.finishing.offset > 0 {
                    expr = RelationExpr::TopK { input: Box::new(expr), group_key: vec![], order: b.finishing.order, limit: b.finishing.limit, offset: b.finishing.offset };
                }
                (expr, scope, b.desc, ())
            }
            other => return Err(Error::FeatureNotSupported(format!("query form not supported yet: {other}"))),
        };
        let _ = select;
        let mut finishing = self.bind_order_limit(q, &scope, &desc, None)?;
        finishing.arity = desc.arity();
        Ok(Block { expr, desc, finishing })
    }

    fn bind_values(&mut self, v: &ast::Values) -> Result<(RelationExpr, RelationDesc), Error> {
        let empty = Scope::default();
        let mut bound_rows = Vec::new();
        for row in &v.rows {
            let mut bs = Vec::new();
            for e in &row.content {
                let mut ctx = ExprCtx { scope: &empty, clause: "VALUES", grouping: None };
                bs.push(self.bind_expr(e, &mut ctx)?);
            }
            bound_rows.push(bs);
        }
        let arity = bound_rows.first().map(|r| r.len()).unwrap_or(0);
        if bound_rows.iter().any(|r| r.len() != arity) {
            return Err(Error::Syntax("VALUES lists must all be the same length".into()));
        }
        let mut types = Vec::new();
        for c in 0..arity {
            let col: Vec<_> = bound_rows.iter().map(|r| r[c].clone()).collect();
            let mut ty: Option<ScalarType> = None;
            for b in &col {
                if let Some(t) = &b.ty {
                    ty = Some(match ty {
                        None => t.clone(),
                        Some(cur) => crate::sql::types::common_type(&cur, t).ok_or_else(|| {
                            Error::DatatypeMismatch(format!("VALUES types {} and {} cannot be matched", cur.name(), t.name()))
                        })?,
                    });
                }
            }
            let ty = ty.unwrap_or(ScalarType::Text);
            types.push(ColumnType::new(ty, col.iter().any(|b| b.nullable)));
        }
        let mut rows = Vec::new();
        for r in bound_rows {
            let mut datums = Vec::new();
            for (c, b) in r.into_iter().enumerate() {
                let x = self.coerce(b, &types[c].scalar)?;
                datums.push(x.eval(&[])?);
            }
            rows.push((Row::from_datums(datums), 1));
        }
        let names = (1..=arity).map(|i| format!("column{i}")).collect();
        Ok((RelationExpr::Constant { rows, types: types.clone() }, RelationDesc::new(names, types)))
    }

    fn bind_table_factor(&mut self, tf: &TableFactor) -> Result<(RelationExpr, Scope), Error> {
        match tf {
            TableFactor::Table { name, alias, args, .. } => {
                if args.is_some() {
                    return Err(Error::FeatureNotSupported("table functions are not supported yet".into()));
                }
                let n = object_name(name);
                let entry = self.resolve(&n)?;
                let label = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| entry.name.clone());
                let mut scope = scope_of(&entry, &label);
                if let Some(a) = alias {
                    for (i, c) in a.columns.iter().enumerate() {
                        if let Some(item) = scope.items.get_mut(i) {
                            item.name = ident(&c.name);
                        }
                    }
                }
                let expr = match entry.kind {
                    ItemKind::Table | ItemKind::MaterializedView => {
                        RelationExpr::Get { id: entry.id, name: entry.name.clone(), types: entry.desc.types.clone() }
                    }
                    ItemKind::View => entry
                        .view_plan
                        .clone()
                        .ok_or_else(|| Error::Internal(format!("view {} has no plan", entry.name)))?,
                    ItemKind::Index => {
                        return Err(Error::WrongObjectType(format!("\"{n}\" is an index")));
                    }
                };
                Ok((expr, scope))
            }
            TableFactor::Derived { lateral, subquery, alias, .. } => {
                if *lateral {
                    return Err(Error::FeatureNotSupported("LATERAL is not supported yet".into()));
                }
                let block = self.bind_query(subquery)?;
                let label = alias.as_ref().map(|a| ident(&a.name));
                let mut expr = block.expr;
                let f = block.finishing;
                if f.limit.is_some() || f.offset > 0 {
                    expr = RelationExpr::TopK { input: Box::new(expr), group_key: vec![], order: f.order, limit: f.limit, offset: f.offset };
                }
                if f.arity < expr.arity() {
                    expr = RelationExpr::Project { input: Box::new(expr), outputs: (0..f.arity).collect() };
                }
                let mut scope = Scope {
                    items: block
                        .desc
                        .iter()
                        .map(|(n, t)| ScopeItem { table: label.clone(), name: n.clone(), typ: t.clone() })
                        .collect(),
                };
                if let Some(a) = alias {
                    for (i, c) in a.columns.iter().enumerate() {
                        if let Some(item) = scope.items.get_mut(i) {
                            item.name = ident(&c.name);
                        }
                    }
                }
                Ok((expr, scope))
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                if alias.is_some() {
                    return Err(Error::FeatureNotSupported("aliased joins are not supported yet".into()));
                }
                let (inputs, scope, preds) = self.bind_from_item(table_with_joins)?;
                let join = RelationExpr::Join { inputs, equivalences: vec![], plan: None };
                let expr = if preds.is_empty() { join } else { RelationExpr::Filter { input: Box::new(join), predicates: preds } };
                Ok((expr, scope))
            }
            other => Err(Error::FeatureNotSupported(format!("FROM item not supported yet: {other}"))),
        }
    }

    /// One FROM item with its joins: inputs, combined scope, ON predicates.
    fn bind_from_item(&mut self, twj: &TableWithJoins) -> Result<(Vec<RelationExpr>, Scope, Vec<ScalarExpr>), Error> {
        let (first, mut scope) = self.bind_table_factor(&twj.relation)?;
        let mut inputs = vec![first];
        let mut preds = Vec::new();
        for j in &twj.joins {
            let (expr, s) = self.bind_table_factor(&j.relation)?;
            check_new_label(&scope, &s)?;
            inputs.push(expr);
            scope.items.extend(s.items);
            let constraint = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => Some(c),
                JoinOperator::CrossJoin(_) => None,
                JoinOperator::Left(_)
                | JoinOperator::LeftOuter(_)
                | JoinOperator::Right(_)
                | JoinOperator::RightOuter(_)
                | JoinOperator::FullOuter(_) => {
                    return Err(Error::FeatureNotSupported("outer joins are not supported yet".into()));
                }
                other => return Err(Error::FeatureNotSupported(format!("join type not supported yet: {other:?}"))),
            };
            match constraint {
                Some(JoinConstraint::On(e)) => {
                    let mut ctx = ExprCtx { scope: &scope, clause: "JOIN/ON", grouping: None };
                    preds.push(self.bind_condition(e, &mut ctx)?);
                }
                Some(JoinConstraint::None) | None => {}
                Some(_) => return Err(Error::FeatureNotSupported("JOIN USING / NATURAL is not supported yet".into())),
            }
        }
        Ok((inputs, scope, preds))
    }

    fn bind_select(&mut self, s: &Select, q: &Query) -> Result<(RelationExpr, SelectOut, RelationDesc), Error> {
        // FROM
        let mut inputs = Vec::new();
        let mut scope = Scope::default();
        let mut preds = Vec::new();
        for twj in &s.from {
            let (ins, sc, ps) = self.bind_from_item(twj)?;
            check_new_label(&scope, &sc)?;
            inputs.extend(ins);
            scope.items.extend(sc.items);
            preds.extend(ps);
        }
        let mut expr = match inputs.len() {
            0 => RelationExpr::Constant { rows: vec![(Row::empty(), 1)], types: vec![] },
            1 => inputs.pop().expect("one input"),
            _ => RelationExpr::Join { inputs, equivalences: vec![], plan: None },
        };
        // WHERE
        if let Some(w) = &s.selection {
            if contains_aggregate(w) {
                return Err(Error::Grouping("aggregate functions are not allowed in WHERE".into()));
            }
            let mut ctx = ExprCtx { scope: &scope, clause: "WHERE", grouping: None };
            preds.push(self.bind_condition(w, &mut ctx)?);
        }
        if !preds.is_empty() {
            expr = RelationExpr::Filter { input: Box::new(expr), predicates: preds };
        }
        // Expand the select list (wildcards) into (expr, name) pairs.
        let mut items: Vec<(Expr, String)> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => items.push((e.clone(), column_name(e))),
                SelectItem::ExprWithAlias { expr, alias } => items.push((expr.clone(), ident(alias))),
                SelectItem::Wildcard(_) => {
                    if scope.items.is_empty() {
                        return Err(Error::Syntax("SELECT * with no tables specified is not valid".into()));
                    }
                    for it in &scope.items {
                        items.push((column_ref(it), it.name.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let t = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name(n),
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string().to_lowercase(),
                    };
                    let cols: Vec<_> = scope.items.iter().filter(|i| i.table.as_deref() == Some(t.as_str())).collect();
                    if cols.is_empty() {
                        return Err(Error::MissingFromEntry(t));
                    }
                    for it in cols {
                        items.push((column_ref(it), it.name.clone()));
                    }
                }
                other => return Err(Error::FeatureNotSupported(format!("select item not supported: {other}"))),
            }
        }
        let group_exprs: Vec<Expr> = match &s.group_by {
            GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs.clone(),
            GroupByExpr::Expressions(..) => return Err(Error::FeatureNotSupported("GROUP BY modifiers are not supported yet".into())),
            GroupByExpr::All(_) => return Err(Error::FeatureNotSupported("GROUP BY ALL is not supported".into())),
        };
        let order_exprs: Vec<ast::OrderByExpr> = match q.order_by.as_ref().map(|o| &o.kind) {
            Some(OrderByKind::Expressions(v)) => v.clone(),
            Some(OrderByKind::All(_)) => return Err(Error::FeatureNotSupported("ORDER BY ALL is not supported".into())),
            None => vec![],
        };
        let grouped = !group_exprs.is_empty()
            || s.having.is_some()
            || items.iter().any(|(e, _)| contains_aggregate(e))
            || order_exprs.iter().any(|o| contains_aggregate(&o.expr));
        let input_scope = scope.clone();
        let mut grouping = Grouping::default();
        if grouped {
            // Group key: expressions, output ordinals or output aliases.
            let mut key_scalars = Vec::new();
            for g in &group_exprs {
                let g = match g {
                    Expr::Value(v) => match &v.value {
                        Value::Number(n, _) => {
                            let i: usize = n.parse().unwrap_or(0);
                            if i == 0 || i > items.len() {
                                return Err(Error::InvalidColumnReference(format!("GROUP BY position {n} is not in select list")));
                            }
                            items[i - 1].0.clone()
                        }
                        _ => g.clone(),
                    },
                    Expr::Identifier(id) if input_scope.resolve(None, &ident(id)).is_err() => {
                        match items.iter().find(|(_, n)| *n == ident(id)) {
                            Some((e, _)) => e.clone(),
                            None => g.clone(),
                        }
                    }
                    _ => g.clone(),
                };
                if contains_aggregate(&g) {
                    return Err(Error::Grouping("aggregate functions are not allowed in GROUP BY".into()));
                }
                let mut ctx = ExprCtx { scope: &input_scope, clause: "GROUP BY", grouping: None };
                let (x, t) = self.bind_scalar(&g, &mut ctx)?;
                if !grouping.keys.contains(&x) {
                    grouping.keys.push(x.clone());
                    grouping.key_types.push(t);
                }
                key_scalars.push(x);
            }
        }
        // Bind select items (in grouped mode against keys and aggregates).
        let mut out_exprs = Vec::new();
        let mut out_types = Vec::new();
        let mut names = Vec::new();
        for (e, n) in &items {
            let mut ctx = ExprCtx {
                scope: &input_scope,
                clause: "SELECT",
                grouping: if grouped { Some(&mut grouping) } else { None },
            };
            let (x, t) = self.bind_scalar(e, &mut ctx)?;
            out_exprs.push(x);
            out_types.push(t);
            names.push(n.clone());
        }
        let having = match &s.having {
            Some(h) => {
                let mut ctx = ExprCtx { scope: &input_scope, clause: "HAVING", grouping: Some(&mut grouping) };
                Some(self.bind_condition(h, &mut ctx)?)
            }
            None => None,
        };
        // ORDER BY: output columns by ordinal or name, else extra columns.
        let mut order = Vec::new();
        let mut extra = Vec::new();
        let distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
        if matches!(s.distinct, Some(ast::Distinct::On(_))) {
            return Err(Error::FeatureNotSupported("DISTINCT ON is not supported yet".into()));
        }
        for o in &order_exprs {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!desc);
            let col = match &o.expr {
                Expr::Value(v) if matches!(v.value, Value::Number(..)) => {
                    let Value::Number(n, _) = &v.value else { unreachable!() };
                    let i: usize = n.parse().unwrap_or(0);
                    if i == 0 || i > names.len() {
                        return Err(Error::InvalidColumnReference(format!("ORDER BY position {n} is not in select list")));
                    }
                    i - 1
                }
                Expr::Identifier(id) if names.iter().filter(|n| **n == ident(id)).count() == 1 => {
                    names.iter().position(|n| *n == ident(id)).expect("counted")
                }
                e => {
                    let mut ctx = ExprCtx {
                        scope: &input_scope,
                        clause: "ORDER BY",
                        grouping: if grouped { Some(&mut grouping) } else { None },
                    };
                    let (x, t) = self.bind_scalar(e, &mut ctx)?;
                    match out_exprs.iter().position(|o| *o == x) {
                        Some(p) => p,
                        None => {
                            if distinct {
                                return Err(Error::InvalidColumnReference(
                                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                                ));
                            }
                            extra.push((x, t));
                            out_exprs.len() + extra.len() - 1
                        }
                    }
                }
            };
            order.push(ColumnOrder { column: col, desc, nulls_last });
        }
        if grouped {
            let input_types: Vec<ColumnType> = input_scope.items.iter().map(|i| i.typ.clone()).collect();
            let _ = input_types;
            let nkeys = grouping.keys.len();
            let base = input_scope.len();
            let map = RelationExpr::Map { input: Box::new(expr), scalars: grouping.keys.clone() };
            expr = RelationExpr::Reduce {
                input: Box::new(map),
                group_key: (base..base + nkeys).collect(),
                aggregates: grouping.aggregates.clone(),
            };
            if let Some(h) = having {
                expr = RelationExpr::Filter { input: Box::new(expr), predicates: vec![h] };
            }
        }
        let width = expr.arity();
        let mut scalars: Vec<ScalarExpr> = out_exprs.clone();
        scalars.extend(extra.iter().map(|(x, _)| x.clone()));
        let outputs: Vec<usize> = (width..width + scalars.len()).collect();
        expr = RelationExpr::Project { input: Box::new(RelationExpr::Map { input: Box::new(expr), scalars }), outputs };
        if distinct {
            expr = RelationExpr::Distinct { input: Box::new(expr) };
        }
        let desc = RelationDesc::new(names, out_types);
        let out = SelectOut { order, arity: desc.arity() };
        Ok((expr, out, desc))
    }

    fn bind_order_limit(&mut self, q: &Query, scope: &Scope, desc: &RelationDesc, _grouping: Option<()>) -> Result<Finishing, Error> {
        let mut order = Vec::new();
        if let Some(ob) = &q.order_by {
            if let OrderByKind::Expressions(v) = &ob.kind {
                for o in v {
                    let d = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
                    let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!d);
                    let col = match &o.expr {
                        Expr::Value(v) => match &v.value {
                            Value::Number(n, _) => {
                                let i: usize = n.parse().unwrap_or(0);
                                if i == 0 || i > desc.arity() {
                                    return Err(Error::InvalidColumnReference(format!("ORDER BY position {n} is not in select list")));
                                }
                                i - 1
                            }
                            _ => return Err(Error::FeatureNotSupported("ORDER BY a constant".into())),
                        },
                        Expr::Identifier(id) => scope.resolve(None, &ident(id))?,
                        other => return Err(Error::FeatureNotSupported(format!("ORDER BY {other} here is not supported yet"))),
                    };
                    order.push(ColumnOrder { column: col, desc: d, nulls_last });
                }
            }
        }
        let (limit, offset) = self.bind_limit(q)?;
        Ok(Finishing { order, limit, offset, arity: desc.arity() })
    }

    fn bind_limit(&mut self, q: &Query) -> Result<(Option<usize>, usize), Error> {
        let eval_count = |b: &mut Self, e: &Expr, what: &'static str| -> Result<Option<usize>, Error> {
            let empty = Scope::default();
            let mut ctx = ExprCtx { scope: &empty, clause: what, grouping: None };
            let bound = b.bind_expr(e, &mut ctx)?;
            if let Some(t) = &bound.ty {
                if !t.is_integer() {
                    return Err(Error::DatatypeMismatch(format!("argument of {what} must be type bigint, not type {}", t.name())));
                }
            }
            let x = b.coerce(bound, &ScalarType::Int64)?;
            match x.eval(&[])? {
                Datum::Null => Ok(None),
                Datum::Int64(v) if v >= 0 => Ok(Some(v as usize)),
                Datum::Int64(_) => Err(if what == "LIMIT" {
                    Error::InvalidRowCount("LIMIT must not be negative".into())
                } else {
                    Error::InvalidRowCount("OFFSET must not be negative".into())
                }),
                _ => Ok(None),
            }
        };
        match &q.limit_clause {
            None => Ok((None, 0)),
            Some(LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return Err(Error::FeatureNotSupported("LIMIT BY is not supported".into()));
                }
                let l = match limit {
                    Some(e) => eval_count(self, e, "LIMIT")?,
                    None => None,
                };
                let o = match offset {
                    Some(o) => eval_count(self, &o.value, "OFFSET")?.unwrap_or(0),
                    None => 0,
                };
                Ok((l, o))
            }
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
                let l = eval_count(self, limit, "LIMIT")?;
                let o = eval_count(self, offset, "OFFSET")?.unwrap_or(0);
                Ok((l, o))
            }
        }
    }
}

/// ORDER BY and LIMIT of a SELECT block, resolved by `bind_select`.
struct SelectOut {
    order: Vec<ColumnOrder>,
    arity: usize,
}

fn scope_finishing(out: SelectOut, _desc: RelationDesc, q: &Query, b: &mut Binder) -> Result<Finishing, Error> {
    let (limit, offset) = b.bind_limit(q)?;
    Ok(Finishing { order: out.order, limit, offset, arity: out.arity })
}

fn column_ref(it: &ScopeItem) -> Expr {
    match &it.table {
        Some(t) => Expr::CompoundIdentifier(vec![Ident::with_quote('"', t.clone()), Ident::with_quote('"', it.name.clone())]),
        None => Expr::Identifier(Ident::with_quote('"', it.name.clone())),
    }
}

/// Postgres's default output column name for an expression.
fn column_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(id) => ident(id),
        Expr::CompoundIdentifier(ids) => ids.last().map(ident).unwrap_or_else(|| "?column?".into()),
        Expr::Function(f) => f.name.0.last().map(|p| p.to_string().to_lowercase().trim_matches('"').to_string()).unwrap_or_default(),
        Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => column_name(expr),
            _ => scalar_type_from_sql(data_type).map(|t| t.typname().to_string()).unwrap_or_else(|_| "?column?".into()),
        },
        Expr::TypedString(ts) => {
            scalar_type_from_sql(&ts.data_type).map(|t| t.typname().to_string()).unwrap_or_else(|_| "?column?".into())
        }
        Expr::Interval(_) => "interval".into(),
        Expr::Substring { .. } => "substring".into(),
        Expr::Position { .. } => "position".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Ceil { .. } => "ceil".into(),
        Expr::Floor { .. } => "floor".into(),
        Expr::AtTimeZone { .. } => "timezone".into(),
        Expr::Trim { trim_where, .. } => match trim_where {
            Some(ast::TrimWhereField::Leading) => "ltrim".into(),
            Some(ast::TrimWhereField::Trailing) => "rtrim".into(),
            _ => "btrim".into(),
        },
        Expr::Nested(inner) => column_name(inner),
        Expr::Case { .. } => "case".into(),
        _ => "?column?".into(),
    }
}

fn scope_of(entry: &CatalogEntry, label: &str) -> Scope {
    Scope {
        items: entry
            .desc
            .iter()
            .map(|(n, t)| ScopeItem { table: Some(label.to_string()), name: n.clone(), typ: t.clone() })
            .collect(),
    }
}

fn check_unique_names(desc: &RelationDesc) -> Result<(), Error> {
    for (i, n) in desc.names.iter().enumerate() {
        if desc.names[..i].contains(n) {
            return Err(Error::DuplicateColumn(format!("column \"{n}\" specified more than once")));
        }
    }
    Ok(())
}

/// Two FROM items may not have the same name (`FROM t, t`).
fn check_new_label(existing: &Scope, new: &Scope) -> Result<(), Error> {
    for item in &new.items {
        if let Some(t) = item.table.as_deref() {
            if existing.items.iter().any(|i| i.table.as_deref() == Some(t)) {
                return Err(Error::DuplicateAlias(format!("table name \"{t}\" specified more than once")));
            }
        }
    }
    Ok(())
}
