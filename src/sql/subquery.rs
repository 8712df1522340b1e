//! Subqueries in expressions and LATERAL, decorrelated while binding.
//!
//! The method is the "dependent join pushed down" of Neumann & Kemper
//! (*Unnesting Arbitrary Queries*), in the form Materialize uses: a
//! correlated subquery is bound once per distinct combination of the outer
//! columns it uses. Its relation starts with those columns (the *prefix*),
//! read from a placeholder that stands for
//! `Distinct(Project(outer, used columns))`; every operator of the
//! subquery keeps the prefix (GROUP BY groups by it, LIMIT is a top-k per
//! prefix value, a global aggregate yields its default row for each prefix
//! value). The result, keyed by the prefix, is joined back to the outer
//! relation. Nothing here evaluates per row, so views containing
//! subqueries are maintained incrementally like any join and reduction.
//!
//! A relation these constructions read more than once (the subquery's
//! input, keys and result, an outer join's inputs) is bound once with
//! `RelationExpr::Let` ([`Bindings`]): copies would multiply the plan at
//! every level of nesting.
//!
//! This module owns correlation tracking, the pending-subquery list of an
//! expression context, and the relational constructions (mark joins, semi
//! and anti joins, outer joins, NULL-safe join keys). It must not resolve
//! names in the catalog or touch the coordinator.

use crate::expr::func::{BinaryFunc, UnaryFunc, VariadicFunc};
use crate::expr::{AggregateExpr, AggregateFunc, LocalId, RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::scope::{Scope, ScopeItem};
use sqlparser::ast::Query;
use std::collections::BTreeSet;

/// Column numbers at and above this stand for the results of pending
/// subqueries until they are applied (`Host::remap`).
pub const PENDING_COLUMN_BASE: usize = 1 << 40;

/// Ids at and above this are binder-internal placeholders, never catalog
/// items.
const PLACEHOLDER_BASE: GlobalId = u64::MAX - (1 << 32);

/// Correlation tracking for one correlated block being bound: which columns
/// of the enclosing relation it refers to.
#[derive(Debug)]
pub struct CorrFrame {
    pub used: BTreeSet<usize>,
    /// Prefix position → position in the enclosing relation.
    pub prefix_map: Vec<usize>,
}

/// The outer columns a correlated block starts with.
#[derive(Clone, Debug)]
pub struct Outer {
    /// Named prefix columns (`level >= 1`).
    pub items: Vec<ScopeItem>,
    /// Further prefix columns that no name reaches (the left operand of
    /// `x IN (subquery)`).
    pub extra: Vec<ColumnType>,
    pub placeholder: GlobalId,
    /// The one extra column must equal the block's only output for a row to
    /// matter (`x IN (SELECT y ...)` as a semi-join): a simple block may
    /// filter on that equality early.
    pub equate: bool,
}

impl Outer {
    pub fn arity(&self) -> usize {
        self.items.len() + self.extra.len()
    }

    pub fn types(&self) -> Vec<ColumnType> {
        self.items.iter().map(|i| i.typ.clone()).chain(self.extra.iter().cloned()).collect()
    }

    /// The placeholder relation of the prefix values.
    pub fn relation(&self) -> RelationExpr {
        RelationExpr::Get { id: self.placeholder, name: "<outer>".into(), types: self.types() }
    }

    pub fn scope(&self) -> Scope {
        let mut items = self.items.clone();
        items.extend(self.extra.iter().map(|t| ScopeItem::anonymous(t.clone())));
        Scope { items }
    }
}

/// A subquery bound relative to an outer relation.
#[derive(Clone, Debug)]
pub struct Correlated {
    /// Positions, in the outer relation, of the columns it uses.
    pub cols: Vec<usize>,
    pub placeholder: GlobalId,
    /// Prefix (`cols`, then any extra columns) followed by the outputs.
    pub expr: RelationExpr,
    pub desc: RelationDesc,
    /// Where each output column comes from (`origin.rs`).
    pub origins: crate::sql::origin::Origins,
    /// Per output column, the field it is of a record-valued select item
    /// (for a FROM subquery, bound with `Binder::record_outputs`).
    pub fields: Vec<Option<String>>,
    /// Bound without its prefix, extra columns included: a subquery that
    /// reads no outer column, asked for with `equate` (an `IN`), which
    /// the caller joins on its outputs instead of computing it per value.
    pub plain: bool,
    /// Exactly one row per prefix value (`Block::one_row`, and no LIMIT or
    /// OFFSET that could remove it): as a scalar subquery it needs neither
    /// the check for a second row nor a NULL for prefix values without one.
    pub one_row: bool,
}

/// The most operators binding may copy into a plan by repeating a
/// relation. A correlated subquery is bound over a placeholder that each
/// use replaces with the distinct keys of the relation it is correlated
/// with. Those keys, and every other relation read more than once, are
/// read through a `Let` binding ([`Bindings`]), so a copy is a few
/// operators; before, copies of whole plans multiplied with nesting
/// (sqlsmith's nested LATERALs and LEFT JOINs made plans of 400,000
/// operators, 7 s and 2 GB to build on the coordinator, which every
/// session waited for), and this bound is what stopped them.
pub const MAX_COPIED_NODES: usize = 100_000;

impl Correlated {
    /// The subquery's relation reading `keys` for its prefix (consumed: a
    /// subquery is instantiated once, and copying a nested one's plan at
    /// every level above it cost time cubic in the depth). The copies of
    /// `keys` are counted in `copied` (54001 past `MAX_COPIED_NODES`).
    pub fn instantiate(self, keys: &RelationExpr, copied: &mut usize) -> Result<RelationExpr, Error> {
        let uses = count_gets(&self.expr, self.placeholder);
        charge_copies(copied, uses.saturating_mul(node_count(keys)))?;
        let mut e = self.expr;
        substitute(&mut e, self.placeholder, keys);
        Ok(e)
    }

    /// A bound block as a subquery with prefix `cols` read from `placeholder`.
    fn of_block(cols: Vec<usize>, placeholder: GlobalId, block: crate::sql::query::Block) -> Correlated {
        let (desc, origins, fields) = (block.desc.clone(), block.origins.clone(), block.fields.clone());
        let one_row = block.one_row && block.finishing.offset == 0 && block.finishing.limit != Some(0);
        Correlated { cols, placeholder, expr: block.into_relation(), desc, origins, fields, plain: false, one_row }
    }
}

/// Counts `nodes` more copied operators; 54001 past `MAX_COPIED_NODES`.
pub fn charge_copies(copied: &mut usize, nodes: usize) -> Result<(), Error> {
    *copied = copied.saturating_add(nodes);
    if *copied > MAX_COPIED_NODES {
        return Err(Error::Eval(EvalError::PlanTooLarge { limit: MAX_COPIED_NODES }));
    }
    Ok(())
}

/// The operators of a plan (without recursion: plans can be deep).
pub fn node_count(e: &RelationExpr) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        count += 1;
        stack.extend(x.children());
    }
    count
}

