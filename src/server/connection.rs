//! One client connection: its coordinator `Session`, the simple query
//! protocol and the extended query protocol (Parse, Bind, Describe, Execute
//! with portal suspension; Sync, Flush and Close are pgwire's defaults).
//!
//! Owns: turning wire messages into coordinator calls (`parse`, `describe`,
//! `execute`) and their results into wire messages, and the transaction
//! status byte of ReadyForQuery. Must not know SQL semantics or dataflow: it
//! never looks inside a statement, it only passes it to the coordinator.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, FieldInfo, Response, Tag};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME, PgWireConnectionState, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, PortalSuspended, TARGET_TYPE_BYTE_PORTAL,
    TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use crate::sql::Stmt;
use tokio::sync::Mutex;

use super::convert::{
    INTERNAL_ERROR, PROTOCOL_VIOLATION, SYNTAX_ERROR, check_format_codes, command_tag,
    declared_type, decode_binary_param, decode_text_param, encode_rows, error_info, field_infos,
    pg_error, resolve_formats, row_description, user_error,
};
use super::copy::{CopyIn, send_copy_out, start_copy_in};
use super::portal::PortalOutcome;
use crate::coord::{Coordinator, ExecuteResponse, Session, StatementDesc};
use crate::repr::{Datum, Error, ScalarType};

/// SQLSTATE of a reference to a prepared statement that does not exist.
const INVALID_SQL_STATEMENT_NAME: &str = "26000";
/// SQLSTATE of a reference to a portal that does not exist.
const INVALID_CURSOR_NAME: &str = "34000";

/// A statement stored by Parse; after Bind, the portal's copy also holds the
/// decoded parameter values and the requested result formats.
#[derive(Clone, Debug)]
pub struct PreparedStatement {
    pub stmt: Arc<Stmt>,
    pub bound: Option<Arc<BoundParams>>,
    /// The length of its SQL text (`Session::statement_len`).
    pub sql_len: usize,
}

/// What a Bind message fixed for a portal.
#[derive(Debug)]
pub struct BoundParams {
    pub params: Vec<Datum>,
    /// The result column format codes as sent (already checked to be 0 or 1;
    /// their count is checked against the result's arity when it is known).
    pub result_formats: Vec<i16>,
}

