//! The returned response's status as an error.
//!
//! Rule: nothing the server said is lost. A status that is an error keeps its response (body
//! unread) and the outcome. The body is the client's: read it with `http_body_util::BodyExt`
//! (`collect`) or the client's own helpers, and parse it with `serde_json`.

use core::fmt;

use backstop_core::Outcome;

use crate::outcome::Retried;

impl<B> Retried<B> {
    /// The same response when its status is not an error, else a [`StatusError`] that keeps
    /// it (body unread) with the outcome: for `?` on a 4xx or 5xx, as reqwest's
    /// `error_for_status`.
    ///
    /// ```
    /// use backstop::runtime::{StdRuntime, VirtualTime};
    /// use backstop::{run, Retrier};
    ///
    /// let done = futures_lite::future::block_on(run(
    ///     &Retrier::default(),
    ///     &VirtualTime::new(StdRuntime::new()),
    ///     http::Request::get("http://127.0.0.1:1/").body(())?,
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
