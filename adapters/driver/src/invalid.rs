//! A request the builder could not make: which part was wrong, and why.
//!
//! Rule: a caller's mistake (a URL that does not parse, a header value with a newline) is an
//! error the caller can match on, returned before anything is sent, never a panic. The text
//! names the part, never its value: a header value may be a secret, a URL may carry a token.

use core::fmt;

/// The part of a request that did not convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    Uri,
    HeaderName,
    HeaderValue,
    #[cfg(feature = "json")]
    Json,
}

/// Why a [`RetryRequest`](crate::RetryRequest) could not be built; [`run`](crate::run) returns
/// it as [`RetryError::InvalidRequest`](crate::RetryError::InvalidRequest) without sending.
#[derive(Debug)]
pub struct RequestError {
    part: Part,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl RequestError {
    pub(crate) fn new(part: Part, source: http::Error) -> Self {
        RequestError {
            part,
            source: Box::new(source),
        }
    }

    #[cfg(feature = "json")]
    pub(crate) fn json(source: serde_json::Error) -> Self {
        RequestError {
            part: Part::Json,
            source: Box::new(source),
        }
    }

    /// Whether the URL did not parse.
    #[must_use]
    pub fn is_uri(&self) -> bool {
        self.part == Part::Uri
    }

    /// Whether a header name or value was invalid.
    #[must_use]
    pub fn is_header(&self) -> bool {
        matches!(self.part, Part::HeaderName | Part::HeaderValue)
    }

    /// Whether the body could not be serialized to JSON.
    #[must_use]
    pub fn is_json(&self) -> bool {
        #[cfg(feature = "json")]
        return self.part == Part::Json;
        #[cfg(not(feature = "json"))]
        false
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = match self.part {
            Part::Uri => "invalid URL",
            Part::HeaderName => "invalid header name",
            Part::HeaderValue => "invalid header value",
            #[cfg(feature = "json")]
            Part::Json => "the body could not be serialized to JSON",
        };
        // `http`'s and `serde_json`'s texts say what is wrong, not what the value was.
        write!(f, "{part}: {}", self.source)
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}
