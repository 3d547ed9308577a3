//! The middleware: one reqwest request, run through the shared retry loop.
//!
//! Rule: a request is repeated only as it was first sent. Each attempt sends a clone of the
//! caller's request down the rest of the chain; a request whose body cannot be cloned (a
//! stream) is sent once and never re-sent with an empty body: the machine stops it with
//! `StopReason::BodyNotReplayable`.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::body::ReadBody;
use crate::hedge::{hedges, run_hedged};
use crate::idempotency::ensure_idempotency_key;
use crate::observe::redact::ShownUrl;
use crate::outcome::Retried;
use crate::request::Attempt;
use crate::request::{Address, Plan};
use crate::reqwest::resume::Resume;
use crate::retrier::Retrier;
use crate::run::run_planned;
use crate::runtime::Runtime;
use crate::tokio::TokioRuntime;
use crate::transport::Transport;
use crate::transport::{drain_body, AttemptNumber, DrainLimits};
use backstop_core::ErrorKind;
use http::Extensions;
use reqwest::{Body, Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::reqwest::error::error_kind;

/// Retries every request of a `reqwest_middleware` client under a [`Retrier`]'s policy.
///
/// ```
/// use backstop::reqwest::{Retrier, RetryMiddleware};
/// # let _ = rustls::crypto::ring::default_provider().install_default();
///
/// let policy = backstop::Policy::builder().max_attempts(3).build()?;
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(Retrier::new(policy)))
///     .build();
/// # drop(client);
/// # Ok::<(), backstop::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RetryMiddleware<RT = TokioRuntime> {
    retrier: Retrier,
    runtime: RT,
    generate_keys: bool,
    /// The client a resumable body sends its resumes through, when bodies resume.
    resume: Option<reqwest::Client>,
}

impl RetryMiddleware {
    /// Retries under `retrier`, on tokio's clock (paused time counts).
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        RetryMiddleware {
            retrier,
            runtime: TokioRuntime::new(),
            generate_keys: false,
            resume: None,
        }
    }
}

impl<RT> RetryMiddleware<RT> {
    /// The same middleware on another clock and sleep (for example `VirtualTime`).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> RetryMiddleware<R2> {
        RetryMiddleware {
            retrier: self.retrier,
            runtime,
            generate_keys: self.generate_keys,
            resume: self.resume,
        }
    }

    /// Gives every POST and PATCH that has no `Idempotency-Key` a new one (a UUID v4), the
    /// same on each of its attempts, which makes it retryable under the default policy. Only
    /// for a client whose servers deduplicate requests by that key.
    #[must_use]
    pub fn generate_idempotency_key(mut self) -> Self {
        self.generate_keys = true;
        self
    }

    /// Makes the body of every GET's response resume by itself after a failure (a reset, an
    /// end short of its `Content-Length`, a stall past the policy's
    /// [`body_idle_timeout`](crate::Policy::body_idle_timeout)), as RFC 9110 allows: each
    /// resume is an attempt of the same operation (the same count, budget, deadline, gates
    /// and abort), sent through `client` (give it the client the middleware wraps: a resume
    /// goes straight to reqwest, not down the middleware chain again) with `Range: bytes=N-`
    /// after the N bytes the caller has read and `If-Range` with the first response's strong
    /// validator. It goes on only with a `206` exactly at N; a changed representation, a
    /// wrong range or no attempt left ends the body with a
    /// [`BodyError`](crate::body::BodyError) in reqwest's body error.
    ///
    /// Only a `200` with a strong `ETag` (or a `Last-Modified` RFC 9110 takes as strong), a
    /// `Content-Length` and no `Accept-Ranges: none` resumes; other bodies are as reqwest
    /// gives them. A GET without an `Accept-Encoding` of its own is sent with
    /// `Accept-Encoding: identity`, so that the bytes counted are the bytes sent (a body
    /// reqwest decodes could not be resumed at the right offset). A GET with a `Range` of its
    /// own, or under [`ReadBody`](crate::body::ReadBody), does not resume.
    ///
    /// ```
    /// use backstop::reqwest::{Retrier, RetryMiddleware};
    /// # let _ = rustls::crypto::ring::default_provider().install_default();
    ///
    /// let http = reqwest::Client::new();
    /// let client = reqwest_middleware::ClientBuilder::new(http.clone())
    ///     .with(RetryMiddleware::new(Retrier::default()).resume_bodies(http))
    ///     .build();
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn resume_bodies(mut self, client: reqwest::Client) -> Self {
        self.resume = Some(client);
        self
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &RT {
        &self.runtime
    }
}

