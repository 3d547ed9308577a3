//! ureq's TLS settings from the choices the other adapters' `TlsBuilder` offers: which roots
//! to trust, and which private CAs to add.
//!
//! Rule: TLS is the client's. ureq 3 runs its own rustls connector and takes no rustls
//! `ClientConfig`, only its own [`TlsConfig`] with a set of root certificates; this module
//! only makes that set (Mozilla's roots or the platform's, plus private CAs), so that a
//! private CA is trusted the same way on every adapter.

use std::sync::Arc;

use crate::{Roots, TlsConfigError};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// ureq's TLS configuration trusting `roots` and the CA certificates in `ca_pem` (PEM text
/// with one or more `CERTIFICATE` sections), for [`Client::with_tls`](crate::ureq::Client::with_tls).
/// The same trust as `TlsBuilder::new().roots(roots).ca_pem(ca_pem)` gives smol and tokio.
///
/// ```
/// use backstop::ureq::{tls_config, Client, Retrier, Roots};
/// # let ca = rcgen::generate_simple_self_signed(["ca.internal".to_owned()])?;
/// # let ca_pem = ca.cert.pem();
///
/// // Mozilla's roots and a private CA (its PEM text, e.g. `std::fs::read("ca.pem")?`).
/// let tls = tls_config(Roots::Bundled, Some(ca_pem.as_bytes()))?;
/// let client = Client::with_tls(Retrier::default(), tls);
/// # let _ = client;
/// // A PEM without a certificate is an error, not a panic.
/// assert!(tls_config(Roots::Custom, Some(b"not a certificate")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`TlsConfigError`] when `ca_pem` holds no valid certificate, the platform store has no
/// root, or no root at all would be trusted.
pub fn tls_config(roots: Roots, ca_pem: Option<&[u8]>) -> Result<TlsConfig, TlsConfigError> {
    let mut certs = root_certs(roots)?;
    if let Some(pem) = ca_pem {
        certs.extend(private_cas(pem)?);
    }
    if certs.is_empty() {
        return Err(TlsConfigError::NoRoots);
    }
    Ok(TlsConfig::builder()
        .root_certs(RootCerts::Specific(Arc::new(certs)))
        .build())
}

fn root_certs(roots: Roots) -> Result<Vec<Certificate<'static>>, TlsConfigError> {
    Ok(match roots {
        Roots::Bundled => webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()))
            .collect(),
        Roots::Platform => {
            // As `TlsBuilder`: errors beside some certificates are what every platform store
            // has; no certificate at all is not.
            let found = rustls_native_certs::load_native_certs().certs;
            if found.is_empty() {
                return Err(TlsConfigError::NoPlatformRoots);
            }
            found
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect()
        }
        _ => Vec::new(),
    })
}

fn private_cas(pem: &[u8]) -> Result<Vec<Certificate<'static>>, TlsConfigError> {
    let mut cas = Vec::new();
    for item in ureq::tls::parse_pem(pem) {
        // A key next to the certificate (a bundle) is not a CA: skipped, never shown.
        let item = item.map_err(|e| TlsConfigError::InvalidPem(e.to_string()))?;
        if let PemItem::Certificate(cert) = item {
            cas.push(cert);
        }
    }
    if cas.is_empty() {
        return Err(TlsConfigError::InvalidPem(
            "no CERTIFICATE section found".to_owned(),
        ));
    }
    Ok(cas)
}
