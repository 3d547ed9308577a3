//! The reqwest middleware and the tower layer against the scripted server: a client of each,
//! on virtual time (waits between attempts take no real time; attempts are real HTTP on
//! loopback), and the same uniform [`Answer`] and [`Failure`] as [`crate::adapters`].

use std::time::Duration;

use backstop::runtime::{Runtime, VirtualTime};
use backstop::tokio::TokioRuntime;
use backstop::{ReplayBody, Retrier};
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use tower::ServiceExt;

use crate::adapters::{failure_of as failure, Answer, Failure, Sent};
use crate::https::Trust;
use crate::request::TestRequest;

/// The clock of a scenario: tokio's, with the waits between attempts skipped.
pub type Clock = VirtualTime<TokioRuntime>;

/// Runs `f` on a fresh current-thread tokio runtime with time and I/O.
///
/// # Panics
///
/// If a tokio runtime cannot be built (a broken test machine).
pub fn block_on<T>(f: impl core::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(f)
}

/// What the plain-HTTP scenarios' reqwest and tower clients trust: nothing (they never meet a
/// certificate).
#[must_use]
pub fn default_tls() -> Trust {
    Trust::default()
}

/// A reqwest client (rustls on ring, trusting `tls` through reqwest's own certificates) with the retry middleware on `clock` (a
/// [`Clock`], or tokio's own [`TokioRuntime`]), and a connect timeout below the attempt
/// timeout, as `backstop::reqwest`'s docs ask: a connect that never completes is then reqwest's
/// own connect time-out, `ConnectTimeout` (never sent), not the loop's `Timeout`.
///
/// # Panics
///
/// If reqwest cannot build the client.
#[must_use]
pub fn reqwest_client<RT: Runtime + Clone + Send + Sync + 'static>(
    retrier: &Retrier,
    clock: &RT,
    tls: &Trust,
) -> reqwest_middleware::ClientWithMiddleware {
    let http = tls
        .reqwest(reqwest::Client::builder())
        .connect_timeout(connect_timeout(retrier))
        .build()
        .expect("a reqwest client");
    reqwest_middleware::ClientBuilder::new(http)
        .with(backstop::reqwest::RetryMiddleware::new(retrier.clone()).with_runtime(clock.clone()))
        .build()
}

/// The connect timeout the reqwest and tower clients get: half the policy's attempt timeout,
/// so that a connect that never completes ends before the attempt does.
#[must_use]
pub fn connect_timeout(retrier: &Retrier) -> Duration {
    retrier.policy().attempt_timeout() / 2
}

/// What a reqwest-middleware call gave: the answer (the body read) or the failure, and the
/// error's `Display` when there is one.
pub async fn reqwest_answer(
    result: reqwest_middleware::Result<reqwest::Response>,
) -> (Result<Answer, Failure>, Option<String>) {
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            // reqwest's text names the URL, not the cause: the cause is in the chain, where
            // `TlsFailure::find` names it as the other adapters' errors do.
            let text = match backstop::classify::TlsFailure::find(&e) {
                Some(tls) => format!("{e}: {tls}"),
                None => e.to_string(),
            };
            let failure = match backstop::reqwest::retry_error(&e) {
                Some(e) => failure(e),
                None => panic!("not an error of the retry loop: {e:?}"),
            };
            return (Err(failure), Some(text));
        }
    };
    let outcome = *response
        .extensions()
        .get::<backstop::Outcome>()
        .expect("the outcome travels with the response");
    let hedged = response
        .extensions()
        .get::<backstop::HedgeOutcome>()
        .copied();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .bytes()
        .await
        .map(|b| b.to_vec())
        .map_err(|e| e.to_string());
    let answer = Answer {
        status,
        headers,
        body,
        outcome,
        hedged,
    };
    (Ok(answer), None)
}

/// The hyper-util client behind the tower layer: http and https (rustls on ring with `tls`), on
/// a [`Clock`] unless told otherwise.
pub type TowerClient<RT = Clock, B = Full<Bytes>> = backstop::tower::Retry<
    hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        B,
    >,
    RT,
>;

