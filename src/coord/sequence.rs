//! The sequencer: binds one statement against the catalog its session
//! sees and carries out its plan — reads (`read`), writes (`dml`), DDL
//! (`ddl`, `alter`, `reshape`, `schema`, `txn_ddl`), transaction control,
//! cursors, prepared statements, SHOW and settings.
//!
//! Owns: `Coordinator::execute_inner`, the dispatch on `Plan`. Must not:
//! take the write token or decide transactions (`session` does).

use super::*;

impl Coordinator {
    /// Binds and runs one statement for `session`.
    ///
    /// (The large awaits of statements other than reads — writes, ALTER,
    /// CHECKPOINT, COMMIT, SHOW of sizes — are boxed: this future is built
    /// and moved for every statement, a prepared point read included, and
    /// stays about as small as a read needs.)
    pub(super) async fn execute_inner(
        &self,
        session: &mut Session,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        writing: bool,
    ) -> Result<ExecuteResponse, Error> {
        // Bound, and a read planned, against a snapshot of the shared
        // catalog without the coordinator lock (a huge statement holds up
        // no one), or against the transaction block's own catalog; bound
        // again under the lock in the rare case the catalog changed
        // meanwhile.
        // A prepared query run again puts its values in its generic plan
        // (`generic`) instead.
        let seen = self.seen(session).await;
        let snapshot = seen.shared().cloned();
        let mut p = params_for(params);
        let types = p.types.clone();
        let generic = match &snapshot {
            Some(c) if !params.is_empty() => session.generic_plans.instantiate(stmt, params, &types, c, &session.vars),
            _ => None,
        };
        let mut gathered = None;
        let first = match generic {
            Some(found) => {
                drop(seen);
                with_read_plan(found?, snapshot.as_deref(), session)?
            }
            None => {
                let mut first = run_heavy(session.statement_len, || bind(&seen, snapshot.is_some(), session, stmt, &mut p, None))?;
                if !first.introspected.is_empty() {
                    // It reads `ripple_catalog`: what it reads is gathered
                    // (from the workers, without the lock) and it is bound
                    // again with that.
                    let facts = Arc::new(Box::pin(self.introspect(&first.introspected)).await);
                    p = params_for(params);
                    first = run_heavy(session.statement_len, || {
                        bind(&seen, snapshot.is_some(), session, stmt, &mut p, Some(facts.clone()))
                    })?;
                    gathered = Some(facts);
                }
                drop(seen);
                if let Some(c) = &snapshot {
                    self.learn_generic(session, stmt, params, &types, c, &first);
                }
                first
            }
        };
        let mut state = self.state.lock().await;
        let Bound { plan, read, deps, create_sql, sizes, write_query, .. } = match &snapshot {
            Some(s) if !state.catalog.is(s) => {
                p = params_for(params);
                bind(state.catalog_of(session.txn.as_ref()), false, session, stmt, &mut p, gathered)?
            }
            _ => first,
        };
        drop(snapshot);
        if let Some(snapshot) = sizes {
            // What was committed before the statement is counted once the
            // arrangements have taken it in: waited for without the lock
            // (other sessions go on) and for a bounded time (a view still
            // being built counts what it holds so far).
            let ts = state.write_ts;
            drop(state);
            Box::pin(self.settle(ts, std::time::Duration::from_secs(1))).await;
            state = self.state.lock().await;
            if let Some(gone) = deps.iter().find(|d| !state.catalog_of(session.txn.as_ref()).items.contains_key(d)) {
                return Err(Error::SerializationFailure(format!(
                    "relation {gone} was dropped while this statement measured relation sizes; run it again"
                )));
            }
            let measured = Box::pin(self.relation_sizes(state.catalog_of(session.txn.as_ref()))).await;
            let _ = snapshot.sizes.set(measured);
        }
        if p.types.len() > params.len() && params.is_empty() {
            return Err(Error::UndefinedParameter(format!("there is no parameter ${}", p.types.len())));
        }
        if p.types.len() > params.len() {
            return Err(Error::ProtocolViolation(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                p.types.len()
            )));
        }
        match plan {
            Plan::Select { query, desc, origins, finishing, settings } => {
                let read = read.unwrap_or_else(|| state.read_plan(session, query));
                let answer = self.read_answer(state, session, writing, read, &finishing, true).await?;
                for (name, value, local) in settings {
                    // SET LOCAL outside a transaction block has no effect.
                    if !local || session.in_transaction {
                        settings::set(Arc::make_mut(&mut session.vars), &name, value)?;
                    }
                }
                Ok(match answer {
                    read::Answer::Rows(rows) => ExecuteResponse::Rows { desc, origins, rows, tag: "SELECT" },
                    read::Answer::Stream(s) => streamed::response(desc, origins, s, None),
                })
            }
            Plan::CopyTo { query, desc, finishing, options } => {
                let read = read.unwrap_or_else(|| state.read_plan(session, query));
                Ok(match self.read_answer(state, session, writing, read, &finishing, true).await? {
                    read::Answer::Rows(rows) => ExecuteResponse::CopyOut { desc, rows, options },
                    read::Answer::Stream(s) => streamed::response(desc, Vec::new(), s, Some(options)),
                })
            }
            Plan::CopyFrom { table, table_name, desc, columns, options, defaults } => {
                let into = copy::CopyInto { table, table_name, desc, columns, options, defaults };
                Ok(ExecuteResponse::CopyIn(state.copy_in_start(session, into)))
            }
            Plan::Explain { query, transforms: true } => {
                let mut previous = query.explain();
                let mut text = format!("Bound plan\n{}", indent(&previous));
                for (name, plan) in crate::planner::optimize_traced(query, &state.catalog) {
                    let explained = plan.explain();
                    if explained == previous {
                        text.push_str(&format!("\nAfter {name}: unchanged"));
                    } else {
                        text.push_str(&format!("\nAfter {name}\n{}", indent(&explained)));
                    }
                    previous = explained;
                }
                let rows = text.lines().map(|l| vec![Datum::Text(l.to_string())]).collect();
                Ok(ExecuteResponse::Rows { desc: text_desc(&["QUERY PLAN"]), origins: Vec::new(), rows, tag: "EXPLAIN" })
            }
            Plan::Explain { query, transforms: false } => {
                let query = crate::planner::optimize(query, &state.catalog);
                let mut text = query.explain();
                if let Some(lookup) = crate::planner::fast_path::find(&query, &state.catalog) {
                    let (name, names) =
                        state.catalog.items.get(&lookup.on).map(|i| (i.name.clone(), i.desc.names.clone())).unwrap_or_default();
                    text = format!("{}\n{text}", lookup.describe(&name, &names));
                }
                for line in super::introspect::arrangements_read(&query, &state.catalog) {
                    text.push_str(&line);
                    text.push('\n');
                }
                let rows = text.lines().map(|l| vec![Datum::Text(l.to_string())]).collect();
                Ok(ExecuteResponse::Rows { desc: text_desc(&["QUERY PLAN"]), origins: Vec::new(), rows, tag: "EXPLAIN" })
            }
            plan @ (Plan::Insert { .. } | Plan::Update { .. } | Plan::Delete { .. } | Plan::Truncate { .. }) => {
                Box::pin(self.execute_write(state, session, writing, plan, write_query)).await
            }
            Plan::Maintenance { tag } => Ok(ExecuteResponse::Command { tag, rows: None }),
            Plan::Rename { id, new_name, tag, .. } => {
                let schema = state.catalog_of(session.txn.as_ref()).items.get(&id).map(|i| i.schema.clone()).unwrap_or_default();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename(txn, id, &schema, &new_name)?,
                    None => state.rename(id, &schema, &new_name)?,
                }
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::SetSchema { id, schema, tag } => {
                let name = state.catalog_of(session.txn.as_ref()).items.get(&id).map(|i| i.name.clone()).unwrap_or_default();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename(txn, id, &schema, &name)?,
                    None => state.rename(id, &schema, &name)?,
                }
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::CreateSchema { name, if_not_exists, owner } => {
                let catalog = state.catalog_of(session.txn.as_ref());
                if catalog.schemas.contains_key(&name) && if_not_exists {
                    return Ok(ExecuteResponse::Command { tag: "CREATE SCHEMA".into(), rows: None });
                }
                let owner = match owner {
                    Some(role) => catalog.roles.get(&role).map(|r| r.oid).ok_or_else(|| roles::missing(&role))?,
                    None => role_oid(catalog, session),
                };
                let oid = system::item_oid(state.catalog.allocate_id());
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Create { name, oid, owner })?;
                Ok(ExecuteResponse::Command { tag: "CREATE SCHEMA".into(), rows: None })
            }
            Plan::DropSchema { names, if_exists, cascade } => {
                state.drop_schemas(session.txn.as_mut(), &names, if_exists, cascade)?;
                Ok(ExecuteResponse::Command { tag: "DROP SCHEMA".into(), rows: None })
            }
            Plan::RenameSchema { name, new_name } => {
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Rename { name, new_name })?;
                Ok(ExecuteResponse::Command { tag: "ALTER SCHEMA".into(), rows: None })
            }
            Plan::CreateRole { name, if_not_exists, mut options } => {
                if if_not_exists && state.catalog_of(session.txn.as_ref()).roles.get(&name).is_some() {
                    return Ok(ExecuteResponse::Command { tag: "CREATE ROLE".into(), rows: None });
                }
                roles::hash_password(&mut options)?;
                let oid = system::item_oid(state.catalog.allocate_id());
                let user = session.info().current_user();
                state.run_role_ops(session.txn.as_mut(), &user, vec![roles::RoleOp::Create { name, oid, options }])?;
                Ok(ExecuteResponse::Command { tag: "CREATE ROLE".into(), rows: None })
            }
            Plan::AlterRole { name, mut options } => {
                roles::hash_password(&mut options)?;
                let user = session.info().current_user();
                state.run_role_ops(session.txn.as_mut(), &user, vec![roles::RoleOp::Alter { name, options }])?;
                Ok(ExecuteResponse::Command { tag: "ALTER ROLE".into(), rows: None })
            }
            Plan::RenameRole { name, new_name } => {
                let user = session.info().current_user();
                state.run_role_ops(session.txn.as_mut(), &user, vec![roles::RoleOp::Rename { name, new_name }])?;
                Ok(ExecuteResponse::Command { tag: "ALTER ROLE".into(), rows: None })
            }
            Plan::DropRole { names, if_exists } => {
                let user = session.info().current_user();
                let roles = &state.catalog_of(session.txn.as_ref()).roles;
                let ops = names
                    .into_iter()
                    .filter(|name| !if_exists || roles.get(name).is_some())
                    .map(|name| roles::RoleOp::Drop { name })
                    .collect();
                state.run_role_ops(session.txn.as_mut(), &user, ops)?;
                Ok(ExecuteResponse::Command { tag: "DROP ROLE".into(), rows: None })
            }
            Plan::ChangePrivileges(change) => {
                let tag = if change.revoke { "REVOKE" } else { "GRANT" };
                let user = session.info().current_user();
                let op = privileges::Access::of(state.catalog_of(session.txn.as_ref()), &user).resolve_change(&change)?;
                state.run_privilege_op(session.txn.as_mut(), op)?;
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::AlterOwner { object, owner, tag } => {
                let object = match object {
                    sql::GrantObject::Relation { id, .. } => privileges::Object::Relation(id),
                    sql::GrantObject::Schema(name) => privileges::Object::Schema(name),
                    other => return Err(Error::Internal(format!("OWNER TO of {other:?}"))),
                };
                let user = session.info().current_user();
                let op = privileges::Access::of(state.catalog_of(session.txn.as_ref()), &user).resolve_owner(object, &owner)?;
                state.run_privilege_op(session.txn.as_mut(), op)?;
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::CommentSchema { name, comment } => {
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Comment { name, comment })?;
                Ok(ExecuteResponse::Command { tag: "COMMENT".into(), rows: None })
            }
            Plan::RenameColumn { table, column, new_name } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename_column(txn, table, column, &new_name)?,
                    None => state.rename_column(table, column, &new_name)?,
                }
                Ok(ExecuteResponse::Command { tag: "ALTER TABLE".into(), rows: None })
            }
            Plan::AddConstraint { table, constraint } => {
                let name = {
                    let catalog = state.catalog_of(session.txn.as_ref());
                    let item = catalog.items.get(&table).ok_or_else(|| Error::Internal(format!("no table {table}")))?;
                    alter::constraint_name(catalog, item, &constraint)
                };
                let edit = crate::sql::ddl_text::ColumnEdit::Constraint(*constraint, name);
                Box::pin(self.alter_table(&mut state, session, table, edit, None, false)).await
            }
            Plan::AlterColumns { table, edit, rows: map, cascade } => {
                Box::pin(self.alter_table(&mut state, session, table, edit, map, cascade)).await
            }
            Plan::Comment { id, column, comment } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_comment(txn, id, column, comment),
                    None => state.comment(id, column, comment)?,
                }
                Ok(ExecuteResponse::Command { tag: "COMMENT".into(), rows: None })
            }
            Plan::Lock => {
                txn_block(session, "LOCK TABLE")?;
                Ok(ExecuteResponse::Command { tag: "LOCK TABLE".into(), rows: None })
            }
            Plan::Prepare { name, stmt, types } => {
                if session.prepared.contains_key(&name) {
                    return Err(Error::DuplicatePreparedStatement(format!("prepared statement \"{name}\" already exists")));
                }
                session.prepared.insert(name, (Arc::new(*stmt), types));
                Ok(ExecuteResponse::Command { tag: "PREPARE".into(), rows: None })
            }
            Plan::ExecutePrepared { name, params } => {
                let Some((stmt, _)) = session.prepared.get(&name).cloned() else {
                    return Err(Error::UndefinedPreparedStatement(format!("prepared statement \"{name}\" does not exist")));
                };
                drop(state);
                Box::pin(self.execute_inner(session, &stmt, &params, writing)).await
            }
            Plan::Deallocate { name } => {
                let tag = match name {
                    Some(n) => {
                        // A name that is not a SQL-level statement may be a
                        // protocol-level one, which the server's own store
                        // keeps: nothing to do here.
                        session.prepared.remove(&n);
                        "DEALLOCATE"
                    }
                    None => {
                        session.prepared.clear();
                        "DEALLOCATE ALL"
                    }
                };
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::AlterCluster { moves, steps } => {
                drop(state);
                Box::pin(self.alter_cluster(moves, steps)).await
            }
            Plan::Checkpoint => {
                drop(state);
                Box::pin(self.checkpoint_round()).await?;
                Ok(ExecuteResponse::Command { tag: "CHECKPOINT".into(), rows: None })
            }
            Plan::CreateTable { ref schema, ref name, if_not_exists, .. }
            | Plan::CreateView { ref schema, ref name, if_not_exists, .. } => {
                let (schema, name) = (schema.clone(), name.clone());
                let kind_tag = match &plan {
                    Plan::CreateTable { .. } => "CREATE TABLE",
                    Plan::CreateView { materialized: true, .. } => "CREATE MATERIALIZED VIEW",
                    _ => "CREATE VIEW",
                };
                if let Some(existing) = state.catalog_of(session.txn.as_ref()).by_name(&schema, &name) {
                    let or_replace = matches!(plan, Plan::CreateView { or_replace: true, .. });
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None });
                    }
                    if or_replace {
                        return Err(Error::FeatureNotSupported(format!(
                            "CREATE OR REPLACE of existing {} \"{name}\" is not supported yet",
                            existing.kind.name()
                        )));
                    }
                    return Err(Error::DuplicateTable(name));
                }
                let owner = role_oid(state.catalog_of(session.txn.as_ref()), session);
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_create(txn, id, &name, plan, deps, create_sql, owner, &[])?,
                    None => state.create(id, &name, plan, deps, create_sql, owner, &HashMap::new())?,
                }
                Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None })
            }
            Plan::CreateTableAs { create, create_sql, query, finishing, with_data } => {
                let Plan::CreateTable { schema, name, if_not_exists, .. } = &*create else {
                    return Err(Error::Internal("CREATE TABLE AS without its table".into()));
                };
                let name = name.clone();
                if state.catalog_of(session.txn.as_ref()).by_name(schema, &name).is_some() {
                    if *if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: "CREATE TABLE AS".into(), rows: None });
                    }
                    return Err(Error::DuplicateTable(name));
                }
                // The rows first (the statement holds the write token: no
                // other DDL comes between), then the table and its rows
                // under one hold of the coordinator's lock.
                let rows = if with_data {
                    let read = state.read_plan(session, query);
                    self.read_finished(state, session, writing, read, &finishing).await?
                } else {
                    drop(state);
                    Vec::new()
                };
                let mut state = self.state.lock().await;
                let owner = role_oid(state.catalog_of(session.txn.as_ref()), session);
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_create(txn, id, &name, *create, deps, create_sql, owner, &[])?,
                    None => state.create(id, &name, *create, deps, create_sql, owner, &HashMap::new())?,
                }
                let n = rows.len() as u64;
                drop(self.write(state, session, vec![(id, rows.into_iter().map(|r| (r, 1)).collect())]).await?);
                Ok(ExecuteResponse::Command { tag: "SELECT".into(), rows: Some(n) })
            }
            Plan::CreateIndex { ref schema, ref name, on, ref on_name, ref key, if_not_exists, .. } => {
                let catalog = state.catalog_of(session.txn.as_ref());
                let name = match name {
                    Some(n) => n.clone(),
                    None => {
                        let on = catalog.items.get(&on);
                        let cols: Vec<String> = on
                            .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                            .unwrap_or_default();
                        let base = format!("{on_name}_{}_idx", cols.join("_"));
                        let mut candidate = base.clone();
                        let mut k = 1;
                        while catalog.by_name(schema, &candidate).is_some() {
                            candidate = format!("{base}{k}");
                            k += 1;
                        }
                        candidate
                    }
                };
                if catalog.by_name(schema, &name).is_some() {
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None });
                    }
                    return Err(Error::DuplicateTable(name));
                }
                // Store the statement with its (possibly generated) name.
                let create_sql = sql::ddl_text::with_index_name(&create_sql, &name)?;
                // A unique index checks the rows already there.
                // (As a transaction block sees them: with its own writes.)
                let mut contents = HashMap::new();
                if let Plan::CreateIndex { on, unique: true, .. } = &plan {
                    let ts = state.write_ts;
                    let types = catalog.items.get(on).map(|i| i.desc.types.clone()).unwrap_or_default();
                    let get = Self::with_own_writes(&state, session, RelationExpr::Get { id: *on, name: on_name.clone(), types });
                    let rx = state.read(get, ts, None)?;
                    let rows = self.collect(rx).await?;
                    contents.insert(*on, rows.into_iter().map(|r| (Row::from_datums(r), 1)).collect::<Vec<_>>());
                }
                let owner = role_oid(state.catalog_of(session.txn.as_ref()), session);
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => {
                        let on = if let Plan::CreateIndex { on, .. } = &plan { *on } else { id };
                        let rows = contents.remove(&on).unwrap_or_default();
                        state.defer_create(txn, id, &name, plan, deps, create_sql, owner, &rows)?;
                    }
                    None => state.create(id, &name, plan, deps, create_sql, owner, &contents)?,
                }
                Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None })
            }
            Plan::Drop { kind, names, if_exists, cascade } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_drop(txn, kind, &names, if_exists, cascade)?,
                    None => state.drop_items(kind, &names, if_exists, cascade)?,
                }
                let tag = match kind {
                    ItemKind::Table => "DROP TABLE",
                    ItemKind::View => "DROP VIEW",
                    ItemKind::MaterializedView => "DROP MATERIALIZED VIEW",
                    ItemKind::Index => "DROP INDEX",
                };
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::Show(kind) => {
                let rows = match &kind {
                    ShowKind::Tables => state.names_of(ItemKind::Table),
                    ShowKind::Views => state.names_of(ItemKind::View),
                    ShowKind::MaterializedViews => state.names_of(ItemKind::MaterializedView),
                    ShowKind::Indexes => {
                        let mut rows: Vec<Vec<Datum>> = state
                            .catalog
                            .indexes()
                            .map(|ix| {
                                let (on, key) = ix.index.clone().unwrap_or_default();
                                let on_item = state.catalog.items.get(&on);
                                let on_name = on_item.map(|i| i.name.clone()).unwrap_or_default();
                                let cols: Vec<String> = on_item
                                    .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                                    .unwrap_or_default();
                                vec![Datum::Text(ix.name.clone()), Datum::Text(on_name), Datum::Text(cols.join(", "))]
                            })
                            .collect();
                        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
                        rows
                    }
                    ShowKind::Arrangements | ShowKind::ArrangementSizes => {
                        let owners = super::introspect::arrangement_owners(&state.catalog);
                        drop(state);
                        Box::pin(self.arrangements(&owners, matches!(kind, ShowKind::ArrangementSizes))).await
                    }
                    ShowKind::Hydration => {
                        drop(state);
                        Box::pin(self.hydration_rows()).await
                    }
                    ShowKind::Checkpoints => {
                        let mut rows = Vec::new();
                        for (id, l) in &state.checkpoints.lineage {
                            let name = |i: &GlobalId| state.catalog.items.get(i).map(|x| x.name.clone()).unwrap_or_else(|| i.to_string());
                            let inputs: Vec<String> = l.inputs.iter().map(name).collect();
                            rows.push(vec![
                                Datum::Text(name(id)),
                                Datum::Int64(l.frontier as i64),
                                Datum::Int64(l.rows),
                                Datum::Int64(l.bytes as i64),
                                Datum::Text(inputs.join(", ")),
                            ]);
                        }
                        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
                        rows
                    }
                    ShowKind::Variable(name) => settings::show(&session.info(), name)?,
                };
                Ok(ExecuteResponse::Rows { desc: show_desc(&kind), origins: Vec::new(), rows, tag: "SHOW" })
            }
            Plan::ResetVariable { name } => {
                settings::reset(Arc::make_mut(&mut session.vars), &session.defaults, name.as_deref())?;
                Ok(ExecuteResponse::Command { tag: "RESET".into(), rows: None })
            }
            Plan::SetVariable { name, value } => {
                if settings::canonical(&name) == "role" {
                    let access = privileges::Access::of(state.catalog_of(session.txn.as_ref()), &session.user);
                    access.check_set_role(&session.user, &value)?;
                }
                settings::set(Arc::make_mut(&mut session.vars), &name, value)?;
                Ok(ExecuteResponse::Command { tag: "SET".into(), rows: None })
            }
            Plan::SessionCleanup { tag } => Ok(ExecuteResponse::Command { tag, rows: None }),
            Plan::DiscardAll => {
                if session.txn.is_some() {
                    return Err(Error::ActiveTransaction("DISCARD ALL cannot run inside a transaction block".into()));
                }
                session.cursors.clear();
                session.prepared.clear();
                settings::reset(Arc::make_mut(&mut session.vars), &session.defaults, None)?;
                Ok(ExecuteResponse::Command { tag: "DISCARD ALL".into(), rows: None })
            }
            Plan::StartTransaction { read_only } => {
                // BEGIN inside a block is a no-op (Postgres warns).
                if session.txn.is_none() {
                    let id = session.next_txid();
                    session.txn = Some(Txn { id, read_only, ..Default::default() });
                }
                session.in_transaction = true;
                Ok(ExecuteResponse::Command { tag: "BEGIN".into(), rows: None })
            }
            Plan::Commit => {
                let failed = session.txn.as_ref().is_some_and(|t| t.failed);
                cursor::end_transaction(&mut session.cursors, !failed);
                session.in_transaction = false;
                let Some(txn) = session.txn.take() else {
                    return Ok(ExecuteResponse::Command { tag: "COMMIT".into(), rows: None });
                };
                if txn.failed {
                    return Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None });
                }
                drop(state);
                Box::pin(self.commit_txn(txn)).await?;
                Ok(ExecuteResponse::Command { tag: "COMMIT".into(), rows: None })
            }
            Plan::Savepoint { name } => {
                txn_block(session, "SAVEPOINT")?.savepoint(name);
                Ok(ExecuteResponse::Command { tag: "SAVEPOINT".into(), rows: None })
            }
            Plan::ReleaseSavepoint { name } => {
                txn_block(session, "RELEASE SAVEPOINT")?.release(&name)?;
                Ok(ExecuteResponse::Command { tag: "RELEASE".into(), rows: None })
            }
            Plan::RollbackTo { name } => {
                txn_block(session, "ROLLBACK TO SAVEPOINT")?.rollback_to(&name)?;
                Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None })
            }
            Plan::Rollback => {
                cursor::end_transaction(&mut session.cursors, false);
                session.in_transaction = false;
                session.txn = None;
                Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None })
            }
            Plan::DeclareCursor { name, select, scroll, hold, sql } => {
                if !session.in_transaction && !hold {
                    return Err(Error::NoActiveTransaction("DECLARE CURSOR can only be used in transaction blocks".into()));
                }
                if session.cursors.contains_key(&name) {
                    return Err(Error::DuplicateCursor(format!("cursor \"{name}\" already exists")));
                }
                let Plan::Select { query, desc, origins, finishing, .. } = *select else {
                    return Err(Error::Internal("DECLARE CURSOR over a statement that is not a query".into()));
                };
                let read = state.read_plan(session, query);
                let rows = self.read_finished(state, session, writing, read, &finishing).await?;
                let mut c = cursor::Cursor::new(desc, origins, rows, scroll, hold, sql);
                c.in_txn = session.in_transaction;
                session.cursors.insert(name, c);
                Ok(ExecuteResponse::Command { tag: "DECLARE CURSOR".into(), rows: None })
            }
            Plan::Subscribe(plan) => self.subscribe(&mut state, session, *plan),
            Plan::SelectAsOf { select, as_of } => self.select_as_of(state, session, *select, as_of).await,
            Plan::Fetch { name, direction, move_only, timeout } => {
                if cursor::get(&mut session.cursors, &name)?.subscription.is_some() {
                    drop(state);
                    return self.fetch_subscription(session, &name, direction, move_only, timeout).await;
                }
                if timeout.is_some() {
                    return Err(Error::FeatureNotSupported(format!(
                        "FETCH ... WITH (timeout) applies to cursors over SUBSCRIBE, and \"{name}\" is not one"
                    )));
                }
                let c = cursor::get(&mut session.cursors, &name)?;
                let rows = c.fetch(direction)?;
                if move_only {
                    return Ok(ExecuteResponse::Command { tag: "MOVE".into(), rows: Some(rows.len() as u64) });
                }
                Ok(ExecuteResponse::Rows { desc: c.desc.clone(), origins: c.origins.clone(), rows, tag: "FETCH" })
            }
            Plan::CloseCursor { name: None } => {
                session.cursors.clear();
                Ok(ExecuteResponse::Command { tag: "CLOSE CURSOR ALL".into(), rows: None })
            }
            Plan::CloseCursor { name: Some(name) } => {
                cursor::get(&mut session.cursors, &name)?;
                session.cursors.remove(&name);
                Ok(ExecuteResponse::Command { tag: "CLOSE CURSOR".into(), rows: None })
            }
        }
    }
}

