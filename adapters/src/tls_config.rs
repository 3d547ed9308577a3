//! A rustls `ClientConfig` from the few choices most callers make: which roots to trust, and
//! which private CAs to add.
//!
//! Rule: TLS is the HTTP client's; backstop only builds its configuration, once for every
//! adapter. rustls runs on the `ring` provider, named explicitly so that another crate enabling
//! a second provider cannot make the process default ambiguous.

use core::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

/// Which root certificates a client trusts, besides the CAs added to [`TlsBuilder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Roots {
    /// Mozilla's roots, compiled in (`webpki-roots`): the same on every machine, container
    /// images without a CA bundle included. The default.
    #[default]
    Bundled,
    /// The operating system's store (`rustls-native-certs`; on Linux the CA bundle, and
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` when set): what a corporate proxy's CA is added to.
    Platform,
    /// None: only the CAs added with [`TlsBuilder::ca_pem`] or [`TlsBuilder::ca_pem_file`]
    /// (a private service that must not accept a public certificate).
    Custom,
}

/// Builds a rustls [`ClientConfig`] for the adapters' `Client::with_tls`.
///
/// ```
/// use backstop::{Roots, TlsBuilder};
///
/// // The default: Mozilla's roots.
/// let config = TlsBuilder::new().build()?;
/// assert!(config.alpn_protocols.is_empty());
///
/// // A missing CA file is an error when the config is built, not a panic.
/// let missing = TlsBuilder::new().roots(Roots::Custom).ca_pem_file("/nonexistent/ca.pem");
/// assert!(missing.build().is_err());
/// # Ok::<(), backstop::TlsConfigError>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct TlsBuilder {
    roots: Roots,
    cas: Vec<Ca>,
}

#[derive(Clone, Debug)]
enum Ca {
    Pem(Vec<u8>),
    PemFile(PathBuf),
}

impl TlsBuilder {
    /// Bundled roots, no private CA.
    pub fn new() -> Self {
        TlsBuilder::default()
    }

    /// The roots to trust (default: [`Roots::Bundled`]).
    pub fn roots(mut self, roots: Roots) -> Self {
        self.roots = roots;
        self
    }

    /// Also trusts the CA certificates in `pem` (one or more `CERTIFICATE` sections).
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.cas.push(Ca::Pem(pem.into()));
        self
    }

    /// Also trusts the CA certificates in the PEM file at `path`, read by [`build`](Self::build).
    pub fn ca_pem_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.cas.push(Ca::PemFile(path.into()));
        self
    }

    /// The configuration: the roots, the added CAs, rustls' safe default protocol versions
    /// (TLS 1.2 and 1.3), no client certificate.
    ///
    /// # Errors
    ///
    /// [`TlsConfigError`] when a CA file cannot be read, a PEM holds no valid certificate,
    /// the platform store has no root, or no root at all would be trusted.
    pub fn build(self) -> Result<ClientConfig, TlsConfigError> {
        let mut store = self.root_store()?;
        for ca in &self.cas {
            add_ca(&mut store, ca)?;
        }
        if store.is_empty() {
            return Err(TlsConfigError::NoRoots);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Ok(ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsConfigError::Rustls)?
            .with_root_certificates(store)
            .with_no_client_auth())
    }

    fn root_store(&self) -> Result<RootCertStore, TlsConfigError> {
        Ok(match self.roots {
            Roots::Bundled => RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            },
            Roots::Platform => {
                // Errors beside some certificates (one unreadable file in a directory) are
                // what every platform store has; no certificate at all is not.
                let found = rustls_native_certs::load_native_certs();
                let mut store = RootCertStore::empty();
                let (added, _unparsable) = store.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(TlsConfigError::NoPlatformRoots);
                }
                store
            }
            Roots::Custom => RootCertStore::empty(),
        })
    }
}

fn add_ca(store: &mut RootCertStore, ca: &Ca) -> Result<(), TlsConfigError> {
    let bytes = match ca {
        Ca::Pem(pem) => pem.clone(),
        Ca::PemFile(path) => std::fs::read(path).map_err(|source| TlsConfigError::ReadCaFile {
            path: path.clone(),
            source,
        })?,
    };
    let mut added = 0_usize;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| TlsConfigError::InvalidPem(e.to_string()))?;
        store.add(cert).map_err(TlsConfigError::Rustls)?;
        added += 1;
    }
    if added == 0 {
        return Err(TlsConfigError::InvalidPem(
            "no CERTIFICATE section found".to_owned(),
        ));
    }
    Ok(())
}

/// Why [`TlsBuilder::build`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A CA file could not be read.
    ReadCaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A CA PEM is malformed, or holds no `CERTIFICATE` section.
    InvalidPem(String),
    /// The platform store holds no usable root certificate.
    NoPlatformRoots,
    /// No root would be trusted ([`Roots::Custom`] without a CA).
    NoRoots,
    /// rustls refused a certificate or the configuration.
    Rustls(rustls::Error),
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsConfigError::ReadCaFile { path, source } => {
                write!(f, "cannot read the CA file {}: {source}", path.display())
            }
            TlsConfigError::InvalidPem(why) => write!(f, "invalid CA PEM: {why}"),
            TlsConfigError::NoPlatformRoots => {
                f.write_str("the platform's certificate store has no root certificate")
            }
            TlsConfigError::NoRoots => f.write_str("no root certificate to trust"),
            TlsConfigError::Rustls(e) => write!(f, "TLS configuration refused: {e}"),
        }
    }
}

impl std::error::Error for TlsConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsConfigError::ReadCaFile { source, .. } => Some(source),
            TlsConfigError::Rustls(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_roots_without_a_ca_are_refused() {
        let result = TlsBuilder::new().roots(Roots::Custom).build();
        assert!(matches!(result, Err(TlsConfigError::NoRoots)), "{result:?}");
    }

    #[test]
    fn a_pem_without_a_certificate_is_refused() {
        let result = TlsBuilder::new().ca_pem("not a certificate").build();
        assert!(
            matches!(result, Err(TlsConfigError::InvalidPem(_))),
            "{result:?}"
        );
    }

    #[test]
    fn a_missing_ca_file_names_the_file() {
        let error = TlsBuilder::new()
            .ca_pem_file("/nonexistent/ca.pem")
            .build()
            .expect_err("no such file");
        assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
    }
}
