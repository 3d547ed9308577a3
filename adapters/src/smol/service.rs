//! The service: each request on an idle connection of the pool, or on a new one.
//!
//! Rule: a request that hyper gives back unsent is sent again. A pooled connection the server
//! closed while it was idle can look open until hyper reads the close; hyper then returns the
//! request it had not begun to write (`try_send_request`), and a new connection carries it:
//! nothing was sent, so this is not a retry. Everything else is the caller's (a retry layer's).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use tower_service::Service;

use crate::smol::body::Body;
use crate::smol::connect::{self, Target};
use crate::smol::connection::{Connection, RequestBody};
use crate::smol::error::HttpError;
use crate::smol::pool::{Lease, Pool};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tower [`Service`] that sends an `http::Request<B>` over HTTP/1 on smol's TCP (hyper's
/// connection API through `smol-hyper`), and with the `rustls` feature over futures-rustls
/// for `https://`; it keeps idle connections for the next requests to the same scheme, host
/// and port. It does not retry: wrap it in `backstop::tower::RetryLayer` (the module docs
/// show how).
///
/// Clones share one pool and one TLS configuration.
pub struct HttpService<B = Full<Bytes>> {
    pool: Arc<Pool<B>>,
    #[cfg(feature = "rustls")]
    tls: Arc<crate::rustls::ClientConfig>,
}

impl<B> HttpService<B> {
    /// A service for `http://` URLs, and with the `rustls` feature for `https://` ones too,
    /// trusting Mozilla's roots (the `webpki-roots` crate, which futures-rustls does not
    /// bundle; on ring); see [`HttpService::with_tls`] for a private CA.
    #[must_use]
    pub fn new() -> Self {
        HttpService {
            pool: Arc::new(Pool::new()),
            #[cfg(feature = "rustls")]
            tls: Arc::new(mozilla_roots()),
        }
    }

    /// A service for `http://` and `https://` with a rustls `ClientConfig` of the caller's,
    /// built with rustls' own API: the module docs trust a private CA with it.
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn with_tls(tls: crate::rustls::ClientConfig) -> Self {
        HttpService {
            pool: Arc::new(Pool::new()),
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

impl<B> Default for HttpService<B> {
    fn default() -> Self {
        HttpService::new()
    }
}

impl<B> Clone for HttpService<B> {
    // Not derived: that would ask for `B: Clone`, and a clone shares the pool whatever `B` is.
    fn clone(&self) -> Self {
        HttpService {
            pool: self.pool.clone(),
            #[cfg(feature = "rustls")]
            tls: self.tls.clone(),
        }
    }
}

impl<B> fmt::Debug for HttpService<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpService")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl<B> Service<http::Request<B>> for HttpService<B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Body>;
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, HttpError>> + Send>>;

    /// Always ready: a connection is taken or made by the call itself.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), HttpError>> {
        Poll::Ready(Ok(()))
    }

    /// Sends `request` (an absolute `http://` or `https://` URI) and returns the response once
    /// its head has arrived; its [`Body`] gives the connection back to the pool when read to
    /// its end. Dropping the future cancels the request, closing its connection.
    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { service.send(request).await })
    }
}

impl<B> HttpService<B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    /// One request: its target, a connection to it, the exchange up to the response head.
    async fn send(self, request: http::Request<B>) -> Result<http::Response<Body>, HttpError> {
        let target = Target::of(request.uri())?;
        let request = origin_form(request)?.map(RequestBody::new);
        let (mut connection, reused) = match self.pool.take(&target).await {
            Some(connection) => (connection, true),
            None => (self.connect(&target).await?, false),
        };
        // From here the request may be written: a time-out is no longer a connect's.
        crate::transport::mark_connected();
        let response = match connection.send(request).await {
            Ok(response) => response,
            Err(mut failed) => match failed.take_message() {
                // Given back unsent by a pooled connection that had closed: a new one carries
                // it. From a new connection it is the error.
                Some(request) if reused => {
                    connection = self.connect(&target).await?;
                    connection
                        .send(request)
                        .await
                        .map_err(|failed| HttpError::Http(failed.into_error()))?
                }
                _ => return Err(HttpError::Http(failed.into_error())),
            },
        };
        let lease = Box::new(Lease::new(&self.pool, target, connection));
        Ok(response.map(|incoming| Body::new(incoming, lease)))
    }

    /// A new connection to `target`.
    async fn connect(&self, target: &Target) -> Result<Connection<B>, HttpError> {
        // Until the handshake ends nothing is written: a time-out is a connect's.
        crate::transport::mark_connecting();
        let tcp = connect::tcp(target).await?;
        #[cfg(feature = "rustls")]
        if target.https {
            let tls = connect::tls(&self.tls, target, tcp).await?;
            return connect::handshake(tls).await;
        }
        connect::handshake(tcp).await
    }
}

/// The request as hyper's connection API sends it: its URI in origin form (RFC 9112 §3.2.1),
/// and a `Host` header from its authority without userinfo (RFC 9110 §7.2) unless it has one.
fn origin_form<B>(mut request: http::Request<B>) -> Result<http::Request<B>, HttpError> {
    let uri = request.uri().clone();
    if !request.headers().contains_key(http::header::HOST) {
        let authority = uri.authority().map_or("", |a| a.as_str());
        let host = authority.rsplit('@').next().unwrap_or("");
        if let Ok(host) = http::HeaderValue::from_str(host) {
            request.headers_mut().insert(http::header::HOST, host);
        }
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path.parse().map_err(|_| HttpError::InvalidUri)?;
    Ok(request)
}