// Written out rather than with `async_trait`, whose future would hold the request it was
// called with for its whole life, beside the copies the attempts send: the future
// reqwest-middleware boxes per request captures only what the loop needs.
impl<RT: Runtime + Clone + Send + Sync + 'static> Middleware for RetryMiddleware<RT> {
    fn handle<'s, 'e, 'n, 'f>(
        &'s self,
        mut request: Request,
        extensions: &'e mut Extensions,
        next: Next<'n>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'f>>
    where
        's: 'f,
        'e: 'f,
        'n: 'f,
        Self: 'f,
    {
        if self.generate_keys {
            let method = request.method().clone();
            ensure_idempotency_key(&method, request.headers_mut());
        }
        let resumes = self.resume.is_some()
            && request.method() == reqwest::Method::GET
            && !request.headers().contains_key(http::header::RANGE)
            && extensions
                .get::<ReadBody>()
                .unwrap_or(&self.retrier.read_body)
                .max_bytes()
                .is_none();
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
        // A stream cannot be copied: sent once, never re-sent (`try_clone` would say `None`).
        let replayable = request.body().is_none_or(|body| body.as_bytes().is_some());
        let mut sends = Sends {
            request: Some(request),
            sent: false,
            extensions,
            own: Extensions::new(),
            next,
            read: None,
        };
        // The plan is made here, not in the future: what the future captures it holds once.
        let mut plan = plan(&sends, &self.retrier);
        plan.body_not_replayable = !replayable;
        // The request's own `ReadBody`, in the chain's extensions, wins over the retrier's.
        let read = sends.extensions.get::<ReadBody>().copied();
        sends.read = read.unwrap_or(self.retrier.read_body).max_bytes();
        let policy = plan.policy.as_deref().unwrap_or(self.retrier.policy());
        // What a resumable body keeps of the operation (only with `resume_bodies`).
        let resume = match (resumes, &self.resume) {
            (true, Some(client)) => resume_of(&self.retrier, &self.runtime, &plan, &sends, client),
            _ => None,
        };
        if let Some(facts) = hedges(policy, &plan) {
            return hedged(&self.retrier, &self.runtime, (plan, facts), sends, resume);
        }
        if resume.is_some() {
            return Box::pin(run_planned(
                &self.retrier,
                &self.runtime,
                plan,
                |_: &Plan| http::Request::new(()),
                sends,
                move |result, sends| finish(resumed(result, resume), sends),
            ));
        }
        // The loop's future is the one boxed: it owns the plan and the sends, with no future
        // around it holding them too.
        Box::pin(run_planned(
            &self.retrier,
            &self.runtime,
            plan,
            |_: &Plan| http::Request::new(()),
            sends,
            finish,
        ))
    }
}

/// The facts the loop needs about `request`: method, URL (kept as it is for the events, spans
/// and metrics, and converted to an `http::Uri` for the response hook: each only when the
/// `retrier` has them), its `Idempotency-Key`, its origin when the retrier has origin gates,
/// and an [`Abort`](crate::Abort), an [`OperationName`](crate::OperationName) and a
/// [`Policy`](crate::Policy) from the middleware chain's extensions. The body stays in the
/// request.
fn plan(sends: &Sends<'_>, retrier: &Retrier) -> Plan {
    let extensions = &*sends.extensions;
    // Cannot fail: no attempt has been sent yet.
    let Some(request) = sends.request.as_ref() else {
        return Plan::from_head(
            http::Method::GET,
            http::Uri::default(),
            &http::HeaderMap::new(),
            extensions,
        );
    };
    let url = request.url();
    let mut plan = Plan::from_head(
        request.method().clone(),
        http::Uri::default(),
        request.headers(),
        extensions,
    );
    if retrier.classify_response.is_some() {
        // A URL reqwest accepts but `http` does not reaches the hook as `/`.
        let uri = url.as_str().parse::<http::Uri>().unwrap_or_default();
        plan.address = Address::Uri(uri);
    } else if retrier.needs_uri() {
        plan.address = Address::Url(ShownUrl::of(url));
    }
    if let Some(gates) = retrier.gates.as_deref() {
        plan.origin = gates.find(Some(url.scheme()), Some(url.authority()), || {
            (url.host_str(), url.port())
        });
    }
    plan
}

