//! Request methods and which of them may be retried.
//!
//! Rule (RFC 9110 §9.2.2): a client may retry a request automatically
//! only if its method is idempotent. backstop retries GET, HEAD and OPTIONS by default; PUT and
//! DELETE (idempotent, but with effects) only when the caller adds them; POST and PATCH (not
//! idempotent) when the request carries an `Idempotency-Key`, the caller's opt-in (see
//! [`NonIdempotent`](crate::NonIdempotent)).

/// An HTTP request method, as far as retrying is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// GET: safe and idempotent.
    Get,
    /// HEAD: safe and idempotent.
    Head,
    /// OPTIONS: safe and idempotent.
    Options,
    /// TRACE: safe and idempotent.
    Trace,
    /// PUT: idempotent, with effects.
    Put,
    /// DELETE: idempotent, with effects.
    Delete,
    /// POST: not idempotent.
    Post,
    /// PATCH: not idempotent.
    Patch,
    /// CONNECT: not idempotent; never retried.
    Connect,
    /// Any extension method: treated as not idempotent and never retried.
    Other,
}

impl Method {
    /// Parses a method token (case-sensitive, as RFC 9110 §9.1 says). Unknown tokens are
    /// [`Method::Other`].
    #[must_use]
    pub fn from_bytes(token: &[u8]) -> Self {
        match token {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"POST" => Method::Post,
            b"PATCH" => Method::Patch,
            b"CONNECT" => Method::Connect,
            _ => Method::Other,
        }
    }

    /// The method's token, or `"OTHER"` for extension methods.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Options => "OPTIONS",
            Method::Trace => "TRACE",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Connect => "CONNECT",
            Method::Other => "OTHER",
        }
    }

    /// Whether RFC 9110 §9.2.2 calls the method idempotent.
    #[must_use]
    pub const fn is_idempotent(self) -> bool {
        matches!(
            self,
            Method::Get
                | Method::Head
                | Method::Options
                | Method::Trace
                | Method::Put
                | Method::Delete
        )
    }

    /// Whether the method is retried only with an `Idempotency-Key`, the caller's opt-in, under
    /// the default policy (POST and PATCH; see [`NonIdempotent`](crate::NonIdempotent)).
    #[must_use]
    pub const fn needs_idempotency_key(self) -> bool {
        matches!(self, Method::Post | Method::Patch)
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl core::fmt::Display for Method {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of idempotent methods that are retried without further conditions.
///
/// Only idempotent methods can be members; POST and PATCH are governed by
/// [`PolicyBuilder::non_idempotent`](crate::PolicyBuilder::non_idempotent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MethodSet(u16);

impl MethodSet {
    /// The empty set.
    pub const EMPTY: MethodSet = MethodSet(0);

    /// GET, HEAD and OPTIONS: the default.
    pub const SAFE: MethodSet =
        MethodSet(Method::Get.bit() | Method::Head.bit() | Method::Options.bit());

    /// Whether `method` is in the set.
    #[must_use]
    pub const fn contains(self, method: Method) -> bool {
        self.0 & method.bit() != 0
    }

    /// The set with `method` added. Callers go through the policy builder, which rejects
    /// non-idempotent methods.
    #[must_use]
    pub(crate) const fn with(self, method: Method) -> Self {
        MethodSet(self.0 | method.bit())
    }
}

impl Default for MethodSet {
    fn default() -> Self {
        MethodSet::SAFE
    }
}
