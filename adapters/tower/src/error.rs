//! The inner service's errors: one type for any service, and their kinds.
//!
//! Rule (RFC 9110 §9.2.2): classify by whether the request can have reached the server. A
//! hyper-util client says so (`is_connect`); below it, the driver's helpers read the chain as
//! the hyper-based adapters do, so the same failure gets the same kind.

use core::fmt;
use std::error::Error;

use backstop::ErrorKind;
use backstop_driver::{connect_error_kind, exchange_error_kind, find_error, is_unservable_uri};

type BoxError = Box<dyn Error + Send + Sync>;

/// An attempt's error from the inner service, whatever its type (tower services often return
/// a boxed error).
#[derive(Debug)]
pub struct ServiceError(BoxError);

impl ServiceError {
    pub(crate) fn new(error: impl Into<BoxError>) -> Self {
        ServiceError(error.into())
    }

    /// The service's own error.
    #[must_use]
    pub fn into_inner(self) -> BoxError {
        self.0
    }

    /// The service's own error.
    #[must_use]
    pub fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Display for ServiceError {
    /// The service's own text, except for a TLS failure, whose cause it names
    /// (`TLS handshake failed: certificate rejected: UnknownIssuer`, with the `rustls` feature):
    /// a hyper-util client's own text (`client error (Connect)`) leaves it to the chain.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error: &(dyn Error + 'static) = &*self.0;
        backstop_driver::write_tls_cause(f, error).unwrap_or_else(|| fmt::Display::fmt(error, f))
    }
}

impl Error for ServiceError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.0)
    }
}

/// The kind of an inner service's error: a hyper-util client's connect failure (resolving,
/// connecting, the TLS handshake) by `connect_error_kind` (refused, DNS and a connect
/// time-out are not sent; an unrecognised one is `Other`), a URL the client cannot serve (a
/// relative URI, an unsupported scheme or method: `is_unservable_uri`) `InvalidRequest`,
/// anything else by what its chain holds (a TLS failure, the socket's I/O error, hyper's
/// error), else `Other`.
///
/// ```
/// use backstop::ErrorKind;
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// assert_eq!(backstop_tower::error_kind(&reset), ErrorKind::ConnectionReset);
/// ```
#[must_use]
pub fn error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    match find_error::<hyper_util::client::legacy::Error>(error) {
        Some(e) if e.is_connect() => connect_error_kind(e),
        _ if is_unservable_uri(error) => ErrorKind::InvalidRequest,
        _ => exchange_error_kind(error),
    }
}
