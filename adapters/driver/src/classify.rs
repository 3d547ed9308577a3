//! Helpers for adapters that map their client's errors to [`ErrorKind`]s.
//!
//! Rule (RFC 9110 §9.2.2): classify by whether the request can have reached the server, not
//! by the error's type name. A failure while connecting (resolving, the TCP connect, the TLS
//! handshake) happened before anything was sent.

use core::fmt;
use std::error::Error;
use std::io;

use backstop::ErrorKind;

/// The kind of an I/O error from a socket.
///
/// ```
/// use backstop::ErrorKind;
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(backstop_driver::io_error_kind(&refused), ErrorKind::ConnectionRefused);
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
/// In this order: a TLS failure anywhere in the chain is [`ErrorKind::Tls`] (with the
/// `rustls` feature); a host that did not resolve ([`ResolveError`], or hyper-util's
/// `dns error`) is [`ErrorKind::Dns`]; then the first [`io::Error`] in the chain says it
/// ([`io_error_kind`]: refused, reset, broken pipe, end of file, time-out); anything else is
/// [`ErrorKind::Other`]. An error of unknown kind may have reached the server, so only
/// idempotent requests are retried after it.
///
/// ```
/// use backstop::ErrorKind;
/// use backstop_driver::default_error_kind;
///
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(refused);
/// assert_eq!(default_error_kind(&*boxed), ErrorKind::ConnectionRefused);
/// assert_eq!(default_error_kind(&std::fmt::Error), ErrorKind::Other);
/// ```
#[must_use]
pub fn default_error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    tls_or_dns(error)
        .or_else(|| find_io_error(error).map(io_error_kind))
        .unwrap_or(ErrorKind::Other)
}

/// [`ErrorKind::Tls`] for a TLS failure anywhere in the chain (with the `rustls` feature),
/// else [`ErrorKind::Dns`] for a host that did not resolve: found the same way whatever the
/// phase, and before the socket's own error, which they may carry.
fn tls_or_dns(error: &(dyn Error + 'static)) -> Option<ErrorKind> {
    #[cfg(feature = "rustls")]
    if crate::tls_error::find_tls_error(error).is_some() {
        return Some(ErrorKind::Tls);
    }
    let unresolved =
        find_error::<ResolveError>(error).is_some() || error_chain(error).any(is_dns_error);
    unresolved.then_some(ErrorKind::Dns)
}

/// The kind of an error that ended an attempt before the request was sent: while resolving
/// the host, connecting, or in the TLS handshake.
///
/// In this order: a TLS failure anywhere in the chain is [`ErrorKind::Tls`] (with the
/// `rustls` feature); a [`ResolveError`], or hyper-util's `dns error` (reqwest's too), is
/// [`ErrorKind::Dns`]; an I/O time-out is
/// [`ErrorKind::ConnectTimeout`]; anything else is [`ErrorKind::ConnectionRefused`] (the
/// connection was never made, so nothing was sent).
///
/// ```
/// use backstop::ErrorKind;
/// use backstop_driver::{connect_error_kind, ResolveError};
///
/// let unknown = ResolveError::new(std::io::Error::other("no such host"));
/// assert_eq!(connect_error_kind(&unknown), ErrorKind::Dns);
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(connect_error_kind(&refused), ErrorKind::ConnectionRefused);
/// ```
#[must_use]
pub fn connect_error_kind(error: &(dyn Error + 'static)) -> ErrorKind {
    if let Some(kind) = tls_or_dns(error) {
        return kind;
    }
    let timed_out = error_chain(error)
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::TimedOut);
    if timed_out {
        ErrorKind::ConnectTimeout
    } else {
        ErrorKind::ConnectionRefused
    }
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
/// let found = backstop_driver::find_error::<std::io::Error>(&outer).map(|e| e.kind());
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
    if let Some(tls) = crate::TlsFailure::find(error) {
        return Some(write!(f, "TLS handshake failed: {tls}"));
    }
    let _ = (f, error);
    None
}

/// A URI an adapter's client cannot send to: no host, or a scheme other than `http` (and
/// `https`, with the `rustls` feature). Nothing was sent.
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

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(
                connect_error_kind(&other),
                ErrorKind::ConnectionRefused,
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_connect_timeout_is_not_a_refusal() {
        let timeout = io::Error::other(io::Error::from(io::ErrorKind::TimedOut));
        assert_eq!(connect_error_kind(&timeout), ErrorKind::ConnectTimeout);
    }
}
