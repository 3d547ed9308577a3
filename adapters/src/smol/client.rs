//! The ready integration: hyper's HTTP/1 client over smol's TCP, via `smol-hyper`, and over
//! futures-rustls for `https://` (with the `rustls` feature).
//!
//! hyper's connection-level API has no pool: an operation keeps its own connection for its
//! next attempt ([`Kept`]), which takes it when the previous exchange ended cleanly (the
//! discarded body read to its end by the driver); a connection that failed, or whose body was
//! dropped, is closed by hyper and never reused. Operations share no connection.

#[cfg(feature = "rustls")]
use std::sync::Arc;

use bytes::Bytes;
use futures_lite::{AsyncRead, AsyncWrite};
use http_body_util::Full;
use hyper::body::Incoming;
use smol_hyper::rt::FuturesIo;

use crate::{
    drain_body, run, Attempt, DrainLimits, ErrorKind, Retried, Retrier, RetryError, Runtime,
    Transport,
};
use hyper::client::conn::http1::SendRequest;

use crate::smol::connect::{self, Target};
use crate::smol::error::{error_kind, HttpError};
use crate::smol::runtime::SmolRuntime;

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<Incoming>, RetryError<HttpError>>;

/// A retrying HTTP client on smol: hyper's HTTP/1 client over `smol::net::TcpStream`, and
/// rustls for `https://`.
#[derive(Clone, Debug)]
pub struct Client<RT = SmolRuntime> {
    retrier: Retrier,
    runtime: RT,
    #[cfg(feature = "rustls")]
    tls: Arc<crate::rustls::ClientConfig>,
}

impl Client<SmolRuntime> {
    /// A client for `http://` URLs, and with the `rustls` feature for `https://` ones too,
    /// trusting Mozilla's roots (the `webpki-roots` crate, which futures-rustls does not
    /// bundle; on ring); see [`Client::with_tls`] for a private CA.
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        Client {
            retrier,
            runtime: SmolRuntime::new(),
            #[cfg(feature = "rustls")]
            tls: Arc::new(mozilla_roots()),
        }
    }

    /// A client for `http://` and `https://` with a rustls `ClientConfig` of the caller's,
    /// built with rustls' own API: the module docs trust a private CA with it.
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn with_tls(retrier: Retrier, tls: crate::rustls::ClientConfig) -> Self {
        Client {
            retrier,
            runtime: SmolRuntime::new(),
            tls: Arc::new(tls),
        }
    }
}

/// rustls on ring, its default protocol versions, trusting Mozilla's roots.
#[cfg(feature = "rustls")]
fn mozilla_roots() -> crate::rustls::ClientConfig {
    let roots = crate::rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let ring = Arc::new(crate::rustls::crypto::ring::default_provider());
    crate::rustls::ClientConfig::builder_with_provider(ring)
        .with_safe_default_protocol_versions()
        .expect("ring supports rustls' default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

impl<RT: Runtime> Client<RT> {
    /// The same client on another clock and sleep (for example `VirtualTime`).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> Client<R2> {
        Client {
            retrier: self.retrier,
            runtime,
            #[cfg(feature = "rustls")]
            tls: self.tls,
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
    /// last 503, a 404) is `Ok`. A TLS failure is never retried: `ErrorKind::Tls`.
    ///
    /// A discarded response's body is read to its end within the retrier's drain limits
    /// (`Retrier::drain`), and the next attempt is sent on the same connection.
    pub async fn run(&self, request: http::Request<Bytes>) -> Result {
        let exchanges = Exchanges {
            client: self,
            kept: Kept::default(),
        };
        run(&self.retrier, &self.runtime, request, exchanges).await
    }

    /// One attempt: on the operation's kept connection when it is ready for another request,
    /// else on a new one.
    async fn send(
        &self,
        request: http::Request<Bytes>,
        kept: &Kept,
    ) -> core::result::Result<http::Response<Incoming>, HttpError> {
        let target = Target::of(request.uri())?;
        let sender = match kept.take_ready().await {
            Some(sender) => sender,
            None => {
                // Until the handshake ends nothing is written: a time-out is a connect's.
                crate::mark_connecting();
                self.connect(&target).await?
            }
        };
        crate::mark_connected();
        exchange(sender, request, kept).await
    }

    /// A new connection to `target`, its task running on smol (detached; it ends when its
    /// sender is dropped or the peer closes).
    async fn connect(
        &self,
        target: &Target,
    ) -> core::result::Result<SendRequest<Full<Bytes>>, HttpError> {
        let tcp = connect::tcp(target).await?;
        #[cfg(feature = "rustls")]
        if target.https {
            let tls = connect::tls(&self.tls, target, tcp).await?;
            return handshake(tls).await;
        }
        handshake(tcp).await
    }
}

/// One operation's attempts through a [`Client`], on the connection it keeps.
struct Exchanges<'c, RT> {
    client: &'c Client<RT>,
    kept: Kept,
}

impl<RT: Runtime> Transport<Bytes> for Exchanges<'_, RT> {
    type Body = Incoming;
    type Error = HttpError;

    async fn send(
        &mut self,
        attempt: Attempt<Bytes>,
    ) -> core::result::Result<http::Response<Incoming>, HttpError> {
        self.client.send(attempt.request, &self.kept).await
    }

    fn error_kind(&self, error: &HttpError) -> ErrorKind {
        error_kind(error)
    }

    async fn drain(&mut self, body: Incoming, limits: DrainLimits) {
        drain_body(body, limits).await;
    }
}

/// The connection an operation keeps between its attempts (every attempt goes to the same
/// URI, so to the same host).
#[derive(Default)]
struct Kept(std::sync::Mutex<Option<SendRequest<Full<Bytes>>>>);

impl Kept {
    fn put(&self, sender: SendRequest<Full<Bytes>>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sender);
    }

    /// The kept connection, once hyper says whether it can carry another request: it can
    /// when the previous response was read to its end; hyper closes it otherwise, and then
    /// says so at once.
    async fn take_ready(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut sender = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        if sender.is_closed() {
            return None;
        }
        sender.ready().await.ok()?;
        Some(sender)
    }
}

/// HTTP/1 over `io`: its sender, its connection task spawned.
async fn handshake<IO>(io: IO) -> core::result::Result<SendRequest<Full<Bytes>>, HttpError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(FuturesIo::new(io))
        .await
        .map_err(HttpError::Http)?;
    smol::spawn(connection).detach();
    Ok(sender)
}

/// One HTTP/1 exchange on `sender`'s connection, up to the response head; the connection is
/// then kept for the operation's next attempt.
async fn exchange(
    mut sender: SendRequest<Full<Bytes>>,
    mut request: http::Request<Bytes>,
    kept: &Kept,
) -> core::result::Result<http::Response<Incoming>, HttpError> {
    // hyper's connection API wants the origin form and a Host header.
    let uri = request.uri().clone();
    if !request.headers().contains_key(http::header::HOST) {
        let authority = uri.authority().map_or("", |a| a.as_str());
        if let Ok(host) = http::HeaderValue::from_str(authority.rsplit('@').next().unwrap_or("")) {
            request.headers_mut().insert(http::header::HOST, host);
        }
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path.parse().map_err(|_| HttpError::InvalidUri)?;
    let response = sender
        .send_request(request.map(Full::new))
        .await
        .map_err(HttpError::Http)?;
    kept.put(sender);
    Ok(response)
}