impl Coordinator {
    /// The catalog `session` binds against, held without the coordinator
    /// lock: a snapshot of the shared one, or its transaction block's own
    /// once the block ran DDL.
    pub(super) async fn seen<'a>(&self, session: &'a Session) -> Seen<'a> {
        match session.txn.as_ref().and_then(|t| t.ddl.as_deref()) {
            Some(block) => Seen::Block(&block.catalog),
            None => Seen::Shared(self.state.lock().await.catalog.snapshot()),
        }
    }
}

/// The catalog a session sees (`Coordinator::seen`).
pub(super) enum Seen<'a> {
    Shared(Arc<Catalog>),
    Block(&'a Catalog),
}

impl Seen<'_> {
    /// The snapshot of the shared catalog, if that is what is seen.
    fn shared(&self) -> Option<&Arc<Catalog>> {
        match self {
            Seen::Shared(c) => Some(c),
            Seen::Block(_) => None,
        }
    }
}

impl std::ops::Deref for Seen<'_> {
    type Target = Catalog;
    fn deref(&self) -> &Catalog {
        match self {
            Seen::Shared(c) => c,
            Seen::Block(c) => c,
        }
    }
}

/// A statement bound (`bind`).
struct Bound {
    plan: Plan,
    /// The plan of a `SELECT` or `COPY (query) TO`, when it could be made
    /// where the statement was bound.
    read: Option<ReadPlan>,
    deps: Vec<GlobalId>,
    /// The statement to store for what it creates.
    create_sql: String,
    sizes: Option<Arc<crate::expr::func::catalog::CatalogSnapshot>>,
    /// It read the session or the system catalog while being bound.
    read_session: bool,
    /// The `ripple_catalog` facts it reads.
    introspected: std::collections::BTreeSet<system::Introspected>,
    /// The rows an `INSERT`, `UPDATE` or `DELETE` writes (its query),
    /// optimized already: kept by its generic plan.
    write_query: Option<RelationExpr>,
}

