//! URLs and headers without secrets.
//!
//! Rule: a URL in a log, a metric or a `Debug` never shows its userinfo, its query or its
//! fragment, where tokens and passwords live; a header in a `Debug` shows its name only (its
//! value may be a credential: `Authorization`, `Cookie`, an API key, a raw `Idempotency-Key`).

use core::fmt;

/// The `server.address` and `server.port` of `uri` (OpenTelemetry's HTTP names): its host,
/// never its userinfo, an IPv6 address without the brackets a URI needs around it (empty
/// without a host); its port, else the scheme's (none for another scheme). Shared by the
/// spans and the metrics.
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub(crate) fn server(uri: &http::Uri) -> (&str, Option<u16>) {
    let host = uri.host().unwrap_or_default();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    });
    (host, port)
}

/// The URI as `scheme://host[:port]/path`: no userinfo, no query, no fragment.
///
/// ```
/// let uri: http::Uri = "https://user:secret@api.example.com:8443/v1/items?token=abc".parse()?;
/// assert_eq!(backstop::observe::redact_uri(&uri), "https://api.example.com:8443/v1/items");
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
#[must_use]
pub fn redact_uri(uri: &http::Uri) -> String {
    RedactedUri(uri).to_string()
}

/// A URI shown without its secrets, as [`redact_uri`] writes it (`scheme://host[:port]/path`),
/// formatted only when something formats it: an event carries one, and an observer that never
/// reads the URL costs no `String`.
///
/// It compares equal to the text it writes:
///
/// ```
/// let uri: http::Uri = "http://user:pw@example.com/p?token=1".parse()?;
/// let url = backstop::observe::RedactedUri::new(&uri);
/// assert_eq!(url, "http://example.com/p");
/// assert_eq!(url.to_string(), "http://example.com/p");
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
#[derive(Clone, Copy)]
pub struct RedactedUri<'a>(&'a http::Uri);

impl<'a> RedactedUri<'a> {
    /// `uri`, to be shown without userinfo, query or fragment.
    #[must_use]
    pub fn new(uri: &'a http::Uri) -> Self {
        RedactedUri(uri)
    }

    /// Writes the parts to `out`, in order.
    fn write_to(self, out: &mut impl fmt::Write) -> fmt::Result {
        let uri = self.0;
        if let Some(scheme) = uri.scheme_str() {
            out.write_str(scheme)?;
            out.write_str("://")?;
        }
        if let Some(authority) = uri.authority() {
            out.write_str(authority.host())?;
            if let Some(port) = authority.port() {
                out.write_char(':')?;
                out.write_str(port.as_str())?;
            }
        }
        out.write_str(uri.path())
    }
}

impl fmt::Display for RedactedUri<'_> {
    /// The redacted text; a width or precision pads or cuts it as a `str`'s would.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() || f.precision().is_some() {
            let mut text = String::new();
            self.write_to(&mut text)?;
            return f.pad(&text);
        }
        self.write_to(f)
    }
}

/// As a string's `Debug`: the redacted text in quotes.
impl fmt::Debug for RedactedUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq<str> for RedactedUri<'_> {
    /// Whether the redacted text is `other`, compared as it is written (no `String`).
    fn eq(&self, other: &str) -> bool {
        /// Consumes `rest` as the parts come; fails at the first difference.
        struct Prefix<'s>(&'s str);
        impl fmt::Write for Prefix<'_> {
            fn write_str(&mut self, part: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(part).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Prefix(other);
        self.write_to(&mut rest).is_ok() && rest.0.is_empty()
    }
}

impl PartialEq<&str> for RedactedUri<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl PartialEq for RedactedUri<'_> {
    /// Whether both write the same text.
    fn eq(&self, other: &Self) -> bool {
        *self == other.to_string().as_str()
    }
}

impl Eq for RedactedUri<'_> {}

/// `Debug` of a URI as [`redact_uri`] writes it.
pub(crate) struct DebugUri<'a>(pub(crate) &'a http::Uri);

impl fmt::Debug for DebugUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&RedactedUri(self.0), f)
    }
}

/// `Debug` of a header map as the list of its names, without the values.
pub(crate) struct DebugHeaderNames<'a>(pub(crate) &'a http::HeaderMap);

impl fmt::Debug for DebugHeaderNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.keys().map(http::HeaderName::as_str))
            .finish()
    }
}

/// `Debug` of an `http::Request` without secrets: method, redacted URI, version, header names,
/// and never the body.
pub(crate) struct DebugRequest<'a, B>(pub(crate) &'a http::Request<B>);

impl<B> fmt::Debug for DebugRequest<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        f.debug_struct("Request")
            .field("method", r.method())
            .field("uri", &DebugUri(r.uri()))
            .field("version", &r.version())
            .field("headers", &DebugHeaderNames(r.headers()))
            .finish_non_exhaustive()
    }
}

/// `Debug` of an `http::Response` without secrets: status, version, header names (a
/// `Set-Cookie` value is a credential), and never the body.
pub(crate) struct DebugResponse<'a, B>(pub(crate) &'a http::Response<B>);

impl<B> fmt::Debug for DebugResponse<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        f.debug_struct("Response")
            .field("status", &r.status())
            .field("version", &r.version())
            .field("headers", &DebugHeaderNames(r.headers()))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_query_and_fragment_are_removed() {
        for (input, expected) in [
            ("http://127.0.0.1:8080/a/b?x=1", "http://127.0.0.1:8080/a/b"),
            (
                "https://alice:pw@example.com/p?token=1",
                "https://example.com/p",
            ),
            ("https://tok@example.com", "https://example.com/"),
            ("http://[::1]:80/x?y", "http://[::1]:80/x"),
        ] {
            // Two URIs that write the same text are equal (an empty port writes nothing).
            let (a, b): (http::Uri, http::Uri) = (
                "http://h:/p".parse().expect("uri"),
                "http://h/p".parse().expect("uri"),
            );
            assert_eq!(
                RedactedUri::new(&a).to_string(),
                RedactedUri::new(&b).to_string()
            );
            assert_eq!(RedactedUri::new(&a), RedactedUri::new(&b));
            let uri: http::Uri = input.parse().expect("uri");
            assert_eq!(redact_uri(&uri), expected, "{input}");
            assert_eq!(RedactedUri(&uri), expected, "{input}");
            assert_ne!(
                RedactedUri(&uri),
                &expected[..expected.len() - 1],
                "{input}"
            );
            assert_ne!(
                RedactedUri(&uri),
                format!("{expected}/").as_str(),
                "{input}"
            );
        }
    }
}
