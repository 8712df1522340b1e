//! Generic plans of prepared statements: a `SELECT`, or a plain `INSERT`,
//! `UPDATE` or `DELETE` (no `RETURNING`, no `ON CONFLICT`), run again and again
//! with new parameter values (`Execute` of a prepared statement) is bound
//! once more with its parameters as placeholders
//! (`EvalError::UnboundParameter`, `Params::generic`), and then each run
//! puts its values in the placeholders instead of binding the statement
//! again.
//!
//! It is made on a statement's second run (one that runs once is bound
//! once). A generic plan is kept only if, with the values of the run that made
//! it, it is exactly the plan that binding with those values gave: an
//! expression that needs a parameter's value while it is bound (`LIMIT
//! $1`, `$1::regclass`, `set_config($1, ...)`) makes the plans differ, and
//! the statement is then bound each time. It is used only for the same
//! catalog (snapshot), the same session settings and parameter types, and
//! never for a statement that reads the session or the system catalog
//! (those are computed while binding).
//!
//! A generic plan also keeps its query (a read, or the rows a write
//! inserts or changes) optimized with the placeholders in place
//! (`planner::optimize` folds no placeholder: it is not a literal), kept
//! only if, with the values of the run that made it,
//! it is exactly what optimizing that run's plan gave; a run with its
//! values in place then reads or writes without optimizing again (what a
//! prepared point read or keyed write spends most of its planning on).
//!
//! Owns: the session's generic plans and putting values in them. Must not:
//! bind (`sequence` does) or run plans.

use super::catalog::Catalog;
use crate::repr::{Datum, Error, EvalError, GlobalId, ScalarType};
use crate::expr::{RelationExpr, ScalarExpr};
use crate::sql::{Plan, Stmt};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

/// At most this many statements' generic plans are kept per session.
const MAX_PLANS: usize = 64;

/// The generic plans of a session's statements (and the statements found
/// to have none).
#[derive(Debug, Default)]
pub struct GenericPlans(Vec<Entry>);

#[derive(Debug)]
struct Entry {
    /// (Held: while it is, no other statement has its address.)
    stmt: Arc<Stmt>,
    /// The types of the parameter values it was made for.
    types: Vec<Option<ScalarType>>,
    /// The catalog it was bound against (`Weak`: its address is not
    /// reused while the entry holds it).
    catalog: Weak<Catalog>,
    /// The session's settings then (shared with the session until it
    /// changes one).
    vars: Arc<BTreeMap<String, String>>,
    known: Known,
}

/// What is known of a statement's generic plan.
#[derive(Debug)]
enum Known {
    /// It ran once: a statement is given a generic plan when it runs a
    /// second time, so one that runs once is bound once.
    RanOnce,
    /// The plan with placeholders, and what it depends on.
    Generic(Generic),
    /// It has none: bound each time.
    None,
}

/// A statement's generic plan (`Known::Generic`).
#[derive(Debug)]
struct Generic {
    plan: Plan,
    deps: Vec<GlobalId>,
    /// Its query (`query_of`: a read, or a write's rows), optimized with
    /// the placeholders in place, if that is what optimizing with values
    /// gives (`optimized_template`), and the query as bound.
    optimized: Option<(RelationExpr, Arc<RelationExpr>)>,
}

/// A generic plan with a run's values in place (`GenericPlans::instantiate`).
#[derive(Debug)]
pub struct Instance {
    /// The plan; without its query (an empty constant in its place)
    /// where `bound` holds it.
    pub plan: Plan,
    pub deps: Vec<GlobalId>,
    /// Its query (a read, or a write's rows), optimized, if the generic
    /// plan keeps it.
    pub optimized: Option<RelationExpr>,
    /// With `optimized`: the query as bound, its values put in only if
    /// it is needed (a run reads and writes through `optimized`).
    pub bound: Option<Deferred>,
}

/// A generic plan's query as bound, with a run's values to put in it
/// when it is needed (`Deferred::query`).
#[derive(Debug)]
pub struct Deferred {
    template: Arc<RelationExpr>,
    params: Vec<Datum>,
    now: chrono::DateTime<chrono::Utc>,
}