/// How many times `e` reads `id`.
fn count_gets(e: &RelationExpr, id: GlobalId) -> usize {
    let mut count = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if matches!(x, RelationExpr::Get { id: g, .. } if *g == id) {
            count += 1;
        }
        stack.extend(x.children());
    }
    count
}

/// What an expression subquery computes.
#[derive(Clone, Debug)]
pub enum SubqueryKind {
    /// `(SELECT x ...)`: the value, NULL when empty, an error when several.
    Scalar,
    /// `EXISTS (...)`.
    Exists,
    /// `lhs op ANY (...)` (IN is `= ANY`); `cmp` compares column 0 (lhs)
    /// with column 1 (the subquery's value).
    Any { lhs: ScalarExpr, cmp: ScalarExpr },
    /// `lhs op ALL (...)`.
    All { lhs: ScalarExpr, cmp: ScalarExpr },
    /// `lhs IN (...)` (`= ANY`), or with `negated` `lhs NOT IN (...)`
    /// (`<> ALL`): found by an equi-join on the value rather than by
    /// comparing every pair as `Any` does. The subquery is bound without
    /// the left operand in its prefix; `l` and `r` cast the left operand
    /// (column 0) and the subquery's value (column 1) to their common type.
    In { lhs: ScalarExpr, l: ScalarExpr, r: ScalarExpr, negated: bool },
}

