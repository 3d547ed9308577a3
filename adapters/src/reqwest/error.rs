//! reqwest's errors as kinds, and the error an operation ends with.
//!
//! Rule (RFC 9110 §9.2.2): classify by whether the request can have reached the server. reqwest
//! says so itself (`is_connect`); the chain below it is hyper's, which the driver's helpers
//! read as the hyper-based adapters do, so the same failure gets the same kind.

use crate::classify::{connect_error_kind, exchange_error_kind};
use crate::outcome::RetryError;
use backstop_core::ErrorKind;

/// What an operation that ended without a response hands back, inside
/// `reqwest_middleware::Error::Middleware` (see [`retry_error`]).
pub type Error = RetryError<reqwest_middleware::Error>;

/// The backstop error inside an error from a client with [`RetryMiddleware`]: how the
/// operation ended (attempts, reason), and the last attempt's error as its source. `None` for
/// an error that did not come from the retry loop.
///
/// [`RetryMiddleware`]: crate::reqwest::RetryMiddleware
#[must_use]
pub fn retry_error(error: &reqwest_middleware::Error) -> Option<&Error> {
    match error {
        reqwest_middleware::Error::Middleware(e) => e.downcast_ref::<Error>(),
        reqwest_middleware::Error::Reqwest(_) => None,
    }
}

/// The kind of an error from the rest of the middleware chain and reqwest.
///
/// - a connect failure (resolving, connecting, the TLS handshake), by the driver's
///   `connect_error_kind`: a TLS failure is `Tls`, permanent (a `rustls::Error` with feature
///   `rustls`; a certificate native-tls rejected, by its text), reqwest's connect time-out
///   `ConnectTimeout`, a refusal `ConnectionRefused` (those are never sent); a failure it does
///   not recognise is `Other` (maybe sent: an unknown error is never taken for an unsent one);
/// - reqwest's own time-out is `Timeout`; a URL reqwest cannot send to is `InvalidRequest`;
/// - a redirect loop or too many redirects is `InvalidRequest` (permanent: a retry follows
///   the same redirects);
/// - a failure once connected is what the socket or hyper says (reset, EOF, broken pipe);
/// - a body the middleware read inside the attempt ([`ReadBody`](crate::body::ReadBody))
///   says its own kind: `BodyCut`, `BodyTooLarge`;
/// - another middleware's error is `Other`.
/// - a host that did not resolve is `Dns` (hyper-util's connector under reqwest says so).
#[must_use]
pub fn error_kind(error: &reqwest_middleware::Error) -> ErrorKind {
    match error {
        reqwest_middleware::Error::Reqwest(e) => reqwest_error_kind(e),
        reqwest_middleware::Error::Middleware(e) => e
            .downcast_ref::<crate::body::BodyError>()
            .map_or(ErrorKind::Other, crate::body::BodyError::kind),
    }
}

/// The kind of reqwest's own error (see [`error_kind`]).
pub(crate) fn reqwest_error_kind(e: &reqwest::Error) -> ErrorKind {
    if e.is_connect() {
        // reqwest's connect time-out is its own error type, not an I/O time-out.
        return if e.is_timeout() && connect_error_kind(e) != ErrorKind::Tls {
            ErrorKind::ConnectTimeout
        } else {
            connect_error_kind(e)
        };
    }
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_builder() || e.is_redirect() {
        ErrorKind::InvalidRequest
    } else {
        exchange_error_kind(e)
    }
}
