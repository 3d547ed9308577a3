//! What an operation hands back to its caller.
//!
//! Rule: nothing the server said is lost. Whenever the
//! last attempt produced a response — a success, a 404, the last 503 after the attempts ran
//! out, a 429 whose `Retry-After` was too long — the caller gets that response, body and all,
//! with the reason the loop stopped. An abort is reported apart from a timeout, and an
//! operation that never sent anything apart from both.

use core::fmt;

use backstop_core::{ErrorKind, Outcome};

use crate::observe::redact::DebugResponse;

/// The response the operation ended with, and how it ended. Its `Debug` shows the response's
/// status and header names, never a header's value (`Set-Cookie`) or the body.
#[non_exhaustive]
pub struct Retried<B> {
    /// The last response (its body unread).
    pub response: http::Response<B>,
    /// Attempts, elapsed time, and why the loop stopped (`final_status`, `attempts`,
    /// `deadline`, `retry_after_above_max`, ...).
    pub outcome: Outcome,
}

/// An operation that ended without a response to return.
///
/// Neither its `Display` nor its `Debug` shows the client's error, whose text and fields may
/// hold the URL with its query (reqwest's `error sending request for url (…?token=…)`): they
/// say its kind and how the operation ended. The client's error is the
/// [`source`](std::error::Error::source) (and the `error` field): redact before logging it.
#[non_exhaustive]
pub enum RetryError<E> {
    /// The caller aborted. Nothing was sent after the abort.
    Aborted(Outcome),
    /// The last attempt ran out of time.
    TimedOut(Outcome),
    /// Nothing was sent: the operation stopped before its first attempt went out, for the
    /// outcome's [`reason`](Outcome::reason) (`origin_paused`: a paused origin turned it away,
    /// or its paced slot fell past the deadline; `rate_limited`: the rate limiter's wait did
    /// not fit; `deadline`: the deadline came while the client was not ready; `budget`). Its
    /// [`attempts`](Outcome::attempts) is 0 and it has no [`last`](Outcome::last). Sending the
    /// request again at once finds what stopped it, unless its reason has passed.
    NotSent(Outcome),
    /// The last attempt failed with the client's error.
    Failed {
        /// The client's error, also the [`source`](std::error::Error::source) of this one.
        /// `RetryError`'s own `Display` never shows it, but its text and `Debug` may hold the
        /// URL, query and userinfo included (reqwest's: `error sending request for url
        /// (https://api.example.com/v1?token=...)`): whatever prints the whole chain (`{:#}`
        /// with anyhow, a `Debug` of it, an error reporter) prints that too. Redact before
        /// logging it: reqwest's `Error::without_url`, `reqwest_middleware::Error::url_mut`.
        /// backstop's own attempt errors (`backstop::ureq`'s and `backstop::smol`'s
        /// `HttpError`, `backstop::tower`'s `ServiceError`) show no URL in their `Display`.
        error: E,
        /// What kind of failure it was.
        kind: ErrorKind,
        /// Attempts, elapsed time, and why the loop stopped.
        outcome: Outcome,
    },
}

impl<B> fmt::Debug for Retried<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retried")
            .field("response", &DebugResponse(&self.response))
            .field("outcome", &self.outcome)
            .finish()
    }
}

impl<E> fmt::Debug for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryError::Aborted(o) => f.debug_tuple("Aborted").field(o).finish(),
            RetryError::TimedOut(o) => f.debug_tuple("TimedOut").field(o).finish(),
            RetryError::NotSent(o) => f.debug_tuple("NotSent").field(o).finish(),
            // The client's error is left out: see the type's docs.
            RetryError::Failed { kind, outcome, .. } => f
                .debug_struct("Failed")
                .field("kind", kind)
                .field("outcome", outcome)
                .finish_non_exhaustive(),
        }
    }
}

impl<E> RetryError<E> {
    /// How the operation ended.
    #[must_use]
    pub fn outcome(&self) -> &Outcome {
        match self {
            RetryError::Aborted(o) | RetryError::TimedOut(o) | RetryError::NotSent(o) => o,
            RetryError::Failed { outcome, .. } => outcome,
        }
    }

    /// Whether the caller aborted.
    #[must_use]
    pub fn is_aborted(&self) -> bool {
        matches!(self, RetryError::Aborted(_))
    }

    /// Whether the last attempt timed out (an operation that sent nothing did not: see
    /// [`is_not_sent`](Self::is_not_sent)).
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, RetryError::TimedOut(_))
    }

    /// Whether the operation stopped before sending anything ([`RetryError::NotSent`]).
    #[must_use]
    pub fn is_not_sent(&self) -> bool {
        matches!(self, RetryError::NotSent(_))
    }
}

impl<E> fmt::Display for RetryError<E> {
    /// Says what happened without the client's error text (which may hold the URL).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.outcome();
        match self {
            RetryError::Aborted(_) => write!(f, "aborted after {} attempt(s)", o.attempts),
            RetryError::TimedOut(_) => write!(
                f,
                "attempt {} timed out (stopped: {})",
                o.attempts, o.reason
            ),
            RetryError::NotSent(_) => write!(f, "nothing was sent (stopped: {})", o.reason),
            RetryError::Failed { kind, .. } => write!(
                f,
                "attempt {} failed: {kind} (stopped: {})",
                o.attempts, o.reason
            ),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RetryError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RetryError::Failed { error, .. } => Some(error),
            _ => None,
        }
    }
}