impl SubqueryKind {
    /// The left operand, for the kinds that have one.
    fn lhs(&self) -> Option<&ScalarExpr> {
        match self {
            SubqueryKind::Any { lhs, .. } | SubqueryKind::All { lhs, .. } | SubqueryKind::In { lhs, .. } => Some(lhs),
            SubqueryKind::Scalar | SubqueryKind::Exists => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Pending {
    pub corr: Correlated,
    pub kind: SubqueryKind,
    pub typ: ColumnType,
}

/// Where expression subqueries go while an expression is bound: the scope
/// of the relation they will be applied to, and the subqueries found so
/// far (each will become one column after the host relation's columns).
#[derive(Debug, Default)]
pub struct Host {
    pub scope: Scope,
    pub pending: Vec<Pending>,
}

impl Host {
    pub fn new(scope: Scope) -> Self {
        Host { scope, pending: Vec::new() }
    }

    /// Rewrites pending-column placeholders to their final positions
    /// (window functions' placeholders, above them, stay for
    /// `remap_windows`).
    pub fn remap(e: &mut ScalarExpr, base: usize) {
        e.visit_mut(&mut |x| {
            if let ScalarExpr::Column(c) = x {
                if (PENDING_COLUMN_BASE..crate::sql::window::WINDOW_COLUMN_BASE).contains(c) {
                    *c = *c - PENDING_COLUMN_BASE + base;
                }
            }
        });
    }
}

/// Replaces every `Get` of `id` with `with`.
pub fn substitute(e: &mut RelationExpr, id: GlobalId, with: &RelationExpr) {
    if let RelationExpr::Get { id: g, .. } = e {
        if *g == id {
            *e = with.clone();
            return;
        }
    }
    for c in e.children_mut() {
        substitute(c, id, with);
    }
}

pub fn distinct(e: RelationExpr) -> RelationExpr {
    RelationExpr::Distinct { input: Box::new(e) }
}

pub fn project(e: RelationExpr, outputs: Vec<usize>) -> RelationExpr {
    RelationExpr::Project { input: Box::new(e), outputs }
}

pub fn map(e: RelationExpr, scalars: Vec<ScalarExpr>) -> RelationExpr {
    if scalars.is_empty() {
        return e;
    }
    RelationExpr::Map { input: Box::new(e), scalars }
}

pub fn filter(e: RelationExpr, predicates: Vec<ScalarExpr>) -> RelationExpr {
    if predicates.is_empty() {
        return e;
    }
    RelationExpr::Filter { input: Box::new(e), predicates }
}

pub fn union(inputs: Vec<RelationExpr>) -> RelationExpr {
    RelationExpr::Union { inputs }
}

pub fn negate(e: RelationExpr) -> RelationExpr {
    RelationExpr::Negate { input: Box::new(e) }
}

pub fn join(inputs: Vec<RelationExpr>, equivalences: Vec<Vec<ScalarExpr>>) -> RelationExpr {
    RelationExpr::Join { inputs, equivalences, plan: None }
}

/// One row with no columns.
pub fn unit() -> RelationExpr {
    RelationExpr::Constant { rows: vec![(Row::empty(), 1)], types: vec![] }
}

/// Rows computed from expressions when read (`VALUES` whose rows are not
/// all constants): one row per list of expressions, each of one arity.
pub fn expression_rows(rows: Vec<Vec<ScalarExpr>>) -> RelationExpr {
    let parts = rows.into_iter().map(|exprs| {
        let n = exprs.len();
        project(map(unit(), exprs), (0..n).collect())
    });
    union(parts.collect())
}

/// NULL literals for columns of these types (all made nullable).
pub fn nulls(types: &[ColumnType]) -> Vec<ScalarExpr> {
    types.iter().map(|t| ScalarExpr::null(t.scalar.clone())).collect()
}

/// Join equivalences that make `a` and `b` match when they are equal or
/// both NULL (joins on packed rows never match NULL keys on their own).
pub fn null_safe_eq(a: ScalarExpr, b: ScalarExpr, typ: &ColumnType) -> Vec<Vec<ScalarExpr>> {
    if !typ.nullable {
        return vec![vec![a, b]];
    }
    let (fill, ty) = match non_null_filler(&typ.scalar) {
        Some(d) => (d, typ.scalar.clone()),
        None => (Datum::Text(String::new()), ScalarType::Text),
    };
    let wrap = |x: ScalarExpr| -> ScalarExpr {
        let x = if ty == typ.scalar { x } else { x.call_unary(UnaryFunc::Cast { to: ScalarType::Text, explicit: true }) };
        ScalarExpr::CallVariadic { func: VariadicFunc::Coalesce, exprs: vec![x, ScalarExpr::Literal(fill.clone(), ty.clone())] }
    };
    vec![
        vec![a.clone().call_unary(UnaryFunc::IsNull), b.clone().call_unary(UnaryFunc::IsNull)],
        vec![wrap(a), wrap(b)],
    ]
}

/// Some non-NULL value of the type, for `null_safe_eq`.
fn non_null_filler(t: &ScalarType) -> Option<Datum> {
    let text = if t.is_number() {
        "0"
    } else if t.is_string() {
        ""
    } else {
        match t {
            ScalarType::Bool => "false",
            ScalarType::Date => "2000-01-01",
            ScalarType::Timestamp { .. } => "2000-01-01 00:00:00",
            _ => return None,
        }
    };
    Datum::parse(text, &t.unconstrained()).ok()
}

/// `rel` (arity w) joined with `t` (n key columns then values) on
/// `rel[cols[i]] = t[i]`, NULL-safe; keeps rel's columns and t's values.
pub fn join_on_keys(rel: RelationExpr, cols: &[usize], t: RelationExpr, keep_t_values: bool) -> RelationExpr {
    let w = rel.arity();
    let rt = rel.typ();
    let n = cols.len();
    let tw = t.arity();
    let mut eqs = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        eqs.extend(null_safe_eq(ScalarExpr::Column(*c), ScalarExpr::Column(w + i), &rt[*c]));
    }
    let mut outputs: Vec<usize> = (0..w).collect();
    if keep_t_values {
        outputs.extend(w + n..w + tw);
    }
    project(join(vec![rel, t], eqs), outputs)
}

/// Extends `t` (n key columns, one value; at most one row per key unless
/// a cardinality error is reported) to one row for every row of `keys`,
/// with `default` where `t` has none.
fn totalize(t: RelationExpr, keys: RelationExpr, n: usize, default: ScalarExpr, lets: &mut Bindings) -> RelationExpr {
    let t = lets.share(t, "subquery result");
    let present = distinct(project(t.clone(), (0..n).collect()));
    let missing = union(vec![keys, negate(present)]);
    union(vec![t, map(missing, vec![default])])
}

/// Relations that a plan being built reads more than once, each bound
/// once (`RelationExpr::Let`) and read through `LocalGet`s: decorrelation
/// reads a subquery's input and result several times, and copies would
/// multiply with every level of nesting.
#[derive(Default)]
pub struct Bindings(Vec<(LocalId, String, RelationExpr)>);

impl Bindings {
    /// A read of `e`, bound here; reads of stored relations, of other
    /// bindings and of constants of at most one row are as cheap to repeat
    /// and are returned as they are.
    pub fn share(&mut self, e: RelationExpr, name: &str) -> RelationExpr {
        let cheap = match &e {
            RelationExpr::Get { .. } | RelationExpr::LocalGet { .. } | RelationExpr::RecursiveRef { .. } => true,
            RelationExpr::Constant { rows, .. } => rows.len() <= 1,
            _ => false,
        };
        if cheap {
            return e;
        }
        let id = crate::expr::relation::fresh_local_id();
        let types = e.typ();
        self.0.push((id, name.to_string(), e));
        RelationExpr::LocalGet { id, name: name.to_string(), types }
    }

    /// `body` with the bindings in scope.
    pub fn wrap(self, body: RelationExpr) -> RelationExpr {
        self.0.into_iter().rev().fold(body, |body, (id, name, value)| RelationExpr::Let {
            id,
            name,
            value: Box::new(value),
            body: Box::new(body),
        })
    }
}

impl Binder<'_> {
    fn next_placeholder(&mut self) -> GlobalId {
        self.placeholders += 1;
        PLACEHOLDER_BASE + self.placeholders
    }

    /// Records a reference to scope position `pos` of the current block if
    /// it is one of the block's prefix columns.
    pub fn note_outer_reference(&mut self, item: &ScopeItem, pos: usize) {
        if item.level >= 1 && item.level != usize::MAX {
            if let Some(f) = self.corr.last_mut() {
                if let Some(p) = f.prefix_map.get(pos) {
                    f.used.insert(*p);
                }
            }
        }
    }

    /// Binds `q` as a subquery of a relation whose columns `outer`
    /// describes, with `extra` unnamed prefix columns after the used ones.
    pub fn bind_correlated(&mut self, q: &Query, outer: &Scope, extra: Vec<ColumnType>) -> Result<Correlated, Error> {
        self.bind_correlated_with(q, outer, extra, false)
    }

    /// `bind_correlated`, optionally asking the block to equate its extra
    /// prefix column with its output (see `Outer::equate`).
    pub fn bind_correlated_with(&mut self, q: &Query, outer: &Scope, extra: Vec<ColumnType>, equate: bool) -> Result<Correlated, Error> {
        // Both passes bind the query as the caller asked (a FROM subquery
        // may have record-valued outputs).
        let records = std::mem::take(&mut self.record_outputs);
        if outer.len() == 0 && extra.is_empty() {
            // No outer column to read: one pass, uncorrelated.
            self.record_outputs = records;
            let block = self.bind_query_in(q, None)?;
            return Ok(Correlated::of_block(vec![], self.next_placeholder(), block));
        }
        // First pass: everything in scope is prefix; see what is used.
        let all: Vec<usize> = (0..outer.len()).collect();
        let placeholder = self.next_placeholder();
        let o = Outer { items: outer.as_outer(), extra: extra.clone(), placeholder, equate };
        self.corr.push(CorrFrame { used: BTreeSet::new(), prefix_map: all.clone() });
        self.record_outputs = records;
        self.discovering += 1;
        let r = self.bind_query_in(q, Some(&o));
        self.discovering -= 1;
        let frame = self.corr.pop().expect("pushed above");
        let first = r?;
        let cols: Vec<usize> = frame.used.into_iter().collect();
        // References to the enclosing block's own prefix are its
        // correlation too.
        for c in &cols {
            let item = &outer.items[*c];
            self.note_outer_reference(&item.clone(), *c);
        }
        if self.discovering > 0 {
            // Inside an enclosing first pass, which only wants to know
            // what that block reads: this binding, with every outer column
            // in its prefix, is a correct one.
            return Ok(Correlated::of_block(all, placeholder, first));
        }
        drop(first);
        let placeholder = self.next_placeholder();
        let items: Vec<ScopeItem> = cols
            .iter()
            .map(|c| {
                let it = &outer.items[*c];
                ScopeItem { level: it.level.saturating_add(1), ..it.clone() }
            })
            .collect();
        self.record_outputs = records;
        if items.is_empty() && equate {
            // An uncorrelated `x IN (subquery)`: computed once, not once
            // per distinct `x` with `x` equated inside it (which grouped
            // TPC-H Q18's subquery by every order key).
            let block = self.bind_query_in(q, None)?;
            return Ok(Correlated { plain: true, ..Correlated::of_block(vec![], placeholder, block) });
        }
        let block = if items.is_empty() && extra.is_empty() {
            self.bind_query_in(q, None)?
        } else {
            let o = Outer { items, extra, placeholder, equate };
            self.corr.push(CorrFrame { used: BTreeSet::new(), prefix_map: cols.clone() });
            let r = self.bind_query_in(q, Some(&o));
            self.corr.pop();
            r?
        };
        Ok(Correlated::of_block(cols, placeholder, block))
    }

    /// Binds an expression subquery into `host`, returning the placeholder
    /// column that will hold its value.
    pub fn add_pending(&mut self, host: &mut Host, corr: Correlated, kind: SubqueryKind, typ: ColumnType) -> ScalarExpr {
        host.pending.push(Pending { corr, kind, typ });
        ScalarExpr::Column(PENDING_COLUMN_BASE + host.pending.len() - 1)
    }

    /// Applies the pending subqueries of a host to its relation: the result
    /// has `rel`'s columns followed by one column per subquery.
    pub fn apply_pending(&mut self, rel: RelationExpr, pending: Vec<Pending>) -> Result<RelationExpr, Error> {
        if pending.is_empty() {
            return Ok(rel);
        }
        let w = rel.arity();
        // Left operands of ANY/ALL become columns first.
        let mut lhs = Vec::new();
        for p in &pending {
            if let Some(l) = p.kind.lhs() {
                if l.support().iter().any(|c| *c >= PENDING_COLUMN_BASE) {
                    return Err(Error::FeatureNotSupported(
                        "a subquery on the left of IN/ANY/ALL with another subquery is not supported yet".into(),
                    ));
                }
                lhs.push(l.clone());
            }
        }
        // The host relation is read by every subquery's keys and joined
        // with their results: bound once.
        let mut lets = Bindings::default();
        let ext = lets.share(map(rel, lhs), "subquery input");
        let mut inputs = vec![ext.clone()];
        let mut eqs = Vec::new();
        let mut outputs: Vec<usize> = (0..w).collect();
        let ext_types = ext.typ();
        let mut offset = ext.arity();
        let mut next_lhs = w;
        for p in pending {
            let mut cols = p.corr.cols.clone();
            if p.kind.lhs().is_some() {
                cols.push(next_lhs);
                next_lhs += 1;
            }
            let n = cols.len();
            let keys_of = |cols: &[usize]| if cols.is_empty() { unit() } else { distinct(project(ext.clone(), cols.to_vec())) };
            let keys = lets.share(keys_of(&cols), "subquery keys");
            charge_copies(&mut self.copied_nodes, node_count(&keys))?;
            let t = match &p.kind {
                SubqueryKind::In { l, r, negated, .. } => {
                    let corr_keys = lets.share(keys_of(&p.corr.cols), "subquery keys");
                    charge_copies(&mut self.copied_nodes, node_count(&corr_keys))?;
                    let s = p.corr.instantiate(&corr_keys, &mut self.copied_nodes)?;
                    in_table(s, keys, corr_keys, l, r, *negated, &mut lets)?
                }
                kind => {
                    let one_row = p.corr.one_row;
                    let s = p.corr.instantiate(&keys, &mut self.copied_nodes)?;
                    self.subquery_table(s, n, keys, kind, &p.typ, one_row, &mut lets)?
                }
            };
            for (i, c) in cols.iter().enumerate() {
                eqs.extend(null_safe_eq(ScalarExpr::Column(*c), ScalarExpr::Column(offset + i), &ext_types[*c]));
            }
            outputs.push(offset + n);
            offset += n + 1;
            inputs.push(t);
        }
        Ok(lets.wrap(project(join(inputs, eqs), outputs)))
    }

    /// The subquery's value for every key: n key columns and one value.
    /// `one_row`: `s` has exactly one row per key (`Correlated::one_row`).
    #[allow(clippy::too_many_arguments)]
    fn subquery_table(
        &mut self,
        s: RelationExpr,
        n: usize,
        keys: RelationExpr,
        kind: &SubqueryKind,
        typ: &ColumnType,
        one_row: bool,
        lets: &mut Bindings,
    ) -> Result<RelationExpr, Error> {
        let count_if = |pred: ScalarExpr| {
            AggregateExpr::new(
                AggregateFunc::Count,
                ScalarExpr::If {
                    cond: Box::new(pred),
                    then: Box::new(ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32)),
                    els: Box::new(ScalarExpr::null(ScalarType::Int32)),
                },
                false,
            )
        };
        let lit_bool = |b: bool| ScalarExpr::Literal(Datum::Bool(b), ScalarType::Bool);
        let null_bool = ScalarExpr::null(ScalarType::Bool);
        let gt0 = |c: usize| {
            ScalarExpr::Column(c).call_binary(ScalarExpr::Literal(Datum::Int64(0), ScalarType::Int64), BinaryFunc::Gt)
        };
        Ok(match kind {
            SubqueryKind::Scalar => {
                let sa = s.arity();
                if sa != n + 1 {
                    return Err(Error::Syntax("subquery must return only one column".into()));
                }
                if one_row {
                    // Already the table: one value for every key.
                    return Ok(s);
                }
                // Read three times: for its rows, to count them, and to
                // find the keys it has no row for.
                let s = lets.share(s, "subquery");
                let counts = RelationExpr::Reduce {
                    input: Box::new(s.clone()),
                    group_key: (0..n).collect(),
                    aggregates: vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::literal_true(), false)],
                };
                let too_many = filter(
                    counts,
                    vec![ScalarExpr::If {
                        cond: Box::new(gt1(n)),
                        then: Box::new(ScalarExpr::Error(EvalError::MultipleRowsFromSubquery)),
                        els: Box::new(lit_bool(false)),
                    }],
                );
                let mut types = s.typ();
                for t in types.iter_mut() {
                    t.nullable = true;
                }
                let errors = map(project(too_many, vec![]), nulls(&types));
                let total = totalize(s, keys, n, ScalarExpr::null(typ.scalar.clone()), lets);
                union(vec![total, errors])
            }
            SubqueryKind::Exists => {
                let e = map(distinct(project(s, (0..n).collect())), vec![lit_bool(true)]);
                totalize(e, keys, n, lit_bool(false), lets)
            }
            SubqueryKind::Any { cmp, .. } | SubqueryKind::All { cmp, .. } => {
                if s.arity() != n + 1 {
                    return Err(Error::Syntax("subquery has too many columns".into()));
                }
                let is_any = matches!(kind, SubqueryKind::Any { .. });
                // cmp compares the left operand (last key column) with the value.
                let mut p = cmp.clone();
                p.permute(&|c| if c == 0 { n - 1 } else { n });
                let (decisive, decided, undecided_default) = if is_any {
                    (p.clone().call_unary(UnaryFunc::IsTrue), true, false)
                } else {
                    (p.clone().call_unary(UnaryFunc::IsFalse), false, true)
                };
                let reduced = RelationExpr::Reduce {
                    input: Box::new(s),
                    group_key: (0..n).collect(),
                    aggregates: vec![count_if(decisive), count_if(p.call_unary(UnaryFunc::IsNull))],
                };
                let value = ScalarExpr::If {
                    cond: Box::new(gt0(n)),
                    then: Box::new(lit_bool(decided)),
                    els: Box::new(ScalarExpr::If {
                        cond: Box::new(gt0(n + 1)),
                        then: Box::new(null_bool),
                        els: Box::new(lit_bool(undecided_default)),
                    }),
                };
                let mut outputs: Vec<usize> = (0..n).collect();
                outputs.push(n + 2);
                let t = project(map(reduced, vec![value]), outputs);
                totalize(t, keys, n, lit_bool(undecided_default), lets)
            }
            SubqueryKind::In { .. } => return Err(Error::Internal("IN is built by in_table".into())),
        })
    }
}

