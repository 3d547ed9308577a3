//! The layer and the service it makes.
//!
//! Rule: a request is repeated only as it was first sent. Each attempt sends a clone of the
//! caller's request (body included, so the body must be `Clone`) to the operation's clone of
//! the inner service, made ready first: tower's contract is one `call` per `poll_ready` (and a
//! service whose readiness failed is discarded: the next attempt readies a fresh clone). Readiness is
//! backpressure, not an attempt: the loop waits for it before the attempt starts (bounded by
//! the operation's deadline, not by the attempt's timeout), so a service that is not ready
//! sends nothing and spends no attempt.

use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::Arc;

use crate::classify::port_out_of_range;
use crate::classify::UnsupportedUri;
use crate::hedge::{hedges, run_hedged};
use crate::idempotency::ensure_idempotency_key;
use crate::outcome::Retried;
use crate::outcome::RetryError;
use crate::request::Attempt;
use crate::request::{Address, Plan};
use crate::retrier::Retrier;
use crate::run::{plan_head, run_planned, Own};
use crate::runtime::Runtime;
use crate::transport::Transport;
use crate::transport::{drain_body, AttemptNumber, DrainLimits};
use backstop_core::HedgeOutcome;
use tower_layer::Layer;
use tower_service::Service;

use crate::tower::error::{error_kind, ServiceError};

/// Wraps a service in [`Retry`]: every request it calls is retried under the [`Retrier`]'s
/// policy, on the runtime's clock and timers.
#[derive(Clone, Debug)]
pub struct RetryLayer<RT> {
    retrier: Retrier,
    runtime: RT,
    generate_keys: bool,
}

impl<RT: Runtime> RetryLayer<RT> {
    /// Retries under `retrier`, on `runtime`: `backstop::tokio::TokioRuntime` (tokio's clock:
    /// paused time counts), `backstop::smol::SmolRuntime`, or `VirtualTime` over either in
    /// tests.
    #[must_use]
    pub fn new(retrier: Retrier, runtime: RT) -> Self {
        RetryLayer {
            retrier,
            runtime,
            generate_keys: false,
        }
    }

    /// Gives every POST and PATCH that has no `Idempotency-Key` a new one (a UUID v4), the
    /// same on each of its attempts, which makes it retryable under the default policy. Only
    /// for a service whose server deduplicates requests by that key.
    #[must_use]
    pub fn generate_idempotency_key(mut self) -> Self {
        self.generate_keys = true;
        self
    }

    /// Makes the body of every GET's `200` resume by itself after a failure (a reset, an end
    /// short of its `Content-Length`, a stall past the policy's
    /// [`body_idle_timeout`](crate::Policy::body_idle_timeout)), as RFC 9110 allows: each
    /// resume is an attempt of the same operation (the same count, budget, deadline, gates
    /// and abort), sent through the operation's clone of the inner service with
    /// `Range: bytes=N-` after the N bytes the caller has read and `If-Range` with the first
    /// response's strong validator; it goes on only with a `206` exactly at N. Anything else
    /// ends the body with a [`BodyError`](crate::body::BodyError).
    ///
    /// Every response's body becomes a [`ResumeBody`](crate::tower::ResumeBody) (the inner
    /// body's `Data` must be `Bytes`, as hyper's is). Only a `200` with a strong `ETag` (or a
    /// `Last-Modified` RFC 9110 takes as strong), a `Content-Length` and no
    /// `Accept-Ranges: none` resumes. A GET without an `Accept-Encoding` of its own is sent
    /// with `Accept-Encoding: identity` (a decoded body could not be resumed at the right
    /// offset); one with a `Range` of its own does not resume.
    #[must_use]
    pub fn resume_bodies(self) -> crate::tower::ResumingRetryLayer<RT> {
        crate::tower::ResumingRetryLayer(self)
    }
}

impl<S, RT: Clone> Layer<S> for RetryLayer<RT> {
    type Service = Retry<S, RT>;

    fn layer(&self, inner: S) -> Retry<S, RT> {
        Retry {
            inner,
            retrier: Arc::new(self.retrier.clone()),
            runtime: self.runtime.clone(),
            generate_keys: self.generate_keys,
        }
    }
}

/// A service that retries the inner service `S` (made by [`RetryLayer`]).
#[derive(Clone, Debug)]
pub struct Retry<S, RT> {
    pub(super) inner: S,
    /// Shared: a call (and a clone of the service, as `oneshot` callers make) takes a
    /// reference, not a copy of the retrier's observers, clocks and counters.
    pub(super) retrier: Arc<Retrier>,
    pub(super) runtime: RT,
    generate_keys: bool,
}

/// The future of [`Retry::call`].
pub type RetryFuture<R> =
    Pin<Box<dyn Future<Output = Result<http::Response<R>, RetryError<ServiceError>>> + Send>>;

impl<S, B, R, RT> Service<http::Request<B>> for Retry<S, RT>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Clone + Send + 'static,
    R: http_body::Body + Send + 'static,
    RT: Runtime + Clone + Send + Sync + 'static,
{
    type Response = http::Response<R>;
    type Error = RetryError<ServiceError>;
    type Future = RetryFuture<R>;

    /// Always ready: each call readies its own clone of the inner service, before each attempt.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.call_with(request, true)
    }
}

