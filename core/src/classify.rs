//! What a network error means for a retry.
//!
//! Rule (RFC 9110 §9.2.2: only a request that cannot have been processed is safe to repeat
//! for any method): an error is classified by whether the
//! request can have reached the server, not by its type name. A request that was never sent is
//! safe to retry for any method; one that may have been sent only for a retryable method; a
//! cancellation by the caller is never retried and is told apart from a timeout; a permanent
//! error (a bad URL, a rejected certificate) is never retried.
//!
//! Adapters map their client's errors to an [`ErrorKind`]; [`ErrorKind::class`] gives the default
//! [`ErrorClass`]; a caller who knows better reports a different class (the override).

/// How a failed attempt bears on a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The request never left the client (DNS failure, connection refused): safe to retry for
    /// any method, POST included.
    NotSent,
    /// The request may have reached the server (connection reset, broken pipe, closed
    /// mid-response): retried only for retryable methods.
    MaybeSent,
    /// The attempt ran out of time: retried only for retryable methods, reported apart from
    /// other errors.
    Timeout,
    /// The caller cancelled the operation: never retried, and distinct from a timeout.
    Aborted,
    /// Retrying cannot help (invalid URL, TLS certificate rejected).
    Permanent,
}

impl ErrorClass {
    /// Every class, in declaration order (for metrics labels, tables and tests).
    pub const ALL: &'static [ErrorClass] = &[
        ErrorClass::NotSent,
        ErrorClass::MaybeSent,
        ErrorClass::Timeout,
        ErrorClass::Aborted,
        ErrorClass::Permanent,
    ];

    /// A short, stable name for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::NotSent => "not_sent",
            ErrorClass::MaybeSent => "maybe_sent",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Aborted => "aborted",
            ErrorClass::Permanent => "permanent",
        }
    }
}

impl core::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong with an attempt, as an adapter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The host name could not be resolved.
    Dns,
    /// The connection was refused.
    ConnectionRefused,
    /// Connecting took longer than allowed; nothing was sent.
    ConnectTimeout,
    /// The connection was reset after it was established.
    ConnectionReset,
    /// Writing the request failed part-way (broken pipe).
    BrokenPipe,
    /// The connection closed before a whole response arrived.
    UnexpectedEof,
    /// The attempt's timeout fired while the request or response was in flight.
    Timeout,
    /// The caller aborted the operation.
    Aborted,
    /// TLS failed (certificate rejected, handshake error).
    Tls,
    /// The URL or request is invalid: the client refused it before sending any of it (a URL
    /// it cannot serve, an extension method it does not allow), and refuses it again.
    InvalidRequest,
    /// The response could not be parsed (a broken status line, bad headers).
    Protocol,
    /// Anything else: treated as possibly sent.
    Other,
    /// The response body broke off after its head arrived: its connection was reset or
    /// failed, or it ended short of its declared length (`Content-Length`, or the complete
    /// length of a `Content-Range`). The request was sent.
    BodyCut,
    /// No byte of the response body arrived within the body's idle timeout (a stalled or
    /// half-open connection).
    BodyStalled,
    /// The response body is longer than the caller allowed it to be read into memory: never
    /// truncated, and retrying reads the same body.
    BodyTooLarge,
    /// A body resumed after a failure came back as another representation (a `200` to the
    /// range request, another validator or coding) after bytes of the first were handed
    /// over: two versions are never spliced, and retrying cannot restore the first.
    BodyChanged,
}

impl ErrorKind {
    /// Every kind, in declaration order (for metrics labels, tables and tests).
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::Dns,
        ErrorKind::ConnectionRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ConnectionReset,
        ErrorKind::BrokenPipe,
        ErrorKind::UnexpectedEof,
        ErrorKind::Timeout,
        ErrorKind::Aborted,
        ErrorKind::Tls,
        ErrorKind::InvalidRequest,
        ErrorKind::Protocol,
        ErrorKind::Other,
        ErrorKind::BodyCut,
        ErrorKind::BodyStalled,
        ErrorKind::BodyTooLarge,
        ErrorKind::BodyChanged,
    ];

    /// The default classification of this kind.
    ///
    /// ```
    /// use backstop_core::{ErrorClass, ErrorKind};
    ///
    /// assert_eq!(ErrorKind::ConnectionRefused.class(), ErrorClass::NotSent);
    /// assert_eq!(ErrorKind::ConnectionReset.class(), ErrorClass::MaybeSent);
    /// assert_eq!(ErrorKind::Timeout.class(), ErrorClass::Timeout);
    /// assert_eq!(ErrorKind::Tls.class(), ErrorClass::Permanent);
    /// ```
    #[must_use]
    pub const fn class(self) -> ErrorClass {
        match self {
            ErrorKind::Dns | ErrorKind::ConnectionRefused | ErrorKind::ConnectTimeout => {
                ErrorClass::NotSent
            }
            ErrorKind::ConnectionReset
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
            | ErrorKind::Protocol
            | ErrorKind::Other
            | ErrorKind::BodyCut => ErrorClass::MaybeSent,
            ErrorKind::Timeout | ErrorKind::BodyStalled => ErrorClass::Timeout,
            ErrorKind::Aborted => ErrorClass::Aborted,
            ErrorKind::Tls
            | ErrorKind::InvalidRequest
            | ErrorKind::BodyTooLarge
            | ErrorKind::BodyChanged => ErrorClass::Permanent,
        }
    }

    /// A short, stable name for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Dns => "dns",
            ErrorKind::ConnectionRefused => "connection_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ConnectionReset => "connection_reset",
            ErrorKind::BrokenPipe => "broken_pipe",
            ErrorKind::UnexpectedEof => "unexpected_eof",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Aborted => "aborted",
            ErrorKind::Tls => "tls",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Other => "other",
            ErrorKind::BodyCut => "body_cut",
            ErrorKind::BodyStalled => "body_stalled",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::BodyChanged => "body_changed",
        }
    }
}

impl core::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed attempt: what happened, and how it bears on a retry.
///
/// [`AttemptError::new`] classifies by [`ErrorKind::class`]; [`AttemptError::with_class`] is the
/// caller's override.
///
/// ```
/// use backstop_core::{AttemptError, ErrorClass, ErrorKind};
///
/// let e = AttemptError::new(ErrorKind::Other).with_class(ErrorClass::NotSent);
/// assert_eq!(e.kind, ErrorKind::Other);
/// assert_eq!(e.class, ErrorClass::NotSent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttemptError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// How it bears on a retry.
    pub class: ErrorClass,
}

impl AttemptError {
    /// An error of `kind`, with the default classification.
    #[must_use]
    pub const fn new(kind: ErrorKind) -> Self {
        AttemptError {
            kind,
            class: kind.class(),
        }
    }

    /// The same error, classified as `class` instead.
    #[must_use]
    pub const fn with_class(self, class: ErrorClass) -> Self {
        AttemptError { class, ..self }
    }
}

impl From<ErrorKind> for AttemptError {
    fn from(kind: ErrorKind) -> Self {
        AttemptError::new(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` lists each variant once, in declaration order, up to the last one.
    #[test]
    fn all_lists_every_kind_and_class_once_in_order() {
        for (i, &kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind}");
        }
        for (i, &class) in ErrorClass::ALL.iter().enumerate() {
            assert_eq!(class as usize, i, "{class}");
        }
        assert_eq!(ErrorKind::ALL.len(), ErrorKind::BodyChanged as usize + 1);
        assert_eq!(ErrorClass::ALL.len(), ErrorClass::Permanent as usize + 1);
    }
}
