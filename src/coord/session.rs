//! Sessions and transactions: running one statement for a session — the
//! write token it takes (shared for rows, alone for DDL), the one-statement
//! transaction of an autocommit write and its retries, the timestamp a
//! statement reads at, COMMIT's check and wait for durability — and the
//! statement classes that decide it.
//!
//! Owns: `Coordinator::execute` and the transaction life cycle around it.
//! Must not: bind or plan statements (`sequence`), or touch storage other
//! than through `State`.

use super::*;

impl Coordinator {
    /// Executes one statement with its parameter values: takes the write
    /// token a write needs, runs the statement, and acknowledges a write
    /// only once it is durable. An error inside a transaction block aborts
    /// the transaction (Postgres's rule). An autocommit write whose reads a
    /// concurrent commit changed (40001, 40P01) is run again: nothing of it
    /// was visible. After a few tries it runs alone (the write token held
    /// exclusively), so a write that reads much, such as an UPDATE that
    /// scans a table others keep writing, still finishes.
    pub async fn execute(&self, session: &mut Session, stmt: &Arc<Stmt>, params: &[Datum]) -> Result<ExecuteResponse, Error> {
        let class = match &**stmt {
            Stmt::Sql(Statement::Execute { name: Some(name), .. }) => {
                let name = name.0.last().and_then(|p| p.as_ident()).map(sql::binder_names::ident).unwrap_or_default();
                session.prepared.get(&name).map_or(StmtClass::Other, |(s, _)| StmtClass::of(s))
            }
            s => StmtClass::of(s),
        };
        if session.txn.as_ref().is_some_and(|t| t.failed) && class != StmtClass::TxnControl {
            return Err(Error::InFailedTransaction);
        }
        let retry = class == (StmtClass::Write { ddl: false }) && session.txn.is_none();
        if let Some(a) = &session.activity {
            a.start(stmt, &session.vars);
        }
        let mut attempt = 0u32;
        let result = loop {
            let alone = attempt >= AUTOCOMMIT_RETRIES;
            match self.execute_once(session, stmt, params, class, alone).await {
                Err(Error::SerializationFailure(_) | Error::DeadlockDetected { .. }) if retry && !alone => {
                    attempt += 1;
                    // Spread the retries of writers that collided.
                    let jitter = (session.id.wrapping_mul(31) + attempt as u64 * 7) % 5;
                    tokio::time::sleep(std::time::Duration::from_micros(100 * (attempt as u64 + jitter))).await;
                }
                r => break r,
            }
        };
        if let Some(a) = &session.activity {
            a.end(session.in_transaction, session.txn.as_ref().is_some_and(|t| t.failed));
        }
        result
    }

    /// One run of `execute`'s statement.
    /// `alone`: an autocommit write takes the write token exclusively.
    pub(super) async fn execute_once(
        &self,
        session: &mut Session,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        class: StmtClass,
        alone: bool,
    ) -> Result<ExecuteResponse, Error> {
        // The statement timeout runs from here, and it and a CancelRequest
        // also end the wait for the write token (behind a long write or
        // DDL): nothing has been written then.
        let deadline = settings::statement_timeout(&session.vars).map(|t| tokio::time::Instant::now() + t);
        session.deadline = deadline;
        let mut waiting_cancel = session.cancel.take();
        let taken = tokio::select! {
            r = self.take_write_token(session, stmt, class, alone) => r,
            _ = canceled_ref(&mut waiting_cancel) => Err(Error::Canceled),
            _ = sleep_until(deadline) => Err(Error::StatementTimeout),
        };
        session.cancel = waiting_cancel;
        let own_token = match taken {
            Ok(token) => token,
            Err(e) => {
                session.cancel = None;
                session.deadline = None;
                abort(session);
                return Err(e);
            }
        };
        let writing = own_token.is_some() || session.txn.as_ref().is_some_and(|t| t.token.is_some());
        // (CHECKPOINT runs to its end: a round stopped half-way would
        // leave the workers' checkpoint state ahead of the recorded one.)
        // A read may stop at any point: a CancelRequest or the statement
        // timeout ends it (writes run to their end, so that what is
        // reported is what happened; a write may stop only while it waits
        // for key locks, through the session's `cancel`).
        // (A SUBSCRIBE takes the cancel and the deadline along: its rows
        // are streamed after this returns.)
        // (ALTER CLUSTER too: a migration stopped between its steps would
        // leave its progress unreported.)
        let interruptible =
            class == StmtClass::Other && !matches!(**stmt, Stmt::Checkpoint | Stmt::Subscribe { .. } | Stmt::AlterCluster(_));
        let (mut cancel, deadline) = match interruptible {
            true => (session.cancel.take(), deadline),
            false => (None, None),
        };
        // (One future for both kinds: it is the largest part of this one,
        // built for every statement.)
        let run = self.execute_inner(session, stmt, params, writing);
        let mut result = match interruptible {
            true => tokio::select! {
                r = run => r,
                _ = canceled_ref(&mut cancel) => Err(Error::Canceled),
                _ = sleep_until(deadline) => Err(Error::StatementTimeout),
            },
            false => run.await,
        };
        // Rows streamed after this returns stay under the statement's
        // cancel and deadline.
        if let Ok(ExecuteResponse::Stream { stop, stream: super::streamed::RowStream::Read(_), .. }) = &mut result {
            *stop = super::streamed::Stop::new(cancel, deadline);
        }
        session.cancel = None;
        session.deadline = None;
        if session.txn.as_ref().is_some_and(|t| t.implicit) {
            // The one-statement transaction of an autocommit write.
            let txn = session.txn.take();
            let response = result?;
            if let Some(txn) = txn {
                self.commit_txn(txn).await?;
            }
            return Ok(response);
        }
        self.end_write(session, own_token, result).await
    }