/// A hyper-util client (http and https with `tls`) behind the retry layer on `clock` (a
/// [`Clock`], or tokio's own [`TokioRuntime`]), its connector with a connect timeout below the
/// attempt timeout, as `backstop::tower`'s docs ask (see [`reqwest_client`]).
#[must_use]
pub fn tower_client<RT, B>(retrier: &Retrier, clock: &RT, tls: &Trust) -> TowerClient<RT, B>
where
    RT: Runtime + Clone + Send + Sync + 'static,
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tower::ServiceBuilder::new()
        .layer(backstop::tower::RetryLayer::new(
            retrier.clone(),
            clock.clone(),
        ))
        .service(hyper_client(tls, retrier))
}

/// [`tower_client`] with `backstop::tower::ReadBodyLayer` under the retry layer, reading
/// each body inside its attempt at most `read`'s limit.
#[must_use]
pub fn tower_client_reading<RT, B>(
    retrier: &Retrier,
    clock: &RT,
    tls: &Trust,
    read: backstop::body::ReadBody,
) -> backstop::tower::Retry<backstop::tower::ReadBodyService<HyperClient<B>>, RT>
where
    RT: Runtime + Clone + Send + Sync + 'static,
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tower::ServiceBuilder::new()
        .layer(backstop::tower::RetryLayer::new(
            retrier.clone(),
            clock.clone(),
        ))
        .layer(backstop::tower::ReadBodyLayer::new(read))
        .service(hyper_client(tls, retrier))
}

/// [`smol_client`] with `backstop::tower::ReadBodyLayer` under the retry layer.
#[must_use]
pub fn smol_client_reading<RT, B>(
    retrier: &Retrier,
    clock: &RT,
    tls: &Trust,
    read: backstop::body::ReadBody,
) -> backstop::tower::Retry<backstop::tower::ReadBodyService<backstop::smol::HttpService<B>>, RT>
where
    RT: Runtime + Clone + Send + Sync + 'static,
{
    tower::ServiceBuilder::new()
        .layer(backstop::tower::RetryLayer::new(
            retrier.clone(),
            clock.clone(),
        ))
        .layer(backstop::tower::ReadBodyLayer::new(read))
        .service(backstop::smol::HttpService::with_tls(tls.rustls()))
}

/// The hyper-util client under the tower layer.
pub type HyperClient<B> = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    B,
>;

/// A hyper-util client (http and https with `tls`), its connector with a connect timeout
/// below the retrier's attempt timeout.
pub fn hyper_client<B>(tls: &Trust, retrier: &Retrier) -> HyperClient<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(Some(connect_timeout(retrier)));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.rustls())
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(https)
}

/// The tower layer over `backstop::smol::HttpService` (trusting `tls`), on `clock`.
pub type SmolClient<RT, B = Full<Bytes>> =
    backstop::tower::Retry<backstop::smol::HttpService<B>, RT>;

/// A new tower client on smol: `backstop::smol::HttpService` trusting `tls`, behind the retry
/// layer on `clock`.
#[must_use]
pub fn smol_client<RT, B>(retrier: &Retrier, clock: &RT, tls: &Trust) -> SmolClient<RT, B>
where
    RT: Runtime + Clone + Send + Sync + 'static,
{
    tower::ServiceBuilder::new()
        .layer(backstop::tower::RetryLayer::new(
            retrier.clone(),
            clock.clone(),
        ))
        .service(backstop::smol::HttpService::with_tls(tls.rustls()))
}

/// The body a scenario's request has on the tower layer: its bytes, or a [`ReplayBody`] over
/// its factory.
pub type TestBody = Either<Full<Bytes>, ReplayBody<Full<Bytes>>>;

/// `request` as a tower user sends it: its bytes in a `Full`, or its factory in a
/// [`ReplayBody`] (called by each attempt, and once when it is made).
#[must_use]
pub fn tower_body_of(request: &TestRequest) -> http::Request<TestBody> {
    match request.factory() {
        Some(factory) => {
            let factory = factory.clone();
            let body = ReplayBody::new(move || Full::new(factory()));
            request.to_http_with(Either::Right(body))
        }
        None => request.to_http().map(|b| Either::Left(Full::new(b))),
    }
}

