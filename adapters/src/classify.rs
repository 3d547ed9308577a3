//! What a failed attempt or a response is, and the helpers that map a client's errors to an
//! [`ErrorKind`].
//!
//! Rule (RFC 9110 §9.2.2): classify by whether the request can have reached the server, not
//! by the error's type name. A failure while connecting (resolving, the TCP connect, the TLS
//! handshake) happened before anything was sent, but "not sent" is a promise to retry even a
//! POST without a key: only a failure positively identified as one that never reaches a
//! server (a refusal, a host that did not resolve, a connect that timed out) makes it. An
//! error the classifier does not recognise is [`ErrorKind::Other`]: maybe sent.
//!
//! # One kind per failure, on every front door
//!
//! The mapping is written once ([`connect_error_kind`] before the request is sent,
//! `exchange_error_kind` after, `find_tls_error` and [`ResolveError`] for ureq's errors); a front
//! door only says which phase failed. [`Retrier::classify`](crate::Retrier::classify) overrides the
//! class, [`Retrier::classify_response`](crate::Retrier::classify_response) which responses are
//! retried.
//!
//! | failure | kind (every front door) | class |
//! |---|---|---|
//! | host name does not resolve ([`ResolveError`]; under reqwest and tower, hyper-util's `dns error`) | `Dns` | not sent |
//! | TCP connection refused | `ConnectionRefused` | not sent |
//! | any other connect failure: unreachable, a reset or an end of file during the TLS handshake, a connect error not recognised | as the first telling `io::Error` says, else `Other` | maybe sent (an error not recognised is never taken for one that did not send) |
//! | TCP connect timed out (ureq's connect timeout; the attempt timer while smol's `HttpService` is still connecting; reqwest's `connect_timeout` or hyper-util's `set_connect_timeout`, which need one below the attempt timeout: without it a stalled connect there is `Timeout`) | `ConnectTimeout` | not sent |
//! | certificate rejected (unknown issuer, expired, another host's name, revoked), handshake refused, no common protocol version, any other `rustls::Error`; a certificate another TLS stack rejected, found by its text | `Tls` | permanent, never retried |
//! | URI without a host, a relative URI, a scheme the client does not speak (`ftp://`; `https` without TLS), a port out of range | `InvalidRequest` | permanent, nothing sent |
//! | connected, then reset / broken pipe / EOF | `ConnectionReset` / `BrokenPipe` / `UnexpectedEof` | maybe sent |
//! | connected, then a response cut short or unparsable | `UnexpectedEof` / `Protocol` | maybe sent |
//!
//! A TLS failure's text names its cause and nothing secret:
//! `TLS handshake failed: certificate rejected: UnknownIssuer`.

#[cfg(feature = "hyper")]
pub use crate::hyper_error::exchange_error_kind;
pub use crate::response_view::{ClassifyResponse, ResponseView};
pub use crate::retrier::ClassifyOverride;
#[cfg(feature = "rustls")]
pub use crate::tls_error::{find_tls_error, TlsFailure};
#[doc(inline)]
pub use backstop_core::{AttemptError, AttemptOutcome, ErrorClass, ErrorKind, ResponseClass};

use core::fmt;
use std::error::Error;
use std::io;

/// The kind of an I/O error from a socket.
///
/// ```
/// use backstop::ErrorKind;
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(backstop::classify::io_error_kind(&refused), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectionRefused,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
            ErrorKind::ConnectionReset
        }
        io::ErrorKind::BrokenPipe => ErrorKind::BrokenPipe,
        io::ErrorKind::UnexpectedEof => ErrorKind::UnexpectedEof,
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
        _ => ErrorKind::Other,
    }
}