impl<S, RT> Retry<S, RT> {
    /// The retrier its calls run on.
    #[cfg(feature = "grpc")]
    pub(crate) fn retrier(&self) -> &Retrier {
        &self.retrier
    }

    /// [`Service::call`], for a front door that knows whether the request's body can be sent
    /// again (`replayable`; the gRPC layer's buffer may not hold it all): one that cannot is
    /// sent once ([`StopReason::BodyNotReplayable`](crate::StopReason::BodyNotReplayable)).
    pub(crate) fn call_with<B, R>(
        &mut self,
        mut request: http::Request<B>,
        replayable: bool,
    ) -> RetryFuture<R>
    where
        S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
        S::Future: Send,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        B: Clone + Send + 'static,
        R: http_body::Body + Send + 'static,
        RT: Runtime + Clone + Send + Sync + 'static,
    {
        if self.generate_keys {
            let method = request.method().clone();
            ensure_idempotency_key(&method, request.headers_mut());
        }
        let retrier = self.retrier.clone();
        let runtime = self.runtime.clone();
        // The plan and the calls are made here, not in the future: what it captures it holds
        // once, where a value made inside it and lent to the loop would also keep the room of
        // what it was made from.
        let mut plan = retrier.plan(&request);
        plan.body_not_replayable = !replayable;
        let policy = plan.policy.as_deref().unwrap_or(retrier.policy());
        if let Some(facts) = hedges(policy, &plan) {
            let inner = self.inner.clone();
            return hedged(retrier, runtime, plan, facts, inner, request);
        }
        // The request (and a `ReplayBody`'s factory) is cloned only when an attempt is sent. A
        // discarded response's body is read to its end when small and quick, so the inner
        // client can send the next attempt on the same connection.
        // `http::Uri` takes `host:99999`, which a connector may read as its default port:
        // such a request is refused at its first attempt, never sent.
        let unservable = port_out_of_range(request.uri());
        let (head, body) = request.into_parts();
        // The plan keeps the method and the URI: each attempt's request brings them from there.
        plan.method = head.method;
        plan.address = Address::Uri(head.uri);
        let calls = Calls {
            inner: self.inner.clone(),
            ready: None,
            failed: false,
            unservable,
            version: head.version,
            headers: head.headers,
            extensions: head.extensions,
            body,
        };
        // The loop's future is the one boxed: it owns the plan, the calls, the retrier's `Arc`
        // and the runtime, with no future around it holding them too.
        Box::pin(run_planned(
            retrier,
            Own(runtime),
            plan,
            plan_head,
            calls,
            |result, _| Ok(with_outcome(result?, None)),
        ))
    }
}

/// One hedged operation through the inner service: each copy readies a clone of it of its
/// own (its readiness is part of the copy's time) and calls it with a clone of the request.
// The loop's own future is the one boxed: the copies' maker and the finish step are made
// here, before it (each nesting of futures moves the hedged loop's few kilobytes once more).
fn hedged<S, B, R, RT>(
    retrier: Arc<Retrier>,
    runtime: RT,
    plan: Plan,
    facts: backstop_core::Request,
    inner: S,
    request: http::Request<B>,
) -> RetryFuture<R>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Clone + Send + 'static,
    R: http_body::Body + Send + 'static,
    RT: Runtime + Clone + Send + Sync + 'static,
{
    let unservable = port_out_of_range(request.uri());
    let copy = move |copy: Attempt<()>| {
        if unservable {
            return Called::Failed {
                error: Some(ServiceError::new(UnsupportedUri)),
            };
        }
        let mut service = inner.clone();
        let mut request = request.clone();
        AttemptNumber::put(request.extensions_mut(), copy.number);
        // The usual clone is ready at once: asked here (no waker kept), it is called now and
        // the copy holds the service's future only. One that is not is asked again, with the
        // task's waker, when the copy is first polled.
        match service.poll_ready(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(Ok(())) => Called::Future {
                future: service.call(request),
            },
            Poll::Ready(Err(e)) => Called::Failed {
                error: Some(ServiceError::new(e)),
            },
            Poll::Pending => Called::Readying {
                waiting: Some(Box::new((service, request))),
            },
        }
    };
    let kind = |e: &ServiceError| error_kind(e);
    Box::pin(run_hedged(
        retrier,
        Own(runtime),
        plan,
        facts,
        copy,
        kind,
        |result, hedged| Ok(with_outcome(result?, Some(hedged))),
    ))
}

/// The response the caller gets, carrying the operation's `Outcome` (and a hedged one's
/// `HedgeOutcome`) in its extensions.
// Inlined: the response is then the future's output in place (one move fewer).
#[inline(always)]
fn with_outcome<R>(done: Retried<R>, hedged: Option<HedgeOutcome>) -> http::Response<R> {
    let mut response = done.response;
    response.extensions_mut().insert(done.outcome);
    if let Some(hedged) = hedged {
        response.extensions_mut().insert(hedged);
    }
    response
}

