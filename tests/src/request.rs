//! A scenario's request, written once and sent through every adapter.
//!
//! The scenarios describe a request the way they read best (`TestRequest::post(url)
//! .header(..).body(..).abort_on(&abort)`); each adapter then sends it as its users would: an
//! `http::Request` with the [`Abort`], [`OperationName`] and [`Policy`] in its extensions
//! (ureq, the tower layer over tokio and over smol), or a reqwest request with them in the
//! middleware's extensions. A body factory becomes a [`backstop::ReplayBody`] on the tower
//! layer (made afresh per attempt); ureq and reqwest take bytes that they clone, so there the
//! factory is called once.

use std::sync::Arc;

use backstop::idempotency::{new_idempotency_key, IDEMPOTENCY_KEY};
use backstop::{Abort, OperationName, Policy};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// A factory of the same body for every attempt.
pub type Factory = Arc<dyn Fn() -> Bytes + Send + Sync>;

/// A scenario's request (see the module docs).
#[derive(Clone)]
pub struct TestRequest {
    method: Method,
    uri: String,
    headers: http::HeaderMap,
    body: Bytes,
    factory: Option<Factory>,
    abort: Option<Abort>,
    name: Option<OperationName>,
    policy: Option<Policy>,
}

impl core::fmt::Debug for TestRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TestRequest")
            .field("method", &self.method)
            .field(
                "uri",
                &backstop::observe::redact_uri(&self.uri.parse().unwrap_or_default()),
            )
            .finish_non_exhaustive()
    }
}

impl TestRequest {
    /// A request with `method` to `uri` (parsed when it is sent).
    #[must_use]
    pub fn new(method: Method, uri: impl Into<String>) -> Self {
        TestRequest {
            method,
            uri: uri.into(),
            headers: http::HeaderMap::new(),
            body: Bytes::new(),
            factory: None,
            abort: None,
            name: None,
            policy: None,
        }
    }

    /// A GET.
    #[must_use]
    pub fn get(uri: impl Into<String>) -> Self {
        TestRequest::new(Method::GET, uri)
    }

    /// A POST.
    #[must_use]
    pub fn post(uri: impl Into<String>) -> Self {
        TestRequest::new(Method::POST, uri)
    }

    /// Adds a header.
    ///
    /// # Panics
    ///
    /// When the name or the value is not valid (a scenario's mistake).
    #[must_use]
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        K: TryInto<HeaderName, Error: core::fmt::Debug>,
        V: TryInto<HeaderValue, Error: core::fmt::Debug>,
    {
        let name = name.try_into().expect("a valid header name");
        let value = value.try_into().expect("a valid header value");
        self.headers.append(name, value);
        self
    }

    /// The body: the same bytes on every attempt.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// A body made by `factory` (see the module docs for who calls it when).
    #[must_use]
    pub fn body_factory(mut self, factory: impl Fn() -> Bytes + Send + Sync + 'static) -> Self {
        self.factory = Some(Arc::new(factory));
        self
    }

    /// Sends `key` as `Idempotency-Key`.
    #[must_use]
    pub fn idempotency_key<V>(mut self, key: V) -> Self
    where
        V: TryInto<HeaderValue, Error: core::fmt::Debug>,
    {
        let key = key.try_into().expect("a valid header value");
        self.headers.insert(IDEMPOTENCY_KEY, key);
        self
    }

    /// Sends a new random `Idempotency-Key`.
    #[must_use]
    pub fn generate_idempotency_key(mut self) -> Self {
        self.headers.insert(IDEMPOTENCY_KEY, new_idempotency_key());
        self
    }

    /// Names the operation (an [`OperationName`] in the extensions).
    #[must_use]
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = Some(OperationName::new(name));
        self
    }

    /// Lets `abort` end the operation (in the extensions).
    #[must_use]
    pub fn abort_on(mut self, abort: &Abort) -> Self {
        self.abort = Some(abort.clone());
        self
    }

    /// This request's own policy (in the extensions).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The method.
    #[must_use]
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The body factory, if the request has one.
    #[must_use]
    pub fn factory(&self) -> Option<&Factory> {
        self.factory.as_ref()
    }

    /// The request as `http` makes it, its body the bytes (the factory's, called once, if it
    /// has one), with the abort, name and policy in its extensions.
    ///
    /// # Panics
    ///
    /// When `http` refuses the URI (a scenario's mistake).
    #[must_use]
    pub fn to_http(&self) -> http::Request<Bytes> {
        let body = self
            .factory
            .as_ref()
            .map_or_else(|| self.body.clone(), |f| f());
        self.to_http_with(body)
    }

    /// [`to_http`](Self::to_http) with `body` as its body (the factory is not called).
    ///
    /// # Panics
    ///
    /// When `http` refuses the URI (a scenario's mistake).
    #[must_use]
    pub fn to_http_with<B>(&self, body: B) -> http::Request<B> {
        let mut request = http::Request::builder()
            .method(self.method.clone())
            .uri(self.uri.as_str())
            .body(body)
            .expect("a URI http parses");
        *request.headers_mut() = self.headers.clone();
        let extensions = request.extensions_mut();
        if let Some(abort) = &self.abort {
            extensions.insert(abort.clone());
        }
        if let Some(name) = &self.name {
            extensions.insert(name.clone());
        }
        if let Some(policy) = self.policy {
            extensions.insert(policy);
        }
        request
    }
}
