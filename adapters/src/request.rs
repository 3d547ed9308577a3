//! The request an operation repeats: replayable body, one `Idempotency-Key` for all attempts.
//!
//! Rule: the body is replayed for every attempt (bytes are
//! shared, a factory is called once per attempt); an opted-in POST carries the same
//! `Idempotency-Key` on every attempt (IETF httpapi `Idempotency-Key` draft), generated for the
//! caller if asked. The builder takes what converts (a `&str` URL, a header name as text), as
//! `http`'s own builders do; the first part that does not convert is kept and [`run`](crate::run)
//! returns it without sending anything, so a bad URL is an error, never a panic.

use core::fmt;
use core::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, Version};

use crate::abort::Abort;
use crate::invalid::{port_out_of_range, Part, RequestError};
use crate::observe::redact::{DebugHeaderNames, DebugRequest, DebugUri};
use crate::Policy;

/// The `Idempotency-Key` header name.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// A new `Idempotency-Key` value: a random UUID (version 4) in text, as
/// [`RetryRequest::generate_idempotency_key`] sends. Make one per operation and send it on
/// every attempt of that operation.
///
/// ```
/// let a = backstop::new_idempotency_key();
/// assert_eq!(a.len(), 36);
/// assert_ne!(a, backstop::new_idempotency_key());
/// ```
#[must_use]
pub fn new_idempotency_key() -> HeaderValue {
    let uuid = crate::retrier::random_uuid();
    // Hex digits and dashes: always a valid header value.
    HeaderValue::from_str(&uuid).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// An operation's name for its events and logs, where the request is not a [`RetryRequest`]
/// but travels with its extensions: through the reqwest middleware
/// (`client.post(url).with_extension(OperationName::new("create-order"))`) or the tower layer
/// (`request.extensions_mut().insert(OperationName::new("create-order"))`).
///
/// ```
/// use backstop::OperationName;
///
/// let mut request = http::Request::post("http://127.0.0.1:8080/orders").body(())?;
/// request.extensions_mut().insert(OperationName::new("create-order"));
/// assert_eq!(request.extensions().get::<OperationName>().map(OperationName::as_str), Some("create-order"));
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OperationName(std::borrow::Cow<'static, str>);

impl OperationName {
    /// The name `name` (a `&'static str` is kept without a copy).
    #[must_use]
    pub fn new(name: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        OperationName(name.into())
    }

    /// The name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Gives a request with `method` and `headers` a new `Idempotency-Key` when its method is
/// retried only with one (POST, PATCH) and it has none: what a "generate a key" option of a
/// middleware or layer does to each request, once, before its first attempt.
///
/// ```
/// use backstop::{ensure_idempotency_key, http::{HeaderMap, Method}};
///
/// let mut headers = HeaderMap::new();
/// ensure_idempotency_key(&Method::GET, &mut headers);
/// assert!(headers.is_empty());
/// ensure_idempotency_key(&Method::POST, &mut headers);
/// let key = headers["idempotency-key"].clone();
/// ensure_idempotency_key(&Method::POST, &mut headers); // kept, not replaced
/// assert_eq!(headers["idempotency-key"], key);
/// // An empty or blank key is no key (a server cannot deduplicate on it): it is replaced.
/// headers.insert("idempotency-key", " ".parse()?);
/// ensure_idempotency_key(&Method::POST, &mut headers);
/// assert_eq!(headers["idempotency-key"].len(), 36);
/// # Ok::<(), http::header::InvalidHeaderValue>(())
/// ```
pub fn ensure_idempotency_key(method: &Method, headers: &mut HeaderMap) {
    if needs_idempotency_key(method) && !carries_idempotency_key(headers) {
        headers.insert(IDEMPOTENCY_KEY, new_idempotency_key());
    }
}

/// Whether `headers` carry an `Idempotency-Key` that is a key (core's rule: not empty, not
/// blank).
fn carries_idempotency_key(headers: &HeaderMap) -> bool {
    headers
        .get(IDEMPOTENCY_KEY)
        .is_some_and(|key| crate::is_idempotency_key(key.as_bytes()))
}

/// Whether a request with `method` is retried only when it carries an `Idempotency-Key`
/// (POST and PATCH, under the default policy): those a "generate a key" option gives one.
#[must_use]
pub fn needs_idempotency_key(method: &Method) -> bool {
    *method == Method::POST || *method == Method::PATCH
}

type Factory = Box<dyn FnMut() -> Bytes + Send>;

/// A request body that can be sent again on every attempt.
#[derive(Default)]
enum RequestBody {
    /// No body.
    #[default]
    Empty,
    /// The same bytes on every attempt (cloning [`Bytes`] shares them).
    Bytes(Bytes),
    /// A factory called once per attempt, for bodies that must be made afresh.
    Factory(Factory),
}

impl RequestBody {
    /// The body for the next attempt.
    fn for_attempt(&mut self) -> Bytes {
        match self {
            RequestBody::Empty => Bytes::new(),
            RequestBody::Bytes(b) => b.clone(),
            RequestBody::Factory(f) => f(),
        }
    }
}

impl fmt::Debug for RequestBody {
    // Never the body itself: it may be secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestBody::Empty => f.write_str("Empty"),
            RequestBody::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            RequestBody::Factory(_) => f.write_str("Factory"),
        }
    }
}

/// One operation's request: what every attempt sends, plus its name and abort handle.
///
/// ```
/// use backstop::{Abort, RetryRequest};
///
/// let abort = Abort::new();
/// let request = RetryRequest::post("http://127.0.0.1:8080/orders")
///     .name("create-order")
///     .header("content-type", "application/json")
///     .body(r#"{"sku":42}"#)
///     .generate_idempotency_key()
///     .abort_on(&abort);
/// assert!(request.has_idempotency_key());
/// assert!(request.error().is_none());
/// ```
///
/// A URL or header that does not convert is kept as the request's [`error`](Self::error), and
/// [`run`](crate::run) returns it as
/// [`RetryError::InvalidRequest`](crate::RetryError::InvalidRequest) without sending:
///
/// ```
/// use backstop::RetryRequest;
///
/// let request = RetryRequest::get("http://exa mple.com/").header("x-trace", "a\nb");
/// assert_eq!(request.error().map(ToString::to_string).as_deref(), Some("invalid URL: invalid uri character"));
/// ```
///
/// Its `Debug` shows no secret: the URL without userinfo, query or fragment, the headers' names
/// without their values, the body's length only.
pub struct RetryRequest {
    pub(crate) name: Option<String>,
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: RequestBody,
    pub(crate) abort: Option<Abort>,
    /// This request's policy, in place of the retrier's (boxed: a request without one, the
    /// usual case, stays small).
    pub(crate) policy: Option<Box<Policy>>,
    /// The attempt function sends a body it cannot send again (a stream of the caller's).
    pub(crate) body_not_replayable: bool,
    error: Option<RequestError>,
}

impl fmt::Debug for RetryRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryRequest")
            .field("name", &self.name)
            .field("method", &self.method)
            .field("uri", &DebugUri(&self.uri))
            .field("version", &self.version)
            .field("headers", &DebugHeaderNames(&self.headers))
            .field("body", &self.body)
            .field("abort", &self.abort.is_some())
            .field("policy", &self.policy)
            .field("body_not_replayable", &self.body_not_replayable)
            .field("error", &self.error)
            .finish()
    }
}

