//! Set-returning functions: in FROM (`FROM generate_series(1, 3) g`,
//! `FROM t, unnest(t.tags) WITH ORDINALITY u(tag, n)`, implicitly LATERAL
//! as in Postgres) and as a whole select-list item (`SELECT unnest(tags)
//! FROM t`). Both become `RelationExpr::FlatMap` over the rows they are
//! called for, so they work in maintained views like any row-by-row
//! operator.
//!
//! Owns: which set-returning functions exist and how their calls bind.
//! Must not: evaluate them (`expr::func::table` does).

use crate::expr::func::table::TableFunc;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{Error, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::expr::Bound;
use crate::sql::types::common_type;
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments};

/// Whether `name` is a set-returning function.
pub fn is_table_function(name: &str) -> bool {
    matches!(
        name,
        "unnest"
            | "generate_series"
            | "regexp_split_to_table"
            | "jsonb_array_elements"
            | "jsonb_array_elements_text"
            | "jsonb_each"
            | "jsonb_each_text"
            | "jsonb_object_keys"
            | "pg_options_to_table"
            | "pg_get_keywords"
            | "pg_partition_ancestors"
            | "generate_subscripts"
            | "_pg_expandarray"
    )
}

/// The functions of the `information_schema` schema (helpers of its
/// views that clients call too).
const INFORMATION_SCHEMA_FUNCTIONS: &[&str] = &["_pg_expandarray"];

/// The plain arguments of a call written as an expression (`f(a, b)`).
pub fn call_args(f: &sqlparser::ast::Function) -> Result<Vec<Expr>, Error> {
    match &f.args {
        FunctionArguments::None => Ok(vec![]),
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                other => Err(Error::FeatureNotSupported(format!("argument {other} of a set-returning function"))),
            })
            .collect(),
        FunctionArguments::Subquery(_) => Err(Error::FeatureNotSupported("a subquery as a function argument".into())),
    }
}

/// The last part of a function name, lower-cased (`pg_catalog.unnest` →
/// `unnest`); a schema other than `pg_catalog` holds no functions.
pub fn function_name(name: &sqlparser::ast::ObjectName) -> Result<String, Error> {
    let parts: Vec<String> = name.0.iter().map(|p| p.to_string().trim_matches('"').to_lowercase()).collect();
    match parts.as_slice() {
        [n] => Ok(n.clone()),
        [s, n] if s == "pg_catalog" && !INFORMATION_SCHEMA_FUNCTIONS.contains(&n.as_str()) => Ok(n.clone()),
        [s, n] if s == "information_schema" && INFORMATION_SCHEMA_FUNCTIONS.contains(&n.as_str()) => Ok(n.clone()),
        _ => Err(Error::UndefinedFunction(format!("function {name} does not exist"))),
    }
}

