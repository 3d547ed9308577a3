//! The request an operation repeats: the caller's `http::Request`, one `Idempotency-Key` for
//! all attempts.
//!
//! Rule: every attempt sends a copy of the caller's request, its body cloned (bytes are
//! shared; a [`ReplayBody`](crate::ReplayBody) makes it afresh); an opted-in POST carries the
//! same `Idempotency-Key` on every attempt (IETF httpapi `Idempotency-Key` draft), generated
//! for the caller if asked. What the loop needs of the request is read once, from its head and
//! extensions ([`Plan`]). A request that does not build is `http`'s error, before backstop.

use core::fmt;
use core::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use crate::abort::Abort;
use crate::observe::redact::DebugRequest;
#[cfg(feature = "reqwest")]
use crate::observe::redact::ShownUrl;
use crate::observe::redact::Target;
use crate::observe::Subject;
use crate::overload::OriginOf;
use backstop_core::Policy;

/// The `Idempotency-Key` header name.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// A new `Idempotency-Key` value: a random UUID (version 4) in text, as
/// [`ensure_idempotency_key`] and the layers' "generate a key" options send. Make one per
/// operation and send it on every attempt of that operation.
///
/// Its 122 random bits come from the operating system's cryptographically secure generator
/// (through the `getrandom` crate), drawn afresh for every key: a party that sees some keys
/// cannot compute another, so it cannot pre-empt or collide with the client's next request.
/// (The retry jitter draws from a fast generator; keys never do.)
///
/// If the operating system's generator fails (it does not on supported platforms once they
/// have booted; a sandbox that forbids it can make it fail), the value is empty: an empty key
/// is no key to backstop, so such a request is not retried, as a POST without a key is not,
/// and no request ever carries a key another party could guess. Neither this function nor
/// [`ensure_idempotency_key`] panics.
///
/// ```
/// let a = backstop::idempotency::new_idempotency_key();
/// assert_eq!(a.len(), 36);
/// assert_ne!(a, backstop::idempotency::new_idempotency_key());
/// ```
#[must_use]
pub fn new_idempotency_key() -> HeaderValue {
    random_key().unwrap_or_else(|| HeaderValue::from_static(""))
}

/// A random key from the operating system's generator; `None` if it failed.
fn random_key() -> Option<HeaderValue> {
    key_from(getrandom::fill)
}

/// A key from 16 bytes that `fill` writes; `None` if it fails.
fn key_from(fill: impl FnOnce(&mut [u8]) -> Result<(), getrandom::Error>) -> Option<HeaderValue> {
    let mut random = [0u8; 16];
    fill(&mut random).ok()?;
    // RFC 9562's version 4: 122 random bits, the version nibble 4, the variant bits 10.
    let b =
        u128::from_be_bytes(random) & !(0xF000 << 64) & !(0xC << 60) | (0x4000 << 64) | (0x8 << 60);
    let text = format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        b >> 96,
        (b >> 80) & 0xFFFF,
        (b >> 64) & 0xFFFF,
        (b >> 48) & 0xFFFF,
        b & 0xFFFF_FFFF_FFFF
    );
    // Hex digits and dashes: always a valid header value.
    HeaderValue::from_str(&text).ok()
}

/// An operation's name for its events and logs. It travels in the request's extensions:
/// `request.extensions_mut().insert(OperationName::new("create-order"))` for [`run`](crate::run),
/// the tower layer and ureq, `client.post(url).with_extension(OperationName::new("create-order"))`
/// through the reqwest middleware.
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
pub struct OperationName(std::borrow::Cow<'static, str>, Rpc);

/// Whether an operation is a gRPC call named by its method's path (the gRPC layer's own name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Rpc {
    No,
    #[cfg_attr(not(feature = "grpc"), allow(dead_code))]
    Grpc,
}

impl OperationName {
    /// The name `name` (a `&'static str` is kept without a copy).
    #[must_use]
    pub fn new(name: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        OperationName(name.into(), Rpc::No)
    }

    /// The name of a gRPC call: its method's path (`/helloworld.Greeter/SayHello`), whose
    /// service and method its spans carry as `rpc.service` and `rpc.method`.
    #[cfg(feature = "grpc")]
    pub(crate) fn grpc(path: String) -> Self {
        OperationName(path.into(), Rpc::Grpc)
    }

    /// The gRPC service and method of a call named by [`Self::grpc`].
    pub(crate) fn rpc(&self) -> Option<(&str, &str)> {
        match self.1 {
            Rpc::Grpc => self.0.strip_prefix('/')?.split_once('/'),
            Rpc::No => None,
        }
    }

