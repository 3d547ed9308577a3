//! Observability: every attempt, wait and outcome as structured data.
//!
//! Rule: what an operator needs to see, and nothing secret. The operation name, method, URL without
//! query or userinfo, attempt number, status or error kind, reason, actual delay slept, total
//! elapsed and final result are reported; the body, the query, the userinfo, every header
//! (`Authorization`, `Cookie`, `Proxy-Authorization`, the raw `Idempotency-Key`) never are. The one
//! place that builds an event is [`Emitter`], and it holds nothing secret to leak: only the
//! redacted URL.

pub(crate) mod events;
pub(crate) mod metrics;
#[cfg(feature = "metrics")]
pub(crate) mod otel_metrics;
pub(crate) mod redact;
pub(crate) mod spans;
#[cfg(feature = "tracing")]
mod trace;

use std::sync::Arc;

use crate::observe::events::{EventKind, RetryEvent};
use crate::observe::metrics::Metrics;
use crate::observe::spans::{AttemptSpan, OperationSpan};
use crate::runtime::Runtime;

/// A callback that receives every event (attempts, waits, outcomes).
pub type Observer = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// Whether an operation's events go anywhere: to an observer, or to a `tracing` subscriber.
pub(crate) fn reported(observers: &[Observer]) -> bool {
    !observers.is_empty() || trace_enabled()
}

/// Whether a `tracing` subscriber wants backstop's events (never without the feature).
fn trace_enabled() -> bool {
    #[cfg(feature = "tracing")]
    return tracing::enabled!(target: "backstop", tracing::Level::WARN)
        || tracing::enabled!(target: "backstop", tracing::Level::INFO)
        || tracing::enabled!(target: "backstop", tracing::Level::DEBUG);
    #[cfg(not(feature = "tracing"))]
    false
}

/// Sends one operation's events to the observers, the metrics, the `metrics` facade and
/// `tracing`.
pub(crate) struct Emitter<'r> {
    observers: &'r [Observer],
    metrics: Option<&'r Metrics>,
    #[cfg(feature = "metrics")]
    series: otel_metrics::Series,
    operation: &'r str,
    method: &'r http::Method,
    /// The request's URI, redacted whenever it is shown.
    url: redact::RedactedUri<'r>,
    active: bool,
    /// The operation's span (none unless reported and a subscriber wants it).
    span: OperationSpan,
}

impl<'r> Emitter<'r> {
    /// The emitter of the operation `name` sending `method` to `uri`: it borrows them, and
    /// formats nothing until a callback or a subscriber does.
    pub(crate) fn new(
        observers: &'r [Observer],
        metrics: Option<&'r Metrics>,
        name: Option<&'r str>,
        method: &'r http::Method,
        uri: &'r http::Uri,
    ) -> Self {
        let active = reported(observers);
        let url = redact::RedactedUri::new(uri);
        let span = if active {
            OperationSpan::new(name, method, uri, url)
        } else {
            OperationSpan::default()
        };
        Emitter {
            observers,
            metrics,
            #[cfg(feature = "metrics")]
            series: otel_metrics::Series::new(method, uri),
            operation: name.unwrap_or_default(),
            method,
            url,
            active,
            span,
        }
    }

    /// The span of attempt (or copy) `number`: a child of the operation's, or none.
    pub(crate) fn attempt_span(&self, number: u32) -> AttemptSpan {
        if !self.active {
            return AttemptSpan::default();
        }
        self.span.attempt(number, self.method, self.url)
    }

    /// The clock after an event was emitted at `read`: `read` itself when no callback ran
    /// (only counters were updated since), else a fresh reading.
    pub(crate) fn clock_after<RT: Runtime + ?Sized>(
        &self,
        runtime: &RT,
        read: crate::Instant,
    ) -> crate::Instant {
        if self.active {
            runtime.now()
        } else {
            read
        }
    }

    pub(crate) fn emit(&self, kind: EventKind) {
        if let Some(metrics) = self.metrics {
            metrics.record(&kind);
        }
        #[cfg(feature = "metrics")]
        self.series.record(&kind);
        if !self.active {
            return;
        }
        let event = RetryEvent {
            operation: self.operation,
            method: self.method.as_str(),
            url: self.url,
            kind,
        };
        #[cfg(feature = "tracing")]
        self.span.emit(&event);
        // The events are plain data; nothing else is done with them here.
        for observer in self.observers {
            observer(&event);
        }
    }
}
