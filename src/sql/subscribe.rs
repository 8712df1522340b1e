//! Binding `SUBSCRIBE` (`parse_subscribe`): the relation or query it reads,
//! its options, and the times it starts and ends at.
//!
//! The output columns are Materialize's: `ripple_timestamp` (numeric),
//! `ripple_progressed` (boolean, only `WITH (PROGRESS)`), `ripple_diff`
//! (bigint), then the relation's columns. `AS OF` and `UP TO` take an
//! expression evaluated once: a number (a ripple timestamp, milliseconds
//! since the Unix epoch) or a `timestamp with time zone`.
//!
//! Owns: what a `SUBSCRIBE` statement means (`Plan::Subscribe`). Must not:
//! run it (`coord::subscribe`) or parse it.

use crate::expr::RelationExpr;
use crate::repr::{ColumnType, Datum, Error, RelationDesc, ScalarType, Timestamp};
use crate::sql::binder::{ident, Binder};
use crate::sql::copy::CopyOptions;
use crate::sql::expr::ExprCtx;
use crate::sql::parse_subscribe::{Output, Subscribe, Target};
use crate::sql::plan::Plan;
use crate::sql::scope::Scope;
use sqlparser::ast::Expr;

/// How a bound `SUBSCRIBE`'s rows reach the client.
#[derive(Clone, Debug, PartialEq)]
pub enum SubscribeOutput {
    Rows,
    Copy(CopyOptions),
    Cursor { name: String },
}

/// A bound `SUBSCRIBE`.
#[derive(Clone, Debug)]
pub struct SubscribePlan {
    /// The rows subscribed to.
    pub query: RelationExpr,
    /// The output's columns (the `ripple_` columns first).
    pub desc: RelationDesc,
    pub snapshot: bool,
    pub progress: bool,
    pub as_of: Option<Timestamp>,
    pub at_least: bool,
    pub up_to: Option<Timestamp>,
    pub output: SubscribeOutput,
    /// The statement, for `pg_cursors`.
    pub sql: String,
}

/// The output's columns: the `ripple_` columns, then `relation`'s.
pub fn output_desc(relation: &RelationDesc, progress: bool) -> RelationDesc {
    let mut names = vec!["ripple_timestamp".to_string()];
    let mut types = vec![ColumnType::new(ScalarType::Numeric { precision: None, scale: Some(0) }, false)];
    if progress {
        names.push("ripple_progressed".into());
        types.push(ColumnType::new(ScalarType::Bool, false));
    }
    names.push("ripple_diff".into());
    types.push(ColumnType::new(ScalarType::Int64, progress));
    for (n, t) in relation.names.iter().zip(&relation.types) {
        names.push(n.clone());
        // Progress rows have no values.
        let mut t = t.clone();
        t.nullable |= progress;
        types.push(t);
    }
    RelationDesc::new(names, types)
}

/// An interval given as text (`FETCH ... WITH (timeout = '1s')`, `RETAIN
/// HISTORY FOR '1h'`) as a duration; `what` names it in the error.
pub fn interval_duration(text: &str, what: &str) -> Result<std::time::Duration, Error> {
    let i = crate::repr::interval::Interval::parse(text, None)?;
    let micros = i128::from(i.months) * 30 * 86_400_000_000 + i128::from(i.days) * 86_400_000_000 + i128::from(i.micros);
    if micros < 0 {
        return Err(Error::InvalidParameter(format!("{what} must not be negative, not \"{text}\"")));
    }
    Ok(std::time::Duration::from_micros(u64::try_from(micros).unwrap_or(u64::MAX)))
}

/// A view's `retain_history` option (`RETAIN HISTORY FOR '1h'`, which the
/// parser reads as `retain_history = '1h'`), in milliseconds.
pub fn retain_history(options: &sqlparser::ast::CreateTableOptions) -> Result<Option<u64>, Error> {
    use sqlparser::ast::{CreateTableOptions, SqlOption, Value};
    let (CreateTableOptions::With(opts) | CreateTableOptions::Options(opts) | CreateTableOptions::Plain(opts) | CreateTableOptions::TableProperties(opts)) =
        options
    else {
        return Ok(None);
    };
    for o in opts {
        let SqlOption::KeyValue { key, value } = o else { continue };
        if !key.value.eq_ignore_ascii_case("retain_history") {
            continue;
        }
        let text = match value {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => s.clone(),
                _ => return Err(Error::InvalidParameter(format!("RETAIN HISTORY takes an interval in quotes, not {value}"))),
            },
            _ => return Err(Error::InvalidParameter(format!("RETAIN HISTORY takes an interval in quotes, not {value}"))),
        };
        let d = interval_duration(&text, "RETAIN HISTORY")?;
        return Ok(Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)));
    }
    Ok(None)
}

