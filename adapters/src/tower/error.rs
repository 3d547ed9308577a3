//! The inner service's errors: one type for any service, and their kinds.
//!
//! Rule (RFC 9110 §9.2.2): classify by whether the request can have reached the server. A
//! hyper-util client says so (`is_connect`); below it, the driver's helpers read the chain as
//! the hyper-based adapters do, so the same failure gets the same kind.

use core::fmt;
use std::error::Error;

use crate::classify::{connect_error_kind, exchange_error_kind, find_error, is_unservable_uri};
use backstop_core::ErrorKind;

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
    /// a hyper-util client's own text (`client error (Connect)`) leaves it to the chain. A URL
    /// in the service's text (a client that says `error sending request for url (...)`) is
    /// shown without its userinfo, query and fragment; the service's own error, the
    /// [`source`](Error::source), is as the service made it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error: &(dyn Error + 'static) = &*self.0;
        crate::classify::write_tls_cause(f, error)
            .unwrap_or_else(|| write_redacted(f, &error.to_string()))
    }
}

/// Writes `text` with every URL in it (`scheme://...` up to the next space) as
/// `backstop::observe::redact_uri` shows it, or as `<URL>` when it does not parse: tokens and
/// passwords live in the parts it leaves out.
fn write_redacted(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    let mut rest = text;
    // Bounded: each pass consumes at least the `://` it found.
    while let Some(at) = rest.find("://") {
        let is_scheme = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
        let start = rest[..at]
            .rfind(|c: char| !is_scheme(c))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || c == '"')
            .map_or(rest.len(), |i| at + i);
        // A URL in parentheses, as reqwest writes it: the closing ones are not the URL's.
        let url = rest[start..end].trim_end_matches(')');
        f.write_str(&rest[..start])?;
        match url.parse::<http::Uri>() {
            Ok(uri) if uri.scheme().is_some() => f.write_str(&crate::observe::redact_uri(&uri))?,
            _ => f.write_str("<URL>")?,
        }
        rest = &rest[start + url.len()..];
    }
    f.write_str(rest)
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
/// assert_eq!(backstop::tower::error_kind(&reset), ErrorKind::ConnectionReset);
/// ```
#[must_use]
pub fn error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    // A body the attempt read (`ReadBodyLayer`) says its own kind.
    if let Some(kind) = crate::classify::body_error_kind(error) {
        return kind;
    }
    // backstop's own smol service knows which of its failures were before sending.
    #[cfg(feature = "smol")]
    if let Some(e) = find_error::<crate::smol::HttpError>(error) {
        return crate::smol::error_kind(e);
    }
    match find_error::<hyper_util::client::legacy::Error>(error) {
        Some(e) if e.is_connect() => connect_error_kind(e),
        _ if is_unservable_uri(error) => ErrorKind::InvalidRequest,
        _ => exchange_error_kind(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_in_the_services_text_is_shown_redacted() {
        let text = "error sending request for url (http://u:pa55@127.0.0.1:8/o?token=s3cret) x";
        let shown = ServiceError::new(text.to_owned()).to_string();
        assert_eq!(
            shown,
            "error sending request for url (http://127.0.0.1:8/o) x"
        );
        let odd = ServiceError::new("bad: ftp://a b://?token=s3cret) end".to_owned());
        let shown = odd.to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(
            ServiceError::new("no url here".to_owned()).to_string(),
            "no url here"
        );
    }
}
