//! The layer and the service it makes.
//!
//! Rule: the gRPC layer translates, the tower layer retries. Each call's body is buffered
//! ([`buffer`]), its `grpc-timeout` becomes the call's policy, and the tower layer's loop runs
//! it, with A6's classification as its response hook; each attempt after the first carries
//! `grpc-previous-rpc-attempts`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::sync::Arc;

use backstop_core::grpc::{
    encode_timeout, parse_timeout, Code, RetryPolicy, PREVIOUS_RPC_ATTEMPTS, STATUS, TIMEOUT,
};
use backstop_core::Instant;
use backstop_core::{AttemptError, ErrorClass, ResponseClass, StopReason};
use http::HeaderName;
use tower_layer::Layer;
use tower_service::Service;

use super::body::{buffer, AttemptBody, DEFAULT_PER_RPC_BUFFER_LIMIT};
use super::service_config::ServiceConfig;
use crate::outcome::RetryError;
use crate::request::AttemptNumber;
use crate::response_view::ResponseView;
use crate::retrier::Retrier;
use crate::runtime::Runtime;
use crate::tower::ServiceError;
use crate::{OperationName, Policy};

/// Wraps a tonic `Channel` (or any service of `http::Request<tonic::body::Body>`) in
/// [`Retry`]: every call is retried, or hedged, by its A6 [`RetryPolicy`], on the runtime's
/// clock and timers.
#[derive(Clone, Debug)]
pub struct RetryLayer<RT> {
    retrier: Retrier,
    a6: Policies,
    runtime: RT,
    buffer_limit: usize,
}

impl<RT: Runtime> RetryLayer<RT> {
    /// Retries by `a6`, on `runtime` (`backstop::tokio::TokioRuntime`, or `VirtualTime` over
    /// it in tests).
    #[must_use]
    pub fn new(a6: RetryPolicy, runtime: RT) -> Self {
        let a6 = Policies::One(Arc::new(a6));
        RetryLayer {
            retrier: with_a6(Retrier::new(a6.base()), a6.clone()),
            a6,
            runtime,
            buffer_limit: DEFAULT_PER_RPC_BUFFER_LIMIT,
        }
    }

    /// Retries each call by the policy its method has in `config`
    /// ([`ServiceConfig::policy_for`]; a method without one is sent once), with the config's
    /// `retryThrottling`, if any, as the retry budget.
    #[must_use]
    pub fn from_service_config(config: ServiceConfig, runtime: RT) -> Self {
        let throttle = config.retry_throttling();
        let a6 = Policies::Config(Arc::new(config));
        let mut retrier = Retrier::new(a6.base());
        if let Some(bucket) = throttle {
            retrier = retrier.budget(bucket);
        }
        RetryLayer {
            retrier: with_a6(retrier, a6.clone()),
            a6,
            runtime,
            buffer_limit: DEFAULT_PER_RPC_BUFFER_LIMIT,
        }
    }

    /// Runs the calls on `retrier`'s budget (a [`TokenBucket`](crate::TokenBucket) is A6's
    /// retry throttle; a retrier without a budget keeps a service config's `retryThrottling`),
    /// observers, metrics, origin gates and seed. Its policy, its response hook and its
    /// classification of errors are replaced by the A6 policy's.
    #[must_use]
    pub fn retrier(mut self, retrier: Retrier) -> Self {
        let mut retrier = retrier.with_policy(self.a6.base());
        if retrier.budget.is_unlimited() {
            retrier.budget = self.retrier.budget.clone();
        }
        self.retrier = with_a6(retrier, self.a6.clone());
        self
    }

    /// The per-call buffer limit in bytes (A6's per-RPC buffer limit; grpc-java's 1 MiB
    /// unless set): a call whose request messages exceed it is sent once and never retried
    /// ([`StopReason::BodyNotReplayable`](crate::StopReason::BodyNotReplayable)).
    #[must_use]
    pub fn per_rpc_buffer_limit(mut self, bytes: usize) -> Self {
        self.buffer_limit = bytes;
        self
    }
}

