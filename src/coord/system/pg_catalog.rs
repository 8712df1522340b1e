//! The relations of `pg_catalog`, with PostgreSQL 15's columns (those a
//! client reads; `xid` columns are `int8`, `aclitem[]` and `pg_node_tree`
//! columns are text). Relations of objects ripple does not have (triggers,
//! rules, policies, sequences, enums...) exist and are empty, so that the
//! queries clients send about them find nothing instead of failing.

use super::{b, i2, i4, i8, index_def, item_oid, null, o, t, Ctx, SystemRelation, DATABASE_OID};
use super::{DATABASE_OWNER_OID, OWNER_OID, PG_CATALOG_OID, PUBLIC_OID, SYSTEM_SCHEMA_OIDS};
use crate::repr::types::builtin_types;
use crate::repr::{Datum, ScalarType};
use crate::expr::func::catalog::PG_CLASS_OID;
use crate::sql::ItemKind;

const fn rel(name: &'static str, oid: i64, columns: &'static str, rows: fn(&Ctx) -> Vec<Vec<Datum>>) -> SystemRelation {
    SystemRelation { schema: "pg_catalog", name, oid, columns, rows }
}

fn none(_: &Ctx) -> Vec<Vec<Datum>> {
    Vec::new()
}

pub static RELATIONS: &[SystemRelation] = &[
    rel("pg_namespace", 2615, "oid oid, nspname name, nspowner oid, nspacl text[]", namespaces),
    rel(
        "pg_class",
        1259,
        "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, \
         relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, \
         reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, \
         relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, \
         relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, \
         relispartition bool, relrewrite oid, relfrozenxid int8, relminmxid int8, relacl text[], \
         reloptions text[], relpartbound text",
        classes,
    ),
    rel(
        "pg_attribute",
        1249,
        "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, \
         attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, \
         attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, \
         attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, \
         attacl text[], attoptions text[], attfdwoptions text[], attmissingval text",
        attributes,
    ),
    rel("pg_attrdef", 2604, "oid oid, adrelid oid, adnum int2, adbin text", attrdefs),
    rel(
        "pg_type",
        1247,
        "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, \
         typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, \
         typsubscript regproc, typelem oid, typarray oid, typinput regproc, typoutput regproc, \
         typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, \
         typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, \
         typcollation oid, typdefaultbin text, typdefault text, typacl text[]",
        types,
    ),
    rel(
        "pg_index",
        2610,
        "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, \
         indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, \
         indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, \
         indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, \
         indexprs text, indpred text",
        indexes,
    ),
    rel(
        "pg_constraint",
        2606,
        "oid oid, conname name, connamespace oid, contype char, condeferrable bool, condeferred bool, \
         convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, \
         confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int4, \
         connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], \
         conffeqop oid[], confdelsetcols int2[], conexclop oid[], conbin text",
        constraints,
    ),
    rel("pg_description", 2609, "objoid oid, classoid oid, objsubid int4, description text", descriptions),
    rel("pg_shdescription", 2396, "objoid oid, classoid oid, description text", none),
    rel(
        "pg_proc",
        1255,
        "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, \
         prorows float4, provariadic oid, prosupport regproc, prokind char, prosecdef bool, \
         proleakproof bool, proisstrict bool, proretset bool, provolatile char, proparallel char, \
         pronargs int2, pronargdefaults int2, prorettype oid, proargtypes oidvector, proallargtypes oid[], \
         proargmodes char[], proargnames text[], proargdefaults text, protrftypes oid[], prosrc text, \
         probin text, prosqlbody text, proconfig text[], proacl text[]",
        none,
    ),
    rel(
        "pg_opclass",
        2616,
        "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, opcintype oid, \
         opcdefault bool, opckeytype oid",
        none,
    ),
    rel("pg_am", 2601, "oid oid, amname name, amhandler regproc, amtype char", access_methods),
    rel(
        "pg_database",
        1262,
        "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, \
         datallowconn bool, datconnlimit int4, datfrozenxid int8, datminmxid int8, dattablespace oid, \
         datcollate text, datctype text, daticulocale text, datcollversion text, datacl text[]",
        databases,
    ),
    rel(
        "pg_authid",
        1260,
        "oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, \
         rolcanlogin bool, rolreplication bool, rolbypassrls bool, rolconnlimit int4, rolpassword text, \
         rolvaliduntil timestamptz",
        authid,
    ),
    rel(
        "pg_roles",
        11615,
        "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, \
         rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, \
         rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid",
        roles,
    ),
    rel(
        "pg_user",
        11620,
        "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, usebypassrls bool, \
         passwd text, valuntil timestamptz, useconfig text[]",
        users,
    ),
    rel("pg_auth_members", 1261, "roleid oid, member oid, grantor oid, admin_option bool", none),
    rel(
        "pg_settings",
        11700,
        "name text, setting text, unit text, category text, short_desc text, extra_desc text, \
         context text, vartype text, source text, min_val text, max_val text, enumvals text[], \
         boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool",
        settings,
    ),
    rel(
        "pg_tables",
        11710,
        "schemaname name, tablename name, tableowner name, tablespace name, hasindexes bool, \
         hasrules bool, hastriggers bool, rowsecurity bool",
        tables,
    ),
    rel("pg_views", 11715, "schemaname name, viewname name, viewowner name, definition text", views),
    rel(
        "pg_matviews",
        11720,
        "schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes bool, \
         ispopulated bool, definition text",
        matviews,
    ),
    rel(
        "pg_indexes",
        11725,
        "schemaname name, tablename name, indexname name, tablespace name, indexdef text",
        index_list,
    ),
    rel(
        "pg_sequence",
        2224,
        "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, \
         seqcache int8, seqcycle bool",
        none,
    ),
    rel(
        "pg_depend",
        2608,
        "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, deptype char",
        dependencies,
    ),
    rel("pg_inherits", 2611, "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool", none),
    rel("pg_enum", 3501, "oid oid, enumtypid oid, enumsortorder float4, enumlabel name", none),
    rel(
        "pg_range",
        3541,
        "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, \
         rngcanonical regproc, rngsubdiff regproc",
        none,
    ),
    rel(
        "pg_collation",
        3456,
        "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, \
         collisdeterministic bool, collencoding int4, collcollate text, collctype text, \
         colliculocale text, collversion text",
        collations,
    ),
    rel(
        "pg_extension",
        3079,
        "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, extversion text, \
         extconfig oid[], extcondition text[]",
        |_| vec![super::ripple_catalog::extension()],
    ),
    rel("pg_tablespace", 1213, "oid oid, spcname name, spcowner oid, spcacl text[], spcoptions text[]", tablespaces),
    rel(
        "pg_trigger",
        2620,
        "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, \
         tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable bool, \
         tginitdeferred bool, tgnargs int2, tgattr int2vector, tgargs text, tgqual text, tgoldtable name, \
         tgnewtable name",
        none,
    ),
    rel(
        "pg_rewrite",
        2618,
        "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, \
         ev_qual text, ev_action text",
        none,
    ),
    rel(
        "pg_policy",
        3256,
        "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], \
         polqual text, polwithcheck text",
        none,
    ),
    rel(
        "pg_statistic_ext",
        3381,
        "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget int4, \
         stxkeys int2vector, stxkind char[], stxexprs text",
        none,
    ),
    rel(
        "pg_publication",
        6104,
        "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, pubupdate bool, \
         pubdelete bool, pubtruncate bool, pubviaroot bool",
        none,
    ),
    rel("pg_publication_rel", 6106, "oid oid, prpubid oid, prrelid oid, prqual text, prattrs int2vector", none),
    rel("pg_publication_namespace", 6237, "oid oid, pnpubid oid, pnnspid oid", none),
    rel("pg_foreign_table", 3118, "ftrelid oid, ftserver oid, ftoptions text[]", none),
    rel(
        "pg_partitioned_table",
        3350,
        "partrelid oid, partstrat char, partnatts int2, partdefid oid, partattrs int2vector, partclass oidvector, \
         partcollation oidvector, partexprs text",
        none,
    ),
    // Objects ripple does not have; pg_dump reads each of these.
    rel("pg_init_privs", 3394, "objoid oid, classoid oid, objsubid int4, privtype char, initprivs text[]", none),
    rel(
        "pg_language",
        2612,
        "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, lanplcallfoid oid, \
         laninline oid, lanvalidator oid, lanacl text[]",
        languages,
    ),
    rel(
        "pg_operator",
        2617,
        "oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char, oprcanmerge bool, \
         oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid, oprnegate oid, \
         oprcode regproc, oprrest regproc, oprjoin regproc",
        none,
    ),
    rel("pg_opfamily", 2753, "oid oid, opfmethod oid, opfname name, opfnamespace oid, opfowner oid", none),
    rel(
        "pg_amop",
        2602,
        "oid oid, amopfamily oid, amoplefttype oid, amoprighttype oid, amopstrategy int2, \
         amoppurpose char, amopopr oid, amopmethod oid, amopsortfamily oid",
        none,
    ),
    rel(
        "pg_amproc",
        2603,
        "oid oid, amprocfamily oid, amproclefttype oid, amprocrighttype oid, amprocnum int2, amproc regproc",
        none,
    ),
    rel(
        "pg_ts_parser",
        3601,
        "oid oid, prsname name, prsnamespace oid, prsstart regproc, prstoken regproc, prsend regproc, \
         prsheadline regproc, prslextype regproc",
        none,
    ),
    rel("pg_ts_template", 3764, "oid oid, tmplname name, tmplnamespace oid, tmplinit regproc, tmpllexize regproc", none),
    rel(
        "pg_ts_dict",
        3600,
        "oid oid, dictname name, dictnamespace oid, dictowner oid, dicttemplate oid, dictinitoption text",
        none,
    ),
    rel("pg_ts_config", 3602, "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid", none),
    rel(
        "pg_foreign_data_wrapper",
        2328,
        "oid oid, fdwname name, fdwowner oid, fdwhandler oid, fdwvalidator oid, fdwacl text[], fdwoptions text[]",
        none,
    ),
    rel(
        "pg_foreign_server",
        1417,
        "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, srvversion text, srvacl text[], \
         srvoptions text[]",
        none,
    ),
    rel("pg_default_acl", 826, "oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype char, defaclacl text[]", none),
    rel(
        "pg_conversion",
        2607,
        "oid oid, conname name, connamespace oid, conowner oid, conforencoding int4, contoencoding int4, \
         conproc regproc, condefault bool",
        none,
    ),
    rel("pg_cast", 2605, "oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char, castmethod char", none),
    rel("pg_transform", 3576, "oid oid, trftype oid, trflang oid, trffromsql regproc, trftosql regproc", none),
    rel(
        "pg_event_trigger",
        3466,
        "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, evtenabled char, evttags text[]",
        none,
    ),
    rel(
        "pg_subscription",
        6100,
        "oid oid, subdbid oid, subskiplsn text, subname name, subowner oid, subenabled bool, subbinary bool, \
         substream bool, subtwophasestate char, subdisableonerr bool, subconninfo text, subslotname name, \
         subsynccommit text, subpublications text[]",
        none,
    ),
    rel("pg_seclabel", 3596, "objoid oid, classoid oid, objsubid int4, provider text, label text", none),
    rel(
        "pg_seclabels",
        12090,
        "objoid oid, classoid oid, objsubid int4, objtype text, objnamespace oid, objname text, provider text, \
         label text",
        none,
    ),
    rel(
        "pg_stat_activity",
        11730,
        "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, \
         application_name text, client_addr text, client_hostname text, client_port int4, \
         backend_start timestamptz, xact_start timestamptz, query_start timestamptz, \
         state_change timestamptz, wait_event_type text, wait_event text, state text, backend_xid int8, \
         backend_xmin int8, query_id int8, query text, backend_type text",
        activity,
    ),
    rel(
        "pg_stat_user_tables",
        12103,
        "relid oid, schemaname name, relname name, seq_scan int8, seq_tup_read int8, idx_scan int8, \
         idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8, n_tup_hot_upd int8, \
         n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8, n_ins_since_vacuum int8, \
         last_vacuum timestamptz, last_autovacuum timestamptz, last_analyze timestamptz, \
         last_autoanalyze timestamptz, vacuum_count int8, autovacuum_count int8, analyze_count int8, \
         autoanalyze_count int8",
        user_table_stats,
    ),
    rel(
        "pg_stat_progress_copy",
        12290,
        "pid int4, datid oid, datname name, relid oid, command text, type text, bytes_processed int8, \
         bytes_total int8, tuples_processed int8, tuples_excluded int8",
        copy_progress,
    ),
    rel(
        "pg_cursors",
        12077,
        "name text, statement text, is_holdable bool, is_binary bool, is_scrollable bool, creation_time timestamptz",
        cursors,
    ),
];

