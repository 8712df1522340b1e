//! Streaming rows to the client as they come — a `SELECT`'s read in
//! bounded parts or a `SUBSCRIBE`'s changes: as the statement's rows
//! (RowDescription, then DataRows) or as COPY data (CopyOutResponse, then
//! CopyData), each batch flushed as it comes, until the stream ends, fails,
//! or the statement is canceled. A client that stops reading holds the
//! next write (and so the stream's next batch) back; one that goes away
//! makes the next write fail, which drops the stream and what it holds.
//! For the extended protocol, `data_rows` turns a read into the lazy
//! DataRow stream pgwire sends over one or more Executes.
//!
//! Owns: the wire side of a streamed statement. Must not: merge the
//! workers' parts (`coord::streamed`, `coord::subscribe`).

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::results::{FieldFormat, FieldInfo, Tag};
use pgwire::messages::data::DataRow;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyDone, CopyOutResponse};
use pgwire::messages::response::CommandComplete;

use super::convert::{encode_rows, error_info, field_infos, row_description};
use super::copy::{send_binary_rows, send_text_rows};
use crate::coord::ColumnOrigin;
use crate::coord::streamed::{RowStream, Stop};
use crate::repr::RelationDesc;
use crate::sql::{CopyFormat, CopyOptions};

/// Rows taken from the stream per batch sent.
const BATCH_ROWS: usize = 1_000;

/// Streams `stream` to the client; returns whether it ended with an error
/// (sent as an ErrorResponse).
pub(super) async fn stream_rows<C>(
    client: &mut C,
    desc: &RelationDesc,
    origins: &[Option<ColumnOrigin>],
    mut stream: RowStream,
    mut stop: Stop,
    copy: Option<&CopyOptions>,
) -> PgWireResult<bool>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let n = desc.arity();
    let text = vec![FieldFormat::Text; n];
    match copy {
        Some(options) => {
            let format = super::copy::format_code(options);
            client
                .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(format as i8, n as i16, vec![format; n])))
                .await?;
        }
        None => client.feed(PgWireBackendMessage::RowDescription(row_description(desc, origins, &text))).await?,
    }
    client.flush().await?;
    let schema = Arc::new(field_infos(desc, origins, &text));
    let mut sent = 0usize;
    let mut first = true;
    loop {
        let rows = match stream.next(BATCH_ROWS, &mut stop).await {
            Ok(Some(rows)) => rows,
            Ok(None) => break,
            Err(e) => {
                client.feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into())).await?;
                client.flush().await?;
                return Ok(true);
            }
        };
        sent += rows.len();
        match copy {
            Some(options) if options.format == CopyFormat::Binary => send_binary_rows(client, desc, &rows, first, false).await?,
            Some(options) => send_text_rows(client, desc, &rows, options, first && options.header).await?,
            None => {
                for row in encode_rows(schema.clone(), desc, &rows, &text)? {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                }
            }
        }
        first = false;
        client.flush().await?;
    }
    let tag = match copy {
        Some(options) => {
            if options.format == CopyFormat::Binary {
                send_binary_rows(client, desc, &[], first, true).await?;
            }
            client.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
            Tag::new("COPY").with_rows(sent)
        }
        None => Tag::new(stream.tag()).with_rows(sent),
    };
    client.feed(PgWireBackendMessage::CommandComplete(CommandComplete::from(tag))).await?;
    Ok(false)
}

/// A read's rows as the DataRows of an extended-protocol portal, encoded
/// in `formats` a batch at a time as pgwire pulls them (over one or more
/// Executes; the read waits in the workers between pulls).
pub(super) fn data_rows(
    desc: RelationDesc,
    schema: Arc<Vec<FieldInfo>>,
    formats: Vec<FieldFormat>,
    stream: RowStream,
    stop: Stop,
) -> impl futures::Stream<Item = PgWireResult<DataRow>> + Send {
    let batches = futures::stream::unfold(Some((stream, stop)), move |state| {
        let (desc, schema, formats) = (desc.clone(), schema.clone(), formats.clone());
        async move {
            let (mut stream, mut stop) = state?;
            match stream.next(BATCH_ROWS, &mut stop).await {
                Ok(Some(rows)) => {
                    let encoded: Vec<PgWireResult<DataRow>> = match encode_rows(schema, &desc, &rows, &formats) {
                        Ok(data) => data.into_iter().map(Ok).collect(),
                        Err(e) => vec![Err(e)],
                    };
                    Some((futures::stream::iter(encoded), Some((stream, stop))))
                }
                Ok(None) => None,
                Err(e) => Some((futures::stream::iter(vec![Err(super::convert::pg_error(&e))]), None)),
            }
        }
    });
    futures::StreamExt::flatten(batches)
}