impl Binder<'_> {
    /// Resolves a call of a set-returning function on bound arguments.
    pub(crate) fn bind_table_function(&mut self, name: &str, args: Vec<Bound>) -> Result<(TableFunc, Vec<ScalarExpr>), Error> {
        let types: Vec<Option<ScalarType>> = args.iter().map(|b| b.ty.clone()).collect();
        let not_found = || {
            let list: Vec<String> = types.iter().map(|t| crate::sql::types::type_name(t).to_string()).collect();
            Error::UndefinedFunction(format!("function {name}({}) does not exist", list.join(", ")))
        };
        let coerce_all = |b: &mut Self, args: Vec<Bound>, tys: &[ScalarType]| -> Result<Vec<ScalarExpr>, Error> {
            args.into_iter().zip(tys).map(|(a, t)| b.coerce(a, t)).collect()
        };
        match (name, args.len()) {
            // (The catalog's vector types are arrays of their elements.)
            ("unnest", 1) => match &types[0] {
                Some(t) if t.element_type().is_some() => {
                    let elem = t.element_type().cloned().unwrap_or(ScalarType::Text);
                    Ok((TableFunc::Unnest { elem: elem.clone() }, coerce_all(self, args, &[elem.array_of()])?))
                }
                // (PostgreSQL's unnest also takes tsvector and multiranges,
                // so an untyped literal matches several.)
                None => Err(Error::AmbiguousFunction("function unnest(unknown) is not unique".into())),
                Some(_) => Err(not_found()),
            },
            ("generate_series", 2 | 3) => {
                let bound_type = |t: &Option<ScalarType>| t.as_ref().map(|t| t.unconstrained());
                let ty = match (bound_type(&types[0]), bound_type(&types[1])) {
                    (None, None) => ScalarType::Int32,
                    (Some(a), None) | (None, Some(a)) => a,
                    (Some(a), Some(b)) => common_type(&a, &b).ok_or_else(not_found)?,
                };
                let ty = match ty {
                    ScalarType::Int16 | ScalarType::Int32 => ScalarType::Int32,
                    ScalarType::Int64 => ScalarType::Int64,
                    ScalarType::Numeric { .. } => ScalarType::Numeric { precision: None, scale: None },
                    t @ (ScalarType::Timestamp { .. } | ScalarType::TimestampTz { .. }) => t,
                    ScalarType::Date => ScalarType::TimestampTz { precision: None },
                    _ => return Err(not_found()),
                };
                let step = match &ty {
                    ScalarType::Timestamp { .. } | ScalarType::TimestampTz { .. } => {
                        if args.len() != 3 {
                            return Err(not_found());
                        }
                        ScalarType::Interval
                    }
                    t => t.clone(),
                };
                let tys = [ty.clone(), ty.clone(), step];
                let exprs = coerce_all(self, args, &tys)?;
                Ok((TableFunc::GenerateSeries { ty }, exprs))
            }
            ("regexp_split_to_table", 2) => {
                Ok((TableFunc::RegexpSplitToTable, coerce_all(self, args, &[ScalarType::Text, ScalarType::Text])?))
            }
            ("jsonb_array_elements" | "jsonb_array_elements_text", 1) => {
                let f = TableFunc::JsonbArrayElements { text: name.ends_with("_text") };
                Ok((f, coerce_all(self, args, &[ScalarType::Jsonb])?))
            }
            ("jsonb_each" | "jsonb_each_text", 1) => {
                let f = TableFunc::JsonbEach { text: name.ends_with("_text") };
                Ok((f, coerce_all(self, args, &[ScalarType::Jsonb])?))
            }
            // An array's subscripts start at 1, a catalog vector's at 0.
            ("generate_subscripts", 2 | 3) => match &types[0] {
                Some(t) if t.element_type().is_some() => {
                    let lower = if t.is_vector() { 0 } else { 1 };
                    let array = t.element_type().cloned().unwrap_or(ScalarType::Text).array_of();
                    let tys = [array, ScalarType::Int32, ScalarType::Bool];
                    Ok((TableFunc::GenerateSubscripts { lower }, coerce_all(self, args, &tys)?))
                }
                _ => Err(not_found()),
            },
            // An array, or a catalog vector (`int2vector`), which holds
            // its elements as an array does.
            ("_pg_expandarray", 1) => match &types[0] {
                Some(t) if t.element_type().is_some() => {
                    let elem = t.element_type().cloned().unwrap_or(ScalarType::Text);
                    let t = t.clone();
                    Ok((TableFunc::ExpandArray { elem }, coerce_all(self, args, &[t])?))
                }
                _ => Err(not_found()),
            },
            ("jsonb_object_keys", 1) => Ok((TableFunc::JsonbObjectKeys, coerce_all(self, args, &[ScalarType::Jsonb])?)),
            ("pg_get_keywords", 0) => Ok((TableFunc::Keywords, Vec::new())),
            ("pg_options_to_table", 1) => {
                Ok((TableFunc::OptionsToTable, coerce_all(self, args, &[ScalarType::Text.array_of()])?))
            }
            // Ripple has no partitioned tables: a relation's only ancestor
            // is itself.
            ("pg_partition_ancestors", 1) => {
                let t = ScalarType::Reg(crate::repr::RegKind::Class);
                let exprs = coerce_all(self, args, std::slice::from_ref(&t))?;
                let arr = ScalarExpr::CallVariadic { func: crate::expr::VariadicFunc::ArrayCreate, exprs };
                Ok((TableFunc::Unnest { elem: t }, vec![arr]))
            }
            _ => Err(not_found()),
        }
    }

    /// `input` with a set-returning function applied to each row.
    pub(crate) fn flat_map(input: RelationExpr, func: TableFunc, exprs: Vec<ScalarExpr>, with_ordinality: bool) -> RelationExpr {
        RelationExpr::FlatMap { input: Box::new(input), func, exprs, with_ordinality }
    }
}