fn namespaces(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out: Vec<Vec<Datum>> =
        SYSTEM_SCHEMA_OIDS.iter().map(|(name, oid)| vec![o(*oid), t(*name), o(OWNER_OID), null()]).collect();
    for (name, schema) in &ctx.catalog.schemas {
        // `public` as the database was made is owned by pg_database_owner
        // (PostgreSQL 15); a schema created later by the user.
        let acl = match (&schema.acl, schema.oid == PUBLIC_OID) {
            (Some(acl), _) => ctx.acl(acl),
            (None, true) => super::public_acl(),
            (None, false) => null(),
        };
        out.push(vec![o(schema.oid), t(name), o(schema.owner()), acl]);
    }
    out
}

fn classes(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let rels = ctx.relations();
    let has_index = |oid: i64| rels.iter().any(|r| r.index.as_ref().is_some_and(|ix| ix.on == oid));
    rels.iter()
        .map(|r| {
            let am = match r.kind {
                "r" | "m" => 2,
                "i" => 403,
                _ => 0,
            };
            vec![
                o(r.oid),
                t(&r.name),
                o(r.schema_oid),
                o(0),
                o(0),
                o(r.item.map_or(OWNER_OID, |i| i.owner)),
                o(am),
                o(if r.kind == "v" { 0 } else { r.oid }),
                o(0),
                i4(0),
                Datum::Float32(-1.0),
                i4(0),
                o(0),
                b(has_index(r.oid)),
                b(false),
                t("p"),
                t(r.kind),
                i2(r.desc.arity() as i64),
                i2(0),
                b(r.kind == "v"),
                b(false),
                b(false),
                b(false),
                b(false),
                b(true),
                t(if r.kind == "i" { "n" } else { "d" }),
                b(false),
                o(0),
                i8(0),
                i8(0),
                r.item.and_then(|i| i.acl.as_ref()).map_or(null(), |a| ctx.acl(a)),
                null(),
                null(),
            ]
        })
        .collect()
}

