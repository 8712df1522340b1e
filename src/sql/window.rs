//! Window function calls (`f(...) OVER (PARTITION BY ... ORDER BY ...
//! [frame])`) in the select list and ORDER BY of a query block.
//!
//! While an expression is bound, a window call becomes a placeholder
//! column and a `WindowCall` in the block's list; once the block's relation
//! is complete (after GROUP BY and HAVING, as in SQL), `apply_windows`
//! appends one `Window` column per call. Owns window-call binding; must not
//! evaluate window functions (that is `crate::expr::window`).

use crate::expr::window::{Frame, FrameBound, WindowFunc};
use crate::expr::relation::ColumnOrder;
use crate::expr::{AggregateFunc, RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Error, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::expr::{Bound, ExprCtx};
use crate::sql::subquery::{map, project};
use sqlparser::ast::{self, Expr, WindowFrameBound, WindowFrameUnits, WindowType};

/// Column numbers at and above this stand for window results until
/// `apply_windows` places them.
pub const WINDOW_COLUMN_BASE: usize = 1 << 41;

#[derive(Clone, Debug)]
enum Kind {
    RowNumber,
    Rank,
    DenseRank,
    Lag(i64),
    Lead(i64),
    FirstValue,
    LastValue,
    Aggregate(AggregateFunc),
}

/// One bound window call; expressions are over the block's relation.
#[derive(Clone, Debug)]
pub struct WindowCall {
    kind: Kind,
    args: Vec<ScalarExpr>,
    partition: Vec<ScalarExpr>,
    order: Vec<(ScalarExpr, bool, bool)>,
    frame: Frame,
}

impl WindowCall {
    /// Places pending-subquery columns the call's expressions refer to.
    pub fn remap_pending(&mut self, base: usize) {
        let exprs = self.args.iter_mut().chain(self.partition.iter_mut()).chain(self.order.iter_mut().map(|(x, _, _)| x));
        for x in exprs {
            crate::sql::subquery::Host::remap(x, base);
        }
    }
}

impl Binder<'_> {
    pub fn bind_window(&mut self, f: &ast::Function, ctx: &mut ExprCtx) -> Result<Bound, Error> {
        let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
        let Some(WindowType::WindowSpec(spec)) = &f.over else {
            return Err(Error::FeatureNotSupported("named windows are not supported yet".into()));
        };
        if ctx.windows.is_none() {
            return Err(Error::Windowing(format!("window functions are not allowed in {}", ctx.clause)));
        }
        let (args, distinct, star) = self.function_args(f)?;
        if distinct {
            return Err(Error::FeatureNotSupported("DISTINCT is not implemented for window functions".into()));
        }
        let clause = ctx.clause;
        // Arguments, partition and order are bound like other expressions
        // of the block (grouped, with subqueries), but may not nest windows.
        let mut inner = ExprCtx::new(ctx.scope, clause);
        inner.grouping = ctx.grouping.as_deref_mut();
        inner.host = ctx.host.as_deref_mut();
        let mut bound_args = Vec::new();
        let mut arg_types = Vec::new();
        for a in &args {
            let (x, t) = self.bind_scalar(a, &mut inner)?;
            bound_args.push(x);
            arg_types.push(t);
        }
        let mut partition = Vec::new();
        for p in &spec.partition_by {
            partition.push(self.bind_scalar(p, &mut inner)?.0);
        }
        let mut order = Vec::new();
        for o in &spec.order_by {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!desc);
            order.push((self.bind_scalar(&o.expr, &mut inner)?.0, desc, nulls_last));
        }
        let frame = match &spec.window_frame {
            None => Frame::default_frame(),
            Some(wf) => self.bind_frame(wf, &mut inner)?,
        };
        drop(inner);
        let int_arg = |b: &mut Self, i: usize, default: i64| -> Result<i64, Error> {
            match args.get(i) {
                None => Ok(default),
                Some(e) => {
                    let empty = crate::sql::scope::Scope::default();
                    let mut c = ExprCtx::new(&empty, "window function argument");
                    let x = b.bind_expr(e, &mut c)?;
                    let x = b.coerce(x, &ScalarType::Int64)?;
                    match x.eval(&[]) {
                        Ok(Datum::Int64(v)) => Ok(v),
                        _ => Err(Error::FeatureNotSupported(format!("the offset of {name} must be a constant integer"))),
                    }
                }
            }
        };
        let arity = |want: std::ops::RangeInclusive<usize>| -> Result<(), Error> {
            if want.contains(&args.len()) || (star && name == "count") {
                Ok(())
            } else {
                Err(Error::UndefinedFunction(format!("function {name} with {} arguments does not exist", args.len())))
            }
        };
        let (kind, typ, used_args) = match name.as_str() {
            "row_number" | "rank" | "dense_rank" => {
                arity(0..=0)?;
                let k = match name.as_str() {
                    "row_number" => Kind::RowNumber,
                    "rank" => Kind::Rank,
                    _ => Kind::DenseRank,
                };
                (k, ColumnType::new(ScalarType::Int64, false), vec![])
            }
            "lag" | "lead" => {
                arity(1..=3)?;
                let off = int_arg(self, 1, 1)?;
                let t = arg_types[0].clone();
                let mut used = vec![bound_args[0].clone()];
                if args.len() == 3 {
                    let d = self.cast_expr(bound_args[2].clone(), &arg_types[2].scalar, &t.scalar);
                    used.push(d);
                }
                let k = if name == "lag" { Kind::Lag(off) } else { Kind::Lead(off) };
                (k, ColumnType::new(t.scalar, true), used)
            }
            "first_value" | "last_value" => {
                arity(1..=1)?;
                let k = if name == "first_value" { Kind::FirstValue } else { Kind::LastValue };
                (k, ColumnType::new(arg_types[0].scalar.clone(), true), vec![bound_args[0].clone()])
            }
            "count" | "sum" | "min" | "max" | "avg" => {
                let (arg, t) = if star || (name == "count" && args.is_empty()) {
                    (ScalarExpr::literal_true(), ScalarType::Bool)
                } else {
                    arity(1..=1)?;
                    (bound_args[0].clone(), arg_types[0].scalar.clone())
                };
                let func = aggregate_for(&name, &t)?;
                let out = ColumnType::new(func.output_type(&t), func.nullable());
                (Kind::Aggregate(func), out, vec![arg])
            }
            other => {
                return Err(Error::UndefinedFunction(format!("window function {other} does not exist")));
            }
        };
        let call = WindowCall { kind, args: used_args, partition, order, frame };
        let windows = ctx.windows.as_deref_mut().expect("checked above");
        windows.push(call);
        let col = ScalarExpr::Column(WINDOW_COLUMN_BASE + windows.len() - 1);
        Ok(Bound { expr: col, ty: Some(typ.scalar), nullable: typ.nullable, unknown: None })
    }

    fn cast_expr(&mut self, e: ScalarExpr, from: &ScalarType, to: &ScalarType) -> ScalarExpr {
        if from.unconstrained() == to.unconstrained() {
            e
        } else {
            e.call_unary(crate::expr::UnaryFunc::Cast { to: to.clone(), explicit: false })
        }
    }

    fn bind_frame(&mut self, wf: &ast::WindowFrame, _ctx: &mut ExprCtx) -> Result<Frame, Error> {
        let rows = match wf.units {
            WindowFrameUnits::Rows => true,
            WindowFrameUnits::Range => false,
            WindowFrameUnits::Groups => return Err(Error::FeatureNotSupported("GROUPS frames are not supported yet".into())),
        };
        let mut bound = |b: &WindowFrameBound, start: bool| -> Result<FrameBound, Error> {
            let offset = |e: &Expr, s: &mut Self| -> Result<u64, Error> {
                if !rows {
                    return Err(Error::FeatureNotSupported("RANGE with an offset is not supported yet".into()));
                }
                let empty = crate::sql::scope::Scope::default();
                let mut c = ExprCtx::new(&empty, "window frame");
                let x = s.bind_expr(e, &mut c)?;
                let x = s.coerce(x, &ScalarType::Int64)?;
                match x.eval(&[]) {
                    Ok(Datum::Int64(v)) if v >= 0 => Ok(v as u64),
                    Ok(Datum::Int64(_)) => Err(Error::Windowing("frame starting offset must not be negative".into())),
                    _ => Err(Error::FeatureNotSupported("frame offsets must be constant integers".into())),
                }
            };
            Ok(match b {
                WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
                WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
                WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
                WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(e, self)?),
                WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(e, self)?),
            })
            .and_then(|fb| {
                if start && fb == FrameBound::UnboundedFollowing {
                    Err(Error::Windowing("frame start cannot be UNBOUNDED FOLLOWING".into()))
                } else if !start && fb == FrameBound::UnboundedPreceding {
                    Err(Error::Windowing("frame end cannot be UNBOUNDED PRECEDING".into()))
                } else {
                    Ok(fb)
                }
            })
        };
        let start = bound(&wf.start_bound, true)?;
        let end = match &wf.end_bound {
            Some(e) => bound(e, false)?,
            None => FrameBound::CurrentRow,
        };
        Ok(Frame { rows, start, end })
    }

    /// Appends one column per window call to `rel`; returns the relation
    /// and the position of the first window column.
    pub fn apply_windows(&mut self, mut rel: RelationExpr, calls: Vec<WindowCall>) -> (RelationExpr, usize) {
        let base = rel.arity();
        for call in calls {
            let cur = rel.arity();
            let mut scalars = Vec::new();
            let np = call.partition.len();
            let no = call.order.len();
            scalars.extend(call.partition.iter().cloned());
            scalars.extend(call.order.iter().map(|(x, _, _)| x.clone()));
            scalars.extend(call.args.iter().cloned());
            let partition: Vec<usize> = (cur..cur + np).collect();
            let order: Vec<ColumnOrder> = call
                .order
                .iter()
                .enumerate()
                .map(|(i, (_, desc, nulls_last))| ColumnOrder { column: cur + np + i, desc: *desc, nulls_last: *nulls_last })
                .collect();
            let a = cur + np + no;
            let func = match call.kind {
                Kind::RowNumber => WindowFunc::RowNumber,
                Kind::Rank => WindowFunc::Rank,
                Kind::DenseRank => WindowFunc::DenseRank,
                Kind::Lag(offset) => WindowFunc::Lag { col: a, offset, default: (call.args.len() > 1).then_some(a + 1) },
                Kind::Lead(offset) => WindowFunc::Lead { col: a, offset, default: (call.args.len() > 1).then_some(a + 1) },
                Kind::FirstValue => WindowFunc::FirstValue { col: a, frame: call.frame },
                Kind::LastValue => WindowFunc::LastValue { col: a, frame: call.frame },
                Kind::Aggregate(f) => WindowFunc::Aggregate { func: f, col: a, frame: call.frame },
            };
            let width = cur + scalars.len();
            rel = RelationExpr::Window { input: Box::new(map(rel, scalars)), partition, order, func };
            rel = project(rel, (0..cur).chain(std::iter::once(width)).collect());
        }
        (rel, base)
    }
}