/// The kind of any client's error, read from its chain: what [`run`](crate::run) uses when
/// the caller says nothing.
///
/// In this order: a [`BodyError`](crate::body::BodyError) anywhere in the chain says its own
/// kind (a body the operation read broke off, stalled or went over its limit); a TLS failure
/// anywhere in the chain is [`ErrorKind::Tls`] (a `rustls::Error`
/// with the `rustls` feature; a rejected certificate of any TLS stack, by its text: see
/// [`connect_error_kind`]); a host that did not resolve ([`ResolveError`], or hyper-util's
/// `dns error`) is [`ErrorKind::Dns`]; then the first [`io::Error`] in the chain says it
/// ([`io_error_kind`]: refused, reset, broken pipe, end of file, time-out); anything else is
/// [`ErrorKind::Other`]. An error of unknown kind may have reached the server, so only
/// idempotent requests are retried after it.
///
/// ```
/// use backstop::ErrorKind;
/// use backstop::classify::default_error_kind;
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(refused);
/// assert_eq!(default_error_kind(&*boxed), ErrorKind::ConnectionRefused);
/// assert_eq!(default_error_kind(&std::fmt::Error), ErrorKind::Other);
/// ```
#[must_use]
pub fn default_error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    body_error_kind(error)
        .or_else(|| tls_or_dns(error))
        .or_else(|| find_io_error(error).map(io_error_kind))
        .unwrap_or(ErrorKind::Other)
}

/// The kind of a [`BodyError`](crate::body::BodyError) anywhere in the chain: a body the
/// operation read (or resumed) failed, whatever the socket's error under it says.
pub(crate) fn body_error_kind(error: &(dyn Error + 'static)) -> Option<ErrorKind> {
    find_error::<crate::body::BodyError>(error).map(crate::body::BodyError::kind)
}

/// [`ErrorKind::Tls`] for a TLS failure anywhere in the chain (a `rustls::Error` with the
/// `rustls` feature, or a rejected certificate of any stack), else [`ErrorKind::Dns`] for a
/// host that did not resolve: found the same way whatever the phase, and before the socket's
/// own error, which they may carry.
fn tls_or_dns(error: &(dyn Error + 'static)) -> Option<ErrorKind> {
    #[cfg(feature = "rustls")]
    if crate::tls_error::find_tls_error(error).is_some() {
        return Some(ErrorKind::Tls);
    }
    if error_chain(error).any(is_certificate_rejection) {
        return Some(ErrorKind::Tls);
    }
    let unresolved =
        find_error::<ResolveError>(error).is_some() || error_chain(error).any(is_dns_error);
    unresolved.then_some(ErrorKind::Dns)
}

/// The kind of an error that ended an attempt before the request was sent: while resolving
/// the host, connecting, or in the TLS handshake.
///
/// In this order:
///
/// - a TLS failure anywhere in the chain is [`ErrorKind::Tls`], permanent: a `rustls::Error`
///   (with the `rustls` feature), or a certificate another stack rejected, known by its text
///   (OpenSSL's `certificate verify failed`, under native-tls on Linux; Security.framework's
///   and SChannel's "not trusted" messages): native-tls and openssl are not dependencies, so
///   their errors cannot be downcast to;
/// - a [`ResolveError`], or hyper-util's `dns error` (reqwest's too), is [`ErrorKind::Dns`];
/// - a URL the connector cannot serve ([`UnsupportedUri`]; hyper-util's `invalid URL, ...`,
///   hyper-rustls' `unsupported scheme ...`) is [`ErrorKind::InvalidRequest`], permanent;
/// - an I/O time-out is [`ErrorKind::ConnectTimeout`];
/// - the first I/O error in the chain that says more than `Other` says the rest: refused is
///   [`ErrorKind::ConnectionRefused`], the others as [`io_error_kind`] says (a reset during the
///   handshake is [`ErrorKind::ConnectionReset`]);
/// - anything else is [`ErrorKind::Other`]: an error not recognised is never taken for one
///   that did not send.
///
/// ```
/// use backstop::ErrorKind;
/// use backstop::classify::{connect_error_kind, ResolveError};
///
/// let unknown = ResolveError::new(std::io::Error::other("no such host"));
/// assert_eq!(connect_error_kind(&unknown), ErrorKind::Dns);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(connect_error_kind(&refused), ErrorKind::ConnectionRefused);
/// assert_eq!(connect_error_kind(&std::fmt::Error), ErrorKind::Other);
/// ```
#[must_use]
pub fn connect_error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    if let Some(kind) = tls_or_dns(error) {
        return kind;
    }
    if is_unservable_uri(error) {
        return ErrorKind::InvalidRequest;
    }
    let timed_out = error_chain(error)
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::TimedOut);
    if timed_out {
        return ErrorKind::ConnectTimeout;
    }
    // An `io::Error` of kind `Other` is a wrapper: the kind is the first one that says more.
    error_chain(error)
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .map(io_error_kind)
        .find(|k| *k != ErrorKind::Other)
        .unwrap_or(ErrorKind::Other)
}