/// Column defaults: `adbin` holds the expression's text (what
/// `pg_get_expr` returns).
fn attrdefs(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for item in ctx.catalog.items.values() {
        for (i, d) in item.defaults.iter().enumerate() {
            if let Some(text) = d {
                out.push(vec![o(super::attrdef_oid(item.id, i)), o(item_oid(item.id)), i2(i as i64 + 1), t(text)]);
            }
        }
    }
    out
}

fn attributes(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for r in ctx.relations() {
        for (i, (name, ty)) in r.desc.iter().enumerate() {
            let s = &ty.scalar;
            let collation = if s.is_string() && !matches!(s, ScalarType::Name | ScalarType::PgChar) { 100 } else { 0 };
            out.push(vec![
                o(r.oid),
                t(name),
                o(s.oid() as i64),
                i4(-1),
                i2(s.typlen() as i64),
                i2(i as i64 + 1),
                i4(if s.is_array() { 1 } else { 0 }),
                i4(-1),
                i4(s.typmod() as i64),
                b(s.typlen() > 0 && s.typlen() <= 8),
                t(align(s)),
                t(if s.typlen() > 0 { "p" } else { "x" }),
                t(""),
                // Only a table's columns carry NOT NULL (a view's may be
                // known not null, but hold no constraint).
                b(!ty.nullable && r.kind == "r" && r.item.is_some()),
                b(super::column_default(r.item, i).is_some()),
                b(false),
                t(""),
                t(""),
                b(false),
                b(true),
                i4(0),
                o(collation),
                null(),
                null(),
                null(),
                null(),
            ]);
        }
    }
    out
}