impl Deferred {
    /// The query with the run's values and statement time in place.
    pub fn query(self) -> Result<RelationExpr, Error> {
        let mut query = (*self.template).clone();
        fill_query(&mut query, &self.params)?;
        finish_query(&mut query, self.now);
        Ok(query)
    }
}

impl Entry {
    /// (Cheapest first: this runs for kept entries on every run of a
    /// prepared statement. The statement before the settings: it tells
    /// entries apart, where the settings are the same map in all of
    /// them, compared by address unless a SET made a new one.)
    fn matches(&self, same_stmt: impl Fn(&Arc<Stmt>) -> bool, types: &[Option<ScalarType>], catalog: &Arc<Catalog>, vars: &Arc<BTreeMap<String, String>>) -> bool {
        self.catalog.as_ptr() == Arc::as_ptr(catalog)
            && self.types == types
            && same_stmt(&self.stmt)
            && (Arc::ptr_eq(&self.vars, vars) || *self.vars == **vars)
    }
}

impl GenericPlans {
    /// The entry of `stmt`: the one made for this very statement (a
    /// prepared statement run again: compared by address), else one made
    /// for an equal statement (the same text sent again).
    fn entry(&self, stmt: &Arc<Stmt>, types: &[Option<ScalarType>], catalog: &Arc<Catalog>, vars: &Arc<BTreeMap<String, String>>) -> Option<usize> {
        let position = |same: &dyn Fn(&Arc<Stmt>) -> bool| self.0.iter().position(|e| e.matches(same, types, catalog, vars));
        position(&|s| Arc::ptr_eq(s, stmt)).or_else(|| position(&|s| **s == **stmt))
    }

    /// `stmt`'s generic plan with `params` in place, and what it depends
    /// on; `None` if it has none for this catalog and these settings.
    pub fn instantiate(
        &self,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        types: &[Option<ScalarType>],
        catalog: &Arc<Catalog>,
        vars: &Arc<BTreeMap<String, String>>,
    ) -> Option<Result<Instance, Error>> {
        let entry = &self.0[self.entry(stmt, types, catalog, vars)?];
        let Known::Generic(generic) = &entry.known else { return None };
        Some(instance(generic, params, chrono::Utc::now()))
    }

    /// Whether to make `stmt`'s generic plan now (`learn`): on its second
    /// run for this catalog and these settings. Notes its first.
    pub fn second_run(&mut self, stmt: &Arc<Stmt>, types: &[Option<ScalarType>], catalog: &Arc<Catalog>, vars: &Arc<BTreeMap<String, String>>) -> bool {
        match self.entry(stmt, types, catalog, vars) {
            Some(i) => matches!(self.0[i].known, Known::RanOnce),
            None => {
                self.record(Entry {
                    stmt: stmt.clone(),
                    types: types.to_vec(),
                    catalog: Arc::downgrade(catalog),
                    vars: vars.clone(),
                    known: Known::RanOnce,
                });
                false
            }
        }
    }

    /// Records `stmt`'s generic plan `generic` (bound with placeholders;
    /// `None` if that failed), kept only if, with `params` in place, it
    /// is `custom`, the plan bound with those values.
    #[allow(clippy::too_many_arguments)]
    pub fn learn(
        &mut self,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        types: &[Option<ScalarType>],
        catalog: &Arc<Catalog>,
        vars: &Arc<BTreeMap<String, String>>,
        generic: Option<(Plan, Vec<GlobalId>)>,
        custom: &Plan,
    ) {
        let known = match generic.filter(|(plan, _)| same_plan(plan, params, custom)) {
            Some((plan, deps)) => {
                let optimized = query_of(&plan)
                    .and_then(|query| optimized_template(query, params, catalog.as_ref()).map(|o| (o, Arc::new(query.clone()))));
                Known::Generic(Generic { plan, deps, optimized })
            }
            None => Known::None,
        };
        match self.entry(stmt, types, catalog, vars) {
            Some(i) => self.0[i].known = known,
            None => self.record(Entry {
                stmt: stmt.clone(),
                types: types.to_vec(),
                catalog: Arc::downgrade(catalog),
                vars: vars.clone(),
                known,
            }),
        }
    }

