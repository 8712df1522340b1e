//! Binding the array forms of SQL with Postgres's typing rules:
//!
//! - `ARRAY[x, ...]`: the elements' common type (as for CASE), unknown
//!   literals read as it (text if all are unknown); `ARRAY[]` has no type
//!   until a cast gives it one (42P18 otherwise); nested arrays are refused
//!   (0A000: ripple's arrays have one dimension);
//! - subscripts `a[i]` and slices `a[lo:hi]`, subscripts converted to
//!   integer as on assignment (`a[1.6]` is `a[2]`);
//! - `x op ANY|ALL (array)`: `op` resolved between `x` and the element
//!   type, the array converted to the array of their common type;
//! - operators on arrays: `||` (array and array, or array and element,
//!   with the common type of the elements, Postgres's `anycompatible`), and
//!   `@>`, `<@`, `&&` between arrays of one type (`anyarray`); an unknown
//!   literal operand is read as the other operand's array type;
//! - the array functions (`cardinality`, `array_length`, `array_to_string`,
//!   `array_append`, `array_position`...);
//! - `ARRAY(subquery)`: a scalar subquery computing `array_agg` of the
//!   subquery's column in the subquery's order, `'{}'` when it has no rows.
//!   A plain `SELECT x FROM ... [WHERE] [ORDER BY k]` becomes `SELECT
//!   array_agg(x ORDER BY k) FROM ... [WHERE]` (so it may be correlated);
//!   any other subquery becomes `SELECT array_agg(c [ORDER BY c]) FROM
//!   (subquery) AS s(c)`, whose ORDER BY must then be on its column (0A000
//!   otherwise: array_agg without one orders by value).
//!
//! Owns: the typing of those forms. Evaluation is in `expr::func::arrays`;
//! `array_agg` is bound with the other aggregates (`sql::expr`).