/// The table of `[NOT] IN (subquery)` for every key: `keys` holds the
/// subquery's correlation columns (m of them, as `corr_keys` does) then
/// the left operand; `s` holds the m correlation columns then the value.
///
/// Rather than compare every left operand with every value, it joins them
/// on the value: a key is TRUE where the join finds a match; otherwise the
/// answer is FALSE when the subquery is empty for its correlation values,
/// NULL when the left operand is NULL or the subquery yields a NULL, and
/// FALSE otherwise (negated for NOT IN). Each part is a join or a
/// reduction keyed by the correlation values, so a change costs work in
/// proportion to the keys it touches.
fn in_table(
    s: RelationExpr,
    keys: RelationExpr,
    corr_keys: RelationExpr,
    l: &ScalarExpr,
    r: &ScalarExpr,
    negated: bool,
    lets: &mut Bindings,
) -> Result<RelationExpr, Error> {
    let n = keys.arity();
    let m = n - 1;
    if s.arity() != m + 1 {
        return Err(Error::Syntax("subquery has too many columns".into()));
    }
    let key_types = keys.typ();
    // Both are read more than once below.
    let keys = lets.share(keys, "subquery keys");
    let s = lets.share(s, "subquery");
    let lit_bool = |b: bool| ScalarExpr::Literal(Datum::Bool(b), ScalarType::Bool);
    let lit_int = |i: i32| ScalarExpr::Literal(Datum::Int32(i), ScalarType::Int32);
    let at = |e: &ScalarExpr, from: usize, to: usize| {
        let mut e = e.clone();
        e.permute(&|c| if c == from { to } else { c });
        e
    };
    // Keys whose left operand equals one of the subquery's values.
    let mut eqs = Vec::new();
    for (i, t) in key_types.iter().enumerate().take(m) {
        eqs.extend(null_safe_eq(ScalarExpr::Column(i), ScalarExpr::Column(n + i), t));
    }
    eqs.push(vec![at(l, 0, m), at(r, 1, n + m)]);
    let hits = map(distinct(project(join(vec![keys.clone(), s.clone()], eqs), (0..n).collect())), vec![lit_bool(true)]);
    let hits = totalize(hits, keys.clone(), n, lit_bool(false), lets);
    // Per correlation value: 0 no rows, 1 rows without NULL, 2 a NULL too.
    let stats = RelationExpr::Reduce {
        input: Box::new(s),
        group_key: (0..m).collect(),
        aggregates: vec![
            AggregateExpr::new(AggregateFunc::Count, ScalarExpr::literal_true(), false),
            AggregateExpr::new(AggregateFunc::Count, at(r, 1, m), false),
        ],
    };
    let has_null = ScalarExpr::Column(m + 1).call_binary(ScalarExpr::Column(m), BinaryFunc::Lt);
    let empty = ScalarExpr::Column(m).call_binary(ScalarExpr::Literal(Datum::Int64(0), ScalarType::Int64), BinaryFunc::Eq);
    let state = ScalarExpr::If {
        cond: Box::new(empty),
        then: Box::new(lit_int(0)),
        els: Box::new(ScalarExpr::If { cond: Box::new(has_null), then: Box::new(lit_int(2)), els: Box::new(lit_int(1)) }),
    };
    let mut outputs: Vec<usize> = (0..m).collect();
    outputs.push(m + 2);
    let stats = totalize(project(map(stats, vec![state]), outputs), corr_keys, m, lit_int(0), lets);
    // keys ++ hits (n + 1) ++ stats (m + 1)
    let mut eqs = Vec::new();
    for (i, t) in key_types.iter().enumerate() {
        eqs.extend(null_safe_eq(ScalarExpr::Column(i), ScalarExpr::Column(n + i), t));
        if i < m {
            eqs.extend(null_safe_eq(ScalarExpr::Column(i), ScalarExpr::Column(2 * n + 1 + i), t));
        }
    }
    let hit = ScalarExpr::Column(2 * n);
    let state = ScalarExpr::Column(2 * n + 1 + m);
    let is_state = |k: i32| state.clone().call_binary(lit_int(k), BinaryFunc::Eq);
    let unknown = ScalarExpr::CallVariadic {
        func: VariadicFunc::Or,
        exprs: vec![ScalarExpr::Column(m).call_unary(UnaryFunc::IsNull), is_state(2)],
    };
    let value = ScalarExpr::If {
        cond: Box::new(hit),
        then: Box::new(lit_bool(!negated)),
        els: Box::new(ScalarExpr::If {
            cond: Box::new(is_state(0)),
            then: Box::new(lit_bool(negated)),
            els: Box::new(ScalarExpr::If {
                cond: Box::new(unknown),
                then: Box::new(ScalarExpr::null(ScalarType::Bool)),
                els: Box::new(lit_bool(negated)),
            }),
        }),
    };
    let mut outputs: Vec<usize> = (0..n).collect();
    outputs.push(2 * n + 2 + m);
    Ok(project(map(join(vec![keys, hits, stats], eqs), vec![value]), outputs))
}