/// Rewrites window placeholders to their final columns.
pub fn remap_windows(e: &mut ScalarExpr, base: usize) {
    e.visit_mut(&mut |x| {
        if let ScalarExpr::Column(c) = x {
            if *c >= WINDOW_COLUMN_BASE {
                *c = *c - WINDOW_COLUMN_BASE + base;
            }
        }
    });
}

/// The aggregate implementing `name` over `t` (as for GROUP BY).
fn aggregate_for(name: &str, t: &ScalarType) -> Result<AggregateFunc, Error> {
    Ok(match name {
        "count" => AggregateFunc::Count,
        "min" => AggregateFunc::Min,
        "max" => AggregateFunc::Max,
        "sum" => match t {
            ScalarType::Int16 | ScalarType::Int32 => AggregateFunc::SumInt,
            ScalarType::Int64 | ScalarType::Numeric { .. } => AggregateFunc::SumNumeric,
            ScalarType::Float32 => AggregateFunc::SumFloat32,
            ScalarType::Float64 => AggregateFunc::SumFloat64,
            other => return Err(Error::UndefinedFunction(format!("function sum({}) does not exist", other.name()))),
        },
        _ => match t {
            t if t.is_integer() || t.is_numeric() => AggregateFunc::AvgNumeric,
            t if t.is_float() => AggregateFunc::AvgFloat,
            other => return Err(Error::UndefinedFunction(format!("function avg({}) does not exist", other.name()))),
        },
    })
}
