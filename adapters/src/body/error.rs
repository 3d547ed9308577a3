//! A response body's failure, as the operation meets it.

use core::fmt;
use std::error::Error;

use backstop_core::ErrorKind;

use crate::observe::redact::DebugHeaderNames;

type BoxError = Box<dyn Error + Send + Sync>;

/// A response body that could not be read as the operation needed it: broken off, stalled,
/// over the caller's limit, or resumed as another representation. Found by its kind in any
/// front door's error chain (see [`default_error_kind`](crate::classify::default_error_kind)).
///
/// Its `Display` and `Debug` never show a header's value or the body; the client's own error,
/// if any, is the [`source`](Error::source).
pub struct BodyError {
    kind: ErrorKind,
    /// Bytes of the body received before it failed.
    received: u64,
    /// The limit in force, for [`ErrorKind::BodyTooLarge`].
    limit: Option<u64>,
    /// The response's head (a body over the limit keeps it for the caller).
    head: Option<Box<(http::StatusCode, http::HeaderMap)>>,
    source: Option<BoxError>,
}

impl BodyError {
    /// A body that broke off after `received` bytes, with the client's error if it gave one
    /// (none for a clean end short of the declared length).
    #[cfg_attr(
        not(any(feature = "ureq", feature = "reqwest", feature = "tower")),
        allow(dead_code)
    )]
    pub(crate) fn cut(received: u64, source: Option<BoxError>) -> Self {
        BodyError {
            kind: ErrorKind::BodyCut,
            received,
            limit: None,
            head: None,
            source,
        }
    }

    /// A body longer than `limit` (found after `received` bytes, or announced by its
    /// `Content-Length` before any was read), with its response's head.
    #[cfg_attr(
        not(any(feature = "ureq", feature = "reqwest", feature = "tower")),
        allow(dead_code)
    )]
    pub(crate) fn too_large(
        limit: u64,
        received: u64,
        status: http::StatusCode,
        headers: http::HeaderMap,
    ) -> Self {
        BodyError {
            kind: ErrorKind::BodyTooLarge,
            received,
            limit: Some(limit),
            head: Some(Box::new((status, headers))),
            source: None,
        }
    }

    /// A resumable body that ended with `kind` after `received` bytes were handed over (the
    /// operation could not resume it, or it came back as another representation).
    #[cfg(any(feature = "reqwest", feature = "tower", feature = "ureq"))]
    pub(crate) fn ended(kind: ErrorKind, received: u64, source: Option<BoxError>) -> Self {
        BodyError {
            kind,
            received,
            limit: None,
            head: None,
            source,
        }
    }

    /// What went wrong: [`ErrorKind::BodyCut`], [`ErrorKind::BodyStalled`],
    /// [`ErrorKind::BodyTooLarge`] or [`ErrorKind::BodyChanged`].
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// How many bytes of the body arrived before it failed.
    #[must_use]
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The limit the body went over ([`ErrorKind::BodyTooLarge`]).
    #[must_use]
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The status of the response whose body went over the limit.
    #[must_use]
    pub fn status(&self) -> Option<http::StatusCode> {
        self.head.as_deref().map(|(status, _)| *status)
    }

    /// The headers of the response whose body went over the limit.
    #[must_use]
    pub fn headers(&self) -> Option<&http::HeaderMap> {
        self.head.as_deref().map(|(_, headers)| headers)
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let received = self.received;
        match (self.kind, self.limit) {
            (ErrorKind::BodyTooLarge, Some(limit)) => write!(
                f,
                "the response body is longer than the limit of {limit} bytes ({received} read)"
            ),
            (ErrorKind::BodyStalled, _) => write!(
                f,
                "the response body stalled after {received} bytes (no byte within its idle timeout)"
            ),
            (ErrorKind::BodyChanged, _) => write!(
                f,
                "the response body changed representation after {received} bytes were handed over"
            ),
            _ => write!(f, "the response body broke off after {received} bytes"),
        }
    }
}

impl fmt::Debug for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("BodyError");
        d.field("kind", &self.kind)
            .field("received", &self.received);
        if let Some(limit) = self.limit {
            d.field("limit", &limit);
        }
        if let Some((status, headers)) = self.head.as_deref() {
            d.field("status", status)
                .field("headers", &DebugHeaderNames(headers));
        }
        // The client's error is left out (its text may hold the URL): it is the source.
        d.finish_non_exhaustive()
    }
}

impl Error for BodyError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}