fn align(s: &ScalarType) -> &'static str {
    match s.typlen() {
        1 => "c",
        2 => "s",
        4 => "i",
        8 | 16 => "d",
        _ => "i",
    }
}

fn types(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let _ = ctx;
    builtin_types()
        .into_iter()
        .map(|ty| {
            // (The vector types have both an element type and an array type.)
            let elem = ty.element_type().map_or(0, |e| e.oid() as i64);
            let array = if ty.is_array() { 0 } else { ty.array_of().oid() as i64 };
            let category = crate::sql::type_category(&ty).to_string();
            let preferred = crate::sql::type_is_preferred(&ty);
            let collation = if ty.is_string() && !matches!(ty, ScalarType::Name | ScalarType::PgChar) { 100 } else { 0 };
            let [input, output, receive, send] = super::type_io::type_io(ty.oid(), ty.is_array());
            vec![
                o(ty.oid() as i64),
                t(ty.typname_full()),
                o(PG_CATALOG_OID),
                o(OWNER_OID),
                i2(ty.typlen() as i64),
                b(ty.typlen() > 0 && ty.typlen() <= 8),
                t("b"),
                t(category),
                b(preferred),
                b(true),
                t(","),
                o(0),
                o(0),
                o(elem),
                o(array),
                o(input as i64),
                o(output as i64),
                o(receive as i64),
                o(send as i64),
                o(0),
                o(0),
                o(0),
                t(align(&ty)),
                t(if ty.typlen() > 0 { "p" } else { "x" }),
                b(false),
                o(0),
                i4(-1),
                i4(0),
                o(collation),
                null(),
                null(),
                null(),
            ]
        })
        .collect()
}