/// What a resumable GET's body keeps of its operation (`None` for a request that cannot be
/// copied, which never resumes).
fn resume_of<RT: Runtime + Clone>(
    retrier: &Retrier,
    runtime: &RT,
    plan: &Plan,
    sends: &Sends<'_>,
    client: &reqwest::Client,
) -> Option<Resume<RT>> {
    let request = sends.request.as_ref()?;
    Some(Resume {
        client: client.clone(),
        retrier: retrier.clone(),
        runtime: runtime.clone(),
        policy: plan.policy.as_deref().copied().unwrap_or(*retrier.policy()),
        request: plan.facts(),
        method: request.method().clone(),
        url: request.url().clone(),
        headers: request.headers().clone(),
        abort: plan.abort.clone(),
        name: plan.name.clone(),
    })
}

/// The operation's result, its `200`'s body resumable when it may be.
fn resumed<RT: Runtime + Clone + Send + 'static>(
    result: Result<Retried<Response>, crate::reqwest::Error>,
    resume: Option<Resume<RT>>,
) -> Result<Retried<Response>, crate::reqwest::Error> {
    let (Ok(done), Some(resume)) = (&result, resume) else {
        return result;
    };
    if done.response.status() != http::StatusCode::OK {
        return result;
    }
    let Ok(done) = result else { return result };
    let outcome = done.outcome;
    let (head, response) = done.response.into_parts();
    let response = resume.wrap(&head, response, &outcome);
    Ok(Retried {
        response: http::Response::from_parts(head, response),
        outcome,
    })
}

/// reqwest's error names the request's URL, userinfo and query included, in its text and its
/// `Debug`, and it is the source of the operation's error: cut it to scheme, host, port and
/// path, as the events show it. Only on an error, so a success costs nothing.
fn redact_url(mut error: reqwest_middleware::Error) -> reqwest_middleware::Error {
    if let reqwest_middleware::Error::Reqwest(e) = &mut error {
        if let Some(url) = e.url_mut() {
            url.set_query(None);
            url.set_fragment(None);
            // Fails only for a URL that cannot have userinfo (then it has none).
            let _ = url.set_username("");
            let _ = url.set_password(None);
        }
    }
    error
}

/// The response head the loop decides on, carrying the response itself. The headers move to
/// the head (the response keeps an empty map) and back in [`returned`]: the loop reads them, and
/// only the returned response needs them again.
fn head(mut response: Response) -> http::Response<Response> {
    let status = response.status();
    let headers = core::mem::take(response.headers_mut());
    let mut head = http::Response::new(response);
    *head.status_mut() = status;
    *head.headers_mut() = headers;
    head
}

/// The caller's result: the last response with its [`Outcome`](crate::Outcome) (and the
/// extensions the chain left with it: its attempt was the last), or the loop's error inside
/// reqwest-middleware's.
fn finish(
    result: Result<Retried<Response>, crate::reqwest::Error>,
    sends: Sends<'_>,
) -> reqwest_middleware::Result<Response> {
    if result.is_ok() {
        *sends.extensions = sends.own;
    }
    returned(result, None)
}

/// The caller's response with its [`Outcome`](crate::Outcome) (and a hedged operation's
/// [`HedgeOutcome`](crate::HedgeOutcome)) in its extensions, or the loop's error inside
/// reqwest-middleware's.
fn returned(
    result: Result<Retried<Response>, crate::reqwest::Error>,
    hedged: Option<backstop_core::HedgeOutcome>,
) -> reqwest_middleware::Result<Response> {
    match result {
        Ok(done) => {
            let (head, mut response) = done.response.into_parts();
            *response.headers_mut() = head.headers;
            response.extensions_mut().insert(done.outcome);
            if let Some(hedged) = hedged {
                response.extensions_mut().insert(hedged);
            }
            Ok(response)
        }
        Err(e) => Err(reqwest_middleware::Error::Middleware(e.into())),
    }
}

