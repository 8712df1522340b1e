//! The relations of `information_schema` (the SQL standard's catalog, which
//! many BI tools read instead of `pg_catalog`), with PostgreSQL's columns.
//! Materialized views are listed in `tables` (as `BASE TABLE`, since the
//! standard has no other type a tool would read rows from) and `views`
//! holds plain views only, as PostgreSQL lists them.

use super::{i4, null, t, Ctx, SystemRelation};
use crate::expr::func::catalog::format_type;
use crate::repr::{Datum, ScalarType};
use crate::sql::ItemKind;

const fn rel(name: &'static str, oid: i64, columns: &'static str, rows: fn(&Ctx) -> Vec<Vec<Datum>>) -> SystemRelation {
    SystemRelation { schema: "information_schema", name, oid, columns, rows }
}

fn none(_: &Ctx) -> Vec<Vec<Datum>> {
    Vec::new()
}

/// The columns of `table_privileges` and `role_table_grants`.
const TABLE_GRANT_COLUMNS: &str = "grantor name, grantee name, table_catalog name, table_schema name, table_name name, \
     privilege_type text, is_grantable text, with_hierarchy text";

pub static RELATIONS: &[SystemRelation] = &[
    rel(
        "table_privileges",
        13400,
        TABLE_GRANT_COLUMNS,
        table_privileges,
    ),
    rel(
        "role_table_grants",
        13401,
        TABLE_GRANT_COLUMNS,
        table_privileges,
    ),
    rel(
        "schemata",
        13300,
        "catalog_name name, schema_name name, schema_owner name, default_character_set_catalog name, \
         default_character_set_schema name, default_character_set_name name, sql_path text",
        schemata,
    ),
    rel(
        "tables",
        13310,
        "table_catalog name, table_schema name, table_name name, table_type text, \
         self_referencing_column_name name, reference_generation text, user_defined_type_catalog name, \
         user_defined_type_schema name, user_defined_type_name name, is_insertable_into text, \
         is_typed text, commit_action text",
        tables,
    ),
    rel(
        "columns",
        13320,
        "table_catalog name, table_schema name, table_name name, column_name name, ordinal_position int4, \
         column_default text, is_nullable text, data_type text, character_maximum_length int4, \
         character_octet_length int4, numeric_precision int4, numeric_precision_radix int4, \
         numeric_scale int4, datetime_precision int4, interval_type text, interval_precision int4, \
         character_set_catalog name, character_set_schema name, character_set_name name, \
         collation_catalog name, collation_schema name, collation_name name, domain_catalog name, \
         domain_schema name, domain_name name, udt_catalog name, udt_schema name, udt_name name, \
         scope_catalog name, scope_schema name, scope_name name, maximum_cardinality int4, \
         dtd_identifier name, is_self_referencing text, is_identity text, identity_generation text, \
         identity_start text, identity_increment text, identity_maximum text, identity_minimum text, \
         identity_cycle text, is_generated text, generation_expression text, is_updatable text",
        columns,
    ),
    rel(
        "views",
        13330,
        "table_catalog name, table_schema name, table_name name, view_definition text, check_option text, \
         is_updatable text, is_insertable_into text, is_trigger_updatable text, is_trigger_deletable text, \
         is_trigger_insertable_into text",
        views,
    ),
    rel(
        "table_constraints",
        13340,
        "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, \
         table_schema name, table_name name, constraint_type text, is_deferrable text, \
         initially_deferred text, enforced text, nulls_distinct text",
        table_constraints,
    ),
    rel(
        "key_column_usage",
        13350,
        "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, \
         table_schema name, table_name name, column_name name, ordinal_position int4, \
         position_in_unique_constraint int4",
        key_column_usage,
    ),
    rel(
        "referential_constraints",
        13360,
        "constraint_catalog name, constraint_schema name, constraint_name name, \
         unique_constraint_catalog name, unique_constraint_schema name, unique_constraint_name name, \
         match_option text, update_rule text, delete_rule text",
        none,
    ),
    rel(
        "routines",
        13370,
        "specific_catalog name, specific_schema name, specific_name name, routine_catalog name, \
         routine_schema name, routine_name name, routine_type text, data_type text, routine_body text, \
         routine_definition text, external_language text, is_deterministic text",
        none,
    ),
    rel(
        "parameters",
        13380,
        "specific_catalog name, specific_schema name, specific_name name, ordinal_position int4, \
         parameter_mode text, parameter_name name, data_type text",
        none,
    ),
];

