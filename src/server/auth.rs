//! Authentication at start-up: who the client says it is, checked against
//! the roles (`coord::roles`). Under `--auth trust` the role must exist
//! and may log in; under `--auth password` the client also proves its
//! password with SCRAM-SHA-256 (pgwire's exchange, over the role's stored
//! verifier; SCRAM-SHA-256-PLUS with channel binding when TLS is on).
//!
//! A role that does not exist or has no password still gets a full SCRAM
//! exchange, over a made-up verifier, and fails at its end as a wrong
//! password would (28P01): a client cannot tell which roles exist.
//!
//! Owns: the authentication method, the verifier source pgwire reads and
//! the count of sessions per role (`CONNECTION LIMIT`). Must not know SQL.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::SaslMechanisms;
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use ring::rand::SecureRandom;

use super::tls::TlsFiles;
use crate::coord::{Coordinator, roles::LoginRole};
use crate::repr::Error;

/// How clients prove who they are (`--auth`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMethod {
    /// The role named at start-up is believed (only on loopback).
    #[default]
    Trust,
    /// SCRAM-SHA-256 with the role's password.
    Password,
}

/// The roles' verifiers, for pgwire's SCRAM exchange.
pub struct RoleVerifiers {
    coord: Coordinator,
    /// Keys the made-up salts of unknown roles, so that the same name
    /// always gets the same salt (as a real role would) within a run.
    mock_key: ring::hmac::Key,
}

impl fmt::Debug for RoleVerifiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RoleVerifiers")
    }
}

impl RoleVerifiers {
    pub fn new(coord: Coordinator) -> RoleVerifiers {
        let mut key = [0u8; 32];
        // On failure the key is zeros: salts are then guessable, which
        // tells nothing about which roles exist either.
        let _ = ring::rand::SystemRandom::new().fill(&mut key);
        RoleVerifiers { coord, mock_key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key) }
    }

    /// A verifier no password matches, with a salt fixed per name.
    fn mock(&self, user: &str) -> ScramSecret {
        let tag = ring::hmac::sign(&self.mock_key, user.as_bytes());
        let bytes = tag.as_ref();
        let mut stored_key = vec![0u8; 32];
        let _ = ring::rand::SystemRandom::new().fill(&mut stored_key);
        ScramSecret::Verifier {
            salt: bytes[..16].to_vec(),
            iterations: crate::coord::password::ITERATIONS as usize,
            stored_key,
            server_key: bytes.to_vec(),
        }
    }
}

#[async_trait]
impl AuthSource for RoleVerifiers {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        // Only SCRAM is offered, which reads `get_scram_secret`.
        Err(PgWireError::InvalidPassword(login.user().unwrap_or_default().to_string()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        let secret = match self.coord.login_role(user).await.and_then(|r| r.verifier) {
            Some(v) => ScramSecret::Verifier {
                salt: v.salt,
                iterations: v.iterations as usize,
                stored_key: v.stored_key,
                server_key: v.server_key,
            },
            None => self.mock(user),
        };
        Ok((secret, None))
    }
}

/// Sessions open per role, against their `CONNECTION LIMIT`.
#[derive(Debug, Default)]
pub struct RoleSessions {
    open: parking_lot::Mutex<HashMap<String, usize>>,
}

impl RoleSessions {
    /// Counts a session of `user` if its role's limit allows one more
    /// (superusers have none).
    pub fn take(&self, user: &str, role: &LoginRole) -> bool {
        let mut open = self.open.lock();
        let n = open.entry(user.to_string()).or_insert(0);
        let limited = !role.superuser && role.connection_limit >= 0;
        if limited && *n >= role.connection_limit as usize {
            return false;
        }
        *n += 1;
        true
    }

    pub fn give_back(&self, user: &str) {
        let mut open = self.open.lock();
        if let Some(n) = open.get_mut(user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(user);
            }
        }
    }
}

/// What every start-up shares: the method, the SCRAM mechanism, the
/// per-role counts and the coordinator the roles are read from.
pub struct Auth {
    pub method: AuthMethod,
    /// SCRAM-SHA-256 (and -PLUS with TLS), under `--auth password`.
    pub scram: Option<SaslMechanisms>,
    pub sessions: RoleSessions,
    pub coord: Coordinator,
}

impl Auth {
    /// With TLS on, SCRAM also offers channel binding to the server's
    /// certificate (SCRAM-SHA-256-PLUS), which clients such as psql use
    /// when they can.
    pub fn new(method: AuthMethod, coord: Coordinator, tls: Option<&TlsFiles>) -> Result<Auth, Error> {
        let scram = match method {
            AuthMethod::Trust => None,
            AuthMethod::Password => {
                let mut scram = ScramAuth::new(Arc::new(RoleVerifiers::new(coord.clone())));
                scram.set_iterations(crate::coord::password::ITERATIONS as usize);
                if let Some(tls) = tls {
                    scram
                        .configure_certificate(&tls.cert_pem()?)
                        .map_err(|e| Error::Internal(format!("SCRAM channel binding to {}: {e}", tls.cert.display())))?;
                }
                Some(SaslMechanisms::new(vec![Arc::new(scram)]))
            }
        };
        Ok(Auth { method, scram, sessions: RoleSessions::default(), coord })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(limit: i32, superuser: bool) -> LoginRole {
        LoginRole { login: true, superuser, connection_limit: limit, verifier: None, connect: true }
    }

    #[test]
    fn connection_limits_per_role() {
        let s = RoleSessions::default();
        assert!(s.take("a", &role(1, false)));
        assert!(!s.take("a", &role(1, false)));
        assert!(s.take("b", &role(1, false)));
        s.give_back("a");
        assert!(s.take("a", &role(1, false)));
        // No limit, or a superuser: never refused.
        for _ in 0..10 {
            assert!(s.take("c", &role(-1, false)));
            assert!(s.take("d", &role(0, true)));
        }
        assert!(!s.take("e", &role(0, false)));
    }
}