/// `retrier` with A6's classification of the answers as its response hook: a Trailers-Only
/// answer by its `grpc-status`, an answer that is not gRPC (a proxy's error page) by the code
/// its HTTP status maps to, and response headers without a status (the call is committed:
/// messages follow) as final.
///
/// And A6's reading of a failed attempt: a request that may have reached the server (a reset,
/// an early end, a protocol error) is a status, `UNAVAILABLE`, retried (or, hedging, not fatal)
/// only where the policy names that code; one never sent (a refused connection, a failed DNS
/// lookup) is retried as A6's transparent retry is. A service config's methods differ: there
/// such a failure is retried only when every policy of the config names `UNAVAILABLE` (never
/// twice a side effect a method's policy did not allow).
fn with_a6(retrier: Retrier, a6: Policies) -> Retrier {
    let errors = a6.clone();
    let retrier = retrier.classify(move |kind, _error| {
        let maybe_sent = matches!(AttemptError::new(kind).class, ErrorClass::MaybeSent);
        (maybe_sent && !errors.retry_unavailable()).then_some(ErrorClass::Permanent)
    });
    retrier.classify_response(move |view: &ResponseView<'_>| {
        let class = |a6: &RetryPolicy| match view.headers.get(&GRPC_STATUS) {
            Some(status) => a6.class(Code::from_bytes(status.as_bytes())),
            None if view.status == http::StatusCode::OK => ResponseClass::Final,
            None => a6.class(Code::from_http_status(view.status.as_u16())),
        };
        match &a6 {
            Policies::One(a6) => class(a6),
            Policies::Config(config) => config
                .policy_for(view.uri.path())
                .map_or(ResponseClass::Final, class),
        }
    })
}

/// The fields the layer reads and writes, named once (a `&str` name is parsed at each use).
static GRPC_STATUS: HeaderName = HeaderName::from_static(STATUS);
static GRPC_TIMEOUT: HeaderName = HeaderName::from_static(TIMEOUT);
static GRPC_PREVIOUS_RPC_ATTEMPTS: HeaderName = HeaderName::from_static(PREVIOUS_RPC_ATTEMPTS);

/// The A6 policy of every call, or of each method by a service config.
#[derive(Clone, Debug)]
enum Policies {
    One(Arc<RetryPolicy>),
    Config(Arc<ServiceConfig>),
}

impl Policies {
    /// Whether a failure that may have reached the server (`UNAVAILABLE`) is retried.
    fn retry_unavailable(&self) -> bool {
        match self {
            Policies::One(a6) => a6.retried_codes().contains(Code::Unavailable),
            Policies::Config(config) => config.every_policy_retries(Code::Unavailable),
        }
    }

    /// The retrier's policy: the one policy, or (a call of a service config always carries its
    /// method's) sending once.
    fn base(&self) -> Policy {
        match self {
            Policies::One(a6) => a6.policy(),
            Policies::Config(_) => once(None),
        }
    }

    /// The policy of the call at `path` with the request's own `timeout`, if it has one; `None`
    /// when the retrier's applies.
    fn for_call(&self, path: &str, timeout: Option<Duration>) -> Option<Policy> {
        match self {
            Policies::One(a6) => timeout
                .and_then(|t| a6.with_timeout(t).ok())
                .map(|p| p.policy()),
            Policies::Config(config) => {
                let method = config.method(path);
                // The call's deadline is the shorter of the caller's and the method config's
                // (gRPC's service config: `timeout`).
                let timeout = match (timeout, method.and_then(|m| m.timeout)) {
                    (Some(caller), Some(config)) => Some(caller.min(config)),
                    (caller, config) => caller.or(config),
                };
                Some(match method.and_then(|m| m.policy) {
                    Some(a6) => timeout
                        .and_then(|t| a6.with_timeout(t).ok())
                        .unwrap_or(a6)
                        .policy(),
                    None => once(timeout),
                })
            }
        }
    }
}

