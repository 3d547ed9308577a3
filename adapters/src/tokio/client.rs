//! The ready integration: hyper-util's pooled HTTP/1 client on tokio, over hyper-rustls for
//! `https://` (with the `rustls` feature).

use core::future::Future;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::{capture_connection, Connect, HttpConnector};
use hyper_util::rt::TokioExecutor;

use crate::{
    drain_body, run, Attempt, DrainLimits, ErrorKind, Retried, Retrier, RetryError, RetryRequest,
    Runtime, Transport,
};

use crate::tokio::error::{error_kind, HttpError};
use crate::tokio::resolve::Resolver;
use crate::tokio::runtime::TokioRuntime;

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<Incoming>, RetryError<HttpError>>;

/// The connector of [`Client::new`]: hyper-util's TCP connector with the DNS-marking
/// [`Resolver`], under hyper-rustls (`http://` and `https://`) with the `rustls` feature.
#[cfg(feature = "rustls")]
pub type DefaultConnector = hyper_rustls::HttpsConnector<HttpConnector<Resolver>>;

/// The connector of [`Client::new`]: hyper-util's TCP connector with the DNS-marking
/// [`Resolver`] (`http://` only; `https://` needs the `rustls` feature).
#[cfg(not(feature = "rustls"))]
pub type DefaultConnector = HttpConnector<Resolver>;

/// A retrying HTTP client on tokio: hyper-util's legacy (pooled) client over connector `C`.
#[derive(Clone, Debug)]
pub struct Client<RT = TokioRuntime, C = DefaultConnector> {
    http: hyper_util::client::legacy::Client<C, Full<Bytes>>,
    retrier: Retrier,
    runtime: RT,
}

impl Client {
    /// A client with hyper-util's defaults (HTTP/1, connection pool). With the `rustls`
    /// feature it speaks `https://` too, trusting Mozilla's roots (hyper-rustls's own
    /// `with_provider_and_webpki_roots`, on ring); see [`Client::with_tls`] for a private CA.
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        #[cfg(feature = "rustls")]
        let connector = {
            let ring = crate::rustls::crypto::ring::default_provider();
            let tls = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(ring)
                .expect("ring supports rustls' default protocol versions");
            https_connector(tls)
        };
        #[cfg(not(feature = "rustls"))]
        let connector = HttpConnector::new_with_resolver(Resolver::new());
        Client::with_http(retrier, pooled(connector))
    }

    /// A client for `http://` and `https://` with a rustls `ClientConfig` of the caller's,
    /// built with rustls' own API: the module docs trust a private CA with it. Its ALPN
    /// protocols must be empty (hyper-rustls sets them).
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn with_tls(retrier: Retrier, tls: crate::rustls::ClientConfig) -> Self {
        let tls = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
        Client::with_http(retrier, pooled(https_connector(tls)))
    }
}

impl<C: Connect + Clone + Send + Sync + 'static> Client<TokioRuntime, C> {
    /// A client around a hyper-util client of the caller's, over any connector (a proxy, a
    /// connector of your own with hyper-rustls).
    ///
    /// Without the [`Resolver`] in its connector, an unknown host is classified
    /// `ConnectionRefused`, not `Dns`.
    #[must_use]
    pub fn with_http(
        retrier: Retrier,
        http: hyper_util::client::legacy::Client<C, Full<Bytes>>,
    ) -> Self {
        Client {
            http,
            retrier,
            runtime: TokioRuntime::new(),
        }
    }
}

