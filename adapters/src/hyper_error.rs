//! The errors of the hyper-based adapters (smol, tokio) as [`ErrorKind`]s, once for both.
//!
//! Rule: the same failure gets the same kind on every adapter. An adapter that knows the connection
//! was never made uses [`connect_error_kind`](crate::classify::connect_error_kind); for a failure
//! once connected, this module's [`exchange_error_kind`] reads the socket's I/O error first, then
//! hyper's own error.

use std::error::Error;

use backstop_core::ErrorKind;

use crate::classify::{error_chain, find_io_error, io_error_kind};

/// The kind of an error once the connection was made (sending the request, reading the
/// response head): a TLS failure (with the `rustls` feature), then the socket's I/O error
/// (reset, broken pipe, EOF, time-out), then hyper's (an incomplete message, a parse error).
///
/// ```
/// use backstop::ErrorKind;
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// assert_eq!(backstop::classify::exchange_error_kind(&reset), ErrorKind::ConnectionReset);
/// ```
#[must_use]
pub fn exchange_error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    #[cfg(feature = "rustls")]
    if crate::tls_error::find_tls_error(error).is_some() {
        return ErrorKind::Tls;
    }
    if let Some(kind) = find_io_error(error)
        .map(io_error_kind)
        .filter(|k| *k != ErrorKind::Other)
    {
        return kind;
    }
    hyper_error_kind(error).unwrap_or(ErrorKind::Other)
}

/// The kind of the first `hyper::Error` in the chain, if any.
fn hyper_error_kind(error: &(dyn Error + 'static)) -> Option<ErrorKind> {
    let h = error_chain(error).find_map(|e| e.downcast_ref::<hyper::Error>())?;
    Some(if h.is_incomplete_message() {
        ErrorKind::UnexpectedEof
    } else if h.is_parse() || h.is_parse_status() {
        ErrorKind::Protocol
    } else if h.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Other
    })
}
