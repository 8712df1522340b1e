//! The Postgres wire-protocol server (on pgwire): accepts TCP connections,
//! negotiates TLS (`tls`), authenticates (`startup`, `auth`) and serves the
//! simple and extended query protocols by calling the coordinator.
//!
//! Owns: sockets, the per-connection task and `Session`, and the mapping
//! between wire messages and `coord::api`. Must not know SQL semantics or
//! dataflow: statements are opaque values passed to the coordinator, and
//! results come back as `Datum`s with their `ScalarType`s.
//!
//! COPY FROM STDIN and COPY TO STDOUT are served by `copy` (the
//! sub-protocol), `copy_format` (the text and CSV formats) and
//! `copy_binary` (the binary format).
//!
//! At most `ServerConfig::max_connections` sessions are open at once; a
//! start-up past it is refused with FATAL 53300 (`startup`). A session
//! idle inside a transaction block for longer than its
//! `idle_in_transaction_session_timeout` is ended with FATAL 25P03
//! (`idle`). A connection that has not finished its start-up within 60 s
//! is closed (`protocol`; PostgreSQL's default `authentication_timeout`,
//! which `SHOW` reports). Every frontend message is checked for its length
//! (`--max-message-size`) and layout before pgwire decodes it (`frames`):
//! a malformed one ends the connection with FATAL 08P01.
//!
//! A CancelRequest cancels the statement its connection is running, if it
//! only reads (pgwire's `ConnectionManager` finds the connection).

mod array_format;
pub mod auth;
mod connection;
mod convert;
mod copy;
mod copy_binary;
mod copy_format;
pub mod fuzz_decode;
mod frames;
mod idle;
mod portal;
mod portal_cursor;
mod protocol;
mod startup;
mod stream;
pub mod tls;

use std::fmt::Display;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use pgwire::api::auth::StartupHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use tokio::net::{TcpListener, ToSocketAddrs};

use crate::coord::Coordinator;
use crate::repr::Error;

pub use connection::{Connection, PreparedStatement};
pub use frames::DEFAULT_MAX_MESSAGE_SIZE;
pub use startup::SERVER_VERSION;

/// What the server enforces per connection.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Sessions that may be open at once; a start-up past it is refused
    /// with 53300 (`--max-connections`, `SHOW max_connections`).
    pub max_connections: usize,
    /// How clients prove who they are (`--auth`).
    pub auth: auth::AuthMethod,
    /// The certificate and key TLS is offered with (`--tls-cert`,
    /// `--tls-key`); `None`: no TLS.
    pub tls: Option<tls::TlsFiles>,
    /// The largest frontend message accepted (`--max-message-size`); past
    /// it the connection ends with 54000.
    pub max_message_size: usize,
    /// Sessions open now, counted with the connection limit's slots (the
    /// HTTP side's `ripple_sessions` gauge reads it).
    pub open_sessions: Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            auth: auth::AuthMethod::Trust,
            tls: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            open_sessions: Default::default(),
        }
    }
}

/// PostgreSQL's default `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;

/// The handlers of one connection. pgwire asks for them once per
/// connection, so each connection gets its own `Connection` and with it its
/// own coordinator `Session`, dropped when the connection closes.
struct ConnectionHandlers {
    connection: Arc<Connection>,
    startup: Arc<startup::RippleStartup>,
    cancels: Arc<ConnectionManager>,
}

impl PgWireServerHandlers for ConnectionHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.connection.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.connection.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.connection.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::new(DefaultCancelHandler::new(self.cancels.clone()))
    }
}

/// Binds the listening socket.
pub async fn bind<A: ToSocketAddrs>(addr: A) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Binds `addr` and serves connections forever.
pub async fn serve<A>(addr: A, coord: Coordinator) -> Result<(), Error>
where
    A: ToSocketAddrs + Display,
{
    let listener = bind(&addr)
        .await
        .map_err(|e| Error::Internal(format!("could not listen on {addr}: {e}")))?;
    serve_listener(listener, coord, ServerConfig::default()).await
}

/// Serves connections accepted on `listener` forever, one task per
/// connection. A failing connection is logged and never affects others.
pub async fn serve_listener(listener: TcpListener, coord: Coordinator, config: ServerConfig) -> Result<(), Error> {
    static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "accepting connections");
    }
    let slots = startup::ConnectionSlots::counting(config.max_connections, config.open_sessions.clone());
    let keys = Arc::new(pgwire::api::RandomPidSecretKeyGenerator::default());
    let acceptor = config.tls.as_ref().map(|t| t.acceptor()).transpose()?;
    let auth = Arc::new(auth::Auth::new(config.auth, coord.clone(), config.tls.as_ref())?);
    let cancels = Arc::new(ConnectionManager::new());
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let coord = coord.clone();
        let startup = Arc::new(startup::RippleStartup::new(slots.clone(), keys.clone(), auth.clone()));
        let acceptor = acceptor.clone();
        let cancels = cancels.clone();
        let max_message = config.max_message_size;
        let conn_id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            tracing::debug!(conn_id, %peer, "connection opened");
            let idle = idle::IdleWatch::new();
            // A second handle on the socket, to send the idle-in-transaction
            // timeout's FATAL after the protocol loop (which owns the
            // socket) is dropped.
            let spare = socket.as_fd().try_clone_to_owned().map(std::net::TcpStream::from);
            let handlers = ConnectionHandlers {
                connection: Arc::new(Connection::new(coord, cancels.clone(), idle.clone())),
                startup,
                cancels,
            };
            // The loop and with it the session (rolled back) are dropped
            // when the select ends.
            let ended = tokio::select! {
                ended = protocol::process_socket(socket, acceptor, handlers, max_message) => Ended::Closed(ended),
                () = idle.expired() => Ended::IdleInTransaction,
            };
            match ended {
                Ended::Closed(Ok(())) => tracing::debug!(conn_id, %peer, "connection closed"),
                Ended::Closed(Err(e)) => {
                    tracing::debug!(conn_id, %peer, error = %e, "connection closed with error")
                }
                Ended::IdleInTransaction => {
                    tracing::info!(conn_id, %peer, "terminating connection due to idle-in-transaction timeout");
                    if let Ok(spare) = spare {
                        idle::terminate(spare);
                    }
                }
            }
        });
    }
}

/// How a connection's task ended.
enum Ended {
    /// The protocol loop ended (the client closed, or an error).
    Closed(Result<(), std::io::Error>),
    /// Idle in a transaction block past its timeout.
    IdleInTransaction,
}