fn int2_array(v: &[usize]) -> Datum {
    Datum::Array(v.iter().map(|c| i2(*c as i64 + 1)).collect())
}

fn indexes(ctx: &Ctx) -> Vec<Vec<Datum>> {
    ctx.relations()
        .iter()
        .filter_map(|r| {
            let ix = r.index.as_ref()?;
            let n = ix.columns.len() as i64;
            Some(vec![
                o(r.oid),
                o(ix.on),
                i2(n),
                i2(n),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                int2_array(&ix.columns),
                Datum::Array(vec![o(0); n as usize]),
                Datum::Array(vec![o(0); n as usize]),
                Datum::Array(vec![i2(0); n as usize]),
                null(),
                null(),
            ])
        })
        .collect()
}

fn constraints(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for r in ctx.relations() {
        let Some(ix) = &r.index else { continue };
        // A unique index is a constraint only when declared as one.
        let Some((coid, key)) = &ix.constraint else { continue };
        out.push(vec![
            o(*coid),
            t(&key.name),
            o(r.schema_oid),
            t(if key.primary { "p" } else { "u" }),
            b(false),
            b(false),
            b(true),
            o(ix.on),
            o(0),
            o(r.oid),
            o(0),
            o(0),
            t(" "),
            t(" "),
            t(" "),
            b(true),
            i4(0),
            b(true),
            int2_array(&ix.columns),
            null(),
            null(),
            null(),
            null(),
            null(),
            null(),
            null(),
        ]);
    }
    out
}

