//! One connection's protocol loop: pgwire's `process_socket`, with the
//! frame check (`frames`) between the negotiated stream and pgwire's
//! decoder.
//!
//! pgwire's `process_socket` takes the bare `TcpStream` and decodes it
//! itself, so a malformed message reached its panicking decoders; this is
//! the same loop over pgwire's public parts (`negotiate_tls`,
//! `process_message`, `process_error`) on a `Framed` whose stream is
//! `Checked`. Owns: the order of start-up, messages and errors on one
//! socket. Must not answer messages itself (the handlers do).

use std::io;
use std::time::Duration;

use futures::StreamExt;
use pgwire::api::{ClientInfo, PgWireConnectionState, PgWireServerHandlers};
use pgwire::api::ErrorHandler;
use pgwire::messages::PgWireFrontendMessage;
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use super::frames::Checked;

/// How long a client may take to finish its start-up (PostgreSQL's
/// `authentication_timeout`, pgwire's start-up deadline).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves one TCP connection until it closes.
pub async fn process_socket<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: H,
    max_message: usize,
) -> io::Result<()> {
    let startup_deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_deadline);
    let negotiated = tokio::select! {
        () = &mut startup_deadline => return Ok(()),
        negotiated = negotiate_tls(tcp, tls) => negotiated?,
    };
    // A direct TLS handshake without TLS configured.
    let Some(framed) = negotiated else { return Ok(()) };
    // The same codec (it holds the connection's state) on the checked
    // stream; bytes pgwire read while negotiating are checked first.
    let old = framed.into_parts();
    let mut parts = FramedParts::new(Checked::new(old.io, old.read_buf, max_message), old.codec);
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);

    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = if starting {
            tokio::select! {
                () = &mut startup_deadline => None,
                msg = socket.next() => msg,
            }
        } else {
            socket.next().await
        };
        let Some(Ok(msg)) = msg else { break };
        // Terminate: the client is leaving; dropping the socket closes it
        // (asyncpg waits for the close after its Terminate).
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let in_extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        let is_cancel = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let result = process_message(
            msg,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut e) = result {
            errors.on_error(&socket, &mut e);
            // A FATAL error ends the session, as in PostgreSQL.
            let fatal = e.is_fatal();
            process_error(&mut socket, e, in_extended).await?;
            if fatal {
                break;
            }
        }
        if is_cancel {
            break;
        }
    }
    Ok(())
}