impl Binder<'_> {
    pub fn bind_subscribe(&mut self, sub: &Subscribe, output: &Output) -> Result<Plan, Error> {
        let sql = crate::sql::parse_subscribe::display(sub, output);
        let block = match &sub.target {
            Target::Query(q) => self.bind_query(q)?,
            Target::Name(name) => {
                let entry = self.resolve_object(name)?;
                if !matches!(entry.kind, crate::sql::ItemKind::Table | crate::sql::ItemKind::View | crate::sql::ItemKind::MaterializedView) {
                    return Err(Error::WrongObjectType(format!("\"{}\" is not a table, view or materialized view", entry.name)));
                }
                let q = crate::sql::parse_subscribe::select_all(name)?;
                self.bind_query(&q)?
            }
        };
        let relation = block.desc.clone();
        let query = block.into_relation();
        let (query, relation) = self.named_outputs(query, relation);
        let mut snapshot = true;
        let mut progress = false;
        for (name, value) in &sub.options {
            let on = match value {
                None => true,
                Some(v) => self.constant_bool(v, &name.value)?,
            };
            match ident(name).as_str() {
                "snapshot" => snapshot = on,
                "progress" => progress = on,
                other => {
                    return Err(Error::InvalidParameter(format!("unrecognized SUBSCRIBE option \"{other}\" (options: SNAPSHOT, PROGRESS)")));
                }
            }
        }
        let as_of = sub.as_of.as_ref().map(|e| self.subscribe_time(e, "AS OF")).transpose()?;
        let up_to = sub.up_to.as_ref().map(|e| self.subscribe_time(e, "UP TO")).transpose()?;
        let desc = output_desc(&relation, progress);
        let output = match output {
            Output::Rows => SubscribeOutput::Rows,
            Output::Copy { options, legacy } => {
                SubscribeOutput::Copy(crate::sql::copy::copy_to_options(options, legacy, &desc.names)?)
            }
            Output::Cursor { name } => SubscribeOutput::Cursor { name: name.clone() },
        };
        Ok(Plan::Subscribe(Box::new(SubscribePlan {
            query,
            desc,
            snapshot,
            progress,
            as_of,
            at_least: sub.at_least,
            up_to,
            output,
            sql,
        })))
    }

    /// `query AS OF t`.
    pub fn bind_as_of(&mut self, query: &sqlparser::ast::Query, as_of: &Expr) -> Result<Plan, Error> {
        let select = self.bind_statement(&sqlparser::ast::Statement::Query(Box::new(query.clone())))?;
        let as_of = self.subscribe_time(as_of, "AS OF")?;
        Ok(Plan::SelectAsOf { select: Box::new(select), as_of })
    }

    /// A boolean option's value (a constant).
    fn constant_bool(&mut self, e: &Expr, option: &str) -> Result<bool, Error> {
        let empty = Scope::default();
        let mut ctx = ExprCtx::new(&empty, "SUBSCRIBE option");
        let bound = self.bind_expr(e, &mut ctx)?;
        match self.coerce(bound, &ScalarType::Bool)?.eval(&[])? {
            Datum::Bool(b) => Ok(b),
            _ => Err(Error::InvalidParameter(format!("SUBSCRIBE option {option} requires a Boolean value"))),
        }
    }

    /// `AS OF` / `UP TO`: a ripple timestamp (milliseconds since the
    /// Unix epoch), given as a number or a `timestamp with time zone`.
    fn subscribe_time(&mut self, e: &Expr, clause: &'static str) -> Result<Timestamp, Error> {
        let empty = Scope::default();
        let mut ctx = ExprCtx::new(&empty, clause);
        let bound = self.bind_expr(e, &mut ctx)?;
        let value = match &bound.ty {
            Some(ScalarType::TimestampTz { .. }) | Some(ScalarType::Timestamp { .. }) => {
                let ts = self.coerce(bound, &ScalarType::TimestampTz { precision: None })?;
                match ts.eval(&[])? {
                    Datum::TimestampTz(t) => Some(i128::from(t.timestamp_millis())),
                    _ => None,
                }
            }
            _ => {
                let n = self.coerce(bound, &ScalarType::Numeric { precision: None, scale: None })?;
                match n.eval(&[])? {
                    Datum::Numeric(d) if d.fract().is_zero() => i128::try_from(d).ok(),
                    _ => None,
                }
            }
        };
        value
            .and_then(|v| Timestamp::try_from(v).ok())
            .ok_or_else(|| Error::InvalidParameter(format!("{clause} must be a non-negative whole number of milliseconds since the Unix epoch, or a timestamp with time zone")))
    }
}
