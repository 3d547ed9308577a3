//! ureq's errors as backstop's [`ErrorKind`]s.
//!
//! Rule: classify by whether the request can have reached the
//! server. A refused connection or an unknown host was never sent; a reset, a broken pipe or a
//! cut-off response may have been.

use std::io;

use backstop::ErrorKind;
use backstop_driver::io_error_kind;
use ureq::{Error, Timeout};

/// The kind of a ureq error.
///
/// ```
/// use backstop::ErrorKind;
///
/// assert_eq!(backstop_ureq::error_kind(&ureq::Error::HostNotFound), ErrorKind::Dns);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(backstop_ureq::error_kind(&ureq::Error::Io(refused)), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn error_kind(error: &Error) -> ErrorKind {
    match error {
        Error::Io(e) if e.kind() == io::ErrorKind::NotFound => ErrorKind::Dns,
        Error::Io(e) => io_error_kind(e),
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
        Error::Protocol(_) | Error::LargeResponseHeader(..) => ErrorKind::Protocol,
        _ => ErrorKind::Other,
    }
}
