//! Running a bound portal (extended protocol): its statement executed
//! with its parameters, and the result as pgwire's response (rows encoded
//! in the formats its Bind asked for), a COPY, or a streamed subscription.
//!
//! Owns: `PortalOutcome` and turning a portal's `ExecuteResponse` into it.
//! Must not: send messages (the Execute handler in `connection.rs` does).

use std::sync::Arc;

use futures::stream;
use pgwire::api::ClientInfo;
use pgwire::api::portal::Portal;
use pgwire::api::results::{QueryResponse, Response};
use pgwire::error::PgWireResult;

use super::connection::{status_after, Connection, PreparedStatement};
use super::convert::{command_tag, encode_rows, field_infos, pg_error, resolve_formats, user_error};
use crate::coord::streamed::RowStream;
use crate::coord::{CopyOptions, ExecuteResponse};
use crate::repr::{Datum, Error, RelationDesc};

/// What running a portal gave: a response pgwire knows, or a COPY.
pub(super) enum PortalOutcome {
    Response(Response),
    CopyIn(crate::coord::CopyTarget),
    CopyOut {
        desc: RelationDesc,
        rows: Vec<Vec<Datum>>,
        options: CopyOptions,
    },
    /// `COPY (SUBSCRIBE ...) TO STDOUT`, or a COPY of a query streamed.
    Stream {
        desc: RelationDesc,
        stream: crate::coord::streamed::RowStream,
        stop: crate::coord::streamed::Stop,
        copy: CopyOptions,
    },
}

impl Connection {
    /// Runs a bound portal's statement; rows come back as a stream the
    /// caller sends (possibly over several Executes).
    pub(super) async fn run_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<PreparedStatement>,
    ) -> PgWireResult<PortalOutcome>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let prev = client.transaction_status();
        let (result, in_transaction) = self.execute_portal(portal).await;
        client.set_transaction_status(status_after(prev, in_transaction, result.is_err()));
        portal_outcome(result.map_err(|e| pg_error(&e))?, portal)
    }

    /// Runs a bound portal's statement with its parameters.
    pub(super) async fn execute_portal(&self, portal: &Portal<PreparedStatement>) -> (Result<ExecuteResponse, Error>, bool) {
        let prepared = &portal.statement.statement;
        let params: &[Datum] = prepared.bound.as_ref().map_or(&[], |b| &b.params);
        self.execute(&prepared.stmt, params, prepared.sql_len).await
    }
}

/// What a portal's response becomes: rows encoded in the formats its Bind
/// asked for, as a stream sent over one or more Executes.
pub(super) fn portal_outcome(response: ExecuteResponse, portal: &Portal<PreparedStatement>) -> PgWireResult<PortalOutcome> {
    let result_formats: &[i16] = portal.statement.statement.bound.as_ref().map_or(&[], |b| &b.result_formats);
    match response {
        ExecuteResponse::Command { tag, rows } => Ok(PortalOutcome::Response(
            Response::Execution(command_tag(&tag, rows)),
        )),
        ExecuteResponse::Rows { desc, origins, rows, tag } => {
            let formats = resolve_formats(result_formats, desc.arity(), "result column")?;
            let schema = Arc::new(field_infos(&desc, &origins, &formats));
            let data = encode_rows(schema.clone(), &desc, &rows, &formats)?;
            let mut response = QueryResponse::new(schema, stream::iter(data.into_iter().map(Ok)));
            response.set_command_tag(tag);
            Ok(PortalOutcome::Response(Response::Query(response)))
        }
        ExecuteResponse::CopyIn(target) => Ok(PortalOutcome::CopyIn(target)),
        ExecuteResponse::CopyOut {
            desc,
            rows,
            options,
        } => Ok(PortalOutcome::CopyOut {
            desc,
            rows,
            options,
        }),
        ExecuteResponse::Stream { desc, stream, stop, copy: Some(copy), .. } => Ok(PortalOutcome::Stream { desc, stream, stop, copy }),
        ExecuteResponse::Stream { desc, origins, stream: stream @ RowStream::Read(_), stop, copy: None } => {
            let formats = resolve_formats(result_formats, desc.arity(), "result column")?;
            let schema = Arc::new(field_infos(&desc, &origins, &formats));
            let tag = stream.tag();
            let rows = super::stream::data_rows(desc, schema.clone(), formats, stream, stop);
            let mut response = QueryResponse::new(schema, rows);
            response.set_command_tag(tag);
            Ok(PortalOutcome::Response(Response::Query(response)))
        }
        ExecuteResponse::Stream { copy: None, .. } => Err(user_error(
            "0A000",
            "SUBSCRIBE through the extended query protocol streams only as COPY (SUBSCRIBE ...) TO STDOUT, or through a cursor (DECLARE c CURSOR FOR SUBSCRIBE ...; FETCH)",
        )),
    }
}