/// One operation of `request` through `client` (a tower service behind the retry layer).
pub async fn tower_send<S, R>(client: S, request: &TestRequest) -> Sent
where
    S: tower::Service<
        http::Request<TestBody>,
        Response = http::Response<R>,
        Error = backstop::RetryError<backstop::tower::ServiceError>,
    >,
    R: http_body::Body,
    R::Error: std::fmt::Display,
{
    answer_of(client.oneshot(tower_body_of(request)).await).await
}

/// One operation of `request` through the reqwest `client`: the abort, name and policy of its
/// extensions go in the middleware's.
pub async fn reqwest_send(
    client: &reqwest_middleware::ClientWithMiddleware,
    request: &TestRequest,
) -> Sent {
    let mut http = request.to_http();
    let mut extensions = core::mem::take(http.extensions_mut());
    let request = reqwest::Request::try_from(http).expect("a reqwest request");
    let result = client
        .execute_with_extensions(request, &mut extensions)
        .await;
    reqwest_answer(result).await
}

/// Calls `client` once with `request`: the answer (the body read) or the failure, and the
/// error's `Display` when there is one.
pub async fn tower_answer<RT: Runtime + Clone + Send + Sync + 'static>(
    client: TowerClient<RT>,
    request: http::Request<Full<Bytes>>,
) -> (Result<Answer, Failure>, Option<String>) {
    answer_of(client.oneshot(request).await).await
}

/// The uniform answer of the tower layer's result.
async fn answer_of<R>(
    result: Result<http::Response<R>, backstop::RetryError<backstop::tower::ServiceError>>,
) -> Sent
where
    R: http_body::Body,
    R::Error: std::fmt::Display,
{
    let response = match result {
        Ok(r) => r,
        Err(e) => {
            // The service's error names the cause, as the other adapters' errors do.
            let text = match &e {
                backstop::RetryError::Failed { error, .. } => error.to_string(),
                other => other.to_string(),
            };
            return (Err(failure(&e)), Some(text));
        }
    };
    let outcome = *response
        .extensions()
        .get::<backstop::Outcome>()
        .expect("the outcome travels with the response");
    let hedged = response
        .extensions()
        .get::<backstop::HedgeOutcome>()
        .copied();
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .map_err(|e| e.to_string());
    let answer = Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
        outcome,
        hedged,
    };
    (Ok(answer), None)
}

/// A request with an empty body for the tower client.
///
/// # Panics
///
/// If `url` is not a valid URI (a broken test).
#[must_use]
pub fn tower_request(method: http::Method, url: &str) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::new()))
        .expect("a request")
}

/// A generous bound on one scenario's real time: a hang, not a slow machine, exceeds it.
pub const TERMINATES_WITHIN: Duration = Duration::from_secs(20);

/// The two ways a Rust HTTP stack takes backstop in one line: the reqwest middleware and the
/// tower layer (in front of hyper-util). A scenario that holds for both runs over [`Stack::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// `reqwest_middleware` with `backstop::reqwest::RetryMiddleware`.
    Reqwest,
    /// hyper-util behind `backstop::tower::RetryLayer`.
    Tower,
}

impl Stack {
    /// Both stacks.
    pub const ALL: [Stack; 2] = [Stack::Reqwest, Stack::Tower];

    /// Sends one request with `method` to `url` (empty body, `headers` added) through a new
    /// client of this stack under `retrier` on `clock`, trusting `tls`: the answer (the body
    /// read) or the failure, and the error's `Display` when there is one.
    ///
    /// # Panics
    ///
    /// If a header is invalid or the client cannot be built (a broken test).
    pub fn send(
        self,
        retrier: &Retrier,
        clock: &Clock,
        tls: &Trust,
        method: http::Method,
        url: &str,
        headers: &[(&'static str, &'static str)],
    ) -> (Result<Answer, Failure>, Option<String>) {
        block_on(async {
            match self {
                Stack::Reqwest => {
                    let client = reqwest_client(retrier, clock, tls);
                    let mut request = client.request(method, url);
                    for (name, value) in headers {
                        request = request.header(*name, *value);
                    }
                    reqwest_answer(request.send().await).await
                }
                Stack::Tower => {
                    let client = tower_client(retrier, clock, tls);
                    let mut request = tower_request(method, url);
                    for (name, value) in headers {
                        request
                            .headers_mut()
                            .insert(*name, http::HeaderValue::from_static(value));
                    }
                    tower_answer(client, request).await
                }
            }
        })
    }
}
