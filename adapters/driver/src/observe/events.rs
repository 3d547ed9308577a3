//! The events the loop reports.

use core::fmt;
use core::time::Duration;

use backstop::{DelaySource, ErrorClass, ErrorKind, StopReason};

/// One event of one operation. It borrows the operation's name, method and redacted URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryEvent<'a> {
    /// The operation's name (empty if the caller gave none).
    pub operation: &'a str,
    /// The request method.
    pub method: &'a str,
    /// The URL without userinfo, query or fragment.
    pub url: &'a str,
    /// What happened.
    pub kind: EventKind,
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// An attempt ended.
    AttemptEnded {
        /// The attempt's number (the first is 1).
        attempt: u32,
        /// What it ended with.
        result: AttemptResult,
        /// How long the attempt took.
        took: Duration,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The loop starts waiting before the next attempt.
    WaitStarted {
        /// The attempt that follows the wait.
        next_attempt: u32,
        /// The decided delay.
        delay: Duration,
        /// What the previous attempt ended with (the reason for the retry).
        cause: AttemptResult,
        /// What decided the length (backoff, or the server's `Retry-After`).
        source: DelaySource,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// A wait ended (its time ran out, or an abort cut it short).
    WaitEnded {
        /// The attempt that follows the wait.
        next_attempt: u32,
        /// How long the loop actually slept.
        slept: Duration,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The operation ended.
    Finished {
        /// Attempts started.
        attempts: u32,
        /// Why it ended.
        reason: StopReason,
        /// What the caller gets.
        result: FinalResult,
        /// Total time of the operation.
        elapsed: Duration,
    },
}

/// What an attempt ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttemptResult {
    /// A response with this status.
    Status(u16),
    /// An error of this kind and class.
    Error {
        /// What went wrong.
        kind: ErrorKind,
        /// How it bears on a retry (after the caller's override).
        class: ErrorClass,
    },
    /// The caller aborted it.
    Aborted,
}

/// What the caller gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinalResult {
    /// The response with this status.
    Status(u16),
    /// The last attempt's error, of this kind.
    Error(ErrorKind),
    /// Nothing: the caller aborted.
    Aborted,
}

impl fmt::Display for AttemptResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptResult::Status(s) => write!(f, "status {s}"),
            AttemptResult::Error { kind, class } => write!(f, "error {kind} ({class})"),
            AttemptResult::Aborted => f.write_str("aborted"),
        }
    }
}

impl fmt::Display for FinalResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinalResult::Status(s) => write!(f, "status {s}"),
            FinalResult::Error(kind) => write!(f, "error {kind}"),
            FinalResult::Aborted => f.write_str("aborted"),
        }
    }
}

impl fmt::Display for RetryEvent<'_> {
    /// One human-readable line, with nothing secret in it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.operation.is_empty() {
            write!(f, "[{}] ", self.operation)?;
        }
        write!(f, "{} {}: ", self.method, self.url)?;
        match self.kind {
            EventKind::AttemptEnded {
                attempt,
                result,
                took,
                elapsed,
            } => write!(
                f,
                "attempt {attempt} ended with {result} after {took:?} (total {elapsed:?})"
            ),
            EventKind::WaitStarted {
                next_attempt,
                delay,
                cause,
                source,
                ..
            } => write!(
                f,
                "waiting {delay:?} before attempt {next_attempt} ({cause}; delay from {})",
                source.as_str()
            ),
            EventKind::WaitEnded { slept, .. } => write!(f, "waited {slept:?}"),
            EventKind::Finished {
                attempts,
                reason,
                result,
                elapsed,
            } => write!(
                f,
                "finished with {result} after {attempts} attempt(s) in {elapsed:?} (reason: {reason})"
            ),
        }
    }
}