    /// The name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which attempt of its operation a request is (the first is 1; a hedged copy is numbered
/// like an attempt), in the request extensions of every attempt after the first.
///
/// Every front door puts it there on resends, so that a layer below backstop can record
/// OpenTelemetry's `http.request.resend_count` itself ([`resend_count`](Self::resend_count)),
/// which the convention sets on resends only, or log it: in the copy each attempt sends
/// ([`run`](crate::run), ureq's `Client::run`, where a ureq middleware reads it), in the
/// request the tower layer gives the inner service (tower-http's `TraceLayer` and any layer
/// below), and in the extensions the reqwest middleware passes down the rest of the chain (any
/// middleware after backstop's; the caller's extensions keep the last attempt's). The first
/// attempt carries none (a request sent once, the usual one, pays nothing for it):
/// [`of`](Self::of) reads an absent number as the first.
///
/// ```
/// use backstop::transport::AttemptNumber;
///
/// // In a layer below backstop:
/// fn resend_count<B>(request: &http::Request<B>) -> Option<u32> {
///     let resends = AttemptNumber::of(request.extensions()).resend_count();
///     // OpenTelemetry's convention sets the attribute on resends only.
///     (resends > 0).then_some(resends)
/// }
/// let mut request = http::Request::new(());
/// assert_eq!(resend_count(&request), None); // a first attempt
/// request.extensions_mut().insert(AttemptNumber(2));
/// assert_eq!(resend_count(&request), Some(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptNumber(pub u32);

impl AttemptNumber {
    /// How many times the request was sent before this attempt: 0 for the first.
    #[must_use]
    pub const fn resend_count(self) -> u32 {
        self.0.saturating_sub(1)
    }

    /// The attempt a request with `extensions` is: the number in them, else the first.
    #[must_use]
    pub fn of(extensions: &http::Extensions) -> Self {
        extensions
            .get::<Self>()
            .copied()
            .unwrap_or(AttemptNumber(1))
    }

    /// Puts attempt `number` in `extensions` when it is a resend; a first attempt's is implied.
    #[inline]
    pub(crate) fn put(extensions: &mut http::Extensions, number: u32) {
        if number > 1 {
            extensions.insert(AttemptNumber(number));
        }
    }
}

/// Gives a request with `method` and `headers` a new `Idempotency-Key` when its method is
/// retried only with one (POST, PATCH) and it has none: what a "generate a key" option of a
/// middleware or layer does to each request, once, before its first attempt. The key is
/// [`new_idempotency_key`]'s; when the operating system's generator fails, none is added (the
/// request is then not retried).
///
/// ```
/// use backstop::idempotency::ensure_idempotency_key;
/// use backstop::http::{HeaderMap, Method};
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
        if let Some(key) = random_key() {
            headers.insert(IDEMPOTENCY_KEY, key);
        }
    }
}

/// Whether `headers` carry an `Idempotency-Key` that is a key (core's rule: not empty, not
/// blank).
fn carries_idempotency_key(headers: &HeaderMap) -> bool {
    headers
        .get(IDEMPOTENCY_KEY)
        .is_some_and(|key| backstop_core::is_idempotency_key(key.as_bytes()))
}

/// Whether a request with `method` is retried only when it carries an `Idempotency-Key`
/// (POST and PATCH, under the default policy): those a "generate a key" option gives one.
#[must_use]
pub fn needs_idempotency_key(method: &Method) -> bool {
    *method == Method::POST || *method == Method::PATCH
}

/// What the loop needs to know of an operation's request, read once from its head: the
/// method and address (its URI, or reqwest's URL: for the machine, the response hook and the
/// events), whether it carries an `Idempotency-Key`,
/// and the [`Abort`], [`OperationName`] and [`Policy`] of its extensions. The request itself
/// (its body above all) stays with the caller's transport.
pub(crate) struct Plan {
    pub(crate) name: Option<OperationName>,
    pub(crate) method: Method,
    pub(crate) address: Address,
    pub(crate) has_idempotency_key: bool,
    pub(crate) abort: Option<Abort>,
    /// This request's policy, in place of the retrier's (boxed: a request without one, the
    /// usual case, stays small).
    pub(crate) policy: Option<Box<Policy>>,
    /// The transport sends a body it cannot send again (reqwest's stream bodies).
    pub(crate) body_not_replayable: bool,
    /// The request's gate, or its origin to find the gate of, when the retrier has origin
    /// gates (none without them, the usual case).
    pub(crate) origin: Option<OriginOf>,
}

/// Where a request goes, as its front door has it.
pub(crate) enum Address {
    Uri(Uri),
    /// reqwest's URL as it is, for the events, spans and metrics of a request that has no
    /// response hook (which reads an `http::Uri`): keeping it costs less than converting it.
    /// An address is no larger than a URI.
    #[cfg(feature = "reqwest")]
    Url(ShownUrl),
}