impl RetryRequest {
    /// A request with `method` to `uri` (a `&str`, a `String` or a [`Uri`]), no headers and
    /// no body. A URL that does not parse is kept as the request's [`error`](Self::error).
    #[must_use]
    pub fn new<U>(method: Method, uri: U) -> Self
    where
        U: TryInto<Uri>,
        U::Error: Into<http::Error>,
    {
        let (uri, error) = match uri.try_into() {
            Ok(uri) if port_out_of_range(&uri) => (uri, Some(RequestError::port_out_of_range())),
            Ok(uri) => (uri, None),
            Err(e) => (Uri::default(), Some(RequestError::new(Part::Uri, e.into()))),
        };
        RetryRequest {
            name: None,
            method,
            uri,
            version: Version::HTTP_11,
            headers: HeaderMap::new(),
            body: RequestBody::Empty,
            abort: None,
            policy: None,
            body_not_replayable: false,
            error,
        }
    }

    /// A GET request (see [`new`](Self::new)).
    #[must_use]
    pub fn get<U>(uri: U) -> Self
    where
        U: TryInto<Uri>,
        U::Error: Into<http::Error>,
    {
        RetryRequest::new(Method::GET, uri)
    }

    /// A POST request (see [`new`](Self::new)). It is retried after it may have been sent only
    /// when it carries an `Idempotency-Key` (the caller's opt-in; see `backstop::NonIdempotent`).
    #[must_use]
    pub fn post<U>(uri: U) -> Self
    where
        U: TryInto<Uri>,
        U::Error: Into<http::Error>,
    {
        RetryRequest::new(Method::POST, uri)
    }

    /// A PUT request (see [`new`](Self::new)). Retried after it may have been sent only when
    /// the policy adds PUT (`add_retry_method`).
    #[must_use]
    pub fn put<U>(uri: U) -> Self
    where
        U: TryInto<Uri>,
        U::Error: Into<http::Error>,
    {
        RetryRequest::new(Method::PUT, uri)
    }

