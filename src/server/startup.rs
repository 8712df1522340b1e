//! Connection start-up: protocol negotiation, (no) authentication, the
//! ParameterStatus values a client sees, and BackendKeyData.
//!
//! Owns: the start-up phase of the wire protocol. Must not know SQL semantics
//! or dataflow. TLS is not offered: with no TLS acceptor pgwire answers an
//! SSLRequest (and a GSSENCRequest) with 'N' and the client continues in
//! plaintext.

use std::collections::HashMap;
use std::fmt::Debug;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, METADATA_APPLICATION_NAME, METADATA_USER, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

pub use crate::coord::settings::SERVER_VERSION;

/// Accepts every user and database without authentication.
#[derive(Debug, Default)]
pub struct RippleStartup {
    keys: RandomPidSecretKeyGenerator,
}

impl RippleStartup {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The ParameterStatus messages sent after authentication.
#[derive(Debug, Default)]
pub struct RippleParameters;

/// The server parameters for a client (its user and application name are
/// echoed back).
pub fn server_parameters(metadata: &HashMap<String, String>) -> HashMap<String, String> {
    let mut params: HashMap<String, String> = [
        ("server_version", SERVER_VERSION),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("IntervalStyle", "postgres"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("TimeZone", "UTC"),
        ("is_superuser", "on"),
        ("in_hot_standby", "off"),
        ("default_transaction_read_only", "off"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let application_name = metadata
        .get(METADATA_APPLICATION_NAME)
        .cloned()
        .unwrap_or_default();
    params.insert("application_name".into(), application_name);
    if let Some(user) = metadata.get(METADATA_USER) {
        params.insert("session_authorization".into(), user.clone());
    }
    // Parameter values travel as C strings.
    for v in params.values_mut() {
        if v.contains('\0') {
            *v = v.replace('\0', "");
        }
    }
    params
}

impl ServerParameterProvider for RippleParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        Some(server_parameters(client.metadata()))
    }
}

#[async_trait]
impl StartupHandler for RippleStartup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            // Settings given at start-up must be valid, or the client
            // cannot connect (FATAL, as in Postgres).
            if let Err(e) = crate::coord::settings::startup_settings(client.metadata()) {
                let mut info = pgwire::error::ErrorInfo::new(
                    "FATAL".to_string(),
                    e.sqlstate().code().to_string(),
                    e.to_string(),
                );
                info.severity_nonlocalized = Some("FATAL".to_string());
                return Err(PgWireError::UserError(Box::new(info)));
            }
            let (pid, secret_key) = self.keys.generate(&*client);
            client.set_pid_and_secret_key(pid, secret_key);
            tracing::debug!(
                peer = %client.socket_addr(),
                user = client.metadata().get(METADATA_USER).map(String::as_str).unwrap_or(""),
                "client started a session"
            );
            // AuthenticationOk, ParameterStatus*, BackendKeyData, ReadyForQuery.
            finish_authentication(client, &RippleParameters).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters() {
        let mut md = HashMap::new();
        md.insert("user".to_string(), "alice".to_string());
        let p = server_parameters(&md);
        assert_eq!(p["server_version"], "15.0 (ripple)");
        assert_eq!(p["DateStyle"], "ISO, MDY");
        assert_eq!(p["TimeZone"], "UTC");
        assert_eq!(p["integer_datetimes"], "on");
        assert_eq!(p["standard_conforming_strings"], "on");
        assert_eq!(p["client_encoding"], "UTF8");
        assert_eq!(p["session_authorization"], "alice");
    }
}