/// Whether `error`'s chain says the client cannot serve the request's URL at all (a scheme it
/// does not speak, no host, a relative URI): the same on every attempt, and nothing was sent.
/// Read from the texts of hyper-util (its connector's `invalid URL, ...`, its client's
/// `client error (User...)`: an unsupported method or version, a relative URI) and
/// hyper-rustls (`unsupported scheme ...`, `missing scheme`), whose error types are private
/// or plain `io::Error`s, and from [`UnsupportedUri`].
///
/// ```
/// let e = std::io::Error::other("unsupported scheme ftp");
/// assert!(backstop::classify::is_unservable_uri(&e));
/// assert!(!backstop::classify::is_unservable_uri(&std::io::Error::other("tcp connect error")));
/// ```
#[must_use]
pub fn is_unservable_uri(error: &(dyn Error + 'static)) -> bool {
    error_chain(error).any(|e| {
        if e.is::<UnsupportedUri>() {
            return true;
        }
        // Only on a failure's path: the text's allocation does not matter there.
        let text = e.to_string();
        matches!(
            text.as_str(),
            "invalid URL, scheme is not http"
                | "invalid URL, scheme is missing"
                | "invalid URL, host is missing"
                | "missing scheme"
                | "client error (UserAbsoluteUriRequired)"
                | "client error (UserUnsupportedRequestMethod)"
                | "client error (UserUnsupportedVersion)"
        ) || text.starts_with("unsupported scheme ")
    })
}

/// Whether `error` is a TLS stack other than rustls rejecting the server's certificate, by its
/// own text: OpenSSL (native-tls on Linux, openssl), Security.framework (native-tls on
/// macOS), SChannel (native-tls on Windows). Case-insensitive; the text is never shown.
fn is_certificate_rejection(error: &(dyn Error + 'static)) -> bool {
    const REJECTIONS: [&str; 4] = [
        // OpenSSL: `error:0A000086:SSL routines:...:certificate verify failed`.
        "certificate verify failed",
        // Security.framework: "The certificate was not trusted.", "... is not trusted".
        "certificate was not trusted",
        // SChannel (CERT_E_UNTRUSTEDROOT, SEC_E_UNTRUSTED_ROOT).
        "not trusted by the trust provider",
        "issued by an authority that is not trusted",
    ];
    let text = error.to_string().to_ascii_lowercase();
    REJECTIONS.iter().any(|r| text.contains(r))
}

/// Whether `error` is hyper-util's `HttpConnector` saying the host did not resolve: its
/// `ConnectError` is private and names the failed step only in its text, `dns error`. reqwest
/// and every hyper-util client connect through it, whatever resolver they plug in.
fn is_dns_error(error: &(dyn Error + 'static)) -> bool {
    // Only on a connect failure's path: the text's allocation does not matter there.
    error.to_string() == "dns error"
}

/// A host name that did not resolve. An adapter wraps its resolver's error in it, so that
/// [`connect_error_kind`] finds it anywhere in the chain and says [`ErrorKind::Dns`] whatever
/// the resolver's own error looks like.
#[derive(Debug)]
pub struct ResolveError {
    source: io::Error,
}

impl ResolveError {
    /// Marks `source`, the resolver's error, as a failure to resolve.
    #[must_use]
    pub fn new(source: io::Error) -> Self {
        ResolveError { source }
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the host name did not resolve")
    }
}

impl Error for ResolveError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

impl From<ResolveError> for io::Error {
    /// An I/O error that carries the `ResolveError`, for resolvers that must return one.
    fn from(e: ResolveError) -> Self {
        io::Error::new(e.source.kind(), e)
    }
}

/// The errors in `error`'s chain, `error` first. Unlike `source()` alone, it steps into the
/// error an [`io::Error`] carries (`io::Error::get_ref`): `io::Error::source` skips that
/// error, and clients report TLS failures as an `io::Error` around a `rustls::Error`.
pub fn error_chain<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> + 'a {
    // Bounded: a chain deeper than this (a cycle, say) is cut there.
    core::iter::successors(Some(error), |e| next_in_chain(*e)).take(32)
}

fn next_in_chain<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
        Some(inner) => Some(inner),
        None => e.source(),
    }
}

