//! TLS for client connections (`--tls-cert`, `--tls-key`): the acceptor
//! pgwire answers an SSLRequest with (rustls, ring), made from PEM files.
//!
//! Owns: reading the certificate chain and key and the rustls server
//! configuration. Must not know SQL or sessions.

use std::path::Path;
use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;

use crate::repr::Error;

/// The server's certificate chain (PEM, leaf first) and key.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

impl TlsFiles {
    /// The certificate file's bytes (for SCRAM channel binding, which
    /// hashes the leaf certificate).
    pub fn cert_pem(&self) -> Result<Vec<u8>, Error> {
        std::fs::read(&self.cert).map_err(|e| Error::Internal(format!("could not read {}: {e}", self.cert.display())))
    }

    /// The acceptor for these files; a clear error if they cannot be read
    /// or do not match.
    pub fn acceptor(&self) -> Result<TlsAcceptor, Error> {
        let certs = read_certs(&self.cert)?;
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| Error::Internal(format!("could not read a private key from {}: {e}", self.key.display())))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Internal(format!("TLS: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| {
                Error::Internal(format!(
                    "TLS: the key {} does not go with the certificate {}: {e}",
                    self.key.display(),
                    self.cert.display()
                ))
            })?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| Error::Internal(format!("could not read certificates from {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Internal(format!("no certificate in {}", path.display())));
    }
    Ok(certs)
}