fn gt1(c: usize) -> ScalarExpr {
    ScalarExpr::Column(c).call_binary(ScalarExpr::Literal(Datum::Int64(1), ScalarType::Int64), BinaryFunc::Gt)
}

/// `l LEFT JOIN r ON on` (conjuncts over l's then r's columns).
pub fn left_join(l: RelationExpr, r: RelationExpr, on: Vec<ScalarExpr>) -> RelationExpr {
    // Each side is read more than once below: one constant (a catalog
    // relation's rows) instead of a tree keeps chains of outer joins over
    // the catalog from growing exponentially (`expr::fold`).
    let (l, r) = (l.folded(), r.folded());
    // Both sides are read for the matches and for the unmatched rows:
    // bound once, so that nested outer joins stay linear in size.
    let mut lets = Bindings::default();
    let (l, r) = (lets.share(l, "outer join input"), lets.share(r, "outer join input"));
    let rtypes = r.typ();
    let inner = filter(join(vec![l.clone(), r.clone()], vec![]), on.clone());
    let unmatched = unmatched_left(l, r, &on);
    lets.wrap(union(vec![inner, map(unmatched, nulls(&rtypes))]))
}

/// `l FULL JOIN r ON on`.
pub fn full_join(l: RelationExpr, r: RelationExpr, on: Vec<ScalarExpr>) -> RelationExpr {
    let (l, r) = (l.folded(), r.folded());
    let mut lets = Bindings::default();
    let (l, r) = (lets.share(l, "outer join input"), lets.share(r, "outer join input"));
    let a = l.arity();
    let b = r.arity();
    let ltypes = l.typ();
    let rtypes = r.typ();
    let inner = filter(join(vec![l.clone(), r.clone()], vec![]), on.clone());
    let left_only = map(unmatched_left(l.clone(), r.clone(), &on), nulls(&rtypes));
    let swapped: Vec<ScalarExpr> = on.iter().map(|p| swap_sides(p, a, b)).collect();
    let right_only = map(unmatched_left(r, l, &swapped), nulls(&ltypes));
    // right_only is (r, nulls for l): put l's columns first.
    let reorder: Vec<usize> = (b..b + a).chain(0..b).collect();
    lets.wrap(union(vec![inner, left_only, project(right_only, reorder)]))
}

