//! What a hedging driver tells the machine, and what the machine tells it: copies have numbers
//! here (several are in flight at once), unlike the retry machine's one attempt.

use core::time::Duration;

use crate::classify::AttemptError;
use crate::decision::{AttemptOutcome, DelaySource, Outcome, StopReason};
use crate::event::Response;
use crate::time::Instant;

/// An input to a [`HedgeMachine`](crate::HedgeMachine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeEvent<'a> {
    /// The copy the machine asked for ([`HedgeDecision::Send`]) has started.
    Started {
        /// Its number (the first copy is 1).
        copy: u32,
    },
    /// A copy in flight got a response (its head).
    Response {
        /// The copy.
        copy: u32,
        /// Its response.
        response: Response<'a>,
    },
    /// A copy in flight failed without a response.
    Error {
        /// The copy.
        copy: u32,
        /// How it failed.
        error: AttemptError,
    },
    /// The driver dropped a copy the machine told it to cancel ([`HedgeDecision::Cancel`]).
    Cancelled {
        /// The copy.
        copy: u32,
    },
    /// Time passed (a timer fired). Only `now` matters.
    TimePassed,
    /// The caller cancelled the operation: every copy in flight is cancelled, none is sent.
    Abort,
}

/// Why a copy is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeTrigger {
    /// The operation's first copy.
    First,
    /// The previous copy had not answered after this delay (the hedging delay).
    Delay(Duration),
    /// Copy `copy` ended with a non-final answer (a retryable status or error): the next copy
    /// goes at once, or after the server's `source` floor when the answer carried one.
    Answer {
        /// The copy that answered.
        copy: u32,
        /// What it ended with.
        outcome: AttemptOutcome,
        /// The server-directed floor that delayed this copy, if one did.
        floor: Option<DelaySource>,
    },
}

/// Why a copy must be dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelReason {
    /// Another copy's final answer won.
    Superseded {
        /// The copy that won.
        winner: u32,
    },
    /// Its timeout passed (it counts as a timed-out attempt).
    TimedOut,
    /// Another copy failed with an error that retrying cannot help (a permanent error).
    Fatal,
    /// The caller aborted the operation.
    Aborted,
}

impl CancelReason {
    /// A short, stable name for logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CancelReason::Superseded { .. } => "superseded",
            CancelReason::TimedOut => "timed_out",
            CancelReason::Fatal => "fatal",
            CancelReason::Aborted => "aborted",
        }
    }
}

/// How a hedged operation ended: the [`Outcome`] (its `attempts` are the copies sent) and
/// what hedging did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HedgeOutcome {
    /// The outcome, as a retried operation's: attempts (copies sent), time, reason, the last
    /// answer (the winner's, else the last response, else the last error).
    pub outcome: Outcome,
    /// The copy whose final answer was returned, if one was.
    pub winner: Option<u32>,
    /// Copies cancelled while in flight (superseded, after a fatal error, or aborted); a copy
    /// that timed out is not counted.
    pub cancelled: u32,
    /// Copies the policy allowed that were never sent because of `suppressed_by`.
    pub suppressed: u32,
    /// Why copies were suppressed: [`StopReason::Budget`] (the shared budget denied a copy),
    /// [`StopReason::RetryAfterAboveMax`] (a server asked for longer than the ceiling), or
    /// [`StopReason::OriginPaused`] / [`StopReason::RateLimited`] (the origin's gate or the
    /// send-rate limiter held a copy back past the deadline).
    pub suppressed_by: Option<StopReason>,
}

/// A [`HedgeMachine`](crate::HedgeMachine)'s next instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "a decision tells the driver what to do next"]
#[non_exhaustive]
pub enum HedgeDecision {
    /// Send copy `copy` now and report [`HedgeEvent::Started`]; give up on it after `timeout`
    /// (bounded by the deadline). Repeats until the copy is reported started.
    Send {
        /// The copy's number; the first is 1.
        copy: u32,
        /// How long it may take.
        timeout: Duration,
        /// Why it is sent.
        trigger: HedgeTrigger,
    },
    /// Drop copy `copy` (its future, its connection) and report [`HedgeEvent::Cancelled`].
    /// Repeats until reported.
    Cancel {
        /// The copy to drop.
        copy: u32,
        /// Why.
        reason: CancelReason,
    },
    /// Wait for an answer of the copies in flight, at most until `until` (then poll: a copy's
    /// timeout, or the next copy's delay).
    Wait {
        /// When to poll again at the latest.
        until: Instant,
        /// Copies in flight.
        in_flight: u32,
    },
    /// Done: hand the caller the winner's response (or, when every copy failed, the last
    /// response).
    Return(HedgeOutcome),
    /// Done without a response to return: the last error, or an abort.
    GiveUp(HedgeOutcome),
}

impl core::fmt::Display for HedgeTrigger {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HedgeTrigger::First => f.write_str("first copy"),
            HedgeTrigger::Delay(d) => write!(f, "no answer after {d:?}"),
            HedgeTrigger::Answer {
                copy,
                outcome,
                floor: None,
            } => write!(f, "copy {copy} ended with {outcome}"),
            HedgeTrigger::Answer {
                copy,
                outcome,
                floor: Some(source),
            } => write!(
                f,
                "copy {copy} ended with {outcome}, after its {}",
                source.as_str()
            ),
        }
    }
}

impl core::fmt::Display for HedgeDecision {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HedgeDecision::Send {
                copy,
                timeout,
                trigger,
            } => write!(f, "send copy {copy} ({trigger}), timeout {timeout:?}"),
            HedgeDecision::Cancel { copy, reason } => {
                write!(f, "cancel copy {copy} ({})", reason.as_str())
            }
            HedgeDecision::Wait { until, in_flight } => write!(
                f,
                "wait until {:?} ({in_flight} in flight)",
                until.as_duration()
            ),
            HedgeDecision::Return(o) => write!(f, "return the response: {}", o.outcome),
            HedgeDecision::GiveUp(o) => write!(f, "give up: {}", o.outcome),
        }
    }
}
