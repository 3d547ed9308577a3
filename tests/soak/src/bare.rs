//! The bare clients the adapters are measured against: each makes a GET the way its adapter
//! makes an attempt, without backstop, so the difference is what backstop adds.
//!
//! - tokio: hyper-util's pooled legacy client over its plain `HttpConnector`;
//! - smol: a new TCP connection per request, hyper's HTTP/1 handshake over `smol-hyper`, the
//!   connection task detached (as `backstop::smol` does per attempt);
//! - ureq: an agent with the adapter's timeouts (see `backstop-tests`' overhead module).

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};

/// A boxed error, for the bare paths.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// hyper-util's pooled client, plain HTTP.
pub type TokioClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Empty<Bytes>,
>;

/// A new pooled hyper-util client.
#[must_use]
pub fn tokio_client() -> TokioClient {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
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

/// One GET over a new connection with hyper on smol, body read; its status.
///
/// # Errors
///
/// The connection's or hyper's.
pub async fn smol_get(uri: &http::Uri) -> Result<u16, Error> {
    let authority = uri.authority().ok_or("no authority")?.as_str();
    let stream = smol::net::TcpStream::connect(authority).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(smol_hyper::rt::FuturesIo::new(stream)).await?;
    smol::spawn(connection).detach();
    let request = http::Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(http::header::HOST, authority)
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
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
