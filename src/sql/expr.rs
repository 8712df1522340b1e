//! Binding scalar expressions: column resolution, literal and parameter
//! typing, Postgres's operator coercions, aggregates in grouped queries.

use crate::expr::func::cast;
use crate::expr::{AggregateExpr, AggregateFunc, BinaryFunc, ScalarExpr, UnaryFunc, VariadicFunc};
use crate::repr::{ColumnType, Datum, Error, EvalError, ScalarType};
use crate::sql::binder::{ident, Binder};
use crate::sql::scope::Scope;
use crate::sql::subquery::{Host, SubqueryKind};
use crate::sql::window::WindowCall;
use crate::sql::functions::type_list;
use crate::sql::types::{castable, common_type, scalar_type_from_sql};
use sqlparser::ast::{
    BinaryOperator, CastKind, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    UnaryOperator, Value,
};

/// A literal or parameter whose type comes from context, as in Postgres.
#[derive(Clone, Debug)]
pub enum Unknown {
    Text(String),
    Null,
    Param(usize),
    /// `ARRAY[]`: an array of a type only a cast or the context gives.
    EmptyArray,
}

/// A bound expression with its type; `ty == None` for unknown-typed
/// literals and parameters not yet coerced.
#[derive(Clone, Debug)]
pub struct Bound {
    pub expr: ScalarExpr,
    pub ty: Option<ScalarType>,
    pub nullable: bool,
    pub unknown: Option<Unknown>,
}

/// How deeply expressions may nest, operands within operands (a
/// left-deep `1+1+...` of 10,000 terms is 10,000 deep). Deeper is refused
/// with 54001 here, as PostgreSQL refuses what would pass its
/// `max_stack_depth`, so that no later step (planner, evaluation in a
/// worker, dropping the plan) meets a deeper expression than this.
pub const MAX_EXPR_DEPTH: usize = 10_000;

/// Stack left below which the binder continues on a new heap segment of
/// `STACK_GROWTH` bytes (`stacker`).
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_GROWTH: usize = 8 * 1024 * 1024;

impl Bound {
    fn typed(expr: ScalarExpr, ty: ScalarType, nullable: bool) -> Bound {
        Bound { expr, ty: Some(ty), nullable, unknown: None }
    }
}

/// Grouped-query state: the group key (over the input scope) and the
/// aggregates found so far. Output columns are keys then aggregates.
#[derive(Clone, Debug, Default)]
pub struct Grouping {
    pub keys: Vec<ScalarExpr>,
    pub key_types: Vec<ColumnType>,
    pub aggregates: Vec<AggregateExpr>,
    pub agg_types: Vec<ColumnType>,
}

/// Where an expression is bound.
pub struct ExprCtx<'a> {
    pub scope: &'a Scope,
    /// Clause name for errors, e.g. "WHERE".
    pub clause: &'static str,
    pub grouping: Option<&'a mut Grouping>,
    /// Where subqueries go; `None` where they are not allowed.
    pub host: Option<&'a mut Host>,
    /// Where window calls go; `None` where they are not allowed.
    pub windows: Option<&'a mut Vec<WindowCall>>,
}

impl<'a> ExprCtx<'a> {
    pub fn new(scope: &'a Scope, clause: &'static str) -> Self {
        ExprCtx { scope, clause, grouping: None, host: None, windows: None }
    }
}

fn is_aggregate_name(name: &str) -> bool {
    matches!(
        name,
        "count"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "bool_and"
            | "bool_or"
            | "every"
            | "string_agg"
            | "array_agg"
            | "stddev"
            | "stddev_samp"
            | "stddev_pop"
            | "variance"
            | "var_samp"
            | "var_pop"
    )
}