impl Coordinator {
    /// After binding a prepared query `stmt` with its values for the
    /// second time (for this catalog and these settings), binds it with
    /// placeholders and keeps that generic plan if it is the same plan
    /// with these values in place (`generic`).
    fn learn_generic(
        &self,
        session: &mut Session,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        types: &[Option<ScalarType>],
        catalog: &Arc<Catalog>,
        custom: &Bound,
    ) {
        // (A big statement is not kept: its syntax tree and plan could
        // take much memory.)
        let candidate = !params.is_empty()
            && session.statement_len <= BIG_STATEMENT
            && super::generic::may_be_generic(&custom.plan)
            && !custom.read_session
            && custom.sizes.is_none();
        let vars = session.vars.clone();
        if !candidate || !session.generic_plans.second_run(stmt, types, catalog, &vars) {
            return;
        }
        let mut p = Params { types: types.to_vec(), values: None, generic: true };
        let generic = {
            let bc = BindCatalog::new(catalog, session.info());
            sql::bind_statement(&bc, stmt, &mut p).ok().map(|plan| (plan, bc.dependencies()))
        };
        session.generic_plans.learn(stmt, params, types, catalog, &vars, generic, &custom.plan);
    }
}

/// A plan from a generic plan (`generic`), bound against the shared
/// catalog `catalog`, with its read planned: optimized already unless
/// the session's own writes are to be read too.
fn with_read_plan(instance: super::generic::Instance, catalog: Option<&Catalog>, session: &Session) -> Result<Bound, Error> {
    let super::generic::Instance { mut plan, deps, optimized, bound } = instance;
    // The kept optimized query serves as it is unless the session's own
    // uncommitted writes change what it reads; a read then has them put
    // in it where they need no planning again (`own_writes_keep_plan`).
    // (What the optimized query reads is what the plan's query reads.)
    let own = match (catalog, optimized.as_ref().or_else(|| super::generic::query_of(&plan))) {
        (Some(c), Some(query)) => session::sees_own_writes(c, session, query),
        _ => false,
    };
    // A read's query moves into its read plan (a plan with a read plan
    // is run from that alone); a write that is planned again gets its
    // query back.
    let bound_of = |bound: Option<super::generic::Deferred>, query: &mut RelationExpr| match bound {
        Some(deferred) => read::BoundQuery::Deferred(deferred),
        None => read::BoundQuery::Query(taken(query)),
    };
    let (read, write_query) = match (&mut plan, catalog, optimized) {
        (Plan::Select { query, .. }, _, Some(optimized)) if !own => (Some(ReadPlan::optimized(bound_of(bound, query), optimized)), None),
        (Plan::Select { query, .. }, Some(c), Some(optimized)) if session::own_writes_keep_plan(c, session, &optimized) => {
            // (A read in a transaction block never reads its query as
            // bound: that is for reads of checkpoints after a restart.)
            (Some(ReadPlan::optimized(bound_of(bound, query), session::own_writes(c, session, optimized))), None)
        }
        (Plan::Select { query, .. }, Some(c), _) => (Some(ReadPlan::new(c, c, session, bound_of(bound, query).into_query()?)), None),
        (plan, _, optimized) => {
            // A write reads and writes through its optimized query unless
            // it is to read its own transaction's writes.
            let write_query = optimized.filter(|_| !own && !matches!(plan, Plan::Select { .. }));
            if let (Some(deferred), None) = (bound, &write_query) {
                super::generic::put_query(plan, deferred.query()?);
            }
            (None, write_query)
        }
    };
    Ok(Bound { plan, read, deps, create_sql: String::new(), sizes: None, read_session: false, introspected: Default::default(), write_query })
}