fn access_methods(_: &Ctx) -> Vec<Vec<Datum>> {
    vec![vec![o(2), t("heap"), o(0), t("t")], vec![o(403), t("btree"), o(0), t("i")]]
}

fn databases(ctx: &Ctx) -> Vec<Vec<Datum>> {
    vec![vec![
        o(DATABASE_OID),
        t(&ctx.session.database),
        o(OWNER_OID),
        i4(6),
        t("c"),
        b(false),
        b(true),
        i4(-1),
        i8(0),
        i8(0),
        o(1663),
        t("C"),
        t("C"),
        null(),
        null(),
        ctx.catalog.database_acl.as_ref().map_or(null(), |a| ctx.acl(a)),
    ]]
}

/// A role as `pg_authid`, `pg_roles` and `pg_user` show it: its name and
/// attributes; the predefined `pg_database_owner` (which owns `public`)
/// is one that cannot log in.
struct RoleRow<'a> {
    name: &'a str,
    role: std::borrow::Cow<'a, crate::coord::roles::Role>,
}

fn role_rows<'a>(ctx: &Ctx<'a>) -> Vec<RoleRow<'a>> {
    let mut rows: Vec<RoleRow> = ctx
        .catalog
        .roles
        .iter()
        .map(|(name, role)| RoleRow { name, role: std::borrow::Cow::Borrowed(role) })
        .collect();
    let owner = crate::coord::roles::Role::predefined(DATABASE_OWNER_OID);
    rows.push(RoleRow { name: "pg_database_owner", role: std::borrow::Cow::Owned(owner) });
    rows
}

/// `rolsuper` through `rolreplication`, in the order both `pg_authid` and
/// `pg_roles` have them.
fn role_flags(r: &crate::coord::roles::Role) -> [Datum; 6] {
    [b(r.superuser), b(r.inherit), b(r.create_role), b(r.create_db), b(r.login), b(r.replication)]
}

fn valid_until(r: &crate::coord::roles::Role) -> Datum {
    r.valid_until.map(Datum::TimestampTz).unwrap_or(Datum::Null)
}

/// `pg_authid`: with the password verifiers, shown to superusers only (a
/// verifier and one overheard SCRAM exchange are enough to log in;
/// PostgreSQL lets only superusers read the relation).
fn authid(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let superuser = ctx.catalog.roles.get(&ctx.session.user).is_some_and(|r| r.superuser);
    role_rows(ctx)
        .into_iter()
        .map(|RoleRow { name, role: r }| {
            let mut row = vec![o(r.oid), t(name)];
            row.extend(role_flags(&r));
            row.extend([b(r.bypass_rls), i4(r.connection_limit.into()), r.password.as_deref().filter(|_| superuser).map(t).unwrap_or_else(null), valid_until(&r)]);
            row
        })
        .collect()
}

/// `pg_roles`: passwords shown as `********` when set.
fn roles(ctx: &Ctx) -> Vec<Vec<Datum>> {
    role_rows(ctx)
        .into_iter()
        .map(|RoleRow { name, role: r }| {
            let mut row = vec![t(name)];
            row.extend(role_flags(&r));
            row.extend([
                i4(r.connection_limit.into()),
                if r.password.is_some() { t("********") } else { null() },
                valid_until(&r),
                b(r.bypass_rls),
                null(),
                o(r.oid),
            ]);
            row
        })
        .collect()
}

/// `pg_user`: the roles that can log in.
fn users(ctx: &Ctx) -> Vec<Vec<Datum>> {
    role_rows(ctx)
        .into_iter()
        .filter(|row| row.role.login)
        .map(|RoleRow { name, role: r }| {
            vec![
                t(name),
                o(r.oid),
                b(r.create_db),
                b(r.superuser),
                b(r.replication),
                b(r.bypass_rls),
                if r.password.is_some() { t("********") } else { null() },
                valid_until(&r),
                null(),
            ]
        })
        .collect()
}