    /// Adds an entry, dropping those of catalogs gone and, past
    /// `MAX_PLANS`, the oldest.
    fn record(&mut self, entry: Entry) {
        self.0.retain(|e| e.catalog.strong_count() > 0);
        if self.0.len() >= MAX_PLANS {
            self.0.remove(0);
        }
        self.0.push(entry);
    }
}

/// Whether `generic` with `params` in place is `custom` (at one statement
/// time: both were bound at their own).
fn same_plan(generic: &Plan, params: &[Datum], custom: &Plan) -> bool {
    let at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let mut filled = generic.clone();
    let mut custom = custom.clone();
    if fill(&mut filled, params).is_err()
        || crate::sql::finish_plan(&mut filled, at).is_err()
        || crate::sql::finish_plan(&mut custom, at).is_err()
    {
        return false;
    }
    match (&filled, &custom) {
        (
            Plan::Select { query: a, desc: ad, origins: ao, finishing: af, settings: as_ },
            Plan::Select { query: b, desc: bd, origins: bo, finishing: bf, settings: bs },
        ) => {
            a == b
                && ad == bd
                && ao == bo
                && (&af.order, af.limit, af.offset, af.arity) == (&bf.order, bf.limit, bf.offset, bf.arity)
                && as_.is_empty()
                && bs.is_empty()
        }
        (
            Plan::Insert { table: a, table_name: an, desc: ad, source: asrc, returning: None, on_conflict: None },
            Plan::Insert { table: b, table_name: bn, desc: bd, source: bsrc, returning: None, on_conflict: None },
        ) => (a, an, ad, asrc) == (b, bn, bd, bsrc),
        (
            Plan::Update { table: a, table_name: an, desc: ad, selection: asel, assignments: aa, returning: None },
            Plan::Update { table: b, table_name: bn, desc: bd, selection: bsel, assignments: ba, returning: None },
        ) => (a, an, ad, asel, aa) == (b, bn, bd, bsel, ba),
        (
            Plan::Delete { table: a, table_name: an, selection: asel, returning: None },
            Plan::Delete { table: b, table_name: bn, selection: bsel, returning: None },
        ) => (a, an, asel) == (b, bn, bsel),
        _ => false,
    }
}

/// Whether a statement's plan may have a generic plan: a query, or a write
/// whose whole plan is one relation expression.
pub fn may_be_generic(plan: &Plan) -> bool {
    matches!(
        plan,
        Plan::Select { .. }
            | Plan::Insert { returning: None, on_conflict: None, .. }
            | Plan::Update { returning: None, .. }
            | Plan::Delete { returning: None, .. }
    )
}

/// A generic plan with `params` in place, at statement time `now`.
fn instance(generic: &Generic, params: &[Datum], now: chrono::DateTime<chrono::Utc>) -> Result<Instance, Error> {
    let deps = generic.deps.clone();
    match &generic.optimized {
        Some((template, bound)) => {
            let mut query = template.clone();
            fill_query(&mut query, params)?;
            finish_query(&mut query, now);
            // (The plan's other parts hold no placeholder and read no
            // statement time: those of a plan that may be generic.)
            let plan = without_query(&generic.plan);
            let bound = Deferred { template: bound.clone(), params: params.to_vec(), now };
            Ok(Instance { plan, deps, optimized: Some(query), bound: Some(bound) })
        }
        None => {
            let mut plan = generic.plan.clone();
            fill(&mut plan, params)?;
            crate::sql::finish_plan(&mut plan, now)?;
            Ok(Instance { plan, deps, optimized: None, bound: None })
        }
    }
}

/// A copy of a plan that may be generic without its query (an empty
/// constant in its place).
fn without_query(plan: &Plan) -> Plan {
    let empty = empty_query;
    match plan {
        Plan::Select { desc, origins, finishing, settings, .. } => {
            Plan::Select { query: empty(), desc: desc.clone(), origins: origins.clone(), finishing: finishing.clone(), settings: settings.clone() }
        }
        Plan::Insert { table, table_name, desc, returning: None, on_conflict: None, .. } => Plan::Insert {
            table: *table,
            table_name: table_name.clone(),
            desc: desc.clone(),
            source: empty(),
            returning: None,
            on_conflict: None,
        },
        Plan::Update { table, table_name, desc, assignments, returning: None, .. } => Plan::Update {
            table: *table,
            table_name: table_name.clone(),
            desc: desc.clone(),
            selection: empty(),
            assignments: assignments.clone(),
            returning: None,
        },
        Plan::Delete { table, table_name, returning: None, .. } => {
            Plan::Delete { table: *table, table_name: table_name.clone(), selection: empty(), returning: None }
        }
        other => other.clone(),
    }
}

