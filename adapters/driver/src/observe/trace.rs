//! The `tracing` sink (feature `tracing`): one event per attempt, wait and outcome, target
//! `backstop`, with the same redacted fields as the callback.

use crate::observe::events::{EventKind, RetryEvent};

pub(crate) fn emit(event: &RetryEvent<'_>) {
    let (op, method, url) = (event.operation, event.method, event.url);
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
            took_ms = took.as_secs_f64() * 1e3,
            elapsed_ms = elapsed.as_secs_f64() * 1e3,
            "attempt ended"
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
            delay_ms = delay.as_secs_f64() * 1e3,
            cause = %cause,
            source = source.as_str(),
            elapsed_ms = elapsed.as_secs_f64() * 1e3,
            "retrying after a wait"
        ),
        EventKind::WaitEnded {
            next_attempt,
            slept,
            elapsed,
        } => tracing::debug!(
            target: "backstop",
            operation = op, method, url, next_attempt,
            slept_ms = slept.as_secs_f64() * 1e3,
            elapsed_ms = elapsed.as_secs_f64() * 1e3,
            "wait ended"
        ),
        EventKind::Finished { outcome } => tracing::info!(
            target: "backstop",
            operation = op, method, url,
            attempts = outcome.attempts,
            reason = outcome.reason.as_str(),
            last = outcome.last.map(|last| last.to_string()),
            elapsed_ms = outcome.elapsed.as_secs_f64() * 1e3,
            "operation finished"
        ),
    }
}