/// The privileges on user relations, one row per privilege of an ACL
/// item, that the session's role granted or holds (directly or as PUBLIC);
/// a superuser sees them all. (`role_table_grants` shows the same rows:
/// ripple has no role membership to tell them apart.)
fn table_privileges(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let user = ctx.session.current_user();
    let me = ctx.catalog.roles.get(&user);
    let all = me.is_some_and(|r| r.superuser);
    let me = me.map_or(-1, |r| r.oid);
    let mut out = Vec::new();
    for item in ctx.catalog.items.values().filter(|i| i.kind != ItemKind::Index) {
        for a in ctx.catalog.relation_acl(item).0.iter() {
            if !(all || a.grantee == me || a.grantor == me || a.grantee == crate::repr::acl::PUBLIC) {
                continue;
            }
            let grantee = if a.grantee == crate::repr::acl::PUBLIC { "PUBLIC".to_string() } else { ctx.role_name(a.grantee) };
            // The owner may always grant what it holds.
            let grantable = |p| a.options.contains(p) || a.grantee == item.owner;
            for (name, p) in a.privs.each() {
                out.push(vec![
                    t(&ctx.role_name(a.grantor)),
                    t(&grantee),
                    t(&ctx.session.database),
                    t(&item.schema),
                    t(&item.name),
                    t(name),
                    t(if grantable(p) { "YES" } else { "NO" }),
                    t(if name == "SELECT" { "YES" } else { "NO" }),
                ]);
            }
        }
    }
    out
}

fn schemata(ctx: &Ctx) -> Vec<Vec<Datum>> {
    super::SYSTEM_SCHEMA_OIDS
        .iter()
        .map(|(s, _)| *s)
        .chain(ctx.catalog.schemas.keys().map(String::as_str))
        .map(|s| {
            let owner = ctx.catalog.schemas.get(s).map_or_else(|| ctx.owner().to_string(), |schema| ctx.role_name(schema.owner()));
            vec![t(&ctx.session.database), t(s), t(&owner), null(), null(), null(), null()]
        })
        .collect()
}

fn tables(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for r in super::relations() {
        out.push((r.schema, r.name.to_string(), "VIEW", false));
    }
    for item in ctx.catalog.items.values() {
        let schema = item.schema.as_str();
        match item.kind {
            ItemKind::Table => out.push((schema, item.name.clone(), "BASE TABLE", true)),
            ItemKind::MaterializedView => out.push((schema, item.name.clone(), "BASE TABLE", false)),
            ItemKind::View => out.push((schema, item.name.clone(), "VIEW", false)),
            ItemKind::Index => {}
        }
    }
    out.into_iter()
        .map(|(schema, name, ty, insertable)| {
            vec![
                t(&ctx.session.database),
                t(schema),
                t(name),
                t(ty),
                null(),
                null(),
                null(),
                null(),
                null(),
                t(if insertable { "YES" } else { "NO" }),
                t("NO"),
                null(),
            ]
        })
        .collect()
}

/// `data_type` as the standard names it (arrays are `ARRAY`).
fn data_type(s: &ScalarType) -> String {
    match s {
        ScalarType::Array(_) | ScalarType::Int2Vector | ScalarType::OidVector => "ARRAY".into(),
        ScalarType::Reg(_) | ScalarType::Oid | ScalarType::Name | ScalarType::PgChar => s.typname().to_string(),
        other => format_type(&other.unconstrained(), -1).replace("bpchar", "character"),
    }
}