/// The first error of type `T` in `error`'s chain (see [`error_chain`]).
///
/// ```
/// let inner = std::io::Error::from(std::io::ErrorKind::TimedOut);
/// let outer = std::io::Error::other(inner);
/// let found = backstop::classify::find_error::<std::io::Error>(&outer).map(|e| e.kind());
/// assert_eq!(found, Some(std::io::ErrorKind::Other));
/// ```
#[must_use]
pub fn find_error<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
    error_chain(error).find_map(|e| e.downcast_ref::<T>())
}

/// The first [`io::Error`] in an error's chain (the error itself included).
#[must_use]
pub fn find_io_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a io::Error> {
    find_error(error)
}

/// Writes `TLS handshake failed: <cause>` when `error`'s chain holds a TLS error (with the
/// `rustls` feature: "certificate rejected: UnknownIssuer", never a secret), so every adapter
/// names the cause the same way; `None` when it holds none, for the caller's own text.
pub fn write_tls_cause(
    f: &mut fmt::Formatter<'_>,
    error: &(dyn Error + 'static),
) -> Option<fmt::Result> {
    #[cfg(feature = "rustls")]
    if let Some(tls) = crate::classify::TlsFailure::find(error) {
        return Some(write!(f, "TLS handshake failed: {tls}"));
    }
    let _ = (f, error);
    None
}

/// A URI an adapter's client cannot send to: no host, a port that is not a TCP port, or a
/// scheme other than `http` (and `https`, with the `rustls` feature). Nothing was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedUri;

impl fmt::Display for UnsupportedUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if cfg!(feature = "rustls") {
            "the URI needs an http or https scheme and a host"
        } else {
            "the URI needs an http scheme and a host (https needs the rustls feature)"
        })
    }
}

impl Error for UnsupportedUri {}

/// Whether `uri` names a port that is not a TCP port (`http` parses `host:99999`). The port is
/// what follows the authority's last `:`, unless that colon is in the userinfo (an `@` follows
/// it) or in an IPv6 literal (a `]` follows it); an empty one is the default port (RFC 3986
/// §3.2.3); one that is not all digits is no port either (`http` does not check it; hyper-util
/// and ureq would send to the scheme's default port). The tower layer and ureq check every
/// request: an authority that ends in `:` and one to five digits is answered from its last
/// bytes; the others are scanned.
#[cfg_attr(not(any(feature = "tower", feature = "ureq")), allow(dead_code))]
pub(crate) fn port_out_of_range(uri: &http::Uri) -> bool {
    let Some(authority) = uri.authority() else {
        return false;
    };
    let bytes = authority.as_str().as_bytes();
    match bytes {
        // A port of five digits, or of at most four.
        [.., b':', a, b, c, d, e] if [a, b, c, d, e].iter().all(|b| b.is_ascii_digit()) => {
            [a, b, c, d, e]
                .iter()
                .fold(0_u32, |n, &&b| n * 10 + u32::from(b - b'0'))
                > u32::from(u16::MAX)
        }
        [.., b':', a, b, c, d] if [a, b, c, d].iter().all(|b| b.is_ascii_digit()) => false,
        [.., b':', a, b, c] if [a, b, c].iter().all(|b| b.is_ascii_digit()) => false,
        [.., b':', a, b] if a.is_ascii_digit() && b.is_ascii_digit() => false,
        [.., b':', a] if a.is_ascii_digit() => false,
        _ => port_text_out_of_range(bytes),
    }
}