    /// A DELETE request (see [`new`](Self::new)). Retried after it may have been sent only
    /// when the policy adds DELETE (`add_retry_method`).
    #[must_use]
    pub fn delete<U>(uri: U) -> Self
    where
        U: TryInto<Uri>,
        U::Error: Into<http::Error>,
    {
        RetryRequest::new(Method::DELETE, uri)
    }

    /// A request from an `http::Request` with a byte body.
    #[must_use]
    pub fn from_http(request: http::Request<Bytes>) -> Self {
        let (parts, body) = request.into_parts();
        let error = port_out_of_range(&parts.uri).then(RequestError::port_out_of_range);
        RetryRequest {
            name: None,
            method: parts.method,
            uri: parts.uri,
            version: parts.version,
            headers: parts.headers,
            body: RequestBody::Bytes(body),
            abort: None,
            policy: None,
            body_not_replayable: false,
            error,
        }
    }

    /// Names the operation in events and logs (for example `"create-order"`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The operation's name, if it has one.
    #[must_use]
    pub fn operation_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Adds a header (appended: a name may repeat). Name and value are anything that converts
    /// (`"content-type"`, a [`HeaderName`], a `String`, a [`HeaderValue`]); one that does not
    /// is kept as the request's [`error`](Self::error).
    #[must_use]
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        K: TryInto<HeaderName>,
        K::Error: Into<http::Error>,
        V: TryInto<HeaderValue>,
        V::Error: Into<http::Error>,
    {
        let name = name
            .try_into()
            .map_err(|e| RequestError::new(Part::HeaderName, e.into()));
        let value = value
            .try_into()
            .map_err(|e| RequestError::new(Part::HeaderValue, e.into()));
        match (name, value) {
            (Ok(name), Ok(value)) => {
                self.headers.append(name, value);
            }
            (Err(e), _) | (_, Err(e)) => self.keep_first(e),
        }
        self
    }