/// One hedged operation down the rest of the chain: each copy sends a copy of the request
/// with a copy of the caller's extensions; the winner's extensions become the caller's. The
/// hedged loop's own future is the one boxed (each nesting of futures moves its few
/// kilobytes once more).
fn hedged<'f, RT: Runtime + Clone + Send + Sync + 'static>(
    retrier: &'f Retrier,
    runtime: &'f RT,
    (plan, facts): (crate::request::Plan, backstop_core::Request),
    mut sends: Sends<'f>,
    resume: Option<Resume<RT>>,
) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'f>> {
    let Some(request) = sends.request.take() else {
        return Box::pin(core::future::ready(Err(
            reqwest_middleware::Error::middleware(BodyNotReplayableError),
        )));
    };
    let next = sends.next.clone();
    let extensions = sends.extensions.clone();
    let read = sends.read;
    let copies = move |attempt: Attempt<()>| {
        // Boxed: a copy's future holds its request until its first poll (the call down the
        // chain borrows the copy's extensions, which the future owns), and a few hundred
        // bytes there would take the hedged operation's future past glibc's per-thread cache.
        let copy = copy(&request).map(Box::new);
        let next = next.clone();
        let mut own = extensions.clone();
        AttemptNumber::put(&mut own, attempt.number);
        async move {
            let copy =
                copy.ok_or_else(|| reqwest_middleware::Error::middleware(BodyNotReplayableError))?;
            let mut response = next.run(*copy, &mut own).await.map_err(redact_url)?;
            if let Some(limit) = read {
                response = read_body(response, limit).await?;
            }
            Ok(head(response).map(|response| Copied { response, own }))
        }
    };
    // The caller's extensions are all `finish` needs of the sends (not their request's room).
    let callers = sends.extensions;
    Box::pin(run_hedged(
        retrier,
        runtime,
        plan,
        facts,
        copies,
        error_kind,
        move |result, hedged| {
            let result = result.map(|done| Retried {
                response: done.response.map(|copied| {
                    *callers = copied.own;
                    copied.response
                }),
                outcome: done.outcome,
            });
            returned(resumed(result, resume), Some(hedged))
        },
    ))
}

/// An attempt's call down the rest of the chain (reqwest-middleware's boxed future), then,
/// under [`ReadBody`](crate::body::ReadBody), the read of its body; or none for a request
/// that could not be copied. Written out, not an `async` block: the operation's future holds
/// the call and nothing around it.
struct Call<F> {
    call: Option<F>,
    /// The body's limit, when the attempt reads it.
    read: Option<u64>,
    /// The read of the body, once the head arrived (boxed: only an attempt that reads its
    /// body has one).
    reading: Option<Reading>,
}

/// The read of an attempt's body.
type Reading = Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send>>;

impl<F> Future for Call<F>
where
    F: Future<Output = reqwest_middleware::Result<Response>> + Unpin,
{
    type Output = Result<http::Response<Response>, reqwest_middleware::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(reading) = self.reading.as_mut() {
            return reading.as_mut().poll(cx).map(|read| Ok(head(read?)));
        }
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(Err(reqwest_middleware::Error::middleware(
                BodyNotReplayableError,
            )));
        };
        let response = match Pin::new(call).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result.map_err(redact_url)?,
        };
        let Some(limit) = self.read else {
            return Poll::Ready(Ok(head(response)));
        };
        self.call = None;
        let mut reading: Reading = Box::pin(read_body(response, limit));
        let polled = reading.as_mut().poll(cx);
        self.reading = Some(reading);
        polled.map(|read| Ok(head(read?)))
    }
}