impl Plan {
    /// The plan of a request with this head: `method` and `uri`, the `Idempotency-Key` of
    /// `headers` (an empty or blank one is no key: core's rule), and an [`Abort`], an
    /// [`OperationName`] and a [`Policy`] from `extensions`.
    pub(crate) fn from_head(
        method: Method,
        uri: Uri,
        headers: &HeaderMap,
        extensions: &http::Extensions,
    ) -> Self {
        // No hashing of the name for a request without headers (the common GET).
        let has_idempotency_key = !headers.is_empty() && carries_idempotency_key(headers);
        // No lookups in extensions that are empty (the common request): `get` on an empty
        // map is cheap, but three of them are not free.
        let (abort, name, policy) = if extensions.is_empty() {
            (None, None, None)
        } else {
            (
                extensions.get::<Abort>().cloned(),
                extensions.get::<OperationName>().cloned(),
                extensions.get::<Policy>().map(|p| Box::new(*p)),
            )
        };
        Plan {
            name,
            method,
            address: Address::Uri(uri),
            has_idempotency_key,
            abort,
            policy,
            body_not_replayable: false,
            origin: None,
        }
    }

    /// What the machines know of the request: its method, whether it carries an
    /// `Idempotency-Key`, whether its body can be sent again.
    pub(crate) fn facts(&self) -> backstop_core::Request {
        backstop_core::Request::new(backstop_core::Method::from(&self.method))
            .with_idempotency_key(self.has_idempotency_key)
            .with_replayable_body(!self.body_not_replayable)
    }

    /// The request's URI: for a front door's attempts and the response hook (`/` for a URL
    /// kept as it is, which a front door keeps only when there is no hook).
    pub(crate) fn uri(&self) -> &Uri {
        match &self.address {
            Address::Uri(uri) => uri,
            #[cfg(feature = "reqwest")]
            Address::Url(_) => {
                static ROOT: std::sync::LazyLock<Uri> = std::sync::LazyLock::new(Uri::default);
                &ROOT
            }
        }
    }

    /// The request's target as the observers read it.
    pub(crate) fn target(&self) -> Target<'_> {
        match &self.address {
            Address::Uri(uri) => Target::Uri(uri),
            #[cfg(feature = "reqwest")]
            Address::Url(url) => Target::Url(url),
        }
    }
}

impl Subject for Plan {
    fn operation_name(&self) -> Option<&str> {
        self.name.as_ref().map(OperationName::as_str)
    }

    fn rpc(&self) -> Option<(&str, &str)> {
        self.name.as_ref().and_then(OperationName::rpc)
    }

    fn method(&self) -> &Method {
        &self.method
    }

    fn target(&self) -> Target<'_> {
        Plan::target(self)
    }
}

/// A copy of `request` for one attempt: its head (method, URI, version, headers with the
/// `Idempotency-Key`, extensions) and a clone of its body (a [`ReplayBody`](crate::ReplayBody)
/// makes it afresh).
pub(crate) fn copy_for_attempt<B: Clone>(request: &http::Request<B>) -> http::Request<B> {
    let mut copy = http::Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    if !request.headers().is_empty() {
        *copy.headers_mut() = request.headers().clone();
    }
    if !request.extensions().is_empty() {
        *copy.extensions_mut() = request.extensions().clone();
    }
    copy
}

/// One attempt, handed to the [`Transport`](crate::Transport). Its `Debug` shows the request
/// without secrets (no query, no userinfo, no header value, no body).
#[non_exhaustive]
pub struct Attempt<B = Bytes> {
    /// The attempt's number; the first is 1.
    pub number: u32,
    /// How long the attempt may take (already bounded by the overall deadline). The loop
    /// enforces it by racing the attempt against a timer; a blocking client, which completes
    /// its attempt within the loop's first poll of it, must apply it itself.
    pub timeout: Duration,
    /// The request to send: a copy of the operation's, its body cloned (empty through the
    /// reqwest middleware and the tower layer, which send the caller's request themselves).
    pub request: http::Request<B>,
}

impl<B> fmt::Debug for Attempt<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attempt")
            .field("number", &self.number)
            .field("timeout", &self.timeout)
            .field("request", &DebugRequest(&self.request))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_version_4_uuids_and_differ() {
        let a = new_idempotency_key();
        let b = new_idempotency_key();
        assert_ne!(a, b);
        let a = a.to_str().expect("a key is text");
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn a_failed_system_generator_makes_no_key_and_no_panic() {
        assert_eq!(key_from(|_| Err(getrandom::Error::UNSUPPORTED)), None);
        // What `new_idempotency_key` gives then is no key to the machine: never retried on.
        assert!(!backstop_core::is_idempotency_key(b""));
    }
}
