//! Observability: every attempt, wait and outcome as structured data.
//!
//! Rule: what an operator needs to see, and nothing secret. The one place that builds an
//! event holds nothing secret to leak: only the redacted URL.
//!
//! Each attempt, wait and outcome is a [`RetryEvent`] (operation name, method, URL without
//! userinfo, query or fragment, attempt, status or error kind and class, reason, the delay actually
//! slept, total elapsed, final result), delivered to a callback
//! ([`Retrier::on_event`](crate::Retrier::on_event)) and, with the `tracing` feature, to `tracing`:
//! an operation that succeeded at its first attempt logs at DEBUG only; a wait before a retry and
//! an operation that needed retries are INFO; an operation that gave up is WARN. [`Metrics`] counts
//! the share of operations that retried, mean attempts, successes after a retry, operations that
//! hit a limit, and 429/503/504 responses; with the `metrics` feature, the same facts go to the
//! `metrics` facade's recorder as OpenTelemetry-named series. Bodies, query strings, userinfo and
//! every header (`Authorization`, `Cookie`, `Proxy-Authorization`, the raw `Idempotency-Key`) are
//! never emitted; the logs of your own hyper-util or reqwest client are yours (hyper-util's pool
//! logs its key, userinfo included, at debug level).
//!
//! # Traces (feature `tracing`)
//!
//! Each operation is a span, and each attempt (or hedged copy) a span under it, with the names
//! of OpenTelemetry's HTTP client conventions, so that `tracing-opentelemetry` exports them as
//! any instrumented client's. Both are INFO, target `backstop`, and are made only when a
//! subscriber wants them. The tracing names are `operation` and `attempt`; `otel.name` names
//! both after the method, as the conventions name a client span. A dashboard receives, for a
//! GET answered 503 (`Retry-After: 0`) then 200:
//!
//! ```text
//! GET  (internal)  http.request.method=GET  server.address=127.0.0.1  server.port=8080
//!   url.full=http://127.0.0.1:8080/items           (no query, no userinfo, no fragment)
//!   backstop.operation=list-items  backstop.attempts=2  backstop.stop_reason=final_status
//!   http.response.status_code=200
//!   event "retrying after a wait"  next_attempt=2 delay_us=0 cause="status 503" source="retry_after"
//!   event "operation finished"     attempts=2 reason="final_status" elapsed_us=…
//! ├─ GET  (client)  http.request.method=GET  server.address=127.0.0.1  server.port=8080
//! │    url.full=http://127.0.0.1:8080/items
//! │    http.response.status_code=503  error.type=503  status=Error
//! └─ GET  (client)  … the same request attributes …  http.request.resend_count=1
//!      http.response.status_code=200
//! ```
//!
//! An attempt that failed without a response has `error.type` set to its
//! [`ErrorKind`](crate::ErrorKind) (`connection_refused`, `timeout`, …); a hedged copy cancelled in
//! flight has `backstop.cancelled` (`superseded`, `fatal`, `aborted`). The events go to the
//! operation's span as span events at their own levels (the waits are INFO). Each resend's request
//! also carries its [`AttemptNumber`](crate::transport::AttemptNumber) in its extensions (the
//! first attempt's is implied), for a layer below backstop to record
//! `http.request.resend_count` on its own spans.
//!
//! ```
//! use backstop::{Metrics, Retrier};
//!
//! let metrics = Metrics::new();
//! let retrier = Retrier::default()
//!     .on_event(|event| eprintln!("{event}")) // one redacted line per event
//!     .metrics(&metrics);
//! # drop(retrier);
//! let m = metrics.snapshot();
//! println!("retried {:.0} %, mean attempts {:.2}", m.retried_share() * 100.0, m.mean_attempts());
//! ```

pub(crate) mod events;
#[cfg(feature = "metrics")]
mod handles;
pub(crate) mod metrics;
#[cfg(feature = "metrics")]
pub(crate) mod otel_metrics;
pub(crate) mod redact;
pub(crate) mod spans;
#[cfg(feature = "tracing")]
mod trace;

use std::sync::Arc;

#[doc(inline)]
pub use backstop_core::DelaySource;
pub use events::{EventKind, RetryEvent};
pub use metrics::{Metrics, MetricsSnapshot};
pub use redact::{redact_uri, RedactedUri};

use redact::Target;

use crate::observe::spans::{AttemptSpan, OperationSpan};
use crate::runtime::Runtime;

