//! backstop's async front doors as the soak, the load test and the benches build them: the
//! tower layer (`backstop::tower::RetryLayer`) over the bare clients of [`crate::bare`].
//!
//! - [`tower_tokio`]: the layer on [`TokioRuntime`] over hyper-util's pooled client, its
//!   `HttpConnector` with a connect timeout of half the attempt timeout (as
//!   `backstop::tower`'s docs ask: a connect that never completes is then `ConnectTimeout`,
//!   never sent, not the loop's `Timeout`);
//! - [`tower_smol`]: the layer on [`SmolRuntime`] over `backstop::smol::HttpService`.
//!
//! Both take the same request, an `http::Request<Empty<Bytes>>` ([`get`]), and are called as
//! their users call them: `client.clone().oneshot(request)`.

use std::time::Duration;

use backstop::smol::SmolRuntime;
use backstop::tokio::TokioRuntime;
use backstop::tower::RetryLayer;
use backstop::Retrier;
use bytes::Bytes;
use http_body_util::Empty;
use tower::Layer;

use crate::bare;

/// The tower layer over hyper-util's pooled client, on tokio.
pub type TowerTokio = backstop::tower::Retry<bare::TokioClient, TokioRuntime>;

/// The tower layer over `backstop::smol::HttpService`, on smol.
pub type TowerSmol = backstop::tower::Retry<bare::SmolService, SmolRuntime>;

/// The connect timeout the hyper-util client behind the layer gets: half the policy's attempt
/// timeout, so that a connect that never completes ends before the attempt does.
#[must_use]
pub fn connect_timeout(retrier: &Retrier) -> Duration {
    retrier.policy().attempt_timeout() / 2
}

/// hyper-util's pooled client (plain HTTP, a connect timeout below the attempt timeout) behind
/// the retry layer on tokio's clock and timers. Call it inside a tokio runtime with time and
/// I/O enabled.
#[must_use]
pub fn tower_tokio(retrier: Retrier) -> TowerTokio {
    let http = bare::tokio_client_with_connect_timeout(connect_timeout(&retrier));
    RetryLayer::new(retrier, TokioRuntime::new()).layer(http)
}

/// `backstop::smol::HttpService` (plain HTTP) behind the retry layer on smol's timers.
#[must_use]
pub fn tower_smol(retrier: Retrier) -> TowerSmol {
    RetryLayer::new(retrier, SmolRuntime::new()).layer(bare::smol_service())
}

/// A GET of `uri` with an empty body, the request both layers take.
///
/// # Panics
///
/// Never: the URI is already parsed.
#[must_use]
pub fn get(uri: &http::Uri) -> http::Request<Empty<Bytes>> {
    http::Request::get(uri.clone())
        .body(Empty::new())
        .expect("a GET of a parsed URI")
}
