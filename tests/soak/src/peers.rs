//! The peers the benches run beside backstop:
//!
//! - one attempt of a peer's over reqwest, as the per-request benches run the peers that
//!   retry by their own loop (backon, and a bare loop of three tries): the GET sent, its body
//!   read to its end, a 5xx being the error the peer retries;
//! - tower's own `Retry` over tower's own `Timeout` around hyper-util, with the retry policy
//!   a tower user writes ([`NeverA200`]): the tower probe's anchor, and a way of the load test;
//! - tower-resilience's retry layer over the same `Timeout`, retrying what [`NeverA200`]
//!   retries ([`tower_resilience_timeout`]).

use std::future::Ready;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;

use crate::bare::TokioClient;

/// How one attempt of a peer's ended when it did not end in a response the peer passes on.
#[derive(Debug)]
pub enum PeerError {
    /// A 5xx the peer retries.
    Status(u16),
    /// reqwest's own.
    Reqwest(reqwest::Error),
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Status(status) => write!(f, "status {status}"),
            PeerError::Reqwest(e) => write!(f, "reqwest: {e}"),
        }
    }
}

impl std::error::Error for PeerError {}

/// GETs `url` through `client` and reads the body: the status, or a 5xx as
/// [`PeerError::Status`].
pub async fn reqwest_attempt(client: &reqwest::Client, url: &str) -> Result<u16, PeerError> {
    let r = client.get(url).send().await.map_err(PeerError::Reqwest)?;
    let status = r.status().as_u16();
    r.bytes().await.map_err(PeerError::Reqwest)?;
    if status >= 500 {
        Err(PeerError::Status(status))
    } else {
        Ok(status)
    }
}

/// The request tower's `Retry` clones for each attempt.
type TowerRequest = http::Request<Empty<Bytes>>;

/// tower's retry policy as a user writes one: an error or a 5xx is retried, up to 3 times
/// more, at once; a 200 never is. Each attempt sends a clone of the request.
#[derive(Clone, Debug)]
pub struct NeverA200 {
    retries_left: u32,
}

impl Default for NeverA200 {
    fn default() -> Self {
        NeverA200 { retries_left: 3 }
    }
}

impl<B, E> tower::retry::Policy<TowerRequest, http::Response<B>, E> for NeverA200 {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        _: &mut TowerRequest,
        result: &mut Result<http::Response<B>, E>,
    ) -> Option<Self::Future> {
        let retryable = match result {
            Ok(response) => response.status().is_server_error(),
            Err(_) => true,
        };
        if retryable && self.retries_left > 0 {
            self.retries_left -= 1;
            Some(std::future::ready(()))
        } else {
            None
        }
    }

    fn clone_request(&mut self, request: &TowerRequest) -> Option<TowerRequest> {
        Some(request.clone())
    }
}

/// tower's `Retry` (with [`NeverA200`]) over tower's `Timeout` of each attempt, around
/// hyper-util's client: [`tower_retry_timeout`] makes one.
pub type TowerRetryTimeout = tower::retry::Retry<NeverA200, tower::timeout::Timeout<TokioClient>>;

/// [`TowerRetryTimeout`] around `client`: what a tower user stacks for retries with an
/// attempt timeout (call it as `svc.clone().oneshot(request)`).
#[must_use]
pub fn tower_retry_timeout(client: TokioClient, timeout: Duration) -> TowerRetryTimeout {
    tower::retry::Retry::new(
        NeverA200::default(),
        tower::timeout::Timeout::new(client, timeout),
    )
}

/// tower-resilience's `Retry` (up to 4 attempts, exponential backoff from 300 ms, an error or
/// a 5xx retried) over tower's `Timeout` of each attempt, around hyper-util's client:
/// [`tower_resilience_timeout`] makes one.
pub type TowerResilienceTimeout = tower_resilience::retry::Retry<
    tower::timeout::Timeout<TokioClient>,
    TowerRequest,
    http::Response<hyper::body::Incoming>,
    tower::BoxError,
>;

/// [`TowerResilienceTimeout`] around `client`: tower-resilience's retry layer as its README
/// stacks it, with the attempt timeout below it (call it as `svc.clone().oneshot(request)`).
#[must_use]
pub fn tower_resilience_timeout(client: TokioClient, timeout: Duration) -> TowerResilienceTimeout {
    use tower::Layer;
    tower_resilience::retry::RetryLayer::builder()
        .max_attempts(4)
        .exponential_backoff(Duration::from_millis(300))
        .retry_on_response(|response: &http::Response<hyper::body::Incoming>| {
            response.status().is_server_error()
        })
        .build()
        .layer(tower::timeout::Timeout::new(client, timeout))
}
