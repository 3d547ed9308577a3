//! The spans (feature `tracing`): one per operation, and under it one per attempt (or hedged
//! copy), with the attributes of OpenTelemetry's HTTP client semantic conventions.
//!
//! Rule: a trace shows each request a client sent as an HTTP client span, as that convention
//! has it: each attempt is a span of kind `client` named after the method (`otel.name`), with
//! `http.request.method` (a method outside RFC 9110's and PATCH is `_OTHER`, its span is
//! named `HTTP` and the method itself is `http.request.method_original`), `server.address`, `server.port`, `url.full` (redacted: no userinfo,
//! no query, no fragment), its `http.response.status_code` or `error.type`, and
//! `http.request.resend_count` on every attempt after the first; the operation that repeats it
//! is their parent, with the same request attributes and why it ended
//! (`backstop.stop_reason`, `backstop.attempts`) and, when it failed, `error.type` with the
//! span's status `ERROR` (the last attempt's, or the stop reason of an operation that sent
//! nothing: `origin_paused`, `rate_limited`, …). The events (waits, gate changes, the end) are
//! emitted inside the operation's span. A gRPC call's spans (the `grpc` layer's) also carry
//! OpenTelemetry's RPC attributes: `rpc.system` (`grpc`), `rpc.service` and `rpc.method`, and
//! on an attempt answered Trailers-Only `rpc.grpc.status_code`. Both spans are INFO, target `backstop`: a subscriber
//! that keeps INFO from backstop gets the spans; none is made when the operation reports to
//! nobody, nor when no subscriber wants them (`tracing`'s interest, per callsite). Without the
//! feature these types are empty and cost nothing.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

#[cfg(feature = "tracing")]
use crate::observe::events::RetryEvent;
#[cfg(feature = "tracing")]
use crate::observe::redact;
use crate::observe::redact::{RedactedUri, Target};
#[cfg(feature = "tracing")]
use backstop_core::AttemptOutcome;
#[cfg(feature = "tracing")]
use backstop_core::Outcome;

/// An operation's span, and what its attempts' spans repeat of the request.
pub(crate) struct OperationSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    /// The request's host and port, for the attempts' spans (empty when no span is made).
    #[cfg(feature = "tracing")]
    server: (String, Option<u16>),
}

/// An attempt's span: a child of its operation's, closed when dropped.
pub(crate) struct AttemptSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// No span.
impl Default for OperationSpan {
    fn default() -> Self {
        OperationSpan {
            #[cfg(feature = "tracing")]
            span: tracing::Span::none(),
            #[cfg(feature = "tracing")]
            server: (String::new(), None),
        }
    }
}

/// No span.
impl Default for AttemptSpan {
    fn default() -> Self {
        AttemptSpan {
            #[cfg(feature = "tracing")]
            span: tracing::Span::none(),
        }
    }
}

impl OperationSpan {
    /// The span of the operation `name` (empty: none) sending `method` to `target`. Call only
    /// when the operation is reported.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn new(
        name: Option<&str>,
        method: &http::Method,
        target: Target<'_>,
        rpc: Option<(&str, &str)>,
    ) -> Self {
        #[cfg(feature = "tracing")]
        {
            let (name_of_span, known, original) = method_fields(method);
            let span = tracing::info_span!(
                target: "backstop",
                "operation",
                "otel.name" = name_of_span,
                "http.request.method" = known,
                "http.request.method_original" = original,
                "server.address" = tracing::field::Empty,
                "server.port" = tracing::field::Empty,
                "url.full" = tracing::field::display(RedactedUri::of(target)),
                "backstop.operation" = name,
                "rpc.system" = rpc.map(|_| "grpc"),
                "rpc.service" = rpc.map(|r| r.0),
                "rpc.method" = rpc.map(|r| r.1),
                "backstop.attempts" = tracing::field::Empty,
                "backstop.stop_reason" = tracing::field::Empty,
                "http.response.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "otel.status_code" = tracing::field::Empty,
            );
            if span.is_disabled() {
                return OperationSpan::default();
            }
            let server = server(target);
            record_server(&span, &server);
            OperationSpan { span, server }
        }
        #[cfg(not(feature = "tracing"))]
        OperationSpan::default()
    }

    /// The span of attempt (or copy) `number`, a child of this one; `url` is the redacted URL.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn attempt(
        &self,
        number: u32,
        method: &http::Method,
        url: RedactedUri<'_>,
        rpc: Option<(&str, &str)>,
    ) -> AttemptSpan {
        #[cfg(feature = "tracing")]
        {
            if self.span.is_disabled() {
                return AttemptSpan::default();
            }
            let (name_of_span, known, original) = method_fields(method);
            let span = tracing::info_span!(
                target: "backstop",
                parent: &self.span,
                "attempt",
                "otel.name" = name_of_span,
                "otel.kind" = "client",
                "http.request.method" = known,
                "http.request.method_original" = original,
                "server.address" = tracing::field::Empty,
                "server.port" = tracing::field::Empty,
                "url.full" = tracing::field::display(url),
                // The convention's attribute is on resends only: the first attempt has none.
                "http.request.resend_count" = (number > 1).then(|| i64::from(number - 1)),
                "rpc.system" = rpc.map(|_| "grpc"),
                "rpc.service" = rpc.map(|r| r.0),
                "rpc.method" = rpc.map(|r| r.1),
                // A Trailers-Only answer's code, which the gRPC layer records.
                "rpc.grpc.status_code" = tracing::field::Empty,
                "http.response.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "otel.status_code" = tracing::field::Empty,
                "backstop.cancelled" = tracing::field::Empty,
            );
            record_server(&span, &self.server);
            AttemptSpan { span }
        }
        #[cfg(not(feature = "tracing"))]
        AttemptSpan::default()
    }

    /// Emits `event` to `tracing` inside this span; the operation's end is also recorded on
    /// the span.
    #[cfg(feature = "tracing")]
    pub(crate) fn emit(&self, event: &RetryEvent<'_>) {
        if let crate::observe::events::EventKind::Finished { outcome } = event.kind {
            self.finished(&outcome);
        }
        let _inside = self.span.enter();
        crate::observe::trace::emit(event);
    }

    #[cfg(feature = "tracing")]
    fn finished(&self, outcome: &Outcome) {
        let span = &self.span;
        if span.is_disabled() {
            return;
        }
        span.record("backstop.attempts", i64::from(outcome.attempts));
        span.record("backstop.stop_reason", outcome.reason.as_str());
        match outcome.last {
            Some(last) => record_result(span, last),
            // Nothing was sent: the operation failed for its reason alone.
            None => {
                span.record("error.type", outcome.reason.as_str());
                span.record("otel.status_code", "ERROR");
            }
        }
    }
}