/// A policy that sends a call once, within `timeout` (else the default deadline).
fn once(timeout: Option<Duration>) -> Policy {
    let deadline = timeout.unwrap_or(Policy::default().max_elapsed());
    Policy::builder()
        .max_attempts(1)
        .max_elapsed(deadline)
        .attempt_timeout(deadline)
        .build()
        .unwrap_or_default()
}

impl<S, RT: Runtime + Clone> Layer<S> for RetryLayer<RT> {
    type Service = Retry<S, RT>;

    fn layer(&self, inner: S) -> Retry<S, RT> {
        let tower = crate::tower::RetryLayer::new(self.retrier.clone(), self.runtime.clone());
        Retry {
            inner: tower.layer(Attempts(inner, self.runtime.clone())),
            runtime: self.runtime.clone(),
            a6: self.a6.clone(),
            buffer_limit: self.buffer_limit,
        }
    }
}

/// A service that retries calls to the inner service `S` by gRFC A6 (made by [`RetryLayer`]).
#[derive(Clone, Debug)]
pub struct Retry<S, RT> {
    inner: crate::tower::Retry<Attempts<S, RT>, RT>,
    runtime: RT,
    a6: Policies,
    buffer_limit: usize,
}

/// The future of [`Retry::call`]: the tower layer's loop, its error read as a
/// [`tonic::Status`].
pub struct RetryFuture<R>(crate::tower::RetryFuture<R>);

impl<R> Future for RetryFuture<R> {
    type Output = Result<http::Response<R>, tonic::Status>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map_err(status_of)
    }
}

impl<R> core::fmt::Debug for RetryFuture<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RetryFuture")
    }
}

impl<S, R, RT> Service<http::Request<tonic::body::Body>> for Retry<S, RT>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<R>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    R: http_body::Body + Send + 'static,
    RT: Runtime + Clone + Send + Sync + 'static,
{
    type Response = http::Response<R>;
    type Error = tonic::Status;
    type Future = RetryFuture<R>;

    /// Always ready: each attempt readies its own clone of the inner service.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    /// Buffers the request's body (what it has ready: see [`DEFAULT_PER_RPC_BUFFER_LIMIT`]),
    /// sets the call's policy, and starts the tower layer's loop; the call's future is the
    /// loop's, its error read as a `tonic::Status`.
    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let (mut head, body) = request.into_parts();
        let (body, not_buffered) = buffer(body, self.buffer_limit);
        call_policy(&mut head, &self.a6, &self.runtime);
        if self.inner.retrier().reports_events() && head.extensions.get::<OperationName>().is_none()
        {
            // The method's path names the call's events and spans
            // (`/helloworld.Greeter/SayHello`), when something hears them.
            let name = OperationName::grpc(head.uri.path().to_owned());
            head.extensions.insert(name);
        }
        let request = http::Request::from_parts(head, body);
        RetryFuture(self.inner.call_with(request, not_buffered.is_none()))
    }
}

/// Puts the call's policy in its extensions (unless it carries one): its method's A6
/// policy, with the request's `grpc-timeout` as its deadline when it has a usable one.
/// A request's own `grpc-timeout` is also kept as the call's deadline ([`CallDeadline`]), for
/// the retries' `grpc-timeout`.
fn call_policy<RT: Runtime>(head: &mut http::request::Parts, a6: &Policies, runtime: &RT) {
    let timeout = head
        .headers
        .get(&GRPC_TIMEOUT)
        .and_then(|v| parse_timeout(v.as_bytes()));
    if let Some(t) = timeout {
        let deadline = runtime.now().saturating_add(t);
        head.extensions.insert(CallDeadline(deadline));
    }
    if head.extensions.get::<Policy>().is_some() {
        return;
    }
    if let Some(policy) = a6.for_call(head.uri.path(), timeout) {
        head.extensions.insert(policy);
    }
}