    /// The body `value` as JSON, with `Content-Type: application/json` unless the request has
    /// a content type. A value that does not serialize is kept as the request's
    /// [`error`](Self::error).
    ///
    /// ```
    /// let request = backstop::RetryRequest::post("http://127.0.0.1:8080/orders")
    ///     .json(&serde_json::json!({ "sku": 42 }));
    /// assert!(request.error().is_none());
    /// ```
    #[cfg(feature = "json")]
    #[must_use]
    pub fn json<T: serde::Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => {
                if !self.headers.contains_key(http::header::CONTENT_TYPE) {
                    self.headers.insert(
                        http::header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                }
                self.body = RequestBody::Bytes(body.into());
            }
            Err(e) => self.keep_first(RequestError::json(e)),
        }
        self
    }

    /// Why the request cannot be sent: the first URL, header or body given to the builder that
    /// did not convert. [`run`](crate::run) returns it without sending anything.
    #[must_use]
    pub fn error(&self) -> Option<&RequestError> {
        self.error.as_ref()
    }

    /// Takes the builder's error out of the request.
    pub(crate) fn take_error(&mut self) -> Option<RequestError> {
        self.error.take()
    }

    /// Keeps `error` unless an earlier one is kept: the first mistake is the one to fix.
    fn keep_first(&mut self, error: RequestError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// The headers every attempt sends.
    #[must_use]
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.headers
    }

    /// The same bytes as body on every attempt.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = RequestBody::Bytes(body.into());
        self
    }

    /// A body made afresh for every attempt by `factory`.
    #[must_use]
    pub fn body_factory(mut self, factory: impl FnMut() -> Bytes + Send + 'static) -> Self {
        self.body = RequestBody::Factory(Box::new(factory));
        self
    }

    /// Sends `key` as `Idempotency-Key` on every attempt (replacing any such header). A key
    /// that is not a valid header value is kept as the request's [`error`](Self::error).
    #[must_use]
    pub fn idempotency_key<V>(mut self, key: V) -> Self
    where
        V: TryInto<HeaderValue>,
        V::Error: Into<http::Error>,
    {
        match key.try_into() {
            Ok(key) => {
                self.headers.insert(IDEMPOTENCY_KEY, key);
            }
            Err(e) => self.keep_first(RequestError::new(Part::HeaderValue, e.into())),
        }
        self
    }

    /// Generates a random `Idempotency-Key` (a UUID v4 in text) unless the request has one,
    /// and sends it on every attempt.
    #[must_use]
    pub fn generate_idempotency_key(self) -> Self {
        if self.has_idempotency_key() {
            return self;
        }
        self.idempotency_key(new_idempotency_key())
    }

    /// Whether the request carries an `Idempotency-Key`.
    #[must_use]
    pub fn has_idempotency_key(&self) -> bool {
        // No hashing of the name for a request without headers (the common GET). An empty or
        // blank value is no key: core's rule, so every adapter and the oracle agree.
        !self.headers.is_empty() && carries_idempotency_key(&self.headers)
    }

    /// Says that the attempt function sends a body it cannot send again (a stream it takes
    /// from the caller, as reqwest's non-cloneable bodies): the request is sent once and never
    /// retried, and the outcome says why
    /// ([`StopReason::BodyNotReplayable`](crate::StopReason::BodyNotReplayable)).
    #[must_use]
    pub fn body_not_replayable(mut self) -> Self {
        self.body_not_replayable = true;
        self
    }

    /// Lets `abort` cancel this operation.
    #[must_use]
    pub fn abort_on(mut self, abort: &Abort) -> Self {
        self.abort = Some(abort.clone());
        self
    }

    /// Runs this request under `policy` instead of the retrier's (every other part of the
    /// retrier stays: observers, metrics, budget, hooks). Through reqwest and tower, put the
    /// [`Policy`] in the request's extensions instead: one shared client, a policy per
    /// request.
    ///
    /// ```
    /// use backstop::{Policy, RetryRequest};
    ///
    /// let once = Policy::builder().max_attempts(1).build()?;
    /// let request = RetryRequest::post("http://127.0.0.1:1/charge").policy(once);
    /// assert_eq!(request.request_policy().map(|p| p.max_attempts()), Some(1));
    /// # Ok::<(), backstop::ConfigError>(())
    /// ```
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(Box::new(policy));
        self
    }

    /// This request's own policy, if it has one.
    #[must_use]
    pub fn request_policy(&self) -> Option<&Policy> {
        self.policy.as_deref()
    }

    /// The facts the loop needs about a request a front door sends itself (reqwest's,
    /// tower's): `method` and `uri`, the `Idempotency-Key` of `headers` (a blank one kept as
    /// sent: [`has_idempotency_key`](Self::has_idempotency_key) says it is no key), and an
    /// [`Abort`], an [`OperationName`] and a [`Policy`] from `extensions`. The body stays in
    /// the caller's request.
    pub(crate) fn from_head(
        method: Method,
        uri: Uri,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> Self {
        let mut plan = RetryRequest::new(method, uri);
        if let Some(key) = headers.get(IDEMPOTENCY_KEY) {
            plan = plan.idempotency_key(key.clone());
        }
        if let Some(abort) = extensions.get::<Abort>() {
            plan = plan.abort_on(abort);
        }
        if let Some(name) = extensions.get::<OperationName>() {
            plan = plan.name(name.as_str());
        }
        if let Some(policy) = extensions.get::<Policy>() {
            plan = plan.policy(*policy);
        }
        plan
    }

    /// The abort handle, if the request has one.
    #[must_use]
    pub fn abort_handle(&self) -> Option<&Abort> {
        self.abort.as_ref()
    }

    /// The request method.
    #[must_use]
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The request URI (with its query: never log it; see [`redact_uri`](crate::redact_uri)).
    #[must_use]
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The `http::Request` one attempt sends: the same head (method, URI, headers, the
    /// `Idempotency-Key`), and the body, the factory's called once. For handing the request to
    /// a stack that retries on its own, such as `backstop::tower`'s layer or a reqwest client
    /// (`reqwest::Request::try_from`); the loop calls it once per attempt.
    ///
    /// ```
    /// use backstop::RetryRequest;
    ///
    /// let mut request = RetryRequest::post("http://127.0.0.1:8080/orders")
    ///     .header("content-type", "application/json")
    ///     .body(r#"{"sku":42}"#)
    ///     .generate_idempotency_key();
    /// let first = request.to_http();
    /// let second = request.to_http();
    /// assert_eq!(first.headers()["idempotency-key"], second.headers()["idempotency-key"]);
    /// assert_eq!(second.body().as_ref(), br#"{"sku":42}"#);
    /// ```
    #[must_use]
    pub fn to_http(&mut self) -> http::Request<Bytes> {
        let mut request = http::Request::new(self.body.for_attempt());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.version_mut() = self.version;
        if !self.headers.is_empty() {
            *request.headers_mut() = self.headers.clone();
        }
        request
    }
}

/// One attempt, handed to the attempt function. Its `Debug` shows the request without
/// secrets (as [`RetryRequest`]'s does).
#[non_exhaustive]
pub struct Attempt {
    /// The attempt's number; the first is 1.
    pub number: u32,
    /// How long the attempt may take (already bounded by the overall deadline). The loop
    /// enforces it by racing the attempt against a timer; a blocking client, which completes
    /// its attempt within the loop's first poll of it, must apply it itself.
    pub timeout: Duration,
    /// The request to send (empty for a transport that sends a request of its own:
    /// [`Transport::READS_REQUEST`](crate::Transport::READS_REQUEST)).
    pub request: http::Request<Bytes>,
}

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attempt")
            .field("number", &self.number)
            .field("timeout", &self.timeout)
            .field("request", &DebugRequest(&self.request))
            .finish()
    }
}