/// The extended protocol's parser: exactly one statement per Parse, or none
/// for an empty query.
pub struct StatementParser {
    coord: Coordinator,
    /// Parse is a message from the client: the session is not idle.
    idle: Arc<super::idle::IdleWatch>,
}

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = PreparedStatement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<PreparedStatement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.idle.disarm();
        let mut stmts = crate::coord::run_heavy(sql.len(), || self.coord.parse(sql)).map_err(|e| pg_error(&e))?;
        if stmts.len() > 1 {
            return Err(user_error(
                SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        Ok(stmts.pop().map(|s| PreparedStatement {
            stmt: Arc::new(s),
            bound: None,
            sql_len: sql.len(),
        }))
    }

    fn get_parameter_types(&self, _stmt: &PreparedStatement) -> PgWireResult<Vec<Type>> {
        // Describe is answered by `Connection::on_describe` via the coordinator.
        Ok(vec![])
    }

    fn get_result_schema(
        &self,
        _stmt: &PreparedStatement,
        _column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(vec![])
    }
}

/// The state of one client connection. pgwire processes one message of a
/// connection at a time, so the session lock is never contended; it exists
/// because the handlers are shared behind `Arc`.
pub struct Connection {
    pub(super) coord: Coordinator,
    pub(super) session: Mutex<Session>,
    parser: Arc<StatementParser>,
    /// The COPY FROM STDIN receiving data, if one is.
    pub(super) copy_in: Mutex<Option<CopyIn>>,
    /// Where CancelRequests find this connection (registered once the
    /// session is identified; the guard unregisters it when it closes).
    cancels: Arc<pgwire::api::ConnectionManager>,
    cancel: Mutex<Option<(Arc<pgwire::api::ConnectionHandle>, pgwire::api::ConnectionGuard)>>,
    /// Reported settings changed by the statements run since they were
    /// last sent (ParameterStatus).
    reported: Mutex<Vec<(String, String)>>,
    /// The named portals bound (Bind), which `MOVE` moves too: PostgreSQL
    /// keeps portals and SQL cursors in one namespace (`portal_cursor.rs`).
    pub(super) portals: Mutex<std::collections::HashMap<String, Arc<Portal<PreparedStatement>>>>,
    /// Descriptions of prepared statements (Bind and Describe each need
    /// one; a prepared statement runs Bind, Describe, Execute every time),
    /// by statement, kept while the catalog and search_path stay as they
    /// were (`Described`).
    described: Mutex<std::collections::HashMap<usize, Described>>,
    /// The idle-in-transaction timeout's deadline (`idle.rs`).
    idle: Arc<super::idle::IdleWatch>,
}

/// A statement's description and what it was made from. The statement is
/// kept so its address (the key) is not reused while the entry exists.
struct Described {
    stmt: Arc<Stmt>,
    generation: u64,
    search_path: Option<String>,
    declared: Vec<Option<ScalarType>>,
    desc: StatementDesc,
}

/// At most this many descriptions are kept per connection.
const MAX_DESCRIBED: usize = 256;

/// Whether a query string holds no statement at all (only whitespace and
/// semicolons), which Postgres answers with EmptyQueryResponse.
pub fn is_empty_query(sql: &str) -> bool {
    sql.chars().all(|c| c == ';' || c.is_whitespace())
}

/// The ReadyForQuery status after a statement: idle outside a transaction
/// block; inside one, failed once any statement of the block failed.
pub fn status_after(
    prev: TransactionStatus,
    in_transaction: bool,
    failed: bool,
) -> TransactionStatus {
    if !in_transaction {
        TransactionStatus::Idle
    } else if failed || matches!(prev, TransactionStatus::Error) {
        TransactionStatus::Error
    } else {
        TransactionStatus::Transaction
    }
}

/// Names as Postgres prints them in errors (the unnamed one is "").
fn display_name(name: &str) -> &str {
    if name == DEFAULT_NAME { "" } else { name }
}

fn error_response(err: PgWireError) -> PgWireBackendMessage {
    let info: ErrorInfo = err.into();
    PgWireBackendMessage::ErrorResponse(ErrorResponse::from(info))
}

/// The messages answering one statement of a simple query: RowDescription,
/// DataRows and CommandComplete for rows, CommandComplete for a command.
fn simple_query_messages(resp: ExecuteResponse) -> PgWireResult<Vec<PgWireBackendMessage>> {
    match resp {
        ExecuteResponse::Command { tag, rows } => Ok(vec![PgWireBackendMessage::CommandComplete(
            CommandComplete::from(command_tag(&tag, rows)),
        )]),
        ExecuteResponse::Rows { desc, origins, rows, tag } => {
            let formats = vec![FieldFormat::Text; desc.arity()];
            let schema = Arc::new(field_infos(&desc, &origins, &formats));
            let data = encode_rows(schema, &desc, &rows, &formats)?;
            let n = data.len();
            let mut out = Vec::with_capacity(n + 2);
            out.push(PgWireBackendMessage::RowDescription(row_description(
                &desc, &origins, &formats,
            )));
            out.extend(data.into_iter().map(PgWireBackendMessage::DataRow));
            // (PostgreSQL counts the rows of SELECT and FETCH, not of SHOW
            // or EXPLAIN.)
            let tag = if matches!(tag, "SHOW" | "EXPLAIN") { Tag::new(tag) } else { Tag::new(tag).with_rows(n) };
            out.push(PgWireBackendMessage::CommandComplete(CommandComplete::from(tag)));
            Ok(out)
        }
        ExecuteResponse::CopyIn(_) | ExecuteResponse::CopyOut { .. } | ExecuteResponse::Stream { .. } => Err(user_error(
            INTERNAL_ERROR,
            "internal error: COPY or SUBSCRIBE answered as a query",
        )),
    }
}

impl Connection {
    /// A new connection with a fresh session.
    pub fn new(coord: Coordinator, cancels: Arc<pgwire::api::ConnectionManager>, idle: Arc<super::idle::IdleWatch>) -> Self {
        let session = coord.new_session();
        let parser = Arc::new(StatementParser {
            coord: coord.clone(),
            idle: idle.clone(),
        });
        Connection {
            coord,
            session: Mutex::new(session),
            parser,
            copy_in: Mutex::new(None),
            cancels,
            cancel: Mutex::new(None),
            reported: Mutex::new(Vec::new()),
            portals: Mutex::new(std::collections::HashMap::new()),
            described: Mutex::new(std::collections::HashMap::new()),
            idle,
        }
    }

    /// After answering a statement: arms the idle-in-transaction timeout
    /// if the session is left in a transaction block (and no COPY is
    /// receiving data), with the session's setting.
    pub(super) async fn watch_idle(&self) {
        let timeout = {
            let session = self.session.lock().await;
            if session.in_transaction {
                crate::coord::settings::idle_in_transaction_timeout(&session.vars)
            } else {
                None
            }
        };
        let copying = self.copy_in.lock().await.is_some();
        self.idle.arm(if copying { None } else { timeout });
    }

    /// Tells the session who its client is, once (the start-up message's
    /// user, database and application name, and the backend process id).
    async fn identify<C: ClientInfo>(&self, client: &C) {
        let mut session = self.session.lock().await;
        if session.user.is_empty() {
            let md = client.metadata();
            let get = |k: &str| md.get(k).map(String::as_str).unwrap_or("");
            session.identify(
                get(pgwire::api::METADATA_USER),
                get(pgwire::api::METADATA_DATABASE),
                get(pgwire::api::METADATA_APPLICATION_NAME),
                client.pid_and_secret_key().0,
            );
            // Checked at start-up (`startup::RippleStartup`), which also
            // recorded whether the role is a superuser.
            if let Ok(mut vars) = crate::coord::settings::startup_settings(md) {
                if let Some(superuser) = md.get(super::startup::IS_SUPERUSER) {
                    vars.insert(super::startup::IS_SUPERUSER.to_string(), superuser.clone());
                }
                session.start_with(vars);
            }
            let (pid, secret) = client.pid_and_secret_key();
            *self.cancel.lock().await = Some(self.cancels.register(pid, secret));
        }
    }

    /// Describes a statement with the parameter types its client declared.
    async fn describe(
        &self,
        stmt: &StoredStatement<PreparedStatement>,
    ) -> PgWireResult<StatementDesc> {
        let declared: Vec<Option<ScalarType>> =
            stmt.parameter_types.iter().map(declared_type).collect();
        let session = self.session.lock().await;
        let parsed = &stmt.statement.stmt;
        // Kept: queries and writes, outside a block that changed the
        // catalog (the block binds against its own), described at the
        // catalog's current generation, read before binding (a change
        // meanwhile only makes the entry stale early).
        let cacheable = parsed.described_by_catalog() && session.txn.as_ref().is_none_or(|t| t.ddl.is_none());
        let key = Arc::as_ptr(parsed) as usize;
        let generation = self.coord.catalog_generation();
        let search_path = session.vars.get("search_path").cloned();
        if cacheable {
            if let Some(d) = self.described.lock().await.get(&key) {
                if Arc::ptr_eq(&d.stmt, parsed) && d.generation == generation && d.search_path == search_path && d.declared == declared {
                    return Ok(d.desc.clone());
                }
            }
        }
        let desc = self
            .coord
            .describe(&session, parsed, &declared)
            .await
            .map_err(|e| pg_error(&e))?;
        if cacheable {
            let mut described = self.described.lock().await;
            if described.len() >= MAX_DESCRIBED {
                described.clear();
            }
            let entry = Described { stmt: parsed.clone(), generation, search_path, declared, desc: desc.clone() };
            described.insert(key, entry);
        }
        Ok(desc)
    }

    /// Executes a statement in this connection's session; also returns
    /// whether the session is inside a transaction block afterwards.
    pub(super) async fn execute(
        &self,
        stmt: &Arc<Stmt>,
        params: &[Datum],
        sql_len: usize,
    ) -> (Result<ExecuteResponse, Error>, bool) {
        let mut session = self.session.lock().await;
        session.statement_len = sql_len;
        // A CancelRequest from now on cancels this statement.
        if let Some((handle, _)) = self.cancel.lock().await.as_ref() {
            session.cancel = Some(handle.start_query().await);
        }
        let before = session.vars.clone();
        // Boxed: the statement's future is large (it may run any kind of
        // statement), and each protocol handler that awaits this one would
        // otherwise hold, and move, a copy of its space.
        let result = Box::pin(self.coord.execute(&mut session, stmt, params)).await;
        if !Arc::ptr_eq(&session.vars, &before) && session.vars != before {
            let changes = crate::coord::settings::reported_changes(&before, &session.vars);
            self.reported.lock().await.extend(changes);
        }
        if let Err(e) = &result {
            tracing::debug!(session = session.id, error = %e, "statement failed");
        }
        (result, session.in_transaction)
    }

    /// Sends ParameterStatus for the reported settings the last statements
    /// changed.
    async fn send_reported<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let changes = std::mem::take(&mut *self.reported.lock().await);
        for (name, value) in changes {
            client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(name, value)))
                .await?;
        }
        Ok(())
    }

    /// Runs a simple-protocol query string and sends its responses (but not
    /// ReadyForQuery); returns the transaction status for ReadyForQuery, and
    /// whether it ended by starting a COPY FROM STDIN (the client's data
    /// comes next, and CopyDone's handling sends ReadyForQuery).
    async fn run_simple_query<C>(
        &self,
        client: &mut C,
        sql: &str,
    ) -> PgWireResult<(TransactionStatus, bool)>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut status = client.transaction_status();
        if is_empty_query(sql) {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
            return Ok((status, false));
        }
        let stmts = match crate::coord::run_heavy(sql.len(), || self.coord.parse(sql)) {
            Ok(stmts) => stmts,
            Err(e) => {
                let in_transaction = self.session.lock().await.in_transaction;
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                return Ok((status_after(status, in_transaction, true), false));
            }
        };
        if stmts.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
            return Ok((status, false));
        }
        for stmt in stmts.into_iter().map(Arc::new) {
            let (result, in_transaction) = match self.move_portal(client, &stmt).await {
                Some(moved) => moved,
                None => self.execute(&stmt, &[], sql.len()).await,
            };
            status = status_after(status, in_transaction, result.is_err());
            let result = match result {
                Ok(ExecuteResponse::CopyIn(target)) => {
                    // COPY FROM STDIN is always the last statement (see
                    // `sql::parse`).
                    client.set_transaction_status(status);
                    start_copy_in(self, client, target, false).await?;
                    return Ok((status, true));
                }
                Ok(ExecuteResponse::CopyOut {
                    desc,
                    rows,
                    options,
                }) => {
                    send_copy_out(client, &desc, &rows, &options).await?;
                    continue;
                }
                Ok(ExecuteResponse::Stream { desc, origins, stream, stop, copy }) => {
                    let failed = super::stream::stream_rows(client, &desc, &origins, stream, stop, copy.as_ref()).await?;
                    self.send_reported(client).await?;
                    if failed {
                        // An error ends the query string, as any other.
                        if matches!(status, TransactionStatus::Transaction) {
                            status = TransactionStatus::Error;
                        }
                        break;
                    }
                    continue;
                }
                other => other,
            };
            match result
                .map_err(|e| pg_error(&e))
                .and_then(simple_query_messages)
            {
                Ok(messages) => {
                    for m in messages {
                        client.feed(m).await?;
                    }
                    self.send_reported(client).await?;
                }
                Err(e) => {
                    // The first error ends the query string.
                    client.feed(error_response(e)).await?;
                    if matches!(status, TransactionStatus::Transaction) {
                        status = TransactionStatus::Error;
                    }
                    break;
                }
            }
        }
        Ok((status, false))
    }

    /// Decodes a Bind message's parameters for `stmt` and returns the portal.
    async fn bind_portal(
        &self,
        message: &Bind,
        stmt: Arc<StoredStatement<PreparedStatement>>,
    ) -> PgWireResult<Portal<PreparedStatement>> {
        let n = message.parameters.len();
        let param_formats = resolve_formats(&message.parameter_format_codes, n, "parameter")?;
        check_format_codes(&message.result_column_format_codes)?;

        // The parameter types: the client's declared ones when it declared
        // all of them, else the coordinator's (which honours declared ones).
        let declared: Vec<Option<ScalarType>> =
            stmt.parameter_types.iter().map(declared_type).collect();
        let types: Vec<ScalarType> = if declared.len() == n && declared.iter().all(Option::is_some)
        {
            declared.into_iter().flatten().collect()
        } else {
            self.describe(&stmt).await?.params
        };
        if types.len() != n {
            return Err(user_error(
                PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {n} parameters, but prepared statement \"{}\" requires {}",
                    display_name(&stmt.id),
                    types.len()
                ),
            ));
        }

        // A portal over the unbound statement gives access to pgwire's
        // binary decoders; the format codes were validated above.
        let raw = Portal::try_new(message, stmt.clone())?;
        let mut params = Vec::with_capacity(n);
        for (i, ((value, format), ty)) in message
            .parameters
            .iter()
            .zip(param_formats.iter())
            .zip(types.iter())
            .enumerate()
        {
            let datum = match (value, format) {
                (None, _) => Datum::Null,
                (Some(bytes), FieldFormat::Text) => decode_text_param(bytes, ty)?,
                (Some(_), FieldFormat::Binary) => decode_binary_param(&raw, i, ty)?,
            };
            params.push(datum);
        }

        let bound = PreparedStatement {
            stmt: stmt.statement.stmt.clone(),
            sql_len: stmt.statement.sql_len,
            bound: Some(Arc::new(BoundParams {
                params,
                result_formats: message.result_column_format_codes.clone(),
            })),
        };
        let bound = StoredStatement::new(stmt.id.clone(), bound, stmt.parameter_types.clone());
        Portal::try_new(message, Arc::new(bound))
    }
}