/// An empty constant, standing for a query taken out of its plan.
pub(super) fn empty_query() -> RelationExpr {
    RelationExpr::Constant { rows: Vec::new(), types: Vec::new() }
}

/// Puts a query taken out of a plan that may be generic back in it.
pub(super) fn put_query(plan: &mut Plan, query: RelationExpr) {
    if let Some(q) = query_of_mut(plan) {
        *q = query;
    }
}

/// A generic query optimized with its placeholders in place, if putting
/// `params` in it gives what optimizing the query with them in place
/// gives (both at one statement time): the optimizer did nothing that
/// depends on the values.
fn optimized_template(generic: &RelationExpr, params: &[Datum], catalog: &Catalog) -> Option<RelationExpr> {
    let at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let template = crate::planner::optimize(generic.clone(), catalog);
    let mut filled = template.clone();
    fill_query(&mut filled, params).ok()?;
    finish_query(&mut filled, at);
    let mut custom = generic.clone();
    fill_query(&mut custom, params).ok()?;
    finish_query(&mut custom, at);
    (filled == crate::planner::optimize(custom, catalog)).then_some(template)
}

/// The query of a plan that may be generic: what a `SELECT` reads, what
/// an `INSERT` inserts, the rows an `UPDATE` or `DELETE` changes.
pub(super) fn query_of(plan: &Plan) -> Option<&RelationExpr> {
    match plan {
        Plan::Select { query, .. } => Some(query),
        Plan::Insert { source, returning: None, on_conflict: None, .. } => Some(source),
        Plan::Update { selection, returning: None, .. } | Plan::Delete { selection, returning: None, .. } => Some(selection),
        _ => None,
    }
}

/// Sets the statement time of a query's calls that read it.
fn finish_query(query: &mut RelationExpr, now: chrono::DateTime<chrono::Utc>) {
    query.visit_scalars_mut(&mut |e| e.set_statement_time(now));
}

/// Puts the parameter values in a generic plan's placeholders (cast as
/// binding would have).
fn fill(plan: &mut Plan, params: &[Datum]) -> Result<(), Error> {
    let query = query_of_mut(plan).ok_or_else(|| Error::Internal("a generic plan that is not a query or a plain write".into()))?;
    fill_query(query, params)
}

/// `query_of`, to change.
fn query_of_mut(plan: &mut Plan) -> Option<&mut RelationExpr> {
    match plan {
        Plan::Select { query, .. } => Some(query),
        Plan::Insert { source, returning: None, on_conflict: None, .. } => Some(source),
        Plan::Update { selection, returning: None, .. } | Plan::Delete { selection, returning: None, .. } => Some(selection),
        _ => None,
    }
}