fn settings(ctx: &Ctx) -> Vec<Vec<Datum>> {
    crate::coord::settings::SETTINGS
        .iter()
        .map(|s| {
            let value = ctx.session.settings.get(s.name).cloned().unwrap_or_else(|| s.default.to_string());
            vec![
                t(s.name),
                t(value),
                null(),
                t(s.category),
                t(s.description),
                null(),
                t(if s.at_start {
                    "postmaster"
                } else if s.read_only {
                    "internal"
                } else {
                    "user"
                }),
                t("string"),
                t("default"),
                null(),
                null(),
                null(),
                t(s.default),
                t(s.default),
                null(),
                null(),
                b(false),
            ]
        })
        .collect()
}

fn user_items<'a>(ctx: &'a Ctx, kind: ItemKind) -> impl Iterator<Item = &'a crate::coord::catalog::Item> {
    ctx.catalog.items.values().filter(move |i| i.kind == kind)
}

fn tables(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out: Vec<Vec<Datum>> = user_items(ctx, ItemKind::Table)
        .map(|i| {
            let indexed = !i.keys.is_empty() || ctx.catalog.indexes().any(|ix| ix.index.as_ref().is_some_and(|(on, _)| *on == i.id));
            vec![t(&i.schema), t(&i.name), t(&ctx.role_name(i.owner)), null(), b(indexed), b(false), b(false), b(false)]
        })
        .collect();
    out.sort_by(|a, b| a[1].sql_cmp(&b[1]));
    out
}

fn views(ctx: &Ctx) -> Vec<Vec<Datum>> {
    user_items(ctx, ItemKind::View)
        .map(|i| vec![t(&i.schema), t(&i.name), t(&ctx.role_name(i.owner)), super::view_def(ctx.catalog, i, &ctx.search_path()).map(t).unwrap_or(null())])
        .collect()
}

fn matviews(ctx: &Ctx) -> Vec<Vec<Datum>> {
    user_items(ctx, ItemKind::MaterializedView)
        .map(|i| {
            let indexed = ctx.catalog.indexes().any(|ix| ix.index.as_ref().is_some_and(|(on, _)| *on == i.id));
            vec![
                t(&i.schema),
                t(&i.name),
                t(&ctx.role_name(i.owner)),
                null(),
                b(indexed),
                b(true),
                super::view_def(ctx.catalog, i, &ctx.search_path()).map(t).unwrap_or(null()),
            ]
        })
        .collect()
}

fn index_list(ctx: &Ctx) -> Vec<Vec<Datum>> {
    ctx.relations()
        .iter()
        .filter_map(|r| {
            let ix = r.index.as_ref()?;
            Some(vec![t(r.schema), t(&ix.on_name), t(&r.name), null(), t(index_def(r.schema, &r.name, ix))])
        })
        .collect()
}

fn dependencies(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = super::ripple_catalog::extension_members();
    for r in ctx.relations() {
        if let Some(ix) = &r.index {
            out.push(vec![o(1259), o(r.oid), i4(0), o(1259), o(ix.on), i4(0), t("a")]);
        }
        if let Some(item) = r.item {
            if item.index.is_none() {
                for d in &item.depends_on {
                    out.push(vec![o(1259), o(r.oid), i4(0), o(1259), o(item_oid(*d)), i4(0), t("n")]);
                }
            }
        }
    }
    out
}

fn collations(_: &Ctx) -> Vec<Vec<Datum>> {
    [(100, "default", "d"), (950, "C", "c"), (951, "POSIX", "c")]
        .into_iter()
        .map(|(oid, name, provider)| {
            vec![o(oid), t(name), o(PG_CATALOG_OID), o(OWNER_OID), t(provider), b(true), i4(-1), t("C"), t("C"), null(), null()]
        })
        .collect()
}

fn tablespaces(_: &Ctx) -> Vec<Vec<Datum>> {
    vec![vec![o(1663), t("pg_default"), o(OWNER_OID), null(), null()], vec![o(1664), t("pg_global"), o(OWNER_OID), null(), null()]]
}