/// The gRPC status of a call that ended without a response: `DEADLINE_EXCEEDED` past the
/// deadline (whichever timer saw it first: the loop's, or the channel's own `grpc-timeout`,
/// which tonic alone would report as `CANCELLED`), `CANCELLED` after an abort, `UNAVAILABLE`
/// when no attempt could be sent, else the inner service's own error as tonic reads it.
fn status_of(error: RetryError<ServiceError>) -> tonic::Status {
    let text = error.to_string();
    match error {
        RetryError::Failed { outcome, .. } if outcome.reason == StopReason::Deadline => {
            tonic::Status::deadline_exceeded(text)
        }
        RetryError::Failed { error, .. } => tonic::Status::from_error(error.into_inner()),
        RetryError::TimedOut(_) => tonic::Status::deadline_exceeded(text),
        RetryError::Aborted(_) => tonic::Status::cancelled(text),
        _ => tonic::Status::unavailable(text),
    }
}

/// When a call with a `grpc-timeout` of its own must end, on the layer's clock.
#[derive(Clone, Copy, Debug)]
struct CallDeadline(Instant);

/// The inner service, as each attempt calls it: the buffered body (or the body sent once), and
/// on every attempt after the first `grpc-previous-rpc-attempts` and, for a call with a
/// `grpc-timeout`, the time left before its deadline in its place (A6: the deadline is the
/// call's, across its attempts; the server is told what is left of it).
#[derive(Clone, Debug)]
pub(crate) struct Attempts<S, RT>(S, RT);