use crate::expr::func::Comparison;
use crate::expr::{BinaryFunc, ScalarExpr, UnaryFunc, VariadicFunc};
use crate::repr::{Datum, Error, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::expr::{Bound, ExprCtx, Unknown};
use crate::sql::functions::type_list;
use crate::sql::types::{assignable, common_type, implicitly_castable, type_name};
use crate::sql::expr::{contains_aggregate, contains_window};
use sqlparser::ast::{
    AccessExpr, BinaryOperator, Expr, GroupByExpr, OrderByKind, OrderByOptions, OrderBySort, Query, SelectItem, SetExpr,
    Statement, Subscript, Value,
};

/// The error for an array that would have more than one dimension.
pub fn multidimensional() -> Error {
    Error::FeatureNotSupported("multidimensional arrays are not supported".into())
}

fn is_array(b: &Bound) -> bool {
    b.ty.as_ref().is_some_and(|t| t.is_array())
}

fn undefined_operator(op: &str, l: &Option<ScalarType>, r: &Option<ScalarType>) -> Error {
    Error::UndefinedFunction(format!("operator does not exist: {} {op} {}", type_name(l), type_name(r)))
}

fn polymorphic_unknown() -> Error {
    Error::DatatypeMismatch("could not determine polymorphic type because input has type unknown".into())
}

/// The comparison of `x op ANY|ALL (...)`.
pub fn comparison(op: &BinaryOperator) -> Option<Comparison> {
    Some(match op {
        BinaryOperator::Eq => Comparison::Eq,
        BinaryOperator::NotEq => Comparison::NotEq,
        BinaryOperator::Lt => Comparison::Lt,
        BinaryOperator::LtEq => Comparison::Lte,
        BinaryOperator::Gt => Comparison::Gt,
        BinaryOperator::GtEq => Comparison::Gte,
        _ => return None,
    })
}

impl Binder<'_> {
    /// `ARRAY[x, ...]`.
    pub(crate) fn bind_array_constructor(&mut self, elems: &[Expr], ctx: &mut ExprCtx) -> Result<Bound, Error> {
        if elems.is_empty() {
            return Ok(Bound {
                expr: ScalarExpr::Literal(Datum::Array(Vec::new()), ScalarType::Text.array_of()),
                ty: None,
                nullable: false,
                unknown: Some(Unknown::EmptyArray),
            });
        }
        let mut bound = Vec::with_capacity(elems.len());
        for e in elems {
            if matches!(e, Expr::Array(_)) {
                return Err(multidimensional());
            }
            let b = self.bind_expr(e, ctx)?;
            if is_array(&b) || matches!(b.unknown, Some(Unknown::EmptyArray)) {
                return Err(multidimensional());
            }
            bound.push(b);
        }
        let ty = self.unify(&bound, "ARRAY")?;
        let mut exprs = Vec::with_capacity(bound.len());
        for b in bound {
            exprs.push(self.coerce(b, &ty)?);
        }
        Ok(Bound::typed_pub(ScalarExpr::CallVariadic { func: VariadicFunc::ArrayCreate, exprs }, ty.array_of(), false))
    }

    /// A subscript or slice bound, as an integer.
    fn bind_subscript_value(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Result<(ScalarExpr, bool), Error> {
        let b = self.bind_expr(e, ctx)?;
        if let Some(t) = &b.ty {
            if !assignable(t, &ScalarType::Int32) || t.is_string() {
                return Err(Error::DatatypeMismatch("array subscript must have type integer".into()));
            }
        }
        let nullable = b.nullable;
        Ok((self.coerce(b, &ScalarType::Int32)?, nullable))
    }

    /// `root[i]`, `root[lo:hi]`, and chains of them.
    pub(crate) fn bind_subscripts(&mut self, root: &Expr, chain: &[AccessExpr], ctx: &mut ExprCtx) -> Result<Bound, Error> {
        // `t.col[i]`: sqlparser reads the qualified column as `t` with a
        // field access `.col`.
        let dots = chain.iter().take_while(|a| matches!(a, AccessExpr::Dot(Expr::Identifier(_)))).count();
        let qualifier = match root {
            Expr::Identifier(id) => Some(vec![id.clone()]),
            Expr::CompoundIdentifier(ids) => Some(ids.clone()),
            _ => None,
        };
        if let (true, Some(mut parts)) = (dots > 0, qualifier) {
            parts.extend(chain[..dots].iter().filter_map(|a| match a {
                AccessExpr::Dot(Expr::Identifier(id)) => Some(id.clone()),
                _ => None,
            }));
            return self.bind_subscripts(&Expr::CompoundIdentifier(parts), &chain[dots..], ctx);
        }
        let mut cur = self.bind_expr(root, ctx)?;
        for access in chain {
            // A `name` is a fixed array of characters: `typname[0]` is its
            // first character, as a "char".
            if let (Some(ScalarType::Name), AccessExpr::Subscript(Subscript::Index { index })) = (&cur.ty, access) {
                let (i, _) = self.bind_subscript_value(index, ctx)?;
                let one = ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32);
                let start = i.call_binary(one.clone(), BinaryFunc::Add);
                let exprs = vec![cur.expr, start, one];
                cur = Bound::typed_pub(ScalarExpr::CallVariadic { func: VariadicFunc::Substr, exprs }, ScalarType::PgChar, true);
                continue;
            }
            // The vector types are arrays whose subscripts start at 0.
            if let Some(v) = cur.ty.as_ref().filter(|t| t.is_vector()) {
                let elem = v.element_type().cloned().unwrap_or(ScalarType::Int16);
                cur = Bound::typed_pub(cur.expr, elem.array_of(), cur.nullable);
                let one = ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32);
                let shifted = |this: &mut Self, e: &Expr, ctx: &mut ExprCtx| -> Result<(ScalarExpr, bool), Error> {
                    let (i, n) = this.bind_subscript_value(e, ctx)?;
                    Ok((i.call_binary(one.clone(), BinaryFunc::Add), n))
                };
                cur = match access {
                    AccessExpr::Subscript(Subscript::Index { index }) => {
                        let (i, _) = shifted(self, index, ctx)?;
                        Bound::typed_pub(cur.expr.call_binary(i, BinaryFunc::ArrayIndex), elem, true)
                    }
                    AccessExpr::Subscript(Subscript::Slice { lower_bound, upper_bound, stride: None }) => {
                        let mut exprs = vec![cur.expr];
                        let mut nullable = cur.nullable;
                        for bound in [lower_bound, upper_bound].into_iter().flatten() {
                            let (x, n) = shifted(self, bound, ctx)?;
                            nullable |= n;
                            exprs.push(x);
                        }
                        let func = VariadicFunc::ArraySlice { lower: lower_bound.is_some(), upper: upper_bound.is_some() };
                        Bound::typed_pub(ScalarExpr::CallVariadic { func, exprs }, elem.array_of(), nullable)
                    }
                    AccessExpr::Subscript(Subscript::Slice { .. }) => {
                        return Err(Error::Syntax("syntax error at or near \":\"".into()));
                    }
                    AccessExpr::Dot(_) => {
                        return Err(Error::FeatureNotSupported("field selection is not supported".into()));
                    }
                };
                continue;
            }
            let ty = match &cur.ty {
                Some(t @ ScalarType::Array(_)) => t.clone(),
                other => {
                    return Err(Error::DatatypeMismatch(format!(
                        "cannot subscript type {} because it does not support subscripting",
                        type_name(other)
                    )));
                }
            };
            let array = cur.expr;
            cur = match access {
                AccessExpr::Subscript(Subscript::Index { index }) => {
                    let (i, _) = self.bind_subscript_value(index, ctx)?;
                    let elem = ty.element_type().cloned().unwrap_or(ScalarType::Text);
                    Bound::typed_pub(array.call_binary(i, BinaryFunc::ArrayIndex), elem, true)
                }
                AccessExpr::Subscript(Subscript::Slice { lower_bound, upper_bound, stride }) => {
                    if stride.is_some() {
                        return Err(Error::Syntax("syntax error at or near \":\"".into()));
                    }
                    let mut exprs = vec![array];
                    let mut nullable = cur.nullable;
                    for bound in [lower_bound, upper_bound].into_iter().flatten() {
                        let (x, n) = self.bind_subscript_value(bound, ctx)?;
                        nullable |= n;
                        exprs.push(x);
                    }
                    let func = VariadicFunc::ArraySlice { lower: lower_bound.is_some(), upper: upper_bound.is_some() };
                    Bound::typed_pub(ScalarExpr::CallVariadic { func, exprs }, ty, nullable)
                }
                AccessExpr::Dot(_) => {
                    return Err(Error::FeatureNotSupported("field selection is not supported".into()));
                }
            };
        }
        Ok(cur)
    }

    /// `left op ANY|ALL (right)` where `right` is an array expression.
    pub(crate) fn bind_any_all_array(
        &mut self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
        all: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Bound, Error> {
        let Some(cmp) = comparison(op) else {
            return Err(Error::FeatureNotSupported(format!("operator {op} with ANY/ALL is not supported yet")));
        };
        let l = self.bind_expr(left, ctx)?;
        let r = self.bind_expr(right, ctx)?;
        let elem = match &r.ty {
            Some(t @ (ScalarType::Array(_) | ScalarType::Int2Vector | ScalarType::OidVector)) => t.element_type().cloned(),
            Some(_) => {
                return Err(Error::WrongObjectType("op ANY/ALL (array) requires array on right side".into()));
            }
            None => None,
        };
        let ty = match (&l.ty, &elem) {
            (None, None) => ScalarType::Text,
            (Some(t), None) | (None, Some(t)) => common_type(t, t).unwrap_or_else(|| t.clone()),
            (Some(x), Some(y)) => common_type(x, y).ok_or_else(|| undefined_operator(cmp.symbol(), &l.ty, &elem))?,
        };
        let x = self.coerce(l, &ty)?;
        let a = self.coerce(r, &ty.array_of())?;
        let func = if all { BinaryFunc::AllElements(cmp) } else { BinaryFunc::AnyElement(cmp) };
        Ok(Bound::typed_pub(x.call_binary(a, func), ScalarType::Bool, true))
    }

    /// A binary operator with an array operand.
    pub(crate) fn bind_array_operator(&mut self, op: &str, l: Bound, r: Bound) -> Result<Bound, Error> {
        let undefined = undefined_operator(op, &l.ty, &r.ty);
        match op {
            "||" => match (&l.ty, &r.ty) {
                (Some(ScalarType::Array(_)), _) if !is_array(&r) && r.ty.is_some() => self.bind_append(l, r, undefined),
                (_, Some(ScalarType::Array(_))) if !is_array(&l) && l.ty.is_some() => self.bind_prepend(l, r, undefined),
                _ => self.bind_array_pair(l, r, BinaryFunc::ArrayCat, true, undefined),
            },
            "@>" | "<@" | "&&" => {
                let func = match op {
                    "@>" => BinaryFunc::ArrayContains,
                    "<@" => BinaryFunc::ArrayContainedBy,
                    _ => BinaryFunc::ArrayOverlap,
                };
                self.bind_array_pair(l, r, func, false, undefined)
            }
            _ => Err(undefined),
        }
    }

    /// Two array operands of one type (an unknown one read as the other's
    /// type); with `compatible`, arrays of different element types meet at
    /// their common type. `mismatch` is the error for other operands.
    fn bind_array_pair(&mut self, l: Bound, r: Bound, func: BinaryFunc, compatible: bool, mismatch: Error) -> Result<Bound, Error> {
        let ty = match (&l.ty, &r.ty) {
            (Some(a @ ScalarType::Array(_)), None) | (None, Some(a @ ScalarType::Array(_))) => a.clone(),
            (Some(a), Some(b)) if a.is_array() && b.is_array() && (compatible || a.same_family(b)) => {
                common_type(a, b).ok_or(mismatch)?
            }
            _ => return Err(mismatch),
        };
        let out = func.output_type(
            &crate::repr::ColumnType::new(ty.clone(), l.nullable),
            &crate::repr::ColumnType::new(ty.clone(), r.nullable),
        );
        let x = self.coerce(l, &ty)?;
        let y = self.coerce(r, &ty)?;
        Ok(Bound::typed_pub(x.call_binary(y, func), out.scalar, out.nullable))
    }

    /// The common element type of an array and an element (unknowns take
    /// the other's type).
    fn element_meet(&self, array: &Option<ScalarType>, elem: &Option<ScalarType>) -> Option<ScalarType> {
        let a = array.as_ref().and_then(|t| t.element_type());
        match (a, elem) {
            (Some(x), Some(y)) => common_type(x, y),
            (Some(x), None) => Some(x.clone()),
            (None, Some(y)) if !y.is_array() => Some(y.unconstrained()),
            _ => None,
        }
    }

    /// `array || element` (`array_append`).
    fn bind_append(&mut self, a: Bound, x: Bound, mismatch: Error) -> Result<Bound, Error> {
        let elem = self.element_meet(&a.ty, &x.ty).ok_or(mismatch)?;
        let arr = self.coerce(a, &elem.array_of())?;
        let x = self.coerce(x, &elem)?;
        Ok(Bound::typed_pub(arr.call_binary(x, BinaryFunc::ArrayAppend), elem.array_of(), false))
    }

    /// `element || array` (`array_prepend`).
    fn bind_prepend(&mut self, x: Bound, a: Bound, mismatch: Error) -> Result<Bound, Error> {
        let elem = self.element_meet(&a.ty, &x.ty).ok_or(mismatch)?;
        let x = self.coerce(x, &elem)?;
        let arr = self.coerce(a, &elem.array_of())?;
        Ok(Bound::typed_pub(x.call_binary(arr, BinaryFunc::ArrayPrepend), elem.array_of(), false))
    }

    /// The array functions, by name, on bound arguments.
    pub(crate) fn bind_array_function(&mut self, name: &str, mut args: Vec<Bound>) -> Result<Bound, Error> {
        let types: Vec<Option<ScalarType>> = args.iter().map(|b| b.ty.clone()).collect();
        let not_found = || Error::UndefinedFunction(format!("function {name}({}) does not exist", type_list(&types)));
        // The array argument must be an array (an unknown literal cannot
        // say of what).
        let array_pos = if name == "array_prepend" { 1 } else { 0 };
        // The vector types are their element's arrays here, whose
        // subscripts start at 0 (array_lower and array_upper say so).
        let vector = types.get(array_pos).and_then(|t| t.as_ref()).is_some_and(|t| t.is_vector());
        let array_ty = match (types.get(array_pos), args.get(array_pos)) {
            (Some(Some(t @ ScalarType::Array(_))), _) => t.clone(),
            (Some(Some(t)), _) if t.is_vector() => t.element_type().unwrap_or(t).array_of(),
            (Some(None), Some(b)) if self.is_unknown_literal(b) => return Err(polymorphic_unknown()),
            _ => return Err(not_found()),
        };
        let int_arg = |t: &Option<ScalarType>| t.as_ref().is_none_or(|t| implicitly_castable(t, &ScalarType::Int32) || *t == ScalarType::Int32);
        let text_arg = |t: &Option<ScalarType>| t.as_ref().is_none_or(|t| t.is_string());
        match (name, args.len()) {
            ("cardinality" | "array_ndims", 1) => {
                let a = args.remove(0);
                let nullable = a.nullable || name == "array_ndims";
                let f = if name == "cardinality" { UnaryFunc::Cardinality } else { UnaryFunc::ArrayNdims };
                let x = self.coerce(a, &array_ty)?;
                Ok(Bound::typed_pub(x.call_unary(f), ScalarType::Int32, nullable))
            }
            ("array_length" | "array_lower" | "array_upper", 2) if int_arg(&types[1]) => {
                let func = match name {
                    "array_length" => BinaryFunc::ArrayLength,
                    "array_lower" => BinaryFunc::ArrayLower,
                    _ => BinaryFunc::ArrayUpper,
                };
                let d = args.remove(1);
                let a = args.remove(0);
                let a = self.coerce(a, &array_ty)?;
                let d = self.coerce(d, &ScalarType::Int32)?;
                let mut x = a.call_binary(d, func);
                if vector && name != "array_length" {
                    x = x.call_binary(ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32), BinaryFunc::Sub);
                }
                Ok(Bound::typed_pub(x, ScalarType::Int32, true))
            }
            ("array_to_string", 2 | 3) if types[1..].iter().all(text_arg) => {
                let nullable = args[0].nullable || args[1].nullable;
                let mut exprs = Vec::with_capacity(args.len());
                for (i, b) in args.into_iter().enumerate() {
                    let t = if i == 0 { array_ty.clone() } else { ScalarType::Text };
                    exprs.push(self.coerce(b, &t)?);
                }
                let e = ScalarExpr::CallVariadic { func: VariadicFunc::ArrayToString, exprs };
                Ok(Bound::typed_pub(e, ScalarType::Text, nullable))
            }
            ("array_cat", 2) => {
                let r = args.remove(1);
                let l = args.remove(0);
                self.bind_array_pair(l, r, BinaryFunc::ArrayCat, true, not_found())
            }
            ("array_append", 2) => {
                let x = args.remove(1);
                let a = args.remove(0);
                self.bind_append(a, x, not_found())
            }
            ("array_prepend", 2) => {
                let a = args.remove(1);
                let x = args.remove(0);
                self.bind_prepend(x, a, not_found())
            }
            ("array_position" | "array_remove", 2) => {
                let x = args.remove(1);
                let a = args.remove(0);
                let elem = self.element_meet(&a.ty, &x.ty).ok_or_else(not_found)?;
                let nullable = a.nullable || name == "array_position";
                let arr = self.coerce(a, &elem.array_of())?;
                let x = self.coerce(x, &elem)?;
                let (func, ty) = match name {
                    "array_position" => (BinaryFunc::ArrayPosition, ScalarType::Int32),
                    _ => (BinaryFunc::ArrayRemove, elem.array_of()),
                };
                Ok(Bound::typed_pub(arr.call_binary(x, func), ty, nullable))
            }
            ("array_replace", 3) => {
                let to = args.remove(2);
                let from = args.remove(1);
                let a = args.remove(0);
                let elem = self.element_meet(&a.ty, &from.ty).and_then(|e| self.element_meet(&Some(e.array_of()), &to.ty));
                let elem = elem.ok_or_else(not_found)?;
                let nullable = a.nullable;
                let exprs = vec![self.coerce(a, &elem.array_of())?, self.coerce(from, &elem)?, self.coerce(to, &elem)?];
                let e = ScalarExpr::CallVariadic { func: VariadicFunc::ArrayReplace, exprs };
                Ok(Bound::typed_pub(e, elem.array_of(), nullable))
            }
            _ => Err(not_found()),
        }
    }

    /// `ARRAY(subquery)`.
    pub(crate) fn bind_array_subquery(&mut self, q: &Query, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        let outer = match array_agg_in_place(q)? {
            Some(direct) => direct,
            None => array_agg_over_derived(q)?,
        };
        let b = self.bind_expr(&Expr::Subquery(Box::new(outer)), ctx)?;
        let ty = b.ty.clone().unwrap_or(ScalarType::Text.array_of());
        let empty = ScalarExpr::Literal(Datum::Array(Vec::new()), ty.clone());
        let e = ScalarExpr::CallVariadic { func: VariadicFunc::Coalesce, exprs: vec![b.expr, empty] };
        Ok(Bound::typed_pub(e, ty, false))
    }

    fn is_unknown_literal(&self, b: &Bound) -> bool {
        b.ty.is_none() && matches!(b.unknown, Some(Unknown::Text(_)) | Some(Unknown::Null) | Some(Unknown::EmptyArray))
    }
}

