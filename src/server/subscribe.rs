//! Streaming a `SUBSCRIBE` to the client: as the statement's rows
//! (RowDescription, then DataRows as changes arrive) or as
//! `COPY (SUBSCRIBE ...) TO STDOUT` data (CopyOutResponse, then CopyData),
//! each batch flushed as it comes, until the subscription ends (`UP TO`),
//! fails, or the statement is canceled. A client that goes away makes the
//! next write fail, which drops the subscription and its dataflows.
//!
//! Owns: the wire side of a subscription. Must not: merge the workers'
//! changes (`coord::subscribe`).

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::results::{FieldFormat, Tag};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyDone, CopyOutResponse};
use pgwire::messages::response::CommandComplete;

use super::convert::{encode_rows, error_info, field_infos, row_description};
use super::copy::{send_binary_rows, send_text_rows};
use crate::coord::subscribe::{Stop, SubscribeStream};
use crate::repr::RelationDesc;
use crate::sql::{CopyFormat, CopyOptions};

/// Rows taken from the subscription per batch sent.
const BATCH_ROWS: usize = 1_000;

/// Streams `stream` to the client; returns whether it ended with an error
/// (sent as an ErrorResponse).
pub(super) async fn stream_subscription<C>(
    client: &mut C,
    desc: &RelationDesc,
    mut stream: SubscribeStream,
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
        None => client.feed(PgWireBackendMessage::RowDescription(row_description(desc, &[], &text))).await?,
    }
    client.flush().await?;
    let schema = Arc::new(field_infos(desc, &[], &text));
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
        None => Tag::new("SUBSCRIBE").with_rows(sent),
    };
    client.feed(PgWireBackendMessage::CommandComplete(CommandComplete::from(tag))).await?;
    Ok(false)
}
