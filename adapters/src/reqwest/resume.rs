//! The reqwest middleware's resumable bodies: a GET's body that resumes by itself.
//!
//! Rule: a resume is an attempt of the same operation (see [`crate::body`]), sent straight
//! through the reqwest client the middleware was given, not down the middleware chain again:
//! the chain ran when the operation began, and its future is gone with the call.

use core::pin::Pin;
use core::task::{Context, Poll};

use backstop_core::{ErrorKind, Instant, Outcome, Policy};
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use reqwest::{Body, Client, Method, Response, Url};
use sync_wrapper::SyncWrapper;

use crate::abort::Abort;
use crate::body::{resumption_of, BodyError, Carried, Refetch, Refetched, ResumableBody};
use crate::retrier::Retrier;
use crate::runtime::Runtime;

/// What a resumable operation keeps for its body, taken when the operation starts.
pub(crate) struct Resume<RT> {
    pub(crate) client: Client,
    pub(crate) retrier: Retrier,
    pub(crate) runtime: RT,
    pub(crate) policy: Policy,
    pub(crate) request: backstop_core::Request,
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: http::HeaderMap,
    pub(crate) abort: Option<Abort>,
    /// The operation's name, for its events.
    pub(crate) name: Option<crate::OperationName>,
}

impl<RT: Runtime + Clone + Send + 'static> Resume<RT> {
    /// `response` (with `head`'s status and headers), the operation's last, over a body that
    /// resumes itself when it may be resumed (a `200` with a strong validator and a declared
    /// length); else as it is.
    pub(crate) fn wrap(
        self,
        head: &http::response::Parts,
        response: Response,
        outcome: &Outcome,
    ) -> Response {
        let Some(resumption) = resumption_of(head.status, &head.headers, false) else {
            return response;
        };
        let url = response.url().clone();
        let http = http::Response::<Body>::from(response);
        let (parts, body) = http.into_parts();
        let now = self.runtime.now();
        let uri: http::Uri = self.url.as_str().parse().unwrap_or_default();
        let mut plan = crate::request::Plan::from_head(
            self.method.clone(),
            uri.clone(),
            &http::HeaderMap::new(),
            &http::Extensions::new(),
        );
        plan.name = self.name;
        let carried = Carried {
            plan,
            uri,
            retrier: self.retrier,
            policy: self.policy,
            request: self.request,
            started: Instant::from_duration(now.as_duration().saturating_sub(outcome.elapsed)),
            attempts: outcome.attempts,
            abort: self.abort,
        };
        let idle = self.policy.body_idle_timeout();
        let fetch = Fetch {
            client: self.client,
            method: self.method,
            url: self.url,
            headers: self.headers,
        };
        let body = ResumableBody::new(body, (resumption, 200), fetch, self.runtime, carried, idle);
        let hint = body.size_hint();
        let body = Body::wrap(Exclusive {
            hint,
            body: SyncWrapper::new(body),
        });
        rebuilt(parts, url, body)
    }
}

/// A reqwest response from `parts` and `body`, at `url`.
fn rebuilt(parts: http::response::Parts, url: Url, body: Body) -> Response {
    use reqwest::ResponseBuilderExt;

    let mut builder = http::Response::builder()
        .status(parts.status)
        .version(parts.version)
        .url(url);
    if let Some(headers) = builder.headers_mut() {
        *headers = parts.headers;
    }
    if let Some(extensions) = builder.extensions_mut() {
        extensions.extend(parts.extensions);
    }
    match builder.body(body) {
        Ok(response) => Response::from(response),
        // Cannot happen: the parts come from a response.
        Err(_) => Response::from(http::Response::new(Body::from(Bytes::new()))),
    }
}

/// The operation's request, sent again with a range.
struct Fetch {
    client: Client,
    method: Method,
    url: Url,
    headers: http::HeaderMap,
}

impl Refetch for Fetch {
    type Body = Body;
    type Error = reqwest::Error;

    fn refetch(
        &mut self,
        range: http::HeaderValue,
        if_range: http::HeaderValue,
        attempt: u32,
    ) -> Refetched<Body, reqwest::Error> {
        let mut headers = self.headers.clone();
        headers.insert(http::header::RANGE, range);
        headers.insert(http::header::IF_RANGE, if_range);
        // The attempt's number is the operation's (its events count it); reqwest's request
        // carries no extensions for the layers below.
        let _ = attempt;
        let send = self
            .client
            .request(self.method.clone(), self.url.clone())
            .headers(headers)
            .send();
        Box::pin(async move {
            let response = send.await.map_err(reqwest::Error::without_url)?;
            Ok(http::Response::<Body>::from(response))
        })
    }

    fn error_kind(&self, error: &reqwest::Error) -> ErrorKind {
        crate::reqwest::error::reqwest_error_kind(error)
    }
}

/// The resumable body, `Sync` for reqwest (only ever reached through `&mut`).
struct Exclusive<B> {
    hint: SizeHint,
    body: SyncWrapper<B>,
}

impl<B: HttpBody<Data = Bytes, Error = BodyError> + Unpin + Send> HttpBody for Exclusive<B> {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let body = this.body.get_mut();
        let polled = Pin::new(&mut *body).poll_frame(cx);
        this.hint = body.size_hint();
        polled
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}