/// One operation's attempts through the inner service: its own clone of it, made ready before
/// each attempt, is called with a clone of the request.
struct Calls<S, B> {
    /// The operation's clone of the inner service. A readiness error leaves it failed (tower's
    /// contract: a service whose `poll_ready` failed is discarded): the next attempt readies a
    /// fresh clone.
    inner: S,
    /// How `ready` ended for the next attempt: ready, or the error it failed with (the
    /// attempt's: see `send`); `None` before `ready`.
    ready: Option<Result<(), ServiceError>>,
    /// `inner`'s readiness failed: it is replaced before it is readied again.
    failed: bool,
    /// The request's port is not a TCP port: each attempt is refused unsent.
    unservable: bool,
    /// The caller's request but its method and URI, which each attempt's request brings from
    /// the plan (the operation's future holds them once).
    version: http::Version,
    headers: http::HeaderMap,
    extensions: http::Extensions,
    body: B,
}

pin_project_lite::pin_project! {
    /// An attempt's (or a hedged copy's) future: the service's, once it was called; or the
    /// error the attempt fails with. A hedged copy whose clone of the service was not ready
    /// when it was made holds the clone and the request until it is (boxed: the usual clone
    /// is ready then, and this state is never entered); an attempt of the retry loop is sent
    /// on a service the loop readied. Written out, not an `async` block: the operation's
    /// future holds the service's future and nothing around it.
    #[project = CalledNow]
    enum Called<S, Req, F> {
        Future { #[pin] future: F },
        Readying { waiting: Option<Box<(S, Req)>> },
        Failed { error: Option<ServiceError> },
    }
}

impl<S, Req, R> Future for Called<S, Req, S::Future>
where
    S: Service<Req, Response = http::Response<R>>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Output = Result<http::Response<R>, ServiceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let called = match self.as_mut().project() {
                CalledNow::Future { future } => return future.poll(cx).map_err(ServiceError::new),
                // Polled once: the loop drops an attempt's future when it is ready.
                CalledNow::Failed { error } => {
                    return Poll::Ready(Err(error
                        .take()
                        .unwrap_or_else(|| ServiceError::new(UnsupportedUri))))
                }
                CalledNow::Readying { waiting } => {
                    // Always there: the state is left when it is taken.
                    let Some(mut ready) = waiting.take() else {
                        return Poll::Ready(Err(ServiceError::new(UnsupportedUri)));
                    };
                    match ready.0.poll_ready(cx) {
                        Poll::Pending => {
                            *waiting = Some(ready);
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => Called::Failed {
                            error: Some(ServiceError::new(e)),
                        },
                        Poll::Ready(Ok(())) => {
                            let (mut service, request) = *ready;
                            Called::Future {
                                future: service.call(request),
                            }
                        }
                    }
                }
            };
            self.set(called);
        }
    }
}

impl<S, B, R> Transport<()> for Calls<S, B>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Clone,
    R: http_body::Body,
{
    type Body = R;
    type Error = ServiceError;

    /// Calls the service `ready` made ready, or returns the error it failed with. The request
    /// (and a `ReplayBody`'s factory) is cloned only when an attempt is sent, and the service
    /// is called then (the loop sends nothing after an abort), inside the attempt's span: the
    /// attempt's future holds the service's future only, not the request as well.
    fn send(
        &mut self,
        attempt: Attempt<()>,
    ) -> impl Future<Output = Result<http::Response<R>, ServiceError>> {
        // The loop readies the transport before every send, so `ready` is always filled here.
        let readied = if self.unservable {
            Err(ServiceError::new(UnsupportedUri))
        } else {
            self.ready.take().unwrap_or(Ok(()))
        };
        // Never `Readying`: the loop readied the service.
        let called: Called<S, http::Request<B>, S::Future> = match readied {
            Ok(()) => {
                let (mut head, ()) = attempt.request.into_parts();
                head.version = self.version;
                head.headers = self.headers.clone();
                head.extensions = self.extensions.clone();
                AttemptNumber::put(&mut head.extensions, attempt.number);
                let request = http::Request::from_parts(head, self.body.clone());
                Called::Future {
                    future: self.inner.call(request),
                }
            }
            Err(error) => Called::Failed { error: Some(error) },
        };
        called
    }

    fn error_kind(&self, error: &ServiceError) -> backstop_core::ErrorKind {
        error_kind(error)
    }

    /// A discarded response's body is read to its end when small and quick, so the inner
    /// client can send the next attempt on the same connection.
    async fn drain(&mut self, body: R, limits: DrainLimits) {
        drain_body(body, limits).await;
    }

    /// Readies the operation's clone of the inner service for one attempt (a fresh clone
    /// after a readiness error).
    async fn ready(&mut self) {
        if core::mem::take(&mut self.failed) {
            self.inner = self.inner.clone();
        }
        let readied = poll_fn(|cx| self.inner.poll_ready(cx))
            .await
            .map_err(ServiceError::new);
        self.failed = readied.is_err();
        self.ready = Some(readied);
    }
}
