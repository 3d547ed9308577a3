//! The `tracing` sink (feature `tracing`): one event per attempt, wait and outcome, target
//! `backstop`, with the same redacted fields as the callback.
//!
//! Rule: levels a busy service can leave on. An operation that succeeded on its first attempt
//! logs at DEBUG only (its attempt, a hold before it, its end), so INFO stays quiet until
//! something is retried: a wait before a retry (a zero one included) is INFO, an operation
//! that needed retries is INFO when it returned a response and WARN when it gave up on a limit
//! (attempts, deadline, `Retry-After` ceiling, budget) or on an error. A response returned
//! because a retry was refused (no `Idempotency-Key`, a method not retried, a body that cannot
//! be sent again) ends at INFO, with that reason. An operation without a name has no
//! `operation` field. Durations are whole microseconds
//! (`took_us`, `delay_us`, `slept_us`, `elapsed_us`).

use core::time::Duration;

use backstop_core::AttemptOutcome;
use backstop_core::{Outcome, StopReason};
use tracing::Level;

use crate::observe::events::{EventKind, RetryEvent};

/// A duration as whole microseconds (saturating: `u64` microseconds are 584,000 years).
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The level of an operation's end: see the module docs.
fn finished_level(outcome: &Outcome) -> Level {
    let returned = matches!(outcome.last, Some(AttemptOutcome::Response(_)))
        && !outcome.reason.is_limit()
        && outcome.reason != StopReason::Aborted;
    // A response that a retry was refused for (a POST without an `Idempotency-Key`, a method
    // the policy does not retry, a body that cannot be sent again) says why, once, at INFO:
    // else the caller never learns why a 503 came back at once.
    let refused = matches!(
        outcome.reason,
        StopReason::NoIdempotencyKey | StopReason::NotIdempotent | StopReason::BodyNotReplayable
    );
    if returned && outcome.attempts <= 1 && !refused {
        Level::DEBUG
    } else if returned || outcome.reason == StopReason::Aborted {
        Level::INFO
    } else {
        Level::WARN
    }
}

pub(crate) fn emit(event: &RetryEvent<'_>) {
    // No name, no field: an empty `operation=""` on every line says nothing.
    let op = (!event.operation.is_empty()).then_some(event.operation);
    let (method, url) = (event.method, tracing::field::display(event.url));
    match event.kind {
        EventKind::AttemptEnded {
            attempt,
            result,
            took,
            elapsed,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, attempt,
            result = %result,
            took_us = micros(took),
            elapsed_us = micros(elapsed),
            "attempt ended"
        ),
        // A hold before the first attempt (the origin paused, the rate limiter) is not a
        // retry: a first-try success stays at DEBUG (the limiter's switching on is a WARN of
        // its own).
        EventKind::WaitStarted {
            next_attempt: 1,
            delay,
            source,
            elapsed,
            ..
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, next_attempt = 1,
            delay_us = micros(delay),
            source = source.as_str(),
            elapsed_us = micros(elapsed),
            "waiting before the first attempt"
        ),
        EventKind::WaitStarted {
            next_attempt,
            delay,
            cause,
            source,
            elapsed,
        } => tracing::info!(
            target: "backstop",
            operation = op, method, url, next_attempt,
            delay_us = micros(delay),
            cause = cause.map(|c| c.to_string()).unwrap_or_default(),
            source = source.as_str(),
            elapsed_us = micros(elapsed),
            "retrying after a wait"
        ),
        EventKind::WaitEnded {
            next_attempt,
            slept,
            elapsed,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, next_attempt,
            slept_us = micros(slept),
            elapsed_us = micros(elapsed),
            "wait ended"
        ),
        EventKind::CopySent {
            copy,
            trigger,
            elapsed,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, copy,
            trigger = %trigger,
            elapsed_us = micros(elapsed),
            "hedge copy sent"
        ),
        EventKind::CopyCancelled {
            copy,
            reason,
            elapsed,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, copy,
            reason = reason.as_str(),
            elapsed_us = micros(elapsed),
            "hedge copy cancelled"
        ),
        EventKind::Hedged {
            winner,
            cancelled,
            suppressed,
            suppressed_by,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url,
            winner = winner.unwrap_or(0),
            cancelled,
            suppressed,
            suppressed_by = suppressed_by.map_or("", StopReason::as_str),
            "hedged"
        ),
        EventKind::GateClosed {
            attempt,
            reopens_in,
            elapsed,
        } => tracing::warn!(
            target: "backstop",
            operation = op, method, url, attempt,
            reopens_in_us = micros(reopens_in),
            elapsed_us = micros(elapsed),
            "origin paused"
        ),
        EventKind::GateReopened { attempt, elapsed } => tracing::info!(
            target: "backstop",
            operation = op, method, url, attempt,
            elapsed_us = micros(elapsed),
            "origin reopened"
        ),
        EventKind::BodyResumed {
            attempt,
            offset,
            cause,
            elapsed,
        } => tracing::warn!(
            target: "backstop",
            operation = op, method, url, attempt, offset,
            cause = cause.as_str(),
            elapsed_us = micros(elapsed),
            "body resumed"
        ),
        EventKind::RateLimiterEnabled { attempt, elapsed } => tracing::warn!(
            target: "backstop",
            operation = op, method, url, attempt,
            elapsed_us = micros(elapsed),
            "rate limiter on"
        ),
        EventKind::Finished { outcome } => {
            // `tracing`'s macros take the level as a constant: one arm per level.
            macro_rules! finished {
                ($level:expr) => {
                    tracing::event!(
                        target: "backstop",
                        $level,
                        operation = op, method, url,
                        attempts = outcome.attempts,
                        reason = outcome.reason.as_str(),
                        last = outcome.last.map(|last| last.to_string()),
                        elapsed_us = micros(outcome.elapsed),
                        "operation finished"
                    )
                };
            }
            match finished_level(&outcome) {
                Level::DEBUG => finished!(Level::DEBUG),
                Level::INFO => finished!(Level::INFO),
                _ => finished!(Level::WARN),
            }
        }
    }
}
