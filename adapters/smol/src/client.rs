//! The ready integration: hyper's HTTP/1 client over smol's TCP, via `smol-hyper`.
//!
//! One connection per attempt (hyper's connection-level API; no pool): a retried attempt never
//! reuses the connection of a failed one.

use core::fmt;
use std::io;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use smol_hyper::rt::FuturesIo;

use backstop::ErrorKind;
use backstop_driver::{io_error_kind, run, Retried, Retrier, RetryError, RetryRequest, Runtime};

use crate::runtime::SmolRuntime;

/// Why one attempt of the smol client failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpError {
    /// The URI has no host, or a scheme other than `http`.
    InvalidUri,
    /// Connecting failed: nothing was sent.
    Connect(io::Error),
    /// The HTTP exchange failed.
    Http(hyper::Error),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUri => f.write_str("the URI needs an http scheme and a host"),
            HttpError::Connect(e) => write!(f, "connect failed: {e}"),
            HttpError::Http(e) => write!(f, "HTTP exchange failed: {e}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::InvalidUri => None,
            HttpError::Connect(e) => Some(e),
            HttpError::Http(e) => Some(e),
        }
    }
}

/// The kind of a smol client error.
#[must_use]
pub fn error_kind(error: &HttpError) -> ErrorKind {
    match error {
        HttpError::InvalidUri => ErrorKind::InvalidRequest,
        HttpError::Connect(e) => match e.kind() {
            io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
            io::ErrorKind::NotFound => ErrorKind::Dns,
            // Whatever else went wrong, the connection was never made: nothing was sent.
            _ => ErrorKind::ConnectionRefused,
        },
        HttpError::Http(e) => {
            let io = backstop_driver::find_io_error(e).map(io_error_kind);
            match io.filter(|k| *k != ErrorKind::Other) {
                Some(kind) => kind,
                None if e.is_incomplete_message() => ErrorKind::UnexpectedEof,
                None if e.is_parse() || e.is_parse_status() => ErrorKind::Protocol,
                None => ErrorKind::Other,
            }
        }
    }
}

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<Incoming>, RetryError<HttpError>>;

/// A retrying HTTP client on smol: hyper's HTTP/1 client over `smol::net::TcpStream`.
#[derive(Clone, Debug)]
pub struct Client<RT = SmolRuntime> {
    retrier: Retrier,
    runtime: RT,
}

impl Client<SmolRuntime> {
    /// A client for plain `http://` URLs.
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        Client {
            retrier,
            runtime: SmolRuntime::new(),
        }
    }
}

impl<RT: Runtime> Client<RT> {
    /// The same client on another clock and sleep (for example `VirtualTime`).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> Client<R2> {
        Client {
            retrier: self.retrier,
            runtime,
        }
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &RT {
        &self.runtime
    }

    /// Runs one operation until the policy is satisfied or it is aborted (on any executor that
    /// can run smol's I/O, e.g. `smol::block_on`).
    ///
    /// # Errors
    ///
    /// [`RetryError`] when the operation ends without a response. A final error status (the
    /// last 503, a 404) is `Ok`.
    pub async fn run(&self, request: RetryRequest) -> Result {
        run(
            &self.retrier,
            &self.runtime,
            request,
            error_kind,
            |attempt| send(attempt.request),
        )
        .await
    }
}

/// One HTTP/1 exchange on a new connection, up to the response head. The connection task
/// keeps running (detached) while the body is read, and ends with it.
async fn send(
    mut request: http::Request<Bytes>,
) -> core::result::Result<http::Response<Incoming>, HttpError> {
    let uri = request.uri().clone();
    if uri.scheme_str().is_some_and(|s| s != "http") {
        return Err(HttpError::InvalidUri);
    }
    let authority = uri.authority().ok_or(HttpError::InvalidUri)?.clone();
    let port = authority.port_u16().unwrap_or(80);
    let stream = smol::net::TcpStream::connect((authority.host(), port))
        .await
        .map_err(HttpError::Connect)?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(FuturesIo::new(stream))
        .await
        .map_err(HttpError::Http)?;
    smol::spawn(connection).detach();
    // hyper's connection API wants the origin form and a Host header.
    if !request.headers().contains_key(http::header::HOST) {
        if let Ok(host) =
            http::HeaderValue::from_str(authority.as_str().rsplit('@').next().unwrap_or_default())
        {
            request.headers_mut().insert(http::header::HOST, host);
        }
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path.parse().map_err(|_| HttpError::InvalidUri)?;
    sender
        .send_request(request.map(Full::new))
        .await
        .map_err(HttpError::Http)
}
