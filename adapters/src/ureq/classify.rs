//! ureq's errors as backstop's [`ErrorKind`]s, and the error an attempt fails with.
//!
//! Rule: classify by whether the request can have reached the server. A refused connection
//! or an unknown host was never sent; a reset, a broken pipe or a cut-off response may have
//! been; a request ureq refuses to write (an extension method, by ureq's default) was never
//! sent either, and is refused again: `InvalidRequest`, permanent. A TLS failure (a rejected certificate, a failed handshake, no common protocol
//! version) fails the same way every time: `Tls`, permanent, never retried.

use core::fmt;
use std::io;

use crate::classify::{find_error, io_error_kind, ResolveError};
use backstop_core::ErrorKind;
use ureq::{Error, Timeout};

/// The kind of a ureq error.
///
/// ```
/// use backstop::ErrorKind;
///
/// assert_eq!(backstop::ureq::error_kind(&ureq::Error::HostNotFound), ErrorKind::Dns);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(backstop::ureq::error_kind(&ureq::Error::Io(refused)), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn error_kind(error: &Error) -> ErrorKind {
    match error {
        Error::Io(e) => io_kind(e),
        Error::Timeout(Timeout::Resolve | Timeout::Connect) => ErrorKind::ConnectTimeout,
        Error::Timeout(_) => ErrorKind::Timeout,
        Error::HostNotFound => ErrorKind::Dns,
        Error::ConnectionFailed => ErrorKind::ConnectionRefused,
        Error::BadUri(_)
        | Error::Http(_)
        | Error::InvalidProxyUrl
        | Error::RequireHttpsOnly(_)
        | Error::TlsRequired => ErrorKind::InvalidRequest,
        Error::Tls(_) => ErrorKind::Tls,
        #[cfg(feature = "rustls")]
        Error::Rustls(_) => ErrorKind::Tls,
        Error::Protocol(e) if refused_before_sending(e) => ErrorKind::InvalidRequest,
        Error::Protocol(_) | Error::LargeResponseHeader(..) => ErrorKind::Protocol,
        _ => ErrorKind::Other,
    }
}

/// Whether ureq refused the request itself before writing any of it: a method outside RFC
/// 9110's (with ureq's default, which allows none), or headers that contradict each other.
/// Nothing reached the server, and the same request is refused again.
fn refused_before_sending(e: &ureq_proto::Error) -> bool {
    use ureq_proto::Error as Refused;
    matches!(
        e,
        Refused::MethodVersionMismatch(..)
            | Refused::UnsupportedVersion
            | Refused::TooManyHostHeaders
            | Refused::TooManyContentLengthHeaders
            | Refused::BadHostHeader
            | Refused::BadAuthorizationHeader
            | Refused::BodyNotAllowed
    )
}

/// The kind of an I/O error: ureq's rustls connector reports a failed handshake as one around
/// the `rustls::Error`, and the adapter's resolver marks a failed lookup with a
/// [`ResolveError`].
fn io_kind(e: &io::Error) -> ErrorKind {
    if let Some(kind) = crate::classify::body_error_kind(e) {
        return kind;
    }
    #[cfg(feature = "rustls")]
    if crate::classify::find_tls_error(e).is_some() {
        return ErrorKind::Tls;
    }
    if find_error::<ResolveError>(e).is_some() || e.kind() == io::ErrorKind::NotFound {
        return ErrorKind::Dns;
    }
    io_error_kind(e)
}

/// Why one attempt of the ureq client failed: ureq's error, shown with a TLS failure's cause
/// named (`TLS handshake failed: certificate rejected: UnknownIssuer`), as on the other
/// adapters. Its [`source`](std::error::Error::source) is the I/O or rustls error inside.
#[derive(Debug)]
pub struct HttpError(Error);

impl HttpError {
    /// ureq's error.
    #[must_use]
    pub fn ureq(&self) -> &Error {
        &self.0
    }

    /// ureq's error, owned.
    #[must_use]
    pub fn into_ureq(self) -> Error {
        self.0
    }

    /// The kind of this error (see [`error_kind`]).
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        error_kind(&self.0)
    }
}

impl From<Error> for HttpError {
    fn from(e: Error) -> Self {
        HttpError(e)
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(written) = crate::classify::write_tls_cause(f, self) {
            return written;
        }
        match &self.0 {
            Error::Io(e) if find_error::<ResolveError>(e).is_some() => {
                f.write_str("the host name did not resolve")
            }
            // ureq's own texts of these carry the whole URI, query and userinfo included.
            Error::BadUri(_) => f.write_str("bad URI: no scheme, an unknown scheme or no host"),
            Error::RequireHttpsOnly(_) => f.write_str("configured for https only"),
            other => fmt::Display::fmt(other, f),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Error::Io(e) => Some(e),
            #[cfg(feature = "rustls")]
            Error::Rustls(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(all(test, feature = "rustls"))]
mod tests {
    use super::*;
    use crate::rustls;

    #[test]
    fn a_rejected_certificate_is_tls_and_named() {
        let rejected = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        // As ureq's rustls connector reports it: the handshake's io::Error.
        let error = HttpError::from(Error::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            rejected,
        )));
        assert_eq!(error.kind(), ErrorKind::Tls);
        assert_eq!(
            error.to_string(),
            "TLS handshake failed: certificate rejected: UnknownIssuer"
        );
    }

    #[test]
    fn a_failed_lookup_is_dns() {
        let lookup = io::Error::other("failed to lookup address information");
        let error = HttpError::from(Error::Io(io::Error::from(ResolveError::new(lookup))));
        assert_eq!(error.kind(), ErrorKind::Dns);
        assert_eq!(error.to_string(), "the host name did not resolve");
    }

    #[test]
    fn a_bad_uri_is_shown_without_the_uri() {
        let uri = "ftp://user:pass@127.0.0.1/?token=s3cret";
        for error in [
            Error::BadUri(format!("{uri} is missing host")),
            Error::RequireHttpsOnly(uri.to_owned()),
        ] {
            let error = HttpError::from(error);
            assert_eq!(error.kind(), ErrorKind::InvalidRequest);
            let shown = error.to_string();
            assert!(
                !shown.contains("s3cret") && !shown.contains("pass"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_reset_stays_a_reset() {
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(error_kind(&Error::Io(reset)), ErrorKind::ConnectionReset);
    }
}
