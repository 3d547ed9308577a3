//! URLs and headers without secrets.
//!
//! Rule: a URL in a log, a metric or a `Debug` never shows its userinfo, its query or its
//! fragment, where tokens and passwords live; a header in a `Debug` shows its name only (its
//! value may be a credential: `Authorization`, `Cookie`, an API key, a raw `Idempotency-Key`).

use core::fmt;

/// A request's target as its front door has it: an `http::Uri`, or reqwest's own URL (kept
/// as it is: an operation whose URL is only shown never parses it again).
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Uri(&'a http::Uri),
    #[cfg(feature = "reqwest")]
    Url(&'a ShownUrl),
}

impl<'a> Target<'a> {
    /// The scheme, if any.
    pub(crate) fn scheme(self) -> Option<&'a str> {
        match self {
            Target::Uri(uri) => uri.scheme_str(),
            #[cfg(feature = "reqwest")]
            Target::Url(url) => Some(url.0.scheme()),
        }
    }

    /// The authority as written (a URI's userinfo too; a URL's is left out), if any.
    #[cfg(feature = "metrics")]
    pub(crate) fn authority(self) -> Option<&'a str> {
        match self {
            Target::Uri(uri) => uri.authority().map(http::uri::Authority::as_str),
            #[cfg(feature = "reqwest")]
            Target::Url(url) => Some(crate::last_origin::without_userinfo(url.0.authority())),
        }
    }

    /// The host (an IPv6 address in its brackets), if any.
    fn host(self) -> Option<&'a str> {
        match self {
            Target::Uri(uri) => uri.host(),
            #[cfg(feature = "reqwest")]
            Target::Url(url) => url.0.host_str(),
        }
    }

    /// The port as written, if any (a URL leaves out its scheme's default port).
    fn port(self) -> Option<Port<'a>> {
        match self {
            // When there is a port, it is what follows the authority's last `:`.
            Target::Uri(uri) => {
                let authority = uri.authority()?;
                authority.port()?;
                let (_, port) = authority.as_str().rsplit_once(':')?;
                Some(Port::Written(port))
            }
            #[cfg(feature = "reqwest")]
            Target::Url(url) => url.0.port().map(Port::Number),
        }
    }

    /// The path (`/` when there is none).
    fn path(self) -> &'a str {
        match self {
            Target::Uri(uri) => uri.path(),
            #[cfg(feature = "reqwest")]
            Target::Url(url) => match url.0.path() {
                "" => "/",
                path => path,
            },
        }
    }
}

/// reqwest's URL kept for the observers, who read its parts where they show it (nothing is
/// parsed). Boxed: a plan's address is no larger than a URI. (Measured against writing the
/// shown text once into a `String` of its own: one allocation fewer, but 716 instructions
/// more per GET on the reqwest probe, in the allocator's slow path.)
#[cfg(feature = "reqwest")]
pub(crate) struct ShownUrl(Box<reqwest::Url>);

#[cfg(feature = "reqwest")]
impl ShownUrl {
    /// A copy of `url`, to be shown.
    pub(crate) fn of(url: &reqwest::Url) -> Self {
        ShownUrl(Box::new(url.clone()))
    }
}

/// A port: as a URI wrote it, or as a URL's number.
#[derive(Clone, Copy)]
enum Port<'a> {
    Written(&'a str),
    #[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
    Number(u16),
}

impl Port<'_> {
    /// The port's number (none for one that is not a TCP port).
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    fn number(self) -> Option<u16> {
        match self {
            Port::Written(p) => p.parse().ok(),
            Port::Number(n) => Some(n),
        }
    }
}

/// The `server.address` and `server.port` of `target` (OpenTelemetry's HTTP names): its
/// host, never its userinfo, an IPv6 address without the brackets a URI needs around it
/// (empty without a host); its port, else the scheme's (none for another scheme). Shared by
/// the spans and the metrics.
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub(crate) fn server(target: Target<'_>) -> (&str, Option<u16>) {
    let host = target.host().unwrap_or_default();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = target
        .port()
        .and_then(Port::number)
        .or(match target.scheme() {
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
    RedactedUri::new(uri).to_string()
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
pub struct RedactedUri<'a>(Target<'a>);

impl<'a> RedactedUri<'a> {
    /// `uri`, to be shown without userinfo, query or fragment.
    #[must_use]
    pub fn new(uri: &'a http::Uri) -> Self {
        RedactedUri(Target::Uri(uri))
    }

    /// `target`, to be shown without userinfo, query or fragment.
    pub(crate) fn of(target: Target<'a>) -> Self {
        RedactedUri(target)
    }

    /// Writes the parts to `out`, in order.
    fn write_to(self, out: &mut impl fmt::Write) -> fmt::Result {
        let target = self.0;
        if let Some(scheme) = target.scheme() {
            out.write_str(scheme)?;
            out.write_str("://")?;
        }
        if let Some(host) = target.host() {
            out.write_str(host)?;
            match target.port() {
                Some(Port::Written(port)) => {
                    out.write_char(':')?;
                    out.write_str(port)?;
                }
                Some(Port::Number(port)) => write!(out, ":{port}")?,
                None => {}
            }
        }
        out.write_str(target.path())
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
        fmt::Debug::fmt(&RedactedUri::new(self.0), f)
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
            assert_eq!(RedactedUri::new(&uri), expected, "{input}");
            assert_ne!(
                RedactedUri::new(&uri),
                &expected[..expected.len() - 1],
                "{input}"
            );
            assert_ne!(
                RedactedUri::new(&uri),
                format!("{expected}/").as_str(),
                "{input}"
            );
        }
    }

    /// reqwest's URL, read as it is, is shown as its `http::Uri` would be (but for a port its
    /// scheme has by default, which the URL leaves out), with the same server address and port.
    #[cfg(feature = "reqwest")]
    #[test]
    fn a_url_is_shown_as_its_uri_would_be() {
        for (input, expected) in [
            ("http://127.0.0.1:8080/a/b?x=1", "http://127.0.0.1:8080/a/b"),
            (
                "https://alice:pw@example.com/p?token=1#f",
                "https://example.com/p",
            ),
            ("https://tok@example.com", "https://example.com/"),
            ("http://[::1]:8080/x?y", "http://[::1]:8080/x"),
            ("http://u@[::1]/", "http://[::1]/"),
            ("https://example.com:8443", "https://example.com:8443/"),
        ] {
            let url = ShownUrl::of(&reqwest::Url::parse(input).expect("a URL"));
            let uri: http::Uri = input.parse().expect("a URI");
            let shown = RedactedUri::of(Target::Url(&url));
            assert_eq!(shown, expected, "{input}");
            assert_eq!(
                shown.to_string(),
                RedactedUri::new(&uri).to_string(),
                "{input}"
            );
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            assert_eq!(
                server(Target::Url(&url)),
                server(Target::Uri(&uri)),
                "{input}"
            );
        }
        // The one difference: a default port written out.
        let url = ShownUrl::of(&reqwest::Url::parse("http://example.com:80/p").expect("a URL"));
        assert_eq!(RedactedUri::of(Target::Url(&url)), "http://example.com/p");
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        assert_eq!(server(Target::Url(&url)), ("example.com", Some(80)));
    }
}