/// A callback that receives every event (attempts, waits, outcomes).
pub type Observer = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// The method as OpenTelemetry's HTTP conventions know it: one of RFC 9110's (and PATCH,
/// RFC 5789), case-sensitive, else `None`, which the spans and the series record as `_OTHER`
/// (a client sending invented methods cannot grow a series without bound).
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub(crate) fn known_method(method: &http::Method) -> Option<&'static str> {
    Some(match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "CONNECT" => "CONNECT",
        "OPTIONS" => "OPTIONS",
        "TRACE" => "TRACE",
        "PATCH" => "PATCH",
        _ => return None,
    })
}

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

/// What an operation's events say of its request: its name (empty: none), its method and
/// its target (redacted whenever it is shown). The request's plan is one; this module knows
/// it by this trait only, so that it stands below the modules that make requests.
pub(crate) trait Subject {
    /// The operation's name.
    fn operation_name(&self) -> Option<&str>;
    /// The request's method.
    fn method(&self) -> &http::Method;
    /// The request's target.
    fn target(&self) -> Target<'_>;
    /// The gRPC service and method of a gRPC call.
    fn rpc(&self) -> Option<(&str, &str)> {
        None
    }
}

/// Sends one operation's events to the observers, the metrics, the `metrics` facade and
/// `tracing`.
pub(crate) struct Emitter<'r, S> {
    // Thin references (a `Vec`'s, the plan's): the emitter lives in every operation's future.
    observers: &'r Vec<Observer>,
    metrics: Option<&'r Metrics>,
    /// The operation's series, when a recorder listens (boxed: the emitter lives in every
    /// operation's future, listened to or not).
    #[cfg(feature = "metrics")]
    series: Option<Box<otel_metrics::Series>>,
    /// The operation's name, method and URI (redacted whenever it is shown).
    plan: &'r S,
    active: bool,
    /// The operation's span (none unless reported and a subscriber wants it).
    span: OperationSpan,
}

impl<'r, S: Subject> Emitter<'r, S> {
    /// The emitter of the operation `plan` (its name, its method, its URI): it borrows it,
    /// and formats nothing until a callback or a subscriber does.
    pub(crate) fn new(
        observers: &'r Vec<Observer>,
        metrics: Option<&'r Metrics>,
        plan: &'r S,
    ) -> Self {
        let (name, method, target) = (plan.operation_name(), plan.method(), plan.target());
        let active = reported(observers);
        let span = if active {
            OperationSpan::new(name, method, target, plan.rpc())
        } else {
            OperationSpan::default()
        };
        Emitter {
            observers,
            metrics,
            #[cfg(feature = "metrics")]
            series: otel_metrics::listening()
                .then(|| Box::new(otel_metrics::Series::new(method, target))),
            plan,
            active,
            span,
        }
    }

    /// Whether anything hears this operation's events: an observer or a `tracing` subscriber,
    /// the retrier's `Metrics`, the `metrics` feature's series (when a recorder listens).
    #[inline(always)]
    pub(crate) fn heard(&self) -> bool {
        #[cfg(feature = "metrics")]
        let series = self.series.is_some();
        #[cfg(not(feature = "metrics"))]
        let series = false;
        self.active || self.metrics.is_some() || series
    }

    /// The operation's plan.
    pub(crate) fn plan(&self) -> &'r S {
        self.plan
    }

    /// The span of attempt (or copy) `number`: a child of the operation's, or none.
    pub(crate) fn attempt_span(&self, number: u32) -> AttemptSpan {
        if !self.active {
            return AttemptSpan::default();
        }
        let plan = self.plan;
        self.span.attempt(
            number,
            plan.method(),
            redact::RedactedUri::of(plan.target()),
            plan.rpc(),
        )
    }

    /// The clock after an event was emitted at `read`: `read` itself when no callback ran
    /// (only counters were updated since), else a fresh reading.
    pub(crate) fn clock_after<RT: Runtime + ?Sized>(
        &self,
        runtime: &RT,
        read: backstop_core::Instant,
    ) -> backstop_core::Instant {
        if self.active {
            runtime.now()
        } else {
            read
        }
    }

    /// Sends `kind` to whatever hears the events; with nothing to hear them, returns at once
    /// (inlined: the event is then not even built).
    #[inline(always)]
    pub(crate) fn emit(&self, kind: EventKind) {
        if self.heard() {
            self.emit_heard(kind);
        }
    }

    /// [`Self::emit`] when something hears the events.
    #[inline(never)]
    fn emit_heard(&self, kind: EventKind) {
        if let Some(metrics) = self.metrics {
            metrics.record(&kind);
        }
        #[cfg(feature = "metrics")]
        if let Some(series) = &self.series {
            series.record(&kind);
        }
        if !self.active {
            return;
        }
        let event = RetryEvent {
            operation: self.plan.operation_name().unwrap_or_default(),
            method: self.plan.method().as_str(),
            url: redact::RedactedUri::of(self.plan.target()),
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
