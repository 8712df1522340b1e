//! Binding what clients call to learn about the session and the catalog:
//! `version()`, `current_schema()`, `current_setting()`, the privilege
//! functions, `format_type`, `pg_get_*`, the `*_description` functions,
//! and the conversions between names and the OID alias types
//! (`'t'::regclass`, `oid::regtype::text`).
//!
//! Session values are constants of the statement (its session does not
//! change while it runs); catalog functions read the statement's snapshot
//! of the catalog (`expr::func::catalog`), the same state its `pg_catalog`
//! relations show.
//!
//! Owns: which of these functions exist and how they bind. Must not: build
//! the snapshot (the coordinator does) or evaluate anything but constants.

use crate::expr::func::catalog::{CatalogFunc, PrivilegeObject, SizeKind, SnapshotRef};
use crate::expr::{ScalarExpr, UnaryFunc, VariadicFunc};
use crate::repr::{Datum, Error, RegKind, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::expr::Bound;

/// The version string `version()` returns: Postgres 15's shape, so that
/// clients that parse it (SQLAlchemy, pgjdbc) read 15.
pub fn version_string() -> String {
    format!(
        "PostgreSQL 15.0 (ripple {}) on {}-unknown-linux-gnu, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

fn text(s: impl Into<String>) -> Bound {
    Bound::typed_pub(ScalarExpr::Literal(Datum::Text(s.into()), ScalarType::Text), ScalarType::Text, false)
}

fn typed(d: Datum, t: ScalarType) -> Bound {
    let nullable = d.is_null();
    Bound::typed_pub(ScalarExpr::Literal(d, t.clone()), t, nullable)
}

impl Binder<'_> {
    fn catalog_call(&mut self, f: CatalogFunc, args: Vec<Bound>, types: &[ScalarType]) -> Result<Bound, Error> {
        let nullable = args.iter().any(|b| b.nullable) || f.may_return_null();
        let mut exprs = Vec::with_capacity(args.len());
        for (b, t) in args.into_iter().zip(types) {
            exprs.push(self.coerce(b, t)?);
        }
        let snap = SnapshotRef(self.catalog.snapshot());
        let ty = f.output_type();
        Ok(Bound::typed_pub(ScalarExpr::CallVariadic { func: VariadicFunc::Catalog(f, snap), exprs }, ty, nullable))
    }

    /// Binds a session or catalog function; gives the arguments back if
    /// `name` is not one.
    pub(crate) fn bind_catalog_function(&mut self, name: &str, args: Vec<Bound>) -> Result<Result<Bound, Error>, Vec<Bound>> {
        let bound = self.bind_catalog_function_inner(name, args)?;
        // Every function here reads the session or the catalog, except the
        // quote_* ones, which are pure and allowed in views.
        if !name.starts_with("quote_") {
            self.catalog.note_catalog_read();
        }
        Ok(bound)
    }

    fn bind_catalog_function_inner(&mut self, name: &str, args: Vec<Bound>) -> Result<Result<Bound, Error>, Vec<Bound>> {
        let session = self.catalog.session().clone();
        let n = args.len();
        let oid = ScalarType::Oid;
        let int = ScalarType::Int32;
        Ok(match (name, n) {
            ("version", 0) => Ok(text(version_string())),
            ("current_database" | "current_catalog", 0) => Ok(typed(Datum::Text(session.database), ScalarType::Name)),
            ("current_user" | "user" | "current_role", 0) => Ok(typed(Datum::Text(session.current_user()), ScalarType::Name)),
            ("session_user" | "getpgusername", 0) => Ok(typed(Datum::Text(session.user), ScalarType::Name)),
            ("current_schema", 0) => {
                let first = self.catalog.creation_schema();
                Ok(typed(first.map(Datum::Text).unwrap_or(Datum::Null), ScalarType::Name))
            }
            ("current_schemas", 1) => (|| {
                let implicit = match self.coerce(args.into_iter().next().expect("one argument"), &ScalarType::Bool)?.eval(&[]) {
                    Ok(Datum::Bool(b)) => b,
                    _ => return Err(Error::FeatureNotSupported("current_schemas needs a constant argument".into())),
                };
                let path = if implicit {
                    self.catalog.search_path()
                } else {
                    session.explicit_search_path(&|s| self.catalog.user_schema_exists(s))
                };
                let v = Datum::Array(path.into_iter().map(Datum::Text).collect());
                Ok(typed(v, ScalarType::Name.array_of()))
            })(),
            ("pg_backend_pid", 0) => Ok(typed(Datum::Int32(session.backend_pid), int)),
            ("txid_current", 0) => Ok(typed(Datum::Int64(i64::try_from(session.txid).unwrap_or(i64::MAX)), ScalarType::Int64)),
            ("pg_postmaster_start_time", 0) => Ok(typed(
                Datum::TimestampTz(session.server_started.unwrap_or_else(chrono::Utc::now)),
                ScalarType::TimestampTz { precision: None },
            )),
            ("current_setting", 1 | 2) => (|| {
                let mut it = args.into_iter();
                let setting = self.coerce(it.next().expect("an argument"), &ScalarType::Text)?;
                let missing_ok = match it.next() {
                    Some(b) => matches!(self.coerce(b, &ScalarType::Bool)?.eval(&[]), Ok(Datum::Bool(true))),
                    None => false,
                };
                let Ok(Datum::Text(key)) = setting.eval(&[]) else {
                    return Err(Error::FeatureNotSupported("current_setting needs a constant setting name".into()));
                };
                match session.settings.get(&key.to_lowercase()) {
                    Some(v) => Ok(text(v.clone())),
                    None if missing_ok => Ok(typed(Datum::Null, ScalarType::Text)),
                    None => Err(Error::UndefinedObject(format!("unrecognized configuration parameter \"{key}\""))),
                }
            })(),
            // `set_config(name, value, is_local)`: the change is made when
            // the statement succeeds (`Plan::Select::settings`).
            ("set_config", 3) => (|| {
                let mut consts = Vec::new();
                for (b, t) in args.into_iter().zip([ScalarType::Text, ScalarType::Text, ScalarType::Bool]) {
                    match self.coerce(b, &t)?.eval(&[]) {
                        Ok(d) => consts.push(d),
                        // Its change could not be made: an error if it is
                        // ever evaluated (not over no rows, as when pg_dump
                        // sets a setting ripple lacks from pg_settings).
                        Err(_) => {
                            let e = crate::repr::EvalError::FeatureNotSupported(
                                "set_config with arguments that are not constants is not supported".into(),
                            );
                            return Ok(Bound::typed_pub(ScalarExpr::Error(e), ScalarType::Text, false));
                        }
                    }
                }
                let (Datum::Text(key), value) = (&consts[0], &consts[1]) else {
                    return Err(Error::InvalidParameter("SET requires parameter name".into()));
                };
                let key = key.to_lowercase();
                if !session.settings.contains_key(&key) {
                    return Err(Error::UndefinedObject(format!("unrecognized configuration parameter \"{key}\"")));
                }
                let value = match value {
                    Datum::Text(v) => v.clone(),
                    _ => String::new(),
                };
                let local = matches!(consts[2], Datum::Bool(true));
                self.settings.push((key, value.clone(), local));
                Ok(text(value))
            })(),
            // Ripple takes no advisory locks; releasing all of them (what
            // connection pools send on release) has nothing to do.
            ("pg_advisory_unlock_all", 0) => Ok(typed(Datum::Null, ScalarType::Text)),
            // Privileges on tables (and their columns: ripple keeps them
            // per table), schemas and the database, from their ACLs.
            ("has_table_privilege" | "has_any_column_privilege", 2 | 3)
            | ("has_column_privilege", 3 | 4)
            | ("has_schema_privilege" | "has_database_privilege", 2 | 3) => {
                let what = match name {
                    "has_schema_privilege" => PrivilegeObject::Schema,
                    "has_database_privilege" => PrivilegeObject::Database,
                    _ => PrivilegeObject::Table,
                };
                // (role,) object, [column,] privileges: the column is only
                // checked to be given.
                let mut args = args;
                if name == "has_column_privilege" {
                    args.remove(args.len() - 2);
                }
                if args.len() == 2 {
                    args.insert(0, typed(Datum::Text(session.current_user()), ScalarType::Text));
                }
                let by_oid = |b: &Bound| matches!(b.ty, Some(ScalarType::Oid | ScalarType::Int32 | ScalarType::Int64 | ScalarType::Reg(_)));
                let types = [
                    if by_oid(&args[0]) { oid.clone() } else { ScalarType::Text },
                    if by_oid(&args[1]) { oid.clone() } else { ScalarType::Text },
                    ScalarType::Text,
                ];
                self.catalog_call(CatalogFunc::HasPrivilege(what), args, &types)
            }
            // PUBLIC may use every function, type, language and tablespace
            // ripple has, and it has no sequences or servers. (pg_has_role
            // stays true: ripple has no role membership to ask about.)
            (
                "has_function_privilege" | "has_sequence_privilege" | "has_type_privilege" | "has_tablespace_privilege"
                | "has_language_privilege" | "has_foreign_data_wrapper_privilege" | "has_server_privilege" | "pg_has_role",
                2..=4,
            ) => Ok(typed(Datum::Bool(true), ScalarType::Bool)),
            ("pg_encoding_to_char", 1) => (|| {
                let nullable = args[0].nullable;
                let e = self.coerce(args.into_iter().next().expect("an argument"), &int)?;
                let is_utf8 = e.call_binary(ScalarExpr::Literal(Datum::Int32(6), int.clone()), crate::expr::BinaryFunc::Eq);
                let x = ScalarExpr::If {
                    cond: Box::new(is_utf8),
                    then: Box::new(ScalarExpr::Literal(Datum::Text("UTF8".into()), ScalarType::Name)),
                    els: Box::new(ScalarExpr::Literal(Datum::Text(String::new()), ScalarType::Name)),
                };
                Ok(Bound::typed_pub(x, ScalarType::Name, nullable))
            })(),
            ("to_regclass" | "to_regtype" | "to_regproc" | "to_regprocedure" | "to_regnamespace" | "to_regrole", 1) => {
                let k = match name {
                    "to_regclass" => RegKind::Class,
                    "to_regtype" => RegKind::Type,
                    "to_regnamespace" => RegKind::Namespace,
                    "to_regrole" => RegKind::Role,
                    _ => RegKind::Proc,
                };
                self.catalog_call(CatalogFunc::ToReg(k), args, &[ScalarType::Text])
            }
            ("pg_get_userbyid", 1) => self.catalog_call(CatalogFunc::UserById, args, &[oid]),
            ("pg_table_is_visible", 1) => self.catalog_call(CatalogFunc::TableIsVisible, args, &[oid]),
            ("acldefault", 2) => self.catalog_call(CatalogFunc::AclDefault, args, &[ScalarType::PgChar, oid.clone()]),
            // A ripple server is never a standby.
            ("pg_is_in_recovery", 0) => Ok(typed(Datum::Bool(false), ScalarType::Bool)),
            ("pg_type_is_visible" | "pg_function_is_visible", 1) => Ok(typed(Datum::Bool(true), ScalarType::Bool)),
            ("pg_get_indexdef", 1) => self.catalog_call(CatalogFunc::IndexDef, args, &[oid]),
            ("pg_get_indexdef", 3) => self.catalog_call(CatalogFunc::IndexDef, args, &[oid, int, ScalarType::Bool]),
            ("pg_get_constraintdef", 1) => self.catalog_call(CatalogFunc::ConstraintDef, args, &[oid]),
            ("pg_get_constraintdef", 2) => self.catalog_call(CatalogFunc::ConstraintDef, args, &[oid, ScalarType::Bool]),
            ("pg_get_viewdef", 1) => self.catalog_call(CatalogFunc::ViewDef, args, &[oid]),
            ("pg_get_viewdef", 2) => self.catalog_call(CatalogFunc::ViewDef, args, &[oid, ScalarType::Bool]),
            ("obj_description", 1) => self.catalog_call(CatalogFunc::ObjDescription, args, &[oid]),
            ("obj_description", 2) => self.catalog_call(CatalogFunc::ObjDescription, args, &[oid, ScalarType::Name]),
            ("col_description", 2) => self.catalog_call(CatalogFunc::ColDescription, args, &[oid, int]),
            ("shobj_description", 2) => self.catalog_call(CatalogFunc::ShobjDescription, args, &[oid, ScalarType::Name]),
            ("format_type", 2) => self.catalog_call(CatalogFunc::FormatType, args, &[oid, int]),
            // `pg_attrdef.adbin` holds the default's text, so the
            // expression is its own deparsed form.
            ("pg_get_expr", 2 | 3) => (|| {
                let nullable = args[0].nullable;
                let e = self.coerce(args.into_iter().next().expect("an argument"), &ScalarType::Text)?;
                Ok(Bound::typed_pub(e, ScalarType::Text, nullable))
            })(),
            // pg_proc lists no functions yet, and these are NULL for an OID
            // that is not a function, as in Postgres.
            ("pg_get_function_result" | "pg_get_function_arguments" | "pg_get_function_identity_arguments", 1) => {
                Ok(typed(Datum::Null, ScalarType::Text))
            }
            // Ripple has no extended statistics objects: NULL, as for any
            // OID that is not one.
            ("pg_get_statisticsobjdef_columns", 1) => Ok(typed(Datum::Null, ScalarType::Text)),
            // pg_rewrite and pg_trigger are empty: NULL, as for any OID that
            // is not a rule or trigger.
            ("pg_get_ruledef" | "pg_get_triggerdef", 1 | 2) => Ok(typed(Datum::Null, ScalarType::Text)),
            // Ripple has no sequences.
            ("pg_get_serial_sequence", 2) => Ok(typed(Datum::Null, ScalarType::Text)),
            ("pg_collation_is_visible" | "pg_opclass_is_visible" | "pg_operator_is_visible", 1) => {
                Ok(typed(Datum::Bool(true), ScalarType::Bool))
            }
            // Logical replication does not exist in ripple.
            ("pg_relation_is_publishable", 1) => Ok(typed(Datum::Bool(false), ScalarType::Bool)),
            ("quote_ident", 1) => self.unary_text(args, UnaryFunc::QuoteIdent),
            ("pg_size_pretty", 1) => (|| {
                let b = args.into_iter().next().ok_or_else(|| Error::Internal("missing argument".into()))?;
                let nullable = b.nullable;
                let x = self.coerce(b, &ScalarType::Int64)?;
                Ok(Bound::typed_pub(x.call_unary(UnaryFunc::SizePretty), ScalarType::Text, nullable))
            })(),
            ("pg_relation_size" | "pg_table_size", 1 | 2) => self.size_call(SizeKind::Relation, args),
            ("pg_indexes_size", 1) => self.size_call(SizeKind::Indexes, args),
            ("pg_total_relation_size", 1) => self.size_call(SizeKind::Total, args),
            ("quote_literal", 1) => self.unary_text(args, UnaryFunc::QuoteLiteral),
            ("quote_nullable", 1) => self.unary_text(args, UnaryFunc::QuoteNullable),
            _ => return Err(args),
        })
    }

    /// A size function: the bytes are measured for the statement once it
    /// is bound (`SqlCatalog::note_sizes`).
    fn size_call(&mut self, kind: SizeKind, args: Vec<Bound>) -> Result<Bound, Error> {
        self.catalog.note_sizes();
        let types = [ScalarType::Reg(RegKind::Class), ScalarType::Text];
        self.catalog_call(CatalogFunc::Size(kind), args, &types[..2])
    }

    fn unary_text(&mut self, args: Vec<Bound>, f: UnaryFunc) -> Result<Bound, Error> {
        let b = args.into_iter().next().ok_or_else(|| Error::Internal("missing argument".into()))?;
        let nullable = b.nullable && f != UnaryFunc::QuoteNullable;
        // quote_literal(anyelement) quotes the value's text form.
        let ty = b.ty.clone().unwrap_or(ScalarType::Text);
        let x = self.coerce(b, &ty)?;
        let x = if ty.is_string() { x } else { x.call_unary(UnaryFunc::Cast { to: ScalarType::Text, explicit: true }) };
        Ok(Bound::typed_pub(x.call_unary(f), ScalarType::Text, nullable))
    }

    /// A string literal read as an OID alias type: resolved now, as
    /// Postgres resolves `'t'::regclass` when it parses the statement.
    pub(crate) fn reg_literal(&self, kind: RegKind, s: &str) -> Result<Datum, Error> {
        Ok(Datum::Int64(self.catalog.snapshot().reg_in(kind, s)?))
    }

    /// The conversion between a string type and an OID alias type, which
    /// needs the catalog; `None` for any other cast.
    pub(crate) fn reg_cast(&self, expr: ScalarExpr, from: &ScalarType, to: &ScalarType) -> Result<ScalarExpr, ScalarExpr> {
        // The vector types: printed with spaces; read as their arrays.
        if from.is_vector() && from != to {
            let converted = match to {
                t if t.is_string() => {
                    let text = expr.call_unary(UnaryFunc::VectorToText);
                    if *t == ScalarType::Text { text } else { text.call_unary(UnaryFunc::Cast { to: t.clone(), explicit: true }) }
                }
                ScalarType::Array(e) if Some(&**e) == from.element_type() => expr,
                _ => expr.call_unary(UnaryFunc::Cast { to: to.clone(), explicit: false }),
            };
            return Ok(converted);
        }
        let func = match (from, to) {
            (f, ScalarType::Reg(k)) if f.is_string() => CatalogFunc::RegIn(*k),
            (ScalarType::Reg(k), t) if t.is_string() => CatalogFunc::RegOut(*k),
            _ => return Err(expr),
        };
        let snap = SnapshotRef(self.catalog.snapshot());
        let call = ScalarExpr::CallVariadic { func: VariadicFunc::Catalog(func, snap), exprs: vec![expr] };
        Ok(match to {
            t if t.is_string() && *t != ScalarType::Text => call.call_unary(UnaryFunc::Cast { to: t.clone(), explicit: true }),
            _ => call,
        })
    }
}