/// The statement's own session (ripple does not list other sessions yet).
/// Tables' activity since the server started (`coord::stats`). Ripple
/// keeps no dead rows and needs no VACUUM or ANALYZE: those counts are
/// zero and their times NULL; index columns are NULL for a table with no
/// index, as in PostgreSQL.
fn user_table_stats(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for item in ctx.catalog.items.values().filter(|i| i.kind == ItemKind::Table) {
        let s = ctx.catalog.stats.get(item.id);
        let indexed = !item.keys.is_empty() || ctx.catalog.indexes().any(|ix| ix.index.as_ref().is_some_and(|(on, _)| *on == item.id));
        let if_indexed = |v: i64| if indexed { i8(v) } else { null() };
        out.push(vec![
            o(item_oid(item.id)),
            t(&item.schema),
            t(&item.name),
            i8(s.seq_scan),
            i8(s.seq_tup_read),
            if_indexed(s.idx_scan),
            null(),
            i8(s.inserted),
            i8(s.updated),
            i8(s.deleted),
            i8(0),
            i8(s.live),
            i8(0),
            i8(s.inserted + s.updated + s.deleted),
            i8(s.inserted),
            null(),
            null(),
            null(),
            null(),
            i8(0),
            i8(0),
            i8(0),
            i8(0),
        ]);
    }
    out
}

fn activity(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let s = ctx.session;
    vec![vec![
        o(DATABASE_OID),
        t(&s.database),
        i4(s.backend_pid as i64),
        null(),
        o(ctx.catalog.roles.get(&s.user).map_or(OWNER_OID, |r| r.oid)),
        t(&s.user),
        t(s.settings.get("application_name").cloned().unwrap_or_default()),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
        t("active"),
        null(),
        null(),
        null(),
        null(),
        t("client backend"),
    ]]
}

/// The COPYs in progress in every session (`coord::progress`). Data comes
/// over the connection (`PIPE`), whose total size is not known (0).
fn copy_progress(ctx: &Ctx) -> Vec<Vec<Datum>> {
    ctx.catalog
        .copies
        .list()
        .iter()
        .map(|c| {
            vec![
                i4(c.pid as i64),
                o(DATABASE_OID),
                t(&ctx.session.database),
                o(item_oid(c.table)),
                t(if c.from { "COPY FROM" } else { "COPY TO" }),
                t("PIPE"),
                i8(c.bytes() as i64),
                i8(0),
                i8(c.tuples() as i64),
                i8(0),
            ]
        })
        .collect()
}

/// The session's open SQL cursors (`DECLARE`).
fn cursors(ctx: &Ctx) -> Vec<Vec<Datum>> {
    ctx.session
        .cursors
        .iter()
        .map(|c| {
            vec![
                t(&c.name),
                t(&c.statement),
                b(c.holdable),
                b(false),
                b(c.scrollable),
                Datum::TimestampTz(c.created),
            ]
        })
        .collect()
}

/// `COMMENT ON` texts of relations (`objsubid` 0) and their columns.
fn descriptions(ctx: &Ctx) -> Vec<Vec<Datum>> {
    let mut out: Vec<Vec<Datum>> = ctx
        .catalog
        .schemas
        .values()
        .filter_map(|s| Some(vec![o(s.oid), o(super::PG_NAMESPACE_OID), i4(0), t(s.comment.clone()?)]))
        .collect();
    for item in ctx.catalog.items.values() {
        for (sub, text) in &item.comments {
            out.push(vec![o(item_oid(item.id)), o(PG_CLASS_OID), i4(*sub as i64), t(text.clone())]);
        }
    }
    out
}

/// The languages functions could be written in: Postgres's built-in ones
/// (none is a procedural language).
fn languages(_: &Ctx) -> Vec<Vec<Datum>> {
    [(12, "internal"), (13, "c"), (14, "sql")]
        .into_iter()
        .map(|(oid, name)| vec![o(oid), t(name), o(OWNER_OID), b(false), b(name == "sql"), o(0), o(0), o(0), null()])
        .collect()
}
