//! The caller's word on a response: a hook that sees the response (and the request it
//! answers) and says whether it is retryable, beyond what the policy's status set says.
//!
//! Rule: only which responses are retryable changes; every other rule of the policy still
//! holds (methods and keys, attempts, the deadline, the budget, `Retry-After`).

use core::fmt;
use std::sync::Arc;

use crate::observe::redact::redact_uri;
use backstop_core::ResponseClass;

/// What a response hook sees: the request's method and URI, and the response's status and
/// headers. Its `Debug` shows the URI without userinfo or query, and no header value.
#[non_exhaustive]
pub struct ResponseView<'a> {
    /// The request's method.
    pub method: &'a http::Method,
    /// The request's URI.
    pub uri: &'a http::Uri,
    /// The response's status.
    pub status: http::StatusCode,
    /// The response's headers.
    pub headers: &'a http::HeaderMap,
}

impl fmt::Debug for ResponseView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseView")
            .field("method", self.method)
            .field("uri", &redact_uri(self.uri))
            .field("status", &self.status)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A response hook, as [`Retrier::classify_response`](crate::Retrier::classify_response)
/// keeps it.
pub type ClassifyResponse = Arc<dyn Fn(&ResponseView<'_>) -> ResponseClass + Send + Sync>;
