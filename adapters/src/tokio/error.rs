//! The tokio client's errors and their kinds.
//!
//! Rule: the same failure gets the same kind on every adapter; the mapping itself is the
//! driver's (`connect_error_kind`, `exchange_error_kind`), shared with `backstop::smol`.

use core::fmt;

use crate::ErrorKind;
use crate::{connect_error_kind, exchange_error_kind, is_unservable_uri};

/// Why one attempt of the tokio client failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpError {
    /// The URI has no host, or a scheme other than `http` (or `https`, with the `rustls`
    /// feature): nothing was sent.
    InvalidUri,
    /// hyper-util's client failed: connecting (DNS, TCP, TLS) or in the exchange.
    Client(hyper_util::client::legacy::Error),
}

impl fmt::Display for HttpError {
    /// Names a TLS failure's cause (`certificate rejected: UnknownIssuer`), which hyper-util's
    /// own text (`client error (Connect)`) leaves to the source chain.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUri => fmt::Display::fmt(&crate::UnsupportedUri, f),
            HttpError::Client(e) => {
                crate::write_tls_cause(f, e).unwrap_or_else(|| fmt::Display::fmt(e, f))
            }
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::InvalidUri => None,
            HttpError::Client(e) => Some(e),
        }
    }
}

/// The kind of a tokio client error: the same kinds `backstop::smol` gives for the same
/// failures (the table is in the adapters' README).
///
/// ```
/// use backstop::ErrorKind;
/// assert_eq!(backstop::tokio::error_kind(&backstop::tokio::HttpError::InvalidUri), ErrorKind::InvalidRequest);
/// ```
#[must_use]
pub fn error_kind(error: &HttpError) -> ErrorKind {
    match error {
        HttpError::InvalidUri => ErrorKind::InvalidRequest,
        // The connection was never made (resolving, connecting, the TLS handshake).
        HttpError::Client(e) if e.is_connect() => connect_error_kind(e),
        // hyper-util refusing the request itself (a method or version it cannot send).
        HttpError::Client(e) if is_unservable_uri(e) => ErrorKind::InvalidRequest,
        HttpError::Client(e) => exchange_error_kind(e),
    }
}