impl<RT: Runtime, C: Connect + Clone + Send + Sync + 'static> Client<RT, C> {
    /// The same client on another clock and sleep (for example `VirtualTime`).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> Client<R2, C> {
        Client {
            http: self.http,
            retrier: self.retrier,
            runtime,
        }
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &RT {
        &self.runtime
    }

    /// Runs one operation until the policy is satisfied or it is aborted. Call it inside a
    /// tokio runtime with time and I/O enabled.
    ///
    /// # Errors
    ///
    /// [`RetryError`] when the operation ends without a response. A final error status (the
    /// last 503, a 404) is `Ok`. A TLS failure is never retried: `ErrorKind::Tls`.
    ///
    /// A discarded response's body is read to its end within the retrier's drain limits
    /// (`Retrier::drain`), so that hyper-util's pool hands its connection to the next attempt.
    pub async fn run(&self, request: RetryRequest) -> Result {
        run(&self.retrier, &self.runtime, request, self).await
    }

    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> core::result::Result<http::Response<Incoming>, HttpError> {
        let mut request = request.map(Full::new);
        check_uri(request.uri())?;
        without_userinfo(request.uri_mut());
        // hyper-util fills the capture when it hands the request a connection (new or
        // pooled), before writing any of it: until then the attempt is connecting.
        let capture = capture_connection(&mut request);
        crate::mark_connecting();
        let mut response = core::pin::pin!(self.http.request(request));
        core::future::poll_fn(|cx| {
            let polled = response.as_mut().poll(cx);
            if capture.connection_metadata().is_some() {
                crate::mark_connected();
            }
            polled
        })
        .await
        .map_err(HttpError::Client)
    }
}

/// One operation's attempts through a [`Client`]: hyper-util's pool keeps the connection, so
/// the client itself is the transport.
impl<RT: Runtime, C: Connect + Clone + Send + Sync + 'static> Transport for &Client<RT, C> {
    type Body = Incoming;
    type Error = HttpError;

    fn send(
        &mut self,
        attempt: Attempt,
    ) -> impl core::future::Future<Output = core::result::Result<http::Response<Incoming>, HttpError>>
    {
        Client::send(self, attempt.request)
    }

    fn error_kind(&self, error: &HttpError) -> ErrorKind {
        error_kind(error)
    }

    async fn drain(&mut self, body: Incoming, limits: DrainLimits) {
        drain_body(body, limits).await;
    }
}

fn pooled<C: Connect + Clone>(connector: C) -> hyper_util::client::legacy::Client<C, Full<Bytes>> {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// hyper-rustls over the DNS-marking TCP connector, `http://` and `https://`, HTTP/1.
#[cfg(feature = "rustls")]
fn https_connector(
    tls: hyper_rustls::HttpsConnectorBuilder<hyper_rustls::builderstates::WantsSchemes>,
) -> DefaultConnector {
    let mut tcp = HttpConnector::new_with_resolver(Resolver::new());
    // hyper-rustls hands `https://` URIs down to the TCP connector.
    tcp.enforce_http(false);
    tls.https_or_http().enable_http1().wrap_connector(tcp)
}

/// A URI the client can send to: a host, and a scheme it speaks. Checked here so that a bad
/// URI is `InvalidRequest` as on the other adapters, whatever the connector says of it.
fn check_uri(uri: &http::Uri) -> core::result::Result<(), HttpError> {
    let scheme_ok = match uri.scheme_str() {
        Some("https") => cfg!(feature = "rustls"),
        scheme => scheme == Some("http"),
    };
    if scheme_ok && uri.host().is_some_and(|h| !h.is_empty()) {
        Ok(())
    } else {
        Err(HttpError::InvalidUri)
    }
}

/// Removes the userinfo from `uri`. hyper-util never sends it (it sets no `Authorization` from
/// it), but its debug logs print the pool key, which would carry it.
fn without_userinfo(uri: &mut http::Uri) {
    let Some(authority) = uri.authority() else {
        return;
    };
    let Some((_, host)) = authority.as_str().rsplit_once('@') else {
        return;
    };
    let Ok(host) = host.parse::<http::uri::Authority>() else {
        return;
    };
    let mut parts = core::mem::take(uri).into_parts();
    parts.authority = Some(host);
    if let Ok(clean) = http::Uri::from_parts(parts) {
        *uri = clean;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn userinfo_is_removed_and_the_rest_kept() {
        let mut uri: http::Uri = "http://a:b@127.0.0.1:8/p?q=1".parse().expect("uri");
        super::without_userinfo(&mut uri);
        assert_eq!(uri, "http://127.0.0.1:8/p?q=1");
    }

    #[test]
    fn a_uri_without_a_host_or_with_another_scheme_is_invalid() {
        for bad in ["/relative", "ftp://127.0.0.1/"] {
            let uri: http::Uri = bad.parse().expect("uri");
            assert!(super::check_uri(&uri).is_err(), "{bad}");
        }
        let uri: http::Uri = "http://127.0.0.1:8/".parse().expect("uri");
        assert!(super::check_uri(&uri).is_ok());
    }
}
