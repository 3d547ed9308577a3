//! The smol service's errors and their kinds.
//!
//! Rule: the same failure gets the same kind on every adapter; the mapping itself is the
//! driver's (`connect_error_kind`, `exchange_error_kind`), shared with `backstop::tokio`.

use core::fmt;
use std::io;

use crate::classify::{connect_error_kind, exchange_error_kind, ResolveError};
use backstop_core::ErrorKind;

/// Why one request of [`HttpService`](crate::smol::HttpService) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpError {
    /// The URI has no host, or a scheme other than `http` (or `https`, with the `rustls`
    /// feature): nothing was sent.
    InvalidUri,
    /// The host name did not resolve: nothing was sent.
    Dns(ResolveError),
    /// The TCP connection failed: nothing was sent.
    Connect(io::Error),
    /// The TLS handshake failed (a rejected certificate, no common protocol version, the
    /// server closed the connection): nothing was sent.
    Tls(io::Error),
    /// The HTTP exchange failed.
    Http(hyper::Error),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUri => fmt::Display::fmt(&crate::classify::UnsupportedUri, f),
            HttpError::Dns(e) => write!(f, "{e}"),
            HttpError::Connect(e) => write!(f, "connect failed: {e}"),
            HttpError::Tls(e) => crate::classify::write_tls_cause(f, e)
                .unwrap_or_else(|| write!(f, "TLS handshake failed: {e}")),
            HttpError::Http(e) => write!(f, "HTTP exchange failed: {e}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Found in the chain by `backstop::tower::error_kind`: `InvalidRequest`.
            HttpError::InvalidUri => Some(&crate::classify::UnsupportedUri),
            HttpError::Dns(e) => Some(e),
            HttpError::Connect(e) | HttpError::Tls(e) => Some(e),
            HttpError::Http(e) => Some(e),
        }
    }
}

/// The kind of a smol service error: the same kinds `backstop::tokio` gives for the same
/// failures (the table is in [`classify`](crate::classify)'s docs).
///
/// ```
/// use backstop::ErrorKind;
/// use backstop::smol::{error_kind, HttpError};
///
/// assert_eq!(error_kind(&HttpError::InvalidUri), ErrorKind::InvalidRequest);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(error_kind(&HttpError::Connect(refused)), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn error_kind(error: &HttpError) -> ErrorKind {
    match error {
        HttpError::InvalidUri => ErrorKind::InvalidRequest,
        HttpError::Http(e) => exchange_error_kind(e),
        // Resolving, connecting, the handshake: the connection was never made.
        HttpError::Dns(_) | HttpError::Connect(_) | HttpError::Tls(_) => connect_error_kind(error),
    }
}