impl Binder<'_> {
    /// Binds an expression and gives it a definite type (unknowns → text).
    pub fn bind_scalar(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Result<(ScalarExpr, ColumnType), Error> {
        let b = self.bind_expr(e, ctx)?;
        self.bind_typed(b)
    }

    /// Gives a bound expression a definite type (unknowns → text).
    pub fn bind_typed(&mut self, b: Bound) -> Result<(ScalarExpr, ColumnType), Error> {
        let ty = b.ty.clone().unwrap_or(ScalarType::Text);
        let nullable = b.nullable;
        Ok((self.coerce(b, &ty)?, ColumnType::new(ty, nullable)))
    }

    /// Binds a boolean condition (WHERE, HAVING, ON).
    pub fn bind_condition(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Result<ScalarExpr, Error> {
        let clause = ctx.clause;
        let b = self.bind_expr(e, ctx)?;
        self.coerce_bool(b, clause)
    }

    fn coerce_bool(&mut self, b: Bound, what: &str) -> Result<ScalarExpr, Error> {
        match &b.ty {
            None | Some(ScalarType::Bool) => self.coerce(b, &ScalarType::Bool),
            Some(t) => Err(Error::DatatypeMismatch(format!("argument of {what} must be type boolean, not type {}", t.name()))),
        }
    }

    /// Coerces a bound expression to `target` (implicitly).
    pub fn coerce(&mut self, b: Bound, target: &ScalarType) -> Result<ScalarExpr, Error> {
        match b.unknown {
            Some(Unknown::Text(s)) => match target {
                ScalarType::Reg(k) => Ok(ScalarExpr::Literal(self.reg_literal(*k, &s)?, target.clone())),
                _ => Ok(ScalarExpr::Literal(Datum::parse(&s, target)?, target.clone())),
            },
            Some(Unknown::Null) => Ok(ScalarExpr::Literal(Datum::Null, target.clone())),
            Some(Unknown::EmptyArray) if target.is_array() => Ok(ScalarExpr::Literal(Datum::Array(Vec::new()), target.clone())),
            Some(Unknown::EmptyArray) => {
                Err(Error::IndeterminateDatatype("cannot determine type of empty array".into()))
            }
            // A parameter read as an OID alias type arrives as the name's
            // text (clients send `$1::regclass` with 'schema.table').
            Some(Unknown::Param(n))
                if matches!(target, ScalarType::Reg(_)) && self.params.types[n].as_ref().is_none_or(|t| t.is_string()) =>
            {
                let text = self.coerce(b, &ScalarType::Text)?;
                Ok(match self.reg_cast(text, &ScalarType::Text, target) {
                    Ok(x) | Err(x) => x,
                })
            }
            Some(Unknown::Param(n)) => {
                let slot = &mut self.params.types[n];
                if slot.is_none() {
                    *slot = Some(target.clone());
                }
                let declared = slot.clone().unwrap_or(target.clone());
                let same = declared.unconstrained() == target.unconstrained();
                match &self.params.values {
                    Some(values) => {
                        let v = values.get(n).cloned().unwrap_or(Datum::Null);
                        let v = if same { v } else { cast(v, target, false)? };
                        Ok(ScalarExpr::Literal(v, target.clone()))
                    }
                    None => Ok(self.params.unbound(n, target, !same)),
                }
            }
            None => {
                let ty = b.ty.clone().unwrap_or(ScalarType::Text);
                if matches!(ty, ScalarType::Char { .. }) && target.is_string() && !matches!(target, ScalarType::Char { .. }) {
                    let trimmed = Bound::typed(b.expr.call_unary(UnaryFunc::BpcharToText), ScalarType::Text, b.nullable);
                    return self.coerce(trimmed, target);
                }
                if ty == *target || (ty.unconstrained() == target.unconstrained() && !target.has_length_or_scale()) {
                    Ok(b.expr)
                } else {
                    let expr = match self.reg_cast(b.expr, &ty, target) {
                        Ok(converted) => return Ok(converted),
                        Err(expr) => expr,
                    };
                    Ok(expr.call_unary(UnaryFunc::Cast { to: target.clone(), explicit: false }))
                }
            }
        }
    }

    /// Binds an expression (54001 past `MAX_EXPR_DEPTH` levels of
    /// operands within operands).
    pub fn bind_expr(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        if self.expr_depth >= MAX_EXPR_DEPTH {
            return Err(Error::Eval(EvalError::StackDepthExceeded));
        }
        self.expr_depth += 1;
        // A level takes kilobytes of stack here: below the limit the
        // binder grows its stack on the heap rather than overflow it.
        let bound = stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.bind_expr_here(e, ctx));
        self.expr_depth -= 1;
        bound
    }

    fn bind_expr_here(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        // In a grouped query, an expression equal to a group key is that
        // key's output column.
        if ctx.grouping.is_some() && !matches!(e, Expr::Value(_) | Expr::Nested(_)) {
            let mut plain = ExprCtx::new(ctx.scope, ctx.clause);
            let saved = self.params.types.clone();
            let attempt = self.bind_expr(e, &mut plain);
            self.params.types = saved;
            if let Ok(b) = attempt {
                let g = ctx.grouping.as_ref().expect("checked above");
                if let Some(k) = g.keys.iter().position(|k| *k == b.expr) {
                    let t = g.key_types[k].clone();
                    return Ok(Bound::typed(ScalarExpr::Column(k), t.scalar, t.nullable));
                }
            }
        }
        match e {
            Expr::Identifier(id) => self.bind_column(None, &ident(id), ctx),
            Expr::CompoundIdentifier(ids) => {
                let names: Vec<String> = ids.iter().map(ident).collect();
                match names.as_slice() {
                    [t, c] => self.bind_column(Some(t), c, ctx),
                    [_, t, c] => self.bind_column(Some(t), c, ctx),
                    _ => Err(Error::FeatureNotSupported(format!("improper qualified name: {e}"))),
                }
            }
            Expr::Nested(inner) => self.bind_expr(inner, ctx),
            // Ripple compares strings by code point, which is what the
            // C and default collations mean here.
            Expr::Collate { expr, collation } => {
                let c = collation.to_string().to_lowercase().replace('"', "");
                let c = c.strip_prefix("pg_catalog.").unwrap_or(&c);
                if !matches!(c, "default" | "c" | "posix" | "ucs_basic") {
                    return Err(Error::FeatureNotSupported(format!("collation \"{c}\" is not supported")));
                }
                self.bind_expr(expr, ctx)
            }
            Expr::Value(v) => self.bind_value(&v.value),
            Expr::Array(a) => self.bind_array_constructor(&a.elem, ctx),
            Expr::CompoundFieldAccess { root, access_chain } => match self.bind_field_access(root, access_chain, ctx) {
                Some(field) => field,
                None => {
                    // `t.col[1]`: sqlparser puts the qualified name's
                    // later parts in the chain.
                    let dots = access_chain
                        .iter()
                        .take_while(|a| matches!(a, sqlparser::ast::AccessExpr::Dot(Expr::Identifier(_))))
                        .count();
                    match root.as_ref() {
                        Expr::Identifier(first) if dots > 0 => {
                            let mut parts = vec![first.clone()];
                            for a in &access_chain[..dots] {
                                if let sqlparser::ast::AccessExpr::Dot(Expr::Identifier(id)) = a {
                                    parts.push(id.clone());
                                }
                            }
                            self.bind_subscripts(&Expr::CompoundIdentifier(parts), &access_chain[dots..], ctx)
                        }
                        _ => self.bind_subscripts(root, access_chain, ctx),
                    }
                }
            },
            Expr::Cast { kind, expr, data_type, .. } => {
                if matches!(kind, CastKind::TryCast | CastKind::SafeCast) {
                    return Err(Error::FeatureNotSupported("TRY_CAST is not supported".into()));
                }
                let to = scalar_type_from_sql(data_type)?;
                let b = self.bind_expr(expr, ctx)?;
                let nullable = b.nullable;
                if b.ty.is_none() {
                    // The literal is read as the unconstrained type, then
                    // cast (so `'abcd'::varchar(2)` truncates).
                    let x = self.coerce(b, &to.unconstrained())?;
                    let x = x.call_unary(UnaryFunc::Cast { to: to.clone(), explicit: true });
                    return Ok(Bound::typed(x, to, nullable));
                }
                let from = b.ty.clone().unwrap_or(ScalarType::Text);
                if !castable(&from, &to) {
                    return Err(Error::CannotCoerce(format!("cannot cast type {} to {}", from.name(), to.name())));
                }
                let expr = match self.reg_cast(b.expr, &from, &to) {
                    Ok(converted) => converted,
                    Err(expr) => expr.call_unary(UnaryFunc::Cast { to: to.clone(), explicit: true }),
                };
                Ok(Bound::typed(expr, to, nullable))
            }
            Expr::UnaryOp { op, expr } => {
                let b = self.bind_expr(expr, ctx)?;
                match op {
                    UnaryOperator::Not => {
                        let nullable = b.nullable;
                        let x = self.coerce_bool(b, "NOT")?;
                        Ok(Bound::typed(x.call_unary(UnaryFunc::Not), ScalarType::Bool, nullable))
                    }
                    UnaryOperator::Minus => {
                        // Fold `-literal` so that i64::MIN and friends parse.
                        if let Expr::Value(v) = expr.as_ref() {
                            if let Value::Number(n, _) = &v.value {
                                return self.bind_number(&format!("-{n}"));
                            }
                        }
                        let nullable = b.nullable;
                        let ty = b.ty.clone().unwrap_or(ScalarType::Float64);
                        if !ty.is_number() && ty != ScalarType::Interval {
                            return Err(Error::UndefinedFunction(format!("operator does not exist: - {}", ty.name())));
                        }
                        let x = self.coerce(b, &ty)?;
                        Ok(Bound::typed(x.call_unary(UnaryFunc::Neg), ty, nullable))
                    }
                    UnaryOperator::Plus => Ok(b),
                    UnaryOperator::PGAbs | UnaryOperator::PGSquareRoot | UnaryOperator::PGCubeRoot => {
                        let name = match op {
                            UnaryOperator::PGAbs => "abs",
                            UnaryOperator::PGSquareRoot => "sqrt",
                            _ => "cbrt",
                        };
                        self.bind_builtin(name, vec![b])
                    }
                    other => Err(Error::FeatureNotSupported(format!("operator {other} is not supported"))),
                }
            }
            Expr::BinaryOp { left, op, right } => self.bind_binary(left, op, right, ctx),
            Expr::IsNull(x) | Expr::IsNotNull(x) => {
                let b = self.bind_expr(x, ctx)?;
                let ty = b.ty.clone().unwrap_or(ScalarType::Text);
                let x = self.coerce(b, &ty)?;
                let f = if matches!(e, Expr::IsNull(_)) { UnaryFunc::IsNull } else { UnaryFunc::IsNotNull };
                Ok(Bound::typed(x.call_unary(f), ScalarType::Bool, false))
            }
            Expr::IsTrue(x) | Expr::IsFalse(x) | Expr::IsNotTrue(x) | Expr::IsNotFalse(x) => {
                let b = self.bind_expr(x, ctx)?;
                let x = self.coerce_bool(b, "IS TRUE")?;
                let f = match e {
                    Expr::IsTrue(_) => UnaryFunc::IsTrue,
                    Expr::IsFalse(_) => UnaryFunc::IsFalse,
                    Expr::IsNotTrue(_) => UnaryFunc::IsNotTrue,
                    _ => UnaryFunc::IsNotFalse,
                };
                Ok(Bound::typed(x.call_unary(f), ScalarType::Bool, false))
            }
            Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                let (l, r, _) = self.bind_comparable(a, b, "IS DISTINCT FROM", ctx)?;
                let d = l.call_binary(r, BinaryFunc::IsDistinctFrom);
                let d = if matches!(e, Expr::IsNotDistinctFrom(..)) { d.call_unary(UnaryFunc::Not) } else { d };
                Ok(Bound::typed(d, ScalarType::Bool, false))
            }
            Expr::Between { expr, negated, low, high } => {
                let lo = Expr::BinaryOp { left: expr.clone(), op: BinaryOperator::GtEq, right: low.clone() };
                let hi = Expr::BinaryOp { left: expr.clone(), op: BinaryOperator::LtEq, right: high.clone() };
                let both = Expr::BinaryOp { left: Box::new(lo), op: BinaryOperator::And, right: Box::new(hi) };
                let b = self.bind_expr(&both, ctx)?;
                if *negated {
                    let nullable = b.nullable;
                    let x = self.coerce_bool(b, "NOT")?;
                    return Ok(Bound::typed(x.call_unary(UnaryFunc::Not), ScalarType::Bool, nullable));
                }
                Ok(b)
            }
            Expr::InList { expr, list, negated } => {
                let mut disjuncts = Vec::new();
                let mut nullable = false;
                for item in list {
                    let (l, r, n) = self.bind_comparable(expr, item, "=", ctx)?;
                    nullable |= n;
                    disjuncts.push(l.call_binary(r, BinaryFunc::Eq));
                }
                let any = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: disjuncts };
                let out = if *negated { any.call_unary(UnaryFunc::Not) } else { any };
                Ok(Bound::typed(out, ScalarType::Bool, nullable))
            }
            Expr::Case { operand, conditions, else_result, .. } => {
                let mut results = Vec::new();
                for c in conditions {
                    results.push(self.bind_expr(&c.result, ctx)?);
                }
                let els = match else_result {
                    Some(x) => self.bind_expr(x, ctx)?,
                    None => Bound { expr: ScalarExpr::Literal(Datum::Null, ScalarType::Text), ty: None, nullable: true, unknown: Some(Unknown::Null) },
                };
                results.push(els);
                let ty = self.unify(&results, "CASE")?;
                let nullable = results.iter().any(|r| r.nullable);
                let mut out_exprs = Vec::new();
                for r in results {
                    out_exprs.push(self.coerce(r, &ty)?);
                }
                let mut acc = out_exprs.pop().expect("else branch");
                for (c, then) in conditions.iter().zip(out_exprs).rev() {
                    let cond = match operand {
                        Some(op) => {
                            let (l, r, _) = self.bind_comparable(op, &c.condition, "=", ctx)?;
                            l.call_binary(r, BinaryFunc::Eq)
                        }
                        None => {
                            let b = self.bind_expr(&c.condition, ctx)?;
                            self.coerce_bool(b, "CASE/WHEN")?
                        }
                    };
                    acc = ScalarExpr::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(acc) };
                }
                Ok(Bound::typed(acc, ty, nullable))
            }
            Expr::Function(f) if f.over.is_some() => self.bind_window(f, ctx),
            Expr::Function(f) => self.bind_function(f, ctx),
            Expr::Subquery(q) => {
                let host = subquery_host(ctx)?;
                let scope = host.scope.clone();
                let corr = self.bind_correlated(q, &scope, vec![])?;
                if corr.desc.arity() != 1 {
                    return Err(Error::Syntax("subquery must return only one column".into()));
                }
                let t = corr.desc.types[0].clone();
                let col = self.add_pending(host, corr, SubqueryKind::Scalar, ColumnType::new(t.scalar.clone(), true));
                Ok(Bound::typed(col, t.scalar, true))
            }
            Expr::Exists { subquery, negated } => {
                let host = subquery_host(ctx)?;
                let scope = host.scope.clone();
                let corr = self.bind_correlated(subquery, &scope, vec![])?;
                let col = self.add_pending(host, corr, SubqueryKind::Exists, ColumnType::new(ScalarType::Bool, false));
                let x = if *negated { col.call_unary(UnaryFunc::Not) } else { col };
                Ok(Bound::typed(x, ScalarType::Bool, false))
            }
            Expr::InSubquery { expr, subquery, negated } => {
                let lhs = self.bind_expr(expr, ctx)?;
                let host = subquery_host(ctx)?;
                let x = self.bind_subquery_predicate(lhs, subquery, BinaryFunc::Eq, false, host)?;
                let x = if *negated { x.call_unary(UnaryFunc::Not) } else { x };
                Ok(Bound::typed(x, ScalarType::Bool, true))
            }
            Expr::AnyOp { left, compare_op, right, .. } | Expr::AllOp { left, compare_op, right } => {
                let all = matches!(e, Expr::AllOp { .. });
                let Expr::Subquery(q) = right.as_ref() else {
                    return self.bind_any_all_array(left, compare_op, right, all, ctx);
                };
                let op = match compare_op {
                    BinaryOperator::Eq => BinaryFunc::Eq,
                    BinaryOperator::NotEq => BinaryFunc::NotEq,
                    BinaryOperator::Lt => BinaryFunc::Lt,
                    BinaryOperator::LtEq => BinaryFunc::Lte,
                    BinaryOperator::Gt => BinaryFunc::Gt,
                    BinaryOperator::GtEq => BinaryFunc::Gte,
                    other => return Err(Error::FeatureNotSupported(format!("operator {other} with ANY/ALL is not supported yet"))),
                };
                let lhs = self.bind_expr(left, ctx)?;
                let host = subquery_host(ctx)?;
                let x = self.bind_subquery_predicate(lhs, q, op, all, host)?;
                Ok(Bound::typed(x, ScalarType::Bool, true))
            }
            other => match self.bind_special_form(other, ctx) {
                Some(result) => result,
                None => Err(Error::FeatureNotSupported(format!("expression not supported yet: {other}"))),
            },
        }
    }

    fn bind_column(&mut self, table: Option<&str>, name: &str, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        let i = ctx.scope.resolve(table, name)?;
        self.bind_column_at(i, ctx)
    }

    /// The scope's column `i` (resolved by the caller).
    pub(crate) fn bind_column_at(&mut self, i: usize, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        let item = ctx.scope.items[i].clone();
        self.note_outer_reference(&item, i);
        if ctx.grouping.is_some() {
            let item = &ctx.scope.items[i];
            let full = match &item.table {
                Some(t) => format!("{t}.{}", item.name),
                None => item.name.clone(),
            };
            return Err(Error::Grouping(format!(
                "column \"{full}\" must appear in the GROUP BY clause or be used in an aggregate function"
            )));
        }
        let t = ctx.scope.items[i].typ.clone();
        Ok(Bound::typed(ScalarExpr::Column(i), t.scalar, t.nullable))
    }

    fn bind_value(&mut self, v: &Value) -> Result<Bound, Error> {
        match v {
            Value::Number(n, _) => self.bind_number(n),
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) | Value::DoubleQuotedString(s) => Ok(Bound {
                expr: ScalarExpr::Literal(Datum::Text(s.clone()), ScalarType::Text),
                ty: None,
                nullable: false,
                unknown: Some(Unknown::Text(s.clone())),
            }),
            Value::Boolean(b) => Ok(Bound::typed(ScalarExpr::Literal(Datum::Bool(*b), ScalarType::Bool), ScalarType::Bool, false)),
            Value::Null => Ok(Bound {
                expr: ScalarExpr::Literal(Datum::Null, ScalarType::Text),
                ty: None,
                nullable: true,
                unknown: Some(Unknown::Null),
            }),
            Value::Placeholder(p) => {
                let n: usize = p
                    .trim_start_matches('$')
                    .parse()
                    .map_err(|_| Error::Syntax(format!("syntax error at or near \"{p}\"")))?;
                if n == 0 || n > 65535 {
                    return Err(Error::UndefinedParameter(format!("there is no parameter ${n}")));
                }
                if self.params.types.len() < n {
                    self.params.types.resize(n, None);
                }
                let idx = n - 1;
                self.params_bound += 1;
                if let Some(ty) = self.params.types[idx].clone() {
                    let expr = match &self.params.values {
                        Some(vals) => ScalarExpr::Literal(vals.get(idx).cloned().unwrap_or(Datum::Null), ty.clone()),
                        None => self.params.unbound(idx, &ty, false),
                    };
                    return Ok(Bound::typed(expr, ty, true));
                }
                Ok(Bound { expr: ScalarExpr::Literal(Datum::Null, ScalarType::Text), ty: None, nullable: true, unknown: Some(Unknown::Param(idx)) })
            }
            other => Err(Error::FeatureNotSupported(format!("literal not supported yet: {other}"))),
        }
    }

    fn bind_number(&mut self, n: &str) -> Result<Bound, Error> {
        if !n.contains(['.', 'e', 'E']) {
            if let Ok(v) = n.parse::<i32>() {
                return Ok(Bound::typed(ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32), ScalarType::Int32, false));
            }
            if let Ok(v) = n.parse::<i64>() {
                return Ok(Bound::typed(ScalarExpr::Literal(Datum::Int64(v), ScalarType::Int64), ScalarType::Int64, false));
            }
        }
        let ty = ScalarType::Numeric { precision: None, scale: None };
        match Datum::parse(n, &ty) {
            Ok(d) => Ok(Bound::typed(ScalarExpr::Literal(d, ty.clone()), ty, false)),
            // Beyond the exact range ripple stores (28 digits), a constant
            // is kept as double precision rather than rejected.
            Err(_) => {
                let v: f64 = n.parse().map_err(|_| Error::Syntax(format!("invalid number \"{n}\"")))?;
                if !crate::repr::datum::finite_f64_in_range(n, v) {
                    return Err(Error::Eval(EvalError::OutOfRange(format!("number \"{n}\" is out of range"))));
                }
                Ok(Bound::typed(ScalarExpr::Literal(Datum::Float64(v), ScalarType::Float64), ScalarType::Float64, false))
            }
        }
    }

    /// The common type of several expressions (CASE, COALESCE...).
    pub(crate) fn unify(&mut self, items: &[Bound], what: &str) -> Result<ScalarType, Error> {
        let mut ty: Option<ScalarType> = None;
        for b in items {
            if let Some(t) = &b.ty {
                ty = Some(match ty {
                    None => t.clone(),
                    Some(cur) => common_type(&cur, t).ok_or_else(|| {
                        Error::DatatypeMismatch(format!("{what} types {} and {} cannot be matched", cur.name(), t.name()))
                    })?,
                });
            }
        }
        Ok(ty.unwrap_or(ScalarType::Text))
    }

    /// Binds two operands of a comparison, coerced to their common type.
    fn bind_comparable(&mut self, a: &Expr, b: &Expr, op: &str, ctx: &mut ExprCtx) -> Result<(ScalarExpr, ScalarExpr, bool), Error> {
        let mut l = self.bind_expr(a, ctx)?;
        let mut r = self.bind_expr(b, ctx)?;
        let nullable = l.nullable || r.nullable;
        // An unknown literal against a character(n) value is read as
        // character(n), whose trailing blanks are insignificant.
        if let (Some(t @ ScalarType::Char { .. }), None) = (&l.ty, &r.ty) {
            let t = t.clone();
            let n = r.nullable;
            r = Bound::typed(self.coerce(r, &t)?, t, n);
        } else if let (None, Some(t @ ScalarType::Char { .. })) = (&l.ty, &r.ty) {
            let t = t.clone();
            let n = l.nullable;
            l = Bound::typed(self.coerce(l, &t)?, t, n);
        }
        let ty = match (&l.ty, &r.ty) {
            (None, None) => ScalarType::Text,
            (Some(t), None) | (None, Some(t)) => common_type(t, t).unwrap_or(t.clone()),
            // Arrays compare only with arrays of their own type (`anyarray`).
            (Some(x), Some(y)) if (x.is_array() || y.is_array()) && !x.same_family(y) => {
                return Err(Error::UndefinedFunction(format!("operator does not exist: {} {op} {}", x.name(), y.name())));
            }
            (Some(x), Some(y)) => common_type(x, y).ok_or_else(|| {
                Error::UndefinedFunction(format!("operator does not exist: {} {op} {}", x.name(), y.name()))
            })?,
        };
        Ok((self.coerce(l, &ty)?, self.coerce(r, &ty)?, nullable))
    }

    fn bind_binary(&mut self, left: &Expr, op: &BinaryOperator, right: &Expr, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        use BinaryOperator as B;
        match op {
            B::And | B::Or => {
                let name = if *op == B::And { "AND" } else { "OR" };
                let l = self.bind_expr(left, ctx)?;
                let r = self.bind_expr(right, ctx)?;
                let nullable = l.nullable || r.nullable;
                let l = self.coerce_bool(l, name)?;
                let r = self.coerce_bool(r, name)?;
                let func = if *op == B::And { VariadicFunc::And } else { VariadicFunc::Or };
                Ok(Bound::typed(ScalarExpr::CallVariadic { func, exprs: vec![l, r] }, ScalarType::Bool, nullable))
            }
            B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq => {
                let func = match op {
                    B::Eq => BinaryFunc::Eq,
                    B::NotEq => BinaryFunc::NotEq,
                    B::Lt => BinaryFunc::Lt,
                    B::LtEq => BinaryFunc::Lte,
                    B::Gt => BinaryFunc::Gt,
                    _ => BinaryFunc::Gte,
                };
                let (l, r, nullable) = self.bind_comparable(left, right, &op.to_string(), ctx)?;
                Ok(Bound::typed(l.call_binary(r, func), ScalarType::Bool, nullable))
            }
            B::StringConcat
            | B::Plus
            | B::Minus
            | B::Multiply
            | B::Divide
            | B::Modulo
            | B::Arrow
            | B::LongArrow
            | B::AtArrow
            | B::ArrowAt
            | B::Question
            | B::PGOverlap
            | B::PGExp
            | B::BitwiseAnd
            | B::BitwiseOr
            | B::PGBitwiseXor
            | B::PGBitwiseShiftLeft
            | B::PGBitwiseShiftRight => {
                let l = self.bind_expr(left, ctx)?;
                let r = self.bind_expr(right, ctx)?;
                self.bind_operator(&op.to_string(), l, r)
            }
            B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch => {
                let l = self.bind_expr(left, ctx)?;
                let r = self.bind_expr(right, ctx)?;
                self.bind_operator(&op.to_string(), l, r)
            }
            // `OPERATOR(pg_catalog.~)`: the operator, which lives in pg_catalog.
            B::PGCustomBinaryOperator(parts) => {
                let (schema, name) = match parts.as_slice() {
                    [name] => (None, name.as_str()),
                    [schema, name] => (Some(schema.as_str()), name.as_str()),
                    _ => return Err(Error::Syntax(format!("improper qualified name: {op}"))),
                };
                if schema.is_some_and(|s| !s.eq_ignore_ascii_case("pg_catalog")) {
                    return Err(Error::InvalidSchemaName(format!("schema \"{}\" does not exist", schema.unwrap_or_default())));
                }
                let plain = match name {
                    "=" => Some(B::Eq),
                    "<>" | "!=" => Some(B::NotEq),
                    "<" => Some(B::Lt),
                    "<=" => Some(B::LtEq),
                    ">" => Some(B::Gt),
                    ">=" => Some(B::GtEq),
                    "~" => Some(B::PGRegexMatch),
                    "~*" => Some(B::PGRegexIMatch),
                    "!~" => Some(B::PGRegexNotMatch),
                    "!~*" => Some(B::PGRegexNotIMatch),
                    "~~" => Some(B::PGLikeMatch),
                    "~~*" => Some(B::PGILikeMatch),
                    "!~~" => Some(B::PGNotLikeMatch),
                    "!~~*" => Some(B::PGNotILikeMatch),
                    "||" => Some(B::StringConcat),
                    "+" => Some(B::Plus),
                    "-" => Some(B::Minus),
                    "*" => Some(B::Multiply),
                    "/" => Some(B::Divide),
                    "%" => Some(B::Modulo),
                    _ => None,
                };
                match plain {
                    Some(p) => self.bind_binary(left, &p, right, ctx),
                    None => {
                        let l = self.bind_expr(left, ctx)?;
                        let r = self.bind_expr(right, ctx)?;
                        self.bind_operator(name, l, r)
                    }
                }
            }
            B::PGLikeMatch | B::PGILikeMatch | B::PGNotLikeMatch | B::PGNotILikeMatch => {
                let ci = matches!(op, B::PGILikeMatch | B::PGNotILikeMatch);
                let negated = matches!(op, B::PGNotLikeMatch | B::PGNotILikeMatch);
                self.bind_like(left, right, None, ci, negated, ctx)
            }
            other => Err(Error::FeatureNotSupported(format!("operator {other} is not supported yet"))),
        }
    }

    pub(crate) fn function_args(&mut self, f: &sqlparser::ast::Function) -> Result<(Vec<Expr>, bool, bool), Error> {
        match &f.args {
            FunctionArguments::None => Ok((vec![], false, false)),
            FunctionArguments::Subquery(_) => Err(Error::FeatureNotSupported("subqueries are not supported yet".into())),
            FunctionArguments::List(list) => {
                let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                let mut out = Vec::new();
                let mut star = false;
                for a in &list.args {
                    match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => out.push(e.clone()),
                        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                        other => return Err(Error::FeatureNotSupported(format!("function argument {other} is not supported"))),
                    }
                }
                Ok((out, distinct, star))
            }
        }
    }

    fn bind_function(&mut self, f: &sqlparser::ast::Function, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
        let name = name.trim_matches('"').to_string();
        if let (FunctionArguments::Subquery(q), "array") = (&f.args, name.as_str()) {
            return self.bind_array_subquery(q, ctx);
        }
        let (args, distinct, star) = self.function_args(f)?;
        if is_aggregate_name(&name) {
            return self.bind_aggregate(&name, f, &args, distinct, star, ctx);
        }
        let mut bound = Vec::new();
        for a in &args {
            bound.push(self.bind_expr(a, ctx)?);
        }
        let arity_err = || Error::UndefinedFunction(format!("function {name} with {} arguments does not exist", args.len()));
        match name.as_str() {
            "coalesce" | "greatest" | "least" => {
                if bound.is_empty() {
                    return Err(arity_err());
                }
                let ty = self.unify(&bound, &name.to_uppercase())?;
                let nullable = bound.iter().all(|b| b.nullable);
                let mut exprs = Vec::new();
                for b in bound {
                    exprs.push(self.coerce(b, &ty)?);
                }
                let func = match name.as_str() {
                    "coalesce" => VariadicFunc::Coalesce,
                    "greatest" => VariadicFunc::Greatest,
                    _ => VariadicFunc::Least,
                };
                Ok(Bound::typed(ScalarExpr::CallVariadic { func, exprs }, ty, nullable))
            }
            "nullif" => {
                if args.len() != 2 {
                    return Err(arity_err());
                }
                let (l, r, _) = self.bind_comparable(&args[0], &args[1], "=", ctx)?;
                let first = bound.into_iter().next().ok_or_else(arity_err)?;
                let ty = first.ty.clone().unwrap_or(ScalarType::Text);
                let value = self.coerce(first, &ty)?;
                let cond = l.call_binary(r, BinaryFunc::Eq);
                Ok(Bound::typed(
                    ScalarExpr::If { cond: Box::new(cond), then: Box::new(ScalarExpr::null(ty.clone())), els: Box::new(value) },
                    ty,
                    true,
                ))
            }
            _ => self.bind_builtin(&name, bound),
        }
    }

    fn bind_aggregate(
        &mut self,
        name: &str,
        f: &sqlparser::ast::Function,
        args: &[Expr],
        distinct: bool,
        star: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Bound, Error> {
        if ctx.grouping.is_none() {
            return Err(Error::Grouping(format!("aggregate functions are not allowed in {}", ctx.clause)));
        }
        if !f.within_group.is_empty() {
            return Err(Error::FeatureNotSupported(format!("{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP")));
        }
        let mut order_ast: Vec<&sqlparser::ast::OrderByExpr> = Vec::new();
        if let FunctionArguments::List(list) = &f.args {
            for c in &list.clauses {
                match c {
                    sqlparser::ast::FunctionArgumentClause::OrderBy(v) => order_ast.extend(v.iter()),
                    other => return Err(Error::FeatureNotSupported(format!("{other} in an aggregate call is not supported"))),
                }
            }
        }
        if args.iter().chain(order_ast.iter().map(|o| &o.expr)).any(contains_aggregate) {
            return Err(Error::Grouping("aggregate function calls cannot be nested".into()));
        }
        if f.filter.as_deref().is_some_and(contains_aggregate) {
            return Err(Error::Grouping("aggregate functions are not allowed in FILTER".into()));
        }
        let mut inner = ExprCtx::new(ctx.scope, "aggregate function calls");
        let no_such = |types: &[Option<ScalarType>]| {
            Error::UndefinedFunction(format!("function {name}({}) does not exist", type_list(types)))
        };
        let mut extra = Vec::new();
        let (expr, in_ty) = if star || (name == "count" && args.is_empty()) {
            if name != "count" {
                return Err(Error::UndefinedFunction(format!("function {name}(*) does not exist")));
            }
            (ScalarExpr::literal_true(), ColumnType::new(ScalarType::Bool, false))
        } else if name == "string_agg" {
            // string_agg(text, text): string values (and unknown literals)
            // are read as text.
            if args.len() != 2 {
                return Err(Error::UndefinedFunction(format!("function string_agg with {} arguments does not exist", args.len())));
            }
            let value = self.bind_expr(&args[0], &mut inner)?;
            let delim = self.bind_expr(&args[1], &mut inner)?;
            if [&value.ty, &delim.ty].iter().any(|t| t.as_ref().is_some_and(|t| !t.is_string())) {
                return Err(no_such(&[value.ty.clone(), delim.ty.clone()]));
            }
            let nullable = value.nullable;
            let value = self.coerce(value, &ScalarType::Text)?;
            extra.push(self.coerce(delim, &ScalarType::Text)?);
            (value, ColumnType::new(ScalarType::Text, nullable))
        } else if name == "array_agg" {
            // array_agg(anynonarray); its second input is the FILTER
            // condition (see `AggregateFunc::ArrayAgg`).
            if args.len() != 1 {
                return Err(Error::UndefinedFunction(format!("function array_agg with {} arguments does not exist", args.len())));
            }
            let b = self.bind_expr(&args[0], &mut inner)?;
            let t = match &b.ty {
                None => return Err(Error::AmbiguousFunction("function array_agg(unknown) is not unique".into())),
                Some(t) if t.is_array() => {
                    return Err(Error::FeatureNotSupported(
                        "array_agg of arrays is not supported (it would build a multidimensional array)".into(),
                    ));
                }
                Some(t) => t.clone(),
            };
            let nullable = b.nullable;
            extra.push(ScalarExpr::literal_true());
            (self.coerce(b, &t)?, ColumnType::new(t, nullable))
        } else {
            if args.len() != 1 {
                return Err(Error::UndefinedFunction(format!("function {name} with {} arguments does not exist", args.len())));
            }
            if matches!(name, "bool_and" | "bool_or" | "every") {
                // An unknown literal argument is read as boolean.
                let b = self.bind_expr(&args[0], &mut inner)?;
                if b.ty.as_ref().is_some_and(|t| *t != ScalarType::Bool) {
                    return Err(no_such(std::slice::from_ref(&b.ty)));
                }
                let nullable = b.nullable;
                (self.coerce(b, &ScalarType::Bool)?, ColumnType::new(ScalarType::Bool, nullable))
            } else {
                self.bind_scalar(&args[0], &mut inner)?
            }
        };
        let t = &in_ty.scalar;
        let variance = |sample: bool, stddev: bool| -> Result<AggregateFunc, Error> {
            if !t.is_number() {
                return Err(no_such(&[Some(t.clone())]));
            }
            Ok(AggregateFunc::Variance { sample, stddev, float: t.is_float() })
        };
        let func = match name {
            "count" => AggregateFunc::Count,
            "min" => AggregateFunc::Min,
            "max" => AggregateFunc::Max,
            "sum" => match t {
                ScalarType::Int16 | ScalarType::Int32 => AggregateFunc::SumInt,
                ScalarType::Int64 | ScalarType::Numeric { .. } => AggregateFunc::SumNumeric,
                ScalarType::Float32 => AggregateFunc::SumFloat32,
                ScalarType::Float64 => AggregateFunc::SumFloat64,
                other => return Err(no_such(&[Some(other.clone())])),
            },
            "avg" => match t {
                t if t.is_integer() || t.is_numeric() => AggregateFunc::AvgNumeric,
                t if t.is_float() => AggregateFunc::AvgFloat,
                other => return Err(no_such(&[Some(other.clone())])),
            },
            "bool_and" | "every" => AggregateFunc::BoolAnd,
            "bool_or" => AggregateFunc::BoolOr,
            "string_agg" => AggregateFunc::StringAgg,
            "array_agg" => AggregateFunc::ArrayAgg,
            "stddev" | "stddev_samp" => variance(true, true)?,
            "stddev_pop" => variance(false, true)?,
            "variance" | "var_samp" => variance(true, false)?,
            "var_pop" => variance(false, false)?,
            other => return Err(Error::UndefinedFunction(format!("function {other} does not exist"))),
        };
        let arg = expr.clone();
        // FILTER (WHERE c): the argument is NULL where c is not TRUE, and
        // every aggregate ignores NULLs.
        let expr = match &f.filter {
            Some(cond) => {
                let mut fctx = ExprCtx::new(ctx.scope, "FILTER");
                let b = self.bind_expr(cond, &mut fctx)?;
                let cond = self.coerce_bool(b, "FILTER")?;
                if func == AggregateFunc::ArrayAgg {
                    // NULL values are kept: the condition selects rows.
                    extra[0] = cond;
                    expr
                } else {
                    ScalarExpr::If { cond: Box::new(cond), then: Box::new(expr), els: Box::new(ScalarExpr::null(t.clone())) }
                }
            }
            None => expr,
        };
        // ORDER BY inside the call matters only to order-sensitive
        // aggregates; with DISTINCT its keys must be arguments (Postgres).
        let mut order_by = Vec::new();
        for o in &order_ast {
            let desc = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!desc);
            let (key, _) = self.bind_scalar(&o.expr, &mut inner)?;
            if distinct && key != arg && !extra.contains(&key) {
                return Err(Error::InvalidColumnReference(
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list".into(),
                ));
            }
            order_by.push(crate::expr::agg::AggregateOrder { expr: key, desc, nulls_last });
        }
        if !func.order_sensitive() {
            order_by.clear();
        }
        let out_ty = ColumnType::new(func.output_type(t), func.nullable());
        let agg = AggregateExpr { func, expr, args: extra, order_by, distinct };
        let g = ctx.grouping.as_mut().expect("checked above");
        let pos = match g.aggregates.iter().position(|a| *a == agg) {
            Some(p) => p,
            None => {
                g.aggregates.push(agg);
                g.agg_types.push(out_ty.clone());
                g.aggregates.len() - 1
            }
        };
        let col = g.keys.len() + pos;
        Ok(Bound::typed(ScalarExpr::Column(col), out_ty.scalar, out_ty.nullable))
    }
}