    /// Ends a statement that held the write token on its own: releases it
    /// and acknowledges a success only once durable (with everything
    /// before it); a failure aborts the session's transaction block.
    pub(super) async fn end_write<T>(&self, session: &mut Session, own_token: Option<Token>, result: Result<T, Error>) -> Result<T, Error> {
        if let Some(token) = own_token {
            let ts = self.state.lock().await.write_ts;
            drop(token);
            if result.is_ok() {
                self.commits.wait(ts).await?;
            }
        }
        if result.is_err() {
            abort(session);
        }
        result
    }

    /// Commits a transaction's DDL and writes if what it read is unchanged
    /// (`State::commit_txn`), then waits until they are durable; its key
    /// locks go only then, so the next writer of a key reads this one's
    /// change at the durable timestamp.
    pub(super) async fn commit_txn(&self, mut txn: Txn) -> Result<(), Error> {
        let ts = self.state.lock().await.commit_txn(&mut txn)?;
        if let Some(ts) = ts {
            self.commits.wait(ts).await?;
        }
        drop(txn);
        Ok(())
    }

    /// Takes the write token for a statement that writes: returns it when
    /// the statement holds it on its own (autocommit DDL), or stores it in
    /// the session's transaction (its first write; an autocommit write
    /// gets a one-statement transaction).
    pub(super) async fn take_write_token(
        &self,
        session: &mut Session,
        stmt: &Stmt,
        class: StmtClass,
        alone: bool,
    ) -> Result<Option<Token>, Error> {
        let StmtClass::Write { ddl } = class else { return Ok(None) };
        let want = match (ddl, alone) {
            (true, _) => Want::Ddl,
            (false, true) => Want::RowsAlone,
            (false, false) => Want::Rows,
        };
        self.take_token(session, &|| verb(stmt), want).await
    }