fn columns(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for r in ctx.relations() {
        if r.kind == "i" {
            continue;
        }
        for (i, (name, ty)) in r.desc.iter().enumerate() {
            let s = &ty.scalar;
            let (char_len, precision, radix, scale, dt_precision) = match s {
                ScalarType::VarChar { max_len } => (max_len.map(|n| n as i64), None, None, None, None),
                ScalarType::Char { len } => (Some(*len as i64), None, None, None, None),
                ScalarType::Int16 => (None, Some(16), Some(2), Some(0), None),
                ScalarType::Int32 => (None, Some(32), Some(2), Some(0), None),
                ScalarType::Int64 => (None, Some(64), Some(2), Some(0), None),
                ScalarType::Float32 => (None, Some(24), Some(2), None, None),
                ScalarType::Float64 => (None, Some(53), Some(2), None, None),
                ScalarType::Numeric { precision, scale } => {
                    (None, precision.map(|p| p as i64), Some(10), scale.map(|s| s as i64), None)
                }
                ScalarType::Timestamp { precision } | ScalarType::TimestampTz { precision } => {
                    (None, None, None, None, Some(precision.unwrap_or(6) as i64))
                }
                ScalarType::Date => (None, None, None, None, Some(0)),
                _ => (None, None, None, None, None),
            };
            let opt = |v: Option<i64>| v.map(i4).unwrap_or(Datum::Null);
            let nullable = ty.nullable || r.item.is_none();
            let mut row = vec![
                t(&ctx.session.database),
                t(r.schema),
                t(&r.name),
                t(name),
                i4(i as i64 + 1),
                super::column_default(r.item, i).map_or_else(null, t),
                t(if nullable { "YES" } else { "NO" }),
                t(data_type(s)),
                opt(char_len),
                opt(char_len.map(|n| n * 4)),
                opt(precision),
                opt(radix),
                opt(scale),
                opt(dt_precision),
                null(),
                null(),
            ];
            row.extend([null(), null(), null(), null(), null(), null(), null(), null(), null()]);
            row.extend([t(&ctx.session.database), t("pg_catalog"), t(s.typname_full())]);
            row.extend([null(), null(), null(), null(), t((i + 1).to_string())]);
            row.extend([t("NO"), t("NO"), null(), null(), null(), null(), null(), null(), t("NEVER"), null()]);
            row.push(t(if r.kind == "r" && r.item.is_some() { "YES" } else { "NO" }));
            out.push(row);
        }
    }
    out
}

fn views(ctx: &Ctx) -> Vec<Vec<Datum>> {
    ctx.catalog
        .items
        .values()
        .filter(|i| i.kind == ItemKind::View)
        .map(|i| {
            vec![
                t(&ctx.session.database),
                t(&i.schema),
                t(&i.name),
                super::view_def(ctx.catalog, i, &ctx.search_path()).map(t).unwrap_or(null()),
                t("NONE"),
                t("NO"),
                t("NO"),
                t("NO"),
                t("NO"),
                t("NO"),
            ]
        })
        .collect()
}

fn table_constraints(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let db = &ctx.session.database;
    let mut out = Vec::new();
    for item in ctx.catalog.items.values().filter(|i| i.kind == ItemKind::Table) {
        for key in &item.keys {
            out.push(vec![
                t(db),
                t(&item.schema),
                t(&key.name),
                t(db),
                t(&item.schema),
                t(&item.name),
                t(if key.primary { "PRIMARY KEY" } else { "UNIQUE" }),
                t("NO"),
                t("NO"),
                t("YES"),
                if key.primary { null() } else { t("YES") },
            ]);
        }
    }
    out
}

fn key_column_usage(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let db = &ctx.session.database;
    let mut out = Vec::new();
    for item in ctx.catalog.items.values().filter(|i| i.kind == ItemKind::Table) {
        for key in &item.keys {
            for (pos, c) in key.columns.iter().enumerate() {
                out.push(vec![
                    t(db),
                    t(&item.schema),
                    t(&key.name),
                    t(db),
                    t(&item.schema),
                    t(&item.name),
                    t(&item.desc.names[*c]),
                    i4(pos as i64 + 1),
                    null(),
                ]);
            }
        }
    }
    out
}