impl Connection {
    /// `on_query`'s work (the idle-in-transaction watch around it is
    /// `on_query`'s).
    async fn simple_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.identify(&*client).await;
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        // A COPY left unfinished by a protocol error is abandoned.
        self.copy_in.lock().await.take();
        let result = self.run_simple_query(client, &query.query).await;
        let (status, copy_in) = match result {
            Ok(r) => r,
            Err(e) => {
                client.set_state(PgWireConnectionState::ReadyForQuery);
                return Err(e);
            }
        };
        if copy_in {
            // In CopyInProgress until CopyDone or CopyFail.
            return Ok(());
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        Ok(())
    }
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.disarm();
        let result = self.simple_query(client, query).await;
        self.watch_idle().await;
        result
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_query` above answers simple queries itself.
        Err(user_error(
            INTERNAL_ERROR,
            "internal error: unexpected simple query dispatch",
        ))
    }
}

impl Connection {
    /// `on_execute`'s work (`on_execute` disarms the idle-in-transaction
    /// watch first; the Sync after it arms it).
    async fn execute_message<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PreparedStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.identify(&*client).await;
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                return Ok(());
            }
            None => {
                return Err(user_error(
                    INVALID_CURSOR_NAME,
                    format!("portal \"{}\" does not exist", display_name(name)),
                ));
            }
        };
        // max_rows <= 0 means all rows.
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        client.set_state(PgWireConnectionState::QueryInProgress);

        let state = portal.state();
        let mut state = state.lock().await;
        if matches!(*state, PortalExecutionState::Initial) {
            // A COPY left unfinished by a protocol error is abandoned.
            self.copy_in.lock().await.take();
            match self.run_portal(client, &portal).await? {
                PortalOutcome::Response(Response::Query(rows)) => {
                    *state = PortalExecutionState::Suspended(rows)
                }
                PortalOutcome::Response(Response::Execution(tag)) => {
                    client
                        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                        .await?;
                    self.send_reported(client).await?;
                    // A completed command is not run again by another Execute.
                    *state = PortalExecutionState::Finished;
                    client.set_state(PgWireConnectionState::ReadyForQuery);
                    return Ok(());
                }
                PortalOutcome::CopyIn(target) => {
                    // In CopyInProgress until CopyDone or CopyFail; the Sync
                    // after CopyDone brings ReadyForQuery.
                    *state = PortalExecutionState::Finished;
                    return start_copy_in(self, client, target, true).await;
                }
                PortalOutcome::CopyOut {
                    desc,
                    rows,
                    options,
                } => {
                    // COPY TO STDOUT sends everything at once (max_rows
                    // does not apply, as in Postgres).
                    send_copy_out(client, &desc, &rows, &options).await?;
                    *state = PortalExecutionState::Finished;
                    client.set_state(PgWireConnectionState::ReadyForQuery);
                    return Ok(());
                }
                PortalOutcome::Stream { desc, stream, stop, copy } => {
                    // Streamed to its end, as COPY data (max_rows does not
                    // apply, as for COPY TO).
                    super::stream::stream_rows(client, &desc, &[], stream, stop, Some(&copy)).await?;
                    *state = PortalExecutionState::Finished;
                    client.set_state(PgWireConnectionState::ReadyForQuery);
                    return Ok(());
                }
                PortalOutcome::Response(other) => {
                    return Err(user_error(
                        INTERNAL_ERROR,
                        format!("internal error: unexpected response {other:?}"),
                    ));
                }
            }
        }

        let mut finished = true;
        match &mut *state {
            PortalExecutionState::Suspended(rows) => {
                let mut sent = 0usize;
                loop {
                    if max_rows > 0 && sent >= max_rows {
                        finished = false;
                        break;
                    }
                    match rows.data_rows().next().await {
                        Some(row) => {
                            client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                            sent += 1;
                        }
                        None => break,
                    }
                }
                if finished {
                    let tag = Tag::new(rows.command_tag()).with_rows(sent);
                    client
                        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                        .await?;
                } else {
                    client
                        .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                        .await?;
                }
            }
            PortalExecutionState::Finished | PortalExecutionState::Initial => {
                let tag = Tag::new("SELECT").with_rows(0);
                client
                    .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                    .await?;
            }
        }
        if finished {
            *state = PortalExecutionState::Finished;
        }
        self.send_reported(client).await?;
        client.set_state(PgWireConnectionState::ReadyForQuery);
        Ok(())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = PreparedStatement;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.disarm();
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => client.portal_store().rm_statement(name),
            TARGET_TYPE_BYTE_PORTAL => {
                client.portal_store().rm_portal(name);
                self.portals.lock().await.remove(name);
            }
            _ => {}
        }
        client.feed(PgWireBackendMessage::CloseComplete(CloseComplete::new())).await?;
        Ok(())
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.disarm();
        self.identify(&*client).await;
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(stmt)) => {
                let portal = Arc::new(self.bind_portal(&message, stmt).await?);
                client.portal_store().put_portal(portal.clone());
                if !portal_name.is_empty() {
                    self.portals.lock().await.insert(portal_name.to_string(), portal);
                }
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(user_error(
                        PROTOCOL_VIOLATION,
                        format!(
                            "bind message supplies {} parameters, but prepared statement \"{}\" requires 0",
                            message.parameters.len(),
                            display_name(statement_name)
                        ),
                    ));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => {
                return Err(user_error(
                    INVALID_SQL_STATEMENT_NAME,
                    format!(
                        "prepared statement \"{}\" does not exist",
                        display_name(statement_name)
                    ),
                ));
            }
        }
        // (Replies of the extended protocol are fed, not flushed: they go
        // out together at Sync or Flush, one write instead of one each.)
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.disarm();
        self.identify(&*client).await;
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let columns = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let (params, columns, origins) = match client.portal_store().get_statement(name) {
                    Some(Entry::Value(stmt)) => {
                        let desc = self.describe(&stmt).await?;
                        (desc.params, desc.columns, desc.origins)
                    }
                    Some(Entry::Empty) => (vec![], None, vec![]),
                    None => {
                        return Err(user_error(
                            INVALID_SQL_STATEMENT_NAME,
                            format!(
                                "prepared statement \"{}\" does not exist",
                                display_name(name)
                            ),
                        ));
                    }
                };
                let oids = params.iter().map(ScalarType::oid).collect();
                client
                    .feed(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(oids),
                    ))
                    .await?;
                // Result formats are not known before Bind: describe as text.
                columns.map(|desc| {
                    let formats = vec![FieldFormat::Text; desc.arity()];
                    (desc, origins, formats)
                })
            }
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => {
                    let desc = self.describe(&portal.statement).await?;
                    match desc.columns {
                        Some(columns) => {
                            let codes = match &portal.statement.statement.bound {
                                Some(b) => b.result_formats.as_slice(),
                                None => &[],
                            };
                            let formats = resolve_formats(codes, columns.arity(), "result column")?;
                            Some((columns, desc.origins, formats))
                        }
                        None => None,
                    }
                }
                Some(Entry::Empty) => None,
                None => {
                    return Err(user_error(
                        INVALID_CURSOR_NAME,
                        format!("portal \"{}\" does not exist", display_name(name)),
                    ));
                }
            },
            other => return Err(PgWireError::InvalidTargetType(other)),
        };
        match columns {
            Some((desc, origins, formats)) => {
                client
                    .feed(PgWireBackendMessage::RowDescription(row_description(
                        &desc, &origins, &formats,
                    )))
                    .await?
            }
            None => {
                client
                    .feed(PgWireBackendMessage::NoData(NoData::new()))
                    .await?
            }
        }
        Ok(())
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.disarm();
        self.execute_message(client, message).await
    }

    /// ReadyForQuery (as pgwire's default), with the idle-in-transaction
    /// timeout armed if the session is left in a block: from here the
    /// session waits for its client.
    async fn on_sync<C>(&self, client: &mut C, _message: pgwire::messages::extendedquery::Sync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(DEFAULT_NAME);
        self.watch_idle().await;
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(client.transaction_status())))
            .await?;
        client.flush().await?;
        Ok(())
    }

    /// Runs a bound portal's statement (`on_execute` above runs portals
    /// itself, through `run_portal`, which also answers COPY).
    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.run_portal(client, portal).await? {
            PortalOutcome::Response(r) => Ok(r),
            PortalOutcome::CopyIn(_) | PortalOutcome::CopyOut { .. } | PortalOutcome::Stream { .. } => Err(user_error(
                INTERNAL_ERROR,
                "internal error: unexpected COPY dispatch",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_queries() {
        assert!(is_empty_query(""));
        assert!(is_empty_query(" ;\n; "));
        assert!(!is_empty_query("select 1"));
        assert!(!is_empty_query("';'"));
    }

    #[test]
    fn transaction_status() {
        use TransactionStatus::*;
        assert!(matches!(status_after(Idle, false, false), Idle));
        assert!(matches!(status_after(Idle, true, false), Transaction));
        assert!(matches!(status_after(Transaction, true, true), Error));
        assert!(matches!(status_after(Error, true, false), Error));
        assert!(matches!(status_after(Error, false, false), Idle));
        assert!(matches!(status_after(Transaction, false, true), Idle));
    }
}
