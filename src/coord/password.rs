//! SCRAM-SHA-256 verifiers, the only form in which ripple keeps a
//! password: made from a password (RFC 5802 / RFC 7677, with SASLprep as
//! PostgreSQL applies it), and read from and written as PostgreSQL's text
//! form `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`
//! (base64), so that a verifier taken from PostgreSQL (`pg_authid`,
//! `pg_dumpall`) logs in unchanged.
//!
//! Owns: the hashing and the text form. Must not know roles or the wire
//! protocol (the server's `auth` hands a verifier's parts to pgwire's
//! SCRAM exchange).

use std::fmt;
use std::num::NonZeroU32;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SecureRandom;
use ring::{digest, hmac, pbkdf2};

/// PostgreSQL's default `scram_iterations`.
pub const ITERATIONS: u32 = 4096;
/// PostgreSQL's salt length in bytes.
const SALT_LEN: usize = 16;
const PREFIX: &str = "SCRAM-SHA-256$";

/// What is stored for a password: enough to check a client's SCRAM proof
/// and to prove the server to it, not enough to log in as the role.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    /// `SHA-256(HMAC(SaltedPassword, "Client Key"))`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

impl Verifier {
    /// The verifier of `password` with a fresh random salt.
    pub fn new(password: &str) -> Result<Verifier, ring::error::Unspecified> {
        let mut salt = vec![0u8; SALT_LEN];
        ring::rand::SystemRandom::new().fill(&mut salt)?;
        Ok(Verifier::with_salt(password, salt, ITERATIONS))
    }

    /// The verifier of `password` with `salt` and `iterations` (at least 1).
    pub fn with_salt(password: &str, salt: Vec<u8>, iterations: u32) -> Verifier {
        let iterations = iterations.max(1);
        // As PostgreSQL: a password SASLprep refuses is used as it is.
        let normalized = stringprep::saslprep(password).map(|p| p.into_owned()).unwrap_or_else(|_| password.to_string());
        let mut salted = [0u8; 32];
        let rounds = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
        pbkdf2::derive(pbkdf2::PBKDF2_HMAC_SHA256, rounds, &salt, normalized.as_bytes(), &mut salted);
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(&digest::SHA256, client_key.as_ref()).as_ref().to_vec();
        let server_key = hmac::sign(&key, b"Server Key").as_ref().to_vec();
        Verifier { iterations, salt, stored_key, server_key }
    }

    /// Whether `password` is the one this verifier was made from.
    pub fn matches(&self, password: &str) -> bool {
        let other = Verifier::with_salt(password, self.salt.clone(), self.iterations);
        // Compared in time that does not depend on where they differ.
        other.stored_key.len() == self.stored_key.len()
            && other.stored_key.iter().zip(&self.stored_key).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// Whether `text` looks like a verifier (starts as one), valid or not.
    pub fn looks_like(text: &str) -> bool {
        text.starts_with(PREFIX)
    }

    /// A verifier in PostgreSQL's text form; `None` if `text` is not one.
    pub fn parse(text: &str) -> Option<Verifier> {
        let rest = text.strip_prefix(PREFIX)?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let iterations: u32 = iterations.parse().ok().filter(|i| *i > 0)?;
        let salt = STANDARD.decode(salt).ok().filter(|s| !s.is_empty())?;
        let stored_key = STANDARD.decode(stored).ok().filter(|k| k.len() == 32)?;
        let server_key = STANDARD.decode(server).ok().filter(|k| k.len() == 32)?;
        Some(Verifier { iterations, salt, stored_key, server_key })
    }
}

/// PostgreSQL's text form (what `pg_authid.rolpassword` shows).
impl fmt::Display for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_and_checks_the_password() {
        let v = Verifier::new("s3cret").unwrap();
        let text = v.to_string();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"));
        let back = Verifier::parse(&text).unwrap();
        assert_eq!(back, v);
        assert!(back.matches("s3cret"));
        assert!(!back.matches("s3cret "));
        // A fresh salt each time.
        assert_ne!(Verifier::new("s3cret").unwrap().salt, v.salt);
        // The Debug form shows no key material.
        assert!(!format!("{v:?}").contains(&STANDARD.encode(&v.stored_key)));
    }

    #[test]
    fn postgresql_verifiers_are_read_and_reproduced() {
        // PostgreSQL 15 stored this for `CREATE ROLE r PASSWORD 'foo'`:
        // the same password and salt give the same keys here.
        let pg = "SCRAM-SHA-256$4096:WnbJNOiVQ3Hx05G6RZp8ag==$cH8mm4yBVwk9DgVgrMTd6I8I/dQ4pQsvHdUetOphnz0=:TfCLQRwdl2Yf8tAhI65W8PmTRkszS/cLbFMiZ73/eiw=";
        let v = Verifier::parse(pg).unwrap();
        assert_eq!(v.iterations, 4096);
        assert_eq!(v.to_string(), pg);
        assert_eq!(Verifier::with_salt("foo", v.salt.clone(), 4096), v);
        assert!(v.matches("foo") && !v.matches("Foo"));
    }

    #[test]
    fn same_keys_as_pgwire_scram() {
        // pgwire's server checks proofs against these keys: derive them its
        // way and compare.
        let salt = b"0123456789abcdef".to_vec();
        let ours = Verifier::with_salt("pencil", salt.clone(), 4096);
        let salted = pgwire::api::auth::sasl::scram::gen_salted_password("pencil", &salt, 4096);
        let theirs = pgwire::api::auth::sasl::scram::ScramSecret::verifier_from_salted_password(salt, salted, 4096);
        match theirs {
            pgwire::api::auth::sasl::scram::ScramSecret::Verifier { stored_key, server_key, .. } => {
                assert_eq!(stored_key, ours.stored_key);
                assert_eq!(server_key, ours.server_key);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn malformed_verifiers_are_not_read() {
        for bad in [
            "SCRAM-SHA-256$",
            "SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA",
            "SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA",
            "SCRAM-SHA-256$4096:!!$x:y",
            "md5abcdef",
        ] {
            assert!(Verifier::parse(bad).is_none(), "{bad}");
        }
    }
}