/// `response` over its body read to its end, at most `limit` bytes (reqwest's URL, version
/// and extensions kept), or why it could not be read: a [`BodyError`](crate::body::BodyError)
/// inside reqwest-middleware's error.
async fn read_body(response: Response, limit: u64) -> reqwest_middleware::Result<Response> {
    use reqwest::ResponseBuilderExt;

    let url = response.url().clone();
    let read = crate::body::read_bounded(http::Response::<Body>::from(response), limit)
        .await
        .map_err(reqwest_middleware::Error::middleware)?;
    let (mut parts, bytes) = read.into_parts();
    // reqwest keeps the URL in an extension of its own, which only its builder sets: that one
    // extension moves into the response's (status, version, headers and extensions kept as
    // they are, not rebuilt).
    let mut with_url = http::Response::builder().url(url);
    if let Some(url) = with_url.extensions_mut() {
        parts.extensions.extend(std::mem::take(url));
    }
    Ok(Response::from(http::Response::from_parts(parts, bytes)))
}

/// A hedged copy's response, with the extensions the copy went down the chain with (the
/// winner's become the caller's): carried beside it, not in its extensions (a map made and
/// emptied again for every copy).
struct Copied {
    response: Response,
    own: Extensions,
}

/// The error of an attempt that had no request to send (cannot happen: see `handle`).
#[derive(Debug)]
struct BodyNotReplayableError;

impl fmt::Display for BodyNotReplayableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request body cannot be replayed: sent once, not retried")
    }
}

impl std::error::Error for BodyNotReplayableError {}

/// A copy of `request` to send again, or `None` for a body that cannot be copied (a stream).
///
/// Without a body it is made field by field: reqwest's `try_clone` puts the timeout in the new
/// request's extensions, then replaces them with a clone of the original's, a map made and
/// dropped per copy. Those extensions are reqwest's own (private): the timeout is all it keeps
/// there. With a body, `try_clone` shares its bytes.
fn copy(request: &Request) -> Option<Request> {
    if request.body().is_some() {
        return request.try_clone();
    }
    let mut copy = Request::new(request.method().clone(), request.url().clone());
    *copy.headers_mut() = request.headers().clone();
    *copy.version_mut() = request.version();
    if let Some(timeout) = request.timeout() {
        *copy.timeout_mut() = Some(*timeout);
    }
    Some(copy)
}

/// One operation's attempts down the rest of the middleware chain.
struct Sends<'a> {
    /// The caller's request until the first attempt sends it; from then on, the copy each
    /// retry sends a copy of (none for a body that cannot be copied).
    request: Option<Request>,
    /// The first attempt has taken the caller's request.
    sent: bool,
    extensions: &'a mut Extensions,
    /// The extensions of the attempt in flight, or of the last one: a copy of the chain's,
    /// made for each attempt, which the rest of the chain fills. Kept here, not in the
    /// attempt's future, so that the call down the chain starts when the attempt is made and
    /// its future holds only reqwest-middleware's (the request is moved into it at once).
    own: Extensions,
    next: Next<'a>,
    /// The limit of each response's body, when the attempt reads it.
    read: Option<u64>,
}

impl Sends<'_> {
    /// The request attempt `number` sends: the caller's for the first, keeping a copy for the
    /// retries (only ever of a replayable one: the machine makes no second attempt of the
    /// other); a copy of that copy for each retry.
    fn next_request(&mut self) -> Option<Request> {
        if self.sent {
            return self.request.as_ref().and_then(copy);
        }
        self.sent = true;
        let first = self.request.take()?;
        self.request = copy(&first);
        Some(first)
    }
}

// Each attempt sends the caller's reqwest request (or its copy): the loop's is empty.
impl Transport<()> for Sends<'_> {
    type Body = Response;
    type Error = reqwest_middleware::Error;

    fn send(
        &mut self,
        attempt: Attempt<()>,
    ) -> impl Future<Output = Result<http::Response<Response>, reqwest_middleware::Error>> {
        let request = self.next_request();
        let read = self.read;
        let Sends {
            extensions,
            own,
            next,
            ..
        } = &mut *self;
        *own = extensions.clone();
        AttemptNumber::put(own, attempt.number);
        Call {
            call: request.map(|request| next.clone().run(request, own)),
            read,
            reading: None,
        }
    }

    fn error_kind(&self, error: &reqwest_middleware::Error) -> ErrorKind {
        error_kind(error)
    }

    /// A discarded response's body is read to its end when small and quick (a reqwest body is
    /// an `http_body::Body`), so reqwest's pool hands the same connection to the next attempt.
    async fn drain(&mut self, response: Response, limits: DrainLimits) {
        drain_body(Body::from(response), limits).await;
    }
}