/// A query taken out of a plan (an empty constant left in its place).
fn taken(query: &mut RelationExpr) -> RelationExpr {
    std::mem::replace(query, super::generic::empty_query())
}

/// Binds `stmt` against `catalog`, the catalog `session` sees; `shared`:
/// that is the shared catalog, so that a read can be planned too;
/// `gathered`: the facts gathered for its `ripple_catalog` relations.
fn bind(
    catalog: &Catalog,
    shared: bool,
    session: &Session,
    stmt: &Stmt,
    p: &mut Params,
    gathered: Option<Arc<system::Gathered>>,
) -> Result<Bound, Error> {
    let bc = BindCatalog::new(catalog, session.info()).with_gathered(gathered);
    let plan = sql::bind_statement(&bc, stmt, p)?;
    // A view would keep the catalog as of its creation.
    if bc.read_system.get() && matches!(plan, Plan::CreateView { .. }) {
        return Err(Error::FeatureNotSupported(
            "views over the system catalog (pg_catalog, information_schema, ripple_catalog and catalog functions) are not supported".into(),
        ));
    }
    // What is created is stored with every name it reads resolved to its
    // schema now, so that it binds the same on restart.
    let create_sql = match (stmt, plan.created()) {
        (Stmt::Sql(s), Some((schema, _))) => sql::ddl_text::stored(s, schema, &|n| bc.schema_of(n)),
        _ => String::new(),
    };
    let sizes = bc.sizes_snapshot();
    // (A read of relation sizes is planned once they are measured, one of
    // `ripple_catalog` once its facts are gathered: its constants fold
    // over them.)
    let read = match &plan {
        Plan::Select { query, .. } | Plan::CopyTo { query, .. } if shared && sizes.is_none() && !bc.lacks_facts() => {
            Some(ReadPlan::new(catalog, catalog, session, query.clone()))
        }
        _ => None,
    };
    Ok(Bound {
        plan,
        read,
        deps: bc.dependencies(),
        create_sql,
        sizes,
        read_session: bc.read_system.get(),
        introspected: bc.introspected(),
        write_query: None,
    })
}

/// The OID of the role `session` runs statements as (what it creates, it
/// owns); the bootstrap superuser's if it has no role.
fn role_oid(catalog: &Catalog, session: &Session) -> i64 {
    catalog.roles.get(&session.info().current_user()).map_or(system::OWNER_OID, |r| r.oid)
}

/// Parameters with their values, typed as the values arrived (as
/// described).
fn params_for(values: &[Datum]) -> Params {
    Params { types: values.iter().map(datum_type).collect(), values: Some(values.to_vec()), generic: false }
}

/// `text` with each line indented by two spaces.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}
