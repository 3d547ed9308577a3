//! The events the loop reports.

use core::fmt;
use core::time::Duration;

use crate::observe::redact::RedactedUri;
use backstop_core::{AttemptOutcome, CancelReason, DelaySource, HedgeTrigger};
use backstop_core::{Outcome, StopReason};

/// One event of one operation. It borrows the operation's name, method and redacted URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryEvent<'a> {
    /// The operation's name (empty if the caller gave none).
    pub operation: &'a str,
    /// The request method.
    pub method: &'a str,
    /// The URL without userinfo, query or fragment (formatted when shown: `Display`, or
    /// compared with a `&str`).
    pub url: RedactedUri<'a>,
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
        /// What it ended with (an abort: an error of kind and class `aborted`).
        result: AttemptOutcome,
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
        /// What the previous attempt ended with (the reason for the retry); `None` before a
        /// first attempt that an origin gate or a rate limiter held back.
        cause: Option<AttemptOutcome>,
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
    /// A hedged operation sent copy `copy` (its copies are numbered like attempts: their ends
    /// are [`EventKind::AttemptEnded`], a copy the loop's timeout ended included, as a
    /// `Timeout` error; a copy dropped for another reason ends with [`EventKind::CopyCancelled`]
    /// only).
    CopySent {
        /// The copy, from 1.
        copy: u32,
        /// Why it went out: the first, the delay that passed without an answer, or the
        /// non-final answer of another copy.
        trigger: HedgeTrigger,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// A hedged operation dropped copy `copy` while in flight: another copy won, a copy's error
    /// was fatal, or the caller aborted. (A copy whose timeout passed ends with
    /// [`EventKind::AttemptEnded`] instead, its error classified like any other.)
    CopyCancelled {
        /// The copy.
        copy: u32,
        /// Why: another copy won, a fatal error, an abort (a timeout only when a driver of
        /// its own leaves timeouts to the machine).
        reason: CancelReason,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The origin's gate closed after this operation's attempt: every operation to the origin
    /// waits until it reopens.
    GateClosed {
        /// The attempt whose answer closed it.
        attempt: u32,
        /// How long from now until the gate reopens (before its spread).
        reopens_in: Duration,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The origin's gate reopened for every operation after this operation's probe succeeded.
    GateReopened {
        /// The probe attempt.
        attempt: u32,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The send-rate limiter turned on after this operation's attempt was throttled: every
    /// attempt of the retrier now takes a token.
    RateLimiterEnabled {
        /// The attempt that was throttled.
        attempt: u32,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// What hedging did, right before [`EventKind::Finished`] of a hedged operation.
    Hedged {
        /// The copy whose final answer was returned, if one was.
        winner: Option<u32>,
        /// Copies cancelled in flight (not counting timed-out ones).
        cancelled: u32,
        /// Copies never sent because of `suppressed_by`.
        suppressed: u32,
        /// Why copies were suppressed (the budget, a `Retry-After` above the ceiling).
        suppressed_by: Option<StopReason>,
    },
    /// A response body the operation returned failed (`cause`: cut, stalled) after `offset`
    /// bytes were handed to the caller, and attempt `attempt` asks for the rest
    /// (`Range: bytes=offset-`): see [`crate::body`].
    BodyResumed {
        /// The attempt that resumes the body.
        attempt: u32,
        /// The bytes handed over before the failure: where the resume starts.
        offset: u64,
        /// What ended the body's previous attempt.
        cause: backstop_core::ErrorKind,
        /// Time since the operation started.
        elapsed: Duration,
    },
    /// The operation ended.
    Finished {
        /// Attempts started, total time, why it ended, and what the last attempt ended with:
        /// the caller gets that response or error, or nothing if the reason is `aborted`.
        outcome: Outcome,
    },
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
            } => match cause {
                Some(cause) => write!(
                    f,
                    "waiting {delay:?} before attempt {next_attempt} ({cause}; delay from {})",
                    source.as_str()
                ),
                None => write!(
                    f,
                    "waiting {delay:?} before attempt {next_attempt} (delay from {})",
                    source.as_str()
                ),
            },
            EventKind::WaitEnded { slept, .. } => write!(f, "waited {slept:?}"),
            EventKind::CopySent { copy, trigger, .. } => write!(f, "sent copy {copy} ({trigger})"),
            EventKind::CopyCancelled { copy, reason, .. } => {
                write!(f, "cancelled copy {copy} ({})", reason.as_str())
            }
            EventKind::Hedged {
                winner,
                cancelled,
                suppressed,
                suppressed_by,
            } => {
                match winner {
                    Some(w) => write!(f, "hedged: copy {w} won")?,
                    None => f.write_str("hedged: no copy won")?,
                }
                write!(f, ", {cancelled} cancelled")?;
                match suppressed_by {
                    Some(r) => write!(f, ", {suppressed} suppressed ({r})"),
                    None => Ok(()),
                }
            }
            EventKind::GateClosed { reopens_in, .. } => {
                write!(f, "origin paused for {reopens_in:?}")
            }
            EventKind::GateReopened { .. } => f.write_str("origin reopened"),
            EventKind::RateLimiterEnabled { .. } => f.write_str("rate limiter on"),
            EventKind::BodyResumed {
                attempt,
                offset,
                cause,
                ..
            } => write!(
                f,
                "body {cause} after {offset} bytes: attempt {attempt} resumes it"
            ),
            EventKind::Finished { outcome } => write!(f, "finished: {outcome}"),
        }
    }
}
