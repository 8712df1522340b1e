//! The HTTP port (`--http-listen`, `127.0.0.1:6876` by default), served
//! with axum on the server's tokio runtime: Prometheus metrics at
//! `/metrics` (`metrics.rs`), the console page at `/` (`console.html`,
//! `console.js`, `console.css`, compiled into the binary) and the JSON it
//! reads: `/api/objects` (every table, materialized view and index with
//! its size, freshness lag and hydration state) and `/api/dataflows/NAME`
//! (one item's dataflow: operators, channels, per-operator statistics).
//!
//! Every value is gathered from the coordinator when asked for
//! (`coord::observe`), which never holds its lock while it waits for the
//! workers. There is no authentication: the port serves names and
//! statistics, never rows, and listens on loopback unless told otherwise.
//!
//! Owns: the routes, the JSON errors and the listening policy. Must not:
//! know SQL, or change anything in the coordinator.

mod metrics;

use crate::coord::Coordinator;
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use tokio::net::TcpListener;

/// The address the HTTP port listens on when `--http-listen` is not given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:6876";

/// What `--http-listen` takes to turn the port off.
pub const OFF: &str = "off";

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("could not listen on {addr} (--http-listen): {source}")]
    Bind { addr: String, source: std::io::Error },
}

/// Binds the HTTP port as `--http-listen` says (`arg`): an address given
/// must be bound, else start-up fails; `off` binds nothing; without the
/// flag the default address is bound if it is free, and if it is taken
/// (another server on this machine) the port is off, with a warning, so
/// that servers started side by side without the flag still start.
pub async fn bind(arg: Option<&str>) -> Result<Option<TcpListener>, HttpError> {
    match arg {
        Some(OFF) => Ok(None),
        Some(addr) => TcpListener::bind(addr)
            .await
            .map(Some)
            .map_err(|source| HttpError::Bind { addr: addr.to_string(), source }),
        None => match TcpListener::bind(DEFAULT_LISTEN).await {
            Ok(listener) => Ok(Some(listener)),
            Err(e) => {
                tracing::warn!(
                    addr = DEFAULT_LISTEN,
                    error = %e,
                    "the HTTP port (metrics, console) is off: its default address is taken; choose one with --http-listen"
                );
                Ok(None)
            }
        },
    }
}

/// What every handler reads.
#[derive(Clone)]
struct Http {
    coord: Coordinator,
    /// Sessions open now (`server::ServerConfig::open_sessions`).
    sessions: Arc<AtomicUsize>,
}

/// Serves the HTTP port on `listener` until the process ends.
pub async fn serve(listener: TcpListener, coord: Coordinator, sessions: Arc<AtomicUsize>) -> std::io::Result<()> {
    axum::serve(listener, router(Http { coord, sessions })).await
}

fn router(state: Http) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/console.js", get(script))
        .route("/console.css", get(style))
        .route("/metrics", get(metrics::scrape))
        .route("/api/objects", get(objects))
        .route("/api/dataflows/{name}", get(dataflow))
        .fallback(not_found)
        .with_state(state)
}

/// A static part of the console; the page allows scripts and styles from
/// this port only (no inline script runs, whatever a name holds).
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, "default-src 'self'"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", include_str!("console.html"))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("console.js"))
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("console.css"))
}

/// A JSON answer.
fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("could not encode the answer: {e}")),
    }
}

/// A JSON error: `{"error": message}`.
fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn objects(State(http): State<Http>) -> Response {
    json(StatusCode::OK, &http.coord.objects().await)
}

async fn dataflow(State(http): State<Http>, name: Result<Path<String>, PathRejection>) -> Response {
    let Path(name) = match name {
        Ok(name) => name,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    match http.coord.dataflow_graph(&name).await {
        Some(graph) => json(StatusCode::OK, &graph),
        None => error(StatusCode::NOT_FOUND, &format!("no table, materialized view or index named \"{name}\"")),
    }
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not found")
}