/// `key DESC NULLS FIRST` as written in an ORDER BY.
fn order_key(key: &str, o: &OrderByOptions) -> String {
    let desc = if matches!(o.sort, Some(OrderBySort::Desc)) { " DESC" } else { "" };
    let nulls = match o.nulls_first {
        Some(true) => " NULLS FIRST",
        Some(false) => " NULLS LAST",
        None => "",
    };
    format!("{key}{desc}{nulls}")
}

fn parse_query(sql: &str) -> Result<Query, Error> {
    match crate::sql::parse(sql)?.pop() {
        Some(crate::sql::Stmt::Sql(Statement::Query(q))) => Ok(*q),
        _ => Err(Error::Internal("ARRAY(subquery) rewrite".into())),
    }
}

fn one_column() -> Error {
    Error::Syntax("subquery must return only one column".into())
}

/// `SELECT array_agg(x ORDER BY keys) FROM ... WHERE ...` for a subquery
/// `SELECT x FROM ... WHERE ... ORDER BY keys` without grouping, DISTINCT,
/// LIMIT, aggregates or window functions; `None` for other subqueries.
fn array_agg_in_place(q: &Query) -> Result<Option<Query>, Error> {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return Ok(None);
    };
    let plain_group = matches!(&select.group_by, GroupByExpr::Expressions(v, m) if v.is_empty() && m.is_empty());
    let item = match select.projection.as_slice() {
        [SelectItem::UnnamedExpr(e)] => (e, None),
        [SelectItem::ExprWithAlias { expr, alias }] => (expr, Some(alias)),
        [SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)] => {
            return Err(Error::FeatureNotSupported("ARRAY(SELECT * ...) is not supported: name the column".into()));
        }
        _ => return Err(one_column()),
    };
    if !plain_group
        || select.having.is_some()
        || select.distinct.is_some()
        || q.limit_clause.is_some()
        || q.fetch.is_some()
        || q.with.is_some()
        || contains_aggregate(item.0)
        || contains_window(item.0)
        || contains_subquery(item.0)
    {
        return Ok(None);
    }
    let keys = match q.order_by.as_ref().map(|o| &o.kind) {
        None => vec![],
        Some(OrderByKind::Expressions(keys)) => keys.clone(),
        Some(OrderByKind::All(_)) => return Ok(None),
    };
    let (x, alias) = item;
    let mut order = Vec::new();
    for k in &keys {
        let refers_to_item = matches!(&k.expr, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1"))
            || matches!((&k.expr, alias), (Expr::Identifier(id), Some(a)) if id.value.eq_ignore_ascii_case(&a.value));
        let key = if refers_to_item { x.to_string() } else { k.expr.to_string() };
        order.push(order_key(&key, &k.options));
    }
    let order = if order.is_empty() { String::new() } else { format!(" ORDER BY {}", order.join(", ")) };
    let agg = parse_query(&format!("SELECT array_agg({x}{order})"))?;
    let SetExpr::Select(agg_select) = *agg.body else {
        return Err(Error::Internal("ARRAY(subquery) rewrite".into()));
    };
    let mut direct = q.clone();
    direct.order_by = None;
    if let SetExpr::Select(s) = direct.body.as_mut() {
        s.projection = agg_select.projection;
    }
    Ok(Some(direct))
}

