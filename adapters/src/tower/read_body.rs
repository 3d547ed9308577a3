//! The bounded read under the retry layer: each response's whole body, inside its attempt.
//!
//! Rule: a service's body type is its own, so the retry layer cannot hand back another; the
//! read is a layer of its own, placed under [`RetryLayer`](crate::tower::RetryLayer), whose
//! call (and with it the attempt: its timeout, the deadline, the abort) ends only when the
//! body is in memory. A body that breaks off or goes over the limit is the call's error, a
//! [`BodyError`](crate::body::BodyError), which the retry layer classifies by its kind.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use tower_layer::Layer;
use tower_service::Service;

use crate::body::ReadBody;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Reads each response's body into memory inside the call, at most the request's
/// [`ReadBody`] limit (in its extensions), else this layer's.
///
/// Under [`RetryLayer`](crate::tower::RetryLayer), every attempt's call reads its body: a body
/// that breaks off is retried like any failure after sending, under the operation's one count,
/// budget and deadline. The response's body is `http_body_util::Full<Bytes>`. A request's
/// [`ReadBody::OFF`] keeps this layer's limit: the layer's type says the body is in memory.
///
/// ```
/// use backstop::body::ReadBody;
/// use backstop::tower::{ReadBodyLayer, RetryLayer};
/// use backstop::tokio::TokioRuntime;
/// use backstop::Retrier;
///
/// let layers = tower::ServiceBuilder::new()
///     .layer(RetryLayer::new(Retrier::default(), TokioRuntime::new()))
///     .layer(ReadBodyLayer::new(ReadBody::up_to(64 * 1024)));
/// # drop(layers);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ReadBodyLayer {
    limit: u64,
}

impl ReadBodyLayer {
    /// Reads every body, at most `read`'s limit (a request's own limit wins); `ReadBody::OFF`
    /// reads without a limit.
    #[must_use]
    pub fn new(read: ReadBody) -> Self {
        ReadBodyLayer {
            limit: read.max_bytes().unwrap_or(u64::MAX),
        }
    }
}

impl<S> Layer<S> for ReadBodyLayer {
    type Service = ReadBodyService<S>;

    fn layer(&self, inner: S) -> ReadBodyService<S> {
        ReadBodyService {
            inner,
            limit: self.limit,
        }
    }
}

/// The service [`ReadBodyLayer`] makes: the inner service's response with its body in memory.
#[derive(Clone, Debug)]
pub struct ReadBodyService<S> {
    inner: S,
    limit: u64,
}

/// The future of [`ReadBodyService::call`].
pub type ReadBodyFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Full<Bytes>>, BoxError>> + Send>>;

impl<S, B, R> Service<http::Request<B>> for ReadBodyService<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    R: http_body::Body + Send + 'static,
    R::Data: Send,
    R::Error: Into<BoxError>,
{
    type Response = http::Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = ReadBodyFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> ReadBodyFuture {
        let limit = request
            .extensions()
            .get::<ReadBody>()
            .and_then(|read| read.max_bytes())
            .unwrap_or(self.limit);
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = call.await.map_err(Into::into)?;
            let read = crate::body::read_bounded(response, limit).await?;
            Ok(read.map(Full::new))
        })
    }
}