/// `fill` for a query.
fn fill_query(query: &mut RelationExpr, params: &[Datum]) -> Result<(), Error> {
    let mut failed: Option<EvalError> = None;
    query.visit_scalars_mut(&mut |s| {
        s.visit_mut(&mut |e| {
            if let ScalarExpr::Error(EvalError::UnboundParameter { index, ty, cast }) = e {
                let v = params.get(*index).cloned().unwrap_or(Datum::Null);
                let v = if *cast {
                    crate::expr::func::cast(v, ty, false).unwrap_or_else(|err| {
                        failed.get_or_insert(err);
                        Datum::Null
                    })
                } else {
                    v
                };
                *e = ScalarExpr::Literal(v, ty.clone());
            }
        })
    });
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::func::BinaryFunc;
    use crate::expr::RelationExpr;
    use crate::repr::{ColumnType, RelationDesc};

    fn select(value: ScalarExpr) -> Plan {
        let get = RelationExpr::Get { id: 1, name: "t".into(), types: vec![ColumnType::new(ScalarType::Int32, false)] };
        let query = RelationExpr::Filter { input: Box::new(get), predicates: vec![ScalarExpr::Column(0).call_binary(value, BinaryFunc::Eq)] };
        Plan::Select {
            query,
            desc: RelationDesc::new(vec!["a".into()], vec![ColumnType::new(ScalarType::Int32, false)]),
            origins: vec![],
            finishing: crate::sql::Finishing { order: vec![], limit: None, offset: 0, arity: 1 },
            settings: vec![],
        }
    }

    fn placeholder(cast: bool) -> ScalarExpr {
        ScalarExpr::Error(EvalError::UnboundParameter { index: 0, ty: ScalarType::Int32, cast })
    }

    #[test]
    fn a_plan_that_binding_with_values_gives_is_kept_and_filled() {
        let catalog = Arc::new(Catalog::default());
        let stmt = Arc::new(crate::sql::parse("SELECT a FROM t WHERE a = $1").unwrap().remove(0));
        let vars = Arc::new(BTreeMap::new());
        let types = vec![Some(ScalarType::Int32)];
        let custom = select(ScalarExpr::Literal(Datum::Int32(5), ScalarType::Int32));
        let mut plans = GenericPlans::default();
        // Made on the second run, not the first.
        assert!(!plans.second_run(&stmt, &types, &catalog, &vars));
        assert!(plans.second_run(&stmt, &types, &catalog, &vars));
        plans.learn(&stmt, &[Datum::Int32(5)], &types, &catalog, &vars, Some((select(placeholder(false)), vec![1])), &custom);
        assert!(!plans.second_run(&stmt, &types, &catalog, &vars));
        let Instance { plan, deps, optimized, bound } = plans.instantiate(&stmt, &[Datum::Int32(9)], &types, &catalog, &vars).unwrap().unwrap();
        let Plan::Select { query, .. } = plan else { panic!("not a query") };
        let Plan::Select { query: expected, .. } = select(ScalarExpr::Literal(Datum::Int32(9), ScalarType::Int32)) else { panic!() };
        // Its read comes optimized, as optimizing with the values gives;
        // the query as bound is left out of the plan, the values put in
        // when it is asked for.
        assert_eq!(optimized, Some(crate::planner::optimize(expected.clone(), &*catalog)));
        assert_eq!(query, RelationExpr::Constant { rows: vec![], types: vec![] });
        assert_eq!((bound.unwrap().query().unwrap(), deps), (expected, vec![1]));
        // Another catalog, other settings or other parameter types: none.
        assert!(plans.instantiate(&stmt, &[Datum::Int32(9)], &types, &Arc::new(Catalog::default()), &vars).is_none());
        let other_vars = Arc::new(BTreeMap::from([("search_path".to_string(), "x".to_string())]));
        assert!(plans.instantiate(&stmt, &[Datum::Int32(9)], &types, &catalog, &other_vars).is_none());
        assert!(plans.instantiate(&stmt, &[Datum::Int64(9)], &[Some(ScalarType::Int64)], &catalog, &vars).is_none());
    }

    #[test]
    fn an_optimization_that_depends_on_the_values_is_not_kept() {
        // `$1 = 5` folds to TRUE (and the filter goes) only with 5 in place.
        let catalog = Arc::new(Catalog::default());
        let stmt = Arc::new(crate::sql::parse("SELECT a FROM t WHERE $1 = 5").unwrap().remove(0));
        let vars = Arc::new(BTreeMap::new());
        let types = vec![Some(ScalarType::Int32)];
        let five = |v: ScalarExpr| v.call_binary(ScalarExpr::Literal(Datum::Int32(5), ScalarType::Int32), BinaryFunc::Eq);
        let plan = |v: ScalarExpr| {
            let Plan::Select { query: RelationExpr::Filter { input, .. }, desc, origins, finishing, settings } = select(v.clone()) else {
                panic!()
            };
            let query = RelationExpr::Filter { input, predicates: vec![five(v)] };
            Plan::Select { query, desc, origins, finishing, settings }
        };
        let custom = plan(ScalarExpr::Literal(Datum::Int32(5), ScalarType::Int32));
        let mut plans = GenericPlans::default();
        plans.learn(&stmt, &[Datum::Int32(5)], &types, &catalog, &vars, Some((plan(placeholder(false)), vec![1])), &custom);
        let Instance { plan: filled, optimized, .. } = plans.instantiate(&stmt, &[Datum::Int32(6)], &types, &catalog, &vars).unwrap().unwrap();
        // The plan is kept (binding did nothing with the value); its
        // optimized read is not, so each run optimizes with its own value.
        let (Plan::Select { query: filled, .. }, Plan::Select { query: six, .. }) = (filled, plan(ScalarExpr::Literal(Datum::Int32(6), ScalarType::Int32)))
        else {
            panic!("not a query")
        };
        assert_eq!(filled, six);
        assert_eq!(optimized, None);
    }

    #[test]
    fn a_plan_that_differs_from_binding_with_values_is_not_used() {
        // As when binding computed something from the value itself.
        let catalog = Arc::new(Catalog::default());
        let stmt = Arc::new(crate::sql::parse("SELECT a FROM t WHERE a = $1").unwrap().remove(0));
        let vars = Arc::new(BTreeMap::new());
        let types = vec![Some(ScalarType::Int32)];
        let custom = select(ScalarExpr::Literal(Datum::Int32(6), ScalarType::Int32));
        let mut plans = GenericPlans::default();
        plans.learn(&stmt, &[Datum::Int32(5)], &types, &catalog, &vars, Some((select(placeholder(false)), vec![])), &custom);
        assert!(!plans.second_run(&stmt, &types, &catalog, &vars));
        assert!(plans.instantiate(&stmt, &[Datum::Int32(5)], &types, &catalog, &vars).is_none());
    }

    #[test]
    fn a_prepared_insert_of_values_has_a_generic_plan() {
        use crate::coord::catalog::{BindCatalog, Item};
        use crate::coord::Session;
        use crate::sql::{ItemKind, Params};
        let mut catalog = Catalog::default();
        let mut t = Item::bare(1, "public", "t", ItemKind::Table, vec![]);
        t.desc = RelationDesc::new(
            vec!["k".into(), "at".into()],
            vec![ColumnType::new(ScalarType::Int32, true), ColumnType::new(ScalarType::TimestampTz { precision: None }, true)],
        );
        catalog.insert(t);
        let catalog = Arc::new(catalog);
        let stmt = Arc::new(crate::sql::parse("INSERT INTO t VALUES ($1, now()), ($1 + 1, DEFAULT)").unwrap().remove(0));
        let types = vec![Some(ScalarType::Int32)];
        let vars = Arc::new(BTreeMap::new());
        let bind = |values: Option<Vec<Datum>>| {
            let generic = values.is_none();
            let mut p = Params { types: types.clone(), values, generic };
            crate::sql::bind_statement(&BindCatalog::new(&catalog, Session::default().info()), &stmt, &mut p)
        };
        let custom = bind(Some(vec![Datum::Int32(5)])).unwrap();
        // Binding with placeholders works: VALUES with a parameter are not
        // computed while binding.
        let generic = bind(None).unwrap();
        let mut plans = GenericPlans::default();
        plans.learn(&stmt, &[Datum::Int32(5)], &types, &catalog, &vars, Some((generic, vec![1])), &custom);
        // (To the microsecond, as a timestamp datum keeps it.)
        let before = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
        let Instance { plan, bound, .. } = plans.instantiate(&stmt, &[Datum::Int32(9)], &types, &catalog, &vars).unwrap().unwrap();
        let Plan::Insert { source, .. } = plan else { panic!("not an insert") };
        let source = match bound {
            Some(bound) => bound.query().unwrap(),
            None => source,
        };
        let rows: Vec<Vec<Datum>> = source.eval_constant().unwrap().unwrap().into_iter().map(|(r, _)| r.unpack()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!((&rows[0][0], &rows[1][0], &rows[1][1]), (&Datum::Int32(9), &Datum::Int32(10), &Datum::Null));
        // The run's own statement time, not the one the plan was made at.
        match &rows[0][1] {
            Datum::TimestampTz(at) => assert!(*at >= before, "{at} is before the run"),
            other => panic!("not a time: {other:?}"),
        }
    }
}