impl<S, R, RT> Service<http::Request<AttemptBody>> for Attempts<S, RT>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<R>>,
    RT: Runtime,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = AttemptFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<AttemptBody>) -> Self::Future {
        let (mut head, body) = request.into_parts();
        let previous = AttemptNumber::of(&head.extensions).resend_count();
        if previous > 0 {
            let previous = http::HeaderValue::from(previous);
            head.headers
                .insert(GRPC_PREVIOUS_RPC_ATTEMPTS.clone(), previous);
            if let Some(CallDeadline(at)) = head.extensions.get::<CallDeadline>().copied() {
                let left = encode_timeout(at.saturating_duration_since(self.1.now()));
                if let Ok(value) = http::HeaderValue::from_bytes(left.as_bytes()) {
                    head.headers.insert(GRPC_TIMEOUT.clone(), value);
                }
            }
        }
        let request = http::Request::from_parts(head, body.into_tonic());
        AttemptFuture {
            inner: self.0.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// An attempt's future: the inner service's. With the `tracing` feature, a Trailers-Only
    /// answer's code is recorded as `rpc.grpc.status_code` on the attempt's span (the span the
    /// loop polls the attempt in).
    pub(crate) struct AttemptFuture<F> {
        #[pin]
        inner: F,
    }
}

impl<F, R, E> Future for AttemptFuture<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = self.project().inner.poll(cx);
        #[cfg(feature = "tracing")]
        if let Poll::Ready(Ok(response)) = &polled {
            if let Some(status) = response.headers().get(&GRPC_STATUS) {
                let code = Code::from_bytes(status.as_bytes()) as u8;
                tracing::Span::current().record("rpc.grpc.status_code", i64::from(code));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backstop_core::ErrorKind;

    fn a6(codes: &[Code]) -> RetryPolicy {
        let built = RetryPolicy::builder()
            .max_attempts(3)
            .initial_backoff(Duration::from_millis(10))
            .max_backoff(Duration::from_millis(100))
            .backoff_multiplier(2.0)
            .retryable_status_codes(codes)
            .build();
        built.unwrap_or_else(|e| panic!("{e}"))
    }

    /// How the layer's retrier classifies an attempt that failed with `kind` (`None`: as
    /// every front door does).
    fn class(policies: Policies, kind: ErrorKind) -> Option<ErrorClass> {
        let retrier = with_a6(Retrier::default(), policies);
        let classify = retrier.classify.as_ref().map(Arc::clone);
        let error = std::io::Error::other("reset");
        classify.and_then(|f| f(kind, &error))
    }

    #[test]
    fn a_failure_that_may_have_reached_the_server_is_unavailable_retried_only_if_named() {
        let aborted = || Policies::One(Arc::new(a6(&[Code::Aborted])));
        let unavailable = || Policies::One(Arc::new(a6(&[Code::Unavailable])));
        // A reset after the request went out: a status, UNAVAILABLE.
        assert_eq!(
            class(aborted(), ErrorKind::ConnectionReset),
            Some(ErrorClass::Permanent)
        );
        assert_eq!(class(unavailable(), ErrorKind::ConnectionReset), None);
        // Never sent (a refused connection): A6's transparent retry, whatever the codes.
        assert_eq!(class(aborted(), ErrorKind::ConnectionRefused), None);
    }

    #[test]
    fn a_service_config_retries_such_a_failure_only_when_every_policy_names_unavailable() {
        let config = |codes: &str| {
            let json = format!(
                r#"{{"methodConfig": [
                    {{"name": [{{"service": "a.A"}}], "retryPolicy": {{"maxAttempts": 2,
                      "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}}},
                    {{"name": [{{"service": "b.B"}}], "retryPolicy": {{"maxAttempts": 2,
                      "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
                      "retryableStatusCodes": [{codes}]}}}}]}}"#
            );
            let parsed = ServiceConfig::from_json(&json);
            Policies::Config(Arc::new(parsed.unwrap_or_else(|e| panic!("{e}"))))
        };
        assert_eq!(
            class(
                config(r#""UNAVAILABLE", "ABORTED""#),
                ErrorKind::ConnectionReset
            ),
            None
        );
        assert_eq!(
            class(config(r#""ABORTED""#), ErrorKind::ConnectionReset),
            Some(ErrorClass::Permanent)
        );
    }

    #[test]
    fn a_call_s_deadline_is_the_shorter_of_the_caller_s_and_the_method_config_s() {
        let json = r#"{"methodConfig": [{"name": [{"service": "a.A"}], "timeout": "1s"}]}"#;
        let config = ServiceConfig::from_json(json).unwrap_or_else(|e| panic!("{e}"));
        let policies = Policies::Config(Arc::new(config));
        let deadline = |caller: Option<Duration>| {
            let policy = policies.for_call("/a.A/M", caller);
            policy.map(|p| p.max_elapsed())
        };
        let second = Duration::from_secs(1);
        assert_eq!(deadline(Some(Duration::from_secs(30))), Some(second));
        assert_eq!(deadline(Some(Duration::from_millis(200))), Some(second / 5));
        assert_eq!(deadline(None), Some(second));
    }
}

#[cfg(test)]
mod throttling {
    use super::*;

    /// A service config's `retryThrottling` stays the budget when the caller's retrier brings
    /// none (a layer without a config has none).
    #[test]
    fn a_retrier_without_a_budget_keeps_the_config_s_throttle() {
        let json = r#"{"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}}"#;
        let config = || ServiceConfig::from_json(json).unwrap_or_else(|e| panic!("{e}"));
        let rt = crate::runtime::StdRuntime::new();
        let kept = RetryLayer::from_service_config(config(), rt).retrier(Retrier::default());
        assert!(!kept.retrier.budget.is_unlimited());
        let none = RetryLayer::new(tests_a6(), rt).retrier(Retrier::default());
        assert!(none.retrier.budget.is_unlimited());
    }

    fn tests_a6() -> RetryPolicy {
        let built = RetryPolicy::builder()
            .max_attempts(2)
            .initial_backoff(Duration::from_millis(10))
            .max_backoff(Duration::from_millis(10))
            .backoff_multiplier(1.0)
            .retryable_status_codes(&[Code::Unavailable])
            .build();
        built.unwrap_or_else(|e| panic!("{e}"))
    }
}