impl AttemptSpan {
    /// Records how the attempt ended.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    pub(crate) fn ended(&self, result: &backstop_core::AttemptOutcome) {
        #[cfg(feature = "tracing")]
        if !self.span.is_disabled() {
            record_result(&self.span, *result);
        }
    }
}

impl AttemptSpan {
    /// Records why a hedged copy was dropped in flight (another copy won, a fatal error, an
    /// abort): it has no answer of its own.
    #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
    #[cfg_attr(not(any(feature = "tower", feature = "reqwest")), allow(dead_code))]
    pub(crate) fn cancelled(&self, reason: &'static str) {
        #[cfg(feature = "tracing")]
        self.span.record("backstop.cancelled", reason);
    }
}

/// A span's name, `http.request.method` and `http.request.method_original` for `method`:
/// the method, itself and none; or, for a method the conventions do not know, `HTTP`,
/// `_OTHER` and the method as sent.
#[cfg(feature = "tracing")]
fn method_fields(method: &http::Method) -> (&str, &str, Option<&str>) {
    match crate::observe::known_method(method) {
        Some(known) => (known, known, None),
        None => ("HTTP", "_OTHER", Some(method.as_str())),
    }
}

/// The host and port of `target` (see [`redact::server`]), owned: the attempts' spans record
/// them too.
#[cfg(feature = "tracing")]
fn server(target: Target<'_>) -> (String, Option<u16>) {
    let (host, port) = redact::server(target);
    (host.to_owned(), port)
}

#[cfg(feature = "tracing")]
fn record_server(span: &tracing::Span, (host, port): &(String, Option<u16>)) {
    if !host.is_empty() {
        span.record("server.address", host.as_str());
    }
    if let Some(port) = port {
        span.record("server.port", i64::from(*port));
    }
}

// Integers are recorded as `i64`: `tracing-opentelemetry` keeps those as integer attributes,
// and records unsigned ones as text.

/// A response's status; a status of 400 or more, or a client error, as `error.type` (the
/// status as text, or the error's kind) with the span's status `ERROR`, as the convention
/// says of client spans.
#[cfg(feature = "tracing")]
fn record_result(span: &tracing::Span, result: AttemptOutcome) {
    match result {
        AttemptOutcome::Response(status) => {
            span.record("http.response.status_code", i64::from(status));
            if status >= 400 {
                span.record("error.type", status.to_string().as_str());
                span.record("otel.status_code", "ERROR");
            }
        }
        AttemptOutcome::Error(error) => {
            span.record("error.type", error.kind.as_str());
            span.record("otel.status_code", "ERROR");
        }
    }
}

impl AttemptSpan {
    /// Polls `future` inside this span.
    pub(crate) fn poll_in<F: Future>(
        &self,
        future: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        #[cfg(feature = "tracing")]
        let _inside = self.span.enter();
        future.poll(cx)
    }

    /// Runs `f` inside this span: a transport's `send`, which may call the client (a tower
    /// service's `call`, the rest of a middleware chain) before its future is first polled,
    /// so that what the client traces of the attempt is the span's child from its start.
    pub(crate) fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        let _inside = self.span.enter();
        f()
    }
}

/// A future polled inside an attempt's span, so that what the client traces of the attempt
/// is its child. Only for futures that need no pinning of their own (boxed, or pinned in
/// place): the wrapper then needs no projection.
pub(crate) struct InSpan<F> {
    pub(crate) future: F,
    pub(crate) span: AttemptSpan,
}

impl<F: Future + Unpin> Future for InSpan<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.span.poll_in(Pin::new(&mut this.future), cx)
    }
}