/// Whether the authority `bytes` name a port that is not a TCP port (see
/// [`port_out_of_range`]): one backward scan.
fn port_text_out_of_range(bytes: &[u8]) -> bool {
    let Some(colon) = bytes.iter().rposition(|&b| b == b':') else {
        return false;
    };
    let port = &bytes[colon + 1..];
    if port.is_empty() || port.iter().any(|&b| b == b'@' || b == b']') {
        return false;
    }
    // As `u16::from_str` reads it: one optional `+`, then digits (leading zeros allowed).
    let digits = match port {
        [b'+', rest @ ..] if !rest.is_empty() => rest,
        _ => port,
    };
    let mut n = 0_u32;
    for &b in digits {
        if !b.is_ascii_digit() {
            return true;
        }
        n = (n * 10 + u32::from(b - b'0')).min(1 << 16);
    }
    n > u32::from(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_out_of_range_is_refused_and_the_others_are_not() {
        for bad in [
            "http://127.0.0.1:99999/",
            "http://127.0.0.1:65536/",
            "http://a:b@example.com:65536/",
            "http://[::1]:70000/",
            "http://example.com:abc/",
            "http://example.com:8080a/",
            "http://u:p@h:x/",
            "http://[::1]:a/",
        ] {
            let uri: http::Uri = bad.parse().expect("http parses it");
            assert!(port_out_of_range(&uri), "{bad}");
        }
        for good in [
            "http://127.0.0.1:65535/",
            "http://127.0.0.1:54321/",
            "http://127.0.0.1:443/",
            "http://10.0.0.1/",
            "http://example.com/",
            "http://example.com:/",
            "http://[::1]/",
            "http://u:p@[::1]/",
            "/relative",
            // As `u16::from_str` reads a port: an optional `+`, leading zeros.
            "http://[::1]:8080/",
            "http://a:b@example.com/",
            "http://a:b@example.com:/",
            "http://example.com:0/",
            "http://example.com:00080/",
            "http://example.com:0000000000000000000080/",
            "http://example.com:+80/",
        ] {
            let uri: http::Uri = good.parse().expect("a URI");
            assert!(!port_out_of_range(&uri), "{good}");
        }
    }

    #[test]
    fn the_quick_reading_of_a_port_agrees_with_the_full_scan() {
        let hosts = [
            "example.com",
            "10.0.0.1",
            "[::1]",
            "u:p@h.example",
            "u@10.0.0.1",
            "h9",
        ];
        let ports = [
            None,
            Some(""),
            Some("0"),
            Some("7"),
            Some("80"),
            Some("443"),
            Some("8080"),
            Some("9999"),
            Some("10000"),
            Some("59999"),
            Some("65535"),
            Some("65536"),
            Some("70000"),
            Some("99999"),
            Some("100000"),
            Some("+80"),
            Some("+65536"),
            Some("00080"),
            Some("000065536"),
            // Not a port: `http` takes them, hyper-util and ureq would send to port 80.
            Some("abc"),
            Some("8080a"),
            Some("a8080"),
            Some("x"),
        ];
        let mut checked = 0;
        for host in hosts {
            for port in ports {
                let text = match port {
                    Some(port) => format!("http://{host}:{port}/p"),
                    None => format!("http://{host}/p"),
                };
                // Only what `http` parses reaches the check.
                let Ok(uri) = text.parse::<http::Uri>() else {
                    continue;
                };
                let bytes = uri.authority().map_or(&b""[..], |a| a.as_str().as_bytes());
                assert_eq!(
                    port_out_of_range(&uri),
                    port_text_out_of_range(bytes),
                    "{text}"
                );
                checked += 1;
            }
        }
        // Most of them parse: the comparison is not vacuous.
        assert!(checked > 80, "{checked}");
    }

    #[test]
    fn the_chain_steps_into_an_io_errors_payload() {
        let resolve = ResolveError::new(io::Error::other("lookup failed"));
        let wrapped = io::Error::other(io::Error::from(resolve));
        // `source()` alone skips the payloads, the `ResolveError` with them.
        let mut by_source: Option<&(dyn Error + 'static)> = Some(&wrapped);
        while let Some(e) = by_source {
            assert!(!e.is::<ResolveError>());
            by_source = e.source();
        }
        assert_eq!(connect_error_kind(&wrapped), ErrorKind::Dns);
    }

    /// An error whose text is `text`, holding `source`, as hyper-util's `ConnectError` is.
    #[derive(Debug)]
    struct Step(&'static str, io::Error);

    impl fmt::Display for Step {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // Written in two pieces, as a `Display` may be.
            let (a, b) = self.0.split_at(self.0.len() / 2);
            f.write_str(a)?;
            f.write_str(b)
        }
    }

    impl Error for Step {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.1)
        }
    }

    #[test]
    fn hyper_utils_dns_error_is_dns_and_nothing_like_it_is() {
        let failed = || io::Error::other("failed to lookup address information");
        let dns = io::Error::other(Step("dns error", failed()));
        assert_eq!(connect_error_kind(&dns), ErrorKind::Dns);
        for text in ["tcp connect error", "dns error!", "dns", "dns errors", ""] {
            let other = io::Error::other(Step(text, failed()));
            // Not DNS, and nothing else it says is known: maybe sent.
            assert_eq!(connect_error_kind(&other), ErrorKind::Other, "{text:?}");
        }
    }

    #[test]
    fn an_unrecognised_connect_error_is_other_not_a_refusal() {
        assert_eq!(connect_error_kind(&fmt::Error), ErrorKind::Other);
        let opaque = io::Error::other(Step("tcp connect error", io::Error::other("?")));
        assert_eq!(connect_error_kind(&opaque), ErrorKind::Other);
        for kind in [
            io::ErrorKind::PermissionDenied,
            io::ErrorKind::AddrNotAvailable,
            io::ErrorKind::InvalidInput,
        ] {
            let e = io::Error::other(Step("tcp connect error", io::Error::from(kind)));
            assert_eq!(connect_error_kind(&e), ErrorKind::Other, "{kind:?}");
        }
        // A reset during the handshake is a reset: maybe sent, as it is anywhere.
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(connect_error_kind(&reset), ErrorKind::ConnectionReset);
    }

    #[test]
    fn only_a_positively_identified_refusal_is_a_refusal() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        let wrapped = io::Error::other(Step("tcp connect error", refused));
        assert_eq!(connect_error_kind(&wrapped), ErrorKind::ConnectionRefused);
    }

    #[test]
    fn a_url_the_connector_cannot_serve_is_an_invalid_request() {
        for text in [
            "invalid URL, scheme is not http",
            "invalid URL, scheme is missing",
            "invalid URL, host is missing",
            "unsupported scheme ftp",
            "missing scheme",
            "client error (UserAbsoluteUriRequired)",
        ] {
            let e = io::Error::other(Step(text, io::Error::other("")));
            assert_eq!(
                connect_error_kind(&e),
                ErrorKind::InvalidRequest,
                "{text:?}"
            );
        }
        let unsupported = io::Error::other(UnsupportedUri);
        assert_eq!(connect_error_kind(&unsupported), ErrorKind::InvalidRequest);
        let near = io::Error::other(Step("invalid URL", io::Error::other("")));
        assert_eq!(connect_error_kind(&near), ErrorKind::Other);
    }

    #[test]
    fn a_certificate_another_tls_stack_rejected_is_tls() {
        for text in [
            // native-tls on OpenSSL, as reqwest's `native-tls` feature reports an untrusted
            // self-signed certificate.
            "error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify \
             failed:../ssl/statem/statem_clnt.c:2091: (self-signed certificate)",
            "The certificate was not trusted.",
            "A certificate chain processed, but terminated in a root certificate which is not \
             trusted by the trust provider. (os error -2146762487)",
        ] {
            let e = io::Error::other(Step("tcp connect error", io::Error::other(text)));
            assert_eq!(connect_error_kind(&e), ErrorKind::Tls, "{text:?}");
            assert_eq!(default_error_kind(&e), ErrorKind::Tls, "{text:?}");
        }
    }

    #[test]
    fn a_connect_timeout_is_not_a_refusal() {
        let timeout = io::Error::other(io::Error::from(io::ErrorKind::TimedOut));
        assert_eq!(connect_error_kind(&timeout), ErrorKind::ConnectTimeout);
    }
}
