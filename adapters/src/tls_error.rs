//! TLS failures, found in a client's error chain and named for people.
//!
//! Rule: a certificate the client rejects, a failed handshake, or a protocol version the
//! server does not speak will fail the same way on the next attempt, and nothing was sent:
//! [`ErrorKind::Tls`](crate::ErrorKind::Tls), permanent, never retried. rustls reports
//! them as a `rustls::Error`, usually inside an `io::Error`; [`error_chain`] looks there.

use core::fmt;
use std::error::Error;

use rustls::CertificateError;

use crate::classify::error_chain;

/// The first `rustls::Error` in `error`'s chain, inside `io::Error`s included.
#[must_use]
pub fn find_tls_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    error_chain(error).find_map(|e| e.downcast_ref::<rustls::Error>())
}

/// The TLS cause of a failure, for an error's `Display`: `certificate rejected: UnknownIssuer`,
/// `the server refused the handshake: ProtocolVersion`. It names the cause only: no host
/// name, no certificate contents, nothing secret.
///
/// ```
/// use backstop::classify::TlsFailure;
///
/// let rejected = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
/// let error = std::io::Error::new(std::io::ErrorKind::InvalidData, rejected);
/// let failure = TlsFailure::find(&error).expect("a TLS failure");
/// assert_eq!(failure.to_string(), "certificate rejected: UnknownIssuer");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TlsFailure<'a> {
    error: &'a rustls::Error,
}

impl<'a> TlsFailure<'a> {
    /// The TLS failure in `error`'s chain, if there is one.
    #[must_use]
    pub fn find(error: &'a (dyn Error + 'static)) -> Option<Self> {
        find_tls_error(error).map(|error| TlsFailure { error })
    }

    /// rustls' own error.
    #[must_use]
    pub fn error(&self) -> &'a rustls::Error {
        self.error
    }
}

impl fmt::Display for TlsFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error {
            // The verifier's own reason (webpki's `CaUsedAsEndEntity`, say): a name, no data.
            rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
                write!(f, "certificate rejected: {other}")
            }
            rustls::Error::InvalidCertificate(e) => {
                write!(f, "certificate rejected: {}", certificate_error_name(e))
            }
            rustls::Error::NoCertificatesPresented => {
                f.write_str("certificate rejected: the server presented none")
            }
            rustls::Error::AlertReceived(alert) => {
                write!(f, "the server refused the handshake: {alert:?}")
            }
            rustls::Error::PeerIncompatible(why) => {
                write!(f, "the server's TLS is incompatible: {why:?}")
            }
            rustls::Error::PeerMisbehaved(why) => {
                write!(f, "the server broke the TLS protocol: {why:?}")
            }
            other => write!(f, "TLS failed: {other}"),
        }
    }
}

/// The name of a certificate error without the data some variants carry (the names the
/// certificate presented, the times): short and stable across rustls' `...Context` variants.
fn certificate_error_name(e: &CertificateError) -> &'static str {
    match e {
        CertificateError::UnknownIssuer => "UnknownIssuer",
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "NotValidForName"
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "Expired",
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "NotValidYet"
        }
        CertificateError::Revoked => "Revoked",
        CertificateError::BadEncoding => "BadEncoding",
        CertificateError::BadSignature => "BadSignature",
        CertificateError::UnsupportedSignatureAlgorithmContext { .. }
        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "UnsupportedSignatureAlgorithm"
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "InvalidPurpose"
        }
        CertificateError::UnhandledCriticalExtension => "UnhandledCriticalExtension",
        CertificateError::ApplicationVerificationFailure => "ApplicationVerificationFailure",
        _ => "Other",
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::classify::connect_error_kind;
    use backstop_core::ErrorKind;

    fn wrapped(e: rustls::Error) -> io::Error {
        // As hyper-rustls hands it over: an io::Error around tokio-rustls' io::Error.
        io::Error::other(io::Error::new(io::ErrorKind::InvalidData, e))
    }

    #[test]
    fn a_rejected_certificate_deep_in_io_errors_is_tls() {
        let e = wrapped(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForNameContext {
                expected: rustls::pki_types::ServerName::try_from("a.example")
                    .expect("a name")
                    .to_owned(),
                presented: vec!["b.example".to_owned()],
            },
        ));
        assert_eq!(connect_error_kind(&e), ErrorKind::Tls);
        let shown = TlsFailure::find(&e).expect("found").to_string();
        assert_eq!(shown, "certificate rejected: NotValidForName");
    }

    #[test]
    fn a_protocol_version_alert_is_tls() {
        let e = wrapped(rustls::Error::AlertReceived(
            rustls::AlertDescription::ProtocolVersion,
        ));
        assert_eq!(connect_error_kind(&e), ErrorKind::Tls);
        assert_eq!(
            TlsFailure::find(&e).expect("found").to_string(),
            "the server refused the handshake: ProtocolVersion"
        );
    }

    #[test]
    fn the_verifiers_own_reason_is_named() {
        // A self-signed certificate marked as a CA, presented as the server's: webpki's reason
        // reaches the text instead of a bare "Other".
        #[derive(Debug)]
        struct CaUsedAsEndEntity;
        impl fmt::Display for CaUsedAsEndEntity {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("CaUsedAsEndEntity")
            }
        }
        impl Error for CaUsedAsEndEntity {}
        let other = rustls::OtherError(std::sync::Arc::new(CaUsedAsEndEntity));
        let e = wrapped(rustls::Error::InvalidCertificate(CertificateError::Other(
            other,
        )));
        assert_eq!(connect_error_kind(&e), ErrorKind::Tls);
        assert_eq!(
            TlsFailure::find(&e).expect("found").to_string(),
            "certificate rejected: CaUsedAsEndEntity"
        );
    }

    #[test]
    fn an_io_error_without_rustls_is_no_tls_failure() {
        let e = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(TlsFailure::find(&e).is_none());
    }
}
