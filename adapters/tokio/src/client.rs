//! The ready integration: hyper-util's pooled HTTP/1 client on tokio.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use backstop::ErrorKind;
use backstop_driver::{
    find_io_error, io_error_kind, run, Retried, Retrier, RetryError, RetryRequest, Runtime,
};

use crate::runtime::TokioRuntime;

/// The client's error type.
pub type HttpError = hyper_util::client::legacy::Error;

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<Incoming>, RetryError<HttpError>>;

/// A retrying HTTP client on tokio: hyper-util's legacy (pooled) client over plain TCP.
#[derive(Clone, Debug)]
pub struct Client<RT = TokioRuntime> {
    http: hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>,
    retrier: Retrier,
    runtime: RT,
}

impl Client<TokioRuntime> {
    /// A client with hyper-util's defaults (HTTP/1, connection pool, no TLS).
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build_http();
        Client::with_http(retrier, http)
    }

    /// A client around a hyper-util client of the caller's.
    #[must_use]
    pub fn with_http(
        retrier: Retrier,
        http: hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>,
    ) -> Self {
        Client {
            http,
            retrier,
            runtime: TokioRuntime::new(),
        }
    }
}

impl<RT: Runtime> Client<RT> {
    /// The same client on another clock and sleep (for example `VirtualTime`).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> Client<R2> {
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
    /// last 503, a 404) is `Ok`.
    pub async fn run(&self, request: RetryRequest) -> Result {
        run(
            &self.retrier,
            &self.runtime,
            request,
            error_kind,
            |attempt| {
                let mut request = attempt.request.map(Full::new);
                without_userinfo(request.uri_mut());
                self.http.request(request)
            },
        )
        .await
    }
}

/// The kind of a hyper-util client error.
#[must_use]
pub fn error_kind(error: &HttpError) -> ErrorKind {
    let io = find_io_error(error).map(io_error_kind);
    if error.is_connect() {
        // The connection was never made: nothing was sent.
        return match io {
            Some(ErrorKind::Timeout) => ErrorKind::ConnectTimeout,
            _ => ErrorKind::ConnectionRefused,
        };
    }
    if let Some(kind) = io.filter(|k| *k != ErrorKind::Other) {
        return kind;
    }
    crate::hyper_error::kind(error).unwrap_or(ErrorKind::Other)
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
}
