//! The tower layer's resumable bodies: a GET's body that resumes by itself.
//!
//! Rule: a resume is an attempt of the same operation (see [`crate::body`]), sent through
//! the operation's clone of the inner service, below the retry layer: never a new operation
//! of its own (a retry layer nested in another multiplies their attempts).

use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use backstop_core::{ErrorKind, Outcome};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use crate::body::{resumption_of, Carried, Refetch, Refetched, ResumableBody};
use crate::outcome::RetryError;
use crate::retrier::Retrier;
use crate::runtime::Runtime;
use crate::tower::error::{error_kind, ServiceError};
use crate::tower::{Retry, RetryLayer};
use crate::transport::AttemptNumber;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// [`RetryLayer`] whose GET bodies resume by themselves (made by
/// [`RetryLayer::resume_bodies`]).
#[derive(Clone, Debug)]
pub struct ResumingRetryLayer<RT>(pub(super) RetryLayer<RT>);

impl<S, RT: Clone> Layer<S> for ResumingRetryLayer<RT> {
    type Service = ResumingRetry<S, RT>;

    fn layer(&self, inner: S) -> ResumingRetry<S, RT> {
        ResumingRetry(self.0.layer(inner))
    }
}

/// [`Retry`] whose GET bodies resume by themselves: every response's body is a
/// [`ResumeBody`].
#[derive(Clone, Debug)]
pub struct ResumingRetry<S, RT>(Retry<S, RT>);

/// A response body under [`ResumingRetry`]: a `200`'s that resumes by itself (a GET with a
/// strong validator and a `Content-Length`), or the inner service's as it is. Its error is
/// the inner body's, or a [`BodyError`](crate::body::BodyError) when the operation could not
/// resume it.
pub struct ResumeBody(Pin<Box<dyn http_body::Body<Data = Bytes, Error = BoxError> + Send>>);

impl core::fmt::Debug for ResumeBody {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ResumeBody").finish_non_exhaustive()
    }
}

impl http_body::Body for ResumeBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

impl ResumeBody {
    fn of<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        use http_body_util::BodyExt;
        ResumeBody(Box::pin(body.map_err(Into::into)))
    }
}

/// The future of [`ResumingRetry::call`].
pub type ResumingFuture = Pin<
    Box<dyn Future<Output = Result<http::Response<ResumeBody>, RetryError<ServiceError>>> + Send>,
>;

impl<S, B, R, RT> Service<http::Request<B>> for ResumingRetry<S, RT>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + 'static,
    R: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    R::Error: Into<BoxError>,
    RT: Runtime + Clone + Send + Sync + 'static,
{
    type Response = http::Response<ResumeBody>;
    type Error = RetryError<ServiceError>;
    type Future = ResumingFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> ResumingFuture {
        let resumes = request.method() == http::Method::GET
            && !request.headers().contains_key(http::header::RANGE);
        if resumes
            && !request
                .headers()
                .contains_key(http::header::ACCEPT_ENCODING)
        {
            let identity = http::HeaderValue::from_static("identity");
            request
                .headers_mut()
                .insert(http::header::ACCEPT_ENCODING, identity);
        }
        let again = resumes.then(|| Again {
            inner: self.0.inner.clone(),
            head: head_of(&request),
            body: request.body().clone(),
        });
        let (retrier, runtime) = (self.0.retrier.clone(), self.0.runtime.clone());
        let call = self.0.call(request);
        Box::pin(async move {
            let response = call.await?;
            let Some(again) = again else {
                return Ok(response.map(ResumeBody::of));
            };
            Ok(resumable(response, again, &retrier, runtime))
        })
    }
}

/// What a resumable GET keeps to send itself again: its service and request.
struct Again<S, B> {
    inner: S,
    head: http::request::Parts,
    body: B,
}

/// The head of `request`, extensions included.
fn head_of<B>(request: &http::Request<B>) -> http::request::Parts {
    let mut head = http::Request::new(());
    *head.method_mut() = request.method().clone();
    *head.uri_mut() = request.uri().clone();
    *head.version_mut() = request.version();
    *head.headers_mut() = request.headers().clone();
    *head.extensions_mut() = request.extensions().clone();
    head.into_parts().0
}

/// `response`, the operation's last, over a body that resumes itself when it may.
fn resumable<S, B, R, RT>(
    response: http::Response<R>,
    again: Again<S, B>,
    retrier: &Arc<Retrier>,
    runtime: RT,
) -> http::Response<ResumeBody>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + 'static,
    R: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    R::Error: Into<BoxError>,
    RT: Runtime + Clone + Send + Sync + 'static,
{
    let status = response.status();
    let resumption = resumption_of(status, response.headers(), false);
    let outcome = response.extensions().get::<Outcome>().copied();
    let (Some(resumption), Some(outcome), 200) = (resumption, outcome, status.as_u16()) else {
        return response.map(ResumeBody::of);
    };
    let head = &again.head;
    let policy = head
        .extensions
        .get::<crate::Policy>()
        .copied()
        .unwrap_or(*retrier.policy());
    let plan = crate::request::Plan::from_head(
        head.method.clone(),
        head.uri.clone(),
        &head.headers,
        &head.extensions,
    );
    let now = runtime.now();
    let carried = Carried {
        retrier: Retrier::clone(retrier),
        policy,
        request: plan.facts(),
        uri: head.uri.clone(),
        started: backstop_core::Instant::from_duration(
            now.as_duration().saturating_sub(outcome.elapsed),
        ),
        attempts: outcome.attempts,
        abort: head.extensions.get::<crate::Abort>().cloned(),
        plan,
    };
    let (parts, body) = response.into_parts();
    let idle = policy.body_idle_timeout();
    let body = ResumableBody::new(body, (resumption, 200), again, runtime, carried, idle);
    http::Response::from_parts(parts, ResumeBody::of(body))
}

impl<S, B, R> Refetch for Again<S, B>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Clone + Send + 'static,
    R: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    R::Error: Into<BoxError>,
{
    type Body = R;
    type Error = ServiceError;

    fn refetch(
        &mut self,
        range: http::HeaderValue,
        if_range: http::HeaderValue,
        attempt: u32,
    ) -> Refetched<R, ServiceError> {
        let mut head = self.head.clone();
        head.headers.insert(http::header::RANGE, range);
        head.headers.insert(http::header::IF_RANGE, if_range);
        AttemptNumber::put(&mut head.extensions, attempt);
        let request = http::Request::from_parts(head, self.body.clone());
        let mut service = self.inner.clone();
        Box::pin(async move {
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(ServiceError::new)?;
            service.call(request).await.map_err(ServiceError::new)
        })
    }

    fn error_kind(&self, error: &ServiceError) -> ErrorKind {
        error_kind(error)
    }
}
