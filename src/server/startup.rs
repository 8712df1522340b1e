//! Connection start-up: protocol negotiation, the database and role the
//! client names, authentication (`auth`: trust, or SCRAM-SHA-256), the
//! connection limits (`max_connections`, and each role's `CONNECTION
//! LIMIT`), the ParameterStatus values a client sees, and BackendKeyData.
//!
//! Owns: the start-up phase of the wire protocol and the count of sessions
//! against the limits. Must not know SQL semantics or dataflow. TLS is
//! negotiated before this (pgwire answers an SSLRequest with 'S' when the
//! server has a certificate, `tls`; with 'N' otherwise).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::driver::AuthOutcome;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::{
    AuthDriver, ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, METADATA_APPLICATION_NAME, METADATA_DATABASE, METADATA_USER, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::auth::{Auth, AuthMethod};
pub use crate::coord::settings::{DATABASE_NAME, SERVER_VERSION};

/// How many sessions may be open at once (`--max-connections`) and how
/// many are. Shared by every connection.
#[derive(Debug)]
pub struct ConnectionSlots {
    max: usize,
    open: Arc<AtomicUsize>,
}

impl ConnectionSlots {
    /// Slots counted in `open`, which others may read.
    pub fn counting(max: usize, open: Arc<AtomicUsize>) -> Arc<ConnectionSlots> {
        Arc::new(ConnectionSlots { max, open })
    }

