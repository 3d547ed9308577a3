//! The returned response, read: its status as an error, its body as bytes, text or JSON.
//!
//! Rule: nothing the server said is lost. A status that is an error keeps its response and
//! the outcome; reading a body that fails says why, never what the body held.

use core::fmt;

use crate::Outcome;
use bytes::Bytes;
use http_body_util::BodyExt;

use crate::outcome::Retried;

impl<B> Retried<B> {
    /// The same response when its status is not an error, else a [`StatusError`] that keeps
    /// it (body unread) with the outcome: for `?` on a 4xx or 5xx, as reqwest's
    /// `error_for_status`.
    ///
    /// ```
    /// use backstop::{run, Retrier, RetryRequest, StdRuntime, VirtualTime};
    ///
    /// let done = futures_lite::future::block_on(run(
    ///     &Retrier::default(),
    ///     &VirtualTime::new(StdRuntime::new()),
    ///     RetryRequest::get("http://127.0.0.1:1/"),
    ///     |_attempt| async {
    ///         let response = http::Response::builder().status(503).body("busy");
    ///         response.map_err(std::io::Error::other)
    ///     },
    /// ))?;
    /// let error = done.error_for_status().expect_err("a 503");
    /// assert_eq!(error.status(), 503);
    /// assert_eq!(error.to_string(), "HTTP 503 Service Unavailable after 4 attempts (stopped: attempts)");
    /// assert_eq!(*error.response.body(), "busy"); // the last response, kept
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The error is the response itself, as large as the `Ok` side: boxing it would only add
    // an allocation to the error path.
    #[allow(clippy::result_large_err)]
    pub fn error_for_status(self) -> Result<Self, StatusError<B>> {
        let status = self.response.status();
        if status.is_client_error() || status.is_server_error() {
            Err(StatusError {
                response: self.response,
                outcome: self.outcome,
            })
        } else {
            Ok(self)
        }
    }
}

impl<B> Retried<B>
where
    B: http_body::Body,
{
    /// The whole body, read to its end.
    ///
    /// # Errors
    ///
    /// When reading fails (the connection closed early, a time-out of the client's).
    pub async fn bytes(self) -> Result<Bytes, BodyError<B::Error>> {
        let collected = self.response.into_body().collect().await;
        collected
            .map(http_body_util::Collected::to_bytes)
            .map_err(BodyError::Read)
    }

    /// The whole body as text: UTF-8, with any invalid sequence replaced by `U+FFFD`.
    ///
    /// # Errors
    ///
    /// When reading fails.
    pub async fn text(self) -> Result<String, BodyError<B::Error>> {
        let bytes = self.bytes().await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The whole body, deserialized from JSON (feature `json`).
    ///
    /// # Errors
    ///
    /// When reading fails, or the body is not JSON of type `T`.
    #[cfg(feature = "json")]
    pub async fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, BodyError<B::Error>> {
        let bytes = self.bytes().await?;
        serde_json::from_slice(&bytes).map_err(BodyError::Json)
    }
}

/// A response whose status is a client or server error (4xx, 5xx), from
/// [`Retried::error_for_status`]: the response itself, body unread, and the outcome.
#[non_exhaustive]
pub struct StatusError<B> {
    /// The last response.
    pub response: http::Response<B>,
    /// Attempts, elapsed time, and why the loop stopped.
    pub outcome: Outcome,
}

impl<B> StatusError<B> {
    /// The response's status.
    #[must_use]
    pub fn status(&self) -> http::StatusCode {
        self.response.status()
    }
}

impl<B> fmt::Debug for StatusError<B> {
    // The status and outcome; never the body, which may be secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusError")
            .field("status", &self.status())
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Display for StatusError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attempts = self.outcome.attempts;
        write!(
            f,
            "HTTP {} after {attempts} attempt{} (stopped: {})",
            self.status(),
            if attempts == 1 { "" } else { "s" },
            self.outcome.reason
        )
    }
}

impl<B> std::error::Error for StatusError<B> {}

/// Reading a returned response's body failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BodyError<E> {
    /// The body could not be read: the client's error.
    Read(E),
    /// The body is not JSON of the type asked for (feature `json`).
    #[cfg(feature = "json")]
    Json(serde_json::Error),
}

impl<E: fmt::Display> fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Read(e) => write!(f, "reading the response body failed: {e}"),
            // serde_json's text names the place and the problem, not the content.
            #[cfg(feature = "json")]
            BodyError::Json(e) => write!(f, "the response body is not the JSON expected: {e}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for BodyError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Read(e) => Some(e),
            #[cfg(feature = "json")]
            BodyError::Json(e) => Some(e),
        }
    }
}