/// Whether an expression holds a subquery (which an aggregate's argument
/// cannot: the item is computed in a derived table first).
pub(crate) fn contains_subquery(e: &Expr) -> bool {
    use std::ops::ControlFlow;
    sqlparser::ast::visit_expressions(e, |x| match x {
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => ControlFlow::Break(()),
        Expr::Function(f) if matches!(f.args, sqlparser::ast::FunctionArguments::Subquery(_)) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The number of columns a query body produces, where the text says.
fn width(body: &SetExpr) -> Option<usize> {
    match body {
        SetExpr::Select(s) => {
            let star = s.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
            (!star).then_some(s.projection.len())
        }
        SetExpr::SetOperation { left, .. } => width(left),
        SetExpr::Query(q) => width(&q.body),
        SetExpr::Values(v) => v.rows.first().map(|r| r.len()),
        _ => None,
    }
}

/// `SELECT array_agg(c [ORDER BY c]) FROM (q) AS s(c)`.
fn array_agg_over_derived(q: &Query) -> Result<Query, Error> {
    match width(&q.body) {
        Some(1) => {}
        Some(_) => return Err(one_column()),
        None => {
            return Err(Error::FeatureNotSupported("ARRAY(SELECT * ...) is not supported: name the column".into()));
        }
    }
    let column = "\"?array?\".\"?column?\"";
    let order = match q.order_by.as_ref().map(|o| &o.kind) {
        None => String::new(),
        Some(OrderByKind::Expressions(keys)) if keys.len() == 1 && orders_by_its_column(q, &keys[0].expr) => {
            format!(" ORDER BY {}", order_key(column, &keys[0].options))
        }
        Some(_) => {
            return Err(Error::FeatureNotSupported(
                "ARRAY(subquery) with an ORDER BY on anything but its column is not supported here".into(),
            ));
        }
    };
    parse_query(&format!("SELECT array_agg({column}{order}) FROM ({q}) AS \"?array?\"(\"?column?\")"))
}

/// Whether `key` (of the query's ORDER BY) names the query's one output
/// column: its position, its alias, its expression, or (after a set
/// operation) any plain name.
fn orders_by_its_column(q: &Query, key: &Expr) -> bool {
    if matches!(key, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1")) {
        return true;
    }
    let item = match q.body.as_ref() {
        SetExpr::Select(s) if s.projection.len() == 1 => &s.projection[0],
        SetExpr::SetOperation { .. } => return matches!(key, Expr::Identifier(_)),
        _ => return false,
    };
    let last = |e: &Expr| match e {
        Expr::Identifier(id) => Some(id.value.to_lowercase()),
        Expr::CompoundIdentifier(ids) => ids.last().map(|id| id.value.to_lowercase()),
        _ => None,
    };
    match item {
        SelectItem::UnnamedExpr(e) => e == key || (matches!(key, Expr::Identifier(_)) && last(e).is_some() && last(e) == last(key)),
        SelectItem::ExprWithAlias { expr, alias } => {
            expr == key || matches!(key, Expr::Identifier(id) if id.value.eq_ignore_ascii_case(&alias.value))
        }
        _ => false,
    }
}

/// Whether `name` is one of the array functions bound here.
pub fn is_array_function(name: &str) -> bool {
    matches!(
        name,
        "cardinality"
            | "array_ndims"
            | "array_length"
            | "array_lower"
            | "array_upper"
            | "array_to_string"
            | "array_cat"
            | "array_append"
            | "array_prepend"
            | "array_position"
            | "array_remove"
            | "array_replace"
    )
}
