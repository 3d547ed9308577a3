//! The bare clients the adapters are measured against: each makes a GET the way its adapter
//! makes an attempt, without backstop, so the difference is what backstop adds.
//!
//! - tokio: hyper-util's pooled legacy client over its plain `HttpConnector` (the client
//!   [`crate::clients::tower_tokio`] puts behind the tower layer);
//! - smol: `backstop::smol::HttpService` called directly: the pooled HTTP/1 service over
//!   smol-hyper that [`crate::clients::tower_smol`] puts behind the tower layer (it does not
//!   retry; the layer does);
//! - ureq: an agent with the adapter's timeouts (see `backstop-tests`' overhead module).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use tower::ServiceExt;

/// A boxed error, for the bare paths.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// hyper-util's pooled client, plain HTTP.
pub type TokioClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Empty<Bytes>,
>;

/// A new pooled hyper-util client, hyper-util's defaults.
#[must_use]
pub fn tokio_client() -> TokioClient {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
}

/// A new pooled hyper-util client whose connector gives up a connect after `connect_timeout`,
/// hyper-util's defaults otherwise.
#[must_use]
pub fn tokio_client_with_connect_timeout(connect_timeout: Duration) -> TokioClient {
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.set_connect_timeout(Some(connect_timeout));
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(tcp)
}

/// One GET through hyper-util, body read; its status.
///
/// # Errors
///
/// hyper-util's.
pub async fn tokio_get(client: &TokioClient, uri: &http::Uri) -> Result<u16, Error> {
    let response = client.get(uri.clone()).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}

/// `backstop::smol::HttpService` for the bare smol GETs (and behind the layer).
pub type SmolService = backstop::smol::HttpService<Empty<Bytes>>;

/// A new `backstop::smol::HttpService`, its pool empty.
#[must_use]
pub fn smol_service() -> SmolService {
    backstop::smol::HttpService::new()
}

/// One GET through `service` (a clone of it, made ready), body read; its status.
///
/// # Errors
///
/// The service's, or its body's.
pub async fn smol_get(service: &SmolService, uri: &http::Uri) -> Result<u16, Error> {
    let request = http::Request::get(uri.clone()).body(Empty::<Bytes>::new())?;
    let response = service.clone().oneshot(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}

/// A ureq agent configured as `backstop::ureq` configures an attempt with the default policy's
/// attempt timeout: that timeout on connect, send and receive, statuses as responses.
#[must_use]
pub fn ureq_agent() -> ureq::Agent {
    let t = Some(backstop::Policy::default().attempt_timeout());
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(t)
        .timeout_send_request(t)
        .timeout_send_body(t)
        .timeout_recv_response(t)
        .build()
        .into()
}

/// One GET through the agent as the adapter calls it, body read; its status.
///
/// # Errors
///
/// ureq's.
pub fn ureq_get(agent: &ureq::Agent, uri: &http::Uri) -> Result<u16, Error> {
    let mut response = agent.run(http::Request::get(uri.clone()).body(())?)?;
    let status = response.status().as_u16();
    response.body_mut().read_to_vec()?;
    Ok(status)
}

/// The bare retry loop for a server that answers 503 (with `Retry-After: 0`) before its 200:
/// GET again at once while the status is 503, at most `attempts` times.
///
/// # Errors
///
/// The client's.
pub fn until_not_503(
    attempts: u32,
    mut get: impl FnMut() -> Result<u16, Error>,
) -> Result<u16, Error> {
    let mut status = get()?;
    for _ in 1..attempts {
        if status != 503 {
            break;
        }
        status = get()?;
    }
    Ok(status)
}