/// The host for a subquery in this context, or the error Postgres gives
/// where none is allowed.
fn subquery_host<'b>(ctx: &'b mut ExprCtx) -> Result<&'b mut Host, Error> {
    let clause = ctx.clause;
    ctx.host.as_deref_mut().ok_or_else(|| Error::FeatureNotSupported(format!("subqueries in {clause} are not supported yet")))
}

/// Whether an expression contains an aggregate call (outside subqueries).
pub fn contains_aggregate(e: &Expr) -> bool {
    contains_call(e, |f| {
        let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
        f.over.is_none() && is_aggregate_name(&name)
    })
}

/// Whether an expression contains a window function call (outside
/// subqueries).
pub fn contains_window(e: &Expr) -> bool {
    contains_call(e, |f| f.over.is_some())
}

/// Whether an expression contains a function call that `pred` accepts
/// (outside subqueries).
fn contains_call(e: &Expr, pred: impl Fn(&sqlparser::ast::Function) -> bool) -> bool {
    struct Finder<P> {
        depth: usize,
        found: bool,
        pred: P,
    }
    impl<P: Fn(&sqlparser::ast::Function) -> bool> sqlparser::ast::Visitor for Finder<P> {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, x: &Expr) -> std::ops::ControlFlow<()> {
            if let Expr::Function(f) = x {
                if self.depth == 0 && (self.pred)(f) {
                    self.found = true;
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut f = Finder { depth: 0, found: false, pred };
    let _ = sqlparser::ast::Visit::visit(e, &mut f);
    f.found
}