/// Rewrites a predicate over (l, r) to one over (r, l).
pub fn swap_sides(p: &ScalarExpr, a: usize, b: usize) -> ScalarExpr {
    let mut p = p.clone();
    p.permute(&|c| if c < a { c + b } else { c - a });
    p
}

/// The rows of `l` that no row of `r` matches under `on`, with their
/// multiplicities. Equality conjuncts between the sides become a
/// semi-join on those keys; anything else compares whole rows.
fn unmatched_left(l: RelationExpr, r: RelationExpr, on: &[ScalarExpr]) -> RelationExpr {
    let a = l.arity();
    let mut lkeys = Vec::new();
    let mut rkeys = Vec::new();
    let mut lpreds = Vec::new();
    let mut rpreds = Vec::new();
    let mut general = false;
    for p in on.iter().flat_map(|p| p.clone().into_conjuncts()) {
        let sup = p.support();
        if sup.iter().all(|c| *c < a) {
            lpreds.push(p);
        } else if sup.iter().all(|c| *c >= a) {
            let mut q = p.clone();
            q.permute(&|c| c - a);
            rpreds.push(q);
        } else if let ScalarExpr::CallBinary { func: BinaryFunc::Eq, left, right } = &p {
            let (ls, rs) = (left.support(), right.support());
            if ls.iter().all(|c| *c < a) && rs.iter().all(|c| *c >= a) {
                let mut rk = (**right).clone();
                rk.permute(&|c| c - a);
                lkeys.push((**left).clone());
                rkeys.push(rk);
            } else if rs.iter().all(|c| *c < a) && ls.iter().all(|c| *c >= a) {
                let mut rk = (**left).clone();
                rk.permute(&|c| c - a);
                lkeys.push((**right).clone());
                rkeys.push(rk);
            } else {
                general = true;
            }
        } else {
            general = true;
        }
    }
    let hit = if !general && !lkeys.is_empty() {
        let k = lkeys.len();
        let b = r.arity();
        let rk = distinct(project(map(filter(r, rpreds), rkeys), (b..b + k).collect()));
        let lk = filter(map(l.clone(), lkeys), lpreds);
        let eqs = (0..k).map(|i| vec![ScalarExpr::Column(a + i), ScalarExpr::Column(a + k + i)]).collect();
        project(join(vec![lk, rk], eqs), (0..a).collect())
    } else {
        let inner = filter(join(vec![l.clone(), r], vec![]), on.to_vec());
        let matched = distinct(project(inner, (0..a).collect()));
        let cols: Vec<usize> = (0..a).collect();
        join_on_keys(l.clone(), &cols, matched, false)
    };
    union(vec![l, negate(hit)])
}