    /// `take_write_token` for a write (or DDL) whose verb `verb` gives
    /// (named only in an error; also used by COPY FROM when its data is
    /// complete).
    pub(super) async fn take_token(&self, session: &mut Session, verb: &(dyn Fn() -> String + Sync), want: Want) -> Result<Option<Token>, Error> {
        // After a restart, nothing is written before the tables are loaded.
        self.wait_ready().await?;
        let Some(txn) = session.txn.as_mut() else {
            return match want {
                Want::Ddl => {
                    let token = self.write_token.clone().write_owned().await;
                    Ok(Some(Token::Exclusive(token)))
                }
                Want::Blind => Ok(Some(Token::Shared(self.write_token.clone().read_owned().await))),
                Want::Rows | Want::RowsAlone => {
                    let token = match want {
                        Want::RowsAlone => Token::Exclusive(self.write_token.clone().write_owned().await),
                        _ => Token::Shared(self.write_token.clone().read_owned().await),
                    };
                    let id = session.next_txid();
                    session.txn = Some(Txn { id, implicit: true, token: Some(token), ..Default::default() });
                    Ok(None)
                }
            };
        };
        // DDL in a block is part of it (`txn_ddl`): like a write, it holds
        // the write token until the block ends.
        if txn.read_only {
            return Err(Error::ReadOnlyTransaction(format!("cannot execute {} in a read-only transaction", verb())));
        }
        match (&txn.token, want) {
            (None, Want::Ddl) => {
                let token = self.write_token.clone().write_owned().await;
                txn.generation = self.commits.catalog_generation();
                txn.token = Some(Token::Exclusive(token));
                // Alone now: everything it reads from now on is durable.
                let latest = self.state.lock().await.write_ts;
                self.commits.wait(latest).await?;
            }
            (None, _) => {
                txn.token = Some(Token::Shared(self.write_token.clone().read_owned().await));
                txn.generation = self.commits.catalog_generation();
            }
            (Some(Token::Shared(_)), Want::Ddl) => {
                // DDL after writes: the shared hold goes, the exclusive one
                // comes once every other writer is done; DDL that came
                // between changed what the block's writes assumed.
                txn.token = None;
                let exclusive = self.write_token.clone().write_owned();
                let token = if txn.locks.as_ref().is_some_and(|l| !l.is_empty()) {
                    // Its key locks may be what another writer waits for
                    // while holding the token shared.
                    tokio::time::timeout(UPGRADE_WAIT, exclusive).await.map_err(|_| Error::DeadlockDetected {
                        detail: format!(
                            "Transaction {} holds key locks and waited {} s for other writers to finish before its DDL.",
                            txn.id,
                            UPGRADE_WAIT.as_secs()
                        ),
                    })?
                } else {
                    exclusive.await
                };
                if self.commits.catalog_generation() != txn.generation {
                    return Err(Error::SerializationFailure(
                        "could not serialize access: the catalog changed while this transaction waited to run DDL".into(),
                    ));
                }
                txn.token = Some(Token::Exclusive(token));
                let latest = self.state.lock().await.write_ts;
                self.commits.wait(latest).await?;
            }
            (Some(_), _) => {}
        }
        Ok(None)
    }

    /// The timestamp a statement reads at: a writing transaction's latest
    /// durable timestamp, once what it read before is checked unchanged
    /// up to there (`conflicts`); any other transaction's (fixed by its
    /// first read, and held); the latest write's for autocommit DDL (it
    /// holds the write token alone); or the durable timestamp.
    pub(super) fn read_ts(&self, state: &State, session: &mut Session, writing: bool) -> Result<Timestamp, Error> {
        if let Some(txn) = session.txn.as_mut() {
            if let Some(token) = &txn.token {
                let now = match token {
                    Token::Shared(_) => self.commits.durable_ts(),
                    Token::Exclusive(_) => state.write_ts,
                };
                if let Some(read) = txn.read_ts() {
                    if read >= now {
                        return Ok(read);
                    }
                    state.log.check(&txn.reads, read, now, |t| state.name_of(t))?;
                }
                txn.read = Some(state.holds.hold(now));
                return Ok(now);
            }
            if let Some(ts) = txn.read_ts() {
                return Ok(ts);
            }
            let ts = self.commits.durable_ts();
            txn.read = Some(state.holds.hold(ts));
            return Ok(ts);
        }
        Ok(if writing { state.write_ts } else { self.commits.durable_ts() })
    }

    /// The session's `transaction_isolation`.
    pub(super) fn isolation(session: &Session) -> Isolation {
        session
            .vars
            .get("transaction_isolation")
            .and_then(|v| Isolation::parse(v))
            .unwrap_or(Isolation::StrictSerializable)
    }

    /// A bound query as the session sees it: with its transaction's
    /// uncommitted writes.
    pub(super) fn with_own_writes(state: &State, session: &Session, query: RelationExpr) -> RelationExpr {
        own_writes(state.catalog_of(session.txn.as_ref()), session, query)
    }

}

/// `query` as `session` sees it: with its transaction's own uncommitted
/// writes, against `catalog`, the catalog the session sees.
pub(super) fn own_writes(catalog: &Catalog, session: &Session, query: RelationExpr) -> RelationExpr {
    match &session.txn {
        Some(txn) => txn::overlay(query, &txn.writes, txn.ddl.as_deref(), catalog),
        None => query,
    }
}

/// Whether the session's own writes may be put in `query` as the
/// optimizer left it (`own_writes` after `planner::optimize` instead of
/// before, the same rows): the plan only reads, maps, filters, projects
/// and unions tables, which the writes replace with their rows and the
/// changes. Not where it reads a view (read as its query, unoptimized,
/// once a table under it changed), joins (their plans name
/// arrangements), or in a block that ran DDL.
pub(super) fn own_writes_keep_plan(catalog: &Catalog, session: &Session, query: &RelationExpr) -> bool {
    session.txn.as_ref().is_some_and(|t| t.ddl.is_none())
        && query.is_linear()
        && query.depends_on().iter().all(|id| catalog.items.get(id).is_some_and(|i| i.kind == ItemKind::Table))
}