    /// Takes a slot if one is free.
    fn take(&self) -> bool {
        self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1)).is_ok()
    }

    fn give_back(&self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The start-up of one connection: the database must be ripple's, the
/// role must exist and may log in (and, under `--auth password`, prove its
/// password), while fewer than `max_connections` sessions are open (53300
/// past it, as PostgreSQL) and fewer than the role's `CONNECTION LIMIT`. A
/// session holds its slots until the connection closes (this handler is
/// dropped with the connection).
pub struct RippleStartup {
    /// Shared by every connection: it numbers backend pids in order.
    keys: Arc<RandomPidSecretKeyGenerator>,
    slots: Arc<ConnectionSlots>,
    auth: Arc<Auth>,
    /// Runs the SCRAM exchange (under `--auth password`).
    driver: AuthDriver<RippleParameters>,
    holds_slot: AtomicBool,
    /// The role whose session count this connection holds.
    counted_role: parking_lot::Mutex<Option<String>>,
}

impl RippleStartup {
    pub fn new(slots: Arc<ConnectionSlots>, keys: Arc<RandomPidSecretKeyGenerator>, auth: Arc<Auth>) -> Self {
        let driver = AuthDriver::new(RippleParameters).with_pid_secret_key_generator(keys.clone());
        RippleStartup {
            keys,
            slots,
            auth,
            driver,
            holds_slot: AtomicBool::new(false),
            counted_role: parking_lot::Mutex::new(None),
        }
    }

    /// Admits the role `user` once it is authenticated (or trusted): it
    /// must exist, may log in and be under its connection limit.
    /// Records whether the role is a superuser (`is_superuser`, reported
    /// at start-up and by SHOW).
    async fn admit<C: ClientInfo>(&self, client: &mut C, user: &str) -> PgWireResult<()> {
        let Some(role) = self.auth.coord.login_role(user).await else {
            return Err(fatal("28000", format!("role \"{user}\" does not exist")));
        };
        if !role.login {
            return Err(fatal("28000", format!("role \"{user}\" is not permitted to log in")));
        }
        if !role.connect {
            return Err(fatal(
                "42501",
                format!("permission denied for database \"{DATABASE_NAME}\": role \"{user}\" does not have the CONNECT privilege"),
            ));
        }
        let mut counted = self.counted_role.lock();
        if counted.is_none() {
            if !self.auth.sessions.take(user, &role) {
                return Err(fatal("53300", format!("too many connections for role \"{user}\"")));
            }
            *counted = Some(user.to_string());
        }
        drop(counted);
        client.metadata_mut().insert(IS_SUPERUSER.to_string(), if role.superuser { "on" } else { "off" }.to_string());
        Ok(())
    }
}

impl Drop for RippleStartup {
    fn drop(&mut self) {
        if *self.holds_slot.get_mut() {
            self.slots.give_back();
        }
        if let Some(user) = self.counted_role.get_mut().take() {
            self.auth.sessions.give_back(&user);
        }
    }
}

/// A FATAL error that ends the start-up (the connection closes after it).
fn fatal(code: &str, message: String) -> PgWireError {
    let mut info = pgwire::error::ErrorInfo::new("FATAL".to_string(), code.to_string(), message);
    info.severity_nonlocalized = Some("FATAL".to_string());
    PgWireError::UserError(Box::new(info))
}

/// The start-up metadata key (and setting) that says whether the
/// session's role is a superuser.
pub const IS_SUPERUSER: &str = "is_superuser";

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
    let superuser = metadata.get(IS_SUPERUSER).map(String::as_str).unwrap_or("off");
    params.insert(IS_SUPERUSER.into(), superuser.to_string());
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
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                // Settings given at start-up must be valid, or the client
                // cannot connect (FATAL, as in Postgres).
                if let Err(e) = crate::coord::settings::startup_settings(client.metadata()) {
                    return Err(fatal(e.sqlstate().code(), e.to_string()));
                }
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
                if user.is_empty() {
                    return Err(fatal("28000", "no PostgreSQL user name specified in startup packet".into()));
                }
                // As PostgreSQL: the database defaults to the user's name.
                let database = client.metadata().get(METADATA_DATABASE).filter(|d| !d.is_empty()).unwrap_or(&user);
                if database != DATABASE_NAME {
                    return Err(fatal(
                        "3D000",
                        format!("database \"{database}\" does not exist (ripple serves one database, \"{DATABASE_NAME}\")"),
                    ));
                }
                // A start-up message comes once per connection (pgwire), so
                // this takes at most one slot.
                if !self.holds_slot.load(Ordering::Acquire) {
                    if !self.slots.take() {
                        tracing::info!(peer = %client.socket_addr(), max = self.slots.max, "refused a connection: too many clients");
                        return Err(fatal("53300", "sorry, too many clients already".to_string()));
                    }
                    self.holds_slot.store(true, Ordering::Release);
                }
                match self.auth.method {
                    AuthMethod::Password => {
                        // (`Auth::new` makes the mechanism for this method.)
                        let scram = self.auth.scram.as_ref().ok_or_else(|| fatal("XX000", "SCRAM is not set up".into()))?;
                        self.driver.begin_authentication(client, scram.create()).await?;
                    }
                    AuthMethod::Trust => {
                        self.admit(client, &user).await?;
                        let (pid, secret_key) = self.keys.generate(&*client);
                        client.set_pid_and_secret_key(pid, secret_key);
                        tracing::debug!(peer = %client.socket_addr(), %user, "client started a session (trust)");
                        // AuthenticationOk, ParameterStatus*, BackendKeyData, ReadyForQuery.
                        finish_authentication(client, &RippleParameters).await?;
                    }
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                let user = client.metadata().get(METADATA_USER).cloned().unwrap_or_default();
                match self.driver.advance_authentication(client, message).await {
                    Ok(AuthOutcome::Authenticated { final_message, .. }) => {
                        self.admit(client, &user).await?;
                        tracing::debug!(peer = %client.socket_addr(), %user, "client started a session (password)");
                        self.driver.complete_authentication(client, final_message).await?;
                    }
                    Ok(AuthOutcome::InProgress) => {}
                    Err(e) => {
                        tracing::info!(peer = %client.socket_addr(), %user, error = %e, "authentication failed");
                        return Err(match e {
                            PgWireError::InvalidPassword(_) => {
                                fatal("28P01", format!("password authentication failed for user \"{user}\""))
                            }
                            e => e,
                        });
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = ConnectionSlots::counting(2, Default::default());
        assert!(slots.take());
        assert!(slots.take());
        assert!(!slots.take());
        slots.give_back();
        assert!(slots.take());
        assert!(!slots.take());
        slots.give_back();
        assert!(slots.take());
    }

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