/// Whether the session's own uncommitted writes or DDL change what
/// `query` reads (`own_writes`, against `catalog`).
pub(super) fn sees_own_writes(catalog: &Catalog, session: &Session, query: &RelationExpr) -> bool {
    session.txn.as_ref().is_some_and(|t| txn::overlay_changes(query, &t.writes, t.ddl.as_deref(), catalog))
}

/// How many times an autocommit write is run again after a conflict
/// before it runs alone.
pub(super) const AUTOCOMMIT_RETRIES: u32 = 5;

/// How long a transaction holding key locks waits to run DDL.
pub(super) const UPGRADE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a write needs of the write token (`Coordinator::take_token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// DDL: the token alone.
    Ddl,
    /// Rows, read and written: shared, as a transaction.
    Rows,
    /// An autocommit write that conflicted too often: alone.
    RowsAlone,
    /// Rows written without reading any (COPY FROM): shared; in
    /// autocommit, committed directly.
    Blind,
}

/// What a statement needs from the write path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StmtClass {
    /// BEGIN, COMMIT, ROLLBACK (allowed in a failed transaction).
    TxnControl,
    /// Changes tables (`ddl: false`) or the catalog (`ddl: true`).
    Write { ddl: bool },
    /// Reads or session settings.
    Other,
}

impl StmtClass {
    pub(super) fn of(stmt: &Stmt) -> StmtClass {
        let stmt = match stmt {
            Stmt::Sql(s) => s,
            Stmt::Rename { .. } | Stmt::SetSchema { .. } => return StmtClass::Write { ddl: true },
            Stmt::Refresh { .. }
            | Stmt::Checkpoint
            | Stmt::AlterCluster(_)
            | Stmt::Maintenance { .. }
            | Stmt::Fetch { .. }
            | Stmt::Subscribe { .. }
            | Stmt::AsOf { .. } => {
                return StmtClass::Other
            }
        };
        match stmt {
            Statement::StartTransaction { .. } | Statement::Commit { .. } | Statement::Rollback { .. } => StmtClass::TxnControl,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Truncate(_) => {
                StmtClass::Write { ddl: false }
            }
            Statement::CreateTable(_)
            | Statement::CreateView(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::AlterIndex { .. }
            | Statement::CreateSchema { .. }
            | Statement::AlterSchema(_)
            | Statement::CreateRole(_)
            | Statement::AlterRole { .. }
            | Statement::Grant(_)
            | Statement::Revoke(_)
            | Statement::Comment { .. } => StmtClass::Write { ddl: true },
            _ => StmtClass::Other,
        }
    }
}

/// The statement's leading keywords, for messages (`INSERT`, `CREATE TABLE`).
pub(super) fn verb(stmt: &Stmt) -> String {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    match words.first().map(|w| w.to_ascii_uppercase()) {
        Some(w) if w == "CREATE" || w == "DROP" => words.join(" ").to_ascii_uppercase(),
        Some(w) => w,
        None => String::new(),
    }
}

/// Resolves when a CancelRequest fires `cancel` (never without one, or
/// once the next statement has replaced it).
pub(super) async fn canceled(cancel: Option<futures::channel::oneshot::Receiver<()>>) {
    if let Some(rx) = cancel {
        if rx.await.is_ok() {
            return;
        }
    }
    std::future::pending().await
}

/// [`canceled`] without taking the receiver: it stays for the rest of
/// the statement if this wait ends another way.
pub(super) async fn canceled_ref(cancel: &mut Option<futures::channel::oneshot::Receiver<()>>) {
    if let Some(rx) = cancel.as_mut() {
        if rx.await.is_ok() {
            return;
        }
    }
    std::future::pending().await
}

/// Resolves at `deadline` (never without one).
pub(super) async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The session's transaction block, for a statement (`verb`) that needs
/// one (25P01 outside).
pub(super) fn txn_block<'a>(session: &'a mut Session, verb: &str) -> Result<&'a mut Txn, Error> {
    session
        .txn
        .as_mut()
        .ok_or_else(|| Error::NoActiveTransaction(format!("{verb} can only be used in transaction blocks")))
}

/// A failed statement aborts the session's transaction block: its writes
/// and holds go, and only ROLLBACK or COMMIT are accepted until its end.
pub(super) fn abort(session: &mut Session) {
    if let Some(txn) = session.txn.as_mut() {
        if txn.savepoints.is_empty() {
            *txn = Txn { id: txn.id, read_only: txn.read_only, failed: true, ..Default::default() };
        } else {
            // ROLLBACK TO a savepoint can still recover the transaction.
            txn.failed = true;
        }
    }
}
